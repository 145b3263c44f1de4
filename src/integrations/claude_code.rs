//! Installing knowledge-db into Claude Code's configuration.
//!
//! Three things go in, each into the file Claude Code reads it from
//! (`interop.md`, section 2):
//! - the hooks into a settings file: capture (`Stop`, `SessionEnd`, and the
//!   compression loop's `PostToolUse` and `PreCompact`), recall
//!   (`UserPromptSubmit`, `SessionStart` at startup and resume) and the
//!   preservation block (`SessionStart` after a compaction);
//! - the skill, `skills/knowledge-db/SKILL.md`;
//! - the MCP server registration, `mcpServers.knowledge-db`, into
//!   `~/.claude.json` (a project's local scope, or the user's).
//!
//! Every command names this binary and this store by absolute path, which
//! are this machine's: so a project's hooks go into `.claude/settings.local.json`
//! and its MCP entry into the project's local scope of `~/.claude.json`, never
//! into `.claude/settings.json` or `.mcp.json`, which teams commit (entries an
//! earlier release wrote there are moved out), and in a git work tree
//! `.git/info/exclude` keeps the settings file and the skill out of git.
//!
//! Installing merges: an existing file is parsed, our entries are added where
//! they are missing, and everything else (other hooks, other servers, unknown
//! keys, key order) is kept. An entry already present is left alone, so running
//! the install twice changes nothing. A file that is not valid JSON is an error
//! naming it, and nothing is written. Every change is computed first (a
//! [`Plan`]), shown as a diff, and written atomically only if asked.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};

/// The skill file as written in the source, with `knowledge-db <command>`
/// where the installed skill has the binary and store (see [`Install`]).
pub const SKILL_MD: &str = include_str!("../../plugin/skills/knowledge-db/SKILL.md");

/// Name of the skill folder and of the MCP server entry.
pub const NAME: &str = "knowledge-db";

/// The hook entries: (event, matcher, hook subcommand, timeout in seconds).
/// Events without a matcher (Stop, SessionEnd, UserPromptSubmit) fire on
/// every occurrence.
pub const HOOKS: [(&str, Option<&str>, &str, Option<u64>); 6] = [
    (
        "PostToolUse",
        Some("Bash|Write|Edit|TaskCreate|TaskUpdate|TodoWrite"),
        "post-tool-use",
        Some(30),
    ),
    ("PreCompact", Some("auto|manual"), "pre-compact", Some(60)),
    (
        "SessionStart",
        Some("startup|resume|compact"),
        "session-start",
        Some(10),
    ),
    ("Stop", None, "stop", Some(30)),
    ("SessionEnd", None, "session-end", Some(5)),
    ("UserPromptSubmit", None, "user-prompt-submit", Some(10)),
];

/// What every installed command runs: this binary, on this store. Both are
/// absolute paths, so the commands work whatever Claude Code's `PATH` and
/// environment are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install {
    /// The `knowledge-db` executable the hooks and the MCP server run (absolute).
    pub binary: PathBuf,
    /// The store they use (absolute).
    pub store: PathBuf,
}

impl Install {
    /// The binary and store to install: `binary` if given, else the running
    /// program. Refuses a binary that is not an absolute path to an existing
    /// executable file (e.g. deleted or replaced by a rebuild since it started),
    /// naming the fix.
    pub fn new(binary: Option<PathBuf>, store: &Path) -> Result<Install> {
        let binary = match binary {
            Some(b) => b,
            None => std::env::current_exe().map_err(|e| {
                Error::Usage(format!(
                    "cannot tell where this knowledge-db binary is ({e}); pass --binary PATH"
                ))
            })?,
        };
        let binary = absolute(&binary)?;
        let shown = binary.display().to_string();
        if shown.ends_with(" (deleted)") || !binary.is_file() {
            return Err(Error::Usage(format!(
                "{shown} is not there any more (replaced or deleted since it started); \
                 run the install with the binary you will keep, or pass --binary PATH"
            )));
        }
        if !is_executable(&binary) {
            return Err(Error::Usage(format!(
                "{shown} is not executable; `chmod +x` it or pass --binary PATH"
            )));
        }
        Ok(Install {
            binary,
            store: absolute(store)?,
        })
    }

    /// `<binary> --store <store>`, quoted for the shell where needed.
    pub fn prefix(&self) -> String {
        format!(
            "{} --store {}",
            shell_quote(&self.binary.to_string_lossy()),
            shell_quote(&self.store.to_string_lossy())
        )
    }

    /// The command of a hook subcommand (`post-tool-use`).
    pub fn hook_command(&self, subcommand: &str) -> String {
        format!("{} hook {subcommand}", self.prefix())
    }

    /// The MCP server entry.
    pub fn mcp_entry(&self, extra_args: &[String]) -> Value {
        let mut args = vec![json!("--store"), json!(self.store.to_string_lossy())];
        args.extend(extra_args.iter().map(|a| json!(a)));
        args.push(json!("mcp"));
        json!({"type": "stdio", "command": self.binary.to_string_lossy(), "args": args, "env": {}})
    }

    /// The skill with every `knowledge-db <command>` (and its `allowed-tools`
    /// pattern) running this binary on this store.
    pub fn skill(&self) -> String {
        let prefix = self.prefix();
        let text = SKILL_MD.replace("Bash(knowledge-db *)", &format!("Bash({prefix} *)"));
        let mut out = String::with_capacity(text.len() + 1024);
        let mut rest = text.as_str();
        while let Some(at) = rest.find("knowledge-db ") {
            let (before, after) = rest.split_at(at);
            out.push_str(before);
            let after_name = &after["knowledge-db ".len()..];
            // A command starts a line or follows a space, quote or bracket
            // (not `/`: `/knowledge-db search` is the skill's own name).
            let starts_command = before
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || "`'\"(".contains(c));
            let word: String = after_name
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '-')
                .collect();
            if starts_command && SUBCOMMANDS.contains(&word.as_str()) {
                out.push_str(&prefix);
                out.push(' ');
            } else {
                out.push_str("knowledge-db ");
            }
            rest = after_name;
        }
        out.push_str(rest);
        out
    }
}

/// The commands a skill may run (a `knowledge-db` followed by one of these is
/// a command; elsewhere the word is the product's name).
const SUBCOMMANDS: [&str; 16] = [
    "search", "get", "show", "add", "stats", "export", "upkeep", "embed", "delete", "archive",
    "restore", "ingest", "maintain", "verify", "import", "hook",
];

fn absolute(path: &Path) -> Result<PathBuf> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let here = std::env::current_dir()
        .map_err(|e| Error::Usage(format!("cannot tell the current folder: {e}")))?;
    Ok(here.join(path))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

pub use crate::shell::{shell_quote, shell_words};

/// Whether a command runs knowledge-db's `hook <subcommand>` (any binary
/// path, any store): an entry an earlier install wrote.
pub fn is_our_hook(command: &str, subcommand: &str) -> bool {
    let words = shell_words(command);
    let binary_is_ours = words
        .first()
        .and_then(|w| Path::new(w).file_name())
        .is_some_and(|n| n == NAME);
    binary_is_ours
        && words
            .windows(2)
            .any(|w| w[0] == "hook" && w[1] == subcommand)
}

/// Where to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A project folder: the hooks in `.claude/settings.local.json`, the skill
    /// in `.claude/skills/`, the MCP server in this project's local scope of
    /// `~/.claude.json` (as `claude mcp add` does by default).
    Project {
        /// The project folder.
        dir: PathBuf,
        /// The home folder (`$HOME`).
        home: PathBuf,
        /// `$CLAUDE_CONFIG_DIR`, when set.
        config_dir: Option<PathBuf>,
    },
    /// The user's configuration: `$CLAUDE_CONFIG_DIR` (else `~/.claude`) for
    /// settings and skills; `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`)
    /// for MCP servers.
    User {
        /// The home folder (`$HOME`).
        home: PathBuf,
        /// `$CLAUDE_CONFIG_DIR`, when set.
        config_dir: Option<PathBuf>,
    },
}

fn home_and_config_dir() -> Result<(PathBuf, Option<PathBuf>)> {
    let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let home = env("HOME")
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
        .ok_or_else(|| Error::Usage("cannot tell the home folder: set $HOME".into()))?;
    Ok((home, env("CLAUDE_CONFIG_DIR").map(PathBuf::from)))
}

impl Scope {
    /// The user scope from `$HOME` and `$CLAUDE_CONFIG_DIR`.
    pub fn user_from_env() -> Result<Scope> {
        let (home, config_dir) = home_and_config_dir()?;
        Ok(Scope::User { home, config_dir })
    }

    /// The scope of the project folder `dir`, with `$HOME` and
    /// `$CLAUDE_CONFIG_DIR` (where its MCP entry goes).
    pub fn project_from_env(dir: &Path) -> Result<Scope> {
        let (home, config_dir) = home_and_config_dir()?;
        Ok(Scope::Project {
            dir: absolute(dir)?,
            home,
            config_dir,
        })
    }
}

/// The files an install touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// Claude Code's settings file, where the hooks go (a project's
    /// `.claude/settings.local.json`: this machine's, never shared).
    pub settings: PathBuf,
    /// The skill's `SKILL.md`.
    pub skill: PathBuf,
    /// The file the MCP server is registered in (`.claude.json`).
    pub mcp: PathBuf,
    /// The key of `projects` in `.claude.json` whose `mcpServers` hold the
    /// entry (a project's local scope); `None`: the top-level `mcpServers`.
    pub mcp_project: Option<String>,
    /// Where releases before this one put the hooks (`.claude/settings.json`,
    /// which teams commit): our entries there are moved out.
    pub legacy_settings: Option<PathBuf>,
    /// Where releases before this one put the MCP server (`.mcp.json`).
    pub legacy_mcp: Option<PathBuf>,
    /// The project folder (project scope).
    pub project: Option<PathBuf>,
}

impl Targets {
    /// The files of `scope`.
    pub fn for_scope(scope: &Scope) -> Targets {
        let claude_json = |home: &Path, config_dir: &Option<PathBuf>| match config_dir {
            Some(dir) => dir.join(".claude.json"),
            None => home.join(".claude.json"),
        };
        match scope {
            Scope::Project {
                dir,
                home,
                config_dir,
            } => Targets {
                settings: dir.join(".claude").join("settings.local.json"),
                skill: dir
                    .join(".claude")
                    .join("skills")
                    .join(NAME)
                    .join("SKILL.md"),
                mcp: claude_json(home, config_dir),
                mcp_project: Some(project_key(dir)),
                legacy_settings: Some(dir.join(".claude").join("settings.json")),
                legacy_mcp: Some(dir.join(".mcp.json")),
                project: Some(dir.clone()),
            },
            Scope::User { home, config_dir } => {
                let claude = config_dir.clone().unwrap_or_else(|| home.join(".claude"));
                Targets {
                    settings: claude.join("settings.json"),
                    skill: claude.join("skills").join(NAME).join("SKILL.md"),
                    mcp: claude_json(home, config_dir),
                    mcp_project: None,
                    legacy_settings: None,
                    legacy_mcp: None,
                    project: None,
                }
            }
        }
    }

    /// The `mcpServers` object the entry goes into, within `.claude.json`.
    pub fn mcp_servers<'a>(&self, config: &'a Value) -> Option<&'a Value> {
        match &self.mcp_project {
            Some(key) => config.get("projects")?.get(key)?.get("mcpServers"),
            None => config.get("mcpServers"),
        }
    }

    /// Where the MCP entry is, in words.
    pub fn mcp_place(&self) -> String {
        match &self.mcp_project {
            Some(key) => format!("{} (the local scope of {key})", self.mcp.display()),
            None => self.mcp.display().to_string(),
        }
    }
}

/// The key Claude Code files a project under in `.claude.json`: the root of
/// the git work tree holding `dir`, else `dir` (both with symlinks resolved).
pub fn project_key(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let root = dir
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&dir);
    root.to_string_lossy().into_owned()
}

/// Works out what installing into `targets` changes, reading but not writing.
pub fn plan(targets: &Targets, install: &Install) -> Result<Plan> {
    let mut plan = Plan::default();
    let settings = read(&targets.settings)?;
    let merged = merge_json(&targets.settings, settings.as_deref(), |object, path| {
        add_hooks(object, path, install)
    })?;
    plan.consider(&targets.settings, Part::Hooks, settings, merged);
    if let Some(legacy) = &targets.legacy_settings {
        let text = read(legacy)?;
        if text.is_some() {
            let cleaned = merge_json(legacy, text.as_deref(), |object, path| {
                Ok(!super::uninstall::remove_hooks(object, path, &[])?.is_empty())
            })?;
            plan.consider_removal(legacy, Part::LegacyHooks, text, cleaned);
        }
    }
    let skill = read(&targets.skill)?;
    let wanted_skill = install.skill();
    let wanted = (skill.as_deref() != Some(wanted_skill.as_str())).then_some(wanted_skill);
    plan.consider(&targets.skill, Part::Skill, skill, wanted);
    let mcp = read(&targets.mcp)?;
    let mut notes = Vec::new();
    let project = targets.mcp_project.as_deref();
    let merged = merge_json(&targets.mcp, mcp.as_deref(), |object, path| {
        add_mcp_server(object, path, project, install, &mut notes)
    })?;
    plan.consider(&targets.mcp, Part::Mcp, mcp, merged);
    if let Some(legacy) = &targets.legacy_mcp {
        let text = read(legacy)?;
        if text.is_some() {
            let cleaned = merge_json(legacy, text.as_deref(), |object, path| {
                super::uninstall::remove_mcp_server(object, path, None)
            })?;
            plan.consider_removal(legacy, Part::LegacyMcp, text, cleaned);
        }
    }
    if let Some(project) = &targets.project {
        if let Some((exclude, lines)) = git_exclude_lines(project, targets) {
            let text = read(&exclude)?;
            let current = text.clone().unwrap_or_default();
            let missing: Vec<&String> = lines
                .iter()
                .filter(|l| !current.lines().any(|c| c.trim() == l.as_str()))
                .collect();
            if !missing.is_empty() {
                let mut after = current.clone();
                if !after.is_empty() && !after.ends_with('\n') {
                    after.push('\n');
                }
                after.push_str(GIT_EXCLUDE_MARK);
                after.push('\n');
                for line in missing {
                    after.push_str(line);
                    after.push('\n');
                }
                plan.changes.push(FileChange {
                    path: exclude,
                    part: Part::GitExclude,
                    before: text,
                    after: Some(after),
                });
            }
        }
    }
    plan.notes = notes;
    Ok(plan)
}

/// The comment above the lines `hook install` adds to `.git/info/exclude`.
pub const GIT_EXCLUDE_MARK: &str =
    "# knowledge-db hook install: this machine's files (hook uninstall removes these lines)";

/// `.git/info/exclude` of the git work tree holding `project` and the
/// patterns that keep the machine-specific files out of git (the settings
/// file and the skill folder, relative to the work tree's root); `None`
/// outside a git work tree or without git.
pub fn git_exclude_lines(project: &Path, targets: &Targets) -> Option<(PathBuf, Vec<String>)> {
    let git = |args: &[&str]| -> Option<String> {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(project)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let exclude = PathBuf::from(git(&["rev-parse", "--git-path", "info/exclude"])?);
    let exclude = if exclude.is_absolute() {
        exclude
    } else {
        project.join(exclude)
    };
    let top = top.canonicalize().unwrap_or(top);
    let project_real = project.canonicalize().ok()?;
    // The files may not exist yet: their place is taken through the project.
    let rel = |p: &Path| -> Option<String> {
        let full = project_real.join(p.strip_prefix(project).ok()?);
        Some(full.strip_prefix(&top).ok()?.to_string_lossy().into_owned())
    };
    let settings_line = format!("/{}", rel(&targets.settings)?);
    let skill_line = format!("/{}/", rel(targets.skill.parent()?)?);
    Some((exclude, vec![settings_line, skill_line]))
}

/// Puts each of [`HOOKS`] in place: an entry an earlier install wrote (any
/// binary path or store) is brought up to date, a second copy of it removed;
/// one that is missing is added. Other hooks are left as they are. Returns
/// whether anything changed.
fn add_hooks(settings: &mut Map<String, Value>, path: &Path, install: &Install) -> Result<bool> {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(path, "`hooks`"))?;
    let mut changed = false;
    for (event, matcher, subcommand, timeout) in HOOKS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| Error::Config {
                path: path.to_path_buf(),
                message: format!("`hooks.{event}` is not a list; nothing was written"),
            })?;
        let command = install.hook_command(subcommand);
        let mut wanted = json!({"type": "command", "command": command});
        if let Some(secs) = timeout {
            wanted["timeout"] = json!(secs);
        }
        let before = groups.clone();
        let mut placed = false;
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            // Ours: a knowledge-db binary running this hook, or exactly the
            // command this install writes (a binary renamed or copied under
            // another name is still recognised on the next install).
            let ours = |h: &Value| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c == command || is_our_hook(c, subcommand))
            };
            if !list.iter().any(ours) {
                return true;
            }
            let only_ours = list.iter().all(ours);
            list.retain(|h| !ours(h));
            if placed {
                return !list.is_empty();
            }
            placed = true;
            list.insert(0, wanted.clone());
            // The matcher is ours to set only in a group of ours alone.
            if only_ours {
                set_matcher(group, matcher);
            }
            true
        });
        if !placed {
            let mut group = json!({"hooks": [wanted]});
            set_matcher(&mut group, matcher);
            groups.push(group);
        }
        changed |= *groups != before;
    }
    Ok(changed)
}

/// Sets a hook group's matcher, or removes it for an event that has none
/// (the group then fires on every occurrence); `matcher` stays first.
fn set_matcher(group: &mut Value, matcher: Option<&str>) {
    let Some(object) = group.as_object_mut() else {
        return;
    };
    match matcher {
        Some(m) => {
            if object.get("matcher").and_then(Value::as_str) != Some(m) {
                let hooks = object.remove("hooks");
                object.insert("matcher".into(), json!(m));
                if let Some(hooks) = hooks {
                    object.insert("hooks".into(), hooks);
                }
            }
        }
        None => {
            object.remove("matcher");
        }
    }
}

/// Puts `mcpServers.knowledge-db` in place: added when missing; an entry an
/// earlier install wrote (its command is a knowledge-db binary ending in
/// `mcp`) brought up to date, keeping its other arguments (a `--namespace`);
/// an entry of the user's own (another command) is left alone, with a note.
fn add_mcp_server(
    config: &mut Map<String, Value>,
    path: &Path,
    project: Option<&str>,
    install: &Install,
    notes: &mut Vec<String>,
) -> Result<bool> {
    let servers = servers_mut(config, path, project)?;
    let wanted = match servers.get(NAME) {
        None => install.mcp_entry(&[]),
        Some(existing) => {
            let command = existing["command"].as_str().unwrap_or_default();
            let args: Vec<String> = existing["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let ours = Path::new(command).file_name().is_some_and(|n| n == NAME)
                && args.last().is_some_and(|a| a == "mcp");
            if !ours {
                notes.push(format!(
                    "{}: mcpServers.{NAME} runs `{command}`, not knowledge-db: left as it is",
                    path.display()
                ));
                return Ok(false);
            }
            let mut updated = existing.clone();
            let fresh = install.mcp_entry(&extra_mcp_args(&args));
            updated["type"] = fresh["type"].clone();
            updated["command"] = fresh["command"].clone();
            updated["args"] = fresh["args"].clone();
            if updated.get("env").is_none() {
                updated["env"] = json!({});
            }
            updated
        }
    };
    if servers.get(NAME) == Some(&wanted) {
        return Ok(false);
    }
    servers.insert(NAME.to_string(), wanted);
    Ok(true)
}

/// The `mcpServers` object of `config` (of its `projects[project]` when a
/// project is named), created when missing.
pub fn servers_mut<'a>(
    config: &'a mut Map<String, Value>,
    path: &Path,
    project: Option<&str>,
) -> Result<&'a mut Map<String, Value>> {
    let holder = match project {
        Some(key) => config
            .entry("projects")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| not_object(path, "`projects`"))?
            .entry(key)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| not_object(path, &format!("`projects.{key}`")))?,
        None => config,
    };
    holder
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(path, "`mcpServers`"))
}

/// Whether an `mcpServers` entry is one `hook install` wrote: a knowledge-db
/// binary whose last argument is `mcp`.
pub fn is_our_mcp_entry(entry: &Value) -> bool {
    let command = entry["command"].as_str().unwrap_or_default();
    Path::new(command).file_name().is_some_and(|n| n == NAME)
        && entry["args"]
            .as_array()
            .and_then(|a| a.last())
            .and_then(Value::as_str)
            == Some("mcp")
}

/// The arguments of an earlier `... [--store S] [options] mcp` entry other
/// than the store and the subcommand.
fn extra_mcp_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut words = args[..args.len().saturating_sub(1)].iter();
    while let Some(word) = words.next() {
        if word == "--store" {
            words.next();
        } else if !word.starts_with("--store=") {
            out.push(word.clone());
        }
    }
    out
}

pub use super::diff::unified_diff;
use super::plan::not_object;
pub use super::plan::{is_empty_config, merge_json, read, FileChange, Part, Plan};

#[cfg(test)]
mod tests {
    use super::*;

    fn install() -> Install {
        Install {
            binary: PathBuf::from("/opt/kdb/bin/knowledge-db"),
            store: PathBuf::from("/home/me/my memory"),
        }
    }

    fn merge(text: Option<&str>) -> Option<String> {
        merge_json(Path::new("settings.json"), text, |o, p| {
            add_hooks(o, p, &install())
        })
        .expect("merge")
    }

    #[test]
    fn hooks_merge_beside_others_and_only_once() {
        let existing = r#"{"model":"opus","hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint.sh"}]}]}}"#;
        let merged = merge(Some(existing)).expect("changed");
        let value: Value = serde_json::from_str(&merged).expect("json");
        assert_eq!(value["model"], "opus");
        let post = value["hooks"]["PostToolUse"].as_array().expect("list");
        assert_eq!(post.len(), 2);
        assert_eq!(post[0]["hooks"][0]["command"], "lint.sh");
        assert_eq!(post[1]["matcher"].as_str(), HOOKS[0].1);
        assert_eq!(post[1]["hooks"][0]["timeout"], 30);
        assert_eq!(
            post[1]["hooks"][0]["command"],
            "/opt/kdb/bin/knowledge-db --store '/home/me/my memory' hook post-tool-use"
        );
        assert_eq!(
            value["hooks"]["SessionStart"][0]["matcher"],
            "startup|resume|compact"
        );
        // Events without a matcher get none: they fire every time.
        for event in ["Stop", "SessionEnd", "UserPromptSubmit"] {
            let group = &value["hooks"][event][0];
            assert!(group.get("matcher").is_none(), "{event}: {group}");
            assert!(group["hooks"][0]["timeout"].is_u64(), "{event}: {group}");
        }
        assert!(
            merge(Some(&merged)).is_none(),
            "a second install changed it"
        );
    }

    #[test]
    fn an_earlier_install_is_brought_up_to_date_not_doubled() {
        // What releases before absolute paths wrote, twice over, plus a
        // user's hook that shares the group.
        let old = r#"{"hooks":{"PostToolUse":[
            {"matcher":"Write|Edit","hooks":[{"type":"command","command":"knowledge-db hook post-tool-use","timeout":30}]},
            {"matcher":"Write","hooks":[{"type":"command","command":"/old/knowledge-db --store /old hook post-tool-use"},{"type":"command","command":"fmt.sh"}]}],
          "PreCompact":[{"matcher":"auto|manual","hooks":[{"type":"command","command":"knowledge-db hook pre-compact"}]}]}}"#;
        let value: Value = serde_json::from_str(&merge(Some(old)).expect("changed")).expect("json");
        let post = value["hooks"]["PostToolUse"].as_array().expect("list");
        assert_eq!(post.len(), 2, "{post:?}");
        assert_eq!(post[0]["matcher"].as_str(), HOOKS[0].1);
        assert_eq!(post[0]["hooks"].as_array().expect("hooks").len(), 1);
        assert!(post[0]["hooks"][0]["command"]
            .as_str()
            .expect("command")
            .starts_with("/opt/kdb/bin/knowledge-db --store"));
        // The user's hook stays, in its group, with its matcher.
        assert_eq!(post[1]["matcher"], "Write");
        assert_eq!(
            post[1]["hooks"],
            json!([{"type":"command","command":"fmt.sh"}])
        );
        let pre = &value["hooks"]["PreCompact"][0]["hooks"][0]["command"];
        assert_eq!(
            pre,
            "/opt/kdb/bin/knowledge-db --store '/home/me/my memory' hook pre-compact"
        );
    }

    #[test]
    fn mcp_entries_of_ours_are_updated_and_others_kept() {
        let run = |text: &str| {
            let mut notes = Vec::new();
            let out = merge_json(Path::new(".mcp.json"), Some(text), |o, p| {
                add_mcp_server(o, p, None, &install(), &mut notes)
            })
            .expect("merge");
            (out, notes)
        };
        let (out, _) = run(
            r#"{"mcpServers":{"knowledge-db":{"type":"stdio","command":"knowledge-db","args":["--store","/old","--namespace","proj","mcp"],"env":{"X":"1"}}}}"#,
        );
        let value: Value = serde_json::from_str(&out.expect("changed")).expect("json");
        assert_eq!(
            value["mcpServers"]["knowledge-db"],
            json!({"type":"stdio","command":"/opt/kdb/bin/knowledge-db",
                   "args":["--store","/home/me/my memory","--namespace","proj","mcp"],"env":{"X":"1"}})
        );
        let (out, notes) =
            run(r#"{"mcpServers":{"knowledge-db":{"command":"my-wrapper","args":[]}}}"#);
        assert!(out.is_none());
        assert!(notes[0].contains("my-wrapper"), "{notes:?}");
    }

    #[test]
    fn the_skill_runs_the_binary_on_the_store() {
        let skill = install().skill();
        let prefix = "/opt/kdb/bin/knowledge-db --store '/home/me/my memory'";
        assert!(
            skill.contains(&format!("allowed-tools: Bash({prefix} *)")),
            "{skill}"
        );
        assert!(skill.contains(&format!("{prefix} search ")), "{skill}");
        assert!(!skill.contains("\nknowledge-db search"), "{skill}");
        // `/knowledge-db search <query>` is how the user calls the skill.
        assert!(skill.contains("/knowledge-db search <query>"), "{skill}");
        // The product's name is left alone.
        assert!(skill.contains("name: knowledge-db\n"), "{skill}");
    }

    #[test]
    fn shell_words_read_back_what_shell_quote_writes() {
        for word in ["/a/b", "/with space/x", "it's", "", "a\"b"] {
            let line = format!("cmd {} tail", shell_quote(word));
            assert_eq!(shell_words(&line), vec!["cmd", word, "tail"], "{line}");
        }
        assert!(is_our_hook(
            "'/x y/knowledge-db' --store /s hook pre-compact",
            "pre-compact"
        ));
        assert!(!is_our_hook("other hook pre-compact", "pre-compact"));
        assert!(!is_our_hook(
            "knowledge-db hook pre-compact",
            "post-tool-use"
        ));
    }

    #[test]
    fn bad_json_is_an_error_naming_the_file() {
        let error = merge_json(
            Path::new("x/.mcp.json"),
            Some("{\"mcpServers\": "),
            |o, p| add_mcp_server(o, p, None, &install(), &mut Vec::new()),
        )
        .expect_err("invalid");
        let text = error.to_string();
        assert!(
            text.contains("x/.mcp.json") && text.contains("line 1"),
            "{text}"
        );
        let error = merge_json(Path::new("s.json"), Some(r#"{"hooks": []}"#), |o, p| {
            add_hooks(o, p, &install())
        })
        .expect_err("hooks not an object");
        assert!(error.to_string().contains("`hooks`"));
    }
}
