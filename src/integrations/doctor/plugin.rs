//! `hook doctor` when the knowledge-db plugin is what runs the hooks: its
//! folder and launcher, each of its hooks run as Claude Code runs them
//! (`${CLAUDE_PLUGIN_ROOT}` expanded), its skill and its MCP server, then the
//! store its hooks use, the model and the log.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::{
    check_hook_runs, check_hooks_log, check_mcp_entry, check_model, check_store, check_sync,
    check_upkeep, Checks, DoctorReport, Outcome,
};
use crate::integrations::claude_code::{shell_words, HOOKS, NAME};
use crate::integrations::registration::{PluginState, Registrations};
use crate::store::Store;

/// The checks of the plugin, when it is what runs the hooks: its folder,
/// each of its hooks run as Claude Code runs them (`CLAUDE_PLUGIN_ROOT` set),
/// its skill and its MCP server, then the store, the model and the log.
pub(super) fn doctor_plugin(
    plugin: &PluginState,
    registrations: &Registrations,
    store: &Path,
) -> DoctorReport {
    let mut checks = Checks(Vec::new());
    checks.ok("installed", registrations.describe());
    let Some(root) = plugin
        .root()
        .filter(|r| r.join("hooks").join("hooks.json").is_file())
    else {
        checks.fail(
            "plugin",
            format!(
                "{} is enabled but not installed (no hooks/hooks.json)",
                plugin.id
            ),
            "`claude plugin install knowledge-db@knowledge-db`",
        );
        return DoctorReport {
            ok: false,
            store: Some(store.to_path_buf()),
            checks: checks.0,
        };
    };
    checks.ok("plugin", format!("{} at {}", plugin.id, root.display()));
    // The launcher must find a binary, or every hook quietly does nothing.
    let launcher = root.join("bin").join(NAME);
    match Command::new(&launcher).arg("--version").output() {
        Ok(out) if out.status.success() && out.stdout.starts_with(b"knowledge-db") => checks.ok(
            "binary",
            format!(
                "{} runs {}",
                launcher.display(),
                String::from_utf8_lossy(&out.stdout).trim()
            ),
        ),
        Ok(out) => checks.fail(
            "binary",
            format!(
                "{} finds no knowledge-db binary: {}",
                launcher.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
            "put knowledge-db on the PATH Claude Code starts with (pipx install knowledge-db), \
             or set KNOWLEDGE_DB_BIN",
        ),
        Err(e) => checks.fail(
            "binary",
            format!("cannot run {}: {e}", launcher.display()),
            "`claude plugin update knowledge-db@knowledge-db`",
        ),
    }
    let hooks = std::fs::read_to_string(root.join("hooks").join("hooks.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .unwrap_or_default();
    let root_text = root.to_string_lossy();
    for (event, _, subcommand, _) in HOOKS {
        let command = hooks["hooks"][event].as_array().and_then(|groups| {
            groups.iter().find_map(|g| {
                g["hooks"].as_array()?.iter().find_map(|h| {
                    let c = h["command"].as_str()?;
                    c.contains(&format!("hook {subcommand}"))
                        .then(|| c.to_string())
                })
            })
        });
        let Some(command) = command else {
            checks.fail(
                &format!("hook {subcommand}"),
                format!("the plugin registers no {event} hook"),
                "`claude plugin update knowledge-db@knowledge-db`",
            );
            continue;
        };
        let words = shell_words(&command.replace("${CLAUDE_PLUGIN_ROOT}", &root_text));
        check_hook_runs(event, &words, store, &mut checks);
    }
    // After the hooks: the first of them creates the store.
    check_store(store, &mut checks);
    let skill = root.join("skills").join(NAME).join("SKILL.md");
    match std::fs::read_to_string(&skill) {
        Ok(text) if crate::integrations::uninstall::is_our_skill(&text) => checks.ok(
            "skill",
            format!(
                "{} (runs `knowledge-db` through the plugin's bin/)",
                skill.display()
            ),
        ),
        _ => checks.fail(
            "skill",
            format!("{} is missing or not knowledge-db's", skill.display()),
            "`claude plugin update knowledge-db@knowledge-db`",
        ),
    }
    let entry = std::fs::read_to_string(root.join(".mcp.json"))
        .ok()
        .and_then(|t| {
            serde_json::from_str::<Value>(&t.replace("${CLAUDE_PLUGIN_ROOT}", &root_text)).ok()
        })
        .and_then(|v| v["mcpServers"][NAME].as_object().cloned());
    match entry {
        Some(entry) => check_mcp_entry(&entry, &[("CLAUDE_PLUGIN_ROOT", &root)], &mut checks),
        None => checks.fail(
            "mcp",
            format!("{}: no mcpServers.{NAME}", root.join(".mcp.json").display()),
            "`claude plugin update knowledge-db@knowledge-db`",
        ),
    }
    check_model(&mut checks);
    if let Ok(opened) = Store::open(store) {
        check_upkeep(&opened, &mut checks);
        check_sync(&opened, &mut checks);
    }
    check_hooks_log(store, &mut checks);
    DoctorReport {
        ok: checks.0.iter().all(|c| c.outcome != Outcome::Fail),
        store: Some(store.to_path_buf()),
        checks: checks.0,
    }
}
