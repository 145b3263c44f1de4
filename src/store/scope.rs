//! A store scoped to one namespace: what a server started with `--namespace`
//! writes through.
//!
//! Ids are unique across the whole store (a record is upserted by id), so
//! without a scope a record added in namespace `bob` under the id of one of
//! `alice`'s records replaces hers. A scoped store refuses that: every record
//! it adds must be in its namespace, and a record it would replace must be
//! too. The second check runs under the writer lock, between reading the
//! stored version and the commit, so no other writer can slip a record of
//! another namespace in between. (Ids of archived records are checked by the
//! caller before the write: the store knows L2 only.)

use super::Store;
use crate::error::{Error, Result};
use crate::record::Record;

impl Store {
    /// This store, scoped to `namespace`: its writes refuse records of other
    /// namespaces and never replace one of theirs (see the module docs).
    pub fn scoped_to(mut self, namespace: &str) -> Store {
        self.scope = Some(namespace.to_string());
        self
    }

    /// The namespace this store is scoped to, if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }
}

/// Refuses records outside `scope`.
pub(crate) fn check_records(records: &[Record], scope: Option<&str>) -> Result<()> {
    let Some(scope) = scope else { return Ok(()) };
    match records.iter().find(|r| r.namespace != scope) {
        Some(record) => Err(outside(
            scope,
            &format!(
                "record `{}` is in namespace `{}`",
                record.id, record.namespace
            ),
        )),
        None => Ok(()),
    }
}

/// Refuses to replace `stored`, a record of another namespace than `scope`.
pub(crate) fn check_replaced(stored: &Record, scope: Option<&str>) -> Result<()> {
    match scope {
        Some(scope) if stored.namespace != scope => Err(taken(&stored.id, scope)),
        _ => Ok(()),
    }
}

/// The refusal of an id that another namespace holds (its name is not told).
pub fn taken(id: &str, scope: &str) -> Error {
    outside(
        scope,
        &format!("the id `{id}` belongs to a record of another namespace, which it cannot replace; choose another id"),
    )
}

/// A refusal naming the scope and what was asked.
pub fn outside(scope: &str, what: &str) -> Error {
    Error::OutsideNamespace(format!(
        "this server is scoped to namespace `{scope}` (--namespace): {what}"
    ))
}
