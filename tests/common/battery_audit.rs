//! The third part of the battery of `battery.rs`: the kinds of misses an
//! outside audit found (issue 38), as cases of our own with fresh random
//! values: passwords after flags and words in commands and prose, vendor
//! prefixes followed by any punctuation, URL passwords holding `#` or `%`,
//! JSON escaped two and three levels deep, invisible characters, a token
//! broken across lines, base64 values of a Kubernetes Secret, and
//! `<private>` tags in their common variants.
#![allow(dead_code)]

use serde_json::json;

use crate::battery::{b64, openai, Case};
use crate::secrets::{password, token, Rng, ALNUM, LOWER, URLSAFE};

/// A password without characters a shell or the contexts below would read
/// specially (`'`, `"`, `|`, `;`, `&`, spaces).
fn shell_password(rng: &mut Rng, len: usize) -> String {
    password(rng, len)
}

/// JSON text of `value` held as a JSON string `levels` times.
fn escaped(value: &serde_json::Value, levels: usize) -> String {
    let mut text = value.to_string();
    for _ in 0..levels {
        text = serde_json::Value::String(text).to_string();
    }
    text
}

/// Adds this part's contexts to `out`, with fresh values.
pub fn cases(rng: &mut Rng, out: &mut Vec<Case>) {
    let mut add = |context: &'static str,
                   kinds: &'static [&'static str],
                   secrets: Vec<String>,
                   text: String| {
        out.push(Case {
            context,
            secrets,
            text,
            kinds,
        });
    };

    // Passwords after flags, in commands.
    let s = shell_password(rng, 14);
    add(
        "sudo -S fed by echo",
        &[],
        vec![s.clone()],
        format!("$ echo '{s}' | sudo -S apt-get install -y nginx\n[sudo] password for dev: Reading package lists..."),
    );
    let s = shell_password(rng, 12);
    add(
        "sudo -S fed by printf",
        &[],
        vec![s.clone()],
        format!("printf '%s\\n' \"{s}\" | sudo -S systemctl restart api"),
    );
    let s = shell_password(rng, 13);
    add(
        "zip -P",
        &[],
        vec![s.clone()],
        format!("zip -r -P {s} backup-2024.zip ./exports"),
    );
    let s = token(rng, ALNUM, 16);
    add(
        "7z -p joined",
        &[],
        vec![s.clone()],
        format!("7z a -t7z -p{s} -mhe=on keys.7z ./keys/"),
    );
    let s = shell_password(rng, 15);
    add(
        "openssl enc -k",
        &[],
        vec![s.clone()],
        format!("openssl enc -aes-256-cbc -salt -pbkdf2 -in db.sql -out db.sql.enc -k {s}"),
    );
    let s = token(rng, ALNUM, 18);
    add(
        "openssl enc -pass pass:",
        &[],
        vec![s.clone()],
        format!("openssl enc -d -aes-256-cbc -pbkdf2 -in db.sql.enc -out db.sql -pass pass:{s}"),
    );
    let s = shell_password(rng, 12);
    add(
        "htpasswd -b",
        &[],
        vec![s.clone()],
        format!("sudo htpasswd -b -c /etc/nginx/.htpasswd admin {s}"),
    );
    let s = shell_password(rng, 12);
    add(
        "htpasswd -nb",
        &[],
        vec![s.clone()],
        format!("htpasswd -nbB deploy {s} >> auth/htpasswd"),
    );
    let s = shell_password(rng, 12);
    add(
        "mysql -p quoted",
        &[],
        vec![s.clone()],
        format!("mysql -h 127.0.0.1 -uroot -p'{s}' -e 'SHOW DATABASES;'"),
    );
    let s = token(rng, ALNUM, 14);
    add(
        "mysql -p joined before the database",
        &[],
        vec![s.clone()],
        format!("mysql -u app -p{s} appdb < migrations/0007.sql"),
    );
    let s = token(rng, URLSAFE, 24);
    add(
        "docker login --password-stdin fed by echo",
        &[],
        vec![s.clone()],
        format!("echo \"{s}\" | docker login registry.example.com -u ci --password-stdin\nLogin Succeeded"),
    );
    let s = token(rng, URLSAFE, 24);
    add(
        "docker login --password-stdin from a here-string",
        &[],
        vec![s.clone()],
        format!("docker login ghcr.io -u octo --password-stdin <<< \"{s}\""),
    );

    // Passwords in prose.
    let s = shell_password(rng, 12);
    add(
        "prose: pw X",
        &[],
        vec![s.clone()],
        format!("staging box is 10.0.4.12, user deploy, pw {s} - please restart the worker"),
    );
    let s = shell_password(rng, 12);
    add(
        "prose: creds are admin / X",
        &[],
        vec![s.clone()],
        format!("the grafana creds are admin / {s} if you need to look at the dashboards"),
    );
    let s = shell_password(rng, 12);
    add(
        "prose: login with root:X",
        &[],
        vec![s.clone()],
        format!("login with root:{s} on the bastion and tail the logs"),
    );
    let s = shell_password(rng, 12);
    add(
        "prose: log in … with X",
        &[],
        vec![s.clone()],
        format!("You can log in to the admin panel as ops with {s} and check the queue."),
    );

    // Vendor prefixes followed by punctuation.
    let s = format!("sk-proj-{}", token(rng, URLSAFE, 40));
    add(
        "sk-proj- with a shorter body",
        &[],
        vec![s.clone()],
        format!("try it with ({s}), the old one was revoked"),
    );
    let s = format!("sk-ant-oat01-{}", token(rng, URLSAFE, 95));
    add(
        "sk-ant-oat01- OAuth token",
        &[],
        vec![s.clone()],
        format!("CLAUDE_CODE_OAUTH_TOKEN is {s}; set it in the CI secrets."),
    );
    let s = format!("dckr_pat_{}", token(rng, URLSAFE, 27));
    add(
        "dckr_pat_ in prose",
        &[],
        vec![s.clone()],
        format!("Docker Hub access token: {s}, scope read/write."),
    );
    let s = format!("sk_live_{}", token(rng, ALNUM, 24));
    add(
        "sk_live_ followed by / in a URL path",
        &[],
        vec![s.clone()],
        format!("GET https://proxy.internal/stripe/{s}/v1/charges?limit=3"),
    );
    let s = openai(rng);
    add(
        "sk-proj- followed by / in a URL path",
        &[],
        vec![s.clone()],
        format!("curl https://gateway.example.com/openai/{s}/v1/models"),
    );
    let s = format!("sk-ant-api03-{}AA", token(rng, URLSAFE, 93));
    add(
        "sk-ant-api03- followed by / in a URL path",
        &[],
        vec![s.clone()],
        format!("fetch(`https://relay.example.dev/anthropic/{s}/v1/messages`)"),
    );

    // URL passwords holding `#` or `%` unescaped (.env files).
    let s = format!(
        "{}#{}%{}",
        token(rng, ALNUM, 6),
        token(rng, ALNUM, 5),
        token(rng, ALNUM, 5)
    );
    add(
        "URL password with # and %",
        &[],
        vec![s.clone()],
        format!(
            "DATABASE_URL=postgres://app:{s}@db.internal:5432/app\nREDIS_URL=redis://cache:6379/0"
        ),
    );
    let s = format!("{}@{}", token(rng, ALNUM, 8), token(rng, ALNUM, 6));
    add(
        "URL password with @",
        &[],
        vec![s.clone()],
        format!("MONGO_URI=mongodb://svc:{s}@mongo-0.mongo:27017/app?authSource=admin"),
    );

    // Encodings.
    let s = shell_password(rng, 14);
    add(
        "JSON escaped two levels",
        &[],
        vec![s.clone()],
        escaped(&json!({"config": {"db": {"password": s}}}), 2),
    );
    let s = token(rng, ALNUM, 32);
    add(
        "JSON escaped three levels",
        &[],
        vec![s.clone()],
        escaped(&json!({"env": {"API_SECRET": s, "REGION": "eu-west-1"}}), 3),
    );
    let body = rng.string(ALNUM, 36);
    let at = rng.between(4, 30);
    let s = format!("ghp_{body}");
    let sprinkled = format!("ghp_{}\u{200B}{}", &body[..at], &body[at..]);
    add(
        "zero-width space inside a token",
        &[],
        vec![s[..at + 4].to_string(), body[at..].to_string()],
        format!("export GITHUB_TOKEN={sprinkled}"),
    );
    let body = rng.string(URLSAFE, 93);
    let s = format!("sk-ant-api03-{body}AA");
    let cut = rng.between(20, 80);
    add(
        "a token broken across lines",
        &[],
        vec![s[..cut].to_string(), s[cut..].to_string()],
        format!(
            "here is the key, my terminal wrapped it:\n{}\n{}\nthanks",
            &s[..cut],
            &s[cut..]
        ),
    );
    let s = shell_password(rng, 14);
    let encoded = b64(s.as_bytes());
    add(
        "Kubernetes Secret data: password",
        &[],
        vec![encoded.clone()],
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n  username: {}\n  password: {encoded}\n", b64(b"app")),
    );
    let s = shell_password(rng, 14);
    let encoded = b64(format!("DB_HOST=db\nDB_PASSWORD={s}\n").as_bytes());
    add(
        "Kubernetes Secret data: an env file",
        &[],
        vec![encoded.clone()],
        format!("$ kubectl get secret app-env -o yaml\napiVersion: v1\ndata:\n  app.env: {encoded}\nkind: Secret\nmetadata:\n  name: app-env\n"),
    );
    let s = token(rng, ALNUM, 24);
    let encoded = b64(s.as_bytes());
    add(
        "Kubernetes Secret data as JSON",
        &[],
        vec![encoded.clone()],
        json!({"apiVersion": "v1", "kind": "Secret", "data": {"api-token": encoded, "region": b64(b"eu")}}).to_string(),
    );

    // `<private>` tags in their common variants: the content goes.
    let words = |rng: &mut Rng| format!("{} {}", rng.string(LOWER, 9), token(rng, ALNUM, 14));
    let s = words(rng);
    add(
        "<private> with a line break inside the tag",
        &[],
        vec![s.clone()],
        format!("notes: <private\n>{s}</private> end"),
    );
    let s = words(rng);
    add(
        "<private> with an attribute",
        &[],
        vec![s.clone()],
        format!("my address: <private reason=\"pii\">{s}</private>."),
    );
    let s = words(rng);
    add(
        "<private> with an NBSP",
        &[],
        vec![s.clone()],
        format!("<private\u{a0}>{s}</private\u{a0}> and the rest"),
    );
    let s = words(rng);
    add(
        "<private/> self-closing",
        &[],
        vec![s.clone()],
        format!("keep this <private/>{s}</private> and this"),
    );
    let s = words(rng);
    add(
        "&lt;private&gt; HTML-escaped",
        &[],
        vec![s.clone()],
        format!("<p>&lt;private&gt;{s}&lt;/private&gt;</p>"),
    );
    let s = words(rng);
    add(
        "＜private＞ fullwidth",
        &[],
        vec![s.clone()],
        format!("メモ ＜private＞{s}＜/private＞ 以上"),
    );
}
