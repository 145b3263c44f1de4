//! `knowledge-db show --session S --turns A-B`: the raw messages of a session's
//! turns, as the compression reminder asks the agent to read them (see
//! `integrations::hooks::turns`); `show --session S --queue`: what the session's
//! compression queue holds.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use knowledge_db::integrations::hooks::queue::{queue_path, Queue};
use knowledge_db::integrations::hooks::turns::{read_turns, TurnQuery, DEFAULT_MESSAGE_CHARS};
use knowledge_db::integrations::hooks::HookSettings;
use knowledge_db::store::Store;

pub const AFTER_HELP: &str = "\
Turns count the assistant's responses in the session from 1, as the Claude Code hooks
do (the queue, the reminder and the hooks' summaries use them). The messages come from
the store when the session was ingested (`knowledge-db ingest`), else from the
transcript the hooks followed; a session neither has is named in the error with the
command that makes it readable. Long messages keep their head and tail (--full shows
them whole).

With --queue instead of --turns: the session's compression queue, the items waiting
for the agent's segment (id, turns, ~tokens, topic) and those compressed (with their
token figures).

Examples:
  knowledge-db show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --turns 26-31
  knowledge-db show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --queue
  knowledge-db show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --turns 37 --json
  knowledge-db show --session 533ff7a3-d390-41ff-b9e8-1b09fb4c2fe2 --turns 37-80 --full";

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Session id, or any unique start of it (`2cfdacb8`)
    #[arg(long, value_name = "ID")]
    session: String,

    /// Turn range A-B (or one turn A), counted from 1
    #[arg(long, value_name = "A-B", value_parser = parse_turns, required_unless_present = "queue", conflicts_with = "queue")]
    turns: Option<(u64, u64)>,

    /// Show the session's compression queue instead
    #[arg(long)]
    queue: bool,

    /// Show long messages whole (default: head and tail of each, 4,000 characters)
    #[arg(long)]
    full: bool,

    /// Print JSON: {session_id, from, to, turns, source, transcript, first_line,
    /// last_line, messages: [{turn, line, role, text, timestamp}]}
    #[arg(long)]
    json: bool,
}

/// `A-B` or `A`.
fn parse_turns(text: &str) -> Result<(u64, u64), String> {
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| format!("`{text}` is not a turn range like 26-31 (or one turn: 26)"))
    };
    let (from, to) = match text.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let n = number(text)?;
            (n, n)
        }
    };
    if to < from {
        return Err(format!("`{text}`: the range must not run backwards"));
    }
    Ok((from, to))
}

pub fn run(root: &Path, args: ShowArgs) -> anyhow::Result<ExitCode> {
    // A short id stands for the one stored session it starts (as git's
    // short commit ids do).
    let session = match Store::open(root) {
        Ok(store) => knowledge_db::store::prefix::resolve_session(&store, &args.session)?,
        Err(_) => args.session.clone(),
    };
    let Some((mut from, mut to)) = args.turns else {
        return show_queue(root, &session, args.json);
    };
    if from == 0 {
        // Older releases cited a session's first prompt as turn 0.
        eprintln!(
            "note: turns count from 1 (turn 1 holds the session's first prompt); showing turn{} 1{}",
            if to > 1 { "s" } else { "" },
            if to > 1 { format!("-{to}") } else { String::new() }
        );
        from = 1;
        to = to.max(1);
    }
    let query = TurnQuery {
        session_id: session,
        from,
        to,
        limit: None,
        max_chars: (!args.full).then_some(DEFAULT_MESSAGE_CHARS),
        namespace: None,
    };
    let range = read_turns(root, &query)?;
    if args.json {
        super::output::print_json(&range.to_json())?;
    } else {
        print!("{}", range.to_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// The session's queue: pending items first.
fn show_queue(root: &Path, session: &str, json: bool) -> anyhow::Result<ExitCode> {
    let settings = HookSettings::from_store(root)?;
    let path = queue_path(root, &settings, session);
    let exists = path.exists();
    let queue = Queue::load(&path, session)?;
    if json {
        let mut value = serde_json::to_value(&queue)?;
        value["path"] = serde_json::json!(path);
        value["exists"] = serde_json::json!(exists);
        super::output::print_json(&value)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !exists {
        println!(
            "no compression queue for session {session} ({} does not exist: the hooks have queued nothing for it)",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} pending, {} compressed in {}",
        queue.pending.len(),
        queue.compressed.len(),
        path.display()
    );
    for e in &queue.pending {
        println!(
            "pending    {}  turns {}-{}  ~{} tokens  {}",
            e.segment_id, e.start_turn, e.end_turn, e.original_tokens, e.topic
        );
    }
    for e in &queue.compressed {
        println!(
            "compressed {}  {} -> {} tokens ({}x) at turn {}",
            e.segment_id,
            e.original_tokens,
            e.compressed_tokens,
            e.compression_ratio,
            e.compressed_at_turn
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turn_ranges_parse() {
        assert_eq!(parse_turns("26-31"), Ok((26, 31)));
        assert_eq!(parse_turns("7"), Ok((7, 7)));
        // Turn 0, as older releases cited a first prompt, is taken (and read
        // as turn 1 by `run`, with a note).
        assert_eq!(parse_turns("0-0"), Ok((0, 0)));
        assert!(parse_turns("9-3").is_err());
        assert!(parse_turns("a-b").unwrap_err().contains("26-31"));
    }
}
