//! The manifest: what this store last knew of each id, as sync left it.
//!
//! Sync is state-based: it compares the store as it is now with the
//! manifest, so it needs nothing from the store's write paths (add, ingest,
//! forget, archive, the hooks) and misses no change however it was made. An
//! entry per id says which version of the record the store held when sync
//! last looked (`local`, the store's own version hash), whether that record
//! is in Postgres (`Synced`: its content version, who wrote it and when), was
//! deleted everywhere (`Gone`: a tombstone pushed or pulled), or stays on this
//! machine (`Local`: outside the shared scopes, or a pruned copy).
//!
//! On disk, `<store>/sync/manifest.jsonl` is an append-only log: one JSON line
//! per change, the last line of an id wins, and every batch of lines is
//! fsynced before sync moves on (before the pull cursor that depends on it
//! is saved). A process killed while appending leaves at most one torn last
//! line, which is ignored: the change it held is found again by the next
//! diff. When the log holds more than twice the lines it has ids, it is
//! rewritten whole (a temporary file renamed over it).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What sync last knew of one id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "s", rename_all = "lowercase")]
pub enum Entry {
    /// In Postgres as `version`, and held here as the local version `local`.
    Synced {
        /// The store's version hash of the record as held here.
        #[serde(with = "hex")]
        local: u64,
        /// The content version in Postgres (see `super::content_version`).
        #[serde(with = "hex")]
        version: u64,
        /// Who wrote that version.
        origin: String,
        /// When it was written, Unix milliseconds.
        written_ms: i64,
    },
    /// Deleted everywhere: a tombstone pushed or pulled.
    Gone {
        /// Who deleted it.
        origin: String,
        /// When, Unix milliseconds.
        written_ms: i64,
    },
    /// Held here as `local` and not shared (outside the shared scopes, or a
    /// pruned copy that stays on this machine).
    Local {
        /// The store's version hash of the record as held here.
        #[serde(with = "hex")]
        local: u64,
    },
}

impl Entry {
    /// The local version hash this entry saw, if the record was held here.
    pub fn local(&self) -> Option<u64> {
        match self {
            Entry::Synced { local, .. } | Entry::Local { local } => Some(*local),
            Entry::Gone { .. } => None,
        }
    }

    /// The version's `(written_ms, origin)`: the order conflicts are settled by.
    pub fn stamp(&self) -> Option<(i64, &str)> {
        match self {
            Entry::Synced {
                written_ms, origin, ..
            }
            | Entry::Gone { written_ms, origin } => Some((*written_ms, origin.as_str())),
            Entry::Local { .. } => None,
        }
    }
}

/// One line of the log.
#[derive(Serialize, Deserialize)]
struct Line {
    id: String,
    #[serde(flatten)]
    entry: Entry,
}

/// The manifest, loaded in memory, with its log file.
#[derive(Debug)]
pub struct Manifest {
    path: PathBuf,
    entries: HashMap<String, Entry>,
    lines: usize,
    /// Which shared scopes the `Local` entries were judged under: when the
    /// scopes change, records judged unshared are judged again.
    scopes: String,
}

impl Manifest {
    /// Reads `<dir>/manifest.jsonl` (an empty manifest when there is none).
    /// `scopes` names the shared scopes in force: `Local` entries judged
    /// under other scopes are dropped, so their records are judged again.
    pub fn load(dir: &Path, scopes: &str) -> Result<Manifest> {
        let path = dir.join("manifest.jsonl");
        let mut manifest = Manifest {
            path: path.clone(),
            entries: HashMap::new(),
            lines: 0,
            scopes: scopes.to_string(),
        };
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(manifest),
            Err(e) => return Err(Error::io(&path, e)),
        };
        let mut judged_under = String::new();
        for (n, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|e| Error::io(&path, e))?;
            if n == 0 {
                if let Some(rest) = line.strip_prefix("#scopes ") {
                    judged_under = rest.to_string();
                    continue;
                }
            }
            // A torn last line (a kill while appending) is skipped: the diff
            // finds its change again.
            let Ok(Line { id, entry }) = serde_json::from_str::<Line>(&line) else {
                continue;
            };
            manifest.entries.insert(id, entry);
            manifest.lines += 1;
        }
        if judged_under != scopes {
            manifest
                .entries
                .retain(|_, entry| !matches!(entry, Entry::Local { .. }));
            manifest.compact()?;
        }
        Ok(manifest)
    }

    /// The entry of `id`.
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.get(id)
    }

    /// Every entry.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.entries.iter()
    }

    /// How many ids it knows.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it knows no id.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records `changes` durably (appended and fsynced) and in memory.
    pub fn record(&mut self, changes: Vec<(String, Entry)>) -> Result<()> {
        let changes: Vec<(String, Entry)> = changes
            .into_iter()
            .filter(|(id, entry)| self.entries.get(id) != Some(entry))
            .collect();
        if changes.is_empty() {
            return Ok(());
        }
        if !self.path.exists() {
            self.compact()?;
        }
        let mut bytes = Vec::new();
        for (id, entry) in &changes {
            let line = serde_json::to_string(&Line {
                id: id.clone(),
                entry: entry.clone(),
            })
            .map_err(|e| Error::io(&self.path, e.into()))?;
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(|e| Error::io(&self.path, e))?;
        // A torn line left by a kill must not swallow the first new one.
        file.write_all(b"\n")
            .and_then(|()| file.write_all(&bytes))
            .and_then(|()| file.sync_data())
            .map_err(|e| Error::io(&self.path, e))?;
        self.lines += changes.len();
        for (id, entry) in changes {
            self.entries.insert(id, entry);
        }
        if self.lines > 2 * self.entries.len() + 1000 {
            self.compact()?;
        }
        Ok(())
    }

    /// Rewrites the log with one line per id (atomically and durably).
    fn compact(&mut self) -> Result<()> {
        let mut bytes = format!("#scopes {}\n", self.scopes).into_bytes();
        let mut ids: Vec<&String> = self.entries.keys().collect();
        ids.sort();
        for id in ids {
            let line = serde_json::to_string(&Line {
                id: id.clone(),
                entry: self.entries[id].clone(),
            })
            .map_err(|e| Error::io(&self.path, e.into()))?;
            bytes.extend_from_slice(line.as_bytes());
            bytes.push(b'\n');
        }
        crate::files::replace(&self.path, &bytes, crate::files::Durability::Durable)?;
        self.lines = self.entries.len();
        Ok(())
    }
}

/// u64 hashes as 16 hex digits (JSON numbers lose precision past 2^53).
mod hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn synced(local: u64) -> Entry {
        Entry::Synced {
            local,
            version: local ^ 1,
            origin: "a".into(),
            written_ms: 5,
        }
    }

    #[test]
    fn last_line_wins_and_survives_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::load(dir.path(), "ns:team").unwrap();
        m.record(vec![
            ("x".into(), synced(1)),
            ("y".into(), Entry::Local { local: 2 }),
        ])
        .unwrap();
        m.record(vec![(
            "x".into(),
            Entry::Gone {
                origin: "b".into(),
                written_ms: 9,
            },
        )])
        .unwrap();
        let again = Manifest::load(dir.path(), "ns:team").unwrap();
        assert_eq!(again.get("x").unwrap().local(), None);
        assert_eq!(again.get("y"), Some(&Entry::Local { local: 2 }));
    }

    #[test]
    fn a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::load(dir.path(), "").unwrap();
        m.record(vec![("x".into(), synced(u64::MAX))]).unwrap();
        let path = dir.path().join("manifest.jsonl");
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"{\"id\":\"y\",\"s\":\"syn").unwrap();
        let mut again = Manifest::load(dir.path(), "").unwrap();
        assert_eq!(again.get("x"), Some(&synced(u64::MAX)));
        assert!(again.get("y").is_none());
        again.record(vec![("z".into(), synced(3))]).unwrap();
        let third = Manifest::load(dir.path(), "").unwrap();
        assert_eq!(third.get("z"), Some(&synced(3)));
    }

    #[test]
    fn other_scopes_forget_what_was_judged_unshared() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::load(dir.path(), "ns:a").unwrap();
        m.record(vec![
            ("x".into(), synced(1)),
            ("y".into(), Entry::Local { local: 2 }),
        ])
        .unwrap();
        let again = Manifest::load(dir.path(), "ns:a,ns:b").unwrap();
        assert!(again.get("y").is_none());
        assert_eq!(again.get("x"), Some(&synced(1)));
        let third = Manifest::load(dir.path(), "ns:a,ns:b").unwrap();
        assert_eq!(third.len(), 1);
    }

    #[test]
    fn compacts_a_long_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::load(dir.path(), "").unwrap();
        for round in 0..700u64 {
            m.record(vec![
                ("x".into(), synced(round)),
                ("y".into(), synced(round)),
            ])
            .unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join("manifest.jsonl")).unwrap();
        assert!(text.lines().count() < 1100, "{}", text.lines().count());
        let again = Manifest::load(dir.path(), "").unwrap();
        assert_eq!(again.get("y"), Some(&synced(699)));
    }
}
