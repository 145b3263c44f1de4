//! Search from the command line: identifiers, filters, explanations, batches.

mod common;

use common::TestStore;
use predicates::prelude::*;

fn sample_store() -> TestStore {
    let store = TestStore::new();
    store.add_samples();
    store
}

#[test]
fn code_identifiers_are_findable() {
    let store = sample_store();
    for (query, expected) in [
        ("oauth2.py", "seg-auth-0001"),
        ("parseConfig", "seg-build-0002"),
        ("parse config", "seg-build-0002"),
        ("E0502", "seg-build-0002"),
        ("src/config/loader.rs", "seg-build-0002"),
        ("0042_invoice_currency.sql", "seg-db-0003"),
        (
            "hmac.compare_digest",
            "9b7e11d0-55aa-4c1e-8f0e-6a2d4b9c0f33:1",
        ),
    ] {
        let ids = store.search_ids(&[query, "-k", "1"]);
        assert_eq!(ids, [expected], "query {query}");
    }
}

#[test]
fn results_carry_scores_snippets_highlights_and_citations() {
    let store = sample_store();
    let out = store.json(&["search", "refresh token", "--mode", "bm25"]);
    let hit = &out["results"][0];
    assert_eq!(hit["id"], "seg-auth-0001");
    assert_eq!(hit["rank"], 1);
    assert_eq!(hit["kind"], "segment");
    assert_eq!(hit["session_id"], "4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10");
    assert_eq!(
        (hit["start_turn"].as_u64(), hit["end_turn"].as_u64()),
        (Some(12), Some(41))
    );
    // The score is the calibrated probability of relevance; the BM25 score
    // it comes from is kept beside it.
    let score = hit["score"].as_f64().unwrap();
    assert!(score > 0.1 && score < 1.0, "{score}");
    assert_eq!(hit["scores"]["fused"], hit["score"]);
    assert!(hit["scores"]["bm25"].as_f64().unwrap() > 1.0);
    assert_eq!(hit["copies"], 1);
    assert!(hit["citation"].as_str().unwrap().contains("turns 12-41"));
    let snippet = hit["snippet"].as_str().unwrap();
    let (s, e) = (
        hit["highlights"][0][0].as_u64().unwrap() as usize,
        hit["highlights"][0][1].as_u64().unwrap() as usize,
    );
    assert!(
        snippet[s..e].to_lowercase().contains("refresh")
            || snippet[s..e].to_lowercase().contains("token")
    );
    assert_eq!(out["vector"], "off");
    assert_eq!(hit["scores"]["bm25_rank"], 1);
}

/// Matches are bold with `--color always` (on a terminal by default), and
/// plain text when piped: never marks that collide with the Markdown in the
/// text itself (`****The** Problem:**`; issue 50).
#[test]
fn text_output_marks_matches_in_bold_and_stays_plain_when_piped() {
    let store = sample_store();
    store
        .cmd()
        .args(["search", "E0502", "--color", "always"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("\x1b[1mE0502\x1b[0m")
                .and(predicate::str::contains("[segment]")),
        );
    store
        .cmd()
        .args(["search", "E0502"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("E0502")
                .and(predicate::str::contains("**E0502**").not())
                .and(predicate::str::contains("\x1b[").not()),
        );
}

#[test]
fn filters_narrow_results() {
    let store = sample_store();
    let s1 = "4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10";
    for id in store.search_ids(&["test", "--session", s1, "-k", "50"]) {
        assert!(
            id.starts_with(s1) || id.starts_with("seg-auth") || id.starts_with("seg-build"),
            "{id}"
        );
    }
    assert_eq!(
        store
            .search_ids(&["test", "--kind", "task", "-k", "50"])
            .len(),
        3
    );
    let since = store.search_ids(&["invoice", "--since", "2026-01-09", "-k", "50"]);
    assert!(since.contains(&"seg-db-0003".to_string()));
    assert!(store
        .search_ids(&["invoice", "--until", "2026-01-08", "-k", "50"])
        .is_empty());
    assert_eq!(
        store.search_ids(&["token", "--file", "oauth2.py"]),
        ["seg-auth-0001"]
    );
    assert_eq!(
        store.search_ids(&["token", "--file", "src/auth/oauth2.py"]),
        ["seg-auth-0001"]
    );
    assert!(store
        .search_ids(&["token", "--file", "auth/missing.py"])
        .is_empty());
}

#[test]
fn empty_results_explain_themselves() {
    let empty = TestStore::new();
    let out = empty.json(&["search", "anything"]);
    assert!(out["explanation"]
        .as_str()
        .unwrap()
        .contains("the store is empty"));

    let store = sample_store();
    // Filters bind both retrievers: hybrid finds nothing either.
    let out = store.json(&[
        "search",
        "token",
        "--kind",
        "note",
        "--namespace",
        "elsewhere",
    ]);
    assert!(out["results"].as_array().unwrap().is_empty());
    let out = store.json(&["search", "token", "--kind", "note", "--mode", "bm25"]);
    let why = out["explanation"].as_str().unwrap();
    assert!(
        why.contains("filters exclude") && why.contains("--kind note keeps 0"),
        "{why}"
    );
    let out = store.json(&[
        "search",
        "token",
        "--namespace",
        "elsewhere",
        "--mode",
        "bm25",
    ]);
    assert!(out["explanation"]
        .as_str()
        .unwrap()
        .contains("--all-namespaces"));
    let out = store.json(&["search", "zyxwvut", "--mode", "bm25"]);
    assert!(out["explanation"]
        .as_str()
        .unwrap()
        .contains("contains any of the query's terms"));
    let out = store.json(&["search", "?!,;", "--mode", "bm25"]);
    assert!(out["explanation"]
        .as_str()
        .unwrap()
        .contains("no searchable words"));
}

#[test]
fn batch_queries_write_one_line_each_and_respect_scope() {
    let store = TestStore::new();
    let corpus = store.write(
        "corpus.jsonl",
        b"{\"_id\": \"a|1\", \"text\": \"we went hiking in the alps\", \"metadata\": {\"conv\": \"a\"}}\n\
          {\"_id\": \"b|1\", \"text\": \"hiking boots were too small\", \"metadata\": {\"conv\": \"b\"}}\n",
    );
    store
        .cmd()
        .args(["add", "--namespace-field", "conv"])
        .arg(&corpus)
        .assert()
        .success();
    let queries = store.write(
        "queries.jsonl",
        b"{\"_id\": \"q1\", \"text\": \"hiking\", \"metadata\": {\"conv\": \"a\"}}\n\
          {\"_id\": \"q2\", \"text\": \"hiking\", \"metadata\": {\"conv\": \"b\"}}\n",
    );
    let out = store
        .cmd()
        .args(["search", "--queries"])
        .arg(&queries)
        .args(["--scope-field", "conv", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["query_id"], "q1");
    assert_eq!(lines[0]["results"][0]["id"], "a|1");
    assert_eq!(lines[0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(lines[1]["results"][0]["id"], "b|1");
    assert!(lines[1]["took_ms"].as_f64().is_some());
}

#[test]
fn oversized_queries_are_refused_with_the_limit() {
    let store = sample_store();
    let long = "word ".repeat(20_000);
    store
        .cmd()
        .args(["search", &long])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("max_query_bytes"));
}

#[test]
fn hostile_queries_do_not_break_search() {
    let store = sample_store();
    let many_terms: String = (0..10_000).map(|i| format!("t{i} ")).collect();
    assert!(many_terms.len() < 64 * 1024);
    for query in [
        many_terms.as_str(),
        "\"unbalanced (quote AND OR NOT:: -+",
        "日本語のテキスト 中文 العربية עברית ελληνικά кириллица हिन्दी 😀",
        "\u{200b}\u{feff}",
    ] {
        store
            .cmd()
            .args(["search", query, "--json"])
            .assert()
            .success();
    }
}

/// On a large store a term most records contain is only scored: a record that
/// holds nothing but such words is not a result, and the others keep exactly
/// the score the flat query gave them. Below `common_terms_from_records` the
/// query is the flat one. (The threshold is lowered here so 40 records count
/// as large.)
#[test]
fn common_terms_only_score_records_found_by_the_other_terms() {
    let store = TestStore::new();
    let mut lines = String::new();
    for i in 0..40 {
        let text = match i {
            0 => "the deploy runs from the main branch".to_string(),
            1 => "deploy the image to staging".to_string(),
            _ => format!("the note number {i} about the weather"),
        };
        lines.push_str(&format!("{{\"id\": \"n{i}\", \"text\": \"{text}\"}}\n"));
    }
    let input = store.write("notes.jsonl", lines.as_bytes());
    store.cmd().arg("add").arg(&input).assert().success();
    let scores = |store: &TestStore| -> Vec<(String, f64)> {
        let out = store.json(&["search", "the deploy", "--mode", "bm25", "-k", "50"]);
        out["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["id"].as_str().unwrap().to_string(),
                    h["score"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let flat = scores(&store);
    assert_eq!(
        flat.len(),
        40,
        "below the size threshold every record matches"
    );

    let old = store.set_config(&[("common_terms_from_records", "10")]);
    assert_eq!(old, ["20000"]);

    let split = scores(&store);
    let mut ids: Vec<&str> = split.iter().map(|(id, _)| id.as_str()).collect();
    ids.sort();
    assert_eq!(
        ids,
        ["n0", "n1"],
        "only records with the rare term are found"
    );
    for (id, score) in &split {
        let before = flat.iter().find(|(f, _)| f == id).unwrap().1;
        assert!((score - before).abs() < 1e-4, "{id}: {score} vs {before}");
    }
}

/// Queries about nothing the store holds get an empty answer that says so,
/// with the best score seen; `--all` shows the weak matches, marked; a
/// question in the record's terms and an exact identifier still come back
/// (issue 20).
#[test]
fn queries_about_nothing_stored_answer_nothing_relevant() {
    let store = sample_store();
    for query in [
        "xqzvbn wplmrt",
        "sourdough bread starter hydration",
        "baroque harpsichord tuning temperament",
    ] {
        let out = store.json(&["search", query]);
        assert!(
            out["results"].as_array().unwrap().is_empty(),
            "{query}: {out}"
        );
        let why = out["explanation"].as_str().unwrap();
        assert!(why.starts_with("nothing relevant"), "{why}");
        let (best, min) = (
            out["best_score"].as_f64().unwrap(),
            out["min_score"].as_f64().unwrap(),
        );
        assert!(best < min && min > 0.0, "{out}");
        assert!(why.contains(&format!("{best:.3}")), "{why}");
    }
    store
        .cmd()
        .args(["search", "xqzvbn wplmrt"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("no results: nothing relevant"));

    let all = store.json(&["search", "sourdough bread starter hydration", "--all"]);
    let weak = all["results"].as_array().unwrap();
    assert!(!weak.is_empty(), "{all}");
    assert!(weak.iter().all(|r| r["weak"] == true), "{all}");
    assert_eq!(all["min_score"], 0.0);
    let same = store.json(&[
        "search",
        "sourdough bread starter hydration",
        "--min-score",
        "0",
    ]);
    assert_eq!(same["results"].as_array().unwrap().len(), weak.len());

    let meant = store.json(&[
        "search",
        "what went wrong with the database migration",
        "-k",
        "3",
    ]);
    assert_eq!(meant["results"][0]["id"], "seg-db-0003", "{meant}");
    assert!(meant["results"][0].get("weak").is_none());
    // An exact identifier is what was asked for, however weak the rest.
    let exact = store.json(&["search", "E0502"]);
    assert_eq!(exact["results"][0]["id"], "seg-build-0002", "{exact}");
    // A paraphrase sharing almost no words with its record ("signed out" for
    // "token refresh failing") is too far on a three-record store: it is
    // left out by default and first among the weak matches.
    let far = store.json(&["search", "users kept getting signed out"]);
    assert_eq!(far["results"], serde_json::json!([]), "{far}");
    let far = store.json(&["search", "users kept getting signed out", "--all"]);
    let weak = far["results"].as_array().unwrap();
    assert!(weak.iter().any(|r| r["id"] == "seg-auth-0001"), "{far}");
    assert!(weak.iter().all(|r| r["weak"] == true), "{far}");

    // The OpenClaw payload says why it is empty too.
    let out = store
        .cmd()
        .args(["search", "xqzvbn wplmrt", "--format", "openclaw"])
        .output()
        .unwrap();
    let payload: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(payload["results"], serde_json::json!([]));
    assert!(payload["explanation"]
        .as_str()
        .unwrap()
        .starts_with("nothing relevant"));
    assert!(payload["debug"]["bestScore"].as_f64().unwrap() < 0.08);
}

#[test]
fn words_no_record_holds_are_named() {
    let store = sample_store();
    // Results for the rest of the query come with the word nobody wrote.
    let out = store.json(&["search", "Laravel database migration", "--all"]);
    assert!(!out["results"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(
        out["unknown_words"],
        serde_json::json!(["Laravel"]),
        "{out}"
    );
    store
        .cmd()
        .args(["search", "Laravel database migration", "--all"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "no record holds \"Laravel\": results can match only the other words or the meaning",
        ));
    // An empty answer says so in its explanation.
    let out = store.json(&["search", "xqzvbn wplmrt"]);
    let why = out["explanation"].as_str().unwrap();
    assert!(
        why.ends_with("no record holds the words \"xqzvbn\", \"wplmrt\""),
        "{why}"
    );
    // Words the store holds, whole or in every part, are not named.
    for query in [
        "database migration",
        "parseConfig failing",
        "oauth2.py",
        "E0502",
        "config/migration",
    ] {
        let out = store.json(&["search", query]);
        assert!(out.get("unknown_words").is_none(), "{query}: {out}");
    }
    let out = store.json(&["search", "parseConfigV2 database", "--all"]);
    assert_eq!(
        out["unknown_words"],
        serde_json::json!(["parseConfigV2"]),
        "{out}"
    );
    // The OpenClaw payload carries them for the model too.
    let out = store
        .cmd()
        .args([
            "search",
            "Laravel database migration",
            "--format",
            "openclaw",
        ])
        .output()
        .unwrap();
    let payload: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(payload["unknownWords"], serde_json::json!(["Laravel"]));
}

/// A minimum above every score empties the answer and says by how much;
/// a minimum of 0 keeps every result.
#[test]
fn min_score_cuts_and_reports_what_it_left_out() {
    let store = sample_store();
    let all = store.json(&["search", "refresh token", "--all"]);
    let n = all["results"].as_array().unwrap().len();
    assert!(n > 1);
    let scores: Vec<f64> = all["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    assert!(scores.iter().all(|&s| s > 0.0 && s < 1.0), "{scores:?}");
    let cut = format!("{:.4}", (scores[0] + scores[1]) / 2.0);
    let one = store.json(&["search", "refresh token", "--min-score", &cut]);
    assert_eq!(one["results"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["below_min_score"].as_u64().unwrap() as usize, n - 1);
    store
        .cmd()
        .args(["search", "refresh token", "--min-score", "1.5"])
        .assert()
        .code(2);
}

/// After every record is archived, search says where the records went and
/// how to search them (issue 17), in text, JSON and the OpenClaw payload.
#[test]
fn an_emptied_store_points_at_the_archive() {
    let store = sample_store();
    let total = store.json(&["stats"])["records"].as_u64().unwrap();
    store
        .cmd()
        .args(["archive", "--older-than", "0s"])
        .assert()
        .success();
    let stats = store.json(&["stats"]);
    assert!(
        stats["by_tier"]["l2"].is_null(),
        "every record left L2: {stats}"
    );
    assert_eq!(stats["by_tier"]["l3"], total, "{stats}");
    let out = store.json(&["search", "oauth token refresh"]);
    let why = out["explanation"].as_str().unwrap();
    assert!(
        why.contains(&format!("all {total} records are archived in L3"))
            && why.contains("--tier all"),
        "{why}"
    );
    let out = store
        .cmd()
        .args(["search", "oauth", "--format", "openclaw"])
        .output()
        .unwrap();
    let payload: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(payload["explanation"]
        .as_str()
        .unwrap()
        .contains("--tier all"));
    let archived = store.json(&["search", "oauth token refresh", "--tier", "all"]);
    assert_eq!(archived["results"][0]["tier"], "l3", "{archived}");
}

/// A query naming a day or month raises the records written then (issue 20):
/// the date lives in the record's time, not in its words.
#[test]
fn a_query_naming_a_date_ranks_records_of_that_date_first() {
    let store = TestStore::new();
    let notes = [
        ("deploy-0302", "2026-03-02T10:00:00Z", "smoke tests green"),
        (
            "deploy-0309",
            "2026-03-09T10:00:00Z",
            "rolled back after a cache error",
        ),
        (
            "deploy-0316",
            "2026-03-16T10:00:00Z",
            "warmed the caches first",
        ),
        ("deploy-undated", "", "outcome unknown"),
        ("deploy-yesterday", "yesterday", "the new region went live"),
    ];
    let yesterday = time::OffsetDateTime::now_utc()
        .date()
        .previous_day()
        .expect("a yesterday")
        .to_string();
    let lines: Vec<String> = notes
        .iter()
        .map(|(id, at, outcome)| {
            let mut note = serde_json::json!({
                "id": id,
                "kind": "note",
                "title": "billing service deploy",
                "text": format!("Deployed the billing service to production; {outcome}."),
            });
            match *at {
                "" => {}
                "yesterday" => {
                    note["timestamp"] = serde_json::json!(format!("{yesterday}T12:00:00Z"))
                }
                at => note["timestamp"] = serde_json::json!(at),
            }
            note.to_string()
        })
        .collect();
    let input = store.write("deploys.jsonl", (lines.join("\n") + "\n").as_bytes());
    store.cmd().arg("add").arg(&input).assert().success();
    for (query, expected) in [
        ("billing service deploy on March 9, 2026", "deploy-0309"),
        (
            "what happened to the billing deploy on 2026-03-16",
            "deploy-0316",
        ),
        ("billing service deploy of 2 March 2026", "deploy-0302"),
        // Within four days of the named day still counts.
        ("the billing service deploy on Mar 11", "deploy-0309"),
        // Relative to today.
        ("the billing service deploy yesterday", "deploy-yesterday"),
    ] {
        let bm25 = store.search_ids(&[query, "-k", "1"]);
        assert_eq!(bm25, [expected], "query {query}, BM25 alone");
        // Hybrid: first of the dated ones (on four records, the undated one's
        // similarity alone can outweigh a date).
        let hybrid = store.json(&["search", query, "--all"]);
        let first_dated = hybrid["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["id"].as_str().unwrap_or_default())
            .find(|id| *id != "deploy-undated");
        assert_eq!(first_dated, Some(expected), "query {query}: {hybrid}");
    }
    // A date none was written on raises none: the order is the query's own.
    let order = |query: &str| store.search_ids(&[query, "--all"]);
    assert_eq!(
        order("billing service deploy on 2025-07-01"),
        order("billing service deploy")
    );
}
