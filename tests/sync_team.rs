//! Sync at team scale, against the test Postgres: pull scopes by project and
//! namespace (a machine pulls what it works on, plus what it names, and
//! backfills a project it starts on); tombstone compaction, and a machine
//! that comes back after it without bringing a deleted record back; and the
//! versions of the server's tables (and of a store's sync state) meeting a
//! knowledge-db of another version.

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::time::Duration;

use common::TestStore;
use pg::{contents, machine, pg, sync, Db};
use serde_json::{json, Value};

/// Adds notes `(id, namespace, project, text)` without vectors.
fn add_in(store: &TestStore, notes: &[(&str, &str, Option<&str>, &str)]) {
    let lines: Vec<String> = notes
        .iter()
        .map(|(id, ns, project, text)| {
            let mut note = json!({"id": id, "namespace": ns, "text": text});
            if let Some(p) = project {
                note["project"] = json!(p);
            }
            note.to_string()
        })
        .collect();
    store.add_later(
        &format!("notes-{}.jsonl", notes[0].0),
        lines.join("\n").as_bytes(),
    );
}

fn ids(store: &TestStore) -> Vec<String> {
    contents(store).into_keys().collect()
}

fn sync_args(store: &TestStore, db: &Db, args: &[&str]) -> Value {
    let mut full = vec!["sync", "--url", &db.url];
    full.extend_from_slice(args);
    store.json(&full)
}

#[test]
fn a_machine_pulls_the_projects_it_works_on_and_those_it_names() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "scopes");
    let a = machine("ana@laptop", "[\"*\"]");
    let mut notes = Vec::new();
    for (project, n) in [("/src/api", 4), ("/src/web", 3), ("/src/payroll", 5)] {
        for i in 0..n {
            notes.push((format!("{}-{i}", &project[5..]), project));
        }
    }
    let borrowed: Vec<(&str, &str, Option<&str>, &str)> = notes
        .iter()
        .map(|(id, p)| (id.as_str(), "team", Some(*p), "a note of the project"))
        .collect();
    add_in(&a, &borrowed);
    add_in(
        &a,
        &[("hb-1", "handbook", None, "how we review code, for everyone")],
    );
    assert_eq!(sync(&a, &db)["pushed"], 13);

    // Bo has worked on the api (a record of his own there, unshared) and
    // names the web project; payroll and the handbook stay on the server.
    let b = machine("bo@desktop", "[]");
    b.set_config(&[("pull", "[\"project:/src/web\"]")]);
    add_in(
        &b,
        &[("bo-own", "private", Some("/src/api/"), "bo's own api note")],
    );
    let first = sync(&b, &db);
    assert_eq!(first["pulled"], 7, "{first}");
    assert_eq!(
        first["pull_received"], 7,
        "the server filtered the rest: {first}"
    );
    assert_eq!(first["left_remote"], 6, "{first}");
    assert_eq!(
        first["pulled_scope"],
        json!(["project:/src/api", "project:/src/web"])
    );
    let held = ids(&b);
    assert!(held
        .iter()
        .all(|id| !id.starts_with("payroll") && id != "hb-1"));
    assert_eq!(held.len(), 8);

    // The status says what is pulled and what is left remote.
    let status = b.json(&["sync", "--status"]);
    assert_eq!(status["worked_on"], json!(["/src/api"]), "{status}");
    assert_eq!(
        status["remote_scopes"],
        json!([["project:/src/payroll", 5], ["namespace:handbook", 1]]),
        "{status}"
    );
    let text = b.cmd().args(["sync", "--status"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("6 record(s) in 2 scope(s) left remote: project:/src/payroll (5)"),
        "{text}"
    );

    // New records of a scope pulled arrive; those of the others do not.
    add_in(
        &a,
        &[
            ("api-new", "team", Some("/src/api"), "a later api note"),
            (
                "payroll-new",
                "team",
                Some("/src/payroll"),
                "a later payroll note",
            ),
        ],
    );
    sync(&a, &db);
    let second = sync(&b, &db);
    assert_eq!(second["pulled"], 1, "{second}");
    assert!(ids(&b).contains(&"api-new".to_string()));

    // Bo starts on payroll: its earlier records come in (a backfill), and
    // naming the handbook namespace brings that in too.
    add_in(
        &b,
        &[(
            "bo-pay",
            "private",
            Some("/src/payroll"),
            "bo starts on payroll",
        )],
    );
    let third = sync_args(
        &b,
        &db,
        &["--pull", "project:/src/web", "--pull", "handbook"],
    );
    assert_eq!(third["backfilled"], 7, "{third}");
    assert_eq!(third["left_remote"], 0, "{third}");
    let mut want: Vec<String> = ids(&a);
    want.extend(["bo-own".to_string(), "bo-pay".to_string()]);
    want.sort();
    assert_eq!(ids(&b), want);

    // Deletes travel whatever the scope; nothing is pulled twice.
    a.cmd().args(["delete", "web-0"]).assert().success();
    sync(&a, &db);
    let fourth = sync(&b, &db);
    assert_eq!(fourth["pulled_deletes"], 1, "{fourth}");
    assert_eq!(fourth["pulled"], 0, "{fourth}");

    // `*` pulls everything again; a bad scope is a usage error.
    let all = machine("cy@ci", "[]");
    assert_eq!(sync(&all, &db)["pulled"], 14);
    let bad = b
        .cmd()
        .args(["sync", "--url", &db.url, "--pull", "colour:blue"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("pull scope"));
}

/// `kdb_meta`'s value of `key`.
fn meta(db: &Db, key: &str) -> Option<String> {
    db.client()
        .query_opt("SELECT value FROM kdb_meta WHERE key = $1", &[&key])
        .unwrap()
        .map(|r| r.get(0))
}

fn tombstones(db: &Db) -> Vec<String> {
    db.rows()
        .into_iter()
        .filter(|(_, (deleted, _, _))| *deleted)
        .map(|(id, _)| id)
        .collect()
}

/// A delete is compacted once every machine that pulls has seen it; with a
/// retention of 0 at once. A machine that was away while its delete was
/// compacted, holding an older change of the record, neither keeps it nor
/// brings it back: before compaction existed the tombstone stayed forever
/// (this fails at `tombstones(&db).is_empty()`), and compaction without the
/// returning machine's check of its ids resurrects the record on every
/// machine (checked: with the check switched off this fails at the first
/// `ids(store) == ["keep"]` after C's return, `plan` back on A).
#[test]
fn compacted_deletes_are_not_brought_back_by_a_machine_that_was_away() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "compact");
    let [a, b, c] =
        ["ana@laptop", "bo@desktop", "cy@old-laptop"].map(|origin| machine(origin, "[\"team\"]"));
    add_in(
        &a,
        &[
            ("plan", "team", None, "ship on friday"),
            ("keep", "team", None, "the staging db is in eu-west-1"),
            ("gone", "team", None, "a note everyone will see deleted"),
        ],
    );
    for store in [&a, &b, &c] {
        sync(store, &db);
    }
    assert_eq!(ids(&c).len(), 3);

    // Every machine sees a delete: the sync after the last one compacts it.
    a.cmd().args(["delete", "gone"]).assert().success();
    sync(&a, &db);
    sync(&b, &db);
    assert_eq!(tombstones(&db), vec!["gone"], "C has not pulled it yet");
    sync(&c, &db);
    assert!(!ids(&c).contains(&"gone".to_string()));
    let report = sync(&a, &db);
    assert!(
        tombstones(&db).is_empty(),
        "every machine has seen the delete, yet the tombstone stays: {report}"
    );

    // C goes away with a change of `plan` it never pushed; then A deletes
    // `plan` (a newer write), and the team's retention compacts it at once.
    add_in(&c, &[("plan", "team", None, "ship on monday (cy's edit)")]);
    std::thread::sleep(Duration::from_millis(1100));
    a.cmd().args(["delete", "plan"]).assert().success();
    sync(&a, &db);
    sync(&b, &db);
    db.client()
        .execute(
            "UPDATE kdb_meta SET value = '0' WHERE key = 'tombstone_retention'",
            &[],
        )
        .unwrap();
    sync(&b, &db);
    assert!(tombstones(&db).is_empty(), "{:?}", db.rows());
    assert!(
        meta(&db, "compacted_through")
            .unwrap()
            .parse::<i64>()
            .unwrap()
            > 0
    );

    // C comes back: it is told, checks its ids, and deletes `plan` instead
    // of pushing its edit, which would bring `plan` back everywhere.
    let back = sync(&c, &db);
    for store in [&a, &b, &c] {
        sync(store, &db);
        assert_eq!(
            ids(store),
            vec!["keep"],
            "{}: {back}",
            store.path().display()
        );
    }
    assert_eq!(db.live_ids(), vec!["keep"]);
    assert_eq!(back["caught_up"], true, "{back}");
    assert_eq!(back["compacted_deletes_here"], 1, "{back}");
    assert_eq!(back["pushed"], 0, "{back}");
}

/// A change made after the newest compacted delete is a newer write: it
/// wins over the delete, as it would have against the tombstone.
#[test]
fn a_change_newer_than_a_compacted_delete_is_kept_and_pushed() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "compactnewer");
    let a = machine("ana@laptop", "[\"team\"]");
    let c = machine("cy@old-laptop", "[\"team\"]");
    add_in(&a, &[("plan", "team", None, "ship on friday")]);
    sync(&a, &db);
    sync(&c, &db);
    a.cmd().args(["delete", "plan"]).assert().success();
    sync(&a, &db);
    db.client()
        .execute(
            "UPDATE kdb_meta SET value = '0' WHERE key = 'tombstone_retention'",
            &[],
        )
        .unwrap();
    sync(&a, &db);
    assert!(tombstones(&db).is_empty());
    std::thread::sleep(Duration::from_millis(1100));
    add_in(
        &c,
        &[("plan", "team", None, "ship on monday, decided later")],
    );
    let back = sync(&c, &db);
    assert_eq!(back["compacted_deletes_here"], 0, "{back}");
    assert_eq!(back["pushed"], 1, "{back}");
    assert_eq!(db.live_ids(), vec!["plan"]);
}

/// Takes the tables back to schema 1 as knowledge-db 1 made them.
fn downgrade_to_v1(db: &Db) {
    db.client()
        .batch_execute(
            "DROP TABLE kdb_machines; DROP INDEX kdb_records_tombstones;
             DELETE FROM kdb_meta WHERE key NOT IN ('schema_version', 'instance');
             UPDATE kdb_meta SET value = '1' WHERE key = 'schema_version';",
        )
        .unwrap();
}

fn server_rows(db: &Db) -> BTreeMap<String, (bool, String, String)> {
    db.rows()
}

#[test]
fn tables_of_another_version_are_migrated_or_refused_never_misread() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "schema");
    let a = machine("ana@laptop", "[\"team\"]");
    add_in(
        &a,
        &[
            ("n1", "team", None, "one"),
            ("n2", "team", Some("/src/api"), "two"),
        ],
    );
    sync(&a, &db);

    // Tables of schema 1 (a team still on knowledge-db 1): migrated forward
    // in place, every row kept, and the sync says so.
    downgrade_to_v1(&db);
    let before = server_rows(&db);
    let b = machine("bo@desktop", "[\"team\"]");
    let out = b
        .cmd()
        .args(["sync", "--url", &db.url, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["migrated_from"], 1, "{report}");
    assert_eq!(report["pulled"], 2, "{report}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("from version 1 to 2"));
    assert_eq!(meta(&db, "schema_version").as_deref(), Some("2"));
    assert_eq!(server_rows(&db), before);
    assert_eq!(
        sync(&a, &db)["pulled"],
        0,
        "a's state survived the migration"
    );

    // Tables of a newer knowledge-db that this one must not write: refused
    // with a message, before a row is read or written.
    add_in(&a, &[("n3", "team", None, "three")]);
    db.client()
        .batch_execute(
            "UPDATE kdb_meta SET value = '3' WHERE key = 'schema_version';
             UPDATE kdb_meta SET value = '3' WHERE key = 'oldest_reader';",
        )
        .unwrap();
    let c = machine("cy@ci", "[]");
    for store in [&a, &c] {
        let out = store
            .cmd()
            .args(["sync", "--url", &db.url])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("version 3") && err.contains("upgrade knowledge-db"),
            "{err}"
        );
    }
    assert_eq!(server_rows(&db), before, "nothing was written");
    assert!(ids(&c).is_empty(), "nothing was read");
    let status = a.json(&["sync", "--status"]);
    assert!(
        status["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("version 3"),
        "{status}"
    );

    // A newer layout that declares this one a safe reader: synced.
    db.client()
        .execute(
            "UPDATE kdb_meta SET value = '2' WHERE key = 'oldest_reader'",
            &[],
        )
        .unwrap();
    assert_eq!(sync(&a, &db)["pushed"], 1);
    assert_eq!(sync(&c, &db)["pulled"], 3);
    assert_eq!(
        meta(&db, "schema_version").as_deref(),
        Some("3"),
        "not downgraded"
    );

    // A version knowledge-db never wrote: a message naming the table.
    db.client()
        .execute(
            "UPDATE kdb_meta SET value = 'two' WHERE key = 'schema_version'",
            &[],
        )
        .unwrap();
    let out = a.cmd().args(["sync", "--url", &db.url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no readable schema_version"));
}

/// A store whose sync state a newer knowledge-db wrote is left as it is.
#[test]
fn a_sync_state_of_a_newer_knowledge_db_is_refused_and_kept() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "stateformat");
    let a = machine("ana@laptop", "[\"team\"]");
    add_in(&a, &[("n1", "team", None, "one")]);
    sync(&a, &db);
    let path = a.path().join("sync").join("state.json");
    let newer = r#"{"format": 9, "cursor": {"shards": [4, 7]}, "machine": "m"}"#;
    std::fs::write(&path, newer).unwrap();
    let out = a.cmd().args(["sync", "--url", &db.url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("state.json") && err.contains("newer knowledge-db"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), newer);
}
