//! `knowledge-db ui` over plain HTTP, without a browser (tests/ui/ drives it
//! in Chromium): who is refused (no token, a wrong token, a foreign Host, a
//! write from another origin or without --allow-delete), that its answers are
//! the library's (the same hits as `search --json`, the same counts as
//! `stats`), that it bounds what it is asked, that it deletes what `delete`
//! deletes, and that Ctrl-C stops it.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::TestStore;
use serde_json::Value;

/// A running viewer: its process, port and the path prefix with the token.
struct Ui {
    child: Child,
    port: u16,
    base: String,
}

impl Ui {
    fn start(store: &TestStore, extra: &[&str]) -> Ui {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
            .arg("--store")
            .arg(store.path())
            .args(["ui", "--no-vectors"])
            .args(extra)
            .env_remove("KNOWLEDGE_DB_HOME")
            .env("KNOWLEDGE_DB_UPKEEP", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ui");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the URL");
        let url = line.trim();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .unwrap_or_else(|| panic!("not a loopback URL: {url:?}"));
        let (port, base) = rest.split_at(rest.find('/').expect("a path"));
        assert!(
            base.starts_with("/t/") && base.len() == 3 + 64 + 1,
            "{base}"
        );
        Ui {
            child,
            port: port.parse().expect("port"),
            base: base.to_string(),
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// GET `path` (under the token) with the right Host; status and JSON.
    fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = http(
            self.port,
            "GET",
            &format!("{}{path}", self.base),
            &[("Host", &self.host())],
            "",
        );
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }

    /// POST a forget from the page's own origin.
    fn forget(&self, body: &str) -> (u16, Value) {
        let origin = format!("http://{}", self.host());
        let (status, text) = http(
            self.port,
            "POST",
            &format!("{}api/forget", self.base),
            &[
                ("Host", &self.host()),
                ("Origin", &origin),
                ("Content-Type", "application/json"),
            ],
            body,
        );
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Ctrl-C; the exit status and what it said on stderr.
    fn interrupt(mut self) -> (Option<i32>, String) {
        // SAFETY: sends SIGINT to our own child process.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        let status = self.child.wait().expect("wait");
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        (status.code(), stderr)
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a fresh connection; the status and the body.
fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("read");
    let text = String::from_utf8_lossy(&response).to_string();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status");
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    (status, body)
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

fn store_with_samples() -> TestStore {
    let store = TestStore::new();
    store.add_samples();
    store
}

#[test]
fn every_request_needs_the_token_and_a_loopback_host() {
    let store = store_with_samples();
    let ui = Ui::start(&store, &[]);
    let host = ui.host();
    let refused = |path: &str, host: &str| http(ui.port, "GET", path, &[("Host", host)], "").0;
    assert_eq!(refused("/", &host), 403);
    assert_eq!(refused("/api/info", &host), 403);
    assert_eq!(refused("/t/", &host), 403);
    let wrong = format!("/t/{}/api/info", "0".repeat(64));
    assert_eq!(refused(&wrong, &host), 403);
    let good = format!("{}api/info", ui.base);
    for foreign in [
        format!("evil.example:{}", ui.port),
        "127.0.0.1".to_string(),
        format!("127.0.0.1:{}", ui.port + 1),
    ] {
        let (status, body) = http(ui.port, "GET", &good, &[("Host", &foreign)], "");
        assert_eq!(status, 403, "{foreign}");
        assert!(body.contains("Host header"), "{body}");
    }
    // No Host header at all.
    assert_eq!(http(ui.port, "GET", &good, &[], "").0, 403);
    let localhost = format!("localhost:{}", ui.port);
    assert_eq!(refused(&good, &localhost), 200);
    // The page and its scripts too.
    assert_eq!(refused(&format!("{}assets/app.js", ui.base), &host), 200);
    assert_eq!(refused("/assets/app.js", &host), 403);
    assert_eq!(
        refused(&format!("{}assets/../Cargo.toml", ui.base), &host),
        404
    );
    let (status, page) = http(ui.port, "GET", &ui.base, &[("Host", &host)], "");
    assert_eq!(status, 200);
    assert!(page.contains("assets/app.js"), "{page}");
}

#[test]
fn answers_are_the_librarys_and_bounded() {
    let store = store_with_samples();
    let ui = Ui::start(&store, &[]);
    let (status, info) = ui.get("api/info");
    assert_eq!(status, 200);
    assert_eq!(info["allow_delete"], false);

    // The same hits as the CLI's search with the same filters (BM25: the
    // viewer was started with --no-vectors).
    let cli = store.json(&[
        "search",
        "invoice query index",
        "--all-namespaces",
        "--mode",
        "bm25",
    ]);
    let (status, answer) = ui.get("api/search?q=invoice%20query%20index");
    assert_eq!(status, 200, "{answer}");
    let ids = |v: &Value| -> Vec<String> {
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert!(!ids(&answer).is_empty());
    assert_eq!(ids(&answer), ids(&cli));
    let hit = &answer["results"][0];
    assert!(hit["scores"]["bm25"].is_number() && hit["scores"]["bm25_rank"] == 1);
    let (_, tasks) = ui.get("api/search?q=invoice&kind=task");
    assert!(tasks["results"]
        .as_array()
        .expect("results")
        .iter()
        .all(|h| h["kind"] == "task"));

    // Nothing relevant: the explanation and the words no record holds.
    let (_, nothing) = ui.get("api/search?q=zqxjv%20wombat&min_score=0.99");
    assert_eq!(nothing["results"], Value::Array(vec![]));
    assert!(nothing["unknown_words"]
        .as_array()
        .is_some_and(|w| w.contains(&Value::from("zqxjv"))));

    // Sessions, a session's summaries, and a record with its provenance.
    let (_, sessions) = ui.get("api/sessions?limit=1");
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(1));
    assert!(sessions["total"].as_u64().unwrap_or(0) >= 2);
    let (_, session) = ui.get("api/session?id=4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10");
    let summaries = session["summaries"].as_array().expect("summaries");
    assert_eq!(summaries.len(), 4, "{session}");
    let (status, record) = ui.get("api/record?id=seg-auth-0001");
    assert_eq!(status, 200);
    // `add` embedded the samples when the model is installed, else not.
    let embedded = store.json(&["stats"])["vectors"]["with_vector"] != 0;
    assert_eq!(record["vector"], if embedded { "full" } else { "none" });
    assert_eq!(record["tier"], "l2");
    assert_eq!(record["record"]["source"]["segment_id"], "seg-auth-0001");
    assert_eq!(record["provenance"], Value::Null, "added, not ingested");
    let (status, missing) = ui.get("api/record?id=no-such-record");
    assert_eq!(status, 404);
    assert!(missing["error"]
        .as_str()
        .unwrap_or_default()
        .contains("no-such-record"));

    // Health: the counts `stats` gives; the last verify once one ran.
    let stats = store.json(&["stats"]);
    let (_, health) = ui.get("api/health");
    assert_eq!(health["stats"]["records"], stats["records"]);
    assert_eq!(health["stats"]["by_kind"], stats["by_kind"]);
    assert_eq!(health["verify"], Value::Null);
    store.cmd().arg("verify").assert().success();
    let (_, health) = ui.get("api/health");
    assert_eq!(health["verify"]["ok"], true);

    // Bounded.
    let long = format!("api/search?q={}", "x".repeat(2001));
    assert_eq!(ui.get(&long).0, 400);
    assert_eq!(ui.get("api/search?q=a&k=101").0, 400);
    assert_eq!(ui.get("api/sessions?limit=101").0, 400);
    assert_eq!(ui.get("api/turns?session=s&limit=201").0, 400);
    let (status, bad) = ui.get("api/search?q=a&since=someday");
    assert_eq!(status, 400);
    assert!(bad["error"].as_str().unwrap_or_default().contains("since"));
}

/// Messages of three sessions: one in project /work/alpha, one in
/// /work/beta pulled from a teammate's machine, one of no project.
fn scoped_records() -> String {
    let rows = [
        (
            "alpha-session",
            r#""project": "/work/alpha""#,
            "the flaky zebrafish migration in alpha",
        ),
        (
            "beta-session",
            r#""project": "/work/beta", "sync": {"origin": "ana@laptop"}"#,
            "the flaky zebrafish migration in beta",
        ),
        (
            "loose-session",
            r#""project": """#,
            "the flaky zebrafish migration of no project",
        ),
    ];
    rows.iter()
        .enumerate()
        .map(|(i, (session, scope, text))| {
            format!(
                r#"{{"kind": "message", "id": "scoped-{i}", "session_id": "{session}", "turn_index": 1, "role": "user", "text": "{text}", "timestamp": "2026-02-0{}T10:00:00Z", {scope}}}"#,
                i + 1
            ) + "\n"
        })
        .collect()
}

#[test]
fn the_timeline_groups_by_project_and_search_filters_by_project_and_origin() {
    let store = TestStore::new();
    store.add_later("scoped.jsonl", scoped_records().as_bytes());
    let ui = Ui::start(&store, &[]);

    // Projects, newest first; "" is the group of sessions of no project.
    let (status, groups) = ui.get("api/groups");
    assert_eq!(status, 200, "{groups}");
    assert_eq!(groups["group_by"], "project");
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert_eq!(names, ["", "/work/beta", "/work/alpha"], "{groups}");
    let sessions_of = |query: &str| -> Vec<String> {
        let (status, page) = ui.get(&format!("api/sessions?{query}"));
        assert_eq!(status, 200, "{page}");
        page["sessions"]
            .as_array()
            .expect("sessions")
            .iter()
            .map(|s| s["session_id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(sessions_of("group=%2Fwork%2Falpha"), ["alpha-session"]);
    assert_eq!(sessions_of("group="), ["loose-session"]);
    assert_eq!(sessions_of("limit=10").len(), 3);

    // The filters' choices.
    let (_, scopes) = ui.get("api/scopes");
    assert_eq!(scopes["projects"]["/work/alpha"], 1, "{scopes}");
    assert_eq!(scopes["projects"][""], 1, "{scopes}");
    assert_eq!(scopes["origins"]["ana@laptop"], 1, "{scopes}");
    assert_eq!(scopes["origins"]["local"], 2, "{scopes}");
    assert_eq!(scopes["namespaces"]["default"], 3, "{scopes}");

    // A project's search holds its records and those of no project; hits
    // name their project and origin.
    let ids = |query: &str| -> Vec<String> {
        let (status, answer) = ui.get(&format!("api/search?q=zebrafish&all=1{query}"));
        assert_eq!(status, 200, "{answer}");
        let mut ids: Vec<String> = answer["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["id"].as_str().unwrap_or_default().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(""), ["scoped-0", "scoped-1", "scoped-2"]);
    assert_eq!(ids("&project=%2Fwork%2Falpha"), ["scoped-0", "scoped-2"]);
    assert_eq!(ids("&origin=ana%40laptop"), ["scoped-1"]);
    assert_eq!(ids("&origin=local"), ["scoped-0", "scoped-2"]);
    let (_, answer) = ui.get("api/search?q=zebrafish%20beta&origin=ana%40laptop&all=1");
    let hit = &answer["results"][0];
    assert_eq!(
        (&hit["project"], &hit["origin"]),
        (&Value::from("/work/beta"), &Value::from("ana@laptop")),
        "{answer}"
    );

    // The record view: project, origin, provenance.
    let (_, record) = ui.get("api/record?id=scoped-1");
    assert_eq!(record["project"], "/work/beta", "{record}");
    assert_eq!(record["origin"], "ana@laptop", "{record}");
    let (_, record) = ui.get("api/record?id=scoped-2");
    assert_eq!(
        (&record["project"], &record["origin"]),
        (&Value::from(""), &Value::from("local")),
        "{record}"
    );
    assert_eq!(record["provenance"], Value::Null, "{record}");
}

/// The page forgets (both tiers, from disk, tombstoned as `forget` does)
/// only when started with --allow-delete, only from its own origin.
#[test]
fn forgets_only_with_allow_delete_from_its_own_origin() {
    let store = store_with_samples();
    let ui = Ui::start(&store, &[]);
    let (status, body) = ui.forget(r#"{"ids":["seg-auth-0001"]}"#);
    assert_eq!(status, 403);
    assert!(body["error"]
        .as_str()
        .unwrap_or_default()
        .contains("--allow-delete"));
    store
        .cmd()
        .args(["get", "seg-auth-0001"])
        .assert()
        .success();
    drop(ui);

    let ui = Ui::start(&store, &["--allow-delete"]);
    let path = format!("{}api/forget", ui.base);
    let host = ui.host();
    let json = ("Content-Type", "application/json");
    let body = r#"{"ids":["seg-auth-0001"]}"#;
    for headers in [
        vec![
            ("Host", host.as_str()),
            json,
            ("Origin", "http://evil.example"),
        ],
        vec![("Host", host.as_str()), json],
        vec![
            ("Host", host.as_str()),
            ("Content-Type", "text/plain"),
            ("Origin", &format!("http://{host}")),
        ],
    ] {
        assert_eq!(
            http(ui.port, "POST", &path, &headers, body).0,
            403,
            "{headers:?}"
        );
    }
    let huge = format!(r#"{{"ids":["{}"]}}"#, "x".repeat(70_000));
    assert_eq!(ui.forget(&huge).0, 413);
    assert_eq!(ui.forget(r#"{"ids":[],"nonsense":1}"#).0, 400);
    assert_eq!(ui.forget(r#"{}"#).0, 400);
    store
        .cmd()
        .args(["get", "seg-auth-0001"])
        .assert()
        .success();

    let (status, report) = ui.forget(body);
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["live"][0], "seg-auth-0001");
    store.cmd().args(["get", "seg-auth-0001"]).assert().code(1);
    // Tombstoned as `forget` does: adding it again brings nothing back.
    let listed = store.json(&["forget", "--list"]);
    assert!(listed.to_string().contains("seg-auth-0001"), "{listed}");

    // A whole session, named by the start of its id as the page shows it.
    let session = "9b7e11d0-55aa-4c1e-8f0e-6a2d4b9c0f33";
    let before = store.json(&["stats"])["records"].as_u64().unwrap_or(0);
    let (status, report) = ui.forget(r#"{"session":"9b7e11d0"}"#);
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["session"], session, "{report}");
    let forgotten = report["forgotten"].as_u64().unwrap_or(0);
    assert!(forgotten >= 4, "{report}");
    assert_eq!(store.json(&["stats"])["records"], before - forgotten);
    let (_, after) = ui.get(&format!("api/session?id={session}"));
    assert_eq!(after["summaries"], Value::Array(vec![]));
    let (status, _) = ui.forget(&format!(r#"{{"session":"{session}"}}"#));
    assert_eq!(status, 404);
    let (code, stderr) = ui.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[test]
fn a_port_in_use_is_named() {
    let store = store_with_samples();
    let ui = Ui::start(&store, &[]);
    let out = store
        .cmd()
        .args(["ui", "--no-vectors", "--port"])
        .arg(ui.port.to_string())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("127.0.0.1:{}", ui.port)),
        "{stderr}"
    );
    assert!(stderr.contains("--port 0"), "{stderr}");
}
