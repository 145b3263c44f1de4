//! The fifth part of the battery of `battery.rs` (issue 52), with fresh
//! random values and contexts written for it: secrets in ten other
//! languages and in full-width or look-alike letters; setters of PowerShell,
//! Windows, fish, Dockerfiles, PHP, redis and MySQL; values known by their
//! shape (BIP39 mnemonics with their checksum, Luhn-checked card numbers,
//! `xai-` keys, Discord and Zapier webhooks, AWS secret keys and Twilio and
//! Alibaba secrets beside their ids, a service account's key id,
//! letters-only passwords where the value is plainly a literal); structure
//! (YAML block scalars, table columns, secrets as JSON keys, a value wrapped
//! across two lines, `terraform output -json`, `echo … > .vault_pass`).
//!
//! [`calls`] gives the provenance cases: tool calls whose output (or whose
//! written file) is a secret as a whole, with nothing in the output itself
//! that a rule would know.
#![allow(dead_code)]

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::battery::Case;
use crate::secrets::{password, token, Rng, ALNUM, BASE64, DIGITS, HEX, LOWER, UPPER, URLSAFE};

/// BIP39's English list.
const BIP39: &str = include_str!("../../src/privacy/rules/bip39-english.txt");

/// A fresh BIP39 mnemonic of `words` words (12, 15, 18, 21 or 24) with a
/// valid checksum.
pub fn mnemonic(rng: &mut Rng, words: usize) -> String {
    let list: Vec<&str> = BIP39.lines().collect();
    let entropy = rng.bytes(words * 11 * 32 / 33 / 8);
    let hash = Sha256::digest(&entropy);
    let mut bits: Vec<bool> = entropy
        .iter()
        .flat_map(|b| (0..8).map(move |i| b & (0x80 >> i) != 0))
        .collect();
    let checksum = words * 11 - bits.len();
    bits.extend((0..checksum).map(|i| hash[i / 8] & (0x80 >> (i % 8)) != 0));
    bits.chunks(11)
        .map(|c| list[c.iter().fold(0usize, |acc, &b| acc * 2 + usize::from(b))])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fresh card number of `prefix` and `len` digits whose Luhn digit holds.
pub fn card(rng: &mut Rng, prefix: &str, len: usize) -> String {
    let mut digits: Vec<u32> = prefix.chars().filter_map(|c| c.to_digit(10)).collect();
    while digits.len() < len - 1 {
        digits.push(rng.between(0, 9) as u32);
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 0 {
                let t = d * 2;
                if t > 9 {
                    t - 9
                } else {
                    t
                }
            } else {
                d
            }
        })
        .sum();
    digits.push((10 - sum % 10) % 10);
    digits
        .iter()
        .map(|d| char::from_digit(*d, 10).unwrap_or('0'))
        .collect()
}

/// `s` in full-width forms (`abc` -> `ａｂｃ`).
fn full_width(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '!'..='~' => char::from_u32(c as u32 + 0xFEE0).unwrap_or(c),
            other => other,
        })
        .collect()
}

/// Letters only, mixed case: a password no entropy rule would take.
fn letters(rng: &mut Rng, n: usize) -> String {
    let mut s = rng.string(LOWER, 1);
    s.push_str(&rng.string(&format!("{UPPER}{LOWER}"), n - 1));
    s
}

/// Adds this part's contexts to `out`, with fresh values.
pub fn cases(rng: &mut Rng, out: &mut Vec<Case>) {
    let mut add =
        |context: &'static str, kinds: &'static [&'static str], secret: String, text: String| {
            out.push(Case {
                context,
                secrets: vec![secret],
                text,
                kinds,
            });
        };
    let alnum = |rng: &mut Rng, n: usize| token(rng, ALNUM, n);
    let intl: &'static [&'static str] = &["secret-word-intl", "password-assignment"];

    // Other languages, in prose and as labels.
    let s = alnum(rng, 12);
    add(
        "zh: 密码是 in prose",
        intl,
        s.clone(),
        format!("测试环境数据库的密码是{s}，别发到群里"),
    );
    let s = alnum(rng, 14);
    add(
        "zh: 密码 label, full-width colon",
        intl,
        s.clone(),
        format!("主机：10.2.3.4\n用户名：deploy\n密码：{s}\n"),
    );
    let s = password(rng, 12);
    add(
        "ja: パスワードは「…」です",
        intl,
        s.clone(),
        format!("本番サーバーのパスワードは「{s}」です。"),
    );
    let s = alnum(rng, 32);
    add(
        "ja: APIキー label",
        intl,
        s.clone(),
        format!("天気APIのAPIキー：{s}"),
    );
    let s = alnum(rng, 11);
    add(
        "ko: 비밀번호는 …",
        intl,
        s.clone(),
        format!("관리자 비밀번호는 {s} 입니다"),
    );
    let s = alnum(rng, 13);
    add(
        "ru: Пароль от сервера",
        intl,
        s.clone(),
        format!("Пароль от сервера: {s}, логин root"),
    );
    let s = alnum(rng, 28);
    add(
        "ru: токен — …",
        intl,
        s.clone(),
        format!("токен бота — {s}"),
    );
    let s = alnum(rng, 12);
    add(
        "es: la contraseña es …",
        intl,
        s.clone(),
        format!("La contraseña de staging es {s} hasta el lunes"),
    );
    let s = alnum(rng, 30);
    add(
        "es: la clave de API es …",
        intl,
        s.clone(),
        format!("la clave de API es {s}, no la compartas"),
    );
    let s = alnum(rng, 10);
    add(
        "pt: a senha do banco é …",
        intl,
        s.clone(),
        format!("A senha do banco é {s}."),
    );
    let s = alnum(rng, 12);
    add(
        "de: das Passwort für … ist",
        intl,
        s.clone(),
        format!("Das Passwort für die Datenbank ist {s}"),
    );
    let s = alnum(rng, 12);
    add(
        "fr: le mot de passe … est",
        intl,
        s.clone(),
        format!("Le mot de passe du compte admin est {s}"),
    );
    let s = alnum(rng, 12);
    add(
        "hi: पासवर्ड … है",
        intl,
        s.clone(),
        format!("सर्वर का पासवर्ड {s} है"),
    );
    let s = alnum(rng, 12);
    add(
        "tr: şifre label",
        intl,
        s.clone(),
        format!("Veritabanı şifresi: {s}"),
    );
    let s = alnum(rng, 24);
    add(
        "tr: API anahtarı …",
        intl,
        s.clone(),
        format!("API anahtarı {s} olarak ayarlandı"),
    );
    // Full-width operators and letters, look-alike letters.
    let s = password(rng, 14);
    add(
        "full-width equals after an ASCII name",
        &[],
        s.clone(),
        format!("DB_PASSWORD＝{s}"),
    );
    let s = alnum(rng, 16);
    add(
        "full-width name and colon",
        &[],
        s.clone(),
        format!("ｐａｓｓｗｏｒｄ：{s}"),
    );
    let s = full_width(&alnum(rng, 20));
    add(
        "full-width value",
        &[],
        s.clone(),
        format!("ＡＰＩ＿ＫＥＹ＝{s}"),
    );
    let s = password(rng, 13);
    add(
        "Cyrillic а and о in password",
        &[],
        s.clone(),
        format!("p\u{0430}ssw\u{043e}rd: {s}"),
    );
    let s = alnum(rng, 32);
    add(
        "Greek ο in api_key",
        &[],
        s.clone(),
        format!("api_key = \"{s}\"  # t\u{03bf}ken for the sandb\u{03bf}x")
            .replace("api_key", "api_k\u{0435}y"),
    );

    // Setters.
    let s = password(rng, 12);
    add(
        "MYSQL_PWD before a command",
        &["password-assignment", "password-letters"],
        s.clone(),
        format!("MYSQL_PWD='{s}' mysql -u root -h db.internal shop < dump.sql"),
    );
    let s = letters(rng, 10);
    add(
        "MYSQL_PWD letters only",
        &["password-letters"],
        s.clone(),
        format!("MYSQL_PWD={s} mysqldump --all-databases > all.sql"),
    );
    let s = alnum(rng, 16);
    add("redis-cli AUTH at the prompt", &["secret-setter"], s.clone(), format!("$ redis-cli -h cache.internal\ncache.internal:6379> AUTH {s}\nOK\ncache.internal:6379> KEYS *"));
    let s = alnum(rng, 16);
    add(
        "redis AUTH user password",
        &["secret-setter"],
        s.clone(),
        format!("127.0.0.1:6379> AUTH default {s}\nOK"),
    );
    let s = alnum(rng, 20);
    add(
        "redis.conf requirepass",
        &["secret-setter"],
        s.clone(),
        format!("bind 0.0.0.0\nrequirepass {s}\nmaxmemory 2gb"),
    );
    let s = password(rng, 14);
    add("PowerShell ConvertTo-SecureString", &["secret-setter"], s.clone(), format!("$pw = ConvertTo-SecureString \"{s}\" -AsPlainText -Force\n$cred = New-Object PSCredential('svc', $pw)"));
    let s = alnum(rng, 30);
    add(
        "PowerShell $env:",
        &[],
        s.clone(),
        format!("PS C:\\app> $env:SENDGRID_TOKEN = \"{s}\""),
    );
    let s = alnum(rng, 26);
    add(
        "setx",
        &["secret-setter"],
        s.clone(),
        format!("C:\\> setx DEPLOY_TOKEN {s}\nSUCCESS: Specified value was saved."),
    );
    let s = password(rng, 12);
    add(
        "fish set -gx",
        &["secret-setter"],
        s.clone(),
        format!("set -gx DATABASE_PASSWORD '{s}'"),
    );
    let s = alnum(rng, 24);
    add(
        "Dockerfile ENV, space form",
        &["secret-setter"],
        s.clone(),
        format!("FROM node:20-alpine\nENV SESSION_SECRET {s}\nRUN npm ci"),
    );
    let s = password(rng, 14);
    add(
        "wp-config define DB_PASSWORD",
        &["secret-setter"],
        s.clone(),
        format!("define( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{s}' );"),
    );
    let salt = format!(
        "{} {}|{}",
        rng.string(ALNUM, 12),
        rng.string("!@#%^&*()-_[]<>~+=,.;:/?|", 6),
        rng.string(ALNUM, 14)
    );
    add(
        "wp-config AUTH_KEY with spaces",
        &["secret-setter"],
        salt.clone(),
        format!("define('AUTH_KEY',         '{salt}');"),
    );
    let s = rng.string(HEX, 32);
    add(
        "Twilio Client(sid, token)",
        &["twilio-auth-token"],
        s.clone(),
        format!("client = Client(\"AC{}\", \"{s}\")", rng.string(HEX, 32)),
    );
    let s = alnum(rng, 30);
    add(
        "Aliyun secret beside its key id",
        &["alibaba-secret-beside-id"],
        s.clone(),
        format!(
            "client = AcsClient('LTAI{}', '{s}', 'cn-hangzhou')",
            alnum(rng, 20)
        ),
    );

    // Values known by their shape.
    let s = mnemonic(rng, 12);
    add(
        "BIP39 mnemonic, 12 words in prose",
        &["bip39-mnemonic"],
        s.clone(),
        format!("restore the wallet with: {s}"),
    );
    let s = mnemonic(rng, 24).replace(' ', "\n");
    add(
        "BIP39 mnemonic, 24 words a line each",
        &["bip39-mnemonic"],
        s.clone(),
        format!("backup sheet:\n{s}\n(keep offline)"),
    );
    let s = card(rng, "4", 16);
    let grouped = format!("{} {} {} {}", &s[..4], &s[4..8], &s[8..12], &s[12..]);
    add(
        "card number in groups",
        &["card-number"],
        grouped.clone(),
        format!("Card: {grouped}  exp 04/29  cvc {}", rng.string(DIGITS, 3)),
    );
    let s = card(rng, "53", 16);
    add(
        "card number under card_number",
        &["card-number"],
        s.clone(),
        format!("{{\"card_number\": \"{s}\", \"holder\": \"ANN EXAMPLE\"}}"),
    );
    let s = format!("xai-{}", rng.string(ALNUM, 80));
    add(
        "xai key in prose",
        &["vendor-token"],
        s.clone(),
        format!("here is my grok key {s} — use it for the eval"),
    );
    let s = format!("{}/{}", rng.string(DIGITS, 18), rng.string(URLSAFE, 68));
    add(
        "discordapp.com webhook",
        &["discord-webhook-url"],
        s.clone(),
        format!("WEBHOOK=https://discordapp.com/api/webhooks/{s}"),
    );
    let s = format!(
        "{}/{}",
        rng.string(DIGITS, 7),
        rng.string(&format!("{LOWER}{DIGITS}"), 7)
    );
    add(
        "Zapier catch hook",
        &["zapier-webhook-url"],
        s.clone(),
        format!("ZAPIER_HOOK=hooks.zapier.com/hooks/catch/{s}/\nnode send-lead.js"),
    );
    let s = letters(rng, 14);
    add(
        "gpg --passphrase letters only",
        &["password-letters"],
        s.clone(),
        format!("gpg --batch --yes --passphrase {s} -c backup.tar"),
    );
    let s = letters(rng, 10);
    add(
        "DB_PASSWORD= letters only",
        &["password-letters"],
        s.clone(),
        format!("DB_HOST=localhost\nDB_PASSWORD={s}\nDB_PORT=5432"),
    );
    let s = letters(rng, 11);
    add(
        "JSON password letters only",
        &["password-letters"],
        s.clone(),
        format!("{{\"user\": \"svc-report\", \"password\": \"{s}\"}}"),
    );
    let s = token(rng, BASE64, 40);
    add(
        "AWS secret key beside its id in prose",
        &["aws-secret-in-prose"],
        s.clone(),
        format!(
            "key id AKIA{} and the secret is {s}",
            rng.string(&format!("{UPPER}{DIGITS}"), 16)
        ),
    );
    let s = token(rng, BASE64, 40);
    add(
        "AWS secret key in prose",
        &["aws-secret-in-prose"],
        s.clone(),
        format!("The secret access key for the backup user: {s}"),
    );
    let s = rng.string(HEX, 40);
    add("GCP service-account JSON private_key_id", &["gcp-service-account-key-id"], s.clone(), format!("{{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-prod\",\n  \"private_key_id\": \"{s}\",\n  \"client_email\": \"ci@acme-prod.iam.gserviceaccount.com\"\n}}"));

    // Structure.
    let s = password(rng, 14);
    add(
        "YAML literal block under password",
        &["yaml-block-secret"],
        s.clone(),
        format!("database:\n  password: |\n    {s}\n  host: db.internal\n"),
    );
    let s = alnum(rng, 40);
    add(
        "YAML folded >- under client_secret",
        &["yaml-block-secret"],
        s.clone(),
        format!("oauth:\n  client_id: web\n  client_secret: >-\n    {s}\n  scopes: [openid]\n"),
    );
    let s = password(rng, 12);
    add("Markdown table password column", &["table-secret-column"], s.clone(), format!("| env | user | password |\n|-----|------|----------|\n| prod | admin | {s} |\n| dev | dev | - |"));
    let s = letters(rng, 12);
    add("ASCII table token column, letters", &["table-secret-column"], s.clone(), format!("+-----+---------------+\n| svc | token         |\n+-----+---------------+\n| ci  | {s}  |\n+-----+---------------+"));
    let s = format!("sk_live_{}", rng.string(ALNUM, 24));
    add(
        "a secret as a JSON key",
        &[],
        s.clone(),
        format!("{{\"keys\": {{\"{s}\": \"prod\"}}}}"),
    );
    let first = alnum(rng, 24);
    let rest = alnum(rng, 12);
    let s = format!("{first}\n{rest}");
    add(
        "a value wrapped across two lines",
        &[],
        s.clone(),
        format!("API_KEY={first}\n{rest}\nDEBUG=false"),
    );
    let s = password(rng, 16);
    add("terraform output -json sensitive", &["terraform-sensitive-output"], s.clone(), format!("{{\n  \"db_password\": {{\n    \"sensitive\": true,\n    \"type\": \"string\",\n    \"value\": \"{s}\"\n  }}\n}}"));
    let s = letters(rng, 12);
    add(
        "echo > ~/.vault_pass.txt",
        &["secret-file-write"],
        s.clone(),
        format!("echo '{s}' > ~/.vault_pass.txt && chmod 600 ~/.vault_pass.txt"),
    );
}

/// A tool call whose output (or written file) is a secret as a whole.
#[derive(Debug, Clone)]
pub struct Call {
    pub context: &'static str,
    /// The tool's name and input.
    pub tool: &'static str,
    pub input: Value,
    /// What the tool printed or read (empty for a write).
    pub output: String,
    /// Claude Code's structured copy of the output, when it keeps one.
    pub structured: Option<Value>,
    /// The value that must not survive.
    pub secret: String,
    /// The placeholder's kind.
    pub kind: &'static str,
}

/// The provenance cases, with fresh values.
pub fn calls(rng: &mut Rng) -> Vec<Call> {
    let mut out = Vec::new();
    let mut bash = |context: &'static str, command: String, secret: String, output: String| {
        out.push(Call {
            context,
            tool: "Bash",
            input: json!({"command": command, "description": "check the value"}),
            structured: Some(
                json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false}),
            ),
            output,
            secret,
            kind: "secret-command-output",
        });
    };
    let s = token(rng, ALNUM, 14);
    bash(
        "printenv DB_PASSWORD",
        "printenv DB_PASSWORD".into(),
        s.clone(),
        format!("{s}\n"),
    );
    let s = token(rng, ALNUM, 32);
    bash(
        "echo $STRIPE_WEBHOOK_SECRET",
        "echo $STRIPE_WEBHOOK_SECRET".into(),
        s.clone(),
        format!("{s}\n"),
    );
    let s = password(rng, 16);
    bash(
        "kubectl get secret | base64 -d",
        "kubectl -n prod get secret app-db -o jsonpath='{.data.password}' | base64 -d".into(),
        s.clone(),
        s.clone(),
    );
    let s = format!(
        "{}-{}-{}-{}-{}",
        rng.string(HEX, 8),
        rng.string(HEX, 4),
        rng.string(HEX, 4),
        rng.string(HEX, 4),
        rng.string(HEX, 12)
    );
    bash(
        "heroku auth:token",
        "heroku auth:token".into(),
        s.clone(),
        format!("{s}\n"),
    );
    let s = format!("{}=", rng.string(BASE64, 43));
    bash(
        "wg show private-key",
        "sudo wg show wg0 private-key".into(),
        s.clone(),
        format!("{s}\n"),
    );
    let s = letters(rng, 14);
    bash(
        "terraform output -raw",
        "terraform output -raw db_admin_password".into(),
        s.clone(),
        s.clone(),
    );
    let s = letters(rng, 12);
    bash(
        "vault kv get table",
        "vault kv get -mount=secret app/prod".into(),
        s.clone(),
        format!("====== Data ======\nKey        Value\n---        -----\napi_key    {s}\nregion     eu-west-1\n"),
    );
    let s = rng.string(HEX, 32);
    out.push(Call {
        context: "Read of config/master.key",
        tool: "Read",
        input: json!({"file_path": "/home/dev/project/config/master.key"}),
        output: format!("     1\t{s}\n"),
        structured: Some(json!({"type": "text", "file": {"filePath": "/home/dev/project/config/master.key", "content": s, "numLines": 1, "startLine": 1, "totalLines": 1}})),
        secret: s,
        kind: "secret-file",
    });
    let s = rng.string(HEX, 32);
    let jar = format!(
        "# Netscape HTTP Cookie File\n.app.example.com\tTRUE\t/\tTRUE\t0\tsessionid\t{s}\n"
    );
    out.push(Call {
        context: "Read of a cookie jar",
        tool: "Read",
        input: json!({"file_path": "/home/dev/.local/share/cookies.txt"}),
        output: jar.clone(),
        structured: Some(json!({"type": "text", "file": {"filePath": "/home/dev/.local/share/cookies.txt", "content": jar}})),
        secret: s,
        kind: "secret-file",
    });
    let s = letters(rng, 16);
    out.push(Call {
        context: "Read of .vault_pass",
        tool: "Read",
        input: json!({"file_path": "/home/dev/.vault_pass.txt"}),
        output: format!("     1\t{s}\n"),
        structured: Some(json!({"type": "text", "file": {"filePath": "/home/dev/.vault_pass.txt", "content": s}})),
        secret: s,
        kind: "secret-file",
    });
    let s = token(rng, BASE64, 44);
    out.push(Call {
        context: "cat of a .key file",
        tool: "Bash",
        input: json!({"command": "cat deploy/tls/service.key"}),
        output: format!("{s}\n"),
        structured: Some(json!({"stdout": s, "stderr": "", "interrupted": false})),
        secret: s,
        kind: "secret-command-output",
    });
    let s = letters(rng, 13);
    out.push(Call {
        context: "Write of .pgpass",
        tool: "Write",
        input: json!({"file_path": "/home/dev/.pgpass", "content": format!("{s}\n")}),
        output: "File created successfully at: /home/dev/.pgpass".into(),
        structured: None,
        secret: s,
        kind: "secret-file",
    });
    out
}

/// A Claude Code session in which each call of `calls` is made and answered.
pub fn calls_session(session_id: &str, calls: &[Call]) -> String {
    let mut lines = Vec::new();
    let mut turn = 0u32;
    let mut push = |kind: &str, message: Value, extra: Option<Value>| {
        turn += 1;
        let mut line = json!({
            "type": kind, "sessionId": session_id,
            "uuid": format!("00000000-0000-4000-9000-{turn:012}"),
            "timestamp": format!("2026-02-15T11:{:02}:{:02}.000Z", turn / 60, turn % 60),
            "cwd": "/home/dev/project", "isSidechain": false, "message": message,
        });
        if kind == "assistant" {
            line["requestId"] = json!(format!("req_c{turn}"));
        }
        if let Some(extra) = extra {
            line["toolUseResult"] = extra;
        }
        lines.push(line.to_string());
    };
    push(
        "user",
        json!({"role": "user", "content": "check the deploy secrets are in place"}),
        None,
    );
    for (i, call) in calls.iter().enumerate() {
        let id = format!("toolu_c{i:04}");
        push(
            "assistant",
            json!({"id": format!("msg_c{i}"), "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": [{"type": "text", "text": format!("Checking: {}", call.context)},
                               {"type": "tool_use", "id": id, "name": call.tool, "input": call.input}]}),
            None,
        );
        push(
            "user",
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": call.output}]}),
            call.structured.clone(),
        );
    }
    push(
        "assistant",
        json!({"id": "msg_end", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "All deploy secrets are in place."}]}),
        None,
    );
    lines.join("\n") + "\n"
}

/// The same calls as message records (as `add` or `memory_add` take them):
/// one record for each call, one for each result.
pub fn calls_records(prefix: &str, session: &str, calls: &[Call]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let id = format!("toolu_r{i:04}");
        out.push(
            json!({"id": format!("{prefix}-call-{i}"), "kind": "message", "role": "assistant",
            "session_id": session, "text": format!("[tool_use {}]", call.tool),
            "content": [{"type": "tool_use", "id": id, "name": call.tool, "input": call.input}]}),
        );
        out.push(
            json!({"id": format!("{prefix}-result-{i}"), "kind": "message", "role": "user",
            "session_id": session, "text": format!("[tool_result] {}", call.output),
            "content": [{"type": "tool_result", "tool_use_id": id, "content": call.output}]}),
        );
    }
    out
}
