//! What secret redaction costs (`src/privacy`), on real transcript text.
//!
//! Run with `cargo bench --bench redaction` (not part of CI). It reads the
//! largest real Claude Code session in `../shared/eval/transcripts` (or
//! `../../shared/…` from a worktree) when it is there, else the project's
//! sample, names it on stderr, and measures:
//! - `redact` over every message's text, alone (MB/s of text);
//! - building the records `ingest` stores from the transcript
//!   (`transcript_records`), without and with `redact_record` on each (MB/s
//!   of transcript), which is what redaction adds to ingest before indexing;
//! - the first use in a fresh process, as a hook pays it: `Redactor::builtin()`
//!   (reading the rule files, building the keyword automaton), then the first
//!   `redact` of a real 4 KB message (compiling the regexes its keywords
//!   wake). Each sample is a new process of this binary that times itself.
//!
//! Every time is CPU time of the thread doing the work (`iter_custom`), not
//! wall time: the machine these numbers come from is shared by several builds,
//! and their load would otherwise be measured too. Throughput is MB of input
//! per CPU second.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, Criterion, Throughput};
use knowledge_db::privacy::{redact_record, Redactor};
use knowledge_db::transcript::ingest::{transcript_records, Via};
use knowledge_db::transcript::{self, ReadFrom};

/// Set in a child process: which first use to time (`builtin` or `first-redact`).
const CHILD: &str = "KDB_REDACTION_BENCH_CHILD";

/// The largest real Claude Code transcript beside the checkout (or beside
/// the folder of worktrees it is in), else a sample.
fn transcript_file() -> PathBuf {
    let real = ["../shared", "../../shared"]
        .iter()
        .map(|shared| PathBuf::from(shared).join("eval/transcripts/claude-code-entire-cli"))
        .find(|dir| dir.is_dir())
        .unwrap_or_default();
    let largest = std::fs::read_dir(&real).ok().and_then(|entries| {
        entries
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.len(), e.path())))
            .filter(|(_, p)| p.to_string_lossy().ends_with(".jsonl.gz"))
            .max()
            .map(|(_, p)| p)
    });
    largest.unwrap_or_else(|| {
        PathBuf::from("data-samples/transcripts/7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47.jsonl.gz")
    })
}

/// Every message's text, in order.
fn message_texts(path: &Path) -> Vec<String> {
    transcript::read_file(path, None, ReadFrom::default())
        .expect("transcript")
        .messages
        .iter()
        .map(|m| m.text())
        .collect()
}

fn throughput(c: &mut Criterion) {
    let path = transcript_file();
    eprintln!("transcript: {}", path.display());
    let texts = message_texts(&path);
    let text_bytes: usize = texts.iter().map(String::len).sum();
    let redactor = Redactor::builtin();
    let mut group = c.benchmark_group("redact, largest real session");
    group.throughput(Throughput::Bytes(text_bytes as u64));
    group.bench_function("every message's text", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                texts
                    .iter()
                    .map(|t| redactor.redact(black_box(t)).found.total())
                    .sum::<u64>()
            })
        })
    });
    group.finish();

    let bytes = transcript::read_bytes(&path).expect("transcript bytes");
    let parsed = transcript::read_slice(&path, &bytes, None, ReadFrom::default()).expect("parse");
    let records = || {
        transcript_records(
            &parsed,
            "default",
            "2026-01-01T00:00:00Z",
            Via::Ingest,
            None,
            Redactor::builtin(),
        )
        .expect("records")
    };
    let mut group = c.benchmark_group("ingest's records, largest real session");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("transcript_records", |b| {
        b.iter_custom(|iters| cpu_time(iters, || records().len()))
    });
    group.bench_function("transcript_records + redact_record", |b| {
        b.iter_custom(|iters| {
            cpu_time(iters, || {
                let mut all = records();
                all.iter_mut()
                    .map(|r| redact_record(redactor, r).total())
                    .sum::<u64>()
            })
        })
    });
    group.finish();
}

/// Thread CPU time of `iters` runs of `work`: on a machine shared with
/// other builds, wall time says more about them than about this code.
fn cpu_time<T>(iters: u64, mut work: impl FnMut() -> T) -> Duration {
    let started = thread_cpu();
    for _ in 0..iters {
        black_box(work());
    }
    thread_cpu() - started
}

/// Times one first use in a fresh process of this binary.
fn child_run(what: &str) -> Duration {
    let out = Command::new(std::env::current_exe().expect("bench binary"))
        .env(CHILD, what)
        .output()
        .expect("child");
    let nanos: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("child said {:?}", String::from_utf8_lossy(&out.stderr)));
    Duration::from_nanos(nanos)
}

fn first_use(c: &mut Criterion) {
    let mut group = c.benchmark_group("first use in a fresh process");
    group.sample_size(20);
    for what in ["builtin", "first-redact"] {
        let name = match what {
            "builtin" => "Redactor::builtin()",
            _ => "first redact of a real 4 KB message",
        };
        group.bench_function(name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| child_run(what)).sum())
        });
    }
    group.finish();
}

/// CPU time of this thread: what a first use costs, whatever else the
/// machine runs meanwhile.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// In a child: time the first use asked for (thread CPU time) and print it
/// in nanoseconds.
fn child(what: &str) {
    let elapsed = match what {
        "builtin" => {
            let started = thread_cpu();
            black_box(Redactor::builtin());
            thread_cpu() - started
        }
        _ => {
            let texts = message_texts(&transcript_file());
            let sample: String = texts.concat().chars().take(4096).collect();
            let redactor = Redactor::builtin();
            let started = thread_cpu();
            black_box(redactor.redact(&sample).found.total());
            thread_cpu() - started
        }
    };
    println!("{}", elapsed.as_nanos());
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(8));
    targets = throughput, first_use
}

fn main() {
    if let Ok(what) = std::env::var(CHILD) {
        child(&what);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
