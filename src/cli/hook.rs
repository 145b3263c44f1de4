//! `knowledge-db hook ...`: Claude Code integration. `install` writes the hook
//! entries, the skill and the MCP registration (see `integrations::claude_code`;
//! its handler and `doctor`'s are in `install.rs`);
//! `post-tool-use`, `pre-compact` and `session-start` are the hooks themselves
//! (see `integrations::hooks`). A hook never fails the agent: any error is
//! logged to `<store>/hooks/hooks.log` and the hook exits 0.
//! `DISABLE_AUTO_CONTEXT_MANAGER=1` makes every hook a silent no-op;
//! `FORCE_COMPRESSION_CHECK=1` makes `post-tool-use` skip its every-N-turns gate.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::install::{self, DOCTOR_HELP, INSTALL_HELP, UNINSTALL_HELP};
use knowledge_db::integrations::hooks::{self, Gates, HookFiles, HookInput, HookSettings};
use knowledge_db::integrations::registration;

/// Set to `1` (or `true`, `yes`), every hook does nothing and prints nothing.
pub const DISABLE_ENV: &str = "DISABLE_AUTO_CONTEXT_MANAGER";
/// Set to `1`, `post-tool-use` checks for cold items whatever the turn count.
pub const FORCE_CHECK_ENV: &str = "FORCE_COMPRESSION_CHECK";

/// Whether an environment switch is on.
fn switch_on(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Install the hooks, the /knowledge-db skill and the MCP server into Claude
    /// Code's configuration, merging with what is there.
    #[command(after_help = INSTALL_HELP)]
    Install(install::InstallArgs),

    /// Take out exactly what `hook install` put in (hooks, MCP entry, skill);
    /// the store stays unless --purge.
    #[command(after_help = UNINSTALL_HELP)]
    Uninstall(install::UninstallArgs),

    /// Check an installed setup end to end: settings parse, each hook command
    /// runs, the skill's search and the MCP server answer, the store opens and
    /// verifies, the model loads, the upkeep and hooks.log show no errors.
    #[command(after_help = DOCTOR_HELP)]
    Doctor(install::DoctorArgs),

    /// The PostToolUse hook: summarize cold tasks and topics, queue them, and ask
    /// the agent to compress them.
    #[command(after_help = POST_TOOL_USE_HELP)]
    PostToolUse(PostToolUseArgs),

    /// The PreCompact hook: save what must survive the compaction.
    #[command(after_help = PRE_COMPACT_HELP)]
    PreCompact(PreCompactArgs),

    /// The SessionStart hook: after a compaction, give the saved block back;
    /// at startup and resume, a brief of the project's recent work.
    #[command(after_help = SESSION_START_HELP)]
    SessionStart(SessionStartArgs),

    /// The Stop hook (end of every turn): store the transcript's new messages.
    #[command(after_help = STOP_HELP)]
    Stop(CaptureArgs),

    /// The SessionEnd hook: store the session's last messages.
    #[command(after_help = SESSION_END_HELP)]
    SessionEnd(CaptureArgs),

    /// The UserPromptSubmit hook: recall the few memories confident enough to
    /// bear on the prompt.
    #[command(after_help = USER_PROMPT_SUBMIT_HELP)]
    UserPromptSubmit(UserPromptSubmitArgs),
}

const STOP_HELP: &str = "\
Reads Claude Code's Stop JSON on stdin (session_id, transcript_path, cwd, ...) and stores
what the transcript (and its subagents' transcripts, <session>/subagents/*.jsonl) gained
since the last look, as `knowledge-db ingest` would: only the new bytes are read, the
messages are stored without vectors (the background upkeep embeds them) and the store's
writer lock is waited for at most [hooks] capture_lock_wait_secs (2 s); a busy store defers
the capture to the next hook call. Prints nothing. [hooks] capture = false turns it off.

Example:
  knowledge-db hook stop < hook-input.json
  knowledge-db hook stop --json < hook-input.json   # a report of what it stored";

const SESSION_END_HELP: &str = "\
Reads Claude Code's SessionEnd JSON on stdin and stores the session's last messages, as
`hook stop` does, waiting at most 0.5 s for the store (Claude Code gives SessionEnd hooks
1.5 s in all). Prints nothing.

Example:
  knowledge-db hook session-end < hook-input.json";

const USER_PROMPT_SUBMIT_HELP: &str = "\
Reads Claude Code's UserPromptSubmit JSON on stdin (session_id, cwd, prompt, ...) and
searches the store with the prompt: in the session's project (its git root, else its cwd;
records of no project too), leaving out the session's turns since its last compaction (still
in the model's context) and what it recalled earlier in the session. Only memories whose
calibrated score reaches [recall] min_score (0.5) are kept, at most [recall] max_memories
(3); they are printed as additionalContext, each with its kind, session, turns, date, id and
the command that reads it whole. When nothing is confident it prints nothing.

Config: [recall] prompt = false (or KNOWLEDGE_DB_RECALL=no-prompt; =off turns off the
session-start brief too), min_score, max_memories, memory_chars, max_chars, all_projects.

Examples:
  echo '{\"session_id\":\"s1\",\"cwd\":\"'$PWD'\",\"prompt\":\"why did the login test fail\"}' \\
    | knowledge-db hook user-prompt-submit
  knowledge-db hook user-prompt-submit --json < hook-input.json   # with the scores and why not";

const POST_TOOL_USE_HELP: &str = "\
Reads Claude Code's PostToolUse JSON on stdin (session_id, transcript_path, cwd, ...).
Each call reads only the transcript's new bytes. Every --check-every assistant turns,
when the context is at least --usage-threshold full (the transcript's usage figures,
else an estimate against --context-window), it stores a rule-based summary of each
cold task (completed more than --cold-after turns ago, not mentioned in the last
--recent-turns turns) or, in sessions without task tools, each cold topic segment,
queues it in {session_id}_pending.json ([hooks] queue_dir, default
<store>/hooks/context_queue/) and asks the agent, in a hookSpecificOutput JSON, to
read each queued turn range (`knowledge-db show`), compress it and save its own
segment under the queued id (`knowledge-db add -`). A batch still pending is announced
again after [hooks] remind_after_turns turns. Otherwise it prints nothing. Errors go
to <store>/hooks/hooks.log; the exit code is 0. Defaults come from [hooks] in the
store's config.toml.

Environment: DISABLE_AUTO_CONTEXT_MANAGER=1 makes every hook a silent no-op;
FORCE_COMPRESSION_CHECK=1 skips the every-N-turns gate (not the usage threshold).

Examples:
  knowledge-db hook post-tool-use < hook-input.json
  knowledge-db hook post-tool-use --force --json < hook-input.json   # check now, print a report";

const PRE_COMPACT_HELP: &str = "\
Reads Claude Code's PreCompact JSON on stdin, summarizes and queues what is cold (no
gates), and saves the preservation block (active tasks, modified files, test commands,
decisions, recent errors, git diff --stat, stored summaries) to
<store>/hooks/<session>.preserve.json. Queued items stay pending: only the agent's own
segment, saved with `knowledge-db add -` or MCP memory_add, moves them to compressed.
Prints nothing (PreCompact hooks cannot add context; `hook session-start` does).

Example:
  knowledge-db hook pre-compact < hook-input.json";

const SESSION_START_HELP: &str = "\
Reads Claude Code's SessionStart JSON on stdin. When `source` is `compact` and
`hook pre-compact` saved a block for the session, prints it once as
{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":...}}.

Example:
  knowledge-db hook session-start < hook-input.json";

/// Thresholds shared by the hooks; each overrides `[hooks]` of config.toml.
#[derive(Debug, Args)]
pub struct Thresholds {
    /// Check for cold items every N assistant turns [config: check_every_turns, 10]
    #[arg(long, value_name = "N")]
    check_every: Option<u64>,

    /// Check only when the context is at least this full, 0..1 [config: usage_threshold, 0.7]
    #[arg(long, value_name = "F")]
    usage_threshold: Option<f64>,

    /// Context window in tokens [config: context_window, 200000]
    #[arg(long, value_name = "TOKENS")]
    context_window: Option<u64>,

    /// Turns after completion before a task or topic can be cold [config: cold_after_turns, 20]
    #[arg(long, value_name = "N")]
    cold_after: Option<u64>,

    /// Recent turns that must not mention it [config: recent_turns, 20]
    #[arg(long, value_name = "N")]
    recent_turns: Option<usize>,

    /// Messages a topic segment needs [config: min_segment_messages, 5]
    #[arg(long, value_name = "N")]
    min_segment_messages: Option<u64>,

    /// Namespace of the stored summaries [config: namespace, default]
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
}

impl Thresholds {
    fn settings(&self, root: &Path) -> knowledge_db::Result<HookSettings> {
        let mut s = HookSettings::from_store(root)?;
        if let Some(v) = self.check_every {
            s.check_every_turns = v;
        }
        if let Some(v) = self.usage_threshold {
            s.usage_threshold = v;
        }
        if let Some(v) = self.context_window {
            s.context_window = v;
        }
        if let Some(v) = self.cold_after {
            s.cold_after_turns = v;
        }
        if let Some(v) = self.recent_turns {
            s.recent_turns = v;
        }
        if let Some(v) = self.min_segment_messages {
            s.min_segment_messages = v;
        }
        if let Some(v) = &self.namespace {
            s.namespace.clone_from(v);
        }
        Ok(s)
    }
}

#[derive(Debug, Args)]
pub struct PostToolUseArgs {
    #[command(flatten)]
    thresholds: Thresholds,

    /// Check now, whatever the turn count and the context usage
    #[arg(long)]
    force: bool,

    /// Print a JSON report of what the hook did instead of the hook output
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct PreCompactArgs {
    #[command(flatten)]
    thresholds: Thresholds,

    /// Print a JSON report of what the hook did
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct SessionStartArgs {}

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Print a JSON report of what the hook stored
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct UserPromptSubmitArgs {
    /// Print a JSON report (memories, scores, why nothing) instead of the hook output
    #[arg(long)]
    json: bool,
}

/// SessionEnd's share of Claude Code's 1.5 s budget for waiting on the store.
const SESSION_END_LOCK_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

pub fn run(root: &Path, command: HookCommand) -> anyhow::Result<ExitCode> {
    match command {
        HookCommand::Install(args) => install::install(root, args),
        HookCommand::Uninstall(args) => install::uninstall(root, args),
        HookCommand::Doctor(args) => install::run_doctor(root, args),
        HookCommand::PostToolUse(args) => Ok(as_hook(root, "post-tool-use", |input| {
            let settings = args.thresholds.settings(root)?;
            let gates = Gates {
                force: args.force,
                ignore_turns: switch_on(FORCE_CHECK_ENV),
            };
            let report = hooks::post_tool_use(root, input, &settings, gates)?;
            Ok(if args.json {
                Some(serde_json::to_value(&report).map_err(std::io::Error::other)?)
            } else {
                report
                    .message
                    .map(|text| hooks::additional_context("PostToolUse", &text))
            })
        })),
        HookCommand::PreCompact(args) => Ok(as_hook(root, "pre-compact", |input| {
            let settings = args.thresholds.settings(root)?;
            let report = hooks::pre_compact(root, input, &settings)?;
            Ok(if args.json {
                Some(serde_json::to_value(&report).map_err(std::io::Error::other)?)
            } else {
                None
            })
        })),
        HookCommand::Stop(args) => Ok(as_hook(root, "stop", |input| {
            let settings = HookSettings::from_store(root)?;
            let report = hooks::capture::stop(root, input, &settings, settings.lock_wait())?;
            json_report(args.json, &report)
        })),
        HookCommand::SessionEnd(args) => Ok(as_hook(root, "session-end", |input| {
            let settings = HookSettings::from_store(root)?;
            let wait = settings.lock_wait().min(SESSION_END_LOCK_WAIT);
            let report = hooks::capture::stop(root, input, &settings, wait)?;
            json_report(args.json, &report)
        })),
        HookCommand::UserPromptSubmit(args) => Ok(as_hook(root, "user-prompt-submit", |input| {
            let report = hooks::recall::user_prompt_submit(root, input)?;
            if args.json {
                return json_report(true, &report);
            }
            Ok(report
                .answer
                .filter(|a| !a.text.is_empty())
                .map(|a| hooks::additional_context("UserPromptSubmit", &a.text)))
        })),
        HookCommand::SessionStart(SessionStartArgs {}) => {
            Ok(as_hook(root, "session-start", |input| {
                Ok(hooks::session_start(root, input)?
                    .map(|block| hooks::additional_context("SessionStart", &block)))
            }))
        }
    }
}

/// Most bytes of hook input read from stdin: Claude Code's event JSON (a
/// PostToolUse event carries the tool's input and output, rarely over a few MB).
const MAX_HOOK_INPUT: u64 = 64 * 1024 * 1024;

/// The report as the hook's output when `--json` asked for it, else nothing.
fn json_report(
    json: bool,
    report: &impl serde::Serialize,
) -> anyhow::Result<Option<serde_json::Value>> {
    Ok(if json {
        Some(serde_json::to_value(report).map_err(std::io::Error::other)?)
    } else {
        None
    })
}

/// Runs a hook the way Claude Code needs it: reads the input JSON from stdin,
/// prints the JSON `body` returns (if any), and on any error logs it to
/// `<store>/hooks/hooks.log`, says so on stderr, and still exits 0. With
/// `DISABLE_AUTO_CONTEXT_MANAGER=1` it reads its input and does nothing else.
fn as_hook(
    root: &Path,
    name: &str,
    body: impl FnOnce(&HookInput) -> anyhow::Result<Option<serde_json::Value>>,
) -> ExitCode {
    let mut raw = Vec::new();
    let mut stdin = std::io::stdin().lock().take(MAX_HOOK_INPUT + 1);
    if switch_on(DISABLE_ENV) {
        // Read what Claude Code writes, so it never meets a closed pipe.
        let _ = std::io::copy(&mut stdin, &mut std::io::sink());
        return ExitCode::SUCCESS;
    }
    let files = HookFiles::new(root);
    let result = stdin
        .read_to_end(&mut raw)
        .map_err(anyhow::Error::from)
        .and_then(|read| {
            if read as u64 > MAX_HOOK_INPUT {
                anyhow::bail!(
                    "hook input on stdin: more than {} (the event JSON of Claude Code is far smaller); not read further",
                    knowledge_db::bounded::human_bytes(MAX_HOOK_INPUT)
                );
            }
            Ok(HookInput::parse(&raw)?)
        })
        .and_then(|input| {
            // Run by the plugin while `hook install` registered the same
            // hook for this project: that one runs it, this one steps aside.
            if registration::plugin_defers(input.cwd.as_deref(), name).is_some() {
                return Ok((input, None));
            }
            // A forgotten session's transcript is never read again (forget
            // is a tombstone for the hooks too).
            if hooks::skip_forgotten(root, &input)? {
                return Ok((input, None));
            }
            // Even a bug must not fail the agent's tool call: a panic is
            // logged too, as the damaged file it met (or as a bug when the
            // store's files are sound).
            knowledge_db::index::damage::catch(root, || body(&input))
                .map_err(anyhow::Error::from)
                .and_then(|out| out)
                .map_err(|error| super::explain_index_error(root, error))
                .map(|out| (input, out))
        });
    if let Some(report) = knowledge_db::index::damage::take_background_panic() {
        let session = serde_json::from_slice::<serde_json::Value>(&raw)
            .ok()
            .and_then(|v| v.get("session_id")?.as_str().map(str::to_string));
        let text = knowledge_db::index::damage::background_failure(root, &report);
        files.log_line(name, session.as_deref(), &format!("warning: {text}"));
    }
    match result {
        Ok((_, Some(output))) => println!("{output}"),
        Ok((_, None)) => {}
        Err(mut e) => {
            // A refusal that came without a path names the store's folder.
            if let Some(error) = e.downcast_mut::<knowledge_db::error::Error>() {
                error.name_denied_path(root);
            }
            let session = serde_json::from_slice::<serde_json::Value>(&raw)
                .ok()
                .and_then(|v| v.get("session_id")?.as_str().map(str::to_string));
            // Each cause once: an io error's text is already in its path error's.
            let text = super::output::error_chain(&e);
            // Says where the line really went (a read-only store's log
            // cannot be written: the user's state folder takes it).
            let logged =
                match files.log_line_checked(name, session.as_deref(), &format!("error: {text}")) {
                    Ok(logged) => logged.to_string(),
                    Err(why) => why,
                };
            eprintln!("knowledge-db hook {name}: {text} ({logged})");
        }
    }
    ExitCode::SUCCESS
}
