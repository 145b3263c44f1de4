//! Secrets never stored, through every write path of the binary: fresh
//! random secrets of every supported kind, planted where real ones turn up
//! in a real-format Claude Code session, go in through `ingest`, `add`, MCP
//! `memory_add`, the Claude Code hooks (capture at Stop, the PostToolUse
//! state, the PreCompact block, the prompt hook) and `evict`, and some of
//! them on to the archive, with the shapes the battery added in stop 46
//! (`common/battery_shapes.rs`). None comes back from `export`, `get`, `search`
//! (L2 and L3) or MCP, nor is found in any file of the store; `<private>`
//! spans are gone; identifiers that only look like keys stay searchable.
//! And `scrub` cleans a store written with redaction off, in both tiers,
//! also when killed midway.

#[path = "common/battery.rs"]
mod battery;
#[path = "common/battery_audit.rs"]
mod battery_audit;
#[path = "common/battery_code.rs"]
mod battery_code;
#[path = "common/battery_round3.rs"]
mod battery_round3;
#[path = "common/battery_shapes.rs"]
mod battery_shapes;
mod common;
#[path = "common/secrets.rs"]
mod secrets;

use std::path::{Path, PathBuf};

use common::mcp;
use common::TestStore;
use secrets::{Planted, Rng};
use serde_json::{json, Value};

/// Every file under `dir`, as text (lossy), with its path.
fn files_text(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in read.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_text(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
    out
}

/// Pieces of `secret` that must not appear anywhere: its head, middle and
/// tail (12 characters each), or the whole of a shorter one.
fn pieces(secret: &str) -> Vec<String> {
    let chars: Vec<char> = secret.chars().filter(|c| *c != '\n').collect::<Vec<_>>();
    let n = chars.len();
    let w = n.min(12);
    [0, (n - w) / 2, n - w]
        .iter()
        .map(|&at| chars[at..at + w].iter().collect::<String>())
        .filter(|p| !p.contains("-----") && !p.trim().is_empty())
        .collect()
}

/// Panics naming the secret and where when any planted secret is in `text`.
fn assert_no_secret(planted: &[Planted], text: &str, seed: u64, place: &str) {
    for p in planted {
        for piece in pieces(&p.secret) {
            if let Some(at) = text.find(&piece) {
                let mut from = at.saturating_sub(300);
                while !text.is_char_boundary(from) {
                    from -= 1;
                }
                let around: String = text[from..].chars().take(400).collect();
                panic!(
                    "seed {seed}: {} ({}) comes back from {place}: …{around}…",
                    p.kind, p.place
                );
            }
        }
    }
}

/// Runs `hook <event>` with `input` on stdin; its stdout.
fn hook(store: &TestStore, event: &str, input: &Value) -> String {
    let out = store
        .cmd()
        .args(["hook", event])
        .env("KNOWLEDGE_DB_MODELS", store.dir.path().join("no-models"))
        .write_stdin(input.to_string())
        .output()
        .expect("hook");
    assert!(
        out.status.success(),
        "hook {event}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every way the store gives text back, as one text: export, get of every
/// exported id, BM25 search of both tiers for words of each planted line
/// and for the secrets themselves, and MCP search and get.
fn everything_given_back(store: &TestStore, planted: &[Planted]) -> String {
    let mut out = String::new();
    let export = store.cmd().arg("export").output().expect("export");
    assert!(export.status.success());
    let export = String::from_utf8_lossy(&export.stdout).into_owned();
    let ids: Vec<String> = export
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["id"].as_str().map(str::to_string))
        .collect();
    assert!(ids.len() > 10, "{} records exported", ids.len());
    out.push_str(&export);
    let mut get = store.cmd();
    get.arg("get").args(&ids);
    let got = get.output().expect("get");
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    out.push_str(&String::from_utf8_lossy(&got.stdout));
    let mut queries: Vec<String> = planted
        .iter()
        .flat_map(|p| [p.secret.clone(), p.line.clone()])
        .map(|q| q.chars().take(300).collect())
        .collect();
    queries.push("password token key secret deploy".into());
    for query in &queries {
        let found = store
            .cmd()
            .args([
                "search",
                "--mode",
                "bm25",
                "--tier",
                "all",
                "--all",
                "-k",
                "20",
                "--json",
                "--all-projects",
                "--",
            ])
            .arg(query)
            .output()
            .expect("search");
        assert!(
            found.status.success(),
            "{}",
            String::from_utf8_lossy(&found.stderr)
        );
        // The answer echoes the query (and its unknown words): the results
        // are what the store gives back.
        let answer: Value = serde_json::from_slice(&found.stdout).expect("search JSON");
        out.push_str(&answer["results"].to_string());
    }
    let mut calls: Vec<(&str, Value)> = vec![(
        "memory_search",
        json!({"query": "password token key secret deploy", "tier": "all", "limit": 50, "project": "*"}),
    )];
    for id in ids.iter().take(60) {
        calls.push(("memory_get", json!({"id": id})));
    }
    for result in mcp::session(store, &calls) {
        out.push_str(&result.to_string());
    }
    out
}

fn hook_input(session: &str, transcript: &Path, event: &str, extra: Value) -> Value {
    let mut input = json!({"session_id": session, "transcript_path": transcript,
        "cwd": "/home/dev/project", "hook_event_name": event});
    if let (Some(input), Some(extra)) = (input.as_object_mut(), extra.as_object()) {
        input.extend(extra.clone());
    }
    input
}

/// A JSONL record file holding every planted line in its content.
fn records_file(store: &TestStore, planted: &[Planted], marker: &str) -> PathBuf {
    let lines: Vec<String> = planted
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"id": format!("note-{i}"), "kind": "note", "title": format!("config note {i}"),
                   "content": format!("{}\n<private>{marker}</private>", p.line)})
            .to_string()
        })
        .collect();
    store.write("notes.jsonl", (lines.join("\n") + "\n").as_bytes())
}

/// The battery's stop-46 shapes (`battery_shapes.rs`: `_PASS` names, XML
/// elements, key/value configs, passwords in prose and other languages,
/// secrets set in code, password prompts, `config set`) and issue 52's
/// (`battery_round3.rs`: ten more languages, full-width and look-alike
/// letters, setters, mnemonics, cards, tables, YAML blocks) as planted secrets,
/// so that they go through every write path too, not only through `redact`.
fn planted_shapes(rng: &mut Rng) -> Vec<Planted> {
    let mut cases = Vec::new();
    battery_shapes::cases(rng, &mut cases);
    battery_round3::cases(rng, &mut cases);
    cases
        .into_iter()
        .map(|case| {
            // A shape any rule may take names no kind: "" (see the check below).
            let (kind, also) = case.kinds.split_first().unwrap_or((&"", &[]));
            let [secret] = <[String; 1]>::try_from(case.secrets).expect("one secret a shape");
            Planted {
                kind,
                secret,
                line: case.text,
                place: "battery",
                also,
            }
        })
        .collect()
}

#[test]
fn planted_secrets_never_come_back_from_any_write_path() {
    let store = TestStore::new();
    let mut rng = Rng::from_time();
    let seed = rng.seed;
    let mut planted = secrets::planted(&mut rng);
    planted.extend(planted_shapes(&mut rng));
    let marker = format!("Privet Drive {}", rng.between(100, 999));

    // ingest, then the session goes to the archive.
    let ingested = store.write(
        "sess-ingest.jsonl",
        secrets::claude_code_session("sess-ingest", &planted, &marker).as_bytes(),
    );
    store.cmd().arg("ingest").arg(&ingested).assert().success();
    store
        .cmd()
        .args(["archive", "--session", "sess-ingest"])
        .assert()
        .success();

    // add (a JSONL file of notes).
    store
        .cmd()
        .arg("add")
        .arg(records_file(&store, &planted, &marker))
        .assert()
        .success();

    // MCP memory_add.
    let mcp_records: Vec<Value> = planted
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({"id": format!("mcp-{i}"), "kind": "note", "title": "deploy notes",
            "content": format!("Remember: {}", p.line), "session_id": "sess-mcp"})
        })
        .collect();
    let added = mcp::session(&store, &[("memory_add", json!({"records": mcp_records}))]);
    assert_ne!(added[0]["isError"], true, "{added:?}");

    // The hooks, as Claude Code runs them on a live session.
    let live = store.write(
        "sess-hooks.jsonl",
        secrets::claude_code_session("sess-hooks", &planted, &marker).as_bytes(),
    );
    hook(
        &store,
        "post-tool-use",
        &hook_input(
            "sess-hooks",
            &live,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": planted[0].line}}),
        ),
    );
    hook(
        &store,
        "pre-compact",
        &hook_input(
            "sess-hooks",
            &live,
            "PreCompact",
            json!({"trigger": "auto"}),
        ),
    );
    hook(
        &store,
        "stop",
        &hook_input(
            "sess-hooks",
            &live,
            "Stop",
            json!({"stop_hook_active": false}),
        ),
    );
    hook(
        &store,
        "user-prompt-submit",
        &hook_input(
            "sess-hooks-2",
            &live,
            "UserPromptSubmit",
            json!({"prompt": format!("what did we set up for the deploy? {}", planted[1].line)}),
        ),
    );
    hook(
        &store,
        "session-end",
        &hook_input("sess-hooks", &live, "SessionEnd", json!({"reason": "exit"})),
    );

    // evict (the rolling context's write path).
    let evicted = store.write(
        "sess-evict.jsonl",
        secrets::claude_code_session("sess-evict", &planted, &marker).as_bytes(),
    );
    store
        .cmd()
        .args([
            "evict",
            "--context-window",
            "1500",
            "--min-keep",
            "2",
            "--transcript",
        ])
        .arg(&evicted)
        .assert()
        .success();

    // Every path stored something: notes, MCP records, the captured and the
    // evicted session's messages, the archived session.
    let export = store.cmd().arg("export").output().expect("export").stdout;
    let export: Vec<Value> = String::from_utf8_lossy(&export)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let has = |what: &dyn Fn(&Value) -> bool| export.iter().any(what);
    assert!(has(&|r| r["id"] == "note-0"), "add stored nothing");
    assert!(has(&|r| r["id"] == "mcp-0"), "memory_add stored nothing");
    assert!(
        has(&|r| r["source"]["session_id"] == "sess-hooks"),
        "the Stop hook captured nothing"
    );
    assert!(
        has(&|r| r["source"]["session_id"] == "sess-evict"),
        "evict stored nothing"
    );
    assert!(
        has(&|r| r["source"]["session_id"] == "sess-ingest" && r["tier"] == "l3"),
        "nothing archived"
    );

    let given_back = everything_given_back(&store, &planted);
    assert_no_secret(&planted, &given_back, seed, "export, get, search or MCP");
    assert!(!given_back.contains(&marker), "a <private> span came back");
    for p in planted.iter().filter(|p| !p.kind.is_empty()) {
        assert!(
            given_back.contains(&format!("[REDACTED {}]", p.kind))
                || p.also
                    .iter()
                    .any(|k| given_back.contains(&format!("[REDACTED {k}]"))),
            "seed {seed}: no placeholder for {}",
            p.kind
        );
    }
    for (path, text) in files_text(&store.path()) {
        assert_no_secret(&planted, &text, seed, &path.display().to_string());
        assert!(
            !text.contains(&marker),
            "private span in {}",
            path.display()
        );
    }
    // What only looks like a key stays searchable.
    let found = store.search_ids(&["--all-projects", "--tier", "all", "posthogAPIKey"]);
    assert!(!found.is_empty(), "posthogAPIKey is no longer found");
}

/// Issue 52's provenance cases (`battery_round3::calls`: `printenv
/// DB_PASSWORD`, `kubectl get secret … | base64 -d`, `heroku auth:token`,
/// `wg show … private-key`, `terraform output -raw`, `vault kv get`, Reads of
/// `master.key`, a cookie jar and `.vault_pass`, `cat` of a `.key`, a Write of
/// `.pgpass`): outputs with nothing a rule would know, secrets only by the
/// call that produced them. Through ingest (and the archive), `add` and MCP
/// `memory_add` of message records holding the blocks, the hooks and evict,
/// none comes back from any reader or any file of the store.
#[test]
fn secrets_by_provenance_never_come_back_from_any_write_path() {
    let store = TestStore::new();
    let mut rng = Rng::from_time();
    let seed = rng.seed;
    let calls = battery_round3::calls(&mut rng);
    let planted: Vec<Planted> = calls
        .iter()
        .map(|c| Planted {
            kind: c.kind,
            secret: c.secret.clone(),
            line: c.context.to_string(),
            place: "provenance",
            also: &[],
        })
        .collect();

    let ingested = store.write(
        "sess-prov-ingest.jsonl",
        battery_round3::calls_session("sess-prov-ingest", &calls).as_bytes(),
    );
    store.cmd().arg("ingest").arg(&ingested).assert().success();
    store
        .cmd()
        .args(["archive", "--session", "sess-prov-ingest"])
        .assert()
        .success();

    let lines: Vec<String> = battery_round3::calls_records("prov-add", "sess-prov-add", &calls)
        .iter()
        .map(Value::to_string)
        .collect();
    let file = store.write("prov.jsonl", (lines.join("\n") + "\n").as_bytes());
    store.cmd().arg("add").arg(&file).assert().success();

    let records = battery_round3::calls_records("prov-mcp", "sess-prov-mcp", &calls);
    let added = mcp::session(&store, &[("memory_add", json!({"records": records}))]);
    assert_ne!(added[0]["isError"], true, "{added:?}");

    let live = store.write(
        "sess-prov-hooks.jsonl",
        battery_round3::calls_session("sess-prov-hooks", &calls).as_bytes(),
    );
    hook(
        &store,
        "post-tool-use",
        &hook_input(
            "sess-prov-hooks",
            &live,
            "PostToolUse",
            json!({"tool_name": calls[0].tool, "tool_input": calls[0].input,
                   "tool_response": {"stdout": calls[0].output}}),
        ),
    );
    for (event, name, extra) in [
        ("pre-compact", "PreCompact", json!({"trigger": "auto"})),
        ("stop", "Stop", json!({"stop_hook_active": false})),
        ("session-end", "SessionEnd", json!({"reason": "exit"})),
    ] {
        hook(
            &store,
            event,
            &hook_input("sess-prov-hooks", &live, name, extra),
        );
    }

    let evicted = store.write(
        "sess-prov-evict.jsonl",
        battery_round3::calls_session("sess-prov-evict", &calls).as_bytes(),
    );
    store
        .cmd()
        .args([
            "evict",
            "--context-window",
            "800",
            "--min-keep",
            "1",
            "--transcript",
        ])
        .arg(&evicted)
        .assert()
        .success();

    let given_back = everything_given_back(&store, &planted);
    assert_no_secret(&planted, &given_back, seed, "export, get, search or MCP");
    for kind in ["secret-command-output", "secret-file"] {
        assert!(
            given_back.contains(&format!("[REDACTED {kind}]")),
            "seed {seed}: no placeholder for {kind}"
        );
    }
    for (path, text) in files_text(&store.path()) {
        assert_no_secret(&planted, &text, seed, &path.display().to_string());
    }
    // The calls themselves (commands, paths) stay searchable.
    let found = store.search_ids(&["--all-projects", "--tier", "all", "printenv"]);
    assert!(!found.is_empty(), "the command is no longer found");
}

/// A store written with redaction off, partly archived; its hooks' log
/// quoting a secret.
fn unredacted_store(planted: &[Planted], marker: &str) -> TestStore {
    let store = TestStore::new();
    let config = store.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text = text.replace("[privacy]\nredact = true", "[privacy]\nredact = false");
    assert!(text.contains("redact = false"), "{text}");
    std::fs::write(&config, text).expect("config");
    let session = store.write(
        "sess-old.jsonl",
        secrets::claude_code_session("sess-old", planted, marker).as_bytes(),
    );
    store.cmd().arg("ingest").arg(&session).assert().success();
    let other = store.write(
        "sess-old2.jsonl",
        secrets::claude_code_session("sess-old2", planted, marker).as_bytes(),
    );
    store.cmd().arg("ingest").arg(&other).assert().success();
    store
        .cmd()
        .args(["archive", "--session", "sess-old2"])
        .assert()
        .success();
    std::fs::create_dir_all(store.path().join("hooks")).expect("hooks dir");
    std::fs::write(
        store.path().join("hooks/hooks.log"),
        format!(
            "2026-01-01T00:00:00Z stop session=x failed on {}\n",
            planted[0].line
        ),
    )
    .expect("log");
    let exported = store.cmd().arg("export").output().expect("export");
    assert!(
        String::from_utf8_lossy(&exported.stdout).contains(&planted[0].secret),
        "redaction off did not keep the secret"
    );
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, text.replace("redact = false", "redact = true")).expect("config");
    store
}

#[test]
fn scrub_cleans_both_tiers_and_the_side_files_and_says_what_it_replaced() {
    let mut rng = Rng::from_time();
    let seed = rng.seed;
    let planted = secrets::planted(&mut rng);
    let marker = format!("Privet Drive {}", rng.between(100, 999));
    let store = unredacted_store(&planted, &marker);

    let dry = store.json(&["scrub", "--dry-run"]);
    assert!(dry["l2_records"].as_u64().unwrap_or(0) > 0, "{dry}");
    assert!(dry["l3_records"].as_u64().unwrap_or(0) > 0, "{dry}");
    let exported = store.cmd().arg("export").output().expect("export");
    assert!(
        String::from_utf8_lossy(&exported.stdout).contains(&planted[0].secret),
        "dry run wrote"
    );

    let out = store.cmd().arg("scrub").output().expect("scrub");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("replaced") && said.contains(planted[0].kind),
        "{said}"
    );

    let given_back = everything_given_back(&store, &planted);
    assert_no_secret(&planted, &given_back, seed, "a scrubbed store");
    for (path, text) in files_text(&store.path()) {
        assert_no_secret(&planted, &text, seed, &path.display().to_string());
    }
    let again = store.json(&["scrub"]);
    assert_eq!(again["l2_records"], 0, "{again}");
    assert_eq!(again["l3_records"], 0, "{again}");
    assert_eq!(again["side_files"], 0, "{again}");
    store.cmd().arg("verify").assert().success();
}

#[test]
fn a_scrub_killed_midway_is_finished_by_the_next() {
    for point in [
        "scrub-l2-written",
        "scrub-l2-purged",
        "scrub-archive-file-rewritten",
        "scrub-archive-committed",
    ] {
        let mut rng = Rng::from_time();
        let seed = rng.seed;
        let planted = secrets::planted(&mut rng);
        let store = unredacted_store(&planted, "Privet Drive 4");
        let records_before = store.json(&["stats"])["records"].clone();
        let killed = store
            .cmd()
            .arg("scrub")
            .env("KNOWLEDGE_DB_CRASH_AT", point)
            .output()
            .expect("scrub");
        assert!(
            !killed.status.success(),
            "{point}: the scrub was not killed"
        );
        store.cmd().arg("scrub").assert().success();
        store.cmd().arg("verify").assert().success();
        assert_eq!(
            store.json(&["stats"])["records"],
            records_before,
            "{point}: records lost"
        );
        let given_back = everything_given_back(&store, &planted);
        assert_no_secret(
            &planted,
            &given_back,
            seed,
            &format!("a scrub killed at {point}"),
        );
    }
}

#[test]
fn privacy_settings_in_config_toml_reach_every_write_and_a_bad_one_is_named() {
    let store = TestStore::new();
    let config = store.path().join("config.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    let ours = "[privacy]\nredact = true\nallow = [\"ghp_000000000000000000000000000000000000\"]\nallow_patterns = []\n\n[[privacy.extra_patterns]]\nname = \"acme-token\"\nregex = '''acme_[a-z0-9]{24}'''\nkeywords = [\"acme_\"]\n\n[[privacy.extra_patterns]]\nname = \"acme-key\"\nregex = '''acmekey:[a-z0-9]{20}'''\nkeywords = [\"acmekey:\"]\n";
    let start = text.find("[privacy]").expect("a [privacy] table");
    std::fs::write(&config, format!("{}{ours}", &text[..start])).expect("config");
    let note = json!({"id": "n1", "kind": "note", "title": "tokens",
        "content": "acme_0123456789abcdefghijklmn and the test token ghp_000000000000000000000000000000000000"});
    let file = store.write("n.jsonl", format!("{note}\n").as_bytes());
    let out = store.cmd().arg("add").arg(&file).output().expect("add");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 acme-token"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let got = store.json(&["get", "n1"]).to_string();
    assert!(
        got.contains("[REDACTED acme-token]") && !got.contains("acme_0123"),
        "{got}"
    );
    assert!(
        got.contains("ghp_000000000000000000000000000000000000"),
        "the allowed value went: {got}"
    );
    // The hooks' files too: the custom rule sees the whole text, before the
    // session state splits it into terms (`acme_` and the value apart).
    let custom = "acmekey:9z8y7x6w5v4u3t2s1r0q";
    let session = "custom-rule-session";
    let line = json!({"type": "user", "sessionId": session, "uuid": "u1",
        "timestamp": "2026-11-27T00:00:00Z", "cwd": "/home/dev/project",
        "message": {"role": "user", "content": format!("deploy with {custom} please")}});
    let transcript = store.write(&format!("{session}.jsonl"), format!("{line}\n").as_bytes());
    hook(
        &store,
        "post-tool-use",
        &hook_input(
            session,
            &transcript,
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "true"}}),
        ),
    );
    hook(
        &store,
        "stop",
        &hook_input(session, &transcript, "Stop", json!({})),
    );
    for (path, text) in files_text(&store.path()) {
        assert!(
            !text.contains("9z8y7x6w5v4u3t2s"),
            "{} holds the custom secret",
            path.display()
        );
    }

    let bad = format!(
        "{}[privacy]\n[[privacy.extra_patterns]]\nname = \"x\"\nregex = '''acme_[a-z'''\n",
        &text[..start]
    );
    std::fs::write(&config, bad).expect("config");
    let before = store.snapshot();
    let out = store.cmd().arg("add").arg(&file).output().expect("add");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config.toml") && err.contains("privacy.extra_patterns[0].regex"),
        "{err}"
    );
    assert_eq!(before, store.snapshot(), "a failed add changed the store");
}

/// Every write path, many times in a row with fresh values (issue 52: "100
/// runs in a row on every write path"): each round plants every kind of
/// `secrets::planted`, every shape of the battery (stop 46's and issue
/// 52's) and every provenance case into a new store through ingest (and the
/// archive), `add`, MCP `memory_add`, the hooks and evict, then looks for
/// each value in `export`, `get` of every record, one BM25 search of both
/// tiers, MCP `memory_search` and every file of the store. (The searches for
/// each planted line are the tests above.) `KDB_ROUNDS` rounds (default
/// 100): `KDB_ROUNDS=100 cargo nextest run --test privacy_paths
/// --run-ignored only -E 'test(many_rounds)' --no-capture`.
#[test]
#[ignore = "a long measurement: run by hand with KDB_ROUNDS"]
fn many_rounds_of_every_write_path_leave_no_value() {
    let rounds: usize = std::env::var("KDB_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(100);
    let mut rng = Rng::from_time();
    let seed = rng.seed;
    let mut values = 0;
    for round in 0..rounds {
        let store = TestStore::new();
        let mut planted = secrets::planted(&mut rng);
        planted.extend(planted_shapes(&mut rng));
        let calls = battery_round3::calls(&mut rng);
        planted.extend(calls.iter().map(|c| Planted {
            kind: c.kind,
            secret: c.secret.clone(),
            line: c.context.to_string(),
            place: "provenance",
            also: &[],
        }));
        values += planted.len();
        let marker = format!("Privet Drive {}", rng.between(100, 999));
        let plain: Vec<Planted> = planted
            .iter()
            .filter(|p| p.place != "provenance")
            .cloned()
            .collect();
        let session = |name: &str| {
            let mut text = secrets::claude_code_session(name, &plain, &marker);
            text.push_str(&battery_round3::calls_session(name, &calls));
            text
        };
        let ingested = store.write("r-ingest.jsonl", session("r-ingest").as_bytes());
        store.cmd().arg("ingest").arg(&ingested).assert().success();
        store
            .cmd()
            .args(["archive", "--session", "r-ingest"])
            .assert()
            .success();
        let mut lines: Vec<String> = battery_round3::calls_records("r-add", "r-add", &calls)
            .iter()
            .map(Value::to_string)
            .collect();
        lines.push(
            std::fs::read_to_string(records_file(&store, &plain, &marker))
                .expect("notes")
                .trim_end()
                .to_string(),
        );
        let file = store.write("r-add.jsonl", (lines.join("\n") + "\n").as_bytes());
        store.cmd().arg("add").arg(&file).assert().success();
        let mut records: Vec<Value> = plain
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({"id": format!("m-{i}"), "kind": "note", "title": "deploy notes",
                       "content": format!("Remember: {}", p.line), "session_id": "r-mcp"})
            })
            .collect();
        records.extend(battery_round3::calls_records("r-mcp", "r-mcp", &calls));
        let added = mcp::session(&store, &[("memory_add", json!({"records": records}))]);
        assert_ne!(added[0]["isError"], true, "{added:?}");
        let live = store.write("r-hooks.jsonl", session("r-hooks").as_bytes());
        for (event, name, extra) in [
            (
                "post-tool-use",
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": plain[0].line}}),
            ),
            ("pre-compact", "PreCompact", json!({"trigger": "auto"})),
            ("stop", "Stop", json!({"stop_hook_active": false})),
            ("session-end", "SessionEnd", json!({"reason": "exit"})),
        ] {
            hook(&store, event, &hook_input("r-hooks", &live, name, extra));
        }
        hook(
            &store,
            "user-prompt-submit",
            &hook_input(
                "r-hooks-2",
                &live,
                "UserPromptSubmit",
                json!({"prompt": format!("what did we set up? {}", plain[1].line)}),
            ),
        );
        let evicted = store.write("r-evict.jsonl", session("r-evict").as_bytes());
        store
            .cmd()
            .args([
                "evict",
                "--context-window",
                "1500",
                "--min-keep",
                "2",
                "--transcript",
            ])
            .arg(&evicted)
            .assert()
            .success();

        let mut given_back =
            String::from_utf8_lossy(&store.cmd().arg("export").output().expect("export").stdout)
                .into_owned();
        let ids: Vec<String> = given_back
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["id"].as_str().map(str::to_string))
            .collect();
        assert!(ids.len() > 10, "round {round}: {} records", ids.len());
        let got = store.cmd().arg("get").args(&ids).output().expect("get");
        given_back.push_str(&String::from_utf8_lossy(&got.stdout));
        let found = store
            .cmd()
            .args([
                "search",
                "--mode",
                "bm25",
                "--tier",
                "all",
                "--all",
                "-k",
                "50",
                "--json",
                "--all-projects",
                "--",
            ])
            .arg("password token key secret deploy printenv")
            .output()
            .expect("search");
        given_back.push_str(&String::from_utf8_lossy(&found.stdout));
        for result in mcp::session(
            &store,
            &[(
                "memory_search",
                json!({"query": "password token key secret deploy", "tier": "all", "limit": 50, "project": "*"}),
            )],
        ) {
            given_back.push_str(&result.to_string());
        }
        assert_no_secret(
            &planted,
            &given_back,
            seed,
            &format!("round {round}: a reader"),
        );
        assert!(
            !given_back.contains(&marker),
            "round {round}: a <private> span came back"
        );
        for (path, text) in files_text(&store.path()) {
            assert_no_secret(
                &planted,
                &text,
                seed,
                &format!("round {round}: {}", path.display()),
            );
        }
        eprintln!("round {round}: {} values, none came back", planted.len());
    }
    eprintln!("{rounds} rounds, {values} values planted (seed {seed}): none came back");
}
