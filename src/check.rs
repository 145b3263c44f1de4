//! A health check's answer: the unit `verify` reports in.
//!
//! Each part of a store (the text index, the vector files, the archive)
//! checks itself and answers with [`Check`]s; `crate::store::verify` gathers
//! them. Kept apart from all of them so that each can answer without reaching
//! into the others.

use std::path::PathBuf;

use serde::Serialize;

/// One named check and what it found.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked, as `verify` lists it (e.g. `vector files`).
    pub name: &'static str,
    /// Whether the check found nothing wrong.
    pub ok: bool,
    /// Found something to fix that does not make the store unsound (loose
    /// file modes): reported, but `ok` stays true.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub warning: bool,
    /// What was checked, or what is wrong.
    pub detail: String,
    /// Damaged derived files `repair` would rebuild.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rebuildable: Vec<PathBuf>,
}
