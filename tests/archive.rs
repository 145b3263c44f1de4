//! The L3 archive tier end to end: archive, search by tier, stats, restore,
//! prune, maintain and access tracking, on real stores run through the binary
//! (and through the library where vectors must be compared exactly).

mod common;

use std::time::Duration;

use common::TestStore;
use knowledge_db::embed::{Embedder, HashEmbedder, DIM};
use knowledge_db::error::Origin;
use knowledge_db::record::{parse_record, ParseOptions};
use knowledge_db::tiers::ops::{self, RestoreWhat, Selection};
use knowledge_db::Store;
use serde_json::{json, Value};

/// A store with the data samples, added without vectors (no model needed).
fn samples_store() -> TestStore {
    let store = TestStore::new();
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(common::samples())
        .assert()
        .success();
    store
}

fn ids_of(response: &Value) -> Vec<String> {
    response["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn tier_stats(store: &TestStore, tier: &str) -> Value {
    store.json(&["stats"])["tiers"]
        .as_array()
        .expect("tiers")
        .iter()
        .find(|t| t["tier"] == tier)
        .cloned()
        .expect("tier stats")
}

#[test]
fn dry_run_lists_and_changes_nothing_then_archive_moves_records_to_l3() {
    let store = samples_store();
    let before = store.snapshot();
    let dry = store.json(&["archive", "--older-than", "1d", "--dry-run"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["records"], 8, "{dry}");
    assert!(dry["l2_bytes_freed"].as_u64().unwrap() > 0);
    assert!(dry["ids"]
        .as_array()
        .unwrap()
        .iter()
        .any(|id| id == "seg-auth-0001"));
    assert_eq!(before, store.snapshot(), "a dry run wrote something");

    let done = store.json(&["archive", "--older-than", "1d"]);
    assert_eq!(done["records"], 8);
    assert!(store.path().join("archive/2026-01.jsonl.zst").is_file());
    // Batch runs search tiers too (one JSON line per query).
    let queries = store.write(
        "queries.jsonl",
        br#"{"_id": "q1", "text": "refresh token oauth2.py"}"#,
    );
    let out = store
        .cmd()
        .args(["search", "--tier", "l3", "--json", "--queries"])
        .arg(&queries)
        .output()
        .unwrap();
    assert!(out.status.success());
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["results"][0]["id"], "seg-auth-0001", "{line}");
    // `get` still finds an archived record, marked with its tier; an id in
    // neither tier is an error.
    let archived = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(archived["tier"], "l3");
    assert_eq!(archived["pruned"], false);
    assert_eq!(
        archived["source"]["topic"],
        "OAuth token refresh failing after 1 hour"
    );
    store
        .cmd()
        .args(["get", "seg-auth-0001", "no-such-id"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no record with id no-such-id"));
    // Gone from L2, found in L3 (marked), and in both tiers ranked together.
    assert!(store.search_ids(&["refresh token oauth2.py"]).is_empty());
    let l3 = store.json(&["search", "refresh token oauth2.py", "--tier", "l3"]);
    assert_eq!(ids_of(&l3)[0], "seg-auth-0001");
    assert_eq!(l3["results"][0]["tier"], "l3");
    let all = store.json(&[
        "search",
        "deploy token",
        "--tier",
        "all",
        "--all-namespaces",
    ]);
    let tiers: Vec<&str> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tier"].as_str().unwrap())
        .collect();
    assert!(tiers.contains(&"l2") && tiers.contains(&"l3"), "{all}");
    let scores: Vec<f64> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");

    let l2 = tier_stats(&store, "l2");
    let l3 = tier_stats(&store, "l3");
    assert_eq!(l2["records"], 2);
    assert_eq!(l3["records"], 8);
    // The totals count both tiers.
    let stats = store.json(&["stats"]);
    assert_eq!(stats["records"], 10, "{stats}");
    assert_eq!(stats["by_tier"]["l2"], 2, "{stats}");
    assert_eq!(stats["by_tier"]["l3"], 8, "{stats}");
    let by_kind: u64 = stats["by_kind"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(by_kind, 10, "{stats}");
    assert!(l3["compression_ratio"].as_f64().unwrap() > 1.0, "{l3}");
    assert_eq!(l3["oldest"], "2026-01-05T10:42:00Z");
    // The archive file is plain zstd: its frames decompress to the JSON lines.
    let bytes = std::fs::read(store.path().join("archive/2026-01.jsonl.zst")).unwrap();
    let text = zstd::stream::decode_all(&bytes[..]).unwrap();
    assert_eq!(
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        8
    );
}

#[test]
fn archive_needs_a_condition_and_selects_by_session_turns_and_namespace() {
    let store = samples_store();
    store.cmd().arg("archive").assert().code(2);
    let session = "4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10";
    let dry = store.json(&[
        "archive",
        "--session",
        session,
        "--turns-before",
        "50",
        "--dry-run",
    ]);
    let ids: Vec<&str> = dry["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(ids, ["seg-auth-0001"], "{dry}");
    let other_ns = store.json(&["archive", "--older-than", "1d", "--namespace", "nope"]);
    assert_eq!(other_ns["records"], 0);
}

#[test]
fn restore_by_id_and_by_session_brings_records_back_unchanged() {
    let store = samples_store();
    let before = store.json(&["get", "seg-auth-0001"]);
    store.json(&["archive", "--older-than", "1d"]);
    assert_eq!(store.json(&["get", "seg-auth-0001"])["tier"], "l3");
    let restored = store.json(&["restore", "seg-auth-0001"]);
    assert_eq!(restored["restored"], json!(["seg-auth-0001"]));
    let after = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(before["source"], after["source"]);
    assert_eq!(after["tier"], "l2");
    assert_eq!(
        store.search_ids(&["refresh token oauth2.py"])[0],
        "seg-auth-0001"
    );
    // Not in L3 any more: exactly one tier holds it.
    let l3 = store.json(&["search", "refresh token oauth2.py", "--tier", "l3"]);
    assert!(!ids_of(&l3).contains(&"seg-auth-0001".to_string()));

    let session = store.json(&[
        "restore",
        "--session",
        "9b7e11d0-55aa-4c1e-8f0e-6a2d4b9c0f33",
    ]);
    assert!(
        session["restored"].as_array().unwrap().len() >= 3,
        "{session}"
    );
    let unknown = store.cmd().args(["restore", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(1));
    assert_eq!(
        tier_stats(&store, "l2")["records"].as_u64().unwrap()
            + tier_stats(&store, "l3")["records"].as_u64().unwrap(),
        10
    );
}

#[test]
fn prune_reduces_records_to_summaries_and_messages_to_a_count() {
    let store = samples_store();
    store.json(&["archive", "--older-than", "1d"]);
    let dry = store.json(&["prune", "--older-than", "0s", "--dry-run"]);
    assert!(dry["records_pruned"].as_u64().unwrap() >= 4, "{dry}");
    let report = store.json(&["prune", "--older-than", "0s"]);
    assert_eq!(report["messages_dropped"], 2, "{report}");
    let segment = report["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "seg-auth-0001")
        .unwrap();
    assert!(segment["dropped"]
        .as_array()
        .unwrap()
        .contains(&json!("key_decisions")));
    // The summary is still searchable in L3 and comes back pruned.
    let l3 = store.json(&["search", "refresh token", "--tier", "l3"]);
    assert!(ids_of(&l3).contains(&"seg-auth-0001".to_string()));
    let summary = store.json(&["search", "messages pruned", "--tier", "l3"]);
    let summary_id = ids_of(&summary)
        .into_iter()
        .find(|id| id.starts_with("pruned-messages:9b7e11d0"))
        .expect("message summary");
    // `get` reads archived records from L3 without restoring them.
    let archived = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(archived["tier"], "l3", "{archived}");
    assert_eq!(archived["pruned"], true);
    assert!(archived["archived_at"].is_string(), "{archived}");
    assert!(archived["dropped"]
        .as_array()
        .unwrap()
        .contains(&json!("key_decisions")));
    store.json(&["restore", "seg-auth-0001", &summary_id]);
    let seg = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(seg["pruned"], true);
    assert!(seg["source"]["compressed_content"].is_string());
    assert!(seg["source"]["topic"].is_string());
    assert!(seg["source"].get("key_decisions").is_none());
    let messages = store.json(&["get", &summary_id]);
    assert_eq!(messages["source"]["pruned_messages"]["count"], 2);
    assert_eq!(
        messages["source"]["pruned_messages"]["ids"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // Pruning again finds nothing new.
    let again = store.json(&["prune", "--older-than", "0s"]);
    assert_eq!(again["records_pruned"], 0);
}

#[test]
fn maintain_applies_the_policy_and_is_a_no_op_when_nothing_is_due() {
    let store = samples_store();
    // Defaults: the samples were just added, so none is idle for 14 days.
    let first = store.json(&["maintain", "--force"]);
    assert_eq!(first["due"], true);
    assert_eq!(first["archived"]["records"], 0);
    let second = store.json(&["maintain"]);
    assert_eq!(second["due"], false, "{second}");
    // A policy that makes everything due archives, then prunes.
    let old = store.set_config(&[("archive_idle_for", "\"0s\""), ("prune_after", "\"0s\"")]);
    assert_eq!(old, ["\"14d\"", "\"30d\""]);
    let third = store.json(&["maintain"]);
    assert_eq!(third["archived"]["records"], 8, "{third}");
    assert!(third["pruned"]["records_pruned"].as_u64().unwrap() >= 4);
}

#[test]
fn a_read_moves_the_access_count_the_next_get_shows() {
    let store = samples_store();
    let before = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(before["access_count"], 0, "{before}");
    store.search_ids(&["refresh token oauth2.py"]);
    // No fold has run: the next get already counts the search hit and itself.
    let after_search = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(after_search["access_count"], 2, "{after_search}");
    assert!(after_search["last_accessed"].is_string());
    store.json(&["maintain", "--force"]);
    // Folded: the same counts, now stored, and not counted twice.
    let folded = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(folded["access_count"], 3, "{folded}");
    // Reads in the same second as the fold still count (times are kept to the
    // millisecond).
    let next = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(next["access_count"], 4, "{next}");
}

#[test]
fn reads_are_logged_and_folded_into_access_counts() {
    let store = samples_store();
    store.search_ids(&["refresh token oauth2.py"]);
    store.search_ids(&["refresh token oauth2.py"]);
    let log = std::fs::read_to_string(store.path().join("access.log")).unwrap();
    assert!(log.contains("\tseg-auth-0001\n"), "{log}");
    store.json(&["maintain", "--force"]);
    assert!(!store.path().join("access.log").exists());
    let record = store.json(&["get", "seg-auth-0001"]);
    assert_eq!(record["access_count"], 2, "{record}");
    assert!(record["last_accessed"].is_string());
    // `get` is a read too.
    let log = std::fs::read_to_string(store.path().join("access.log")).unwrap();
    assert!(log.contains("\tseg-auth-0001\n"), "{log}");
    // A record read recently is not idle.
    let dry = store.json(&["archive", "--idle-for", "1h", "--dry-run"]);
    assert!(!dry["ids"]
        .as_array()
        .unwrap()
        .iter()
        .any(|id| id == "seg-auth-0001"));
}

#[test]
fn a_torn_last_frame_is_ignored_and_the_next_archive_cuts_it() {
    let store = samples_store();
    store.json(&[
        "archive",
        "--session",
        "4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10",
    ]);
    let file = store.path().join("archive/2026-01.jsonl.zst");
    let good = std::fs::read(&file).unwrap();
    // Half a frame at the end, as a crash during an append leaves it.
    let mut torn = good.clone();
    torn.extend_from_slice(&good[..good.len() / 2]);
    std::fs::write(&file, &torn).unwrap();
    let l3 = store.json(&["search", "refresh token", "--tier", "l3"]);
    assert_eq!(ids_of(&l3)[0], "seg-auth-0001");
    // `verify` sees the torn tail; `repair` cuts it.
    store.cmd().arg("verify").assert().code(1);
    store.cmd().arg("repair").assert().success();
    store.cmd().arg("verify").assert().success();
    store.json(&["archive", "--older-than", "1d"]);
    let stats = tier_stats(&store, "l3");
    assert_eq!(stats["records"], 8);
    let text = zstd::stream::decode_all(&std::fs::read(&file).unwrap()[..]).unwrap();
    assert_eq!(
        text.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .count(),
        8
    );
}

/// `n` notes from June 2025 (old enough for `older_than` one day).
fn caching_notes(n: usize) -> Vec<knowledge_db::record::Record> {
    (0..n)
        .map(|i| {
            let value = json!({"id": format!("n{i}"), "text": format!("note {i} about caching"), "timestamp": "2025-06-01T00:00:00Z"});
            parse_record(value, &Origin::file("t"), &ParseOptions::default()).unwrap()
        })
        .collect()
}

#[test]
fn restore_gives_back_the_archived_vector_without_re_embedding() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join("s")).unwrap();
    let records = caching_notes(20);
    let mut embedder = HashEmbedder::new(DIM);
    store
        .add(
            records,
            Some(&mut embedder as &mut dyn Embedder),
            Duration::from_secs(5),
        )
        .unwrap();
    let searcher = store.reader().unwrap().searcher();
    let ids: Vec<String> = (0..20).map(|i| format!("n{i}")).collect();
    let before = store.l2_records_by_id(&searcher, &ids).unwrap();
    drop(searcher);
    let selection = Selection {
        older_than: Some(86_400),
        ..Selection::default()
    };
    let report = ops::archive(&store, &selection, false, Duration::from_secs(5)).unwrap();
    assert_eq!(report.records, 20);
    let restored = ops::restore(
        &store,
        &RestoreWhat::Ids(ids.clone()),
        || panic!("restore must not load a model for unpruned records"),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(restored.vectors_kept, 20);
    let searcher = store.reader().unwrap().searcher();
    let after = store.l2_records_by_id(&searcher, &ids).unwrap();
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(b.record.id, a.record.id);
        assert_eq!(b.vector, a.vector);
        assert!(a.vector.embedding.is_some());
    }
}

#[test]
fn a_draft_vector_comes_back_from_the_archive_as_a_draft() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::init(&dir.path().join("s")).unwrap();
    let records = caching_notes(6);
    let wait = Duration::from_secs(5);
    store.add(records, None, wait).unwrap();
    // Half drafted, half embedded by the full model.
    let mut draft = HashEmbedder::draft(DIM);
    store
        .embed_missing(&mut draft, 3, wait, &mut |_, _| {})
        .unwrap();
    let ids: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
    let mut full = HashEmbedder::new(DIM);
    store
        .reembed_outdated(&mut full, 3, wait, &mut |_, _| {})
        .unwrap();
    assert_eq!(store.records_with_draft_vector().unwrap(), 0);
    let searcher = store.reader().unwrap().searcher();
    let mut text_only: Vec<_> = store
        .l2_records_by_id(&searcher, &ids[..3])
        .unwrap()
        .into_iter()
        .map(|l2| l2.record)
        .collect();
    drop(searcher);
    store.delete(&ids[..3], wait).unwrap();
    for record in &mut text_only {
        record.access_count = 0;
    }
    store.add(text_only, None, wait).unwrap();
    store
        .embed_missing(&mut draft, 3, wait, &mut |_, _| {})
        .unwrap();
    assert_eq!(store.records_with_draft_vector().unwrap(), 3);

    let selection = Selection {
        older_than: Some(86_400),
        ..Selection::default()
    };
    let report = ops::archive(&store, &selection, false, wait).unwrap();
    assert_eq!(report.records, 6);
    assert_eq!(store.records_with_draft_vector().unwrap(), 0);
    let restored = ops::restore(
        &store,
        &RestoreWhat::Ids(ids.clone()),
        || panic!("restore must not load a model for unpruned records"),
        wait,
    )
    .unwrap();
    assert_eq!(restored.vectors_kept, 6);
    // The drafts are drafts again, with their vectors and the right text
    // hash; the full vectors came back as they were.
    assert_eq!(store.records_with_draft_vector().unwrap(), 3);
    let searcher = store.reader().unwrap().searcher();
    for l2 in store.l2_records_by_id(&searcher, &ids).unwrap() {
        let drafted = ids[..3].contains(&l2.record.id);
        assert_eq!(l2.vector.draft, drafted, "{}", l2.record.id);
        assert!(l2.vector.embedding.is_some());
        assert_eq!(
            l2.vector.text_hash,
            knowledge_db::embed::text::text_hash(&knowledge_db::embed::text::embedding_text(
                &l2.record
            ))
        );
    }
    drop(searcher);
    assert_eq!(
        store
            .reembed_outdated(&mut full, 3, wait, &mut |_, _| {})
            .unwrap(),
        3
    );
}

#[test]
fn the_agent_service_reads_archived_records_by_id() {
    let store = samples_store();
    store.json(&["archive", "--older-than", "1d"]);
    let service = knowledge_db::integrations::service::MemoryService::new(
        Store::open(&store.path()).unwrap(),
        Err("no model in this test".into()),
        None,
    )
    .unwrap();
    let found = service.drilldown("seg-auth-0001", None, None).unwrap();
    let found = found.expect("archived record found");
    assert_eq!(found.record["tier"], "l3");
    assert!(found.messages.is_none());
    assert!(service
        .drilldown("no-such-id", None, None)
        .unwrap()
        .is_none());
}

#[test]
fn writes_run_the_retention_check_and_apply_the_policy_when_due() {
    let store = TestStore::new();
    // The first write of a store runs the policy and saves its schedule.
    store.add_samples();
    let schedule = store.path().join("archive/maintain.json");
    assert!(schedule.is_file(), "the first add did not run the check");
    assert_eq!(store.json(&["maintain"])["due"], false);
    assert_eq!(tier_stats(&store, "l3")["records"], 0);

    // A policy that makes everything due: the next write archives every L2
    // record at once, its own included, and says so on stderr.
    store.set_config(&[
        ("archive_idle_for", "\"0s\""),
        ("archive_older_than", "\"0s\""),
    ]);
    std::fs::remove_file(&schedule).unwrap();
    let note = store.write(
        "note.json",
        br#"{"id": "late-note", "kind": "note", "text": "a late note about caching"}"#,
    );
    store
        .cmd()
        .arg("add")
        .arg(&note)
        .assert()
        .success()
        .stderr(predicates::str::contains("retention policy archived"));
    assert_eq!(tier_stats(&store, "l2")["records"], 0);
    assert!(tier_stats(&store, "l3")["records"].as_u64().unwrap() >= 9);
    assert_eq!(store.json(&["get", "late-note"])["tier"], "l3");
}

#[test]
fn maintain_on_write_can_be_turned_off() {
    let store = TestStore::new();
    store.set_config(&[
        ("archive_idle_for", "\"0s\""),
        ("archive_older_than", "\"0s\""),
        ("maintain_on_write", "false"),
    ]);
    store.add_samples();
    assert!(!store.path().join("archive/maintain.json").exists());
    assert_eq!(tier_stats(&store, "l3")["records"], 0);
}

/// Archives the samples, then adds `seg-auth-0001` again (a new version).
fn re_add_an_archived_record(store: &TestStore, crash_at: Option<&str>) -> bool {
    store.json(&["archive", "--older-than", "1d"]);
    let mut cmd = store.cmd();
    cmd.args(["add", "--embed", "later"])
        .arg(common::samples().join("compressed_context/seg-auth-0001.json"));
    if let Some(point) = crash_at {
        cmd.env("KNOWLEDGE_DB_CRASH_AT", point);
    }
    cmd.output().unwrap().status.success()
}

#[test]
fn adding_an_archived_id_again_supersedes_the_archived_copy() {
    let store = samples_store();
    assert!(re_add_an_archived_record(&store, None));
    store.cmd().arg("verify").assert().success();
    assert_eq!(store.json(&["get", "seg-auth-0001"])["tier"], "l2");
    let l3 = store.json(&["search", "refresh token oauth2.py", "--tier", "l3"]);
    assert!(!ids_of(&l3).contains(&"seg-auth-0001".to_string()), "{l3}");
    assert_eq!(tier_stats(&store, "l3")["records"], 7);
    // Archiving it again leaves one archived copy.
    store.json(&["archive", "--older-than", "1d"]);
    store.cmd().arg("verify").assert().success();
    assert_eq!(tier_stats(&store, "l3")["records"], 8);
}

#[test]
fn a_crash_while_superseding_an_archived_copy_is_recovered() {
    // Killed before the L2 commit: the add did not happen, the archived copy
    // stays. Killed after it: the new version is live, the copy goes.
    for (point, tier) in [
        ("supersede-journalled", "l3"),
        ("supersede-committed", "l2"),
    ] {
        let store = samples_store();
        assert!(!re_add_an_archived_record(&store, Some(point)), "{point}");
        store.cmd().arg("repair").assert().success();
        store.cmd().arg("verify").assert().success();
        assert_eq!(
            store.json(&["get", "seg-auth-0001"])["tier"],
            tier,
            "{point}"
        );
        let both = tier_stats(&store, "l2")["records"].as_u64().unwrap()
            + tier_stats(&store, "l3")["records"].as_u64().unwrap();
        assert_eq!(both, 10, "{point}");
    }
}

/// Archives and prunes everything in `store`, then returns the message summary
/// of `session` (its id and `get` output).
fn prune_all(store: &TestStore, session: &str) -> (String, Value) {
    store.json(&["archive", "--older-than", "0s"]);
    let report = store.json(&["prune", "--older-than", "0s"]);
    let id = report["pruned"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["id"].as_str())
        .find(|id| id.starts_with(&format!("pruned-messages:{session}")))
        .unwrap_or_else(|| panic!("no summary of {session}: {report}"))
        .to_string();
    let summary = store.json(&["get", &id]);
    (id, summary)
}

#[test]
fn a_pruned_session_is_still_found_by_what_it_was_about() {
    let session = "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47";
    let store = TestStore::new();
    let transcript = common::samples().join("transcripts/uncompacted-session.jsonl.gz");
    store.json(&["ingest", transcript.to_str().unwrap(), "--embed", "later"]);
    let (id, summary) = prune_all(&store, session);
    // The session's subject, in the user's words, finds its summary in L3 and
    // across tiers, though every raw message is gone.
    for tier in ["l3", "all"] {
        let found = store.json(&[
            "search",
            "flaky tokenizer test",
            "--tier",
            tier,
            "--mode",
            "bm25",
        ]);
        assert_eq!(ids_of(&found).first(), Some(&id), "{tier}: {found}");
    }
    let found = store.json(&[
        "search",
        "HashMap iteration order keyword table",
        "--tier",
        "l3",
    ]);
    assert_eq!(ids_of(&found).first(), Some(&id), "{found}");
    // `get` shows what it replaced: how many messages, written how, which ids.
    let text = summary["source"]["text"].as_str().unwrap();
    assert!(
        text.contains("14 messages (14 ingested from transcripts)"),
        "{text}"
    );
    assert!(!text.contains("evicted"), "{text}");
    assert!(
        text.contains("First prompt: The tokenizer test in tests/lexer.rs fails one run in ten"),
        "{text}"
    );
    assert!(text.contains("keywords.rs"), "{text}");
    let pruned = &summary["source"]["pruned_messages"];
    assert_eq!(pruned["count"], 14);
    assert_eq!(pruned["ingested"], 14);
    assert_eq!(pruned["ids"].as_array().unwrap().len(), 14);
    assert!(pruned["ids"]
        .as_array()
        .unwrap()
        .contains(&json!(format!("{session}:m01"))));
    assert_eq!(summary["tier"], "l3");
}

#[test]
fn a_pruned_sessions_summary_prefers_its_task_summaries_and_says_what_was_evicted() {
    let session = "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47";
    let store = TestStore::new();
    // Part of the session evicted from a live context, then its task summary.
    let transcript = common::samples().join("transcripts/uncompacted-session.jsonl.gz");
    store.json(&[
        "evict",
        "--transcript",
        transcript.to_str().unwrap(),
        "--context-window",
        "700",
        "--min-keep",
        "4",
        "--overhead",
        "0",
    ]);
    let task = store.write(
        "task.json",
        json!({"session_id": session, "task_id": "1", "subject": "Make the lexer test deterministic",
               "key_outcomes": ["the keyword table is a BTreeMap now"], "start_turn": 0, "end_turn": 0,
               "compressed_at": "2026-03-02T09:01:00Z"})
        .to_string()
        .as_bytes(),
    );
    store
        .cmd()
        .args(["add", "--embed", "later"])
        .arg(&task)
        .assert()
        .success();
    let (id, summary) = prune_all(&store, session);
    let text = summary["source"]["text"].as_str().unwrap();
    assert!(text.contains("evicted from a live context"), "{text}");
    assert!(!text.contains("ingested"), "{text}");
    assert!(
        text.contains(
            "[task] Make the lexer test deterministic: the keyword table is a BTreeMap now"
        ),
        "{text}"
    );
    assert_eq!(
        summary["source"]["pruned_messages"]["summarised_from"],
        json!([format!("{session}:1")])
    );
    let found = store.json(&[
        "search",
        "lexer test deterministic",
        "--tier",
        "l3",
        "--kind",
        "message",
    ]);
    assert_eq!(ids_of(&found).first(), Some(&id), "{found}");
}
