//! Unit tests of the redactor as a whole: what survives, what is replaced and
//! how, the settings, records and JSON values, and two properties
//! (idempotence; ordinary code and prose pass unchanged). Fresh random
//! secrets of every kind are planted by `tests/privacy_rules.rs`.

use std::borrow::Cow;

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::error::Origin;
use crate::record::{parse_record, ParseOptions};

/// `len` characters of `alphabet`, the same for the same seed: test keys
/// that look random (high entropy) without being anyone's key.
fn fake(alphabet: &str, len: usize, seed: u64) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            chars[((state >> 33) % chars.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";

fn redacted(text: &str) -> String {
    Redactor::builtin().redact(text).text.into_owned()
}

#[test]
fn look_alikes_survive() {
    let survivors = [
        "posthogAPIKey",
        "var posthogAPIKey = \"\"",
        "go build -ldflags \"-X main.posthogAPIKey=$POSTHOG_KEY\"",
        "apiKey = settings.key",
        "const apiKey = config.openai.apiKey;",
        "OPENAI_API_KEY=",
        "export OPENAI_API_KEY=",
        "api_key=os.environ[\"X\"]",
        "api_key = os.environ.get(\"OPENAI_API_KEY\")",
        "password: ${DB_PASSWORD}",
        "PASSWORD=$DB_PASSWORD",
        "password = request.form[\"password\"]",
        "password_hash = hash_password(pw)",
        "if password == confirm_password:",
        "token = get_token()",
        "const token = await getToken();",
        "token: str",
        "\"max_tokens\": 4096",
        "\"cache_read_input_tokens\": 123456",
        "tokenizer: cl100k_base",
        "Tokens: 1234",
        "[timing] CalculateTokenUsageFromFile: 1.480123ms",
        "secret_name: my-app-secret-2",
        "api_key: \"<your-api-key>\"",
        "API_KEY=your-api-key-here",
        "password: \"********\"",
        "Authorization: Bearer ${TOKEN}",
        "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com",
        "headers = {\"Authorization\": f\"Bearer {token}\"}",
        "headers[\"Authorization\"] = authHeader",
        "postgres://user:${DB_PASSWORD}@localhost:5432/db",
        "redis://localhost:6379/0",
        "https://example.com/path?page=2&sort=asc",
        "http://localhost:8080/api/v1/search?q=token",
        "git checkout 3f9a1c2e8b7d6f5a4c3b2a1908f7e6d5c4b3a291",
        "commit 3f9a1c2e8b7d6f5a4c3b2a1908f7e6d5c4b3a291 (HEAD -> main)",
        "\"id\": \"123e4567-e89b-12d3-a456-426614174000\"",
        "session_id: 7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47",
        "/home/user/.config/knowledge-db/config.toml",
        "src/privacy/rules/knowledge-db.toml",
        "SGVsbG8sIHdvcmxkISBUaGlzIGlzIGEgdGVzdCBvZiBiYXNlNjQu",
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "The key insight is that the token bucket refills every second.",
        "if line.startswith(\"-----BEGIN PRIVATE KEY-----\"):",
        "-----BEGIN PUBLIC KEY-----",
        "branch.20260206-secrets-redaction.merge=refs/heads/20260206-secrets-redaction",
        "input=../../../etc/passwd generated_id=2026-01-27-abcdef0123456789abcdef0123456789abcdef",
        "[REDACTED github-pat]",
        "API_KEY=[REDACTED openai-api-key]",
        "bearer tokens are sent in the Authorization header",
    ];
    let mut changed = Vec::new();
    for text in survivors {
        let out = Redactor::builtin().redact(text);
        if out.text != text || !out.found.is_empty() {
            changed.push(format!("{text:?}\n  -> {:?} ({})", out.text, out.found));
        }
    }
    assert!(
        changed.is_empty(),
        "look-alikes changed:\n{}",
        changed.join("\n")
    );
}

#[test]
fn the_name_stays_and_the_value_goes() {
    let anthropic = format!("sk-ant-api03-{}AA", fake(ALNUM, 93, 1));
    let github = format!("ghp_{}", fake(ALNUM, 36, 2));
    let basic = fake(ALNUM, 24, 3);
    let generic = fake(HEX, 32, 4);
    let cases = [
        (
            format!("API_KEY={anthropic}"),
            "API_KEY=[REDACTED anthropic-api-key]".to_string(),
        ),
        (
            format!("my key is {anthropic}."),
            "my key is [REDACTED anthropic-api-key].".to_string(),
        ),
        (
            format!("export GITHUB_TOKEN={github}"),
            "export GITHUB_TOKEN=[REDACTED github-pat]".to_string(),
        ),
        (
            format!("Authorization: Basic {basic}=="),
            "Authorization: Basic [REDACTED authorization-header]".to_string(),
        ),
        (
            format!("curl -s -H 'X-Api-Key: {generic}' https://api.example.com"),
            "curl -s -H 'X-Api-Key: [REDACTED curl-auth-header]' https://api.example.com"
                .to_string(),
        ),
        (
            "postgres://app:S3cr3t-Pa55w0rd@db.internal:5432/app".to_string(),
            "postgres://app:[REDACTED url-password]@db.internal:5432/app".to_string(),
        ),
        (
            "DB_PASSWORD=Tr0ub4dor&3x".to_string(),
            "DB_PASSWORD=[REDACTED password-assignment]".to_string(),
        ),
        (
            "login?user=ann&password=Tr0ub4dor&3x&next=/home".to_string(),
            "login?user=ann&password=[REDACTED password-assignment]&next=/home".to_string(),
        ),
        (
            format!("GET /v1/me?access_token={}&x=1", fake(ALNUM, 20, 5)),
            "GET /v1/me?access_token=[REDACTED url-query-secret]&x=1".to_string(),
        ),
        (
            format!("{{\"text\": \"key {github}\\\"}}"),
            "{\"text\": \"key [REDACTED github-pat]\\\"}".to_string(),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(redacted(&text), expected, "{text}");
    }
}

#[test]
fn findings_count_by_kind_and_say_so() {
    let github = format!("ghp_{}", fake(ALNUM, 36, 6));
    let text = format!("a {github} b {github} <private>mine</private> c");
    let out = Redactor::builtin().redact(&text);
    assert_eq!(
        out.text,
        "a [REDACTED github-pat] b [REDACTED github-pat]  c"
    );
    assert_eq!(out.found.kinds.get("github-pat"), Some(&2));
    assert_eq!(out.found.private_spans, 1);
    assert_eq!(out.found.total(), 3);
    assert_eq!(
        out.found.to_string(),
        "2 secrets redacted (2 github-pat), 1 private span dropped"
    );
    let mut sum = Findings::default();
    sum.absorb(&out.found);
    sum.absorb(&out.found);
    assert_eq!((sum.kinds["github-pat"], sum.private_spans), (4, 2));
    assert!(Findings::default().is_empty());
    let plain = Redactor::builtin().redact("nothing here");
    assert!(matches!(plain.text, Cow::Borrowed(_)) && plain.found.is_empty());
}

#[test]
fn a_private_span_hides_secrets_and_the_rest_of_an_unclosed_one() {
    let github = format!("ghp_{}", fake(ALNUM, 36, 7));
    let text = format!("keep <PRIVATE>\n{github}\n</private> this; and <private>drop {github}");
    let out = Redactor::builtin().redact(&text);
    assert_eq!(out.text, "keep  this; and ");
    assert_eq!(out.found.private_spans, 2);
    assert!(out.found.kinds.is_empty(), "dropped before scanning");
}

#[test]
fn overlapping_findings_merge_under_the_vendor_name() {
    // generic-api-key sees "API_KEY=sk_live_..." after "authenticate:"; the
    // Stripe rule sees the key: one placeholder, named after Stripe.
    let key = format!("sk_live_{}", fake(ALNUM, 24, 8));
    let out = redacted(&format!("failed to authenticate: API_KEY={key}\n"));
    assert_eq!(
        out,
        "failed to authenticate: [REDACTED stripe-access-token]\n"
    );
}

#[test]
fn settings_add_patterns_and_allow_values() {
    let acme = format!(
        "acme_{}",
        fake("abcdefghijklmnopqrstuvwxyz0123456789", 32, 9)
    );
    let public = format!("ghp_{}", fake(ALNUM, 36, 10));
    let other = format!("ghp_{}", fake(ALNUM, 36, 11));
    let settings = PrivacySettings {
        extra_patterns: vec![ExtraPattern {
            name: "acme-token".into(),
            regex: r"\bacme_[a-z0-9]{32}\b".into(),
            secret_group: None,
            keywords: vec!["ACME_".into()],
            entropy: None,
        }],
        allow: vec![public.clone()],
        allow_patterns: vec![format!("^{}[A-Za-z0-9]{{30}}$", &other[..10])],
        ..PrivacySettings::default()
    };
    let redactor = Redactor::new(&settings).unwrap();
    let text = format!("{acme} {public} {other}");
    let out = redactor.redact(&text);
    assert_eq!(out.text, format!("[REDACTED acme-token] {public} {other}"));
    // The allow pattern is anchored on the secret: a different key still goes.
    let third = format!("ghp_{}", fake(ALNUM, 36, 12));
    assert_eq!(redactor.redact(&third).text, "[REDACTED github-pat]");
    // Off: secrets stay, private spans still go.
    let off = Redactor::new(&PrivacySettings {
        redact: false,
        ..PrivacySettings::default()
    })
    .unwrap();
    let out = off.redact("<private>x</private>keep ghp_abc");
    assert_eq!(out.text, "keep ghp_abc");
    assert!(off.find(&third).is_empty());
}

#[test]
fn bad_settings_name_the_key() {
    let with = |pattern: ExtraPattern| PrivacySettings {
        extra_patterns: vec![pattern.clone(), pattern],
        ..PrivacySettings::default()
    };
    let good = ExtraPattern {
        name: "acme".into(),
        regex: "acme_[a-z]{8}".into(),
        secret_group: None,
        keywords: vec![],
        entropy: None,
    };
    let cases = [
        (
            with(ExtraPattern {
                regex: "acme_[a-z".into(),
                ..good.clone()
            }),
            "config.toml: privacy.extra_patterns[0].regex: ",
        ),
        (
            with(ExtraPattern {
                name: "acme token]".into(),
                ..good.clone()
            }),
            "config.toml: privacy.extra_patterns[0].name: `acme token]`",
        ),
        (
            with(ExtraPattern {
                secret_group: Some(1),
                ..good.clone()
            }),
            "config.toml: privacy.extra_patterns[0].secret_group: secret_group 1 but the regex has 0",
        ),
        (
            with(ExtraPattern {
                entropy: Some(f64::NAN),
                ..good.clone()
            }),
            "config.toml: privacy.extra_patterns[0].entropy: ",
        ),
        (
            PrivacySettings {
                allow_patterns: vec!["ok".into(), "(".into()],
                ..PrivacySettings::default()
            },
            "config.toml: privacy.allow_patterns[1]: ",
        ),
    ];
    for (settings, expected) in cases {
        let error = Redactor::new(&settings).unwrap_err();
        assert!(matches!(error, Error::Config { .. }), "{error:?}");
        let text = error.to_string();
        assert!(text.starts_with(expected), "{text}\nexpected: {expected}");
    }
}

#[test]
fn the_privacy_table_reads_from_toml() {
    let text = r#"
        redact = true
        allow = ["pk_test_1"]
        allow_patterns = ['''^EXAMPLE''']
        [[extra_patterns]]
        name = "acme-token"
        regex = '''acme_[a-z0-9]{32}'''
        secret_group = 0
        keywords = ["acme_"]
    "#;
    let settings: PrivacySettings = toml::from_str(text).unwrap();
    assert_eq!(settings.extra_patterns[0].secret_group, Some(0));
    assert!(Redactor::new(&settings).is_ok());
    assert_eq!(
        toml::from_str::<PrivacySettings>("").unwrap(),
        PrivacySettings::default()
    );
    let typo = toml::from_str::<PrivacySettings>("allow_pattern = ['x']").unwrap_err();
    assert!(typo.to_string().contains("allow_pattern"), "{typo}");
}

#[test]
fn values_and_keys_are_redacted() {
    let github = format!("ghp_{}", fake(ALNUM, 36, 13));
    let mut value = json!({
        "queue": [{"text": format!("token {github}"), "n": 1}],
        github.clone(): "a secret as a key goes too (issue 52)",
        "tool_use_result": {"numLines": 1},
        "nested": {"deeper": [null, true, format!("<private>x</private>{github}")]}
    });
    let found = redact_value(Redactor::builtin(), &mut value);
    assert_eq!(found.kinds["github-pat"], 3);
    assert_eq!(found.private_spans, 1);
    assert_eq!(value["queue"][0]["text"], "token [REDACTED github-pat]");
    assert!(value.get(&github).is_none(), "{value}");
    assert_eq!(
        value["[REDACTED github-pat]"],
        "a secret as a key goes too (issue 52)"
    );
    assert_eq!(value["tool_use_result"]["numLines"], 1, "names stay");
    assert_eq!(value["nested"]["deeper"][2], "[REDACTED github-pat]");
}

#[test]
fn a_record_is_redacted_everywhere_it_is_read() {
    let github = format!("ghp_{}", fake(ALNUM, 36, 14));
    let source = json!({
        "kind": "message",
        "id": "s1:turn:3",
        "session_id": "s1",
        "role": "user",
        "text": format!("use {github} for the posthogAPIKey client <private>home address</private>"),
        "commands": [format!("gh auth login --with-token {github}")],
        "context": format!("earlier: {github}"),
    });
    let mut record = parse_record(source, &Origin::file("t"), &ParseOptions::default()).unwrap();
    assert!(record.fields.content.contains(&github));
    let found = redact_record(Redactor::builtin(), &mut record);
    // text, commands, the JSON's `context` and the record's context.
    assert_eq!(found.kinds["github-pat"], 4);
    assert_eq!(found.private_spans, 1);
    let everything = format!(
        "{} {:?} {:?}",
        serde_json::to_string(&record).unwrap(),
        record.fields,
        record.context
    );
    assert!(!everything.contains(&github), "{everything}");
    assert!(!everything.contains("home address"), "{everything}");
    assert_eq!(
        record.fields.content,
        "use [REDACTED github-pat] for the posthogAPIKey client "
    );
    assert_eq!(
        record.fields.commands,
        vec!["gh auth login --with-token [REDACTED github-pat]"]
    );
    assert_eq!(
        record.context.as_deref(),
        Some("earlier: [REDACTED github-pat]")
    );
    assert_eq!(record.id, "s1:turn:3");
}

#[test]
fn a_context_cut_in_a_secret_loses_the_cut_word() {
    let github = format!("ghp_{}", fake(ALNUM, 36, 16));
    // Cut 11 characters into the key: too short a piece for any rule (a
    // longer piece is recognised by its prefix, `vendor-token`).
    let prompt = format!("{} {github} and more", "word ".repeat(117));
    let clipped = crate::record::context::clip(&prompt);
    assert!(
        clipped.ends_with(&github[..14]) && Redactor::builtin().find(&clipped).is_empty(),
        "cut inside the key, which no rule recognises any more"
    );
    let source = json!({"kind": "message", "id": "s:2", "role": "assistant", "text": "ok",
        "context": "short"});
    let mut record = parse_record(source, &Origin::file("t"), &ParseOptions::default()).unwrap();
    record.context = Some(clipped);
    redact_record(Redactor::builtin(), &mut record);
    let context = record.context.unwrap();
    assert!(!context.contains("ghp_"), "{context}");
    assert!(context.trim_end().ends_with("word"), "{context}");
    // A context under the limit keeps its last word.
    let mut short = parse_record(
        json!({"kind": "message", "id": "s:3", "role": "assistant", "text": "ok", "context": "the last word"}),
        &Origin::file("t"),
        &ParseOptions::default(),
    )
    .unwrap();
    redact_record(Redactor::builtin(), &mut short);
    assert_eq!(short.context.as_deref(), Some("the last word"));
}

#[test]
fn the_redactor_is_shared_between_threads() {
    fn shared<T: Send + Sync>(_: &T) {}
    shared(Redactor::builtin());
    let github = format!("ghp_{}", fake(ALNUM, 36, 15));
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(redacted(&github), "[REDACTED github-pat]"));
        }
    });
}

/// Pieces of text agents write: secrets of several kinds, their names,
/// look-alikes, placeholders, tags, code and prose.
fn piece() -> impl Strategy<Value = String> {
    let secret = (any::<u64>(), 0..7usize).prop_map(|(seed, kind)| match kind {
        0 => format!("ghp_{}", fake(ALNUM, 36, seed)),
        1 => format!("sk-ant-api03-{}AA", fake(ALNUM, 93, seed)),
        2 => format!("AKIA{}", fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, seed)),
        3 => format!("password={}", fake(ALNUM, 12, seed)),
        4 => format!("postgres://u:{}@h/db", fake(ALNUM, 10, seed)),
        5 => format!("Authorization: Bearer {}", fake(ALNUM, 30, seed)),
        _ => format!("api_key: \"{}\"", fake(HEX, 32, seed)),
    });
    prop_oneof![
        secret,
        Just("[REDACTED github-pat]".to_string()),
        Just("<private>".to_string()),
        Just("</private>".to_string()),
        Just("API_KEY=".to_string()),
        Just("token".to_string()),
        Just("\n".to_string()),
        "[a-zA-Z0-9_ .=:\"'/-]{0,20}",
    ]
}

/// Ordinary words and identifiers: code names that hold key words, paths,
/// hashes, prose.
fn ordinary() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("posthogAPIKey".to_string()),
        Just("apiKey = settings.key".to_string()),
        Just("tokenCount".to_string()),
        Just("getSecretName()".to_string()),
        Just("the access token expired".to_string()),
        Just("password reset".to_string()),
        "[a-z]{2,10}([A-Z][a-z]{1,8}){0,3}",
        "(/[a-z_]{1,8}){1,4}\\.(rs|ts|py)",
        "[0-9a-f]{40}",
        // No comma: gitleaks reads `key, value` as an assignment (function
        // arguments), so "posthogAPIKey Aa, <hash>" is redacted on purpose.
        "[A-Z][a-z]{1,10}( [a-z]{1,10}){0,6}[.]?",
    ]
}

proptest! {
    #[test]
    fn redacting_twice_changes_nothing(pieces in proptest::collection::vec(piece(), 0..12)) {
        let text = pieces.join(" ");
        let once = Redactor::builtin().redact(&text).text.into_owned();
        let twice = Redactor::builtin().redact(&once);
        prop_assert_eq!(twice.text.as_ref(), once.as_str());
        prop_assert!(twice.found.is_empty(), "{}", twice.found);
    }

    #[test]
    fn ordinary_text_comes_back_unchanged(words in proptest::collection::vec(ordinary(), 0..16)) {
        let text = words.join(" ");
        // gitleaks' Sourcegraph rule takes any 40-hex value for a token once
        // `sgp_` is in the text (a path piece such as `/sgp_.rs` can be): by
        // design, so not ordinary text.
        prop_assume!(!text.contains("sgp_"));
        let out = Redactor::builtin().redact(&text);
        prop_assert_eq!(out.text.as_ref(), text.as_str());
    }
}

/// A complete token at the end of a line, then prose: the next line's first
/// word stays. (The view that joins a token broken across lines once took it
/// for the token's rest: `ghp_…\nnext` lost "next", and a next line that was
/// a token of its own was swallowed under the first one's name.)
#[test]
fn a_token_at_the_end_of_a_line_keeps_the_next_word() {
    let ghp = format!("ghp_{}", fake(ALNUM, 36, 7));
    for (text, kept) in [
        (format!("{ghp}\nnext we rotate it"), "\nnext we rotate it"),
        (format!("key: {ghp}\nUse the new one"), "\nUse the new one"),
        (
            format!("{{\"t\":\"{ghp}\\nJSON follows\"}}"),
            "\\nJSON follows",
        ),
    ] {
        let out = redacted(&text);
        assert!(out.contains(kept), "{out:?}");
        assert!(!out.contains(&ghp[4..]), "{out:?}");
    }
}

/// A Python format placeholder is a template only as the whole value: a
/// random Django key that happens to hold `%(fn)s` is still a secret (the
/// battery's one failure in 48 runs), while `"%(db_password)s"` stays.
#[test]
fn a_format_placeholder_inside_a_random_key_does_not_excuse_it() {
    let key = "django-insecure-lk%(fn)s&-9$7!xh1tm4=)x+&p%%d5al9q$)x#+8^=t@3zl+rd";
    let out = redacted(&format!("SECRET_KEY = '{key}'"));
    assert!(!out.contains("xh1tm4"), "{out}");
    let template = "password = \"%(db_password)s\"";
    assert_eq!(redacted(template), template);
}

/// A letters-only value after a secret's flag or name is a secret even when
/// it starts like a placeholder ("my…", "your…"); only a value that reads as
/// a placeholder through its end ("mypassword", "your_token_here") stays.
/// (CI seed 1796719733251742922 drew `mytKTwqiiILkut`, which `my\w*` let by.)
#[test]
fn a_letters_only_secret_that_starts_like_a_placeholder_is_redacted() {
    for text in [
        "gpg --batch --yes --passphrase mytKTwqiiILkut -c backup.tar",
        "DB_PASSWORD=yourKqzTrwLmpa",
        "{\"password\": \"enterWqpLxZt\"}",
    ] {
        let out = redacted(text);
        assert!(out.contains("[REDACTED"), "{text:?} -> {out:?}");
    }
    for text in [
        "gpg --batch --passphrase mypassphrase -c backup.tar",
        "DB_PASSWORD=your_password_here",
        "{\"password\": \"enteryourpassword\"}",
    ] {
        assert_eq!(redacted(text), text);
    }
}

/// A short foreign word for "password" inside base64 is chance, not a label:
/// a yarn.lock integrity hash holding "…GBSeNHA…" stays whole (a look-alike
/// the battery's seed 1796724600369623152 drew), while the word on its own
/// still labels the value after it.
#[test]
fn a_foreign_password_word_inside_base64_is_not_a_label() {
    let hash = "integrity sha512-lj2oILHXHU7/hOwAVG4fWHLB/GBSeNHAq9xZ2mK7bR4tP0wQ8vN3sL6yF1cD5hJ9uE2iO7aT4gB8nM0kS3pR6wX==";
    assert_eq!(redacted(hash), hash);
    for text in [
        "a senha é Xq9zT2mK7b",
        "senha: Xq9zT2mK7b",
        "hasło do bazy: Xq9zT2mK7b",
        "la clave: Xq9zT2mK7b",
        "Datenbankpasswort: Xq9zT2mK7b",
        "Veritabanı şifresi: Xq9zT2mK7b",
        "sunucu parolası: Xq9zT2mK7b",
    ] {
        let out = redacted(text);
        assert!(!out.contains("Xq9zT2mK7b"), "{text:?} -> {out:?}");
    }
}
