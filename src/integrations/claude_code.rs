//! Installing knowledge-db into Claude Code's configuration.
//!
//! Three things go in, each into the file Claude Code reads it from
//! (`interop.md`, section 2):
//! - the hooks into `settings.json`: capture (`Stop`, `SessionEnd`, and the
//!   compression loop's `PostToolUse` and `PreCompact`), recall
//!   (`UserPromptSubmit`, `SessionStart` at startup and resume) and the
//!   preservation block (`SessionStart` after a compaction);
//! - the skill, `skills/knowledge-db/SKILL.md`;
//! - the MCP server registration, `mcpServers.knowledge-db`, into `.mcp.json`
//!   (project) or `~/.claude.json` (user).
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
pub const SKILL_MD: &str = include_str!("skill/SKILL.md");

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
    /// A project folder: `.claude/settings.json`, `.claude/skills/`, `.mcp.json`.
    Project(PathBuf),
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

impl Scope {
    /// The user scope from `$HOME` and `$CLAUDE_CONFIG_DIR`.
    pub fn user_from_env() -> Result<Scope> {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let home = env("HOME")
            .map(PathBuf::from)
            .or_else(dirs::home_dir)
            .ok_or_else(|| Error::Usage("cannot tell the home folder: set $HOME".into()))?;
        Ok(Scope::User {
            home,
            config_dir: env("CLAUDE_CONFIG_DIR").map(PathBuf::from),
        })
    }
}

/// The three files an install touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    /// Claude Code's settings file, where the hooks go.
    pub settings: PathBuf,
    /// The skill's `SKILL.md`.
    pub skill: PathBuf,
    /// The file the MCP server is registered in (`.mcp.json` or `.claude.json`).
    pub mcp: PathBuf,
}

impl Targets {
    /// The files of `scope`.
    pub fn for_scope(scope: &Scope) -> Targets {
        match scope {
            Scope::Project(dir) => Targets {
                settings: dir.join(".claude").join("settings.json"),
                skill: dir
                    .join(".claude")
                    .join("skills")
                    .join(NAME)
                    .join("SKILL.md"),
                mcp: dir.join(".mcp.json"),
            },
            Scope::User { home, config_dir } => {
                let claude = config_dir.clone().unwrap_or_else(|| home.join(".claude"));
                let mcp = match config_dir {
                    Some(dir) => dir.join(".claude.json"),
                    None => home.join(".claude.json"),
                };
                Targets {
                    settings: claude.join("settings.json"),
                    skill: claude.join("skills").join(NAME).join("SKILL.md"),
                    mcp,
                }
            }
        }
    }
}

/// One file's change: its text before (if it exists) and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// Its text before the change; `None` when it does not exist yet.
    pub before: Option<String>,
    /// Its text after the change.
    pub after: String,
}

/// The changes an install would make; empty when everything is in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files to write.
    pub changes: Vec<FileChange>,
    /// Files already as they should be.
    pub unchanged: Vec<PathBuf>,
    /// Things left alone that the user should know (a server entry of their own).
    pub notes: Vec<String>,
}

/// Works out what installing into `targets` changes, reading but not writing.
pub fn plan(targets: &Targets, install: &Install) -> Result<Plan> {
    let mut plan = Plan::default();
    let settings = read(&targets.settings)?;
    let merged = merge_json(&targets.settings, settings.as_deref(), |object, path| {
        add_hooks(object, path, install)
    })?;
    plan.consider(&targets.settings, settings, merged);
    let skill = read(&targets.skill)?;
    let wanted_skill = install.skill();
    let wanted = (skill.as_deref() != Some(wanted_skill.as_str())).then_some(wanted_skill);
    plan.consider(&targets.skill, skill, wanted);
    let mcp = read(&targets.mcp)?;
    let mut notes = Vec::new();
    let merged = merge_json(&targets.mcp, mcp.as_deref(), |object, path| {
        add_mcp_server(object, path, install, &mut notes)
    })?;
    plan.consider(&targets.mcp, mcp, merged);
    plan.notes = notes;
    Ok(plan)
}

impl Plan {
    fn consider(&mut self, path: &Path, before: Option<String>, after: Option<String>) {
        match after {
            Some(after) => self.changes.push(FileChange {
                path: path.to_path_buf(),
                before,
                after,
            }),
            None => self.unchanged.push(path.to_path_buf()),
        }
    }

    /// Writes every change, each atomically (temporary file, fsync, rename).
    pub fn apply(&self) -> Result<()> {
        for change in &self.changes {
            // The user's own files keep their permissions (knowledge-db makes
            // its own files owner-only, not Claude Code's configuration).
            let before = std::fs::metadata(&change.path)
                .ok()
                .map(|m| m.permissions());
            write_atomically(&change.path, change.after.as_bytes())?;
            if let Some(permissions) = before {
                std::fs::set_permissions(&change.path, permissions)
                    .map_err(|e| Error::io(&change.path, e))?;
            }
        }
        Ok(())
    }

    /// The changes as a unified diff.
    pub fn diff(&self) -> String {
        self.changes
            .iter()
            .map(|c| unified_diff(&c.path, c.before.as_deref().unwrap_or(""), &c.after))
            .collect()
    }
}

fn read(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Parses `text` (absent or blank: `{}`), lets `edit` add to it, and returns the
/// new text if `edit` changed anything.
fn merge_json(
    path: &Path,
    text: Option<&str>,
    edit: impl FnOnce(&mut Map<String, Value>, &Path) -> Result<bool>,
) -> Result<Option<String>> {
    let mut value: Value = match text {
        Some(t) if !t.trim().is_empty() => serde_json::from_str(t).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: format!(
                "not valid JSON at line {}, column {}: {e}; fix or move the file, nothing was written",
                e.line(),
                e.column()
            ),
        })?,
        _ => json!({}),
    };
    let Value::Object(object) = &mut value else {
        return Err(not_object(path, "the file"));
    };
    if !edit(object, path)? {
        return Ok(None);
    }
    let mut out = serde_json::to_string_pretty(&value)
        .map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    out.push('\n');
    Ok(Some(out))
}

fn not_object(path: &Path, what: &str) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        message: format!("{what} is not a JSON object; nothing was written"),
    }
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
    install: &Install,
    notes: &mut Vec<String>,
) -> Result<bool> {
    let servers = config
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(path, "`mcpServers`"))?;
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

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::replace(path, bytes, crate::files::Durability::Durable)
}

/// A unified diff of two texts (whole-file line LCS; config files are small),
/// with three lines of context around each change.
pub fn unified_diff(path: &Path, before: &str, after: &str) -> String {
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let ops = line_ops(&a, &b);
    let mut out = format!(
        "--- {}\n+++ {}\n",
        if before.is_empty() {
            "/dev/null".to_string()
        } else {
            path.display().to_string()
        },
        path.display()
    );
    const CONTEXT: usize = 3;
    let changed: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != ' ').collect();
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = (changed[i] + CONTEXT + 1).min(ops.len());
        while i + 1 < changed.len() && changed[i + 1] < end + CONTEXT {
            i += 1;
            end = (changed[i] + CONTEXT + 1).min(ops.len());
        }
        let (old_start, new_start) = positions(&ops[..start]);
        let (old_len, new_len) = positions(&ops[start..end]);
        out.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            old_start + usize::from(old_len > 0),
            old_len,
            new_start + usize::from(new_len > 0),
            new_len
        ));
        for (mark, line) in &ops[start..end] {
            out.push_str(&format!("{mark}{line}\n"));
        }
        i += 1;
    }
    out
}

/// Lines counted on the old and the new side of `ops`.
fn positions(ops: &[(char, &str)]) -> (usize, usize) {
    let old = ops.iter().filter(|(m, _)| *m != '+').count();
    let new = ops.iter().filter(|(m, _)| *m != '-').count();
    (old, new)
}

/// Edit script from `a` to `b`: (' ', kept), ('-', removed), ('+', added).
fn line_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    ops
}

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
                add_mcp_server(o, p, &install(), &mut notes)
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
            |o, p| add_mcp_server(o, p, &install(), &mut Vec::new()),
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

    #[test]
    fn diff_marks_added_and_removed_lines() {
        let diff = unified_diff(Path::new("f"), "a\nb\nc\n", "a\nB\nc\nd\n");
        assert!(diff.contains("-b\n+B\n"), "{diff}");
        assert!(diff.contains("+d\n"), "{diff}");
        assert!(diff.contains("@@ -1,3 +1,4 @@"), "{diff}");
        let new_file = unified_diff(Path::new("f"), "", "x\n");
        assert!(
            new_file.starts_with("--- /dev/null\n+++ f\n@@ -0,0 +1,1 @@\n+x\n"),
            "{new_file}"
        );
    }
}
