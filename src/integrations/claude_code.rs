//! Installing knowledge-db into Claude Code's configuration.
//!
//! Three things go in, each into the file Claude Code reads it from
//! (`interop.md`, section 2):
//! - the hooks (`PostToolUse`, `PreCompact`, and `SessionStart` with matcher
//!   `compact`) into `settings.json`;
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

/// The skill file, as installed.
pub const SKILL_MD: &str = include_str!("skill/SKILL.md");

/// Name of the skill folder and of the MCP server entry.
pub const NAME: &str = "knowledge-db";

/// The hook entries: (event, matcher, command, timeout in seconds).
pub const HOOKS: [(&str, &str, &str, Option<u64>); 3] = [
    (
        "PostToolUse",
        "Bash|Write|Edit|TaskCreate|TaskUpdate|TodoWrite",
        "knowledge-db hook post-tool-use",
        Some(30),
    ),
    (
        "PreCompact",
        "auto|manual",
        "knowledge-db hook pre-compact",
        None,
    ),
    (
        "SessionStart",
        "compact",
        "knowledge-db hook session-start",
        None,
    ),
];

/// Where to install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A project folder: `.claude/settings.json`, `.claude/skills/`, `.mcp.json`.
    Project(PathBuf),
    /// The user's configuration: `$CLAUDE_CONFIG_DIR` (else `~/.claude`) for
    /// settings and skills; `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`)
    /// for MCP servers.
    User {
        home: PathBuf,
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
    pub settings: PathBuf,
    pub skill: PathBuf,
    pub mcp: PathBuf,
}

impl Targets {
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
    pub path: PathBuf,
    pub before: Option<String>,
    pub after: String,
}

/// The changes an install would make; empty when everything is in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<FileChange>,
    /// Files already as they should be.
    pub unchanged: Vec<PathBuf>,
}

/// Works out what installing into `targets` changes, reading but not writing.
pub fn plan(targets: &Targets) -> Result<Plan> {
    let mut plan = Plan::default();
    let settings = read(&targets.settings)?;
    let merged = merge_json(&targets.settings, settings.as_deref(), add_hooks)?;
    plan.consider(&targets.settings, settings, merged);
    let skill = read(&targets.skill)?;
    let wanted = (skill.as_deref() != Some(SKILL_MD)).then(|| SKILL_MD.to_string());
    plan.consider(&targets.skill, skill, wanted);
    let mcp = read(&targets.mcp)?;
    let merged = merge_json(&targets.mcp, mcp.as_deref(), add_mcp_server)?;
    plan.consider(&targets.mcp, mcp, merged);
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
            write_atomically(&change.path, change.after.as_bytes())?;
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
    edit: fn(&mut Map<String, Value>, &Path) -> Result<bool>,
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

/// Adds each of [`HOOKS`] unless a hook with the same command is already
/// registered for its event. Returns whether anything was added.
fn add_hooks(settings: &mut Map<String, Value>, path: &Path) -> Result<bool> {
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(path, "`hooks`"))?;
    let mut changed = false;
    for (event, matcher, command, timeout) in HOOKS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| Error::Config {
                path: path.to_path_buf(),
                message: format!("`hooks.{event}` is not a list; nothing was written"),
            })?;
        let present = groups.iter().any(|group| {
            group["hooks"]
                .as_array()
                .is_some_and(|hs| hs.iter().any(|h| h["command"] == command))
        });
        if present {
            continue;
        }
        let mut hook = json!({"type": "command", "command": command});
        if let Some(secs) = timeout {
            hook["timeout"] = json!(secs);
        }
        groups.push(json!({"matcher": matcher, "hooks": [hook]}));
        changed = true;
    }
    Ok(changed)
}

/// Adds `mcpServers.knowledge-db` unless an entry of that name exists (a user's
/// own entry, with its own arguments, is kept as it is).
fn add_mcp_server(config: &mut Map<String, Value>, path: &Path) -> Result<bool> {
    let servers = config
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| not_object(path, "`mcpServers`"))?;
    if servers.contains_key(NAME) {
        return Ok(false);
    }
    servers.insert(
        NAME.to_string(),
        json!({"type": "stdio", "command": "knowledge-db", "args": ["mcp"], "env": {}}),
    );
    Ok(true)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    temp.write_all(bytes).map_err(|e| Error::io(path, e))?;
    temp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    temp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
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

    #[test]
    fn hooks_merge_beside_others_and_only_once() {
        let existing = r#"{"model":"opus","hooks":{"PostToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"lint.sh"}]}]}}"#;
        let path = Path::new("settings.json");
        let merged = merge_json(path, Some(existing), add_hooks)
            .expect("merge")
            .expect("changed");
        let value: Value = serde_json::from_str(&merged).expect("json");
        assert_eq!(value["model"], "opus");
        let post = value["hooks"]["PostToolUse"].as_array().expect("list");
        assert_eq!(post.len(), 2);
        assert_eq!(post[0]["hooks"][0]["command"], "lint.sh");
        assert_eq!(
            post[1]["matcher"],
            "Bash|Write|Edit|TaskCreate|TaskUpdate|TodoWrite"
        );
        assert_eq!(post[1]["hooks"][0]["timeout"], 30);
        assert_eq!(value["hooks"]["SessionStart"][0]["matcher"], "compact");
        assert_eq!(
            value["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "knowledge-db hook pre-compact"
        );
        assert!(merge_json(path, Some(&merged), add_hooks)
            .expect("again")
            .is_none());
    }

    #[test]
    fn bad_json_is_an_error_naming_the_file() {
        let error = merge_json(
            Path::new("x/.mcp.json"),
            Some("{\"mcpServers\": "),
            add_mcp_server,
        )
        .expect_err("invalid");
        let text = error.to_string();
        assert!(
            text.contains("x/.mcp.json") && text.contains("line 1"),
            "{text}"
        );
        let error = merge_json(Path::new("s.json"), Some(r#"{"hooks": []}"#), add_hooks)
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
