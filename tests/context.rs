//! Conversation context through the CLI: a reply is found by the words of the
//! turn it answers, and the context is kept beside the record, not in it.

mod common;

use std::io::Write;

use common::TestStore;

/// Adds a two-session conversation (vectors later), each turn a note.
fn add_conversation(store: &TestStore) {
    let mut lines = Vec::new();
    for (id, session, text) in [
        ("d1", 1, "Do you still paint sunrises over the lake?"),
        ("d2", 1, "Yes! Here is the one I finished last summer."),
        ("d3", 2, "How was the marathon training this week?"),
        ("d4", 2, "Exhausting, my knees hurt after every long run."),
    ] {
        let line = serde_json::json!({"_id": id, "title": "chat", "text": text, "metadata": {"session": session}});
        writeln!(lines, "{line}").expect("write");
    }
    store.add_later("dialog.jsonl", &lines);
}

#[test]
fn a_reply_is_found_by_the_words_of_the_turn_it_answers() {
    let store = TestStore::new();
    add_conversation(&store);
    // "sunrises" and "lake" appear only in d1; d2 carries d1 as its context.
    let ids = store.search_ids(&["sunrises lake"]);
    assert_eq!(ids, ["d1", "d2"], "the question first, then its reply");
    // Context never crosses into another conversation: d3 (session 2) does not
    // follow d2, so it does not match d2's words.
    let ids = store.search_ids(&["finished summer"]);
    assert_eq!(ids, ["d2"]);

    let record = store.json(&["get", "d2"]);
    assert_eq!(
        record["context"], "Do you still paint sunrises over the lake?",
        "the context is shown beside the record"
    );
    assert_eq!(
        record["source"]["text"], "Yes! Here is the one I finished last summer.",
        "the caller's JSON is unchanged"
    );
    let first = store.json(&["get", "d1"]);
    assert!(first["context"].is_null(), "the first turn has no context");
}

#[test]
fn a_given_context_wins_and_a_wrong_type_is_rejected() {
    let store = TestStore::new();
    let good = store.dir.path().join("good.jsonl");
    std::fs::write(
        &good,
        r#"{"id": "m1", "text": "Yes, ship it on Friday", "context": "Should we release the billing fix?"}
"#,
    )
    .expect("write");
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(&good)
        .assert()
        .success();
    assert_eq!(store.search_ids(&["billing release"]), ["m1"]);

    let bad = store.dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": \"m2\", \"text\": \"x\", \"context\": 7}\n").expect("write");
    let out = store.cmd().arg("add").arg(&bad).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.jsonl:1: field `context`: expected a string"),
        "{stderr}"
    );
}

#[test]
fn an_export_keeps_which_turn_a_context_came_from() {
    let store = TestStore::new();
    add_conversation(&store);
    let line_of = |export: &str, id: &str| -> serde_json::Value {
        export
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("{id} not exported: {export}"))
    };
    let exported = |s: &TestStore| {
        let out = s.cmd().arg("export").output().expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let export = exported(&store);
    let reply = line_of(&export, "d2");
    assert_eq!(
        reply["context"],
        "Do you still paint sunrises over the lake?"
    );
    assert_eq!(reply["context_from"], "d1", "{reply}");
    assert!(line_of(&export, "d1").get("context_from").is_none());

    // Restored elsewhere, the link is there again (search raises d1 beside d2).
    let copy = TestStore::new();
    let file = copy.dir.path().join("export.jsonl");
    std::fs::write(&file, &export).expect("write");
    copy.cmd().arg("add").arg(&file).assert().success();
    assert_eq!(line_of(&exported(&copy), "d2")["context_from"], "d1");
}
