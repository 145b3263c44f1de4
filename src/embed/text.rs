//! Which text of a record is embedded.
//!
//! The model reads at most 256 tokens (about 1,000 characters of English), so the
//! text leads with what identifies the record best: a segment's topic and summary
//! and decisions, a task's subject and outcomes, a message's role and words, a
//! note's title and text. File lists and commands are left to BM25, which matches
//! them exactly; in a 256-token window they would crowd out meaning.
//!
//! Measured: leaving the title out of LoCoMo's notes (title = speaker and date)
//! drops vector-only Recall@10 from 0.509 to 0.328, and hybrid from 0.686 to 0.624.
//!
//! **What is worth a model pass.** In an agent's transcript most tokens are tool
//! traffic: file reads, command output, the JSON input of edits. Embedding costs
//! time in proportion to tokens, and a code listing's vector says little a
//! question in words can meet, while BM25 indexes all of it anyway. So in a
//! message, a tool call (`[tool_use Name] …`) keeps its first
//! [`TOOL_CALL_CHARS`] characters (the tool, the file, the command) and a tool
//! output (`[tool_result] …`) its first [`TOOL_OUTPUT_CHARS`]; prompts, the
//! assistant's prose and summaries are embedded whole. On the 30,441 messages of
//! the agent-question store this cuts the tokens the model reads by 46%; every
//! record still gets a vector. Records without tool markers (notes, segments,
//! tasks, plain chat) embed exactly as before, so such stores keep their vectors.

use crate::record::{Kind, Record};

/// Characters kept; the tokenizer truncates at 256 tokens anyway, and shorter
/// input keeps tokenization cheap for very long records.
const MAX_CHARS: usize = 2_000;

/// Characters of a tool call embedded: its marker, the tool's name and the
/// head of its input.
pub const TOOL_CALL_CHARS: usize = 120;

/// Characters of a tool output embedded: its marker and its head.
pub const TOOL_OUTPUT_CHARS: usize = 200;

/// The version of [`embedding_text`]'s rules. A store whose vectors were made
/// under older rules has the texts that changed embedded again in the
/// background (`crate::upkeep`); texts that did not change keep their vectors.
/// 1: every text whole up to `MAX_CHARS`; 2: tool calls and outputs cut.
pub const RECIPE: u32 = 2;

/// The text embedded for `record`.
pub fn embedding_text(record: &Record) -> String {
    let f = &record.fields;
    let mut parts: Vec<&str> = Vec::new();
    match record.kind {
        Kind::Segment | Kind::Task | Kind::Note => {
            parts.push(&f.title);
            parts.push(&f.content);
            parts.extend(f.decisions.iter().map(String::as_str));
        }
        Kind::Message => {
            parts.push(&f.content);
        }
    }
    let cut = (record.kind == Kind::Message)
        .then(|| without_bulky_tool_text(&f.content))
        .flatten();
    if let Some(cut) = cut.as_deref() {
        parts[0] = cut;
    }
    // The previous turn goes last, after the record's own words, so that when the
    // model's 256 tokens run out it is the context that is cut.
    // (Only messages and notes have one: see `record::context`.)
    let context = record.context.as_deref().map(|c| format!("(after: {c})"));
    parts.extend(context.as_deref());
    let mut text = String::new();
    for part in parts.into_iter().map(str::trim).filter(|p| !p.is_empty()) {
        if !text.is_empty() {
            text.push_str(". ");
        }
        text.push_str(part);
        if text.len() >= MAX_CHARS {
            break;
        }
    }
    truncate_chars(&text, MAX_CHARS)
}

/// `content` with each tool call and tool output cut to its head, or `None` when
/// it has none (the common case for anything but agent transcripts). A tool
/// block starts at a line beginning with its marker and runs to the next marker.
fn without_bulky_tool_text(content: &str) -> Option<String> {
    let limit_of = |line: &str| {
        if line.starts_with("[tool_use ") {
            Some(TOOL_CALL_CHARS)
        } else if line.starts_with("[tool_result") {
            Some(TOOL_OUTPUT_CHARS)
        } else {
            None
        }
    };
    if !content.lines().any(|line| limit_of(line).is_some()) {
        return None;
    }
    let mut out = String::with_capacity(content.len().min(MAX_CHARS));
    // Characters still allowed in the current tool block (None: prose).
    let mut room: Option<usize> = None;
    for (i, line) in content.split('\n').enumerate() {
        if let Some(limit) = limit_of(line) {
            room = Some(limit);
        }
        let kept = match room {
            None => line,
            Some(0) => continue,
            Some(left) => {
                let end = line
                    .char_indices()
                    .nth(left)
                    .map_or(line.len(), |(at, _)| at);
                room = Some(left - line[..end].chars().count().min(left));
                &line[..end]
            }
        };
        if i > 0 && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(kept);
        if out.len() >= MAX_CHARS {
            break;
        }
    }
    Some(out)
}

fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => text[..i].to_string(),
        None => text.to_string(),
    }
}

/// Fingerprint of an embedded text: equal texts share one vector.
pub fn text_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::record::{parse_record, ParseOptions};
    use serde_json::json;

    fn record(value: serde_json::Value) -> Record {
        parse_record(value, &Origin::file("t"), &ParseOptions::default()).unwrap()
    }

    #[test]
    fn segments_lead_with_topic_then_content_and_decisions() {
        let r = record(
            json!({"segment_id": "s", "topic": "OAuth", "compressed_content": "fixed refresh",
            "key_decisions": ["use PKCE"], "key_files": ["a.py"]}),
        );
        assert_eq!(embedding_text(&r), "OAuth. fixed refresh. use PKCE");
    }

    #[test]
    fn tool_calls_and_outputs_keep_their_heads_and_prose_stays_whole() {
        let prose = "I will read the config loader to see why the cache is stale.";
        let call = format!(
            "[tool_use Read] {{\"file_path\":\"/src/{}\"}}",
            "a".repeat(300)
        );
        let content = format!("{prose}\n{call}");
        let r = record(json!({"id": "m", "role": "assistant", "text": content}));
        let text = embedding_text(&r);
        assert!(text.starts_with(prose), "{text}");
        assert_eq!(text.chars().count(), prose.len() + 1 + TOOL_CALL_CHARS);

        let output = format!("[tool_result] line one\n{}\nlast line", "x".repeat(500));
        let r = record(json!({"id": "t", "role": "user", "text": output}));
        let text = embedding_text(&r);
        assert!(text.starts_with("[tool_result] line one\nxxx"), "{text}");
        // The newline kept between the lines is not counted against the head.
        assert_eq!(
            text.chars().filter(|&c| c != '\n').count(),
            TOOL_OUTPUT_CHARS
        );
        assert!(!text.contains("last line"));
    }

    #[test]
    fn records_without_tool_markers_embed_as_before() {
        let text = "We talked about [tool_use in the middle] of a line.\nAnd more.";
        let r = record(json!({"id": "m", "role": "user", "text": text}));
        assert_eq!(embedding_text(&r), text);
        let r = record(json!({"id": "n", "kind": "note", "title": "T", "text": "[tool_result] x"}));
        assert_eq!(embedding_text(&r), "T. [tool_result] x");
    }

    #[test]
    fn messages_embed_their_words_and_long_text_is_cut() {
        let r = record(json!({"id": "m", "role": "user", "text": "x".repeat(5000)}));
        assert_eq!(embedding_text(&r).chars().count(), MAX_CHARS);
    }
}
