//! `hook uninstall`: taking out exactly what `hook install` put in, and
//! only that.
//!
//! `hook install` keeps a record of each file it wrote (the install record,
//! [`InstallRecord`], in knowledge-db's state folder, never in Claude Code's
//! files): the file's text before the first install and a hash of the text
//! it left. Uninstalling then has two cases per file:
//! - **nothing else changed it since**: the text before the install comes
//!   back byte for byte (a file the install created is removed, and so are
//!   the folders it created, when empty);
//! - **something else changed it** (the user, Claude Code, another tool):
//!   only our entries are taken out — the six hooks, the `knowledge-db` MCP
//!   entry, the skill, the `.git/info/exclude` lines — and everything else
//!   is left as it now is. A file left holding nothing is removed.
//!
//! Installs made before the record existed are uninstalled the second way.
//! The store is never touched unless `--purge` is given; the report says
//! where it is and how big it is.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::claude_code::{
    git_exclude_lines, is_our_hook, is_our_mcp_entry, merge_json, read, FileChange, Part, Plan,
    Targets, GIT_EXCLUDE_MARK, HOOKS, NAME,
};
use crate::error::{Error, Result};

/// Takes our hooks out of a settings object: every command that runs
/// knowledge-db's `hook <subcommand>` (or is exactly one of `also`: an
/// install's own commands, whatever its binary is called), the groups left
/// empty, the events left empty and a `hooks` left empty. Returns the hooks
/// removed.
pub fn remove_hooks(
    settings: &mut Map<String, Value>,
    path: &Path,
    also: &[String],
) -> Result<Vec<&'static str>> {
    let Some(hooks) = settings.get_mut("hooks") else {
        return Ok(Vec::new());
    };
    let hooks = hooks.as_object_mut().ok_or_else(|| Error::Config {
        path: path.to_path_buf(),
        message: "`hooks` is not a JSON object; nothing was written".into(),
    })?;
    let mut removed = Vec::new();
    for (event, _, subcommand, _) in HOOKS {
        let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
            continue;
        };
        let before = groups.len();
        let mut found = false;
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let count = list.len();
            list.retain(|h| {
                !h["command"].as_str().is_some_and(|c| {
                    is_our_hook(c, subcommand)
                        || (c.ends_with(&format!(" hook {subcommand}"))
                            && also.iter().any(|a| a == c))
                })
            });
            if list.len() == count {
                return true;
            }
            found = true;
            !list.is_empty()
        });
        if found {
            removed.push(subcommand);
        }
        if groups.is_empty() && before > 0 {
            hooks.remove(event);
        }
    }
    if hooks.is_empty() && !removed.is_empty() {
        settings.remove("hooks");
    }
    Ok(removed)
}

/// Takes our `knowledge-db` entry out of `mcpServers` (of `projects[project]`
/// when named), if it is ours (a knowledge-db binary running `mcp`); an
/// entry of the user's own under the same name is left. Returns whether
/// anything changed.
pub fn remove_mcp_server(
    config: &mut Map<String, Value>,
    _path: &Path,
    project: Option<&str>,
) -> Result<bool> {
    let holder = match project {
        Some(key) => config
            .get_mut("projects")
            .and_then(|p| p.get_mut(key))
            .and_then(Value::as_object_mut),
        None => Some(config),
    };
    let Some(servers) = holder
        .and_then(|h| h.get_mut("mcpServers"))
        .and_then(Value::as_object_mut)
    else {
        return Ok(false);
    };
    if !servers.get(NAME).is_some_and(is_our_mcp_entry) {
        return Ok(false);
    }
    servers.remove(NAME);
    Ok(true)
}

/// Whether a skill file is the one `hook install` writes (for any binary
/// and store): its name and its own heading.
pub fn is_our_skill(text: &str) -> bool {
    text.starts_with("---\nname: knowledge-db\n")
        && text.contains("\n# knowledge-db: long-term memory\n")
}

/// One file an install wrote, as the install record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RecordedFile {
    /// The file.
    pub path: PathBuf,
    /// Its text before the first install; `None` when the install created it.
    pub before: Option<String>,
    /// Whether `before` can come back as it is: false once something else
    /// changed the file between two installs.
    pub exact: bool,
    /// xxh3 (hex) of the text the last install left.
    pub after_hash: String,
}

/// One install (a scope: a project, or the user's configuration).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Installed {
    /// The settings file its hooks are in: what identifies the install.
    pub settings: PathBuf,
    /// The project folder (project scope).
    pub project: Option<PathBuf>,
    /// The binary its commands run.
    pub binary: PathBuf,
    /// The store its commands use.
    pub store: PathBuf,
    /// Each file it wrote.
    pub files: Vec<RecordedFile>,
    /// Folders it created (removed again when empty).
    pub created_dirs: Vec<PathBuf>,
    /// When it was last run (RFC 3339).
    pub at: String,
}

/// Every install on this machine: `installs.json` in knowledge-db's state
/// folder (`$XDG_STATE_HOME/knowledge-db`, else `~/.local/state/knowledge-db`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct InstallRecord {
    /// The installs, oldest first.
    pub installs: Vec<Installed>,
}

/// Where the install record lives.
pub fn record_path() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        })
        .or_else(dirs::state_dir)?;
    Some(state.join("knowledge-db").join("installs.json"))
}

fn text_hash(text: &str) -> String {
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(text.as_bytes()))
}

impl InstallRecord {
    /// The record on this machine (empty when there is none or it cannot be
    /// read: uninstall then takes our entries out one by one).
    pub fn load() -> InstallRecord {
        record_path()
            .and_then(|p| fs::read_to_string(p).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }

    /// Writes the record (removes it when no install is left).
    pub fn save(&self) -> Result<()> {
        let Some(path) = record_path() else {
            return Ok(());
        };
        if self.installs.is_empty() {
            return match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
                _ => Ok(()),
            };
        }
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::io(&path, std::io::Error::other(e)))?;
        text.push('\n');
        crate::files::replace(&path, text.as_bytes(), crate::files::Durability::Durable)
    }

    /// The install whose hooks are in `settings`.
    pub fn find(&self, settings: &Path) -> Option<&Installed> {
        self.installs.iter().find(|i| i.settings == settings)
    }

    /// Notes an install's changes, just before they are written: a file
    /// recorded before keeps its first `before` while nothing else changed
    /// it in between.
    pub fn note_install(
        &mut self,
        targets: &Targets,
        binary: &Path,
        store: &Path,
        plan: &Plan,
        created_dirs: Vec<PathBuf>,
    ) {
        let at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default();
        let position = self
            .installs
            .iter()
            .position(|i| i.settings == targets.settings);
        let entry = match position {
            Some(i) => &mut self.installs[i],
            None => {
                self.installs.push(Installed {
                    settings: targets.settings.clone(),
                    project: targets.project.clone(),
                    binary: binary.to_path_buf(),
                    store: store.to_path_buf(),
                    files: Vec::new(),
                    created_dirs: Vec::new(),
                    at: at.clone(),
                });
                self.installs.last_mut().expect("just pushed")
            }
        };
        entry.binary = binary.to_path_buf();
        entry.store = store.to_path_buf();
        entry.at = at;
        for dir in created_dirs {
            if !entry.created_dirs.contains(&dir) {
                entry.created_dirs.push(dir);
            }
        }
        for change in &plan.changes {
            let after_hash = change.after.as_deref().map(text_hash).unwrap_or_default();
            match entry.files.iter_mut().find(|f| f.path == change.path) {
                Some(file) => {
                    let before_hash = change.before.as_deref().map(text_hash).unwrap_or_default();
                    if before_hash != file.after_hash {
                        file.exact = false;
                    }
                    file.after_hash = after_hash;
                }
                None => entry.files.push(RecordedFile {
                    path: change.path.clone(),
                    before: change.before.clone(),
                    exact: true,
                    after_hash,
                }),
            }
        }
    }

    /// Forgets the install whose hooks are in `settings`.
    pub fn forget(&mut self, settings: &Path) {
        self.installs.retain(|i| i.settings != settings);
    }
}

/// The folders among `paths`' parents that do not exist yet, up to (not
/// including) `stop`, deepest first.
pub fn missing_dirs(paths: &[&Path], stop: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for path in paths {
        for dir in path.ancestors().skip(1) {
            if dir == stop || !dir.starts_with(stop) || dir.exists() {
                break;
            }
            if !out.iter().any(|d: &PathBuf| d == dir) {
                out.push(dir.to_path_buf());
            }
        }
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    out
}

/// What uninstalling from `targets` changes, reading but not writing; with
/// the hooks found per settings file.
pub fn plan(targets: &Targets, record: Option<&Installed>) -> Result<UninstallPlan> {
    let mut plan = Plan::default();
    let mut hooks_removed = Vec::new();
    let recorded = |path: &Path| record.and_then(|r| r.files.iter().find(|f| f.path == path));
    // The text an unchanged recorded file goes back to: Some(before).
    let restore = |path: &Path, text: &Option<String>| -> Option<Option<String>> {
        let file = recorded(path)?;
        let now = text.as_deref()?;
        (file.exact && text_hash(now) == file.after_hash).then(|| file.before.clone())
    };
    // The recorded install's own commands (its binary may have another name).
    let own_commands: Vec<String> = record
        .map(|r| {
            let install = super::claude_code::Install {
                binary: r.binary.clone(),
                store: r.store.clone(),
            };
            HOOKS
                .iter()
                .map(|(_, _, sub, _)| install.hook_command(sub))
                .collect()
        })
        .unwrap_or_default();
    let mut settings_files = vec![(targets.settings.clone(), Part::Hooks)];
    if let Some(legacy) = &targets.legacy_settings {
        settings_files.push((legacy.clone(), Part::LegacyHooks));
    }
    for (path, part) in settings_files {
        let text = read(&path)?;
        if text.is_none() {
            continue;
        }
        // A file teams commit that an earlier release wrote into is only
        // ever cleaned, never rolled back.
        let back = (part == Part::Hooks)
            .then(|| restore(&path, &text))
            .flatten();
        let mut removed = Vec::new();
        let cleaned = merge_json(&path, text.as_deref(), |object, p| {
            removed = remove_hooks(object, p, &own_commands)?;
            Ok(!removed.is_empty())
        })?;
        if removed.is_empty() {
            continue;
        }
        hooks_removed.push((path.clone(), removed));
        push_change(&mut plan, &path, part, text, cleaned, back);
    }
    let mut mcp_files = vec![(targets.mcp.clone(), Part::Mcp, targets.mcp_project.clone())];
    if let Some(legacy) = &targets.legacy_mcp {
        mcp_files.push((legacy.clone(), Part::LegacyMcp, None));
    }
    for (path, part, project) in mcp_files {
        let text = read(&path)?;
        if text.is_none() {
            continue;
        }
        let cleaned = merge_json(&path, text.as_deref(), |object, p| {
            remove_mcp_server(object, p, project.as_deref())
        })?;
        if cleaned.is_none() {
            continue;
        }
        let back = (part == Part::Mcp).then(|| restore(&path, &text)).flatten();
        push_change(&mut plan, &path, part, text, cleaned, back);
    }
    let skill = read(&targets.skill)?;
    if let Some(text) = &skill {
        if is_our_skill(text) || restore(&targets.skill, &skill).is_some() {
            plan.changes.push(FileChange {
                path: targets.skill.clone(),
                part: Part::Skill,
                before: skill.clone(),
                after: None,
            });
        } else {
            plan.notes.push(format!(
                "{}: not the skill knowledge-db installs (changed by hand?): left as it is",
                targets.skill.display()
            ));
        }
    }
    if let Some(project) = &targets.project {
        if let Some((exclude, lines)) = git_exclude_lines(project, targets) {
            let text = read(&exclude)?;
            if let Some(now) = &text {
                let kept: Vec<&str> = now
                    .lines()
                    .filter(|l| *l != GIT_EXCLUDE_MARK && !lines.iter().any(|x| x == l.trim()))
                    .collect();
                if kept.len() != now.lines().count() {
                    let after = match restore(&exclude, &text) {
                        Some(before) => before,
                        None => Some(kept.iter().map(|l| format!("{l}\n")).collect()),
                    };
                    plan.changes.push(FileChange {
                        path: exclude,
                        part: Part::GitExclude,
                        before: text.clone(),
                        after,
                    });
                }
            }
        }
    }
    Ok(UninstallPlan {
        plan,
        hooks_removed,
        created_dirs: record.map(|r| r.created_dirs.clone()).unwrap_or_default(),
    })
}

fn push_change(
    plan: &mut Plan,
    path: &Path,
    part: Part,
    before: Option<String>,
    cleaned: Option<String>,
    restore: Option<Option<String>>,
) {
    match restore {
        // Nothing else changed it since the install: back as it was.
        Some(original) => plan.changes.push(FileChange {
            path: path.to_path_buf(),
            part,
            before,
            after: original,
        }),
        None => plan.consider_removal(path, part, before, cleaned),
    }
}

/// An uninstall's changes.
#[derive(Debug, Clone)]
pub struct UninstallPlan {
    /// The file changes (a `None` after removes the file).
    pub plan: Plan,
    /// The hooks taken out, per settings file.
    pub hooks_removed: Vec<(PathBuf, Vec<&'static str>)>,
    /// Folders the install created: removed when empty after the changes.
    pub created_dirs: Vec<PathBuf>,
}

impl UninstallPlan {
    /// Writes the changes, then removes the install's folders left empty.
    pub fn apply(&self) -> Result<()> {
        self.plan.apply()?;
        for change in &self.plan.changes {
            if change.part == Part::Skill {
                if let Some(dir) = change.path.parent() {
                    let _ = fs::remove_dir(dir);
                }
            }
        }
        for dir in &self.created_dirs {
            // Only when empty: anything put there since stays.
            let _ = fs::remove_dir(dir);
        }
        Ok(())
    }
}

/// A store's size on disk and record count, for the uninstall's last words.
pub fn store_summary(store: &Path) -> Option<(u64, u64)> {
    if !store.join("config.toml").is_file() {
        return None;
    }
    let bytes = dir_bytes(store);
    let records = crate::store::Store::open(store)
        .ok()
        .and_then(|s| s.l2_stats().ok())
        .map_or(0, |s| s.records);
    Some((bytes, records))
}

fn dir_bytes(dir: &Path) -> u64 {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remove_hooks_takes_ours_and_keeps_the_rest() {
        let mut settings = json!({"model": "opus", "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "/x/knowledge-db --store /s hook stop"}]}],
            "PostToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"},
                                              {"type": "command", "command": "knowledge-db hook post-tool-use"}]}]
        }});
        let object = settings.as_object_mut().expect("object");
        let removed = remove_hooks(object, Path::new("s.json"), &[]).expect("removed");
        assert_eq!(removed, vec!["post-tool-use", "stop"]);
        assert_eq!(
            settings,
            json!({"model": "opus", "hooks": {"PostToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}]}})
        );
        let mut only_ours = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "knowledge-db hook stop"}]}]}});
        remove_hooks(
            only_ours.as_object_mut().expect("object"),
            Path::new("s"),
            &[],
        )
        .expect("ok");
        assert_eq!(only_ours, json!({}));
        assert!(super::super::claude_code::is_empty_config(&only_ours));
    }

    #[test]
    fn remove_mcp_server_leaves_a_users_own_entry() {
        let mut config = json!({"projects": {"/p": {"mcpServers": {
            "knowledge-db": {"type": "stdio", "command": "/b/knowledge-db", "args": ["--store", "/s", "mcp"]},
            "other": {"command": "x"}}}}});
        let object = config.as_object_mut().expect("object");
        assert!(remove_mcp_server(object, Path::new("c"), Some("/p")).expect("ok"));
        assert_eq!(
            config["projects"]["/p"]["mcpServers"],
            json!({"other": {"command": "x"}})
        );
        let mut mine =
            json!({"mcpServers": {"knowledge-db": {"command": "my-wrapper", "args": []}}});
        let object = mine.as_object_mut().expect("object");
        assert!(!remove_mcp_server(object, Path::new("c"), None).expect("ok"));
    }

    #[test]
    fn the_skill_is_recognised_whatever_its_commands() {
        let install = super::super::claude_code::Install {
            binary: PathBuf::from("/opt/knowledge-db"),
            store: PathBuf::from("/s"),
        };
        assert!(is_our_skill(&install.skill()));
        assert!(is_our_skill(super::super::claude_code::SKILL_MD));
        assert!(!is_our_skill("---\nname: knowledge-db\n---\nmine\n"));
    }

    #[test]
    fn missing_dirs_are_listed_deepest_first_up_to_the_stop() {
        let root = tempfile::tempdir().expect("tempdir");
        let skill = root.path().join(".claude/skills/knowledge-db/SKILL.md");
        let settings = root.path().join(".claude/settings.local.json");
        let dirs = missing_dirs(&[&skill, &settings], root.path());
        assert_eq!(
            dirs,
            vec![
                root.path().join(".claude/skills/knowledge-db"),
                root.path().join(".claude/skills"),
                root.path().join(".claude"),
            ]
        );
    }
}
