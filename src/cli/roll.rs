//! `knowledge-db evict` and `knowledge-db pack`: parse the flags, run the
//! flow, print the kept messages and what happened.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::json;

use super::context::{read_transcript, EvictArgs, PackArgs};
use super::output;
use knowledge_db::context::evict::EvictError;
use knowledge_db::context::live::live_context;
use knowledge_db::context::priority::{pack_prompt, PriorityOptions};
use knowledge_db::context::roll::{full_versions, truncate_with_cost, TruncationSummary};
use knowledge_db::error::Error;
use knowledge_db::flows::evict::{
    record_id_in, store_full, tokenizer_for, Destination, EvictFailure, EvictRequest, Evicted,
};
use knowledge_db::transcript::ingest::Via;
use knowledge_db::transcript::{Block, Message, Role};

/// Prints messages as JSONL (the generic transcript format).
fn print_messages(messages: &[Message]) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for m in messages {
        serde_json::to_writer(&mut out, m)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

fn usage_error(e: EvictError) -> anyhow::Error {
    match e {
        EvictError::Options(m) => anyhow::Error::new(Error::Usage(m)),
        other => anyhow::Error::new(other),
    }
}

pub fn evict(root: &Path, args: EvictArgs) -> anyhow::Result<ExitCode> {
    let t = read_transcript(&args.transcript, args.common.format)?;
    let request = EvictRequest {
        transcript: &t,
        model: args.model.as_deref(),
        context_window: args.context_window,
        reserved_output: args.reserved_output,
        target: args.target,
        min_keep: args.min_keep,
        overhead: args.overhead,
        truncate: args.truncate.options(),
        destination: (!args.common.dry_run).then(|| Destination {
            root,
            namespace: &args.common.namespace,
            lock_timeout: args.common.lock_timeout,
        }),
    };
    let done = match knowledge_db::flows::evict::evict(request) {
        Ok(done) => done,
        Err(EvictFailure::Budget(e)) => return Err(usage_error(e)),
        Err(EvictFailure::Store(e)) => return Err(e.into()),
    };
    if let Some(line) = &done.upkeep_warning {
        eprintln!("{line}");
    }
    let Evicted {
        tokenizer,
        model,
        compacted,
        reported,
        rolled,
        evicted_ids: ids,
        stored,
        evict_seconds,
        ..
    } = done;
    let eviction = &rolled.eviction;
    // Before truncation too: the prompt as the transcript had it.
    let tokens_before = rolled
        .truncation
        .as_ref()
        .map_or(eviction.tokens_before, |s| {
            s.tokens_before + eviction.overhead_tokens
        });
    if args.common.json {
        output::print_json(&json!({
            "dry_run": args.common.dry_run,
            "tokenizer": tokenizer.as_str(),
            "model": model,
            "messages_before": t.messages.len(),
            "compacted_messages": compacted,
            "live_messages": t.messages.len() - compacted,
            "kept_count": eviction.kept.len(),
            "evicted_count": eviction.evicted.len(),
            "tokens_before": tokens_before,
            "tokens_after": eviction.tokens_after,
            "tokens_evicted": eviction.tokens_evicted,
            "tokens_saved": tokens_before.saturating_sub(eviction.tokens_after),
            "overhead_tokens": eviction.overhead_tokens,
            "reported_prompt": reported,
            "truncation": rolled.truncation,
            "max_input": eviction.max_input,
            "target_tokens": eviction.target_tokens,
            "target_met": eviction.target_met,
            "first_evicted": eviction.first_evicted,
            "last_evicted": eviction.last_evicted,
            "note": eviction.note,
            "evicted_ids": ids,
            "stored": stored,
            "evict_seconds": evict_seconds,
            "kept": eviction.kept,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_messages(&eviction.kept)?;
    if std::io::stderr().is_terminal() {
        let truncated = match &rolled.truncation {
            Some(s) => format!(
                "; {} tool outputs truncated ({} -> {} tokens)",
                s.outputs_truncated, s.tokens_before, s.tokens_after
            ),
            None => String::new(),
        };
        let overhead = match eviction.overhead_tokens {
            0 => String::new(),
            n => format!(", {n} of them outside the messages"),
        };
        eprintln!(
            "{} of {} live messages evicted ({} tokens; prompt {} -> {} of a {}-token budget{overhead}){truncated}{}{}",
            eviction.evicted.len(),
            t.messages.len() - compacted,
            eviction.tokens_evicted,
            eviction.tokens_before,
            eviction.tokens_after,
            eviction.max_input,
            if compacted > 0 {
                format!("; {} messages before the last compaction skipped", compacted)
            } else {
                String::new()
            },
            if args.common.dry_run {
                "; nothing written (--dry-run)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The system prompt and instruction files as the first messages of a prompt.
fn preamble(args: &PackArgs, session: &str) -> anyhow::Result<Vec<Message>> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let mut out = Vec::new();
    if let Some(path) = &args.system {
        let mut m = Message::new(Role::System, vec![Block::Text { text: read(path)? }]);
        m.uuid = Some("system-prompt".into());
        m.session_id = Some(session.to_string());
        out.push(m);
    }
    for path in &args.instructions {
        let mut m = Message::new(Role::User, vec![Block::Text { text: read(path)? }]);
        m.is_meta = true;
        m.uuid = Some(format!("instructions:{}", path.display()));
        m.session_id = Some(session.to_string());
        out.push(m);
    }
    Ok(out)
}

pub fn pack(root: &Path, args: PackArgs) -> anyhow::Result<ExitCode> {
    let t = read_transcript(&args.transcript, args.common.format)?;
    let (tokenizer, model) = tokenizer_for(args.model.as_deref(), &t);
    let cost = |m: &Message| tokenizer.message(m);
    let live = live_context(t.messages.clone());
    let mut messages = preamble(&args, &t.session_id)?;
    messages.extend(live.messages);
    let record_id = record_id_in(&t);
    let started = std::time::Instant::now();
    let (messages, truncation, originals) = match args.truncate.options() {
        Some(options) => {
            let tr = truncate_with_cost(messages, &options, &cost, &record_id);
            let summary = TruncationSummary::of(&tr);
            (tr.messages, Some(summary), tr.originals)
        }
        None => (messages, None, Vec::new()),
    };
    let options = PriorityOptions {
        recent_turns: args.recent_turns,
        recent_tool_steps: args.recent_tool_steps,
    };
    let packed = pack_prompt(messages, args.budget, &options, &cost, &record_id)?;
    let pack_seconds = started.elapsed().as_secs_f64();
    let dropped: Vec<Message> = packed.dropped.iter().map(|(_, m)| m.clone()).collect();
    // What pack cut was maybe already truncated by --truncate-tools: the earlier
    // original (later in the list) is the full one.
    let mut full = packed.cut.clone();
    full.extend(originals);
    let to_store = full_versions(&dropped, &packed.kept, full, &record_id);
    let stored = if args.common.dry_run {
        None
    } else {
        let destination = Destination {
            root,
            namespace: &args.common.namespace,
            lock_timeout: args.common.lock_timeout,
        };
        let (stored, warning) = store_full(&destination, &t, &to_store, Via::Pack)?;
        if let Some(line) = warning {
            eprintln!("{line}");
        }
        stored
    };
    let mut by_priority: BTreeMap<&str, usize> = BTreeMap::new();
    for (p, _) in &packed.dropped {
        *by_priority.entry(p.as_str()).or_default() += 1;
    }
    if args.common.json {
        let ids: Vec<String> = dropped.iter().map(&record_id).collect();
        output::print_json(&json!({
            "dry_run": args.common.dry_run,
            "tokenizer": tokenizer.as_str(),
            "model": model,
            "budget": args.budget,
            "compacted_messages": live.compacted,
            "kept_count": packed.kept.len(),
            "dropped_count": packed.dropped.len(),
            "dropped_by_priority": by_priority,
            "tokens_before": truncation.as_ref().map_or(packed.tokens_before, |s| s.tokens_before),
            "tokens_after": packed.tokens_after,
            "budget_share": packed.tokens_after as f64 / args.budget.max(1) as f64,
            "truncation": truncation,
            "outputs_truncated": packed.outputs_truncated,
            "cut_ids": packed.cut.iter().map(|(id, _)| id).collect::<Vec<_>>(),
            "note": packed.note,
            "dropped_ids": ids,
            "stored": stored,
            "pack_seconds": pack_seconds,
            "kept": packed.kept,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    print_messages(&packed.kept)?;
    if std::io::stderr().is_terminal() {
        eprintln!(
            "{} messages dropped ({by_priority:?}), {} cut ({} tool outputs truncated); {} -> {} tokens of a {}-token budget{}",
            packed.dropped.len(),
            packed.cut.len(),
            packed.outputs_truncated,
            packed.tokens_before,
            packed.tokens_after,
            args.budget,
            if args.common.dry_run {
                "; nothing written (--dry-run)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
