//! The Postgres side of sync: one table of versions, and the two statements
//! that move them.
//!
//! ```sql
//! kdb_records (id text PRIMARY KEY, seq bigint UNIQUE, origin text,
//!              written_ms bigint, deleted boolean, kind, namespace, project,
//!              version text, record json, model text, recipe int,
//!              text_hash text, embedding vector(384), pushed_at timestamptz)
//! kdb_seq     the sequence every accepted write takes a number from
//! kdb_meta    (key, value): schema_version
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

use std::fmt::Write as _;

use pgvector::Vector;
use postgres::{Client, Transaction};

use super::connect::error_text;
use crate::error::{Error, Result};

/// The version of the tables this build reads and writes.
pub const SCHEMA_VERSION: i32 = 1;

/// The advisory lock key of merges and schema set-up (any fixed number; it
/// only has to be the same for every knowledge-db).
const LOCK_KEY: i64 = 0x006b_6462_7379_6e63; // "kdbsync"

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
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
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
        let found: String = tx
            .query_one(
                &format!("SELECT value FROM {prefix}kdb_meta WHERE key = 'schema_version'"),
                &[],
            )
            .map_err(failed("reading the schema version"))?
            .get(0);
        if found.parse::<i32>().ok() != Some(SCHEMA_VERSION) {
            return Err(Error::Sync(format!(
                "the server's sync tables are version {found}; this knowledge-db reads version \
                 {SCHEMA_VERSION}: upgrade knowledge-db"
            )));
        }
        let instance: String = tx
            .query_one(
                &format!("SELECT value FROM {prefix}kdb_meta WHERE key = 'instance'"),
                &[],
            )
            .map_err(failed("reading the tables' instance id"))?
            .get(0);
        tx.commit().map_err(failed("creating the sync tables"))?;
        Ok(Remote {
            client,
            prefix,
            instance,
        })
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
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK_KEY])
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

    /// Up to `limit` rows with `seq` above `after`, in `seq` order.
    /// Rows written by `origin` come without their record and vector (the
    /// puller wrote them: it asks for them by id only if it lacks them).
    pub fn pull(&mut self, after: i64, limit: i64, origin: &str) -> Result<Vec<Row>> {
        let p = &self.prefix;
        let rows = self
            .client
            .query(
                &format!(
                    "SELECT id, seq, origin, written_ms, deleted, kind, namespace, project, \
                     version, CASE WHEN origin = $3 THEN NULL ELSE record::text END, model, \
                     recipe, text_hash, CASE WHEN origin = $3 THEN NULL ELSE embedding END \
                     FROM {p}kdb_records WHERE seq > $1 ORDER BY seq LIMIT $2"
                ),
                &[&after, &limit, &origin],
            )
            .map_err(failed("reading records"))?;
        rows.iter().map(row_of).collect()
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
           ON CONFLICT (key) DO NOTHING;",
        dim = crate::embed::DIM
    );
    sql
}

/// A name as a quoted SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Text as an SQL string literal.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
