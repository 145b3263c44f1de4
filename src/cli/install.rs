//! `knowledge-db hook install` and `knowledge-db hook doctor`: setting up Claude
//! Code and checking the setup. `install` writes the hook entries, the
//! /knowledge-db skill and the MCP server registration into a project's or the
//! user's configuration, each running this binary on this store (see
//! `integrations::claude_code`); `doctor` reads what was written and runs it the
//! way Claude Code would, then checks the store, the model, the upkeep and
//! hooks.log (see `integrations::doctor`). The hooks themselves are in `hook.rs`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use knowledge_db::integrations::claude_code::{plan, Install, Scope, Targets};
use knowledge_db::integrations::doctor::{doctor, Outcome};

pub(super) const INSTALL_HELP: &str = "\
Every command written runs this binary by its absolute path on this store
(--store, else $KNOWLEDGE_DB_HOME, else the default), so the hooks, the skill and
the MCP server work whatever PATH Claude Code has; the store is created if it does
not exist. --project (the default) writes .claude/settings.json,
.claude/skills/knowledge-db/SKILL.md and .mcp.json in the project folder; --user
writes ~/.claude/settings.json, ~/.claude/skills/knowledge-db/SKILL.md and the
mcpServers of ~/.claude.json ($CLAUDE_CONFIG_DIR moves ~/.claude). Other hooks and
servers are kept; entries an earlier install wrote are brought up to date; running
it twice changes nothing.

Examples:
  knowledge-db hook install --dry-run
  knowledge-db --store ~/memory hook install --user
  knowledge-db hook install --binary ~/.local/bin/knowledge-db   # a copy you keep
  knowledge-db hook doctor";

pub(super) const DOCTOR_HELP: &str = "\
Reads what `hook install` wrote (same --project/--user/--dir) and runs it as Claude
Code would: each hook command through sh -c with a hook's JSON on stdin (a
throw-away session, removed after), the skill's search, and the MCP server
(initialize, tools/list). Then it verifies the store the commands use, loads the
model, and shows the background upkeep's state and the last errors in hooks.log.
Exit 1 if any check fails (warnings do not).

Examples:
  knowledge-db hook doctor
  knowledge-db hook doctor --user --json";

/// Which configuration: a project's (default) or the user's.
#[derive(Debug, Args)]
struct ScopeArgs {
    /// The project folder's configuration (default)
    #[arg(long, conflicts_with = "user")]
    project: bool,

    /// The user's configuration (all projects)
    #[arg(long)]
    user: bool,

    /// Project folder [default: the current folder]
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    dir: Option<PathBuf>,
}

impl ScopeArgs {
    fn targets(&self) -> anyhow::Result<Targets> {
        let scope = if self.user {
            Scope::user_from_env()?
        } else {
            match &self.dir {
                Some(dir) => Scope::Project(dir.clone()),
                None => Scope::Project(std::env::current_dir()?),
            }
        };
        Ok(Targets::for_scope(&scope))
    }
}

#[derive(Debug, Args)]
pub(super) struct InstallArgs {
    #[command(flatten)]
    scope: ScopeArgs,

    /// The knowledge-db binary the commands run [default: this one]
    #[arg(long, value_name = "PATH")]
    binary: Option<PathBuf>,

    /// Show the changes as a diff; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Ingest the Claude Code history in this folder
    /// [default: $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects]
    #[arg(long, value_name = "DIR", conflicts_with = "no_history")]
    history: Option<PathBuf>,

    /// Do not ingest the existing history
    #[arg(long)]
    no_history: bool,

    /// Ingest the history without asking (asked only on a terminal)
    #[arg(long, short = 'y')]
    yes: bool,

    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(super) struct DoctorArgs {
    #[command(flatten)]
    scope: ScopeArgs,

    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn install(root: &Path, args: InstallArgs) -> anyhow::Result<ExitCode> {
    let targets = args.scope.targets()?;
    let install = Install::new(args.binary.clone(), root)?;
    // The binary must run: a command that cannot start fails every hook.
    let version = std::process::Command::new(&install.binary)
        .arg("--version")
        .output();
    if !version.is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"knowledge-db")) {
        anyhow::bail!(knowledge_db::error::Error::Usage(format!(
            "{} does not run as knowledge-db (`--version` failed); pass --binary PATH to a working one",
            install.binary.display()
        )));
    }
    let plan = plan(&targets, &install)?;
    let mut created_store = false;
    if !args.dry_run {
        if !install.store.join("config.toml").exists() {
            knowledge_db::store::Store::init(&install.store)?;
            created_store = true;
        }
        plan.apply()?;
    }
    for note in &plan.notes {
        eprintln!("note: {note}");
    }
    let history = if args.dry_run || args.no_history {
        None
    } else {
        ingest_history(&install.store, &args)?
    };
    if args.json {
        let changed: Vec<_> = plan.changes.iter().map(|c| &c.path).collect();
        super::output::print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "binary": install.binary,
            "store": install.store,
            "created_store": created_store,
            "changed": changed,
            "unchanged": plan.unchanged,
            "notes": plan.notes,
            "diff": plan.diff(),
            "history": history,
        }))?;
    } else if args.dry_run {
        print!("{}", plan.diff());
        if plan.changes.is_empty() {
            println!("nothing to change: knowledge-db is installed");
        }
    } else {
        for change in &plan.changes {
            let verb = if change.before.is_some() {
                "updated"
            } else {
                "created"
            };
            println!("{verb} {}", change.path.display());
        }
        for path in &plan.unchanged {
            println!("unchanged {}", path.display());
        }
        if created_store {
            println!("created a store at {}", install.store.display());
        }
        if let Some(h) = &history {
            println!(
                "history: {} transcripts, {} messages read, {} stored ({} already there) in {:.1}s; \
                 searchable by words now, by meaning once the background upkeep has embedded {} records",
                h.files, h.messages, h.stored, h.unchanged, h.seconds, h.without_vector
            );
        }
        println!(
            "the hooks, the skill and the MCP server run {} on the store {}; `knowledge-db hook doctor` checks them",
            install.binary.display(),
            install.store.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The Claude Code history folder `hook install` offers to ingest.
fn history_dir(args: &InstallArgs) -> Option<PathBuf> {
    if let Some(dir) = &args.history {
        return Some(dir.clone());
    }
    let config = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => dirs::home_dir()?.join(".claude"),
    };
    Some(config.join("projects"))
}

/// Ingests the user's existing Claude Code history into the store, after
/// asking on a terminal; `None` when there is none or the user declined.
fn ingest_history(
    store_root: &Path,
    args: &InstallArgs,
) -> anyhow::Result<Option<knowledge_db::flows::capture::BackfillReport>> {
    let Some(dir) = history_dir(args) else {
        return Ok(None);
    };
    if !dir.is_dir() {
        if args.history.is_some() {
            anyhow::bail!(knowledge_db::error::Error::Usage(format!(
                "--history {}: no such folder",
                dir.display()
            )));
        }
        return Ok(None);
    }
    let files = knowledge_db::transcript::find_files(std::slice::from_ref(&dir))?;
    if files.is_empty() {
        return Ok(None);
    }
    let bytes: u64 = files
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
    if interactive && !args.yes {
        eprint!(
            "Ingest your Claude Code history ({} transcripts, {}, in {}) into the store, so recall \
             knows your past sessions? [Y/n] ",
            files.len(),
            knowledge_db::record::input::human_bytes(bytes),
            dir.display()
        );
        let mut answer = String::new();
        std::io::stdin().read_line(&mut answer)?;
        if matches!(answer.trim().to_ascii_lowercase().as_str(), "n" | "no") {
            eprintln!(
                "history skipped; `knowledge-db ingest {}` adds it later",
                dir.display()
            );
            return Ok(None);
        }
    }
    let store = knowledge_db::store::Store::open(store_root)?;
    let settings = knowledge_db::integrations::hooks::HookSettings::from_store(store_root)?;
    let bar = super::output::progress_bar();
    bar.set_message("ingesting history");
    let report = knowledge_db::flows::capture::backfill(
        &store,
        &[dir],
        &settings.namespace,
        store.lock_timeout(None),
        &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        },
    )?;
    bar.finish_and_clear();
    Ok(Some(report))
}

pub(super) fn run_doctor(root: &Path, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let targets = args.scope.targets()?;
    // The checks write hook input and MCP requests to child processes.
    let report = super::with_child_pipes(|| doctor(&targets, root));
    if args.json {
        super::output::print_json(&report)?;
    } else {
        for check in &report.checks {
            let mark = match check.outcome {
                Outcome::Ok => "ok  ",
                Outcome::Warn => "warn",
                Outcome::Fail => "FAIL",
            };
            let detail = check.detail.replace('\n', "\n        ");
            println!("{mark}  {:<24} {detail}", check.name);
            if let Some(fix) = &check.fix {
                println!("      {:<24} fix: {fix}", "");
            }
        }
        if let Some(store) = &report.store {
            println!(
                "{}: store {}",
                if report.ok {
                    "healthy"
                } else {
                    "problems found"
                },
                store.display()
            );
        }
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
