//! What redaction would replace in real transcripts, for review by eye:
//! `cargo run --release --example scan_secrets -- [DIR...] [--kind K] [--counts]`
//! (default DIR: ../shared/eval/transcripts, or ../../shared/… from a worktree).
//!
//! Each transcript is read as `ingest` reads it and turned into the records
//! `ingest` stores (`transcript_records`); every record goes through
//! `privacy::redact_record`, the function every write path calls, and the
//! totals by kind are what it reported. For review, each distinct value found
//! is printed once per kind with how often it was seen, the first place it was
//! seen (file and line) and ~40 characters around it, the value itself masked
//! in its middle. `--kind K` prints only kind K; `--counts` prints only totals.
//! The time `redact_record` took is measured alone (wall clock and this
//! thread's CPU time), as what redaction adds to an `ingest` of the same
//! transcripts.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use knowledge_db::privacy::{redact_record, Findings, PrivacySettings, Redactor};
use knowledge_db::transcript::ingest::{transcript_records, Via};
use knowledge_db::transcript::{find_files, read_file, ReadFrom};
use serde_json::Value;

/// Characters of context shown on each side of a value.
const CONTEXT_CHARS: usize = 40;

/// One distinct value of one kind: how often, and where first.
struct Seen {
    count: u64,
    place: String,
    context: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut dirs = Vec::new();
    let mut only_kind = None;
    let mut counts_only = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--kind" => only_kind = Some(args.next().ok_or("--kind needs a rule id")?),
            "--counts" => counts_only = true,
            _ => dirs.push(PathBuf::from(arg)),
        }
    }
    if dirs.is_empty() {
        // Beside the checkout, or beside the folder of worktrees it is in.
        let shared = ["../shared", "../../shared"]
            .iter()
            .map(|s| PathBuf::from(s).join("eval/transcripts"))
            .find(|dir| dir.is_dir())
            .ok_or("no ../shared/eval/transcripts here: name the folders to scan")?;
        dirs.push(shared);
    }
    let started = Instant::now();
    let first_use = thread_cpu();
    let redactor = Redactor::builtin();
    println!(
        "Redactor::builtin() took {:.2} ms of CPU (reading the rules, building the keyword automaton)",
        (thread_cpu() - first_use).as_secs_f64() * 1e3
    );
    // Records are built without secret redaction (private spans still go),
    // so that what `redact_record` replaces below is counted and timed: the
    // builtin redactor here would have redacted them already.
    let keep_secrets = Redactor::new(&PrivacySettings {
        redact: false,
        ..PrivacySettings::default()
    })?;
    let mut total = Findings::default();
    let mut seen: BTreeMap<(String, String), Seen> = BTreeMap::new();
    let (mut files, mut records, mut bytes) = (0usize, 0usize, 0usize);
    let mut redacting = Duration::ZERO;
    let mut redacting_cpu = Duration::ZERO;
    for file in find_files(&dirs)? {
        let transcript = read_file(&file, None, ReadFrom::default())?;
        let stored =
            transcript_records(&transcript, "default", "", Via::Ingest, None, &keep_secrets)?;
        files += 1;
        for mut record in stored {
            records += 1;
            // Review: every string of the record, as redaction sees it.
            let place = format!("{}:{}", file.display(), line_of(&record.source));
            let mut strings = Vec::new();
            collect_strings(&record.source, &mut strings);
            strings.extend(record.context.clone());
            for text in &strings {
                bytes += text.len();
                for secret in redactor.find(text) {
                    let value = &text[secret.range.clone()];
                    let entry = seen
                        .entry((secret.kind.clone(), value.to_string()))
                        .or_insert_with(|| Seen {
                            count: 0,
                            place: place.clone(),
                            context: context(text, &secret.range),
                        });
                    entry.count += 1;
                }
            }
            // Count: the write path itself, timed alone.
            let (clock, cpu) = (Instant::now(), thread_cpu());
            total.absorb(&redact_record(redactor, &mut record));
            redacting += clock.elapsed();
            redacting_cpu += thread_cpu().saturating_sub(cpu);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{files} transcripts, {records} records, {:.1} MB of strings scanned in {elapsed:.1} s",
        bytes as f64 / 1e6
    );
    println!(
        "redact_record took {:.2} s in all, {:.2} s of CPU ({:.0} MB/s of record strings per CPU second); it replaced: {total}",
        redacting.as_secs_f64(),
        redacting_cpu.as_secs_f64(),
        bytes as f64 / 1e6 / redacting_cpu.as_secs_f64()
    );
    let mut distinct: BTreeMap<&str, usize> = BTreeMap::new();
    for (kind, _) in seen.keys() {
        *distinct.entry(kind).or_default() += 1;
    }
    println!("\n{:<28} {:>8} {:>9}", "kind", "values", "distinct");
    for (kind, n) in &total.kinds {
        let d = distinct.get(kind.as_str()).copied().unwrap_or(0);
        println!("{kind:<28} {n:>8} {d:>9}");
    }
    if counts_only {
        return Ok(());
    }
    for ((kind, value), s) in &seen {
        if only_kind.as_ref().is_some_and(|k| k != kind) {
            continue;
        }
        println!(
            "\n[{kind}] {} x{} at {}\n    {}",
            mask(value),
            s.count,
            s.place,
            s.context
        );
    }
    Ok(())
}

/// The transcript line a record came from (`origin.line`).
fn line_of(source: &Value) -> String {
    source
        .pointer("/origin/line")
        .map_or_else(|| "?".into(), Value::to_string)
}

fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// The value with its middle hidden: its first 4 and last 2 characters and
/// its length, so a review can tell a key from a word without reprinting it.
fn mask(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    if chars.len() <= 8 {
        let head: String = chars.iter().take(2).collect();
        return format!("{head}…({} chars)", chars.len());
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 2..].iter().collect();
    format!("{head}…({} chars)…{tail}", chars.len())
}

/// ~40 characters either side of `range`, the value masked, on one line.
fn context(text: &str, range: &std::ops::Range<usize>) -> String {
    let before: String = text[..range.start]
        .chars()
        .rev()
        .take(CONTEXT_CHARS)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let after: String = text[range.end..].chars().take(CONTEXT_CHARS).collect();
    let one_line = |s: &str| {
        s.replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t")
    };
    format!(
        "{}⟦{}⟧{}",
        one_line(&before),
        mask(&text[range.clone()]),
        one_line(&after)
    )
}

/// CPU time of this thread: the machine the numbers come from is shared, and
/// wall time would measure the other builds' load too.
fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}
