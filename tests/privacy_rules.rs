//! Redaction against fresh random secrets of every supported kind
//! (`common/secrets.rs`): each planted value is gone and its placeholder
//! names the right kind, alone, all together, and inside a real-format Claude
//! Code session read and turned into records as `ingest` does. Ordinary code
//! and prose come back unchanged (property test).

#[path = "common/secrets.rs"]
mod secrets;

use knowledge_db::privacy::{redact_record, Findings, PrivacySettings, Redactor};
use knowledge_db::transcript::ingest::{transcript_records, Via};
use knowledge_db::transcript::{read_slice, ReadFrom};
use proptest::prelude::*;

/// How many fresh secrets of each kind are tried.
const ROUNDS: usize = 100;

#[test]
fn every_kind_is_planted() {
    let kinds = secrets::kinds();
    assert!(kinds.len() >= 25, "only {} kinds: {kinds:?}", kinds.len());
    // Every rule of knowledge-db's own file is exercised.
    for own in [
        "aws-secret-access-key",
        "authorization-header",
        "bearer-token",
        "url-password",
        "url-query-secret",
        "password-assignment",
        "secret-assignment",
        "private-key-fragment",
    ] {
        assert!(kinds.contains(&own), "no planted {own}");
    }
}

#[test]
fn every_planted_secret_is_replaced_by_its_kind() {
    let mut rng = secrets::Rng::from_time();
    let redactor = Redactor::builtin();
    let mut failures = Vec::new();
    for round in 0..ROUNDS {
        for planted in secrets::planted(&mut rng) {
            let out = redactor.redact(&planted.line);
            let named = std::iter::once(&planted.kind)
                .chain(planted.also)
                .any(|kind| out.text.contains(&format!("[REDACTED {kind}]")));
            let leak = secrets::leaks(&planted.secret, &out.text);
            if leak.is_some() || !named {
                failures.push(format!(
                    "round {round}, {} in {}: leaked {:?}\n  line: {:?}\n  out:  {:?}",
                    planted.kind, planted.place, leak, planted.line, out.text
                ));
            }
            let counted = std::iter::once(&planted.kind)
                .chain(planted.also)
                .any(|kind| out.found.kinds.contains_key(*kind));
            if !counted || out.found.total() != 1 {
                failures.push(format!(
                    "round {round}: {} not counted: {}",
                    planted.kind, out.found
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "seed {}: {} failures:\n{}",
        rng.seed,
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn all_secrets_in_one_text_are_counted_by_kind() {
    let mut rng = secrets::Rng::from_time();
    let planted = secrets::planted(&mut rng);
    let text = planted
        .iter()
        .map(|p| p.line.as_str())
        .collect::<Vec<_>>()
        .join("\n\nand then\n\n");
    let out = Redactor::builtin().redact(&text);
    for p in &planted {
        assert_eq!(
            secrets::leaks(&p.secret, &out.text),
            None,
            "seed {}: {}",
            rng.seed,
            p.kind
        );
    }
    let mut expected = Findings::default();
    for p in &planted {
        let kind = std::iter::once(&p.kind)
            .chain(p.also)
            .find(|kind| out.found.kinds.contains_key(**kind))
            .unwrap_or(&p.kind);
        *expected.kinds.entry(kind.to_string()).or_default() += 1;
    }
    assert_eq!(out.found, expected, "seed {}\n{}", rng.seed, out.text);
    // Idempotent.
    assert_eq!(Redactor::builtin().redact(&out.text).text, out.text);
}

#[test]
fn a_real_format_session_keeps_no_secret_in_any_record() {
    let mut rng = secrets::Rng::from_time();
    let planted = secrets::planted(&mut rng);
    let marker = format!("Privet Drive {}", rng.between(100, 999));
    let jsonl = secrets::claude_code_session("sess-privacy", &planted, &marker);
    let path = std::path::Path::new("sess-privacy.jsonl");
    let transcript = read_slice(path, jsonl.as_bytes(), None, ReadFrom::default()).expect("read");
    // Read without secret redaction (private spans go whatever the settings
    // say), to count what redact_record replaces...
    let keep_secrets = Redactor::new(&PrivacySettings {
        redact: false,
        ..PrivacySettings::default()
    })
    .expect("settings");
    let records_of = |redactor: &Redactor| {
        transcript_records(
            &transcript,
            "default",
            "2026-01-15T10:00:00Z",
            Via::Ingest,
            None,
            redactor,
        )
        .expect("records")
    };
    let mut records = records_of(&keep_secrets);
    assert!(records.len() > planted.len(), "{} records", records.len());
    let before =
        serde_json::to_string(&records.iter().map(|r| &r.source).collect::<Vec<_>>()).unwrap();
    assert!(before.contains(&planted[0].secret));
    assert!(!before.contains(&marker), "private span kept");

    let mut total = Findings::default();
    for record in &mut records {
        total.absorb(&redact_record(Redactor::builtin(), record));
    }
    // ...and as ingest reads it: redacted before replies are linked.
    records.extend(records_of(Redactor::builtin()));
    for record in &records {
        let everything = format!(
            "{}\n{:?}\n{:?}",
            serde_json::to_string(record).unwrap(),
            record.fields,
            record.context
        );
        // JSON escapes newlines and quotes: look in the decoded strings too.
        let decoded = everything.replace("\\n", "\n").replace("\\\"", "\"");
        for p in &planted {
            for text in [&everything, &decoded] {
                if let Some(leak) = secrets::leaks(&p.secret, text) {
                    let at = text.find(&leak).unwrap_or(0);
                    let around: String = text[at.saturating_sub(120)..].chars().take(240).collect();
                    panic!(
                        "seed {}: {} ({}) survives in record {}: …{around}…",
                        rng.seed, p.kind, p.place, record.id
                    );
                }
            }
        }
        assert!(
            !everything.contains(&marker),
            "private span kept in {}",
            record.id
        );
    }
    for p in &planted {
        let counted = std::iter::once(&p.kind)
            .chain(p.also)
            .any(|kind| total.kinds.contains_key(*kind));
        assert!(counted, "seed {}: no {} in {total}", rng.seed, p.kind);
    }
    // The look-alike in the same prompt is still there to be found.
    let prompt = &records[0];
    assert!(
        prompt.fields.content.contains("posthogAPIKey"),
        "{}",
        prompt.fields.content
    );
}

/// Code and prose with names that hold key words, and other things that
/// look random without being secrets.
fn ordinary() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("posthogAPIKey".to_string()),
        Just("apiKey = settings.key".to_string()),
        Just("const token = await getToken();".to_string()),
        Just("password = request.form[\"password\"]".to_string()),
        Just("api_key=os.environ[\"OPENAI_API_KEY\"]".to_string()),
        Just("export OPENAI_API_KEY=\n".to_string()),
        Just("password: ${DB_PASSWORD}".to_string()),
        Just("the secret is to keep the token bucket small".to_string()),
        // camelCase and snake_case names, some holding key words.
        "(api|auth|secret|token|access|key|password)(Key|Token|Secret|Name|Count|Id)[A-Z][a-z]{1,6}",
        "[a-z]{2,8}_(api_key|token|secret)_(name|id|count|path)",
        "[a-z]{2,10}([A-Z][a-z]{1,8}){0,3}",
        // Paths, URLs without credentials, hashes, UUIDs, numbers.
        "(/[a-z_]{1,8}){1,4}\\.(rs|ts|py|toml)",
        "https://[a-z]{3,10}\\.(com|dev|io)(/[a-z]{1,8}){0,3}",
        "[0-9a-f]{40}",
        "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        "[0-9]{1,9}",
        // No comma: gitleaks reads `key, value` as an assignment (function
        // arguments), so "posthogAPIKey Aa, <hash>" is redacted on purpose.
        "[A-Z][a-z]{1,10}( [a-z]{1,10}){0,6}[.]?",
    ]
}

proptest! {
    #[test]
    fn ordinary_text_comes_back_unchanged(words in proptest::collection::vec(ordinary(), 1..20)) {
        let text = words.join(" ");
        let out = Redactor::builtin().redact(&text);
        prop_assert_eq!(out.text.as_ref(), text.as_str(), "{}", out.found);
    }
}
