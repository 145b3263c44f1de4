//! The store's small state files, checked by `verify` and cleared by
//! `repair` when damaged.
//!
//! Beside the indexes a store keeps small JSON files that are caches or
//! positions, each rebuilt or re-read when missing: the hooks' session state,
//! queues and markers (`hooks/`), how far each transcript was read
//! (`ingest/`), the upkeep's status, the sync's position, the retention
//! schedule, the last verify report. A damaged one (cut short, emptied,
//! overwritten) is named by `verify`; `repair` removes it, and what that
//! costs is said: the hooks rebuild a session's state from its transcript, a
//! transcript whose position is gone is read whole by the next ingest
//! (nothing is stored twice), the sync pulls from its start again (records
//! are matched by id and version). No record lives in these files.

use std::path::{Path, PathBuf};

use crate::check::Check;

/// Folders (relative to the store) whose `*.json` files are state, searched
/// down to two levels below them.
const STATE_DIRS: &[&str] = &["hooks", "ingest", "upkeep", "sync"];

/// Single state files (relative to the store).
const STATE_FILES: &[&str] = &["archive/maintain.json", "verify.json"];

/// The check of every state file: each must be readable JSON.
pub fn check(root: &Path) -> Check {
    let mut damaged: Vec<(PathBuf, String)> = Vec::new();
    for file in state_files(root) {
        match std::fs::read(&file) {
            Ok(bytes) => {
                if let Err(e) = serde_json::from_slice::<serde_json::Value>(&bytes) {
                    let what = if bytes.is_empty() {
                        "is empty".to_string()
                    } else {
                        format!("is not valid JSON (line {}: {e})", e.line())
                    };
                    damaged.push((file, what));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => damaged.push((file, format!("cannot be read: {e}"))),
        }
    }
    let rules = root.join("embedding-rules");
    let rules_note = match std::fs::read_to_string(&rules) {
        Ok(text) if text.trim().parse::<u32>().is_err() => Some(format!(
            "{} is not a number: the vectors are taken as made under the first embedding-text \
             rules, and the upkeep makes them again",
            rules.display()
        )),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Some(format!("{} cannot be read: {e}", rules.display()))
        }
        _ => None,
    };
    // `init` and every settings change write config.toml whole, ending with
    // a line break: one without it was most likely cut short (a value may be
    // cut too: `30.0` becoming `3` is still a valid setting).
    let config = root.join("config.toml");
    let config_note = std::fs::read(&config)
        .ok()
        .filter(|bytes| !bytes.is_empty() && !bytes.ends_with(b"\n"))
        .map(|_| {
            format!(
                "{} does not end with a line break: it may have been cut short (check its last setting)",
                config.display()
            )
        });
    let rules_note = match (rules_note, config_note) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    };
    let ok = damaged.is_empty();
    let mut detail = if ok {
        "every state file (hooks, ingest positions, upkeep, sync, retention) is readable"
            .to_string()
    } else {
        format!(
            "{} damaged: {}; `knowledge-db repair` removes them (no record is in them: the hooks \
             rebuild a session's state from its transcript, the next ingest reads a transcript \
             whole and stores nothing twice, the sync and the retention start over)",
            damaged.len(),
            damaged
                .iter()
                .map(|(p, what)| format!("{} {what}", p.display()))
                .collect::<Vec<_>>()
                .join("; ")
        )
    };
    if let Some(note) = &rules_note {
        detail.push_str("; ");
        detail.push_str(note);
    }
    Check {
        warning: ok && rules_note.is_some(),
        name: "state files",
        ok,
        detail,
        rebuildable: damaged.into_iter().map(|(p, _)| p).collect(),
    }
}

fn state_files(root: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = STATE_FILES.iter().map(|f| root.join(f)).collect();
    for dir in STATE_DIRS {
        collect_json(&root.join(dir), 2, &mut found);
    }
    found.sort();
    found
}

fn collect_json(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth > 0 {
            collect_json(&path, depth - 1, out);
        } else if kind.is_file() && path.extension().is_some_and(|x| x == "json") {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_state_file_is_named_and_rebuildable() {
        let root = tempfile::tempdir().unwrap();
        let hooks = root.path().join("hooks").join("context_queue");
        std::fs::create_dir_all(&hooks).unwrap();
        std::fs::write(root.path().join("hooks").join("s1.json"), b"{\"a\": 1}").unwrap();
        assert!(check(root.path()).ok);
        std::fs::write(hooks.join("s1_pending.json"), b"{\"a\": ").unwrap();
        std::fs::write(root.path().join("verify.json"), b"").unwrap();
        let found = check(root.path());
        assert!(!found.ok);
        assert!(
            found.detail.contains("s1_pending.json is not valid JSON"),
            "{}",
            found.detail
        );
        assert!(
            found.detail.contains("verify.json is empty"),
            "{}",
            found.detail
        );
        assert_eq!(found.rebuildable.len(), 2);
    }
}
