//! `search --format openclaw`: results in OpenClaw's `memory_search` payload shape
//! (interop.md section 3), for plain records and for files indexed by `qmd`.

mod common;

use common::TestStore;
use serde_json::Value;

const RESULT_KEYS: [&str; 9] = [
    "path",
    "startLine",
    "endLine",
    "score",
    "textScore",
    "snippet",
    "source",
    "citation",
    "corpus",
];

fn openclaw_search(store: &TestStore, args: &[&str]) -> Value {
    let out = store
        .cmd()
        .arg("search")
        .args(args)
        .args(["--mode", "bm25", "--format", "openclaw"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON payload")
}

#[test]
fn records_come_back_in_memory_search_shape() {
    let store = TestStore::new();
    store.add_samples();
    let payload = openclaw_search(&store, &["oauth2.py refresh", "-k", "3"]);
    let results = payload["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for result in results {
        let object = result.as_object().expect("object");
        for key in RESULT_KEYS {
            assert!(object.contains_key(key), "{key} missing: {result}");
        }
        let text_score = result["textScore"].as_f64().expect("textScore");
        assert!((0.0..=1.0).contains(&text_score));
    }
    let top = &results[0];
    // A segment: its id is the path memory_get takes, its turn range the lines.
    assert_eq!(top["path"], "seg-auth-0001");
    assert_eq!(top["startLine"], 12);
    assert_eq!(top["endLine"], 41);
    assert_eq!(top["citation"], "seg-auth-0001#L12-L41");
    assert_eq!(top["source"], "sessions");
    assert_eq!(top["textScore"], 1.0);
    let snippet = top["snippet"].as_str().expect("snippet");
    assert!(
        snippet.ends_with("\n\nSource: seg-auth-0001#L12-L41"),
        "{snippet}"
    );
    assert_eq!(payload["citations"], "auto");
    assert_eq!(payload["debug"]["hits"], results.len());
    assert_eq!(payload["model"], "bm25");
}

#[test]
fn qmd_files_keep_their_path_and_lines() {
    let store = TestStore::new();
    let notes = store.dir.path().join("notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    std::fs::write(
        notes.join("router.md"),
        "# Home\n\nintro\n\n## Router\n\nuse mesh node kestrel-2\n",
    )
    .expect("write");
    let qmd = |args: &[&str]| {
        store
            .cmd()
            .arg("qmd")
            .args(args)
            .env("QMD_CONFIG_DIR", store.dir.path().join("qmd-config"))
            .assert()
            .success();
    };
    qmd(&[
        "collection",
        "add",
        notes.to_str().expect("utf-8"),
        "--name",
        "notes",
    ]);
    qmd(&["update"]);
    let payload = openclaw_search(&store, &["kestrel", "--namespace", "qmd:notes"]);
    let top = &payload["results"][0];
    assert_eq!(top["path"], "router.md", "{payload}");
    assert_eq!(top["startLine"], 5);
    assert_eq!(top["endLine"], 7);
    assert_eq!(top["citation"], "router.md#L5-L7");
    assert_eq!(top["source"], "memory");
}

#[test]
fn no_results_is_an_empty_list() {
    let store = TestStore::new();
    store.add_samples();
    let payload = openclaw_search(&store, &["xylophone"]);
    assert_eq!(payload["results"], serde_json::json!([]));
    assert_eq!(payload["debug"]["hits"], 0);
}
