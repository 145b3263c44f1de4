//! The Postgres side of sync: one table of versions, and the two statements
//! that move them.
//!
//! ```sql
//! kdb_records  (id text PRIMARY KEY, seq bigint UNIQUE, origin text,
//!               written_ms bigint, deleted boolean, kind, namespace, project,
//!               version text, record json, model text, recipe int,
//!               text_hash text, embedding vector(384), pushed_at timestamptz)
//! kdb_seq      the sequence every accepted write takes a number from
//! kdb_meta     (key, value): schema_version, oldest_reader, instance,
//!              tombstone_retention, compacted_through, compacted_written_ms
//! kdb_machines (machine, origin, cursor, first_seen, last_seen): every store
//!              that pulls, and how far (schema 2)
//! ```
//!
//! A row is the newest version of one id (a tombstone when `deleted`, with
//! no record and no vector). **Push** sends a batch into a temporary table
//! and merges it in one statement that keeps, per id, the greater
//! `(written_ms, origin)`: the newer write wins and the origin breaks a tie,
//! so every machine that pushes the same set ends with the same rows in
//! whatever order they ran. A row that does not change the version (the
//! same content, or a tombstone over a tombstone) is left alone. Every row
//! written takes the next `kdb_seq`. **Pull** reads rows with `seq` above the
//! machine's cursor, in `seq` order.
//!
//! A pull must never step over a row that commits later with a smaller
//! number, so the merge holds a transaction-level advisory lock from taking
//! numbers to its commit: numbers commit in order. The lock is held for one
//! server-side statement per batch, not while data travels.
//!
//! **Tombstones are compacted** (see [`Remote::compact`]) once every machine
//! in `kdb_machines` has pulled past them, or when they are older than the
//! team's `tombstone_retention`; `compacted_through` then says which change
//! numbers may have lost a tombstone, so a machine whose cursor is below it
//! knows it may hold records deleted elsewhere (see `super::catch_up`).
//!
//! **Schema versions.** `schema_version` is the layout of the tables;
//! `oldest_reader` the oldest layout a knowledge-db may know and still sync
//! with them safely (a later layout that only adds keeps it; one that changes
//! what a write means raises it). A knowledge-db that knows an older layout
//! than `oldest_reader` stops with a message before it reads or writes a row;
//! one that knows a newer layout migrates the tables forward in one
//! transaction (see [`compat`]). Knowledge-db 1 (schema 1) refuses any other
//! version than 1, so machines still on it stop syncing, with that message,
//! once a newer one migrated the tables; they would not have waited for
//! compaction, and could bring deleted records back.

use std::fmt::Write as _;

use pgvector::Vector;
use postgres::{Client, Transaction};

use super::connect::error_text;
use crate::error::{Error, Result};

/// The version of the tables this build reads and writes.
pub const SCHEMA_VERSION: i32 = 2;

/// The oldest table layout a knowledge-db may know and sync with tables of
/// [`SCHEMA_VERSION`]: schema 1 knew nothing of compaction.
pub const OLDEST_READER: i32 = 2;

/// How long a tombstone is kept at most, when the team sets nothing
/// (`kdb_meta.tombstone_retention`, a Postgres interval).
pub const DEFAULT_TOMBSTONE_RETENTION: &str = "30 days";

/// What this knowledge-db does with tables of a given version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compat {
    /// The layout this build writes.
    Same,
    /// An older layout: migrate it forward from this version.
    Migrate(i32),
    /// A newer layout that declares this build a safe reader.
    Newer(i32),
    /// A newer layout this build must not touch.
    TooNew {
        /// The tables' version.
        found: i32,
        /// The oldest layout that may sync with them.
        oldest_reader: i32,
    },
}

/// How tables of version `found` (with `oldest_reader`, when the tables
/// say) meet this build.
pub fn compat(found: i32, oldest_reader: Option<i32>) -> Compat {
    use std::cmp::Ordering::*;
    match found.cmp(&SCHEMA_VERSION) {
        Equal => Compat::Same,
        Less => Compat::Migrate(found),
        Greater => {
            // A newer layout that does not say who may read it: only itself.
            let oldest_reader = oldest_reader.unwrap_or(found);
            if oldest_reader <= SCHEMA_VERSION {
                Compat::Newer(found)
            } else {
                Compat::TooNew {
                    found,
                    oldest_reader,
                }
            }
        }
    }
}

/// Which rows a pull reads (see `super::scope::PullScope`).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Every record.
    pub all: bool,
    /// Records of these projects.
    pub projects: Vec<String>,
    /// Records of these namespaces.
    pub namespaces: Vec<String>,
    /// Records this origin wrote.
    pub origin: Option<String>,
    /// Tombstones (every one, whatever its scope).
    pub tombstones: bool,
}

/// Live records of one `(project, namespace)` on the server.
pub type ScopeCount = (Option<String>, Option<String>, u64);

/// What compaction has removed so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compacted {
    /// The highest change number of a tombstone removed (0: none).
    pub through: i64,
    /// The newest delete removed, Unix milliseconds.
    pub written_ms: i64,
}

/// The advisory lock key of merges and schema set-up (any fixed number; it
/// only has to be the same for every knowledge-db).
const LOCK_KEY: i64 = 0x006b_6462_7379_6e63; // "kdbsync"

/// The lock key of the tables at `prefix`: advisory locks are per database,
/// so teams in schemas of one database take keys of their own and never
/// wait for each other's merges (the search_path's tables keep [`LOCK_KEY`]).
fn lock_key(prefix: &str) -> i64 {
    if prefix.is_empty() {
        return LOCK_KEY;
    }
    LOCK_KEY ^ xxhash_rust::xxh3::xxh3_64(prefix.as_bytes()) as i64
}

/// One version of one id, as pushed or pulled.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The record's id.
    pub id: String,
    /// Its number in the order of accepted writes (0 before it is pushed).
    pub seq: i64,
    /// Who wrote it.
    pub origin: String,
    /// When it was written, Unix milliseconds.
    pub written_ms: i64,
    /// A tombstone: the record was deleted.
    pub deleted: bool,
    /// Its kind, namespace and project (for people and SQL reading the table).
    pub kind: Option<String>,
    /// Its namespace.
    pub namespace: Option<String>,
    /// Its project, when the record names one.
    pub project: Option<String>,
    /// The content version (16 hex digits).
    pub version: String,
    /// The record's export line (`crate::export::line`), without the vector.
    pub record: Option<String>,
    /// The model that made the vector.
    pub model: Option<String>,
    /// The embedding-text rules it was made under.
    pub recipe: Option<i32>,
    /// The hash of the embedded text, 16 hex digits.
    pub text_hash: Option<String>,
    /// The vector.
    pub embedding: Option<Vec<f32>>,
}

/// A connection to the team's tables.
pub struct Remote {
    client: Client,
    /// `"schema".` or empty: where the tables are.
    prefix: String,
    /// The tables' random id, made when they were created: a store that
    /// meets other tables (a new server, a restored one) starts over.
    instance: String,
    /// The tables' version as found.
    found: i32,
    /// The version migrated from, when this connection migrated them.
    migrated: Option<i32>,
}

/// A postgres error as a sync error, saying what was being done.
fn failed(what: &str) -> impl Fn(postgres::Error) -> Error + '_ {
    move |e| Error::Sync(format!("{what}: {}", error_text(&e)))
}

impl Remote {
    /// Uses `client`, with the tables in `schema` (`None`: the connection's
    /// search_path), creating them on first use.
    pub fn open(mut client: Client, schema: Option<&str>) -> Result<Remote> {
        let prefix = match schema {
            Some(name) => format!("{}.", quote_ident(name)),
            None => String::new(),
        };
        let mut tx = client
            .transaction()
            .map_err(failed("starting a transaction"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(&prefix)])
            .map_err(failed("waiting for the sync lock"))?;
        // Tables already there are not created again: `CREATE … IF NOT
        // EXISTS` checks the CREATE privilege first, and a member who may
        // only read (or only read and write rows) must still be able to sync.
        let tables: Vec<String> = ["kdb_seq", "kdb_records", "kdb_meta"]
            .iter()
            .map(|table| format!("{prefix}{table}"))
            .collect();
        let present: bool = tx
            .query_one(
                "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL \
                 AND to_regclass($3) IS NOT NULL",
                &[&tables[0], &tables[1], &tables[2]],
            )
            .map_err(failed("looking for the sync tables"))?
            .get(0);
        if !present {
            ensure_vector_extension(&mut tx)?;
            if let Some(name) = schema {
                tx.batch_execute(&format!(
                    "CREATE SCHEMA IF NOT EXISTS {}",
                    quote_ident(name)
                ))
                .map_err(failed("creating the schema"))?;
            }
            tx.batch_execute(&create_tables(&prefix))
                .map_err(failed("creating the sync tables"))?;
        }
        let meta = |tx: &mut Transaction<'_>, key: &str| -> Result<Option<String>> {
            Ok(tx
                .query_opt(
                    &format!("SELECT value FROM {prefix}kdb_meta WHERE key = $1"),
                    &[&key],
                )
                .map_err(failed("reading the tables' version"))?
                .map(|row| row.get(0)))
        };
        let found_text = meta(&mut tx, "schema_version")?.unwrap_or_default();
        let found: i32 = found_text.trim().parse().map_err(|_| {
            Error::Sync(format!(
                "the server's sync tables have no readable schema_version in {prefix}kdb_meta \
                 (found `{found_text}`): they were not made by knowledge-db, or were edited; \
                 nothing was read or written"
            ))
        })?;
        let oldest_reader = meta(&mut tx, "oldest_reader")?.and_then(|v| v.trim().parse().ok());
        let mut migrated = None;
        match compat(found, oldest_reader) {
            Compat::Same | Compat::Newer(_) => {}
            Compat::Migrate(from) => {
                tx.batch_execute(&migrate(&prefix, from)?).map_err(|e| {
                    Error::Sync(format!(
                        "the server's sync tables are version {from}; this knowledge-db uses \
                         version {SCHEMA_VERSION} and could not upgrade them ({}): run one sync \
                         as the role that owns {prefix}kdb_records, or keep this machine on its \
                         older knowledge-db until then; nothing was written",
                        error_text(&e)
                    ))
                })?;
                migrated = Some(from);
            }
            Compat::TooNew {
                found,
                oldest_reader,
            } => {
                return Err(Error::Sync(format!(
                    "the server's sync tables are version {found}, written by a newer \
                     knowledge-db, and need a knowledge-db that knows version {oldest_reader} or \
                     later; this one knows version {SCHEMA_VERSION}: upgrade knowledge-db on this \
                     machine to sync with them (nothing was read or written)"
                )));
            }
        }
        let instance = meta(&mut tx, "instance")?
            .ok_or_else(|| Error::Sync(format!("{prefix}kdb_meta has no instance id")))?;
        tx.commit().map_err(failed("creating the sync tables"))?;
        Ok(Remote {
            client,
            prefix,
            instance,
            found,
            migrated,
        })
    }

    /// The version of the tables as found (before a migration).
    pub fn found_version(&self) -> i32 {
        self.found
    }

    /// The version the tables were migrated from by this connection, if any.
    pub fn migrated_from(&self) -> Option<i32> {
        self.migrated
    }

    /// The tables' instance id.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Merges `rows` (see the module docs); returns the ids whose version
    /// the server took. The others lost to a newer write or changed nothing.
    pub fn push(&mut self, rows: &[Row]) -> Result<Vec<String>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let p = self.prefix.clone();
        let mut tx = self
            .client
            .transaction()
            .map_err(failed("starting a push"))?;
        tx.batch_execute(&format!(
            "CREATE TEMP TABLE IF NOT EXISTS kdb_incoming \
             (LIKE {p}kdb_records INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
        ))
        .map_err(failed("preparing a push"))?;
        let columns = Columns::of(rows);
        tx.execute(
            "INSERT INTO kdb_incoming (id, seq, origin, written_ms, deleted, kind, namespace, \
             project, version, record, model, recipe, text_hash, embedding) \
             SELECT u.id, 0, u.origin, u.written_ms, u.deleted, u.kind, u.namespace, u.project, \
             u.version, u.record::json, u.model, u.recipe, u.text_hash, u.embedding \
             FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bool[], $5::text[], \
             $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::int[], \
             $12::text[], $13::vector[]) AS u(id, origin, written_ms, deleted, kind, namespace, \
             project, version, record, model, recipe, text_hash, embedding)",
            &[
                &columns.id,
                &columns.origin,
                &columns.written_ms,
                &columns.deleted,
                &columns.kind,
                &columns.namespace,
                &columns.project,
                &columns.version,
                &columns.record,
                &columns.model,
                &columns.recipe,
                &columns.text_hash,
                &columns.embedding,
            ],
        )
        .map_err(failed("sending records"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(&p)])
            .map_err(failed("waiting for the sync lock"))?;
        let taken = tx
            .query(
                &format!(
                    "INSERT INTO {p}kdb_records AS r (id, seq, origin, written_ms, deleted, kind, \
                     namespace, project, version, record, model, recipe, text_hash, embedding) \
                     SELECT id, nextval({seq}), origin, written_ms, deleted, kind, \
                     namespace, project, version, record, model, recipe, text_hash, embedding \
                     FROM kdb_incoming ORDER BY id \
                     ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, origin = EXCLUDED.origin, \
                     written_ms = EXCLUDED.written_ms, deleted = EXCLUDED.deleted, \
                     kind = EXCLUDED.kind, namespace = EXCLUDED.namespace, \
                     project = EXCLUDED.project, version = EXCLUDED.version, \
                     record = EXCLUDED.record, model = EXCLUDED.model, recipe = EXCLUDED.recipe, \
                     text_hash = EXCLUDED.text_hash, embedding = EXCLUDED.embedding, \
                     pushed_at = now() \
                     WHERE (EXCLUDED.written_ms, EXCLUDED.origin) > (r.written_ms, r.origin) \
                     AND (EXCLUDED.deleted <> r.deleted \
                          OR (NOT r.deleted AND EXCLUDED.version <> r.version)) \
                     RETURNING id",
                    seq = literal(&format!("{p}kdb_seq"))
                ),
                &[],
            )
            .map_err(failed("merging records"))?;
        tx.commit().map_err(failed("committing a push"))?;
        Ok(taken.iter().map(|row| row.get(0)).collect())
    }

    /// Up to `limit` rows with `seq` above `after` (and at most `until`)
    /// that `filter` takes, in `seq` order. Rows written by `origin` come
    /// without their record and vector (the puller wrote them: it asks for
    /// them by id only if it lacks them).
    pub fn pull(
        &mut self,
        after: i64,
        until: Option<i64>,
        limit: i64,
        origin: &str,
        filter: &Filter,
    ) -> Result<Vec<Row>> {
        let p = &self.prefix;
        let until = until.unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT id, seq, origin, written_ms, deleted, kind, namespace, project, \
                     version, CASE WHEN origin = $3 THEN NULL ELSE record::text END, model, \
                     recipe, text_hash, CASE WHEN origin = $3 THEN NULL ELSE embedding END \
                     FROM {p}kdb_records WHERE seq > $1 AND seq <= $4 AND ( \
                     (deleted AND $5) OR (NOT deleted AND ($6 OR origin = $7 \
                     OR project = ANY($8) OR namespace = ANY($9)))) \
                     ORDER BY seq LIMIT $2"
                ),
                &[
                    &after,
                    &limit,
                    &origin,
                    &until,
                    &filter.tombstones,
                    &filter.all,
                    &filter.origin,
                    &filter.projects,
                    &filter.namespaces,
                ],
            )
            .map_err(failed("reading records"))?;
        rows.iter().map(row_of).collect()
    }

    /// Of `ids`, those the server holds a row of (a record or a tombstone).
    pub fn present(&mut self, ids: &[String]) -> Result<std::collections::HashSet<String>> {
        let p = &self.prefix;
        let rows = self
            .client
            .query(
                &format!("SELECT id FROM {p}kdb_records WHERE id = ANY($1)"),
                &[&ids],
            )
            .map_err(failed("reading ids"))?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// Live records on the server per `(project, namespace)`.
    pub fn scope_counts(&mut self) -> Result<Vec<ScopeCount>> {
        let p = &self.prefix;
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT project, namespace, count(*) FROM {p}kdb_records WHERE NOT deleted \
                     GROUP BY project, namespace"
                ),
                &[],
            )
            .map_err(failed("counting records by project"))?;
        Ok(rows
            .iter()
            .map(|row| {
                let n: i64 = row.get(2);
                (row.get(0), row.get(1), n.max(0) as u64)
            })
            .collect())
    }

    /// What compaction has removed so far.
    pub fn compacted(&mut self) -> Result<Compacted> {
        let p = &self.prefix;
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT key, value FROM {p}kdb_meta \
                     WHERE key IN ('compacted_through', 'compacted_written_ms')"
                ),
                &[],
            )
            .map_err(failed("reading the compaction mark"))?;
        let mut out = Compacted::default();
        for row in rows {
            let (key, value): (String, String) = (row.get(0), row.get(1));
            let value = value.trim().parse().unwrap_or(0);
            match key.as_str() {
                "compacted_through" => out.through = value,
                _ => out.written_ms = value,
            }
        }
        Ok(out)
    }

    /// Notes that `machine` (of `origin`) has pulled through `cursor`.
    /// Returns false when this role may not (a read-only member): then
    /// compaction does not wait for it, and it checks its ids when it falls
    /// behind (see `super::catch_up`).
    pub fn register(&mut self, machine: &str, origin: &str, cursor: i64) -> Result<bool> {
        let p = &self.prefix;
        let done = self.client.execute(
            &format!(
                "INSERT INTO {p}kdb_machines AS m (machine, origin, cursor) VALUES ($1, $2, $3) \
                 ON CONFLICT (machine) DO UPDATE SET origin = EXCLUDED.origin, \
                 cursor = greatest(m.cursor, EXCLUDED.cursor), last_seen = now()"
            ),
            &[&machine, &origin, &cursor],
        );
        match done {
            Ok(_) => Ok(true),
            Err(e) if is_permission_denied(&e) => Ok(false),
            Err(e) => Err(failed("noting this machine's cursor")(e)),
        }
    }

    /// Removes the tombstones every machine has pulled past, and those older
    /// than the team's `tombstone_retention`; forgets machines unseen for
    /// that long (so one lost laptop does not keep every tombstone forever).
    /// Returns how many tombstones went, or `None` when this role may not
    /// delete rows (another member's sync compacts).
    pub fn compact(&mut self) -> Result<Option<u64>> {
        let p = self.prefix.clone();
        let mut tx = self
            .client
            .transaction()
            .map_err(failed("starting a compaction"))?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock_key(&p)])
            .map_err(failed("waiting for the sync lock"))?;
        let retention: String = tx
            .query_opt(
                &format!("SELECT value FROM {p}kdb_meta WHERE key = 'tombstone_retention'"),
                &[],
            )
            .map_err(failed("reading the tombstone retention"))?
            .map(|row| row.get(0))
            .unwrap_or_else(|| DEFAULT_TOMBSTONE_RETENTION.to_string());
        let forgotten = tx.execute(
            &format!("DELETE FROM {p}kdb_machines WHERE last_seen < now() - $1::text::interval"),
            &[&retention],
        );
        match forgotten {
            Ok(_) => {}
            Err(e) if is_permission_denied(&e) => return Ok(None),
            Err(e) => {
                return Err(Error::Sync(format!(
                    "compacting tombstones (tombstone_retention = '{retention}' in \
                     {p}kdb_meta must be a Postgres interval such as '30 days'): {}",
                    error_text(&e)
                )))
            }
        }
        let removed = tx.query_one(
            &format!(
                "WITH gone AS (DELETE FROM {p}kdb_records WHERE deleted AND (\
                 seq <= (SELECT coalesce(min(cursor), 0) FROM {p}kdb_machines) \
                 OR pushed_at < now() - $1::text::interval) RETURNING seq, written_ms) \
                 SELECT count(*), coalesce(max(seq), 0), coalesce(max(written_ms), 0) FROM gone"
            ),
            &[&retention],
        );
        let removed = match removed {
            Ok(row) => row,
            Err(e) if is_permission_denied(&e) => return Ok(None),
            Err(e) => return Err(failed("compacting tombstones")(e)),
        };
        let (count, through, written): (i64, i64, i64) =
            (removed.get(0), removed.get(1), removed.get(2));
        if count > 0 {
            for (key, value) in [
                ("compacted_through", through),
                ("compacted_written_ms", written),
            ] {
                tx.execute(
                    &format!(
                        "INSERT INTO {p}kdb_meta AS m VALUES ($1, $2) ON CONFLICT (key) DO UPDATE \
                         SET value = greatest(m.value::bigint, EXCLUDED.value::bigint)::text"
                    ),
                    &[&key, &value.to_string()],
                )
                .map_err(failed("noting the compaction"))?;
            }
        }
        tx.commit().map_err(failed("committing a compaction"))?;
        Ok(Some(count.max(0) as u64))
    }

    /// The current rows of `ids`.
    pub fn rows(&mut self, ids: &[String]) -> Result<Vec<Row>> {
        let p = &self.prefix;
        let rows = self
            .client
            .query(&format!("{} WHERE id = ANY($1)", select_rows(p)), &[&ids])
            .map_err(failed("reading records"))?;
        rows.iter().map(row_of).collect()
    }

    /// Records (not tombstones) on the server, and the highest `seq`.
    pub fn counts(&mut self) -> Result<(u64, i64)> {
        let p = &self.prefix;
        let row = self
            .client
            .query_one(
                &format!(
                    "SELECT count(*) FILTER (WHERE NOT deleted), coalesce(max(seq), 0) \
                     FROM {p}kdb_records"
                ),
                &[],
            )
            .map_err(failed("counting records"))?;
        let records: i64 = row.get(0);
        Ok((records.max(0) as u64, row.get(1)))
    }

    /// Bytes the records table takes on the server, indexes and TOAST included.
    pub fn table_bytes(&mut self) -> Result<u64> {
        let p = &self.prefix;
        let row = self
            .client
            .query_one(
                &format!(
                    "SELECT pg_total_relation_size({})",
                    literal(&format!("{p}kdb_records"))
                ),
                &[],
            )
            .map_err(failed("measuring the table"))?;
        let bytes: i64 = row.get(0);
        Ok(bytes.max(0) as u64)
    }
}

fn select_rows(prefix: &str) -> String {
    format!(
        "SELECT id, seq, origin, written_ms, deleted, kind, namespace, project, version, \
         record::text, model, recipe, text_hash, embedding FROM {prefix}kdb_records"
    )
}

fn row_of(row: &postgres::Row) -> Result<Row> {
    let read = |e: postgres::Error| Error::Sync(format!("reading a row: {}", error_text(&e)));
    let embedding: Option<Vector> = row.try_get(13).map_err(read)?;
    Ok(Row {
        id: row.try_get(0).map_err(read)?,
        seq: row.try_get(1).map_err(read)?,
        origin: row.try_get(2).map_err(read)?,
        written_ms: row.try_get(3).map_err(read)?,
        deleted: row.try_get(4).map_err(read)?,
        kind: row.try_get(5).map_err(read)?,
        namespace: row.try_get(6).map_err(read)?,
        project: row.try_get(7).map_err(read)?,
        version: row.try_get(8).map_err(read)?,
        record: row.try_get(9).map_err(read)?,
        model: row.try_get(10).map_err(read)?,
        recipe: row.try_get(11).map_err(read)?,
        text_hash: row.try_get(12).map_err(read)?,
        embedding: embedding.map(|v| v.to_vec()),
    })
}

/// A batch of rows as one array per column (for `unnest`).
struct Columns {
    id: Vec<String>,
    origin: Vec<String>,
    written_ms: Vec<i64>,
    deleted: Vec<bool>,
    kind: Vec<Option<String>>,
    namespace: Vec<Option<String>>,
    project: Vec<Option<String>>,
    version: Vec<String>,
    record: Vec<Option<String>>,
    model: Vec<Option<String>>,
    recipe: Vec<Option<i32>>,
    text_hash: Vec<Option<String>>,
    embedding: Vec<Option<Vector>>,
}

impl Columns {
    fn of(rows: &[Row]) -> Columns {
        Columns {
            id: rows.iter().map(|r| r.id.clone()).collect(),
            origin: rows.iter().map(|r| r.origin.clone()).collect(),
            written_ms: rows.iter().map(|r| r.written_ms).collect(),
            deleted: rows.iter().map(|r| r.deleted).collect(),
            kind: rows.iter().map(|r| r.kind.clone()).collect(),
            namespace: rows.iter().map(|r| r.namespace.clone()).collect(),
            project: rows.iter().map(|r| r.project.clone()).collect(),
            version: rows.iter().map(|r| r.version.clone()).collect(),
            record: rows.iter().map(|r| r.record.clone()).collect(),
            model: rows.iter().map(|r| r.model.clone()).collect(),
            recipe: rows.iter().map(|r| r.recipe).collect(),
            text_hash: rows.iter().map(|r| r.text_hash.clone()).collect(),
            embedding: rows
                .iter()
                .map(|r| r.embedding.clone().map(Vector::from))
                .collect(),
        }
    }
}

/// pgvector, created when missing (which needs a role allowed to; a team's
/// admin can run `CREATE EXTENSION vector` once instead).
fn ensure_vector_extension(tx: &mut Transaction<'_>) -> Result<()> {
    let present = tx
        .query_opt("SELECT 1 FROM pg_extension WHERE extname = 'vector'", &[])
        .map_err(failed("looking for pgvector"))?
        .is_some();
    if present {
        return Ok(());
    }
    tx.batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
        .map_err(|e| {
            Error::Sync(format!(
                "the server has no pgvector and this role cannot add it ({}): ask its admin to \
                 run `CREATE EXTENSION vector` in this database",
                error_text(&e)
            ))
        })
}

fn create_tables(p: &str) -> String {
    let mut sql = String::new();
    let _ = write!(
        sql,
        "CREATE SEQUENCE IF NOT EXISTS {p}kdb_seq;
         CREATE TABLE IF NOT EXISTS {p}kdb_records (
           id text PRIMARY KEY,
           seq bigint NOT NULL UNIQUE,
           origin text NOT NULL,
           written_ms bigint NOT NULL,
           deleted boolean NOT NULL,
           kind text,
           namespace text,
           project text,
           version text NOT NULL,
           record json,
           model text,
           recipe integer,
           text_hash text,
           embedding vector({dim}),
           pushed_at timestamptz NOT NULL DEFAULT now());
         CREATE TABLE IF NOT EXISTS {p}kdb_meta (key text PRIMARY KEY, value text NOT NULL);
         INSERT INTO {p}kdb_meta VALUES ('schema_version', '{SCHEMA_VERSION}')
           ON CONFLICT (key) DO NOTHING;
         INSERT INTO {p}kdb_meta VALUES ('instance', md5(random()::text || clock_timestamp()::text))
           ON CONFLICT (key) DO NOTHING;
         {v2}",
        dim = crate::embed::DIM,
        v2 = to_v2(p)
    );
    sql
}

/// What schema 2 adds to schema 1: the machines that pull (for compaction),
/// an index of tombstones, and the compaction and version keys.
fn to_v2(p: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {p}kdb_machines (
           machine text PRIMARY KEY,
           origin text NOT NULL,
           cursor bigint NOT NULL,
           first_seen timestamptz NOT NULL DEFAULT now(),
           last_seen timestamptz NOT NULL DEFAULT now());
         CREATE INDEX IF NOT EXISTS kdb_records_tombstones ON {p}kdb_records (seq) WHERE deleted;
         INSERT INTO {p}kdb_meta VALUES ('oldest_reader', '{OLDEST_READER}')
           ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
         INSERT INTO {p}kdb_meta VALUES ('tombstone_retention', '{DEFAULT_TOMBSTONE_RETENTION}')
           ON CONFLICT (key) DO NOTHING;
         INSERT INTO {p}kdb_meta VALUES ('compacted_through', '0') ON CONFLICT (key) DO NOTHING;
         INSERT INTO {p}kdb_meta VALUES ('compacted_written_ms', '0') ON CONFLICT (key) DO NOTHING;
         UPDATE {p}kdb_meta SET value = '{SCHEMA_VERSION}' WHERE key = 'schema_version';"
    )
}

/// The statements that take tables of version `from` to [`SCHEMA_VERSION`].
fn migrate(p: &str, from: i32) -> Result<String> {
    match from {
        1 => Ok(to_v2(p)),
        other => Err(Error::Sync(format!(
            "the server's sync tables are version {other}, which no knowledge-db wrote; \
             this one knows versions 1 to {SCHEMA_VERSION}: nothing was read or written"
        ))),
    }
}

/// Whether Postgres refused for want of a privilege.
fn is_permission_denied(e: &postgres::Error) -> bool {
    e.as_db_error()
        .is_some_and(|db| db.code() == &postgres::error::SqlState::INSUFFICIENT_PRIVILEGE)
}

/// A name as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Text as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_meet_with_a_migration_or_a_message() {
        assert_eq!(compat(SCHEMA_VERSION, Some(OLDEST_READER)), Compat::Same);
        assert_eq!(compat(1, None), Compat::Migrate(1));
        // A later layout that only adds says this build may still sync.
        assert_eq!(
            compat(SCHEMA_VERSION + 1, Some(SCHEMA_VERSION)),
            Compat::Newer(SCHEMA_VERSION + 1)
        );
        // One that changes what a write means does not; nor one that says nothing.
        for oldest in [Some(SCHEMA_VERSION + 1), None] {
            assert_eq!(
                compat(SCHEMA_VERSION + 1, oldest),
                Compat::TooNew {
                    found: SCHEMA_VERSION + 1,
                    oldest_reader: SCHEMA_VERSION + 1
                }
            );
        }
        assert!(migrate("", 0).is_err());
        assert!(migrate("", 1).unwrap().contains("kdb_machines"));
    }
}
