//! Dot products of embeddings: the inner loop of every vector search and of
//! every HNSW graph build.
//!
//! Embeddings are unit vectors, so the dot product is their cosine similarity.
//! A graph walk at 1M records computes tens of thousands of them per query and
//! a graph build hundreds of millions, so the kernel matters: on x86-64 CPUs
//! with AVX2 and FMA (checked once at run time) it runs on 256-bit registers
//! with four independent accumulators; elsewhere a portable loop with four
//! lanes that the compiler vectorises to what the target has. Both give the
//! same value up to float rounding (the order of the additions differs).

/// Dot product of two vectors of the same length (extra values of the longer
/// one are ignored).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: the CPU has AVX2 and FMA (checked just above); both slices
        // hold `n` f32 values.
        return unsafe { x86::dot(a.as_ptr(), b.as_ptr(), n) };
    }
    portable_dot(a, b)
}

/// Dot product of `query` with a row of little-endian f32 bytes (a row of a
/// memory-mapped vector file), without copying the row.
pub fn dot_le(query: &[f32], row: &[u8]) -> f32 {
    let n = query.len().min(row.len() / 4);
    #[cfg(target_arch = "x86_64")]
    if has_avx2_fma() {
        // SAFETY: AVX2 and FMA are there (checked just above); x86-64 is little
        // endian, so the row's bytes are its f32 values, read with unaligned
        // loads; `row` holds at least `4 * n` bytes.
        return unsafe { x86::dot(query.as_ptr(), row.as_ptr().cast::<f32>(), n) };
    }
    portable_dot_le(&query[..n], &row[..4 * n])
}

#[cfg(target_arch = "x86_64")]
fn has_avx2_fma() -> bool {
    // std caches the CPUID answer; this is a load and a test.
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Four lanes let the compiler vectorise without reassociating floats.
fn portable_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 4];
    let chunks = a.len() / 4 * 4;
    for i in (0..chunks).step_by(4) {
        for lane in 0..4 {
            acc[lane] += a[i + lane] * b[i + lane];
        }
    }
    let tail: f32 = (chunks..a.len()).map(|i| a[i] * b[i]).sum();
    acc.iter().sum::<f32>() + tail
}

fn portable_dot_le(query: &[f32], row: &[u8]) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut chunks = row.chunks_exact(32).zip(query.chunks_exact(8));
    for (bytes, q) in &mut chunks {
        for lane in 0..8 {
            let b = &bytes[lane * 4..lane * 4 + 4];
            acc[lane] += q[lane] * f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        }
    }
    let done = query.len() / 8 * 8;
    let tail: f32 = (done..query.len())
        .map(|i| {
            query[i]
                * f32::from_le_bytes([row[i * 4], row[i * 4 + 1], row[i * 4 + 2], row[i * 4 + 3]])
        })
        .sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// `n` products of `a[i] * b[i]`, summed on four 8-wide accumulators.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA, and `a` and `b` must point to `n`
    /// readable f32 values each (any alignment).
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(a: *const f32, b: *const f32, n: usize) -> f32 {
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= n {
            for (lane, sum) in acc.iter_mut().enumerate() {
                let at = i + lane * 8;
                *sum =
                    _mm256_fmadd_ps(_mm256_loadu_ps(a.add(at)), _mm256_loadu_ps(b.add(at)), *sum);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = _mm256_fmadd_ps(_mm256_loadu_ps(a.add(i)), _mm256_loadu_ps(b.add(i)), acc[0]);
            i += 8;
        }
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        // Horizontal sum of the eight lanes.
        let half = _mm_add_ps(_mm256_castps256_ps128(sum), _mm256_extractf128_ps::<1>(sum));
        let pairs = _mm_add_ps(half, _mm_movehl_ps(half, half));
        let single = _mm_add_ss(pairs, _mm_shuffle_ps::<0b01>(pairs, pairs));
        let mut total = _mm_cvtss_f32(single);
        while i < n {
            total += *a.add(i) * *b.add(i);
            i += 1;
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(a: &[f32], b: &[f32]) -> f64 {
        a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
    }

    fn le_bytes(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn embedding_sized_vectors_match_the_naive_sum() {
        let a: Vec<f32> = (0..384).map(|i| (i as f32 * 0.1).sin()).collect();
        let b: Vec<f32> = (0..384).map(|i| (i as f32 * 0.3).cos()).collect();
        let expected = naive(&a, &b);
        assert!((dot(&a, &b) as f64 - expected).abs() < 1e-4);
        assert!((dot_le(&a, &le_bytes(&b)) as f64 - expected).abs() < 1e-4);
        assert!((portable_dot(&a, &b) as f64 - expected).abs() < 1e-4);
    }

    #[test]
    fn a_row_at_an_odd_address_reads_right() {
        let a: Vec<f32> = (0..40).map(|i| i as f32 / 40.0).collect();
        let mut bytes = vec![0u8];
        bytes.extend(le_bytes(&a));
        assert!((dot_le(&a, &bytes[1..]) as f64 - naive(&a, &a)).abs() < 1e-4);
    }

    #[test]
    fn lengths_that_differ_use_the_shorter() {
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[1.0, 1.0]), 3.0);
        assert_eq!(dot_le(&[1.0, 2.0], &le_bytes(&[2.0])), 2.0);
        assert_eq!(dot(&[], &[]), 0.0);
    }

    proptest! {
        #[test]
        fn every_length_matches_the_naive_sum(
            pairs in proptest::collection::vec((-1.0f32..1.0, -1.0f32..1.0), 0..100)
        ) {
            let (a, b): (Vec<f32>, Vec<f32>) = pairs.into_iter().unzip();
            let expected = naive(&a, &b);
            prop_assert!((dot(&a, &b) as f64 - expected).abs() < 1e-4);
            prop_assert!((dot_le(&a, &le_bytes(&b)) as f64 - expected).abs() < 1e-4);
            prop_assert!((portable_dot_le(&a, &le_bytes(&b)) as f64 - expected).abs() < 1e-4);
        }
    }
}
