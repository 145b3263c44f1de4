//! Fresh random secrets of every kind knowledge-db redacts, each in a line of
//! the kind where such secrets turn up (an `env` dump, a `.env` file, a curl
//! header, YAML, JSON config, a prompt, assistant prose, a PEM file), for the
//! tests that check none of them is ever stored.
//!
//! Use it from an integration test with
//! `#[path = "common/secrets.rs"] mod secrets;`, then
//! `let mut rng = secrets::Rng::from_time();` and `secrets::planted(&mut rng)`.
//! The seed is printed by [`Rng::from_time`] (and read back from
//! `KDB_SECRETS_SEED`), so a failure can be replayed.
#![allow(dead_code)]

use base64::Engine;
use serde_json::json;

/// One planted secret.
#[derive(Debug, Clone)]
pub struct Planted {
    /// The rule id the placeholder must name: `[REDACTED {kind}]`.
    pub kind: &'static str,
    /// The secret value itself: it must not survive redaction.
    pub secret: String,
    /// Where it stands: a realistic line (or block) that holds it.
    pub line: String,
    /// What kind of place `line` is (`env`, `dotenv`, `curl`, `yaml`,
    /// `json`, `prompt`, `prose`, `pem`, `url`, `http`).
    pub place: &'static str,
    /// Other kinds that may name it instead, and only these: see [`planted`].
    pub also: &'static [&'static str],
}

/// A small, fast, seedable generator (xorshift64*): no dependency, and a
/// failing run names its seed.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
    /// The seed it started from.
    pub seed: u64,
}

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng {
            state: seed.max(1),
            seed,
        }
    }

    /// A generator seeded from the clock and the process id, or from
    /// `KDB_SECRETS_SEED` when set; the seed is printed to stderr.
    pub fn from_time() -> Rng {
        let seed = std::env::var("KDB_SECRETS_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                nanos ^ (u64::from(std::process::id()) << 32)
            });
        eprintln!("secrets: seed {seed} (replay with KDB_SECRETS_SEED={seed})");
        Rng::new(seed)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low + 1) as u64) as usize
    }

    /// `len` characters drawn from `alphabet`.
    pub fn string(&mut self, alphabet: &str, len: usize) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        (0..len)
            .map(|_| chars[(self.next() % chars.len() as u64) as usize])
            .collect()
    }

    /// `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

pub const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
pub const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
pub const DIGITS: &str = "0123456789";
pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const HEX: &str = "0123456789abcdef";
pub const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
pub const BASE64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `len` characters of `alphabet` with a digit and a letter among them: a
/// token that only letters would be taken for a name by the allowlists.
pub fn token(rng: &mut Rng, alphabet: &str, len: usize) -> String {
    let mut chars: Vec<char> = rng.string(alphabet, len).chars().collect();
    let digit = rng.between(0, len - 1);
    chars[digit] = rng.string(DIGITS, 1).chars().next().unwrap_or('7');
    let letter = (digit + 1 + rng.between(0, len - 2)) % len;
    chars[letter] = rng.string(LOWER, 1).chars().next().unwrap_or('q');
    chars.into_iter().collect()
}

/// A password: letters and digits with a few of the symbols passwords hold
/// (at least one digit and one symbol), starting with a letter.
pub fn password(rng: &mut Rng, len: usize) -> String {
    let mut out = rng.string(&format!("{UPPER}{LOWER}"), 1);
    out.push_str(&rng.string(DIGITS, 1));
    out.push_str(&rng.string("!@#%^*+~", 1));
    out.push_str(&rng.string(&format!("{ALNUM}!@#%^*+~_-"), len.saturating_sub(3)));
    out
}

/// A password safe inside a URL without escaping.
pub fn url_password(rng: &mut Rng) -> String {
    let mut out = rng.string(ALNUM, 1);
    out.push_str(&rng.string(DIGITS, 1));
    out.push_str(&rng.string(&format!("{ALNUM}-_.~"), 16));
    out
}

/// A PEM block of `label` (e.g. `RSA PRIVATE KEY`) around random DER bytes,
/// 64 characters a line.
pub fn pem(rng: &mut Rng, label: &str, bytes: usize) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(rng.bytes(bytes));
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----",
        lines.join("\n")
    )
}

/// A signed-looking JWT with a random subject and signature.
pub fn jwt(rng: &mut Rng) -> String {
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let header = b64(&json!({"alg": "HS256", "typ": "JWT"}));
    let payload = b64(&json!({
        "sub": rng.string(ALNUM, 12),
        "name": "Ann Example",
        "iat": 1_700_000_000 + rng.between(0, 9_999_999),
    }));
    let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rng.bytes(32));
    format!("{header}.{payload}.{signature}")
}

fn plant(kind: &'static str, place: &'static str, secret: String, line: String) -> Planted {
    Planted {
        kind,
        secret,
        line,
        place,
        also: &[],
    }
}

/// One fresh secret of every supported kind, each in its line.
pub fn planted(rng: &mut Rng) -> Vec<Planted> {
    let mut out = Vec::new();
    let mut add = |kind, place, secret: String, line: String| {
        out.push(plant(kind, place, secret, line));
    };

    // gitleaks' aws-access-token needs a Shannon entropy over 3: about 1
    // random key id in 4,600 falls under it and is not redacted (a
    // known miss of the vendored rule, docs/privacy.md); the planted one is
    // drawn above it, so that this test fails only on a real regression.
    let s = loop {
        let s = format!("AKIA{}", rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16));
        if shannon_entropy(&s) > 3.0 {
            break s;
        }
    };
    add(
        "aws-access-token",
        "env",
        s.clone(),
        format!("AWS_ACCESS_KEY_ID={s}"),
    );
    let s = rng.string(BASE64, 40);
    add(
        "aws-secret-access-key",
        "ini",
        s.clone(),
        format!("[default]\naws_secret_access_key = {s}\nregion = eu-west-1"),
    );
    let s = format!("ghp_{}", rng.string(ALNUM, 36));
    add("github-pat", "env", s.clone(), format!("GITHUB_TOKEN={s}"));
    let s = format!("github_pat_{}", rng.string(&format!("{ALNUM}_"), 82));
    add(
        "github-fine-grained-pat",
        "dotenv",
        s.clone(),
        format!("GH_TOKEN=\"{s}\""),
    );
    let s = format!("gho_{}", rng.string(ALNUM, 36));
    add(
        "github-oauth",
        "prose",
        s.clone(),
        format!("`gh auth token` printed {s}, the OAuth token of this machine."),
    );
    let s = format!("ghs_{}", rng.string(ALNUM, 36));
    add(
        "github-app-token",
        "json",
        s.clone(),
        format!("{{\"installation\": 4242, \"token\": \"{s}\"}}"),
    );
    let s = format!("glpat-{}", rng.string(&format!("{ALNUM}_-"), 20));
    add(
        "gitlab-pat",
        "yaml",
        s.clone(),
        format!("gitlab:\n  token: {s}\n  url: https://gitlab.com"),
    );
    let s = format!(
        "xoxb-{}-{}-{}",
        rng.string(DIGITS, 12),
        rng.string(DIGITS, 13),
        rng.string(ALNUM, 24)
    );
    add(
        "slack-bot-token",
        "yaml",
        s.clone(),
        format!("slack:\n  bot_token: {s}"),
    );
    let s = format!(
        "xoxp-{}-{}-{}-{}",
        rng.string(DIGITS, 11),
        rng.string(DIGITS, 11),
        rng.string(DIGITS, 12),
        rng.string(HEX, 32)
    );
    add(
        "slack-user-token",
        "env",
        s.clone(),
        format!("SLACK_USER_TOKEN={s}"),
    );
    let s = format!(
        "https://hooks.slack.com/services/T{}/B{}/{}",
        rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8),
        rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 8),
        rng.string(ALNUM, 24)
    );
    add(
        "slack-webhook-url",
        "curl",
        s.clone(),
        format!("curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deployed\"}}' {s}"),
    );
    let s = format!("sk_live_{}", rng.string(ALNUM, 24));
    add(
        "stripe-access-token",
        "prose",
        s.clone(),
        format!("Set STRIPE_SECRET_KEY to {s}, then restart the worker."),
    );
    // gitleaks' rule ends the key at a word boundary: its last character is
    // a letter or digit (one ending in `-` or `_` is caught by the
    // assignment rules, under their names).
    let s = format!(
        "sk-proj-{}T3BlbkFJ{}{}",
        rng.string(URLSAFE, 74),
        rng.string(URLSAFE, 73),
        rng.string(ALNUM, 1)
    );
    add(
        "openai-api-key",
        "dotenv",
        s.clone(),
        format!("OPENAI_API_KEY={s}"),
    );
    let s = format!("sk-ant-api03-{}AA", rng.string(URLSAFE, 93));
    add(
        "anthropic-api-key",
        "prompt",
        s.clone(),
        format!("here is my key {s} - please wire it into the client"),
    );
    let s = format!("AIza{}", rng.string(ALNUM, 35));
    add(
        "gcp-api-key",
        "url",
        s.clone(),
        format!("GET https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={s}&language=en"),
    );
    let block = pem(rng, "PRIVATE KEY", 1190);
    add(
        "private-key",
        "json",
        block.clone(),
        // One secret a line: the key's id (`private_key_id`, redacted as
        // `gcp-service-account-key-id` since issue 52) is planted on its
        // own by `battery_round3.rs`.
        json!({
            "type": "service_account",
            "project_id": "demo-project",
            "private_key": format!("{block}\n"),
            "client_email": "deployer@demo-project.iam.gserviceaccount.com",
        })
        .to_string(),
    );
    let block = pem(rng, "RSA PRIVATE KEY", 1190);
    add(
        "private-key",
        "pem",
        block.clone(),
        format!("$ cat ~/.ssh/id_rsa\n{block}\n$ "),
    );
    let block = pem(rng, "OPENSSH PRIVATE KEY", 400);
    add("private-key", "pem", block.clone(), format!("{block}\n"));
    let block = pem(rng, "EC PRIVATE KEY", 121);
    add(
        "private-key",
        "pem",
        block.clone(),
        format!("key.pem:\n{block}"),
    );
    let body = base64::engine::general_purpose::STANDARD.encode(rng.bytes(144));
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or(""))
        .collect();
    let s = format!("-----BEGIN RSA PRIVATE KEY-----\n{}", lines.join("\n"));
    add(
        "private-key-fragment",
        "pem",
        s.clone(),
        format!("$ head -4 deploy.pem\n{s}\n[output truncated]"),
    );
    let s = jwt(rng);
    add(
        "jwt",
        "http",
        s.clone(),
        format!("> GET /api/me HTTP/1.1\n> Authorization: Bearer {s}\n> Accept: */*"),
    );
    let s = url_password(rng);
    add(
        "url-password",
        "dotenv",
        s.clone(),
        format!("DATABASE_URL=postgresql://app_user:{s}@db.internal:5432/app?sslmode=require"),
    );
    let s = url_password(rng);
    add(
        "url-password",
        "prose",
        s.clone(),
        format!("Connect with mysql://root:{s}@127.0.0.1:3306/shop and run the migration."),
    );
    let s = url_password(rng);
    add(
        "url-password",
        "yaml",
        s.clone(),
        format!("mongo:\n  uri: \"mongodb+srv://admin:{s}@cluster0.ab1cd.mongodb.net/prod\""),
    );
    let s = password(rng, 14);
    add(
        "password-assignment",
        "dotenv",
        s.clone(),
        format!("DB_PASSWORD={s}"),
    );
    let s = password(rng, 12);
    add(
        "password-assignment",
        "json",
        s.clone(),
        format!("{{\"user\": \"admin\", \"password\": \"{s}\"}}"),
    );
    let s = format!("{}@{}", token(rng, ALNUM, 10), token(rng, ALNUM, 10));
    add(
        "secret-assignment",
        "yaml",
        s.clone(),
        format!("oauth:\n  client_id: my-app\n  client_secret: {s}"),
    );
    // 40 characters: 32 hex digits are often under generic-api-key's entropy
    // threshold (secret-assignment catches those, under its own name).
    let s = token(rng, ALNUM, 40);
    add(
        "generic-api-key",
        "yaml",
        s.clone(),
        format!("api_key: \"{s}\""),
    );
    let s = rng.string(HEX, 40);
    add(
        "curl-auth-header",
        "curl",
        s.clone(),
        format!("curl -s -H 'X-Api-Key: {s}' https://api.example.com/v2/items"),
    );
    let s = token(rng, ALNUM, 40);
    add(
        "authorization-header",
        "http",
        s.clone(),
        format!("requests.get(url, headers={{'Authorization': 'Bearer {s}'}})"),
    );
    let user_pass = format!("deploy:{}", url_password(rng));
    let s = base64::engine::general_purpose::STANDARD.encode(&user_pass);
    add(
        "authorization-header",
        "http",
        s.clone(),
        format!("Authorization: Basic {s}"),
    );
    let s = token(rng, URLSAFE, 48);
    add(
        "bearer-token",
        "prose",
        s.clone(),
        format!("The API answered 401 for Bearer {s}; the token had expired."),
    );
    let s = format!("npm_{}", rng.string(ALNUM, 36));
    add(
        "npm-access-token",
        "npmrc",
        s.clone(),
        format!("//registry.npmjs.org/:_authToken={s}"),
    );
    let s = format!("pypi-AgEIcHlwaS5vcmc{}", rng.string(URLSAFE, 70));
    add(
        "pypi-upload-token",
        "ini",
        s.clone(),
        format!("[pypi]\nusername = __token__\npassword = {s}"),
    );
    let s = format!("SK{}", rng.string(HEX, 32));
    add(
        "twilio-api-key",
        "env",
        s.clone(),
        format!("TWILIO_API_KEY={s}"),
    );
    let s = format!("SG.{}.{}", rng.string(URLSAFE, 22), rng.string(URLSAFE, 43));
    add(
        "sendgrid-api-token",
        "prompt",
        s.clone(),
        format!("use SendGrid with {s} for the welcome mails"),
    );
    let s = format!("HRKU-AA{}", rng.string(URLSAFE, 58));
    add(
        "heroku-api-key-v2",
        "env",
        s.clone(),
        format!("HEROKU_API_KEY={s}"),
    );
    let s = format!(
        "{}-{}-4{}-a{}-{}",
        rng.string(HEX, 8),
        rng.string(HEX, 4),
        rng.string(HEX, 3),
        rng.string(HEX, 3),
        rng.string(HEX, 12)
    );
    add(
        "heroku-api-key",
        "dotenv",
        s.clone(),
        format!("heroku_api_key = \"{s}\""),
    );
    let s = format!("dop_v1_{}", rng.string(HEX, 64));
    add(
        "digitalocean-pat",
        "env",
        s.clone(),
        format!("DIGITALOCEAN_TOKEN={s}"),
    );
    let s = format!("hf_{}", rng.string(&format!("{UPPER}{LOWER}"), 34));
    add(
        "huggingface-access-token",
        "prose",
        s.clone(),
        format!("Log in with `huggingface-cli login --token {s}` first."),
    );
    let s = format!(
        "{}{}Q~{}",
        rng.string(ALNUM, 3),
        rng.string(DIGITS, 1),
        rng.string(&format!("{ALNUM}_~.-"), 34)
    );
    add(
        "azure-ad-client-secret",
        "env",
        s.clone(),
        format!("AZURE_CLIENT_SECRET={s}"),
    );
    let s = format!("{}%2B{}%3D", rng.string(ALNUM, 20), rng.string(ALNUM, 20));
    add(
        "url-query-secret",
        "url",
        s.clone(),
        format!("https://acct.blob.core.windows.net/backups/db.tar?sv=2022-11-02&sr=b&sig={s}&se=2026-01-01"),
    );
    let s = format!("dapi{}", rng.string(HEX, 32));
    add(
        "databricks-api-token",
        "env",
        s.clone(),
        format!("DATABRICKS_TOKEN={s}"),
    );
    let s = format!("shpat_{}", rng.string(HEX, 32));
    add(
        "shopify-access-token",
        "json",
        s.clone(),
        format!("{{\"shop\": \"demo.myshopify.com\", \"access\": \"{s}\"}}"),
    );
    let s = format!("lin_api_{}", rng.string(ALNUM, 40));
    add(
        "linear-api-key",
        "env",
        s.clone(),
        format!("LINEAR_API_KEY={s}"),
    );
    let s = format!("pplx-{}", rng.string(ALNUM, 48));
    add(
        "perplexity-api-key",
        "prompt",
        s.clone(),
        format!("try the Perplexity key {s} for search"),
    );
    let s = format!(
        "AGE-SECRET-KEY-1{}",
        rng.string("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
    );
    add(
        "age-secret-key",
        "pem",
        s.clone(),
        format!("# created: 2026-01-01\n{s}"),
    );
    // generic-api-key lets a value holding one of its 1,446 stopwords
    // through (1 random key in 100: "salt", "bank", ...); secret-assignment
    // catches it then, under its own name.
    for p in out.iter_mut().filter(|p| p.kind == "generic-api-key") {
        p.also = &["secret-assignment"];
    }
    out
}

/// The distinct kinds [`planted`] plants.
pub fn kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&str> = planted(&mut Rng::new(1)).iter().map(|p| p.kind).collect();
    kinds.sort_unstable();
    kinds.dedup();
    kinds
}

/// Whether any part of `secret` (a run of 12 characters, or the whole of a
/// shorter one) is still in `text`.
pub fn leaks(secret: &str, text: &str) -> Option<String> {
    let chars: Vec<char> = secret.chars().collect();
    let window = chars.len().min(12);
    chars
        .windows(window)
        .map(|w| w.iter().collect::<String>())
        // PEM armour and line breaks are not the secret.
        .filter(|w| !w.contains("-----") && !w.contains('\n'))
        .find(|w| text.contains(w.as_str()))
}

/// A Claude Code session (JSONL, the format `ingest` reads) in which every
/// planted line turns up where such lines do: typed in a prompt, echoed by
/// a Bash command, read from a file, shown in a tool result and repeated in
/// the assistant's prose. One text holds a `<private>` span too, with
/// `private_marker` inside.
pub fn claude_code_session(session_id: &str, planted: &[Planted], private_marker: &str) -> String {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    let mut turn = 0u32;
    let mut push =
        |kind: &str, message: serde_json::Value, extra: Option<(&str, serde_json::Value)>| {
            turn += 1;
            let uuid = format!("00000000-0000-4000-8000-{turn:012}");
            let mut line = json!({
                "type": kind,
                "sessionId": session_id,
                "uuid": uuid,
                "parentUuid": parent,
                "timestamp": format!("2026-01-15T10:{:02}:{:02}.000Z", turn / 60, turn % 60),
                "cwd": "/home/dev/project",
                "isSidechain": false,
                "message": message,
            });
            if kind == "assistant" {
                line["requestId"] = json!(format!("req_{turn}"));
            }
            if let Some((key, value)) = extra {
                line[key] = value;
            }
            lines.push(line.to_string());
            parent = Some(uuid);
        };
    push(
        "user",
        json!({"role": "user", "content": format!(
            "Set up the deploy. <private>My home address is {private_marker}.</private> The posthogAPIKey client stays as it is."
        )}),
        None,
    );
    for (i, p) in planted.iter().enumerate() {
        let tool = format!("toolu_{i:04}");
        match i % 4 {
            0 => push(
                "user",
                json!({"role": "user", "content": format!("Use this:\n{}", p.line)}),
                None,
            ),
            1 => {
                push(
                    "assistant",
                    json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "tool_use", "id": tool, "name": "Read",
                                     "input": {"file_path": "/home/dev/project/.env"}}]}),
                    None,
                );
                push(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                        "content": format!("     1\t{}\n", p.line)}]}),
                    Some((
                        "toolUseResult",
                        json!({"type": "text", "file": {"filePath": "/home/dev/project/.env", "content": p.line}}),
                    )),
                );
            }
            2 => {
                push(
                    "assistant",
                    json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
                        "content": [{"type": "tool_use", "id": tool, "name": "Bash",
                                     "input": {"command": format!("echo '{}'", p.line), "description": "Show the setting"}}]}),
                    None,
                );
                push(
                    "user",
                    json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                        "content": p.line.clone()}]}),
                    Some((
                        "toolUseResult",
                        json!({"stdout": p.line, "stderr": "", "interrupted": false}),
                    )),
                );
            }
            _ => push(
                "assistant",
                json!({"id": format!("msg_{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": format!("I found this in your config:\n\n```\n{}\n```\n\nI'll keep it out of the repository.", p.line)}]}),
                None,
            ),
        }
    }
    lines.join("\n") + "\n"
}

/// Shannon entropy of `text` in bits per character, as gitleaks computes it.
pub fn shannon_entropy(text: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = text.chars().count() as f64;
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n;
            -p * p.log2()
        })
        .sum()
}
