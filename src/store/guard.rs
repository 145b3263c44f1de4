//! The tier guard: what the tiers above L2 need done inside every L2 write.
//!
//! The store knows L2 only. But every record id lives in exactly one tier, and
//! the operations that move records between tiers (archive, restore, prune)
//! change L2 and the archive in several steps under one writer lock, with a
//! journal. So each L2 writer must first finish an operation a crash
//! interrupted, and an add of an id that is archived must supersede the
//! archived copy within the same locked write (journalled before the L2 commit,
//! removed after it). Those steps belong to `crate::tiers`, which implements
//! this trait and hands it to the store when it opens one (`Store::open` and
//! `Store::init` are defined there). The store calls it without naming the
//! layer above it, so the arrows run one way: tiers → store, never back.

use super::lock::WriterLock;
use super::Store;
use crate::error::Result;

/// Steps of the tiers layer that run under an L2 writer's lock.
pub trait TierGuard: Send + Sync {
    /// Before any L2 write: finish or undo a tier operation a crash
    /// interrupted (its journal is still there). Cheap when there is none.
    fn finish_interrupted(&self, store: &Store, lock: &WriterLock) -> Result<()>;

    /// After new ids are indexed and before the L2 commit: journal those of
    /// `ids` that another tier holds. Returns whether anything was journalled,
    /// and so whether [`TierGuard::finish_superseding`] must run.
    fn begin_superseding(
        &self,
        store: &Store,
        lock: &WriterLock,
        ids: &mut dyn Iterator<Item = &str>,
    ) -> Result<bool>;

    /// After the L2 commit: remove the superseded copies.
    fn finish_superseding(&self, store: &Store, lock: &WriterLock) -> Result<()>;
}
