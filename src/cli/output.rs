//! Printing results for people (text) and programs (JSON), and progress on stderr.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use serde_json::{json, Value};

use knowledge_db::load::AddSummary;
use knowledge_db::record::input::human_bytes;
use knowledge_db::record::Record;
use knowledge_db::search::SearchResponse;
use knowledge_db::tiers::Stats;

pub fn print_json<T: Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer_pretty(&mut out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// The error and its causes on one line: `a: b: c`.
pub fn error_chain(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Progress is drawn only when a person watches both stdout and stderr.
fn interactive() -> bool {
    std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

pub fn spinner(message: &str) -> ProgressBar {
    if !interactive() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_message(message.to_string());
    bar.set_draw_target(ProgressDrawTarget::stderr());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

pub fn progress_bar() -> ProgressBar {
    if !interactive() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{msg:20} [{bar:40}] {pos}/{len} ({eta})") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// A record as `get` prints it: the store's fields, then the caller's JSON.
pub fn record_json(record: &Record) -> Value {
    json!({
        "id": record.id,
        "kind": record.kind,
        "namespace": record.namespace,
        "tier": record.tier.as_str(),
        "pruned": record.pruned,
        "added_at": record.added_at,
        "access_count": record.access_count,
        "last_accessed": record.last_accessed,
        "citation": record.citation(),
        "context": record.context,
        "source": record.source,
    })
}

/// A record found in either tier; an archived one also says when it was
/// archived and what pruning dropped from it.
pub fn found_json(found: &knowledge_db::tiers::Found) -> Value {
    let mut value = record_json(found.record());
    if let (knowledge_db::tiers::Found::Archived(entry), Some(object)) =
        (found, value.as_object_mut())
    {
        object.insert(
            "archived_at".into(),
            json!(knowledge_db::record::parse::format_time(entry.archived_at)),
        );
        object.insert("dropped".into(), json!(entry.dropped));
    }
    value
}

/// What a write that left `n` records without vectors says about them: who
/// will make them, true whether the background upkeep is on or off.
pub fn vectors_deferred(n: usize, store: Option<&knowledge_db::store::Store>) -> String {
    match store.and_then(knowledge_db::upkeep::disabled_by) {
        None => format!(
            "{n} records are searchable by their words now; the background upkeep adds their \
             vectors (int8 drafts first, then the full model): `knowledge-db upkeep --status` \
             shows progress, `--embed now` embeds before returning"
        ),
        Some(why) => format!(
            "{n} records are searchable by their words now, without vectors: a batch of more \
             than embedding.ingest_inline_max records is left to the background upkeep, which \
             is off ({why}); run `knowledge-db embed` (or `knowledge-db upkeep`) to add them, \
             or use `--embed now`"
        ),
    }
}

pub fn print_add_summary(s: &AddSummary) {
    let r = &s.report;
    println!(
        "{} records read ({}): {} added, {} updated, {} unchanged in {:.2}s",
        s.records,
        human_bytes(s.bytes_read),
        r.added,
        r.updated,
        r.unchanged,
        s.seconds
    );
    if r.embedded + r.vectors_reused + r.without_vector > 0 {
        println!(
            "vectors: {} embedded, {} reused from identical texts, {} records without a vector",
            r.embedded, r.vectors_reused, r.without_vector
        );
    }
    if !r.redacted.is_empty() {
        println!("before storing: {}", r.redacted);
    }
    if !r.duplicate_ids.is_empty() {
        eprintln!(
            "note: {} ids appeared more than once; the last version of each was kept (e.g. {})",
            r.duplicate_ids.len(),
            r.duplicate_ids[0]
        );
    }
    if !s.skipped_files.is_empty() {
        eprintln!(
            "note: skipped {} files that are not .json or .jsonl (e.g. {})",
            s.skipped_files.len(),
            s.skipped_files[0].display()
        );
    }
}

/// Ranked results: per hit its title, one line of where it comes from (its
/// id, its session once and short, its turns, project, time and files) and
/// its best passage, matched words in bold when `color` (never with marks
/// that could be read as Markdown: plain text off a terminal, as ripgrep).
pub fn print_search(response: &SearchResponse, color: bool, explain: bool) {
    if let Some(why) = &response.explanation {
        println!("no results: {why}");
        return;
    }
    if response.below_min_score > 0 {
        eprintln!(
            "note: {} more result{} scored under the minimum {:.2} (`--all` shows them)",
            response.below_min_score,
            if response.below_min_score == 1 {
                ""
            } else {
                "s"
            },
            response.min_score
        );
    }
    if let Some(project) = &response.filters.project {
        eprintln!(
            "note: records of project {project} (and of none); `--all-projects` searches every project"
        );
    }
    if response.vector.starts_with("unavailable") {
        eprintln!(
            "note: BM25 only; vectors {} (scores are calibrated for words alone, and move when \
             vectors join in: compare scores within one search, not across)",
            response.vector
        );
    }
    if let Some(waiting) = response.records_without_vector {
        eprintln!("note: {waiting} records have no vector yet and were matched by BM25 only (run `knowledge-db embed`)");
    }
    if !response.unknown_words.is_empty() {
        eprintln!(
            "note: no record holds {}: results can match only the other words or the meaning",
            knowledge_db::search::quoted_words(&response.unknown_words)
        );
    }
    if !response.results.is_empty() && response.results.iter().all(|h| h.low_confidence) {
        eprintln!(
            "note: none of these is a confident match (score under {:.2}, or little of the \
             question's words and meaning): the store may hold nothing about it",
            knowledge_db::search::confidence::CONFIDENT_SCORE
        );
    }
    for hit in &response.results {
        let title = if hit.title.is_empty() {
            hit.id.as_str()
        } else {
            hit.title.as_str()
        };
        let mut notes = Vec::new();
        if hit.weak {
            notes.push("weak".to_string());
        } else if hit.low_confidence {
            notes.push("low confidence".to_string());
        }
        if hit.copies > 1 {
            let others = hit.copies - 1;
            notes.push(format!(
                "the same text is stored {} more time{} (ids in --json `duplicates`)",
                others,
                if others == 1 { "" } else { "s" }
            ));
        }
        if !hit.phrasings.is_empty() {
            let which: Vec<String> = hit.phrasings.iter().map(|n| n.to_string()).collect();
            notes.push(format!("found by phrasing {}", which.join(", ")));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" · {}", notes.join(" · "))
        };
        println!(
            "{}. [{}] {}  (score {:.2}{notes})",
            hit.rank, hit.kind, title, hit.score
        );
        println!("   {}", where_from(hit).join(" · "));
        if explain {
            let part = |score: Option<f32>, rank: Option<usize>, digits: usize| match (score, rank)
            {
                (Some(s), Some(r)) => format!("{s:.digits$} (#{r})"),
                _ => "-".to_string(),
            };
            println!(
                "   bm25 {} · vector {} · fused {:.4}",
                part(hit.scores.bm25, hit.scores.bm25_rank, 2),
                part(hit.scores.vector, hit.scores.vector_rank, 3),
                hit.scores.fused
            );
        }
        if !hit.snippet.is_empty() {
            println!(
                "   {}",
                highlight(&hit.snippet, &hit.highlights, color).replace('\n', " ")
            );
        }
        println!();
    }
}

/// Characters of a session id shown (as the viewer shows it; any unique
/// start of it is taken back by `--session`, `show` and `get`).
const SHORT_ID: usize = 8;

/// A hit's origin: its id (a message's as `<session>:<message>`, both
/// shortened), its session once, its turns, its project, its time and files.
fn where_from(hit: &knowledge_db::search::Hit) -> Vec<String> {
    let short = |id: &str| -> String { id.chars().take(SHORT_ID).collect() };
    let mut meta = Vec::new();
    let id = match hit.session_id.as_deref().and_then(|s| {
        hit.id
            .strip_prefix(s)
            .and_then(|rest| rest.strip_prefix(':'))
    }) {
        Some(rest) => format!(
            "{}:{}",
            short(hit.session_id.as_deref().unwrap_or("")),
            short(rest)
        ),
        None => hit.id.clone(),
    };
    meta.push(format!("{} {id}", hit.kind));
    if let Some(session) = &hit.session_id {
        let turns = match (hit.start_turn, hit.end_turn) {
            (Some(a), Some(b)) if a != b => format!(", turns {a}-{b}"),
            (Some(a), _) | (None, Some(a)) => format!(", turn {a}"),
            _ => String::new(),
        };
        meta.push(format!("session {}{turns}", short(session)));
    }
    if let Some(project) = &hit.project {
        meta.push(format!("project {}", home_relative(project)));
    }
    if let Some(t) = &hit.timestamp {
        meta.push(t.clone());
    }
    if !hit.files.is_empty() {
        let mut files: Vec<&str> = hit.files.iter().take(3).map(String::as_str).collect();
        if hit.files.len() > 3 {
            files.push("…");
        }
        meta.push(files.join(", "));
    }
    meta
}

/// `~/src/api` for a path under the home folder.
fn home_relative(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&format!("{home}/")) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_string(),
    }
}

fn highlight(text: &str, ranges: &[(usize, usize)], color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let (open, close) = ("\x1b[1m", "\x1b[0m");
    let mut out = String::with_capacity(text.len() + ranges.len() * 8);
    let mut last = 0;
    for &(start, end) in ranges {
        if start < last
            || end > text.len()
            || !text.is_char_boundary(start)
            || !text.is_char_boundary(end)
        {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str(open);
        out.push_str(&text[start..end]);
        out.push_str(close);
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

pub fn print_stats(s: &Stats) {
    println!("store           {}", s.store.display());
    println!("format version  {}", s.format_version);
    println!("records         {}", s.records);
    for (label, counts) in [
        ("by kind", &s.by_kind),
        ("by tier", &s.by_tier),
        ("by namespace", &s.by_namespace),
        ("by project", &s.by_project),
        ("by origin", &s.by_origin),
    ] {
        let list: Vec<String> = counts
            .iter()
            .map(|(k, v)| match k.as_str() {
                "" => format!("(none) {v}"),
                _ => format!("{k} {v}"),
            })
            .collect();
        println!(
            "{label:<15} {}",
            if list.is_empty() {
                "-".to_string()
            } else {
                list.join(", ")
            }
        );
    }
    println!(
        "text index      {} in {} segments",
        human_bytes(s.text_index_bytes),
        s.segments
    );
    let mut rules = String::new();
    if s.vectors.drafts > 0 {
        rules.push_str(&format!(
            " ({} drafts by the int8 model, searched meanwhile: the upkeep replaces them with the full model's)",
            s.vectors.drafts
        ));
    }
    if s.vector_text_rules < knowledge_db::embed::text::RECIPE {
        rules.push_str(&format!(
            " (text rules {} of {}: the upkeep embeds the changed texts again)",
            s.vector_text_rules,
            knowledge_db::embed::text::RECIPE
        ));
    }
    println!(
        "vectors         {} records{rules}, {} waiting for `embed`; {} on disk, {} of {} segments with an HNSW graph",
        s.vectors.with_vector,
        s.vectors.without_vector,
        human_bytes(s.vector_files_bytes),
        s.vector_graphs,
        s.segments
    );
    if let (Some(oldest), Some(newest)) = (&s.oldest, &s.newest) {
        println!("time range      {oldest} .. {newest}");
    }
    for t in &s.tiers {
        let ratio = t
            .compression_ratio
            .map(|r| format!(", compression {r:.1}x"))
            .unwrap_or_default();
        let range = match (&t.oldest, &t.newest) {
            (Some(o), Some(n)) => format!(", {o} .. {n}"),
            _ => String::new(),
        };
        println!(
            "tier {:<10} {} records, {} on disk{ratio}{range}",
            t.tier,
            t.records,
            human_bytes(t.bytes_on_disk)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn highlight_marks_ranges_and_skips_bad_ones() {
        assert_eq!(
            highlight("fix the parser", &[(8, 14)], true),
            "fix the \x1b[1mparser\x1b[0m"
        );
        assert_eq!(highlight("ab", &[(1, 9)], true), "ab");
        // Off a terminal the text is as stored: `**The** Problem:` stays
        // Markdown, never `****The** Problem:**`.
        assert_eq!(
            highlight("**The Problem:** x", &[(2, 5)], false),
            "**The Problem:** x"
        );
    }
}
