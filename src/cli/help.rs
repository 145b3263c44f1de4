//! The top-level help, grouped as git and cargo group theirs: the everyday
//! commands first, each with its line (one screen), then the advanced ones
//! by area, names only; `knowledge-db help <command>` for any of them. Also
//! `version`, shell completions and the man page, generated from the same
//! clap definition as `--help` (`clap_complete`, `clap_mangen`).

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, CommandFactory, ValueEnum};

/// The commands a user runs every day, in the order they are met, each with
/// its line in the top-level help.
pub const EVERYDAY: [(&str, &str); 10] = [
    ("init", "Create a store (a new or empty folder only)"),
    (
        "ingest",
        "Store agent transcripts: Claude Code, OpenClaw, any JSONL",
    ),
    ("search", "Find past work by words, names, files or meaning"),
    ("show", "Read a session's raw turns"),
    ("get", "Print records by id"),
    (
        "add",
        "Add records from JSON or JSONL (segments, tasks, notes)",
    ),
    (
        "forget",
        "Remove a record, a session or some words for good",
    ),
    ("ui", "Look through the store in a browser"),
    (
        "hook",
        "Claude Code: install the hooks, check them (hook doctor)",
    ),
    ("stats", "What the store holds, and its size on disk"),
];

/// The rest, by area (every command is in one group: a test checks it).
pub const ADVANCED: [(&str, &[&str]); 5] = [
    (
        "store",
        &[
            "export", "import", "delete", "scrub", "embed", "upkeep", "verify", "repair", "sync",
        ],
    ),
    ("tiers", &["archive", "prune", "maintain", "restore"]),
    ("agents", &["mcp", "evict", "pack", "qmd"]),
    ("developer", &["eval", "bench", "tokens"]),
    ("shell", &["setup", "completions", "man", "version"]),
];

pub const AFTER_HELP: &str = "\
Examples:
  knowledge-db init                             # a store in ~/.local/share/knowledge-db
  knowledge-db ingest ~/.claude/projects        # your Claude Code history
  knowledge-db search \"why did the token refresh fail\"
  knowledge-db hook install                     # store and recall every new session
  knowledge-db ui                               # look through it in a browser

The store lives in --store DIR, else $KNOWLEDGE_DB_HOME, else ~/.local/share/knowledge-db.
`knowledge-db help <command>` (or <command> --help) explains any command.";

/// The top-level help template: the everyday commands with their lines,
/// then the advanced ones by area.
pub fn template() -> String {
    let mut out =
        String::from("{about-with-newline}\n{usage-heading} {usage}\n\nEveryday commands:\n");
    for (name, line) in EVERYDAY {
        out.push_str(&format!("  {name:<9} {line}\n"));
    }
    out.push_str("\nAdvanced commands:\n");
    for (area, names) in ADVANCED {
        out.push_str(&format!(
            "  {:<10} {}\n",
            format!("{area}:"),
            names.join(", ")
        ));
    }
    out.push_str("\nOptions:\n{options}{after-help}");
    out
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    shell: Shell,
}

pub const COMPLETIONS_HELP: &str = "\
Examples:
  knowledge-db completions bash > ~/.local/share/bash-completion/completions/knowledge-db
  knowledge-db completions zsh > ~/.zfunc/_knowledge-db      # with fpath+=(~/.zfunc) in ~/.zshrc
  knowledge-db completions fish > ~/.config/fish/completions/knowledge-db.fish";

pub const MAN_HELP: &str = "\
Examples:
  knowledge-db man > ~/.local/share/man/man1/knowledge-db.1 && man knowledge-db
  knowledge-db man | man -l -";

/// `completions <shell>`: the script on stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut command = super::Cli::command();
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
        Shell::Elvish => clap_complete::Shell::Elvish,
        Shell::Powershell => clap_complete::Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut command, "knowledge-db", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A command's own page (knowledge-db-search(1)) instead of the main one
    #[arg(value_name = "COMMAND")]
    command: Option<String>,
}

/// `man [COMMAND]`: the man page (roff) on stdout, the main one (every
/// command listed) or a command's own, as git has one per command.
pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    let main = super::Cli::command();
    let page = match &args.command {
        None => main,
        Some(name) => {
            let Some(sub) = main.find_subcommand(name) else {
                return Err(knowledge_db::Error::Usage(format!(
                    "`{name}` is not a command; `knowledge-db --help` lists them"
                ))
                .into());
            };
            // The page's name (`knowledge-db-search`, as git names its
            // commands' pages); clap takes a static name, and this process
            // renders one page and exits.
            let title: &'static str = Box::leak(format!("knowledge-db-{name}").into_boxed_str());
            sub.clone()
                .name(title)
                .bin_name(format!("knowledge-db {name}"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `version`: the version, the store format it reads, and where it looks
/// for the model.
pub fn version(json: bool) -> anyhow::Result<ExitCode> {
    let model = knowledge_db::embed::ModelLocation::locate();
    if json {
        super::output::print_json(&serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "store_format": knowledge_db::store::config::FORMAT_VERSION,
            "model_dir": model.model_dir,
        }))?;
    } else {
        println!(
            "knowledge-db {} (store format {}; model from {})",
            env!("CARGO_PKG_VERSION"),
            knowledge_db::store::config::FORMAT_VERSION,
            model.model_dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_in_one_group() {
        let command = super::super::Cli::command();
        let mut grouped: Vec<&str> = EVERYDAY.iter().map(|(name, _)| *name).collect();
        for (_, names) in ADVANCED {
            grouped.extend_from_slice(names);
        }
        let mut sorted = grouped.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), grouped.len(), "a command is in two groups");
        for sub in command.get_subcommands().filter(|c| c.get_name() != "help") {
            assert!(
                grouped.contains(&sub.get_name()),
                "`{}` is in no help group",
                sub.get_name()
            );
        }
        for name in &grouped {
            assert!(
                command.find_subcommand(name).is_some(),
                "no command `{name}`"
            );
        }
    }
}
