//! The reminder: what `hook post-tool-use` tells the agent when finished parts
//! of its session wait in the compression queue.
//!
//! It says, in at most about 400 tokens (o200k; tested): which items (id,
//! turns, size, topic), how to read one back (`knowledge-db show`, or MCP
//! `memory_get` with a session and a turn range), what to keep and what to
//! drop, the JSON to write, how to save it (`knowledge-db add -` with the JSON
//! on stdin, or MCP `memory_add`), and the one line to report. Every command in
//! it runs as written: it names this binary and store the way the hook itself
//! was started.

use std::path::Path;

use super::queue::{PendingEntry, Queue};
use super::session::cut;
use super::{escape_controls, ContextUsage, HookSettings};
use crate::context::tokens::estimate;
use crate::shell::shell_quote;

/// Items listed by name; the rest are counted (the whole queue is one
/// `show --queue` away). Three keep the reminder under 400 tokens even with a
/// long install path.
const MAX_LISTED: usize = 3;
/// Longest topic shown.
const TOPIC_CHARS: usize = 40;

/// How to call knowledge-db on this store from a shell: `knowledge-db` when
/// that is this binary on `PATH`, else its absolute path; with `--store` unless
/// the store is the default one.
pub fn command_prefix(store_root: &Path) -> String {
    let exe = std::env::current_exe().ok();
    let on_path = exe.as_deref().is_some_and(|exe| {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| {
                let candidate = dir.join("knowledge-db");
                candidate.exists() && candidate.canonicalize().ok() == exe.canonicalize().ok()
            })
        })
    });
    let program = match exe {
        Some(exe) if !on_path => shell_quote(&exe.display().to_string()),
        _ => "knowledge-db".to_string(),
    };
    // An absolute store folder: the agent's shell may run anywhere.
    let store = store_root
        .canonicalize()
        .or_else(|_| std::path::absolute(store_root))
        .unwrap_or_else(|_| store_root.to_path_buf());
    let default = crate::store::default_root();
    let default = default.canonicalize().unwrap_or(default);
    if store == default {
        program
    } else {
        format!(
            "{program} --store {}",
            shell_quote(&store.display().to_string())
        )
    }
}

fn thousands(n: u64) -> String {
    if n >= 10_000 {
        format!("{:.0}k", n as f64 / 1000.0)
    } else if n >= 1000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        n.to_string()
    }
}

/// One queued item; its id written `S:…` (S is the session, named once).
fn item_line(n: usize, e: &PendingEntry, session: &str, topic: bool) -> String {
    let id = match e.segment_id.strip_prefix(session) {
        Some(rest) if rest.starts_with(':') => format!("S{rest}"),
        _ => e.segment_id.clone(),
    };
    // A segment's id ends with its turns already.
    let range = format!("{}-{}", e.start_turn, e.end_turn);
    let turns = if id.ends_with(&format!(":{range}")) {
        String::new()
    } else {
        format!(", turns {range}")
    };
    let topic = if topic {
        format!(": {}", escape_controls(&cut(e.topic.trim(), TOPIC_CHARS)))
    } else {
        String::new()
    };
    format!(
        "{n}. {}{turns}, ~{} tokens{topic}",
        escape_controls(&id),
        thousands(e.original_tokens)
    )
}

/// Most tokens a reminder may cost (o200k).
pub const MAX_TOKENS: usize = 400;
/// The same budget in the conservative estimate, which a hook can afford (a
/// tokenizer takes longer to load than a hook may run): the estimate counts
/// reminders 6-14% above o200k (62 reminders of the replay), so 420 estimated
/// tokens are at most 396 o200k ones.
const MAX_ESTIMATED: usize = 420;

/// The reminder for the queue's pending items (empty queue: `None`): as many
/// items listed (up to three) as fit in [`MAX_TOKENS`], the rest counted.
pub fn reminder(
    queue: &Queue,
    usage: Option<ContextUsage>,
    settings: &HookSettings,
    prefix: &str,
) -> Option<String> {
    queue.pending.first()?;
    let shapes = (1..=MAX_LISTED.min(queue.pending.len()))
        .rev()
        .map(|n| (n, true))
        .chain([(1, false)]);
    let mut text = String::new();
    for (listed, topics) in shapes {
        text = compose(queue, usage, settings, prefix, listed, topics);
        if estimate(&text) <= MAX_ESTIMATED {
            break;
        }
    }
    Some(text)
}

/// The reminder with `listed` items named (with their topics or not).
fn compose(
    queue: &Queue,
    usage: Option<ContextUsage>,
    settings: &HookSettings,
    prefix: &str,
    listed: usize,
    topics: bool,
) -> String {
    let first = &queue.pending[0];
    // The session id comes from the hook input: shown without control
    // characters, shell-quoted in commands, JSON-escaped in the template.
    let session = &escape_controls(&queue.session_id);
    let session_word = shell_quote(&queue.session_id);
    let session_json = json_string(&queue.session_id);
    let segment_json = json_string(&first.segment_id);
    let mut text = String::from("knowledge-db");
    if let Some(u) = usage {
        text.push_str(&format!(
            " (context {:.0}% of {})",
            u.fraction * 100.0,
            thousands(settings.context_window)
        ));
    }
    text.push_str(&format!(
        ": please compress these finished parts of session S = {session}:\n"
    ));
    for (i, entry) in queue.pending.iter().take(listed).enumerate() {
        text.push_str(&item_line(i + 1, entry, &queue.session_id, topics));
        text.push('\n');
    }
    if queue.pending.len() > listed {
        text.push_str(&format!(
            "…and {} more (the Read command below with `--queue` for `--turns {}-{}` lists them)\n",
            queue.pending.len() - listed,
            first.start_turn,
            first.end_turn
        ));
    }
    let (a, b) = (first.start_turn, first.end_turn);
    text.push_str(&format!(
        "Read: `{prefix} show --session {session_word} --turns {a}-{b}` (MCP memory_get session/from/to). \
         Keep decisions, files changed, errors+fixes, outcomes, user preferences; \
         drop tool output, debugging, chatter, boilerplate (80-90% fewer tokens). \
         Save: `{prefix} add -`, JSON on stdin (MCP memory_add):\n\
         {{\"segment_id\":{segment_json},\"session_id\":{session_json},\"topic\":\"…\",\"start_turn\":{a},\"end_turn\":{b},\
         \"compressed_content\":\"…\",\"key_decisions\":[],\"key_files\":[]}}\n\
         Then tell the user: Compressed N segments (X tokens → Y tokens)."
    ));
    text
}

/// `text` as a JSON string literal, quotes included.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::Tokenizer;

    fn entry(n: u64) -> PendingEntry {
        PendingEntry {
            segment_id: format!("533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2:segment:{}-{}", n * 40, n * 40 + 37),
            topic: "Implement the following plan: Remove transcript_path Storage and Compute Dynamically from the session state".into(),
            start_turn: n * 40,
            end_turn: n * 40 + 37,
            message_count: 80,
            turns_since_mention: 25,
            queued_at_turn: 300,
            timestamp: "2026-01-05T10:00:00Z".into(),
            kind: "segment".into(),
            original_tokens: 12_400 + n,
        }
    }

    fn queue(n: u64) -> Queue {
        Queue {
            session_id: "533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2".into(),
            pending: (1..=n).map(entry).collect(),
            ..Queue::default()
        }
    }

    #[test]
    fn the_reminder_fits_in_400_tokens_and_names_working_commands() {
        // An installed binary and a store named by path, as `hook install` writes them.
        let prefix =
            "/home/someone/.local/bin/knowledge-db --store /home/someone/.local/share/knowledge-db";
        let usage = ContextUsage {
            tokens: 156_000,
            fraction: 0.78,
            source: "usage",
        };
        // A longer one: the budget drops topics and items before it is exceeded.
        let long = "/opt/tools/knowledge-db/0.4.1/bin/knowledge-db --store /home/someone/projects/acme-monorepo/.knowledge-db-store";
        for p in [prefix, long] {
            for n in [1, 2, 3, 5, 9] {
                let text = reminder(&queue(n), Some(usage), &HookSettings::default(), p).unwrap();
                let tokens = Tokenizer::O200k.count(&text);
                assert!(tokens <= MAX_TOKENS, "{n} items: {tokens} tokens\n{text}");
            }
        }
        let text = reminder(&queue(1), Some(usage), &HookSettings::default(), prefix).unwrap();
        assert!(text.contains(&format!(
            "`{prefix} show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --turns 40-77`"
        )));
        assert!(text.contains("(MCP memory_get session/from/to)"));
        assert!(text.contains(&format!("`{prefix} add -`")));
        assert!(
            text.contains("\"segment_id\":\"533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2:segment:40-77\"")
        );
        assert!(text.ends_with("Compressed N segments (X tokens → Y tokens)."));
        assert!(text.contains("session S = 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2:\n"));
        assert!(text.contains("\n1. S:segment:40-77, ~12k tokens: "));
        let many = reminder(&queue(9), Some(usage), &HookSettings::default(), prefix).unwrap();
        assert!(
            many.contains("\n1. S:segment:40-77, ~12k tokens: Implement"),
            "{many}"
        );
        assert!(
            many.contains(
                " more (the Read command below with `--queue` for `--turns 40-77` lists them)"
            ) && many.contains(&format!(
                "`{prefix} show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --turns 40-77`"
            )),
            "the command for the rest runs as written: {many}"
        );
        let two = reminder(&queue(2), None, &HookSettings::default(), "knowledge-db").unwrap();
        assert!(
            two.contains("\n2. S:segment:80-117, ~12k tokens: "),
            "{two}"
        );
        assert!(text.contains("~12k tokens"), "{text}");
        assert!(reminder(&Queue::default(), None, &HookSettings::default(), prefix).is_none());
    }

    #[test]
    fn a_hostile_session_id_is_quoted_in_commands_and_escaped_in_json() {
        let dir = tempfile::tempdir().expect("tmp");
        let marker = dir.path().join("pwned");
        let second = dir.path().join("pwned-by-the-next-line");
        let session = format!(
            "x$(touch {})'\"`;\ntouch {}",
            marker.display(),
            second.display()
        );
        let mut q = queue(1);
        q.session_id = session.clone();
        q.pending[0].segment_id = format!("{session}:segment:40-77");
        // `printf` in place of the binary: the shell prints the words it was given.
        let text = reminder(&q, None, &HookSettings::default(), "printf '%s\\n'").expect("text");
        let start = text.find("Read: `").expect("the Read command") + "Read: `".len();
        let end = text.find("` (MCP memory_get").expect("its end");
        let command = &text[start..end];
        let out = std::process::Command::new("sh")
            .args(["-c", command])
            .output()
            .expect("sh");
        assert!(
            !marker.exists() && !second.exists(),
            "the command ran what the session id held: {command}"
        );
        let words: Vec<&str> = std::str::from_utf8(&out.stdout)
            .expect("utf-8")
            .lines()
            .collect();
        assert_eq!(
            words.get(2).copied(),
            Some(session.split('\n').next().unwrap_or_default())
        );
        // The JSON template parses, with the session id as given.
        let template = text
            .lines()
            .find(|line| line.starts_with('{'))
            .expect("the JSON template")
            .replace('…', "");
        let value: serde_json::Value = serde_json::from_str(&template).expect("valid JSON");
        assert_eq!(value["session_id"], session.as_str());
        assert_eq!(value["segment_id"], q.pending[0].segment_id.as_str());
        // Named in prose, its control characters are shown escaped.
        assert!(text.contains("touch"), "{text}");
        assert!(text.contains("\\ntouch "), "{text}");
    }

    #[test]
    fn odd_paths_are_quoted_for_the_shell() {
        assert_eq!(
            shell_quote("/usr/bin/knowledge-db"),
            "/usr/bin/knowledge-db"
        );
        assert_eq!(shell_quote("/My Store/it's"), "'/My Store/it'\\''s'");
    }
}
