//! `knowledge-db tokens`, and the flags of `evict` and `pack` (their handlers
//! are in `roll.rs`): token counts and rolling eviction.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use serde_json::json;

use super::ingest::{FormatArg, TranscriptStoreArgs};
use super::output;
use knowledge_db::context::budget::reported_prompt;
use knowledge_db::context::tokens::Tokenizer;
use knowledge_db::context::truncate::TruncateOptions;
use knowledge_db::flows::evict::tokenizer_for;
use knowledge_db::transcript::{read_file, read_slice, ReadFrom, Transcript};

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
    pub(super) file: PathBuf,

    /// Transcript format
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub(super) format: FormatArg,

    /// Print JSON instead of text
    #[arg(long)]
    pub(super) json: bool,
}

/// When tool outputs become placeholders (shared by `evict` and `pack`).
#[derive(Debug, Args)]
pub struct TruncateArgs {
    /// Replace old or long tool outputs by placeholders first (full outputs go to the store)
    #[arg(long)]
    pub(super) truncate_tools: bool,

    /// With --truncate-tools: outputs older than this many tool-calling steps are replaced
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        requires = "truncate_tools"
    )]
    pub(super) tool_steps: usize,

    /// With --truncate-tools: outputs longer than this many tokens are replaced
    #[arg(
        long,
        value_name = "M",
        default_value_t = 2000,
        requires = "truncate_tools"
    )]
    pub(super) tool_max_tokens: usize,
}

impl TruncateArgs {
    pub(super) fn options(&self) -> Option<TruncateOptions> {
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
    pub(super) transcript: PathBuf,

    /// Context window of the model, in tokens
    #[arg(long, value_name = "N")]
    pub(super) context_window: usize,

    /// Tokens kept free for the model's answer
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(super) reserved_output: usize,

    /// Fraction of (window - reserved output) to get down to
    #[arg(long, default_value_t = 0.8)]
    pub(super) target: f64,

    /// Recent messages always kept
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub(super) min_keep: usize,

    /// Model whose tokenizer counts [default: the transcript's own model]
    #[arg(long, value_name = "M")]
    pub(super) model: Option<String>,

    /// Tokens the prompt takes besides the messages (system prompt, tool
    /// definitions) [default: measured from the transcript's usage figures, else 0]
    #[arg(long, value_name = "N")]
    pub(super) overhead: Option<usize>,

    #[command(flatten)]
    pub(super) truncate: TruncateArgs,

    #[command(flatten)]
    pub(super) common: TranscriptStoreArgs,
}

#[derive(Debug, Args)]
pub struct PackArgs {
    /// Transcript whose live context is packed (Claude Code, OpenClaw or generic JSONL; - for stdin)
    #[arg(long, value_name = "FILE")]
    pub(super) transcript: PathBuf,

    /// Tokens the whole prompt may take
    #[arg(long, value_name = "N")]
    pub(super) budget: usize,

    /// A system prompt to put first (never dropped)
    #[arg(long, value_name = "FILE")]
    pub(super) system: Option<PathBuf>,

    /// Agent instructions to put after the system prompt (CLAUDE.md, AGENTS.md, a skill); repeatable
    #[arg(long, value_name = "FILE")]
    pub(super) instructions: Vec<PathBuf>,

    /// User prompts (turns) that count as recent
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub(super) recent_turns: u64,

    /// Tool-calling steps whose calls and results count as recent (older ones are stale)
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(super) recent_tool_steps: usize,

    /// Model whose tokenizer counts [default: the transcript's own model]
    #[arg(long, value_name = "M")]
    pub(super) model: Option<String>,

    #[command(flatten)]
    pub(super) truncate: TruncateArgs,

    #[command(flatten)]
    pub(super) common: TranscriptStoreArgs,
}

pub(super) fn read_transcript(path: &Path, format: FormatArg) -> anyhow::Result<Transcript> {
    if path.as_os_str() == "-" {
        let bytes = knowledge_db::bounded::read_to_limit(
            std::io::stdin().lock(),
            Path::new("stdin"),
            knowledge_db::transcript::DEFAULT_LIMIT,
            "it holds",
        )?;
        return Ok(read_slice(
            Path::new("stdin.jsonl"),
            &bytes,
            format.format(),
            ReadFrom::default(),
        )?);
    }
    Ok(read_file(path, format.format(), ReadFrom::default())?)
}

/// `knowledge-db tokens`: what each message costs under each tokenizer family.
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
