//! `knowledge-db tokens` and `knowledge-db evict`: token counts and rolling eviction.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use serde_json::json;

use super::ingest::FormatArg;
use super::output;
use crate::context::evict::{rolling_evict, EvictOptions};
use crate::context::tokens::Tokenizer;
use crate::error::Error;
use crate::store::Store;
use crate::transcript::ingest::{message_id, transcript_records};
use crate::transcript::{read_file, read_slice, ReadFrom, Transcript};

pub const TOKENS_HELP: &str = "\
Examples:
  knowledge-db tokens ~/.claude/projects/-home-me-proj/4f1c9a2e.jsonl
  cat chat.jsonl | knowledge-db tokens - --json

Counts are exact for OpenAI tokenizers (o200k: GPT-4o/4.1/5 and o-series; cl100k:
GPT-4/3.5); `estimate` is a conservative count for Claude and unknown models. When
the transcript reports usage, the last response's prompt size (input + cache reads
+ cache writes) is shown as `reported`.";

pub const EVICT_HELP: &str = "\
Examples:
  knowledge-db evict --transcript session.jsonl --context-window 200000 --dry-run
  knowledge-db evict --transcript session.jsonl --context-window 128000 --reserved-output 8000 --model gpt-4o
  knowledge-db evict --transcript chat.jsonl --context-window 200000 --json

The budget is (context window - reserved output); messages are dropped, oldest
first, until they take at most --target of it. The system prompt, the last
--min-keep messages and tool call/result pairs are never split or dropped. The
evicted messages are written to the store first (ids <session>:<uuid>, findable
with `knowledge-db search`), then the kept messages are printed as JSONL (the
generic transcript format) with one note where the evicted ones were. If even the
minimum does not fit, the command fails with the numbers and writes nothing.";

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

    /// Transcript format
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,

    /// Namespace for the evicted messages
    #[arg(long, value_name = "NS", default_value = crate::record::DEFAULT_NAMESPACE)]
    namespace: String,

    /// Say what would be evicted; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print one JSON report (kept messages, evicted ids, counts) instead of JSONL
    #[arg(long)]
    json: bool,
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
fn transcript_model(t: &Transcript) -> Option<&str> {
    t.messages.iter().rev().find_map(|m| m.model.as_deref())
}

/// The prompt size the last response with usage figures reported.
fn reported_context(t: &Transcript) -> Option<u64> {
    t.messages
        .iter()
        .rev()
        .find_map(|m| m.usage.map(|u| u.context_tokens()))
}

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
    let model = transcript_model(&t).map(str::to_string);
    let reported = reported_context(&t);
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
            "reported_context_tokens": reported,
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
    if let Some(n) = reported {
        writeln!(
            out,
            "reported by the transcript's last usage figures: {n} tokens of prompt"
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub fn evict(root: &Path, args: EvictArgs) -> anyhow::Result<ExitCode> {
    let t = read_transcript(&args.transcript, args.format)?;
    let model = args
        .model
        .clone()
        .or_else(|| transcript_model(&t).map(str::to_string));
    let tokenizer = model
        .as_deref()
        .map(Tokenizer::for_model)
        .unwrap_or(Tokenizer::Estimate);
    let options = EvictOptions {
        context_window: args.context_window,
        reserved_output: args.reserved_output,
        target: args.target,
        min_keep: args.min_keep,
    };
    let started = std::time::Instant::now();
    let eviction = rolling_evict(t.messages.clone(), &options, &|m| tokenizer.message(m)).map_err(
        |e| match e {
            crate::context::evict::EvictError::Options(m) => anyhow::Error::new(Error::Usage(m)),
            other => anyhow::Error::new(other),
        },
    )?;
    let evict_seconds = started.elapsed().as_secs_f64();
    // The evicted messages go to the store (one commit) before anything is printed.
    let evicted_view = Transcript {
        messages: eviction.evicted.clone(),
        ..t.clone()
    };
    let ids: Vec<String> = eviction
        .evicted
        .iter()
        .map(|m| message_id(m.session_id.as_deref().unwrap_or(&t.session_id), m))
        .collect();
    let mut stored = None;
    if !args.dry_run && !eviction.evicted.is_empty() {
        let store = Store::open(root)?;
        let records = transcript_records(&evicted_view, &args.namespace, &crate::now_rfc3339())?;
        stored = Some(store.add(records, None, store.lock_timeout(args.lock_timeout))?);
    }
    if args.json {
        output::print_json(&json!({
            "dry_run": args.dry_run,
            "tokenizer": tokenizer.as_str(),
            "model": model,
            "messages_before": t.messages.len(),
            "kept_count": eviction.kept.len(),
            "evicted_count": eviction.evicted.len(),
            "tokens_before": eviction.tokens_before,
            "tokens_after": eviction.tokens_after,
            "tokens_evicted": eviction.tokens_evicted,
            "tokens_saved": eviction.tokens_before - eviction.tokens_after,
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
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for m in &eviction.kept {
        serde_json::to_writer(&mut out, m)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    if std::io::stderr().is_terminal() {
        eprintln!(
            "{} of {} messages evicted ({} tokens; {} -> {} of a {}-token budget){}",
            eviction.evicted.len(),
            t.messages.len(),
            eviction.tokens_evicted,
            eviction.tokens_before,
            eviction.tokens_after,
            eviction.max_input,
            if args.dry_run {
                "; nothing written (--dry-run)"
            } else {
                ""
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
