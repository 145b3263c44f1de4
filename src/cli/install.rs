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

use knowledge_db::integrations::claude_code::{plan, Install, Scope, Targets, HOOKS};
use knowledge_db::integrations::doctor::{doctor, Outcome};
use knowledge_db::integrations::registration::Registrations;
use knowledge_db::integrations::uninstall::{self, InstallRecord};

pub(super) const INSTALL_HELP: &str = "\
Registers six hooks (SessionStart, UserPromptSubmit: recall; Stop, SessionEnd,
PostToolUse, PreCompact: capture and the compression loop), the /knowledge-db skill and
the MCP server. Every command runs this binary by its absolute path on this store
(--store, else $KNOWLEDGE_DB_HOME, else the default), so they work whatever PATH Claude
Code has; the store is created if it does not exist.

Nothing machine-specific goes into a file a team commits. --project (the default) writes
the hooks into .claude/settings.local.json (Claude Code's file for this machine's
settings of a project), the MCP server into this project's local scope of ~/.claude.json
(where `claude mcp add` puts it), the skill into .claude/skills/knowledge-db/, and, in a
git work tree, those two paths into .git/info/exclude (never committed). Hooks and an MCP
entry that an earlier release wrote into .claude/settings.json and .mcp.json are moved
out. --user writes ~/.claude/settings.json, ~/.claude/skills/knowledge-db/SKILL.md and the
mcpServers of ~/.claude.json ($CLAUDE_CONFIG_DIR moves ~/.claude). Other hooks and servers
are kept; running it twice changes nothing. It refuses when the knowledge-db plugin is
enabled (the plugin already registers all of this).

History: on a terminal it asks whether to ingest your Claude Code history; without a
terminal it ingests it only with --yes (and says so when it does not).
`hook uninstall` takes out exactly what this wrote.

Examples:
  knowledge-db hook install --dry-run
  knowledge-db --store ~/memory hook install --user
  knowledge-db hook install --binary ~/.local/bin/knowledge-db   # a copy you keep
  knowledge-db hook doctor";

pub(super) const UNINSTALL_HELP: &str = "\
Takes out exactly what `hook install` put in (same --project/--user/--dir), and only
that: the six hooks, the MCP entry, the skill, the .git/info/exclude lines. A file that
nothing else changed since the install gets its text from before the install back, byte
for byte (a file the install created is removed); a file changed since keeps every
change but ours. The store is left as it is, and its place and size are printed, unless
--purge is given. The knowledge-db plugin is Claude Code's to remove:
`claude plugin uninstall knowledge-db@knowledge-db`.

Examples:
  knowledge-db hook uninstall --dry-run
  knowledge-db hook uninstall --user
  knowledge-db hook uninstall --purge   # and delete the store";

pub(super) const DOCTOR_HELP: &str = "\
First says which registration runs the hooks: `hook install`'s, the knowledge-db
plugin's, both, or none (`nothing is installed`, exit 1). Reads what is registered
(for `hook install`: same --project/--user/--dir; for the plugin: its folder, on the
store its hooks use, $KNOWLEDGE_DB_HOME else the default) and runs it as Claude Code
would: each hook command through sh -c with a hook's JSON on stdin (a
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
                Some(dir) => Scope::project_from_env(dir)?,
                None => Scope::project_from_env(&std::env::current_dir()?)?,
            }
        };
        Ok(Targets::for_scope(&scope))
    }

    /// The project a session of this scope runs in (none for --user).
    fn project(&self) -> Option<PathBuf> {
        if self.user {
            return None;
        }
        self.dir.clone().or_else(|| std::env::current_dir().ok())
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

    /// Ingest the history without asking. Without a terminal to ask on, the
    /// history is ingested only with --yes
    #[arg(long, short = 'y')]
    yes: bool,

    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(super) struct UninstallArgs {
    #[command(flatten)]
    scope: ScopeArgs,

    /// Show the changes as a diff; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Also delete the store the hooks used (all of its memories)
    #[arg(long)]
    purge: bool,

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
    // The plugin registers the same hooks, skill and MCP server: both at once
    // would load two MCP servers and two skills.
    let registrations = Registrations::find(args.scope.project().as_deref());
    if let Some(plugin) = registrations.plugin.as_ref().filter(|p| p.active()) {
        anyhow::bail!(knowledge_db::error::Error::Usage(format!(
            "the knowledge-db plugin ({}) is enabled in {}: it already registers the hooks, the \
             skill and the MCP server, so nothing was written. Keep it, or remove it first: \
             `claude plugin uninstall {}`",
            plugin.id,
            plugin
                .enabled_in
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            plugin.id
        )));
    }
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
        // What the install creates is recorded first, so an uninstall can
        // take it all out again even after a failure half-way.
        let stop = targets
            .project
            .clone()
            .or_else(|| {
                targets
                    .settings
                    .parent()
                    .and_then(Path::parent)
                    .map(Path::to_path_buf)
            })
            .unwrap_or_default();
        let paths: Vec<&Path> = plan.changes.iter().map(|c| c.path.as_path()).collect();
        let created_dirs = uninstall::missing_dirs(&paths, &stop);
        let mut record = InstallRecord::load();
        record.note_install(
            &targets,
            &install.binary,
            &install.store,
            &plan,
            created_dirs,
        );
        record.save()?;
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
        let unchanged: Vec<_> = plan.unchanged.iter().map(|(p, _)| p).collect();
        let hooks: Vec<_> = HOOKS
            .iter()
            .map(|(event, matcher, subcommand, _)| {
                serde_json::json!({"event": event, "matcher": matcher,
                    "command": install.hook_command(subcommand), "does": hook_purpose(subcommand)})
            })
            .collect();
        super::output::print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "binary": install.binary,
            "store": install.store,
            "created_store": created_store,
            "settings": targets.settings,
            "hooks": hooks,
            "skill": targets.skill,
            "mcp": targets.mcp_place(),
            "changed": changed,
            "unchanged": unchanged,
            "notes": plan.notes,
            "diff": plan.diff(),
            "history": history.as_ref().and_then(|h| h.report.as_ref()),
            "history_skipped": history.as_ref().and_then(|h| h.skipped.as_ref()),
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        print!("{}", plan.diff());
        if plan.changes.is_empty() {
            println!("nothing to change: knowledge-db is installed");
        }
        return Ok(ExitCode::SUCCESS);
    }
    for change in &plan.changes {
        let verb = match (&change.before, &change.after) {
            (_, None) => "removed",
            (Some(_), Some(_)) => "updated",
            (None, Some(_)) => "created",
        };
        println!(
            "{verb} {}: {}",
            change.path.display(),
            change.part.describe()
        );
    }
    for (path, part) in &plan.unchanged {
        println!("unchanged {}: {}", path.display(), part.describe());
    }
    println!("the six hooks, in {}:", targets.settings.display());
    for (event, matcher, subcommand, _) in HOOKS {
        let on = matcher.map(|m| format!(" ({m})")).unwrap_or_default();
        println!(
            "  {:<62} {}",
            format!("{event}{on}"),
            hook_purpose(subcommand)
        );
    }
    println!("the MCP server `knowledge-db`, in {}", targets.mcp_place());
    println!("the skill /knowledge-db, in {}", targets.skill.display());
    if created_store {
        println!("created a store at {}", install.store.display());
    }
    if let Some(h) = &history {
        if let Some(skipped) = &h.skipped {
            println!("history: {skipped}");
        }
        if let Some(h) = &h.report {
            let before = if h.files_read_before > 0 {
                format!(
                    " ({} read by an earlier ingest: only what they gained since was read)",
                    h.files_read_before
                )
            } else {
                String::new()
            };
            println!(
                "history: {} transcripts{before}, {} messages read, {} stored ({} already there) in {:.1}s; \
                 the store holds {} messages, searchable by words now, by meaning once the background \
                 upkeep has embedded {} records",
                h.files, h.messages, h.stored, h.unchanged, h.seconds, h.messages_in_store, h.without_vector
            );
        }
    }
    println!(
        "they run {} on the store {}; `knowledge-db hook doctor` checks them, `knowledge-db hook uninstall` takes them out",
        install.binary.display(),
        install.store.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// What a hook does, in a few words.
fn hook_purpose(subcommand: &str) -> &'static str {
    match subcommand {
        "post-tool-use" => "capture; asks to compress finished work",
        "pre-compact" => "saves what must survive a compaction",
        "session-start" => "the brief; the saved block after a compaction",
        "stop" => "capture: stores each turn",
        "session-end" => "capture: stores the last messages",
        "user-prompt-submit" => "recall: memories that bear on the prompt",
        _ => "",
    }
}

pub(super) fn uninstall(root: &Path, args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let targets = args.scope.targets()?;
    let mut record = InstallRecord::load();
    let installed = record.find(&targets.settings).cloned();
    let plan = uninstall::plan(&targets, installed.as_ref())?;
    // The store the hooks used: the record's, else the one named by a
    // removed hook command, else this command's.
    let store = installed
        .as_ref()
        .map(|i| i.store.clone())
        .unwrap_or_else(|| root.to_path_buf());
    let registrations = Registrations::find(args.scope.project().as_deref());
    let others: Vec<PathBuf> = record
        .installs
        .iter()
        .filter(|i| i.settings != targets.settings && i.store == store)
        .map(|i| i.settings.clone())
        .collect();
    if !args.dry_run {
        plan.apply()?;
        record.forget(&targets.settings);
        record.save()?;
    }
    let summary = uninstall::store_summary(&store);
    let mut purged = false;
    let mut purge_refused = None;
    if args.purge && !args.dry_run {
        if !others.is_empty() {
            purge_refused = Some(format!(
                "not deleted: the hooks in {} still use it",
                others
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        } else if summary.is_none() {
            purge_refused = Some("not deleted: it is not a knowledge-db store".to_string());
        } else {
            std::fs::remove_dir_all(&store)
                .map_err(|e| knowledge_db::error::Error::io(&store, e))?;
            purged = true;
        }
    }
    if args.json {
        super::output::print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "changed": plan.plan.changes.iter().map(|c| serde_json::json!({
                "path": c.path, "part": c.part, "removed": c.after.is_none()})).collect::<Vec<_>>(),
            "hooks_removed": plan.hooks_removed.iter().map(|(p, h)| serde_json::json!({"settings": p, "hooks": h})).collect::<Vec<_>>(),
            "notes": plan.plan.notes,
            "diff": plan.plan.diff(),
            "store": store,
            "store_bytes": summary.map(|s| s.0),
            "store_records": summary.map(|s| s.1),
            "purged": purged,
            "purge_refused": purge_refused,
            "plugin": registrations.plugin,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        print!("{}", plan.plan.diff());
    }
    if plan.plan.changes.is_empty() {
        println!(
            "nothing to take out: no knowledge-db hook, MCP entry or skill in {}, {}, {}",
            targets.settings.display(),
            targets.mcp_place(),
            targets.skill.display()
        );
    }
    let removed = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    for (path, hooks) in &plan.hooks_removed {
        println!(
            "{removed} {} hooks from {}: {}",
            hooks.len(),
            path.display(),
            hooks.join(", ")
        );
    }
    if args.dry_run && !plan.plan.changes.is_empty() {
        println!("--dry-run: nothing was written; the uninstall would change:");
    }
    for change in &plan.plan.changes {
        let recorded = installed
            .as_ref()
            .and_then(|i| i.files.iter().find(|f| f.path == change.path))
            .filter(|f| f.exact && change.after == f.before);
        let what = match (change.part, &change.after, recorded) {
            (knowledge_db::integrations::claude_code::Part::Skill, ..) => {
                "removed the skill".to_string()
            }
            (_, None, Some(_)) => "removed (the install created it)".to_string(),
            (_, Some(_), Some(_)) => "restored as it was before the install".to_string(),
            (_, None, None) => "removed (nothing else was left in it)".to_string(),
            (_, Some(_), None) => format!("took out {}", change.part.describe()),
        };
        println!("  {}: {what}", change.path.display());
    }
    for note in &plan.plan.notes {
        println!("note: {note}");
    }
    match (summary, purged) {
        (_, true) => println!("deleted the store {}", store.display()),
        (Some((bytes, records)), false) => {
            println!(
                "the store {} is kept: {} records, {} on disk{}",
                store.display(),
                records,
                knowledge_db::record::input::human_bytes(bytes),
                match &purge_refused {
                    Some(why) => format!(" ({why})"),
                    None =>
                        "; `knowledge-db hook uninstall --purge` (or rm -r) deletes it".to_string(),
                }
            );
        }
        (None, false) => println!("no store at {}", store.display()),
    }
    if let Some(plugin) = registrations.plugin.as_ref().filter(|p| p.active()) {
        println!(
            "the knowledge-db plugin ({}) is still enabled: `claude plugin uninstall {}` removes it",
            plugin.id, plugin.id
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
/// The history's part of an install: ingested, or skipped and why.
struct History {
    report: Option<knowledge_db::flows::capture::BackfillReport>,
    skipped: Option<String>,
}

fn ingest_history(store_root: &Path, args: &InstallArgs) -> anyhow::Result<Option<History>> {
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
    let what = format!(
        "{} transcripts, {}, in {}",
        files.len(),
        knowledge_db::record::input::human_bytes(bytes),
        dir.display()
    );
    if !interactive && !args.yes {
        // Nobody to ask: importing someone's whole history is not done
        // silently.
        return Ok(Some(History {
            report: None,
            skipped: Some(format!(
                "not ingested ({what}): no terminal to ask on; pass --yes to ingest it, \
                 or run `knowledge-db ingest {}` later",
                dir.display()
            )),
        }));
    }
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
            return Ok(Some(History {
                report: None,
                skipped: Some(format!(
                    "skipped ({what}); `knowledge-db ingest {}` adds it later",
                    dir.display()
                )),
            }));
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
    Ok(Some(History {
        report: Some(report),
        skipped: None,
    }))
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
