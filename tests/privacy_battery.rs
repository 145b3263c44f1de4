//! A broad battery of realistic secret *contexts* (`common/battery.rs`: ~90
//! places where secrets turn up in coding-agent sessions, fresh random values
//! each run) and of look-alikes that must come back unchanged (lockfile
//! hashes, commit hashes, UUIDs, digests, references to secrets, placeholders,
//! code). A secret counts as redacted when no run of 8 of its characters is
//! left and a placeholder names a kind the context allows.

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
#[path = "common/secrets.rs"]
mod secrets;

use std::collections::BTreeMap;

use knowledge_db::privacy::Redactor;
use secrets::{Rng, ALNUM, BASE64, DIGITS, HEX};

/// Rounds of fresh values per context.
const ROUNDS: usize = 30;

/// The shortest run of a secret's characters that counts as a leak.
const LEAK_WINDOW: usize = 8;

/// Contexts knowingly left unredacted, each with the reason (docs/privacy.md,
/// "What is not redacted"). Empty: every context must pass.
const KNOWN_MISSES: &[(&str, &str)] = &[];

/// Why `case` fails once, if it does: a secret left, or no placeholder of an
/// allowed kind.
fn failure(redactor: &Redactor, case: &battery::Case, text: &str) -> Option<String> {
    let out = redactor.redact(text);
    for secret in &case.secrets {
        if let Some(leak) = battery::leaks(secret, &out.text, LEAK_WINDOW) {
            return Some(format!("leaked {leak:?}\n  out: {:?}", out.text));
        }
    }
    if out.found.is_empty() {
        return Some(format!("no placeholder\n  out: {:?}", out.text));
    }
    if !case.kinds.is_empty() && !case.kinds.iter().any(|k| out.found.kinds.contains_key(*k)) {
        return Some(format!("named {} not {:?}", out.found, case.kinds));
    }
    None
}

/// Runs every context `ROUNDS` times, as written and (`escaped`) held as a
/// JSON string inside text (a tool's JSON output printed as text); returns
/// the contexts that failed at least once, with their first failure, and the
/// number of contexts.
fn run(escaped: bool) -> (BTreeMap<&'static str, (usize, String)>, usize, u64) {
    let mut rng = Rng::from_time();
    let redactor = Redactor::builtin();
    let mut failed: BTreeMap<&'static str, (usize, String)> = BTreeMap::new();
    let mut contexts = 0;
    for _ in 0..ROUNDS {
        let cases = battery::cases(&mut rng);
        contexts = cases.len();
        for case in &cases {
            let text = if escaped {
                format!(
                    "{{\"stdout\":{},\"exit\":0}}",
                    serde_json::Value::String(case.text.clone())
                )
            } else {
                case.text.clone()
            };
            if let Some(why) = failure(redactor, case, &text) {
                let entry = failed.entry(case.context).or_insert((0, why));
                entry.0 += 1;
            }
        }
    }
    (failed, contexts, rng.seed)
}

fn report(label: &str, failed: &BTreeMap<&str, (usize, String)>, contexts: usize, seed: u64) {
    eprintln!(
        "battery ({label}): {}/{contexts} contexts redacted in all {ROUNDS} rounds (seed {seed})",
        contexts - failed.len()
    );
    for (context, (times, why)) in failed {
        eprintln!("  MISS {context} ({times}/{ROUNDS}): {why}");
    }
}

#[test]
fn the_battery_has_many_distinct_contexts() {
    let cases = battery::cases(&mut Rng::new(7));
    let mut names: Vec<&str> = cases.iter().map(|c| c.context).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), cases.len(), "two contexts share a name");
    assert!(cases.len() >= 60, "only {} contexts", cases.len());
    for case in &cases {
        assert!(
            case.secrets.iter().all(|s| case.text.contains(s.as_str())
                || case.text.contains(&s.replace('\n', "\n    "))),
            "{}: a secret is not in its text",
            case.context
        );
    }
}

#[test]
fn every_rule_of_our_own_is_exercised() {
    let own = include_str!("../src/privacy/rules/knowledge-db.toml");
    let ids: Vec<&str> = own
        .lines()
        .filter_map(|l| l.strip_prefix("id = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .collect();
    assert!(ids.len() >= 20, "{ids:?}");
    let mut rng = Rng::new(11);
    let redactor = Redactor::builtin();
    let mut named = std::collections::BTreeSet::new();
    let texts = battery::cases(&mut rng)
        .into_iter()
        .map(|c| c.text)
        .chain(secrets::planted(&mut rng).into_iter().map(|p| p.line));
    for text in texts {
        named.extend(redactor.redact(&text).found.kinds.into_keys());
    }
    let missing: Vec<&&str> = ids.iter().filter(|id| !named.contains(**id)).collect();
    assert!(missing.is_empty(), "no planted secret names {missing:?}");
}

/// Runs the battery (`escaped`: as JSON text) and fails on any context that
/// leaked and is not a known miss.
fn assert_every_context_redacted(escaped: bool, label: &str) {
    let (failed, contexts, seed) = run(escaped);
    report(label, &failed, contexts, seed);
    let unexpected: Vec<String> = failed
        .iter()
        .filter(|(c, _)| !KNOWN_MISSES.iter().any(|(k, _)| k == *c))
        .map(|(c, (n, why))| format!("{c} ({n}/{ROUNDS}): {why}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "seed {seed} (KDB_SECRETS_SEED): {} contexts leak:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}

#[test]
fn every_battery_context_is_redacted() {
    assert_every_context_redacted(false, "as written");
}

#[test]
fn every_battery_context_is_redacted_in_json_text() {
    assert_every_context_redacted(true, "as JSON text");
}

/// Text that holds no secret and must come back unchanged, with fresh random
/// hashes and ids where real ones are random.
fn lookalikes(rng: &mut Rng) -> Vec<(&'static str, String)> {
    let sha1 = |rng: &mut Rng| rng.string(HEX, 40);
    let sha256 = |rng: &mut Rng| rng.string(HEX, 64);
    let b64 = |rng: &mut Rng, n: usize| rng.string(BASE64, n);
    let bech32 = |rng: &mut Rng| rng.string("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58);
    let uuid = |rng: &mut Rng| {
        format!(
            "{}-{}-4{}-9{}-{}",
            rng.string(HEX, 8),
            rng.string(HEX, 4),
            rng.string(HEX, 3),
            rng.string(HEX, 3),
            rng.string(HEX, 12)
        )
    };
    vec![
        ("AWS documentation's example keys", "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = us-west-2".to_string()),
        ("Stripe's documented test keys", "stripe.api_key = \"sk_test_4eC39HqLyjWDarjtT1zdp7dc\"\nconst stripe = Stripe('pk_test_TYooMQauvdEDq54NiTphI7jx');\nSTRIPE_SECRET_KEY=sk_test_BQokikJOvBiI2HlWgH4olfQ2".to_string()),
        ("a sha256 under token_hash", format!("{{\"token_hash\": \"{}\", \"api_key_sha256\": \"{}\"}}\nrefresh_token_digest = {}", sha256(rng), sha256(rng), sha256(rng))),
        ("git log", format!("commit {}\nAuthor: Ann Example <ann@example.com>\nDate:   Mon Jan 5 10:00:00 2026 +0100\n\n    auth: refresh the token before it expires\n", sha1(rng))),
        ("git log --oneline", format!("{} fix(auth): rotate api key on 401\n{} feat: password reset flow", &sha1(rng)[..7], &sha1(rng)[..7])),
        ("git show stat", format!("Merge: {} {}\n token.rs | 12 ++++----", &sha1(rng)[..7], &sha1(rng)[..7])),
        ("UUIDs as ids", format!("session {} resumed; request_id={} trace_id={}", uuid(rng), uuid(rng), uuid(rng))),
        ("package-lock integrity", format!("    \"node_modules/jsonwebtoken\": {{\n      \"version\": \"9.0.2\",\n      \"resolved\": \"https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz\",\n      \"integrity\": \"sha512-{}==\"\n    }}", b64(rng, 86))),
        ("yarn.lock", format!("\"@auth/core@^0.37.0\":\n  version \"0.37.4\"\n  resolved \"https://registry.yarnpkg.com/@auth/core/-/core-0.37.4.tgz#{}\"\n  integrity sha512-{}==", sha1(rng), b64(rng, 86))),
        ("Cargo.lock checksum", format!("[[package]]\nname = \"secrecy\"\nversion = \"0.10.3\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{}\"", sha256(rng))),
        ("go.sum", format!("golang.org/x/oauth2 v0.21.0 h1:{}=\ngolang.org/x/oauth2 v0.21.0/go.mod h1:{}=", b64(rng, 43), b64(rng, 43))),
        ("pip --hash", format!("cryptography==42.0.5 \\\n    --hash=sha256:{} \\\n    --hash=sha256:{}", sha256(rng), sha256(rng))),
        ("poetry.lock", format!("files = [\n    {{file = \"pyjwt-2.8.0-py3-none-any.whl\", hash = \"sha256:{}\"}},\n]", sha256(rng))),
        ("docker image digest", format!("image: ghcr.io/acme/auth-service@sha256:{}\nDigest: sha256:{}", sha256(rng), sha256(rng))),
        ("sha256sum output", format!("{}  secrets-manager_1.2.3_linux_amd64.tar.gz", sha256(rng))),
        ("base64 image data URI", format!("<img src=\"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ{}\" alt=\"key icon\">", b64(rng, 120))),
        ("file paths", "Edited src/auth/token_store.rs, ~/.ssh/id_ed25519.pub, /etc/passwd and config/secrets.example.yml".to_string()),
        ("URLs without credentials", "https://github.com/acme/api/blob/main/src/auth/api_key.rs#L42 and https://oauth2.googleapis.com/token?grant_type=refresh_token".to_string()),
        ("password_hash functions", "if not check_password_hash(user.password_hash, password):\n    return verify_password(plain_password, hashed_password)".to_string()),
        ("settings about tokens", "TOKEN_EXPIRY=3600\nJWT_EXPIRATION=86400\nmax_tokens=4096\nSESSION_TIMEOUT=30m\nPASSWORD_MIN_LENGTH=12".to_string()),
        ("env lookups", "api_key = os.environ[\"API_KEY\"]\napiKey: process.env.STRIPE_KEY,\ntoken := os.Getenv(\"GITHUB_TOKEN\")\nsecret = ENV.fetch('SECRET_KEY_BASE')".to_string()),
        ("CI and template references", "password: ${{ secrets.DB_PASSWORD }}\nkey={{ .Values.key }}\ntoken: ${GITHUB_TOKEN}\napi_key: \"{{ api_key }}\"\npassword: !vault |\n  $ANSIBLE_VAULT;1.1;AES256".to_string()),
        ("placeholders", "API_KEY=your-api-key-here\nOPENAI_API_KEY=sk-...\npassword: xxxxx\ntoken: <token>\nSECRET_KEY=<your-secret-key>\nAPI_TOKEN=REPLACE_ME\napi_key: \"********\"".to_string()),
        ("type names", "impl From<ApiKey> for TokenResponse {}\nPasswordEncoder passwordEncoder = new BCryptPasswordEncoder();\nSecretKeySpec spec = new SecretKeySpec(bytes, \"AES\");".to_string()),
        ("CSS colors", ":root { --token-color: #1a2b3c; --secret-bg: rgba(0, 0, 0, 0.5); }\n.key { color: #ff00aa; }".to_string()),
        ("npm versions", "\"dependencies\": { \"jsonwebtoken\": \"^9.0.2\", \"@auth/core\": \"0.37.4\", \"passport\": \"~0.7.0\" }\ntokenizers==0.19.1".to_string()),
        ("minified code", "!function(e){var t={};function n(r){if(t[r])return t[r].exports}e.apiKey=t.apiKey,e.authDomain=t.authDomain;var a=function(t,e){return t.token=e.key||\"\",t}}".to_string()),
        ("Claude Code ids", format!("{{\"tool_use_id\":\"toolu_01{}\",\"requestId\":\"req_011C{}\",\"id\":\"msg_01{}\"}}", rng.string(ALNUM, 22), rng.string(ALNUM, 20), rng.string(ALNUM, 22))),
        ("public keys and certificates", format!("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} dev@laptop\n-----BEGIN CERTIFICATE-----\nMIIC{}\n-----END CERTIFICATE-----", b64(rng, 43), b64(rng, 60))),
        ("AWS ARNs", "arn:aws:iam::123456789012:role/deploy\narn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf".to_string()),
        ("Kubernetes secret references", "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: db-credentials\n        key: password\nsecretName: tls-cert-prod".to_string()),
        ("log lines", "INFO token refreshed for user 1234\nWARN Authorization header missing\nERROR Bearer token expired at 2026-01-05T10:00:00Z".to_string()),
        ("etag and hashes in JSON", format!("{{\"sha\": \"{}\", \"etag\": \"W/\\\"{}\\\"\", \"node_id\": \"MDQ6VXNlcjE=\"}}", sha1(rng), rng.string(HEX, 32))),
        ("hashlib call", "digest = hashlib.sha256(password.encode()).hexdigest()".to_string()),
        ("git branch names", "git push origin feature/token-refresh\nSwitched to a new branch 'fix/secret-rotation'".to_string()),
        ("timings and counts", "secretScan: 12.5ms\ntokens: 48213\nTokenUsage: input=1200 output=340".to_string()),
        ("password prompt prose", "The password is stored as a bcrypt hash; the token is valid for one hour and the key is rotated weekly.".to_string()),
        ("jq and shell expressions", "TOKEN=$(jq -r '.access_token' creds.json)\ncurl -H \"Authorization: Bearer $TOKEN\" \"$API\"".to_string()),
        ("passing tests and pass counts", "test result: ok. 42 passed; 0 failed\npass: true\ntests_pass = 12\nfirst_pass: done\nThe test pass is flaky on CI".to_string()),
        ("elements and key/values about secrets", "<password>${env.DB_PASSWORD}</password>\n<token>changeme</token>\n<secret>Hidden</secret>\n<passwordPolicy>strict</passwordPolicy>\n<add key=\"PasswordMinLength\" value=\"12\" />\n{\"name\": \"TOKEN_TTL\", \"value\": \"3600s\"}".to_string()),
        ("prose about passwords and tokens", "set the secret to expire in 30 days\nuse Docker as the runtime and keep the token short\nhash the password with sha256 first\nwe use redis7 as the token store".to_string()),
        ("secrets in code by reference", "os.environ[\"API_KEY\"] = os.getenv(\"KEY\")\nkey = os.getenv(\"API_KEY\", \"default\")\nconfig[\"password\"] = None\nt(\"password\", \"Password\")\nlocalStorage.setItem(\"token\", token)\nclient.password(password).build()\nsettings.set(\"secret_name\", \"prod/db\")".to_string()),
        ("prompts and config set without a secret", "[sudo] password for dev: Reading package lists... Done\nnpm config set registry https://registry.npmjs.org/\ngit config --global user.name ann".to_string()),
        // Issue 52's look-alikes: public age recipients, SRI hashes, long
        // numbers that are not cards, list words without a checksum, prose
        // about passwords in other languages, tables about tokens.
        ("age public recipients", format!("creation_rules:\n  - path_regex: secrets/.*\n    age: age1{}\n# public key: age1{}\nage -r age1{} -o out.age in.txt", bech32(rng), bech32(rng), bech32(rng))),
        ("SRI hashes", format!("<script src=\"https://cdn.example.com/lib.js\" integrity=\"sha384-{}\" crossorigin=\"anonymous\"></script>\n<link rel=\"stylesheet\" integrity=\"sha512-{}==\">", b64(rng, 64), b64(rng, 86))),
        ("long numbers that are not cards", format!("request_id=4{} took {}ms\ntimestamp 17{} ns\norder #{}", rng.string(DIGITS, 15), rng.between(1, 999), rng.string(DIGITS, 17), rng.string(DIGITS, 16))),
        ("BIP39 words in prose", "please review the abstract above and adjust the access budget before the final cycle begins".to_string()),
        ("prose about passwords in other languages", "密码长度至少为八位\nパスワードを忘れた場合は管理者に連絡してください\nLa contraseña debe tener al menos 12 caracteres\nDas Passwort wurde geändert\nПароль должен содержать цифры\n비밀번호를 변경하세요\nŞifre en az 8 karakter olmalı".to_string()),
        ("tables about tokens", "| model | input tokens | output tokens |\n|---|---|---|\n| sonnet | 12040 | 3310 |\n\n| field | description |\n|---|---|\n| password | the user's password, hashed with argon2 |".to_string()),
        ("YAML blocks not about secrets", "description: |\n  The token endpoint returns a JWT.\nscript: >-\n  cargo test --all\npassword: !vault |\n  $ANSIBLE_VAULT;1.1;AES256".to_string()),
        ("shell variables echoed", "echo $PWD\necho $HOME\nprintenv PATH\necho \"secret\" > secret.globally-ignored && git add -f secret.globally-ignored".to_string()),
        ("Claude thinking signature", format!("{{\"type\":\"thinking\",\"thinking\":\"check the config\",\"signature\":\"EqQBCkYIBRgCKkB{}\"}}", b64(rng, 200))),
    ]
}

#[test]
fn lookalikes_come_back_unchanged() {
    let mut rng = Rng::from_time();
    let redactor = Redactor::builtin();
    let mut changed = Vec::new();
    let mut total = 0;
    for _ in 0..ROUNDS {
        for (what, text) in lookalikes(&mut rng) {
            total += 1;
            let out = redactor.redact(&text);
            if out.text != text {
                changed.push(format!(
                    "{what}: {}\n  in:  {text:?}\n  out: {:?}",
                    out.found, out.text
                ));
            }
        }
    }
    eprintln!(
        "look-alikes: {}/{total} unchanged (seed {})",
        total - changed.len(),
        rng.seed
    );
    changed.dedup_by(|a, b| a.split(':').next() == b.split(':').next());
    assert!(
        changed.is_empty(),
        "seed {}: {} look-alikes changed:\n{}",
        rng.seed,
        changed.len(),
        changed.join("\n")
    );
}

/// The evaluation corpora (BEIR layout, beside the checkout) hold no secret:
/// redaction must leave every text of SciFact and LoCoMo as it is, so the
/// retrieval numbers measured on them stand. Needs `../shared/eval` (or
/// `../../shared/eval` from a worktree): `cargo nextest run --test
/// privacy_battery --run-ignored all eval_corpora`.
#[test]
#[ignore = "reads ../shared/eval, which only the evaluation machines have"]
fn eval_corpora_have_nothing_to_redact() {
    let shared = ["../shared/eval", "../../shared/eval"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|dir| dir.is_dir())
        .expect("../shared/eval");
    let redactor = Redactor::builtin();
    for corpus in ["scifact-dev", "locomo-dev"] {
        let mut texts = 0;
        let mut found = Vec::new();
        for file in ["corpus.jsonl", "queries.jsonl"] {
            let path = shared.join(corpus).join(file);
            let data = std::fs::read_to_string(&path).expect("corpus file");
            for line in data.lines().filter(|l| !l.trim().is_empty()) {
                let doc: serde_json::Value = serde_json::from_str(line).expect("json line");
                for field in ["title", "text"] {
                    if let Some(text) = doc.get(field).and_then(|v| v.as_str()) {
                        texts += 1;
                        for span in redactor.find(text) {
                            found.push(format!("{}: {:?}", span.kind, &text[span.range]));
                        }
                    }
                }
            }
        }
        eprintln!("{corpus}: {texts} texts, {} redactions", found.len());
        assert!(found.is_empty(), "{corpus}: {found:?}");
    }
}

/// False positives on code-heavy text: every file under the folders of
/// `KDB_SCAN_DIRS` (`:`-separated; lockfiles, crates' sources and test
/// fixtures) whose name ends in one of a few code extensions, redacted line
/// by line; prints the findings by kind and each finding of the rules added
/// for issues 38 and 52 for review. A measurement, not a check: `KDB_SCAN_DIRS=… cargo
/// nextest run --test privacy_battery --run-ignored all code_heavy`.
#[test]
#[ignore = "a measurement over folders named by KDB_SCAN_DIRS"]
fn code_heavy_text_findings() {
    let Ok(dirs) = std::env::var("KDB_SCAN_DIRS") else {
        return;
    };
    let redactor = Redactor::builtin();
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    let (mut files, mut bytes) = (0usize, 0usize);
    let mut stack: Vec<std::path::PathBuf> = dirs.split(':').map(Into::into).collect();
    let code = [
        "rs", "toml", "lock", "json", "sum", "yaml", "yml", "md", "txt", "sh", "py", "js", "ts",
        "go",
    ];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            if let Ok(read) = std::fs::read_dir(&path) {
                stack.extend(read.flatten().map(|e| e.path()));
            }
            continue;
        }
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !code.contains(&ext) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.len() > 4 << 20 {
            continue;
        }
        files += 1;
        bytes += text.len();
        for span in redactor.find(&text) {
            *by_kind.entry(span.kind.clone()).or_default() += 1;
            let new = [
                "piped-password",
                "command-password",
                "password-in-prose",
                "vendor-token",
                "kubernetes-secret-data",
                // Issue 52's.
                "secret-word-intl",
                "secret-setter",
                "password-letters",
                "twilio-auth-token",
                "alibaba-secret-beside-id",
                "aws-secret-in-prose",
                "gcp-service-account-key-id",
                "zapier-webhook-url",
                "terraform-sensitive-output",
                "secret-file-write",
                "bip39-mnemonic",
                "card-number",
                "yaml-block-secret",
                "table-secret-column",
                "discord-webhook-url",
            ];
            if new.contains(&span.kind.as_str()) {
                let from = text.floor_char_boundary(span.range.start.saturating_sub(40));
                let to = text.ceil_char_boundary((span.range.end + 20).min(text.len()));
                eprintln!("{} {}: {:?}", span.kind, path.display(), &text[from..to]);
            }
        }
    }
    eprintln!("{files} files, {bytes} bytes: {by_kind:?}");
}

/// What redaction replaces in the real sessions (`../shared/eval/transcripts`,
/// 288 sessions), read as `ingest` reads them: every string of every record
/// `ingest` would store (read with redaction off) is searched with
/// `Redactor::find`, and each finding of a rule added for issue 52 is printed
/// with its context for review, as are the tool calls whose output is sealed
/// as a whole (`privacy::provenance`). A measurement, not a check:
/// `cargo nextest run --test privacy_battery --run-ignored all real_sessions
/// --no-capture`.
#[test]
#[ignore = "reads ../shared/eval/transcripts, which only the evaluation machines have"]
fn real_sessions_findings() {
    use knowledge_db::privacy::{provenance, PrivacySettings};
    use knowledge_db::transcript::ingest::{transcript_records, Via};
    use knowledge_db::transcript::{find_files, read_file, Block, ReadFrom};
    let Some(dir) = [
        "../shared/eval/transcripts",
        "../../shared/eval/transcripts",
    ]
    .iter()
    .map(std::path::PathBuf::from)
    .find(|d| d.is_dir()) else {
        return;
    };
    let keep = Redactor::new(&PrivacySettings {
        redact: false,
        ..PrivacySettings::default()
    })
    .expect("settings");
    let redactor = Redactor::builtin();
    let new = [
        "secret-word-intl",
        "secret-setter",
        "password-letters",
        "twilio-auth-token",
        "alibaba-secret-beside-id",
        "aws-secret-in-prose",
        "gcp-service-account-key-id",
        "zapier-webhook-url",
        "terraform-sensitive-output",
        "secret-file-write",
        "bip39-mnemonic",
        "card-number",
        "yaml-block-secret",
        "table-secret-column",
        "discord-webhook-url",
        "password-assignment",
        "vendor-token",
    ];
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    let mut shown: BTreeMap<String, usize> = BTreeMap::new();
    let (mut files, mut records_seen, mut sealed) = (0, 0, 0);
    for path in find_files(&[dir]).expect("files") {
        let Ok(t) = read_file(&path, None, ReadFrom::default()) else {
            continue;
        };
        files += 1;
        for message in &t.messages {
            for block in &message.content {
                if let Block::ToolUse { name, input, .. } = block {
                    if let Some(kind) = provenance::secret_output(name, input) {
                        sealed += 1;
                        eprintln!("SEALED {kind} {}: {name} {}", path.display(), input);
                    }
                }
            }
        }
        let records = transcript_records(
            &t,
            "default",
            "2026-01-01T00:00:00Z",
            Via::Ingest,
            None,
            &keep,
        )
        .expect("records");
        records_seen += records.len();
        for record in records {
            let mut strings = Vec::new();
            collect_strings(&record.source, &mut strings);
            for text in strings {
                for span in redactor.find(&text) {
                    *by_kind.entry(span.kind.clone()).or_default() += 1;
                    if new.contains(&span.kind.as_str()) {
                        let value = &text[span.range.clone()];
                        let n = shown.entry(format!("{} {value}", span.kind)).or_default();
                        *n += 1;
                        if *n == 1 {
                            let from =
                                text.floor_char_boundary(span.range.start.saturating_sub(50));
                            let to = text.ceil_char_boundary((span.range.end + 30).min(text.len()));
                            eprintln!(
                                "FOUND {} {}: {:?}",
                                span.kind,
                                path.display(),
                                &text[from..to]
                            );
                        }
                    }
                }
            }
        }
    }
    eprintln!("{files} files, {records_seen} records, {sealed} sealed calls: {by_kind:?}");
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                collect_strings(v, out);
            }
        }
        _ => {}
    }
}
