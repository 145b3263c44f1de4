//! How far the fallback token estimate is from the exact o200k count, on real
//! transcripts: `cargo run --release --example token_error -- DIR [--tsv]`.
//!
//! Prints the distribution of the relative error (estimate - o200k) / o200k per
//! message and per transcript; `--tsv` dumps one line per message
//! (o200k; letters and digits, spaces, other ASCII, other characters; session) for calibration.

use std::path::PathBuf;

use knowledge_db::context::tokens::{char_classes, estimate, Tokenizer, MESSAGE_OVERHEAD};
use knowledge_db::transcript::{find_files, read_file, ReadFrom};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.first().ok_or("usage: token_error DIR [--tsv]")?);
    let tsv = args.iter().any(|a| a == "--tsv");
    let mut per_message = Vec::new();
    let mut per_transcript = Vec::new();
    let (mut exact_total, mut est_total, mut chars) = (0usize, 0usize, 0usize);
    let (mut exact_time, mut est_time) = (0f64, 0f64);
    for file in find_files(&[dir])? {
        let t = read_file(&file, None, ReadFrom::default())?;
        let (mut exact_sum, mut est_sum) = (0usize, 0usize);
        for m in &t.messages {
            let text = m.text();
            // As a prompt counts them: each with the per-message overhead.
            let clock = std::time::Instant::now();
            let exact = Tokenizer::O200k.count(&text) + MESSAGE_OVERHEAD;
            exact_time += clock.elapsed().as_secs_f64();
            let clock = std::time::Instant::now();
            let est = estimate(&text) + MESSAGE_OVERHEAD;
            est_time += clock.elapsed().as_secs_f64();
            chars += text.len();
            if tsv {
                let [alnum, space, punct, other] = char_classes(&text);
                println!(
                    "{}\t{alnum}\t{space}\t{punct}\t{other}\t{}",
                    exact - MESSAGE_OVERHEAD,
                    t.session_id
                );
            }
            if exact >= 1 {
                per_message.push((est as f64 - exact as f64) / exact as f64);
            }
            exact_sum += exact;
            est_sum += est;
        }
        if exact_sum > 0 {
            per_transcript.push((est_sum as f64 - exact_sum as f64) / exact_sum as f64);
        }
        exact_total += exact_sum;
        est_total += est_sum;
    }
    if tsv {
        return Ok(());
    }
    report("per message", &mut per_message);
    report("per transcript", &mut per_transcript);
    println!(
        "total: o200k {exact_total}, estimate {est_total} ({:+.1}%); {:.1} MB of text; o200k counts {:.2} M tokens/s ({:.1} MB/s), the estimate {:.1} MB/s",
        100.0 * (est_total as f64 - exact_total as f64) / exact_total as f64,
        chars as f64 / 1e6,
        exact_total as f64 / exact_time / 1e6,
        chars as f64 / exact_time / 1e6,
        chars as f64 / est_time / 1e6,
    );
    Ok(())
}

fn report(name: &str, errors: &mut [f64]) {
    errors.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| errors[((errors.len() - 1) as f64 * p) as usize] * 100.0;
    let under = errors.iter().filter(|e| **e < -0.10).count();
    println!(
        "{name} ({}): min {:+.1}%  p1 {:+.1}%  p5 {:+.1}%  p25 {:+.1}%  median {:+.1}%  p75 {:+.1}%  p95 {:+.1}%  max {:+.1}%; under-counted by >10%: {} ({:.2}%)",
        errors.len(),
        q(0.0),
        q(0.01),
        q(0.05),
        q(0.25),
        q(0.5),
        q(0.75),
        q(0.95),
        q(1.0),
        under,
        100.0 * under as f64 / errors.len() as f64
    );
}
