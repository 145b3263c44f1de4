//! Tiers: what spans L2 (the searchable store) and L3 (the archive).
//!
//! `crate::store` knows L2 only and `crate::archive` knows L3 only; neither
//! names the other. Everything that needs both lives here, above them:
//!
//! ```text
//!   tiers     open/init (installs the guard), find, stats, verify/repair,
//!     |  \    ops (archive, restore, prune, recover, supersede), policy (maintain)
//!     v   v
//!   store  archive      L2: text index, vectors, access log | L3: month files, L3 index
//!     \   /
//!      v v
//!   index, vectors, embed, record, files, check, error
//! ```
//!
//! The one step that must happen *inside* an L2 write (under its lock, between
//! indexing and commit) is handed down as a [`TierGuard`]: every store opened
//! with [`Store::open`] or [`Store::init`] carries this layer's guard, so each
//! writer finishes an interrupted tier operation first and an add of an
//! archived id supersedes the archived copy (see [`ops`] for the order of
//! operations and the journal).

mod checks;
pub mod forget;
pub mod ops;
pub mod policy;
pub mod scrub;
pub mod upgrade;
pub mod verify;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::archive::{Archive, Entry, TierStats};
use crate::error::Result;
use crate::record::parse::format_time;
use crate::record::Record;
use crate::store::lock::WriterLock;
use crate::store::{Store, TierGuard};

/// The tiers layer's steps inside every L2 write.
struct Tiers;

static TIERS: Tiers = Tiers;

impl TierGuard for Tiers {
    fn finish_interrupted(&self, store: &Store, lock: &WriterLock) -> Result<()> {
        // With no journal this costs one `stat`.
        if Archive::new(store.root()).has_journal() {
            ops::recover(store, lock)?;
        }
        Ok(())
    }

    fn begin_superseding(
        &self,
        store: &Store,
        lock: &WriterLock,
        ids: &mut dyn Iterator<Item = &str>,
    ) -> Result<bool> {
        ops::begin_superseding(store, lock, ids)
    }

    fn finish_superseding(&self, store: &Store, lock: &WriterLock) -> Result<()> {
        ops::finish_superseding(store, lock)
    }
}

impl Store {
    /// Creates a new, empty store at `root` (the folder may exist if empty).
    pub fn init(root: &Path) -> Result<Store> {
        Store::init_guarded(root, &TIERS)
    }

    /// Opens an existing store, checking its format version. A store of an
    /// earlier format this build can upgrade is upgraded first (see
    /// [`upgrade`]), once, under the writer lock.
    pub fn open(root: &Path) -> Result<Store> {
        match Store::open_guarded(root, &TIERS) {
            Err(crate::Error::FormatVersion { found, .. })
                if (upgrade::OLDEST_UPGRADABLE..crate::store::FORMAT_VERSION).contains(&found) =>
            {
                let config = crate::store::Config::load(&root.join("config.toml"))?;
                let timeout =
                    std::time::Duration::from_secs_f64(config.limits.lock_timeout_secs.max(0.0));
                upgrade::upgrade(root, timeout)?;
                let store = Store::open_guarded(root, &TIERS)?;
                // The vector files belonged to the old index's segments.
                store.index_vectors(timeout)?;
                Ok(store)
            }
            other => other,
        }
    }
}

/// A record found by [`find`]: live in L2, or archived in L3.
#[derive(Debug, Clone)]
pub enum Found {
    /// Live in L2, searchable.
    Live(Record),
    /// In the archive (L3), with its archive entry.
    Archived(Entry),
}

impl Found {
    /// The record, whichever tier holds it.
    pub fn record(&self) -> &Record {
        match self {
            Found::Live(record) => record,
            Found::Archived(entry) => &entry.record,
        }
    }
}

/// The record with `id` in whichever tier holds it: L2 first (a copy live in
/// L2 wins over an archived one left by an interrupted operation), then the
/// archive.
pub fn find(store: &Store, id: &str) -> Result<Option<Found>> {
    if let Some(record) = store.get(id)? {
        return Ok(Some(Found::Live(record)));
    }
    let archived = Archive::new(store.root()).get(id)?;
    Ok(archived.map(Found::Archived))
}

/// Counts and sizes of both tiers, for `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// The store's folder.
    pub store: PathBuf,
    /// The store's on-disk format version (from its config).
    pub format_version: u32,
    /// Records in both tiers (L2 and the archive); `tiers` has each.
    pub records: u64,
    /// Records per kind, over both tiers.
    pub by_kind: std::collections::BTreeMap<String, u64>,
    /// Records per tier (`l2`, `l3`).
    pub by_tier: std::collections::BTreeMap<String, u64>,
    /// Records per namespace, over both tiers.
    pub by_namespace: std::collections::BTreeMap<String, u64>,
    /// Records per project, over both tiers (`""` for records of no project).
    pub by_project: std::collections::BTreeMap<String, u64>,
    /// Records per origin, over both tiers (`local` for the store's own;
    /// else the machine or user a record was pulled from).
    pub by_origin: std::collections::BTreeMap<String, u64>,
    /// Bytes of L2's text index folder (`text/`).
    pub text_index_bytes: u64,
    /// Segments of L2's text index.
    pub segments: usize,
    /// The oldest record time (RFC 3339) over both tiers; `None` when no
    /// record has a time.
    pub oldest: Option<String>,
    /// The newest record time (RFC 3339) over both tiers.
    pub newest: Option<String>,
    /// How many live (L2) records have vectors.
    pub vectors: crate::vectors::Coverage,
    /// Bytes of L2's vector files and graphs (`vectors/`).
    pub vector_files_bytes: u64,
    /// Segments with an HNSW graph (the others are scanned exactly).
    pub vector_graphs: usize,
    /// The embedding-text rules the vectors were made under
    /// (`crate::embed::text::RECIPE` when current).
    pub vector_text_rules: u32,
    /// Per tier (L2 here, L3 the archive): records, bytes, compression, ages.
    pub tiers: Vec<TierStats>,
}

/// [`stats`] as a server scoped to `namespace` may give it: record counts
/// (in all, by kind, by tier, by namespace, project and origin, per tier),
/// vector coverage and the time range of that namespace's records only;
/// sizes on disk stay the store's. Nothing names another namespace's
/// projects or origins.
pub fn namespace_stats(store: &Store, namespace: &str) -> Result<Stats> {
    let mut stats = stats(store)?;
    let searcher = store.reader()?.searcher();
    stats.vectors = crate::vectors::coverage_in(&searcher, Some(namespace))?;
    let mut counts = crate::index::ColumnCounts::of_namespace(&searcher, Some(namespace))?;
    counts.merge(&crate::archive::l3_counts(store.root(), namespace)?);
    stats.records = counts.by_namespace.values().sum();
    stats.oldest = counts.oldest.map(format_time);
    stats.newest = counts.newest.map(format_time);
    for tier in &mut stats.tiers {
        tier.records = counts.by_tier.get(tier.tier).copied().unwrap_or(0);
        tier.oldest = None;
        tier.newest = None;
    }
    stats.by_kind = counts.by_kind;
    stats.by_tier = counts.by_tier;
    stats.by_namespace = counts.by_namespace;
    stats.by_project = counts.by_project;
    stats.by_origin = counts.by_origin;
    Ok(stats)
}

/// Record counts by kind, tier, namespace, project and origin over both
/// tiers, and sizes on disk.
pub fn stats(store: &Store) -> Result<Stats> {
    let l2 = store.l2_stats()?;
    let l2_tier = TierStats {
        tier: "l2",
        records: l2.records,
        bytes_on_disk: l2.text_index_bytes + l2.vector_files_bytes,
        archive_files_bytes: None,
        index_bytes: None,
        compression_ratio: None,
        oldest: l2.counts.oldest.map(format_time),
        newest: l2.counts.newest.map(format_time),
    };
    let (l3_tier, l3) = crate::archive::l3_stats(store.root())?;
    let mut all = l2.counts;
    all.merge(&l3);
    Ok(Stats {
        store: l2.store,
        format_version: l2.format_version,
        records: l2_tier.records + l3_tier.records,
        by_kind: all.by_kind,
        by_tier: all.by_tier,
        by_namespace: all.by_namespace,
        by_project: all.by_project,
        by_origin: all.by_origin,
        text_index_bytes: l2.text_index_bytes,
        segments: l2.segments,
        oldest: all.oldest.map(format_time),
        newest: all.newest.map(format_time),
        vectors: l2.vectors,
        vector_files_bytes: l2.vector_files_bytes,
        vector_graphs: l2.vector_graphs,
        vector_text_rules: l2.vector_text_rules,
        tiers: vec![l2_tier, l3_tier],
    })
}
