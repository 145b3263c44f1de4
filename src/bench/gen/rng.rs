//! Randomness: a small deterministic generator (splitmix64), split into streams.
//!
//! Every random choice of a run draws from a stream of its own, derived from the
//! seed and a path of labels (a `TAG_*` constant, the pass, the session, …), so
//! that the same seed gives the same bytes however the passes are cut.

pub(super) const TAG_PLAN: u64 = 1;
pub(super) const TAG_PICK: u64 = 2;
pub(super) const TAG_RECORD: u64 = 3;
pub(super) const TAG_QUERY: u64 = 4;
pub(super) const TAG_TARGETS: u64 = 5;

#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    /// A stream of its own for `seed` and a path of labels (pass, session, …).
    pub(super) fn derive(seed: u64, labels: &[u64]) -> Self {
        let mut rng = Rng(seed);
        for &label in labels {
            rng.0 ^= label.wrapping_mul(0xA24B_AED4_963E_E407);
            rng.next_u64();
        }
        rng
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(super) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A number in `lo..=hi`.
    pub(super) fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// A number in `[0, 1)`.
    pub(super) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(super) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Keeps exactly `wanted` of `total` items offered in order, each subset equally
/// likely (selection sampling).
pub(super) struct Picker {
    wanted: usize,
    left: usize,
    rng: Rng,
}

impl Picker {
    pub(super) fn new(wanted: usize, total: usize, rng: Rng) -> Self {
        Picker {
            wanted,
            left: total,
            rng,
        }
    }

    pub(super) fn take(&mut self) -> bool {
        if self.wanted == 0 || self.left == 0 {
            return false;
        }
        let keep = self.rng.below(self.left) < self.wanted;
        self.left -= 1;
        if keep {
            self.wanted -= 1;
        }
        keep
    }
}
