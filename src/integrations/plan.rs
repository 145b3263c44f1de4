//! Changes to configuration files, computed before anything is written.
//!
//! `hook install` and `hook uninstall` both work out every file's new text
//! first (a [`Plan`] of [`FileChange`]s, each saying which [`Part`] of ours
//! the file holds), show it as a unified diff on `--dry-run`, and only then
//! write each file atomically (temporary file, fsync, rename), keeping the
//! permissions of a file that was there, or remove it. JSON files are merged
//! ([`merge_json`]): parsed, edited, written back pretty-printed; a file that
//! is not valid JSON is an error naming it, line and column, and nothing is
//! written.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::diff::unified_diff;
use crate::error::{Error, Result};

/// What a file holds of knowledge-db's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Part {
    /// The six hooks (a settings file).
    Hooks,
    /// The `/knowledge-db` skill.
    Skill,
    /// The MCP server entry.
    Mcp,
    /// Hooks an earlier release put in a file teams commit.
    LegacyHooks,
    /// An MCP entry an earlier release put in a file teams commit (`.mcp.json`).
    LegacyMcp,
    /// The lines of `.git/info/exclude` that keep this machine's files out of git.
    GitExclude,
}

impl Part {
    /// What the file holds, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Part::Hooks => "the six hooks",
            Part::Skill => "the /knowledge-db skill",
            Part::Mcp => "the MCP server `knowledge-db`",
            Part::LegacyHooks => {
                "hooks an earlier install wrote here (moved out: teams commit this file)"
            }
            Part::LegacyMcp => {
                "an MCP entry an earlier install wrote here (moved out: teams commit this file)"
            }
            Part::GitExclude => {
                "git ignores this machine's knowledge-db files (settings.local.json, the skill)"
            }
        }
    }
}

/// One file's change: its text before (if it exists) and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The file.
    pub path: PathBuf,
    /// What it holds of ours.
    pub part: Part,
    /// Its text before the change; `None` when it does not exist yet.
    pub before: Option<String>,
    /// Its text after the change; `None` when the change removes it.
    pub after: Option<String>,
}

/// The changes an install (or uninstall) would make; empty when everything
/// is in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files to write.
    pub changes: Vec<FileChange>,
    /// Files already as they should be, with what they hold.
    pub unchanged: Vec<(PathBuf, Part)>,
    /// Things left alone that the user should know (a server entry of their own).
    pub notes: Vec<String>,
}

impl Plan {
    pub(super) fn consider(
        &mut self,
        path: &Path,
        part: Part,
        before: Option<String>,
        after: Option<String>,
    ) {
        match after {
            Some(after) => self.changes.push(FileChange {
                path: path.to_path_buf(),
                part,
                before,
                after: Some(after),
            }),
            None => self.unchanged.push((path.to_path_buf(), part)),
        }
    }

    /// A file entries of ours leave: rewritten without them, or removed when
    /// nothing else is left in it.
    pub fn consider_removal(
        &mut self,
        path: &Path,
        part: Part,
        before: Option<String>,
        after: Option<String>,
    ) {
        let Some(after) = after else {
            return;
        };
        let empty = serde_json::from_str::<Value>(&after).is_ok_and(|v| is_empty_config(&v));
        self.changes.push(FileChange {
            path: path.to_path_buf(),
            part,
            before,
            after: (!empty).then_some(after),
        });
    }

    /// Writes every change, each atomically (temporary file, fsync, rename),
    /// and removes the files a change removes.
    pub fn apply(&self) -> Result<()> {
        for change in &self.changes {
            let Some(after) = &change.after else {
                match fs::remove_file(&change.path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&change.path, e)),
                }
                continue;
            };
            // The user's own files keep their permissions (knowledge-db makes
            // its own files owner-only, not Claude Code's configuration).
            let before = std::fs::metadata(&change.path)
                .ok()
                .map(|m| m.permissions());
            write_atomically(&change.path, after.as_bytes())?;
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
            .map(|c| {
                unified_diff(
                    &c.path,
                    c.before.as_deref().unwrap_or(""),
                    c.after.as_deref().unwrap_or(""),
                )
            })
            .collect()
    }
}

/// A configuration left with nothing in it: `{}`, or only empty `hooks` or
/// `mcpServers` objects (what an install that created the file leaves once
/// its entries are gone).
pub fn is_empty_config(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        o.iter().all(|(k, v)| {
            (k == "hooks" || k == "mcpServers") && v.as_object().is_some_and(Map::is_empty)
        })
    })
}

/// A file's text; `None` when it does not exist.
pub fn read(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Parses `text` (absent or blank: `{}`), lets `edit` add to it, and returns the
/// new text if `edit` changed anything.
pub fn merge_json(
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

pub(super) fn not_object(path: &Path, what: &str) -> Error {
    Error::Config {
        path: path.to_path_buf(),
        message: format!("{what} is not a JSON object; nothing was written"),
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::replace(path, bytes, crate::files::Durability::Durable)
}
