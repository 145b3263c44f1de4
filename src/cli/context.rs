//! `knowledge-db tokens` and `knowledge-db evict`: token counts and rolling eviction.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use super::ingest::{FormatArg, TranscriptStoreArgs};
use super::output;
use crate::context::budget::reported_prompt;
use crate::context::evict::EvictError;
use crate::context::live::live_context;
use crate::context::priority::{pack_prompt, PriorityOptions};
use crate::context::roll::{full_versions, truncate_with_cost, TruncationSummary};
use crate::context::tokens::Tokenizer;
use crate::context::truncate::TruncateOptions;
use crate::error::Error;
use crate::flows::evict::{
    record_id_in, store_full, tokenizer_for, Destination, EvictFailure, EvictRequest, Evicted,
};
use crate::transcript::ingest::Via;
use crate::transcript::{read_file, read_slice, Block, Message, ReadFrom, Role, Transcript};

pub const TOKENS_HELP: &str = "\
Examples:
  knowledge-db tokens ~/.claude/projects/-home-me-proj/4f1c9a2e.jsonl
  cat chat.jsonl | knowledge-db tokens - --json

Counts are exact for OpenAI tokenizers (o200k: GPT-4o/4.1/5 and o-series; cl100k:
GPT-4/3.5); `estimate` is a conservative count for Claude and unknown models. When
the transcript reports usage, the last response's prompt size (input + cache reads
+ cache writes) is shown as `reported`, with the part of it outside the messages
(system prompt, tool definitions: what `evict` adds to the messages it counts).";

pub const EVICT_HELP: &str = "\
Examples:
  knowledge-db evict --transcript session.jsonl --context-window 200000 --dry-run
  knowledge-db evict --transcript session.jsonl --context-window 128000 --reserved-output 8000 --model gpt-4o
  knowledge-db evict --transcript chat.jsonl --context-window 200000 --json

  knowledge-db evict --transcript session.jsonl --context-window 200000 --truncate-tools --tool-steps 5 --tool-max-tokens 2000

Only the live context is rolled: in a Claude Code file with compactions, the
compact summary and what follows the last `compact_boundary`. With
--truncate-tools, tool outputs older than --tool-steps tool-calling steps or
longer than --tool-max-tokens first become placeholders (tool name, file paths,
exit status, error lines and the record id of the full output), unless a recent
step touches the same file; fewer messages then have to leave. The budget is
(context window - reserved output), and the prompt is the messages plus what the
agent sends besides them (system prompt, tool definitions): measured from the
transcript's usage figures (the last prompt size it reports minus the messages that
prompt held), or --overhead N. Messages are dropped, oldest first, until the prompt
takes at most --target of the budget. The system prompt, the compaction summary,
the last --min-keep messages and tool call/result pairs are never split or dropped. The full evicted and
truncated messages are written to the store first (ids <session>:<uuid>, shown
by `knowledge-db get`, found by `knowledge-db search`), then the kept messages
are printed as JSONL (the generic transcript format) with one note where the
evicted ones were, saying what was evicted and truncated. If even the minimum
does not fit, the command fails with the numbers and writes nothing.";

pub const PACK_HELP: &str = "\
Examples:
  knowledge-db pack --transcript session.jsonl --budget 100000 --system system.txt --instructions CLAUDE.md
  knowledge-db pack --transcript session.jsonl --budget 50000 --truncate-tools --json
  cat chat.jsonl | knowledge-db pack --transcript - --budget 8000 --dry-run

Fits a whole prompt (system prompt, instruction files, then the transcript's live
context) into --budget tokens, least important messages first: stale tool output
(tool calls and results before the recent turns or more than --recent-tool-steps
steps old), then old history, recent turns (since the last --recent-turns user
prompts), tool calls on files edited in the recent turns, the current task (the
last user prompt) and instructions; the system prompt and the compaction summary
are never dropped. Within each priority, tool outputs first become placeholders
(the call stays; the placeholder names the record with the full output), then
messages go, oldest first; a tool call and its result go together. The step that
crosses the budget is cut to fit (an output keeps its first lines, a long message
its beginning), so the prompt lands just under the budget. What is dropped or cut
is stored first (findable by `get` and `search`); the kept messages are printed as
JSONL with one note saying what was dropped and cut. If the system prompt alone is
over budget, the command fails with the numbers and writes nothing.";

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// Transcript file, or - for stdin
    #[arg(value_name = "FILE")]
    file: PathBuf,

    /// Transcript format
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

/// When tool outputs become placeholders (shared by `evict` and `pack`).
#[derive(Debug, Args)]
pub struct TruncateArgs {
    /// Replace old or long tool outputs by placeholders first (full outputs go to the store)
    #[arg(long)]
    truncate_tools: bool,

    /// With --truncate-tools: outputs older than this many tool-calling steps are replaced
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        requires = "truncate_tools"
    )]
    tool_steps: usize,

    /// With --truncate-tools: outputs longer than this many tokens are replaced
    #[arg(
        long,
        value_name = "M",
        default_value_t = 2000,
        requires = "truncate_tools"
    )]
    tool_max_tokens: usize,
}

impl TruncateArgs {
    fn options(&self) -> Option<TruncateOptions> {
        self.truncate_tools.then_some(TruncateOptions {
            max_age_steps: self.tool_steps,
            max_tokens: self.tool_max_tokens,
        })
    }
}

#[derive(Debug, Args)]
pub struct EvictArgs {
    /// Transcript to evict from (Claude Code, OpenClaw or generic JSONL; - for stdin)
    #[arg(long, value_name = "FILE")]
    transcript: PathBuf,

    /// Context window of the model, in tokens
    #[arg(long, value_name = "N")]
    context_window: usize,

    /// Tokens kept free for the model's answer
    #[arg(long, value_name = "N", default_value_t = 0)]
    reserved_output: usize,

    /// Fraction of (window - reserved output) to get down to
    #[arg(long, default_value_t = 0.8)]
    target: f64,

    /// Recent messages always kept
    #[arg(long, value_name = "N", default_value_t = 10)]
    min_keep: usize,

    /// Model whose tokenizer counts [default: the transcript's own model]
    #[arg(long, value_name = "M")]
    model: Option<String>,

    /// Tokens the prompt takes besides the messages (system prompt, tool
    /// definitions) [default: measured from the transcript's usage figures, else 0]
    #[arg(long, value_name = "N")]
    overhead: Option<usize>,

    #[command(flatten)]
    truncate: TruncateArgs,

    #[command(flatten)]
    common: TranscriptStoreArgs,
}

#[derive(Debug, Args)]
pub struct PackArgs {
    /// Transcript whose live context is packed (Claude Code, OpenClaw or generic JSONL; - for stdin)
    #[arg(long, value_name = "FILE")]
    transcript: PathBuf,

    /// Tokens the whole prompt may take
    #[arg(long, value_name = "N")]
    budget: usize,

    /// A system prompt to put first (never dropped)
    #[arg(long, value_name = "FILE")]
    system: Option<PathBuf>,

    /// Agent instructions to put after the system prompt (CLAUDE.md, AGENTS.md, a skill); repeatable
    #[arg(long, value_name = "FILE")]
    instructions: Vec<PathBuf>,

    /// User prompts (turns) that count as recent
    #[arg(long, value_name = "N", default_value_t = 3)]
    recent_turns: u64,

    /// Tool-calling steps whose calls and results count as recent (older ones are stale)
    #[arg(long, value_name = "N", default_value_t = 5)]
    recent_tool_steps: usize,

    /// Model whose tokenizer counts [default: the transcript's own model]
    #[arg(long, value_name = "M")]
    model: Option<String>,

    #[command(flatten)]
    truncate: TruncateArgs,

    #[command(flatten)]
    common: TranscriptStoreArgs,
}

fn read_transcript(path: &Path, format: FormatArg) -> anyhow::Result<Transcript> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .context("reading stdin")?;
        return Ok(read_slice(
            Path::new("stdin.jsonl"),
            &bytes,
            format.format(),
            ReadFrom::default(),
        )?);
    }
    Ok(read_file(path, format.format(), ReadFrom::default())?)
}

/// The model the transcript's last assistant message names.
pub fn tokens(args: TokensArgs) -> anyhow::Result<ExitCode> {
    let t = read_transcript(&args.file, args.format)?;
    let families = [Tokenizer::O200k, Tokenizer::Cl100k, Tokenizer::Estimate];
    let mut totals = [0usize; 3];
    let mut rows = Vec::with_capacity(t.messages.len());
    for m in &t.messages {
        let counts: Vec<usize> = families.iter().map(|f| f.message(m)).collect();
        for (total, c) in totals.iter_mut().zip(&counts) {
            *total += c;
        }
        rows.push((m, counts));
    }
    let (tokenizer, model) = tokenizer_for(None, &t);
    let reported = reported_prompt(&t.messages, &|m| tokenizer.message(m));
    if args.json {
        let messages: Vec<_> = rows
            .iter()
            .map(|(m, c)| {
                json!({"line": m.line, "role": m.role, "uuid": m.uuid, "timestamp": m.timestamp,
                       "o200k": c[0], "cl100k": c[1], "estimate": c[2],
                       "usage": m.usage})
            })
            .collect();
        output::print_json(&json!({
            "path": t.path, "format": t.format, "messages": messages,
            "total": {"o200k": totals[0], "cl100k": totals[1], "estimate": totals[2]},
            "model": model,
            "model_tokenizer": model.as_deref().map(|m| Tokenizer::for_model(m).as_str()),
            "reported_context_tokens": reported.map(|r| r.reported_tokens),
            "reported_prompt": reported,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    writeln!(
        out,
        "{:>6}  {:<9}  {:>8}  {:>8}  {:>8}",
        "line", "role", "o200k", "cl100k", "estimate"
    )?;
    for (m, c) in &rows {
        writeln!(
            out,
            "{:>6}  {:<9}  {:>8}  {:>8}  {:>8}",
            m.line,
            m.role.as_str(),
            c[0],
            c[1],
            c[2]
        )?;
    }
    writeln!(
        out,
        "{:>6}  {:<9}  {:>8}  {:>8}  {:>8}",
        "total", "", totals[0], totals[1], totals[2]
    )?;
    if let Some(model) = &model {
        writeln!(
            out,
            "model {model}: counted with {}",
            Tokenizer::for_model(model).as_str()
        )?;
    }
    if let Some(r) = reported {
        writeln!(
            out,
            "reported by the transcript's last usage figures: {} tokens of prompt, of which {} outside the {} counted tokens of messages (system prompt, tool definitions)",
            r.reported_tokens, r.overhead_tokens, r.counted_tokens
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

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
    let done = match crate::flows::evict::evict(request) {
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
