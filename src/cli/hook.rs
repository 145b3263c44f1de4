//! `knowledge-db hook ...`: Claude Code integration. `install` writes the hook
//! entries, the skill and the MCP registration (see `integrations::claude_code`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::integrations::claude_code::{plan, Scope, Targets};

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Install the hooks, the /knowledge-db skill and the MCP server into Claude
    /// Code's configuration, merging with what is there.
    #[command(after_help = INSTALL_HELP)]
    Install(InstallArgs),
}

const INSTALL_HELP: &str = "\
--project (the default) writes .claude/settings.json, .claude/skills/knowledge-db/SKILL.md
and .mcp.json in the project folder; --user writes ~/.claude/settings.json,
~/.claude/skills/knowledge-db/SKILL.md and the mcpServers of ~/.claude.json
($CLAUDE_CONFIG_DIR moves ~/.claude). Other hooks and servers are kept; running it
twice changes nothing.

Examples:
  knowledge-db hook install --dry-run
  knowledge-db hook install --user";

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Install into the project folder (default)
    #[arg(long, conflicts_with = "user")]
    project: bool,

    /// Install into the user's configuration (all projects)
    #[arg(long)]
    user: bool,

    /// Project folder [default: the current folder]
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    dir: Option<PathBuf>,

    /// Show the changes as a diff; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Print JSON
    #[arg(long)]
    json: bool,
}

pub fn run(command: HookCommand) -> anyhow::Result<ExitCode> {
    match command {
        HookCommand::Install(args) => install(args),
    }
}

fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let scope = if args.user {
        Scope::user_from_env()?
    } else {
        match args.dir {
            Some(dir) => Scope::Project(dir),
            None => Scope::Project(std::env::current_dir()?),
        }
    };
    let targets = Targets::for_scope(&scope);
    let plan = plan(&targets)?;
    if !args.dry_run {
        plan.apply()?;
    }
    if args.json {
        let changed: Vec<_> = plan.changes.iter().map(|c| &c.path).collect();
        super::output::print_json(&serde_json::json!({
            "dry_run": args.dry_run,
            "changed": changed,
            "unchanged": plan.unchanged,
            "diff": plan.diff(),
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
    }
    Ok(ExitCode::SUCCESS)
}
