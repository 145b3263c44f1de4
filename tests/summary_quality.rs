//! How good the hooks' rule-based summaries are, measured against what a careful
//! reader keeps: `tests/fixtures/hook-summary-labels.json` labels 29 cold tasks
//! and topic segments of real Claude Code sessions (decisions, files modified,
//! errors met, outcome, turn range); this test folds each labeled session into
//! the hooks' state as the hooks would, summarizes every task and segment, and
//! scores the summaries field by field.
//!
//! Run `cargo test --release --test summary_quality -- --nocapture` to see the
//! table. It needs the real sessions in `../shared/eval/transcripts`; without
//! them it says so and passes.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use knowledge_db::integrations::hooks::cold::{self, ColdItem};
use knowledge_db::integrations::hooks::session::SessionState;
use knowledge_db::transcript::{read_slice, Format, ReadFrom};
use serde_json::Value;

fn sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/transcripts/claude-code-entire-cli")
}

fn labels() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hook-summary-labels.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("labels")).expect("labels JSON")
}

/// The session's state after the hooks read the whole transcript, and every
/// task and segment summarized (cold or not: the labels judge the summary).
fn summaries(file: &str) -> Vec<ColdItem> {
    let raw = std::fs::read(sessions_dir().join(file)).expect("session file");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_end(&mut bytes)
        .expect("gunzip");
    let path = Path::new(file);
    let transcript = read_slice(path, &bytes, Some(Format::ClaudeCode), ReadFrom::default())
        .expect("transcript");
    let mut state = SessionState::new(&transcript.session_id, path.to_path_buf());
    state.cwd.clone_from(&transcript.cwd);
    state.observe(&transcript.messages, 20);
    cold::all_items(&mut state, "default")
}

/// Lower-cased text without markdown emphasis, for key matching.
fn plain(text: &str) -> String {
    text.replace(['`', '*'], "").to_lowercase()
}

/// Whether `text` holds every key of one of the entry's alternatives.
fn matches(entry: &Value, text: &str) -> bool {
    let text = plain(text);
    entry["any"].as_array().into_iter().flatten().any(|keys| {
        keys.as_array()
            .into_iter()
            .flatten()
            .all(|k| text.contains(&k.as_str().unwrap_or_default().to_lowercase()))
    })
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// Precision and recall counts of one field.
#[derive(Default, Clone, Copy)]
struct Score {
    extracted: usize,
    correct: usize,
    required: usize,
    found: usize,
}

impl Score {
    fn precision(&self) -> f64 {
        if self.extracted == 0 {
            1.0
        } else {
            self.correct as f64 / self.extracted as f64
        }
    }

    fn recall(&self) -> f64 {
        if self.required == 0 {
            1.0
        } else {
            self.found as f64 / self.required as f64
        }
    }
}

/// Scores sentence lists (decisions, errors, outcomes) against label entries.
fn score_entries(
    field: &str,
    score: &mut Score,
    extracted: &[String],
    entries: &[Value],
    misses: &mut Vec<String>,
) {
    for text in extracted {
        score.extracted += 1;
        if entries.iter().any(|e| matches(e, text)) {
            score.correct += 1;
        } else {
            misses.push(format!("  extra {field}: {text}"));
        }
    }
    for entry in entries.iter().filter(|e| e["required"] == true) {
        score.required += 1;
        if extracted.iter().any(|t| matches(entry, t)) {
            score.found += 1;
        } else {
            let what = entry.get("label").unwrap_or(&entry["any"]);
            misses.push(format!("  missed {field}: {what}"));
        }
    }
}

fn file_matches(path: &str, suffix: &str) -> bool {
    path == suffix || path.ends_with(&format!("/{suffix}"))
}

/// The extracted item a label speaks of: a task by id or subject, a segment by
/// its first turn (else the one overlapping the labeled turns most).
fn find<'a>(items: &'a [ColdItem], label: &Value) -> Option<&'a ColdItem> {
    let start = label["start_turn"].as_u64().unwrap_or(0);
    let end = label["end_turn"].as_u64().unwrap_or(0);
    if label["kind"] == "task" {
        let task = label["task"].as_str().unwrap_or_default();
        return items.iter().find(|i| {
            i.kind == "task" && (i.record["task_id"] == task || i.record["subject"] == task)
        });
    }
    let segments: Vec<&ColdItem> = items.iter().filter(|i| i.kind == "segment").collect();
    segments
        .iter()
        .find(|i| i.record["start_turn"].as_u64() == Some(start))
        .or_else(|| {
            segments.iter().max_by_key(|i| {
                let (s, e) = (
                    i.record["start_turn"].as_u64().unwrap_or(0),
                    i.record["end_turn"].as_u64().unwrap_or(0),
                );
                e.min(end).saturating_sub(s.max(start))
            })
        })
        .copied()
}

#[test]
fn rule_based_summaries_keep_what_a_careful_reader_keeps() {
    if !sessions_dir().is_dir() {
        eprintln!(
            "skipped: the real sessions are not at {} (../shared/eval beside the checkout)",
            sessions_dir().display()
        );
        return;
    }
    let labels = labels();
    let items = labels["items"].as_array().expect("items");
    let mut cache: BTreeMap<String, Vec<ColdItem>> = BTreeMap::new();
    let mut scores: BTreeMap<&str, Score> = BTreeMap::new();
    let (mut exact_turns, mut report) = (0, String::new());
    for label in items {
        let file = label["session"].as_str().expect("session");
        let extracted = cache
            .entry(file.to_string())
            .or_insert_with(|| summaries(file));
        let mut misses = Vec::new();
        let Some(item) = find(extracted, label) else {
            report.push_str(&format!("{file} {}: NOT FOUND\n", label["label"]));
            for field in ["decisions", "errors", "outcome"] {
                let s = scores.entry(field).or_default();
                s.required += label[field]
                    .as_array()
                    .map_or(0, |a| a.iter().filter(|e| e["required"] == true).count());
            }
            scores.entry("files").or_default().required +=
                label["files_modified"].as_array().map_or(0, Vec::len);
            continue;
        };
        let r = &item.record;
        let turns = (r["start_turn"].as_u64(), r["end_turn"].as_u64());
        let wanted = (label["start_turn"].as_u64(), label["end_turn"].as_u64());
        if turns == wanted {
            exact_turns += 1;
        } else {
            misses.push(format!("  turns {turns:?}, labeled {wanted:?}"));
        }
        // Files: recall over the labeled files, precision over what was extracted.
        let files = strings(if item.kind == "task" {
            &r["files_modified"]
        } else {
            &r["key_files"]
        });
        let wanted_files = strings(&label["files_modified"]);
        let optional_files = strings(&label["files_optional"]);
        let s = scores.entry("files").or_default();
        for f in &files {
            s.extracted += 1;
            if wanted_files
                .iter()
                .chain(&optional_files)
                .any(|w| file_matches(f, w))
            {
                s.correct += 1;
            } else {
                misses.push(format!("  extra file: {f}"));
            }
        }
        for w in &wanted_files {
            s.required += 1;
            if files.iter().any(|f| file_matches(f, w)) {
                s.found += 1;
            } else {
                misses.push(format!("  missed file: {w}"));
            }
        }
        let fields = [
            ("decisions", strings(&r["key_decisions"])),
            ("errors", strings(&r["errors_resolved"])),
            ("outcome", strings(&r["key_outcomes"])),
        ];
        for (field, extracted) in fields {
            let entries = label[field].as_array().cloned().unwrap_or_default();
            score_entries(
                field,
                scores.entry(field).or_default(),
                &extracted,
                &entries,
                &mut misses,
            );
        }
        if !misses.is_empty() {
            report.push_str(&format!(
                "{file} {} ({}):\n{}\n",
                label["label"],
                item.id,
                misses.join("\n")
            ));
        }
    }
    println!("{report}");
    println!("| field | extracted | precision | recall |\n|---|---|---|---|");
    for (field, s) in &scores {
        println!(
            "| {field} | {} | {:.2} ({}/{}) | {:.2} ({}/{}) |",
            s.extracted,
            s.precision(),
            s.correct,
            s.extracted,
            s.recall(),
            s.found,
            s.required
        );
    }
    println!("| turn range | exact | {exact_turns}/{} | |", items.len());
    assert!(items.len() >= 20);
    // The targets (issue 18): decisions and errors precision at least 0.9,
    // modified files recall at least 0.95, turn ranges exact. Task ranges are
    // exact; one labeled topic boundary (a follow-up question the segmenter
    // reads as the same topic) is allowed to differ.
    assert!(
        scores["decisions"].precision() >= 0.9,
        "decisions precision"
    );
    assert!(scores["errors"].precision() >= 0.9, "errors precision");
    assert!(scores["files"].recall() >= 0.95, "files recall");
    assert!(
        exact_turns as f64 >= 0.95 * items.len() as f64,
        "turn ranges: {exact_turns}/{} exact",
        items.len()
    );
}
