//! Where knowledge-db is registered in Claude Code, and which registration is
//! active.
//!
//! knowledge-db reaches Claude Code in one of two ways:
//! - **`hook install`** writes the six hooks into a settings file (a
//!   project's `.claude/settings.local.json`, or `.claude/settings.json` as
//!   releases before it did, or the user's `~/.claude/settings.json`), the
//!   MCP server into `~/.claude.json` or `.mcp.json`, and the skill;
//! - **the plugin** (`plugin/` of the repository, a Claude Code marketplace)
//!   carries the same hooks in its `hooks/hooks.json`, run through its
//!   `bin/knowledge-db` launcher, which sets [`VIA_PLUGIN_ENV`].
//!
//! Both may be present at once (a user who ran `hook install` and later
//! installed the plugin). No hook may then run twice, so the rule is: **a
//! hook that `hook install` registered for the session's project wins**; the
//! plugin's copy of the same hook sees it ([`install_hook_for`]) and does
//! nothing. `hook install` itself refuses to register next to an enabled
//! plugin, and `hook doctor` names the active one ([`Registrations`]).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::claude_code::{is_our_hook, HOOKS, NAME};

/// Set (to `1`) by the plugin's launcher for every command it runs.
pub const VIA_PLUGIN_ENV: &str = "KNOWLEDGE_DB_VIA_PLUGIN";

/// Whether this process was started by the plugin's launcher.
pub fn via_plugin() -> bool {
    std::env::var_os(VIA_PLUGIN_ENV).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Claude Code's configuration folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn config_dir() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home().map(|h| h.join(".claude")),
    }
}

fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(dirs::home_dir)
}

/// The settings files Claude Code reads for a session in `project` (user,
/// then the project's shared and local files), whether they exist or not.
pub fn settings_files(project: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(config) = config_dir() {
        files.push(config.join("settings.json"));
        files.push(config.join("settings.local.json"));
    }
    if let Some(project) = project {
        files.push(project.join(".claude").join("settings.json"));
        files.push(project.join(".claude").join("settings.local.json"));
    }
    files
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// The hook subcommands (`post-tool-use`, …) a settings value registers.
pub fn hooks_in(settings: &Value) -> Vec<&'static str> {
    HOOKS
        .iter()
        .filter(|(event, _, subcommand, _)| {
            settings["hooks"][*event].as_array().is_some_and(|groups| {
                groups.iter().any(|group| {
                    group["hooks"].as_array().is_some_and(|hooks| {
                        hooks.iter().any(|h| {
                            h["command"]
                                .as_str()
                                .is_some_and(|c| is_our_hook(c, subcommand))
                        })
                    })
                })
            })
        })
        .map(|(_, _, subcommand, _)| *subcommand)
        .collect()
}

/// The settings file in which `hook install` registered the hook
/// `subcommand` for a session in `project`, if any, and its command can run
/// (a command naming a binary by a path that no longer exists fails in
/// Claude Code: the plugin's hook then does the work).
pub fn install_hook_for(project: Option<&Path>, subcommand: &str) -> Option<PathBuf> {
    settings_files(project).into_iter().find(|file| {
        read_json(file).is_some_and(|v| {
            commands_of(&v, subcommand).iter().any(|command| {
                let words = super::claude_code::shell_words(command);
                words.first().is_some_and(|binary| {
                    let path = Path::new(binary);
                    !path.is_absolute() || path.is_file()
                })
            })
        })
    })
}

/// The commands of `settings` that run knowledge-db's `hook <subcommand>`.
fn commands_of(settings: &Value, subcommand: &str) -> Vec<String> {
    let Some((event, ..)) = HOOKS.iter().find(|(_, _, s, _)| *s == subcommand) else {
        return Vec::new();
    };
    settings["hooks"][*event]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|group| group["hooks"].as_array())
        .flatten()
        .filter_map(|h| h["command"].as_str())
        .filter(|c| is_our_hook(c, subcommand))
        .map(str::to_string)
        .collect()
}

/// The project a hook runs for: `$CLAUDE_PROJECT_DIR` (Claude Code sets it
/// for hooks), else the session's `cwd`.
pub fn hook_project(cwd: Option<&Path>) -> Option<PathBuf> {
    std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| cwd.map(Path::to_path_buf))
}

/// Whether a hook the plugin runs should do nothing, because `hook install`
/// registered the same hook for this session (which then runs it): the
/// settings file that did, or `None` (the plugin's hook runs).
pub fn plugin_defers(cwd: Option<&Path>, subcommand: &str) -> Option<PathBuf> {
    if !via_plugin() {
        return None;
    }
    install_hook_for(hook_project(cwd).as_deref(), subcommand)
}

/// The knowledge-db plugin as Claude Code has it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct PluginState {
    /// Its id, `knowledge-db@<marketplace>`.
    pub id: String,
    /// The settings files whose `enabledPlugins` turn it on.
    pub enabled_in: Vec<PathBuf>,
    /// The settings files whose `enabledPlugins` turn it off.
    pub disabled_in: Vec<PathBuf>,
    /// Where Claude Code runs it from (`installed_plugins.json`), when installed.
    pub install_path: Option<PathBuf>,
    /// Its version, when installed.
    pub version: Option<String>,
}

impl PluginState {
    /// Whether Claude Code loads it for a session in the project looked at.
    pub fn active(&self) -> bool {
        !self.enabled_in.is_empty() && self.disabled_in.is_empty()
    }

    /// The folder its hooks and MCP server run from: the installed copy, or
    /// (a marketplace added from a folder) that folder's `plugin/`.
    pub fn root(&self) -> Option<PathBuf> {
        self.install_path.clone()
    }
}

/// The knowledge-db plugin, if Claude Code knows of it (installed, or named
/// in `enabledPlugins`) for a session in `project`.
pub fn plugin(project: Option<&Path>) -> Option<PluginState> {
    let mut state: Option<PluginState> = None;
    for file in settings_files(project) {
        let Some(settings) = read_json(&file) else {
            continue;
        };
        let Some(enabled) = settings["enabledPlugins"].as_object() else {
            continue;
        };
        for (id, on) in enabled {
            if !is_plugin_id(id) {
                continue;
            }
            let entry = state.get_or_insert_with(|| PluginState {
                id: id.clone(),
                enabled_in: Vec::new(),
                disabled_in: Vec::new(),
                install_path: None,
                version: None,
            });
            if on.as_bool() == Some(true) {
                entry.enabled_in.push(file.clone());
            } else {
                entry.disabled_in.push(file.clone());
            }
        }
    }
    let installed = config_dir()
        .map(|c| c.join("plugins").join("installed_plugins.json"))
        .and_then(|p| read_json(&p));
    if let Some(plugins) = installed.as_ref().and_then(|v| v["plugins"].as_object()) {
        for (id, installs) in plugins {
            if !is_plugin_id(id) {
                continue;
            }
            let entry = state.get_or_insert_with(|| PluginState {
                id: id.clone(),
                enabled_in: Vec::new(),
                disabled_in: Vec::new(),
                install_path: None,
                version: None,
            });
            // A project-scoped install applies to its project only.
            let applies = |install: &&Value| match install["projectPath"].as_str() {
                Some(path) => project.is_some_and(|p| same_dir(p, Path::new(path))),
                None => true,
            };
            if let Some(install) = installs.as_array().and_then(|a| a.iter().find(applies)) {
                entry.install_path = install["installPath"].as_str().map(PathBuf::from);
                entry.version = install["version"].as_str().map(str::to_string);
            }
        }
    }
    state
}

fn is_plugin_id(id: &str) -> bool {
    id.split_once('@').is_some_and(|(name, _)| name == NAME)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// What is registered for a session in a project: the `hook install`
/// entries per settings file, and the plugin.
#[derive(Debug, Clone, Serialize)]
pub struct Registrations {
    /// Settings files holding `hook install` entries, with the hooks each holds.
    pub install: Vec<(PathBuf, Vec<&'static str>)>,
    /// The plugin, if Claude Code knows of it.
    pub plugin: Option<PluginState>,
}

impl Registrations {
    /// Looks at every settings file of a session in `project` and at the plugin.
    pub fn find(project: Option<&Path>) -> Registrations {
        let install = settings_files(project)
            .into_iter()
            .filter_map(|file| {
                let hooks = hooks_in(&read_json(&file)?);
                (!hooks.is_empty()).then_some((file, hooks))
            })
            .collect();
        Registrations {
            install,
            plugin: plugin(project),
        }
    }

    /// Whether the plugin is loaded for the session.
    pub fn plugin_active(&self) -> bool {
        self.plugin.as_ref().is_some_and(PluginState::active)
    }

    /// One sentence: which registration runs the hooks.
    pub fn describe(&self) -> String {
        let files: Vec<String> = self
            .install
            .iter()
            .map(|(f, hooks)| format!("{} ({} hooks)", f.display(), hooks.len()))
            .collect();
        match (self.install.is_empty(), self.plugin_active()) {
            (true, false) => "nothing is installed: no knowledge-db hook in any settings file, \
                              and the knowledge-db plugin is not enabled"
                .to_string(),
            (false, false) => format!("active: `hook install`, in {}", files.join(", ")),
            (true, true) => format!(
                "active: the plugin {}{}",
                self.plugin_label(),
                self.plugin
                    .as_ref()
                    .and_then(PluginState::root)
                    .map(|r| format!(", run from {}", r.display()))
                    .unwrap_or_default()
            ),
            (false, true) => format!(
                "active: `hook install`, in {}; the plugin {} is enabled too: its copies of \
                 those hooks step aside (no hook runs twice), but its MCP server and skill load beside them",
                files.join(", "),
                self.plugin_label()
            ),
        }
    }

    fn plugin_label(&self) -> String {
        match &self.plugin {
            Some(p) => match &p.version {
                Some(v) => format!("{} {v}", p.id),
                None => p.id.clone(),
            },
            None => NAME.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_in_finds_ours_by_subcommand_whatever_the_binary_path() {
        let settings = json!({"hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "/x/knowledge-db --store /s hook stop"}]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "'/a b/knowledge-db' hook user-prompt-submit"}]}]
        }});
        assert_eq!(hooks_in(&settings), vec!["stop", "user-prompt-submit"]);
        assert!(hooks_in(&json!({})).is_empty());
        assert!(hooks_in(&json!({"hooks": []})).is_empty());
    }

    #[test]
    fn a_hook_whose_binary_is_gone_does_not_make_the_plugin_step_aside() {
        let dir = tempfile::tempdir().expect("tmp");
        let settings = dir.path().join(".claude").join("settings.local.json");
        std::fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
        let write = |binary: &str| {
            let value = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
                "command": format!("{binary} --store /s hook stop")}]}]}});
            std::fs::write(&settings, value.to_string()).expect("write");
        };
        let binary = dir.path().join("knowledge-db");
        std::fs::write(&binary, "").expect("binary");
        write(&binary.to_string_lossy());
        assert_eq!(
            install_hook_for(Some(dir.path()), "stop"),
            Some(settings.clone())
        );
        assert_eq!(install_hook_for(Some(dir.path()), "session-end"), None);
        write("/gone/knowledge-db");
        assert_eq!(install_hook_for(Some(dir.path()), "stop"), None);
        write("knowledge-db");
        assert_eq!(install_hook_for(Some(dir.path()), "stop"), Some(settings));
    }

    #[test]
    fn plugin_ids_are_ours_in_any_marketplace() {
        assert!(is_plugin_id("knowledge-db@knowledge-db"));
        assert!(is_plugin_id("knowledge-db@team-tools"));
        assert!(!is_plugin_id("knowledge-db-extra@x"));
        assert!(!is_plugin_id("knowledge-db"));
    }
}
