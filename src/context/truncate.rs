//! Tool-output truncation: old or huge tool outputs become short placeholders.
//!
//! A tool result older than `max_age_steps` tool-calling steps, or longer than
//! `max_tokens`, is replaced by a placeholder that keeps what a model needs to
//! know it happened: the tool's name, the file paths, the exit status, the error
//! lines, and the id of the record that holds the full output in the store. A
//! result about a file that a recent step (within `max_age_steps`) touches again
//! keeps its content: that file is being worked on. The caller stores the
//! original messages (see [`Truncation::originals`]) before using the result.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::transcript::{Block, Message, Role};

/// When a tool output is replaced.
#[derive(Debug, Clone, Copy)]
pub struct TruncateOptions {
    /// Outputs older than this many tool-calling steps are replaced.
    pub max_age_steps: usize,
    /// Outputs longer than this many tokens are replaced, however recent.
    pub max_tokens: usize,
}

impl Default for TruncateOptions {
    fn default() -> Self {
        TruncateOptions {
            max_age_steps: 5,
            max_tokens: 2000,
        }
    }
}

/// The messages with old and long tool outputs replaced.
#[derive(Debug, Clone)]
pub struct Truncation {
    /// The messages in order, old and long tool outputs replaced by placeholders.
    pub messages: Vec<Message>,
    /// The replaced messages, unchanged, with the record id their placeholder names.
    pub originals: Vec<(String, Message)>,
    /// Tool outputs replaced by placeholders.
    pub outputs_truncated: usize,
    /// Tokens of the messages' text before truncation, as `count` gives them.
    pub tokens_before: usize,
    /// Tokens of the messages' text after truncation, as `count` gives them.
    pub tokens_after: usize,
}

/// Replaces old and long tool outputs; `count` gives a text's tokens, `record_id`
/// the store id under which a message's full text will be kept.
pub fn truncate_tool_outputs(
    messages: Vec<Message>,
    options: &TruncateOptions,
    count: &dyn Fn(&str) -> usize,
    record_id: &dyn Fn(&Message) -> String,
) -> Truncation {
    let calls = calls_by_id(&messages);
    let (step_of, steps) = super::priority::tool_steps(&messages);
    let recent_from = steps.saturating_sub(options.max_age_steps);
    let recent_files: HashSet<String> = messages
        .iter()
        .zip(&step_of)
        .filter(|(m, step)| **step > recent_from && m.role == Role::Assistant)
        .flat_map(|(m, _)| m.files())
        .collect();

    let mut out = Truncation {
        messages: Vec::with_capacity(messages.len()),
        originals: Vec::new(),
        outputs_truncated: 0,
        tokens_before: 0,
        tokens_after: 0,
    };
    for (m, &step) in messages.iter().zip(&step_of) {
        let before = count(&m.text());
        out.tokens_before += before;
        let mut changed = m.clone();
        let id = record_id(m);
        let mut replaced = false;
        for block in &mut changed.content {
            let Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                name,
            } = block
            else {
                continue;
            };
            let call = calls.get(tool_use_id.as_str());
            let files = call.map(call_files).unwrap_or_default();
            let old = step <= recent_from;
            let long = count(content) > options.max_tokens;
            let active = files.iter().any(|f| recent_files.contains(f));
            if !(long || old && !active) || content.starts_with(PLACEHOLDER_PREFIX) {
                continue;
            }
            let tool = name
                .clone()
                .or_else(|| call.map(|c| c.0.clone()))
                .unwrap_or_else(|| "tool".into());
            *content = placeholder(&tool, &files, content, *is_error, count(content), &id);
            replaced = true;
            out.outputs_truncated += 1;
        }
        if replaced {
            out.originals.push((id, m.clone()));
            out.tokens_after += count(&changed.text());
        } else {
            out.tokens_after += before;
        }
        out.messages.push(changed);
    }
    out
}

/// How every placeholder starts (so a second pass leaves it alone).
pub const PLACEHOLDER_PREFIX: &str = "[tool output truncated:";

/// What [`shorten`] cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Tool outputs only (each becomes a placeholder).
    ToolOutputs,
    /// Tool outputs, and text and thinking blocks.
    Everything,
}

/// `m` with its tool outputs (and with [`Cut::Everything`] its text) cut to
/// their first `keep` characters: a tool output becomes the placeholder
/// (naming `record_id`, where the full message is stored) followed by that
/// head; a longer text keeps its head and says where the rest is. `count`
/// gives a text's tokens (for the placeholder's figure).
pub fn shorten(
    m: &Message,
    calls: &Calls,
    cut: Cut,
    keep: usize,
    record_id: &str,
    count: &dyn Fn(&str) -> usize,
) -> Message {
    let mut out = m.clone();
    for block in &mut out.content {
        match block {
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
                name,
            } if !content.starts_with(PLACEHOLDER_PREFIX) => {
                let call = calls.get(tool_use_id.as_str());
                let files = call.map(call_files).unwrap_or_default();
                let tool = name
                    .clone()
                    .or_else(|| call.map(|c| c.0.clone()))
                    .unwrap_or_else(|| "tool".into());
                let mut text =
                    placeholder(&tool, &files, content, *is_error, count(content), record_id);
                let head = head_of(content, keep);
                if !head.is_empty() {
                    text.push('\n');
                    text.push_str(head);
                }
                *content = text;
            }
            Block::Text { text } | Block::Thinking { thinking: text } if cut == Cut::Everything => {
                let head = head_of(text, keep);
                if head.len() < text.len() {
                    *text = format!(
                        "{head}\n[… cut: {} of {} tokens shown; the full message is in record {record_id}]",
                        count(head),
                        count(text)
                    );
                }
            }
            _ => {}
        }
    }
    out
}

/// The longest version of `m` cut by [`shorten`] that costs at most `tokens`
/// (found by bisecting the characters kept), or `None` if even the shortest
/// does not fit or saves nothing.
pub fn shorten_to(
    m: &Message,
    tokens: usize,
    calls: &Calls,
    cut: Cut,
    record_id: &str,
    cost: &dyn Fn(&Message) -> usize,
    count: &dyn Fn(&str) -> usize,
) -> Option<Message> {
    let at = |keep| shorten(m, calls, cut, keep, record_id, count);
    let shortest = at(0);
    if shortest == *m || cost(&shortest) > tokens || cost(&shortest) >= cost(m) {
        return None;
    }
    let longest = m
        .content
        .iter()
        .map(|b| match b {
            Block::ToolResult { content, .. } => content.chars().count(),
            Block::Text { text } | Block::Thinking { thinking: text } => text.chars().count(),
            _ => 0,
        })
        .max()
        .unwrap_or(0);
    // Largest `keep` in 0..longest whose version fits.
    let (mut fits, mut over) = (0, longest);
    while over - fits > 1 {
        let mid = (fits + over) / 2;
        if cost(&at(mid)) <= tokens {
            fits = mid;
        } else {
            over = mid;
        }
    }
    Some(at(fits))
}

/// The first `chars` characters of `text`.
fn head_of(text: &str, chars: usize) -> &str {
    match text.char_indices().nth(chars) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Tool calls by id: their name and input.
pub type Calls = HashMap<String, (String, Value)>;

/// The tool calls of `messages`, by id.
pub fn calls_by_id(messages: &[Message]) -> Calls {
    let mut calls = HashMap::new();
    for m in messages {
        for block in &m.content {
            if let Block::ToolUse { id, name, input } = block {
                calls.insert(id.clone(), (name.clone(), input.clone()));
            }
        }
    }
    calls
}

fn call_files(call: &(String, Value)) -> Vec<String> {
    let message = Message::new(
        Role::Assistant,
        vec![Block::ToolUse {
            id: String::new(),
            name: call.0.clone(),
            input: call.1.clone(),
        }],
    );
    message.files()
}

/// The placeholder for one output.
fn placeholder(
    tool: &str,
    files: &[String],
    output: &str,
    is_error: bool,
    tokens: usize,
    record_id: &str,
) -> String {
    let mut text = format!("{PLACEHOLDER_PREFIX} {tool}");
    if !files.is_empty() {
        text.push_str(&format!(" on {}", files.join(", ")));
    }
    text.push_str(&format!("; {}", exit_status(output, is_error)));
    text.push_str(&format!(
        "; {tokens} tokens; full output in record {record_id}]"
    ));
    for line in error_lines(output) {
        text.push('\n');
        text.push_str(&line);
    }
    text
}

/// "exit N" when the output says so, else "error" or "ok".
fn exit_status(output: &str, is_error: bool) -> String {
    for line in output.lines().take(5).chain(output.lines().rev().take(5)) {
        let lower = line.to_ascii_lowercase();
        if let Some(rest) = lower
            .find("exit code")
            .map(|i| &lower[i + "exit code".len()..])
        {
            let digits: String = rest
                .trim_start_matches([' ', ':'])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !digits.is_empty() {
                return format!("exit {digits}");
            }
        }
    }
    if is_error { "error" } else { "ok" }.to_string()
}

/// Lines that report errors (at most 5, each cut to 200 characters).
fn error_lines(output: &str) -> Vec<String> {
    const MARKERS: &[&str] = &["error", "panicked", "failed", "exception", "traceback"];
    output
        .lines()
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            MARKERS.iter().any(|m| lower.contains(m))
        })
        .take(5)
        .map(|l| l.trim().chars().take(200).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, input: Value) -> Message {
        Message::new(
            Role::Assistant,
            vec![Block::ToolUse {
                id: id.into(),
                name: name.into(),
                input,
            }],
        )
    }

    fn result(id: &str, content: &str, is_error: bool) -> Message {
        let mut m = Message::new(
            Role::Tool,
            vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: content.into(),
                is_error,
                name: None,
            }],
        );
        m.uuid = Some(format!("r-{id}"));
        m
    }

    fn words(text: &str) -> usize {
        text.split_whitespace().count()
    }

    #[test]
    fn old_and_long_outputs_become_placeholders() {
        let mut m = vec![
            call("1", "Bash", json!({"command": "cargo test"})),
            result(
                "1",
                "Exit code 101\nerror[E0502]: cannot borrow\nlots of output here",
                true,
            ),
            call("2", "Read", json!({"file_path": "src/a.rs"})),
            result("2", "fn a() {}", false),
        ];
        for i in 3..9 {
            m.push(call(&i.to_string(), "Grep", json!({"pattern": "x"})));
            m.push(result(&i.to_string(), "match", false));
        }
        // A recent edit of src/a.rs keeps the old read of it.
        m.push(call("9", "Edit", json!({"file_path": "src/a.rs"})));
        m.push(result("9", &"word ".repeat(50), false));
        let options = TruncateOptions {
            max_age_steps: 5,
            max_tokens: 20,
        };
        let t = truncate_tool_outputs(m, &options, &words, &|m| {
            format!("s:{}", m.uuid.clone().unwrap_or_default())
        });
        let bash = t.messages[1].text();
        assert!(
            bash.contains("[tool output truncated: Bash; exit 101;"),
            "{bash}"
        );
        assert!(bash.contains("full output in record s:r-1"));
        assert!(bash.contains("error[E0502]: cannot borrow"));
        assert!(!bash.contains("lots of output"));
        assert_eq!(t.messages[3].text(), "[tool_result] fn a() {}");
        // The last output is recent but too long.
        assert!(t.messages[17]
            .text()
            .contains("Edit on src/a.rs; ok; 50 tokens"));
        assert_eq!(t.originals.len(), t.outputs_truncated);
        assert!(t.tokens_after < t.tokens_before);
        // A second pass changes nothing.
        let again = truncate_tool_outputs(t.messages.clone(), &options, &words, &|_| "x".into());
        assert_eq!(again.messages, t.messages);
    }
}
