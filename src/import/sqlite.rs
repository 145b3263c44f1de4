//! Reading another tool's SQLite database without touching it.
//!
//! The database is opened read-only through a URI: `immutable=1` when no
//! write-ahead log is beside it (SQLite then takes no lock and creates no
//! `-wal` or `-shm` file in the tool's folder), else `mode=ro`, so that what
//! the tool wrote to its log and not yet to the database is read too. A busy
//! timeout waits out a tool writing at that moment. Before any row is read,
//! the tables and columns the importer needs are checked, so a database of
//! another shape is refused with what was found and what was expected.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::ImportError;

/// How long a read waits for a tool that is writing to its database.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the regular file at `path` as a read-only SQLite database and
/// checks that it is one.
pub(super) fn open(path: &Path, expected: &str) -> Result<Connection, ImportError> {
    // Regular files only (a FIFO or a device is refused before it is opened).
    drop(crate::bounded::open_regular(path)?);
    let wal = path.with_file_name(format!(
        "{}-wal",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    let has_log = std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0);
    let uri = format!(
        "file:{}?{}",
        uri_path(path),
        if has_log {
            "mode=ro"
        } else {
            "mode=ro&immutable=1"
        }
    );
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let fail = |e: rusqlite::Error| {
        ImportError::corrupt(
            path,
            None,
            format!("cannot be read as SQLite: {e}"),
            expected,
        )
    };
    let connection = Connection::open_with_flags(uri, flags).map_err(fail)?;
    connection.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
    // The first read of the schema tells a database from any other file.
    connection
        .query_row("SELECT count(*) FROM sqlite_master", [], |_| Ok(()))
        .map_err(fail)?;
    Ok(connection)
}

/// The path as a `file:` URI path: `?`, `#`, `%` and other bytes outside
/// the safe set are percent-encoded.
fn uri_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The tables of the database, each with its columns.
pub(super) fn tables(
    connection: &Connection,
    path: &Path,
    expected: &str,
) -> Result<BTreeMap<String, BTreeSet<String>>, ImportError> {
    let fail = |e: rusqlite::Error| {
        ImportError::corrupt(path, Some("schema".into()), e.to_string(), expected)
    };
    let mut names = Vec::new();
    {
        let mut statement = connection
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .map_err(fail)?;
        let mut rows = statement.query([]).map_err(fail)?;
        while let Some(row) = rows.next().map_err(fail)? {
            names.push(row.get::<_, String>(0).map_err(fail)?);
        }
    }
    let mut out = BTreeMap::new();
    for name in names {
        let mut statement = connection
            .prepare(&format!("PRAGMA table_info({})", quote(&name)))
            .map_err(fail)?;
        let mut rows = statement.query([]).map_err(fail)?;
        let mut columns = BTreeSet::new();
        while let Some(row) = rows.next().map_err(fail)? {
            columns.insert(row.get::<_, String>(1).map_err(fail)?);
        }
        out.insert(name, columns);
    }
    Ok(out)
}

/// An identifier quoted for SQL.
pub(super) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Every row of `sql` as a map of column name to JSON value (text, integer,
/// real, null; a blob as null), with the row's number for errors.
pub(super) fn rows(
    connection: &Connection,
    sql: &str,
    path: &Path,
    table: &str,
    expected: &str,
) -> Result<Vec<serde_json::Map<String, Value>>, ImportError> {
    let fail = |e: rusqlite::Error| {
        ImportError::corrupt(
            path,
            Some(format!("table {table}")),
            e.to_string(),
            expected,
        )
    };
    let mut statement = connection.prepare(sql).map_err(fail)?;
    let names: Vec<String> = statement
        .column_names()
        .into_iter()
        .map(str::to_string)
        .collect();
    let mut rows = statement.query([]).map_err(fail)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().map_err(fail)? {
        let mut map = serde_json::Map::new();
        for (index, name) in names.iter().enumerate() {
            let value = match row.get_ref(index).map_err(fail)? {
                ValueRef::Null | ValueRef::Blob(_) => Value::Null,
                ValueRef::Integer(n) => Value::from(n),
                ValueRef::Real(f) => {
                    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
                }
                ValueRef::Text(bytes) => Value::String(String::from_utf8_lossy(bytes).into_owned()),
            };
            map.insert(name.clone(), value);
        }
        out.push(map);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_running_tool_left_in_its_write_ahead_log_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);
                 INSERT INTO t (name) VALUES ('in the log');",
            )
            .unwrap();
        assert!(
            std::fs::metadata(dir.path().join("wal.db-wal"))
                .unwrap()
                .len()
                > 0
        );
        let c = open(&path, "x").unwrap();
        let r = rows(&c, "SELECT * FROM t", &path, "t", "x").unwrap();
        assert_eq!(r.len(), 1, "the row still in the -wal file");
        drop(writer);
    }

    #[test]
    fn uri_paths_escape_what_a_uri_would_read() {
        assert_eq!(
            uri_path(Path::new("/a b/c?d#e%.db")),
            "/a%20b/c%3Fd%23e%25.db"
        );
    }

    #[test]
    fn a_database_is_read_without_creating_files_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        {
            let c = Connection::open(&path).unwrap();
            c.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t (name) VALUES ('x');")
                .unwrap();
        }
        let before: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let c = open(&path, "a test database").unwrap();
        let t = tables(&c, &path, "x").unwrap();
        assert!(t["t"].contains("name"));
        let r = rows(&c, "SELECT * FROM t", &path, "t", "x").unwrap();
        assert_eq!(r[0]["name"], "x");
        assert!(
            c.execute("INSERT INTO t (name) VALUES ('y')", []).is_err(),
            "read-only"
        );
        drop(c);
        let after: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(before, after);
        // Not a database: named, with what was expected.
        let bad = dir.path().join("bad.db");
        std::fs::write(
            &bad,
            b"this is not sqlite, just text that is long enough to matter",
        )
        .unwrap();
        let e = open(&bad, "a claude-mem database").unwrap_err().to_string();
        assert!(
            e.contains("bad.db") && e.contains("expected a claude-mem database"),
            "{e}"
        );
    }
}
