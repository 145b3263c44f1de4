//! `config.toml`: the store's format version, limits and ranking weights.
//!
//! Written by `init`, read on every open. Missing keys take their defaults, so a
//! store written by an older release keeps working when a setting is added.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The on-disk format this build reads and writes. Bump it when the schema or
/// layout changes incompatibly.
pub const FORMAT_VERSION: u32 = 3;

/// The store's settings, as in `config.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The on-disk format the store was written in ([`FORMAT_VERSION`] for new stores).
    pub format_version: u32,
    /// When the store was created (RFC 3339); empty in configs that lack it.
    #[serde(default)]
    pub created_at: String,
    /// Size limits and the writer lock's timeout.
    #[serde(default)]
    pub limits: Limits,
    /// BM25 field boosts and common-term handling.
    #[serde(default)]
    pub ranking: Ranking,
    /// When and how records get their vectors.
    #[serde(default)]
    pub embedding: Embedding,
    /// The retention policy: what moves to the archive, and when.
    #[serde(default)]
    pub retention: Retention,
    /// The background upkeep's settings.
    #[serde(default)]
    pub upkeep: Upkeep,
    /// Sync with a team's Postgres (`crate::sync`); off until a URL is set.
    #[serde(default)]
    pub sync: SyncSettings,
    /// Redaction: the user's extra secret patterns and allow-list
    /// (`crate::privacy`); secrets are redacted by default.
    #[serde(default)]
    pub privacy: crate::privacy::PrivacySettings,
}

/// `[sync]`: this store's link to a team's Postgres (see `crate::sync`; the
/// type lives here, beside the other sections, because `sync` reads the store
/// and the store may not name it back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyncSettings {
    /// The server (`postgres://user@host/db?sslmode=require`); empty: none.
    /// `--url` and `KNOWLEDGE_DB_SYNC_URL` win over it (the environment keeps
    /// a password out of this file).
    pub url: String,
    /// What this store pushes: namespaces (`team` or `namespace:team`),
    /// projects (`project:/path/to/repo`), or `*` for everything. Empty: push
    /// nothing (pull only).
    pub share: Vec<String>,
    /// What this store pulls: `*` (the default) for every record the server
    /// holds; any list without `*` pulls the projects this store has worked
    /// on, plus the projects (`project:/path`) and namespaces (`NAME`) named
    /// here (`[]`: only the projects worked on).
    pub pull: Vec<String>,
    /// Sync in the background this often (`5m`, `1h`); empty: only when
    /// `knowledge-db sync` runs.
    pub every: String,
    /// The name pulled records carry as their origin elsewhere; empty: this
    /// user's name and this machine's (`user@host`).
    pub origin: String,
    /// The Postgres schema of the tables; empty: the connection's search_path.
    pub schema: String,
    /// Records per push or pull batch (one commit each).
    pub batch: usize,
}

impl Default for SyncSettings {
    fn default() -> Self {
        SyncSettings {
            url: String::new(),
            share: Vec::new(),
            pull: vec!["*".to_string()],
            every: String::new(),
            origin: String::new(),
            schema: String::new(),
            batch: 1000,
        }
    }
}

/// The background upkeep (see `crate::upkeep`): vectors for records written
/// without one, the access-log fold, the retention policy, crash recovery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Upkeep {
    /// Writers start a background worker when work is pending. Off (or
    /// `KNOWLEDGE_DB_UPKEEP=off`): writes apply the retention policy
    /// themselves and `knowledge-db upkeep` (or `embed`) does the rest.
    pub enabled: bool,
    /// Records embedded and committed at a time: a commit every several
    /// seconds, so search sees vectors arrive; 256 per commit took 8% longer
    /// (81.8 s against 77.6 s for 8,065 real messages).
    pub embed_batch: usize,
    /// A backlog of at least this many records without a vector is first
    /// embedded by the int8 copy of the model (`model-int8.ort`, about twice as
    /// fast, cosine about 0.99 to the full vector), so that every record is
    /// searchable by meaning sooner; the same run then replaces those drafts
    /// with the full model's vectors. 0: never draft.
    pub draft_from: u64,
}

impl Default for Upkeep {
    fn default() -> Self {
        Upkeep {
            enabled: true,
            embed_batch: 1024,
            draft_from: 2000,
        }
    }
}

/// When `maintain` moves records down the tiers. Durations: `30m`, `12h`, `7d`, `2w`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retention {
    /// Archive L2 records whose own time is at least this old …
    pub archive_older_than: String,
    /// … and that nobody has read (search, get) or added for this long.
    pub archive_idle_for: String,
    /// Prune archived records to their summaries this long after archiving.
    pub prune_after: String,
    /// Every successful write (`add`, `ingest`, `evict`, `pack`, MCP `memory_add`) runs
    /// the cheap due check of `maintain` and applies the policy when due.
    pub maintain_on_write: bool,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            archive_older_than: "7d".into(),
            archive_idle_for: "14d".into(),
            prune_after: "30d".into(),
            maintain_on_write: true,
        }
    }
}

impl Retention {
    /// The three durations in seconds, or which setting cannot be read.
    pub fn seconds(&self) -> std::result::Result<[i64; 3], String> {
        let read = |name: &str, text: &str| {
            crate::record::time::parse_duration_secs(text).ok_or_else(|| {
                format!("retention.{name} = \"{text}\" is not a duration (e.g. 7d, 12h, 2w)")
            })
        };
        Ok([
            read("archive_older_than", &self.archive_older_than)?,
            read("archive_idle_for", &self.archive_idle_for)?,
            read("prune_after", &self.prune_after)?,
        ])
    }
}

/// When records get their vectors, and when a segment gets an HNSW graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Embedding {
    /// `now`: `add` embeds before it returns; `later`: `add` writes for BM25 at
    /// once and `knowledge-db embed` fills the vectors in (hooks that must not wait).
    pub on_add: EmbedOnAdd,
    /// Segments with at least this many vectors get an HNSW graph; smaller ones
    /// are scanned exactly. `KNOWLEDGE_DB_HNSW_MIN_ROWS` overrides it.
    pub graph_min_rows: u32,
    /// With `on_add = "now"`, `ingest` embeds inline up to this many records;
    /// a larger batch (a whole history) is BM25-searchable at once and the
    /// background upkeep adds its vectors, drafts first. `--embed now` always
    /// embeds inline.
    pub ingest_inline_max: usize,
}

impl Default for Embedding {
    fn default() -> Self {
        Embedding {
            on_add: EmbedOnAdd::Now,
            graph_min_rows: 20_000,
            ingest_inline_max: 1_000,
        }
    }
}

impl Embedding {
    /// The graph threshold in force: the environment's override, else the setting.
    pub fn graph_min_rows(&self) -> u32 {
        std::env::var("KNOWLEDGE_DB_HNSW_MIN_ROWS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(self.graph_min_rows)
    }
}

/// See [`Embedding::on_add`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedOnAdd {
    /// `add` embeds before it returns.
    Now,
    /// `add` writes without vectors; they are filled in afterwards.
    Later,
}

/// Size limits and the writer lock's timeout (see `docs/reliability.md` for
/// what a user sees when one is hit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Largest accepted record, in bytes of JSON (also the longest line of a
    /// JSONL file of records).
    pub max_record_bytes: usize,
    /// Longest accepted query, in bytes.
    pub max_query_bytes: usize,
    /// How long a writer waits for another writer to finish, in seconds.
    pub lock_timeout_secs: f64,
    /// Largest file read whole: a transcript (gzipped ones after
    /// decompression, which stops there), a `.json` file of records, a JSON
    /// document on stdin, a QMD markdown file. Decided from the file's size
    /// before reading. JSONL files of records are read line by line and have
    /// no total limit (an export of a large store must load again).
    pub max_file_bytes: u64,
    /// Largest markdown file a QMD collection indexes (and `memory_get {path}`
    /// serves); a larger one is skipped and named in `qmd update`'s report,
    /// the collection's other files are indexed.
    pub max_markdown_bytes: u64,
    /// Longest line the MCP server reads (one JSON-RPC request); a longer one
    /// is answered with error -32600 naming this setting.
    pub max_mcp_request_bytes: usize,
    /// Most records one MCP `memory_add` call may carry.
    pub max_add_records_per_call: usize,
    /// Most bytes of record JSON one MCP `memory_add` call may carry.
    pub max_add_bytes_per_call: usize,
}

/// [`Limits::max_file_bytes`] by default, also for readers without a store.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_record_bytes: 8 * 1024 * 1024,
            max_query_bytes: 64 * 1024,
            lock_timeout_secs: 30.0,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_markdown_bytes: 16 * 1024 * 1024,
            max_mcp_request_bytes: 16 * 1024 * 1024,
            max_add_records_per_call: 1000,
            max_add_bytes_per_call: 16 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// [`Limits::max_markdown_bytes`] as a [`crate::bounded::Limit`].
    pub fn markdown_limit(&self) -> crate::bounded::Limit {
        crate::bounded::Limit {
            bytes: self.max_markdown_bytes,
            setting: "limits.max_markdown_bytes",
        }
    }

    /// [`Limits::max_file_bytes`] as a [`crate::bounded::Limit`].
    pub fn file_limit(&self) -> crate::bounded::Limit {
        crate::bounded::Limit {
            bytes: self.max_file_bytes,
            setting: "limits.max_file_bytes",
        }
    }
}

/// BM25 field boosts. Chosen on `../shared/eval` (see the README's eval table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ranking {
    /// Boost of the title field.
    pub title_boost: f32,
    /// Boost of the content field.
    pub content_boost: f32,
    /// Boost of the decisions field.
    pub decisions_boost: f32,
    /// Boost of the files field.
    pub files_boost: f32,
    /// Boost of the commands field.
    pub commands_boost: f32,
    /// Boost of the errors field.
    pub errors_boost: f32,
    /// A query term in more than this share of the records only adds to the
    /// score of records found by the query's other terms (0.1; 1.0 turns it off).
    pub common_term_share: f64,
    /// ...on stores of at least this many records (20,000).
    pub common_terms_from_records: u64,
    /// English as a background corpus when weighing a query's words: this
    /// many records (0 turns it off), of `english_length` words each. A store
    /// this size or smaller weighs its words mostly as English does; a larger
    /// one mostly by its own counts (see `src/search/english.rs`).
    pub english_docs: f32,
    /// Words in each background record.
    pub english_length: f32,
}

impl Default for Ranking {
    fn default() -> Self {
        Ranking {
            title_boost: 1.0,
            content_boost: 1.0,
            decisions_boost: 1.2,
            files_boost: 0.6,
            commands_boost: 1.0,
            errors_boost: 1.0,
            common_term_share: 0.1,
            common_terms_from_records: 20_000,
            english_docs: ENGLISH_DOCS,
            english_length: ENGLISH_LENGTH,
        }
    }
}

/// `[ranking] english_docs`'s default: see docs/search.md, "English word weights".
pub const ENGLISH_DOCS: f32 = 1000.0;
/// `[ranking] english_length`'s default.
pub const ENGLISH_LENGTH: f32 = 100.0;

impl Ranking {
    /// Boosts in the order of [`crate::index::TEXT_FIELDS`].
    pub fn boosts(&self) -> [f32; 6] {
        [
            self.title_boost,
            self.content_boost,
            self.decisions_boost,
            self.files_boost,
            self.commands_boost,
            self.errors_boost,
        ]
    }
}

impl Config {
    /// The config of a new store created at `created_at` (RFC 3339): this build's format, defaults elsewhere.
    pub fn new(created_at: String) -> Config {
        Config {
            format_version: FORMAT_VERSION,
            created_at,
            limits: Limits::default(),
            ranking: Ranking::default(),
            embedding: Embedding::default(),
            retention: Retention::default(),
            upkeep: Upkeep::default(),
            sync: SyncSettings::default(),
            privacy: Default::default(),
        }
    }

    /// Reads a `config.toml`; missing keys take their defaults.
    pub fn load(path: &Path) -> Result<Config> {
        let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        toml::from_str(&text).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// Writes the config atomically and durably (see [`write_durably`]).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = toml::to_string_pretty(self).map_err(|e| Error::Config {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        write_durably(path, text.as_bytes())
    }
}

/// For `repair`: a `config.toml` that cannot be read as a config (cut short,
/// emptied, overwritten, not UTF-8) or is missing beside a text index is
/// moved aside to `config.toml.damaged-<time>` (kept, never deleted) and a
/// config with the default settings written in its place. Returns where the
/// damaged one is kept (when there was one) and why it could not be read;
/// `None` when the config reads (also one of another format version, which
/// is refused elsewhere, never replaced).
pub fn replace_damaged(root: &Path) -> Result<Option<(Option<std::path::PathBuf>, String)>> {
    let path = root.join("config.toml");
    let why = match Config::load(&path) {
        Ok(_) => return Ok(None),
        Err(Error::Config { message, .. }) => message,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::InvalidData => {
            source.to_string()
        }
        Err(Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound
                && root.join("text").join("meta.json").exists() =>
        {
            "it is missing".to_string()
        }
        Err(e) => return Err(e),
    };
    let kept = if path.exists() {
        let kept = root.join(format!(
            "config.toml.damaged-{}",
            crate::now_rfc3339().replace(':', "")
        ));
        fs::rename(&path, &kept).map_err(|e| Error::io(&path, e))?;
        Some(kept)
    } else {
        None
    };
    Config::new(crate::now_rfc3339()).save(&path)?;
    Ok(Some((kept, why)))
}

/// One table of a store's `config.toml` that belongs to a room above the
/// store (`[hooks]`, `[recall]`), read on its own: its defaults when the file
/// or the table is missing; an error naming the file and table when it does
/// not parse.
pub fn read_section<T: serde::de::DeserializeOwned + Default>(
    store_root: &Path,
    table: &str,
) -> Result<T> {
    let path = store_root.join("config.toml");
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let config_error = |message: String| Error::Config {
        path: path.clone(),
        message,
    };
    let value: toml::Table = toml::from_str(&text).map_err(|e| config_error(e.to_string()))?;
    match value.get(table) {
        None => Ok(T::default()),
        Some(section) => section
            .clone()
            .try_into()
            .map_err(|e| config_error(format!("[{table}]: {e}"))),
    }
}

/// Replaces the file at `path` with `bytes`, atomically and durably (see
/// `crate::files`).
pub fn write_durably(path: &Path, bytes: &[u8]) -> Result<()> {
    crate::files::replace(path, bytes, crate::files::Durability::Durable)
}

/// The redactor of the store at `store_root` (its `[privacy]` settings), for
/// writers that do not open the store (the hooks' state, queue and log).
/// The last one built is kept: a hook process, or the MCP server, asks for
/// the same store again and again.
pub fn redactor_for(store_root: &Path) -> Result<std::sync::Arc<crate::privacy::Redactor>> {
    use crate::privacy::{PrivacySettings, Redactor};
    use std::sync::{Arc, Mutex};
    static LAST: Mutex<Option<(PrivacySettings, Arc<Redactor>)>> = Mutex::new(None);
    let settings: PrivacySettings = read_section(store_root, "privacy")?;
    let mut last = LAST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((cached, redactor)) = last.as_ref() {
        if *cached == settings {
            return Ok(Arc::clone(redactor));
        }
    }
    let redactor = Arc::new(redactor_of(&settings, store_root)?);
    *last = Some((settings, Arc::clone(&redactor)));
    Ok(redactor)
}

/// The redactor of `settings`, an error in them named against the store's
/// `config.toml` (`privacy.extra_patterns[0].regex: …`).
pub fn redactor_of(
    settings: &crate::privacy::PrivacySettings,
    store_root: &Path,
) -> Result<crate::privacy::Redactor> {
    crate::privacy::Redactor::new(settings).map_err(|e| match e {
        Error::Config { message, .. } => Error::Config {
            path: store_root.join("config.toml"),
            message,
        },
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_fills_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let config = Config::new("2026-01-01T00:00:00Z".into());
        config.save(&path).unwrap();
        assert_eq!(Config::load(&path).unwrap(), config);
        fs::write(&path, "format_version = 2\n").unwrap();
        assert_eq!(Config::load(&path).unwrap().limits, Limits::default());
    }

    #[test]
    fn bad_toml_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        fs::write(&path, "format_version = \"x\"\n").unwrap();
        let e = Config::load(&path).unwrap_err().to_string();
        assert!(e.contains("config.toml"), "{e}");
    }
}
