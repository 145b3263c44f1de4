//! The second half of the battery of `battery.rs` (source code, connection
//! strings, tool output, webhooks), kept apart to keep each file short.
#![allow(dead_code)]

use serde_json::json;

use crate::battery::{b64, openai, uuid, Case};
use crate::secrets::{
    jwt, password, token, url_password, Rng, ALNUM, BASE64, DIGITS, HEX, LOWER, URLSAFE,
};

/// Adds the contexts of this half to `out`, with fresh values.
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

    // Source code.
    let s = openai(rng);
    add(
        "Python client(api_key=…)",
        &["openai-api-key"],
        vec![s.clone()],
        format!("from openai import OpenAI\nclient = OpenAI(api_key=\"{s}\")\n"),
    );
    let s = password(rng, 14);
    add(
        "Python psycopg2.connect(password=…)",
        &[],
        vec![s.clone()],
        format!(
            "conn = psycopg2.connect(host=\"db\", dbname=\"app\", user=\"app\", password=\"{s}\")"
        ),
    );
    let s = format!("rk_live_{}", rng.string(ALNUM, 24));
    add(
        "Python module constant",
        &["stripe-access-token"],
        vec![s.clone()],
        format!("STRIPE_API_KEY = '{s}'\nSTRIPE_API_VERSION = '2024-06-20'"),
    );
    let s = format!(
        "django-insecure-{}",
        rng.string("abcdefghijklmnopqrstuvwxyz0123456789!@#$%^&*(-_=+)", 50)
    );
    add(
        "Django SECRET_KEY",
        &[],
        vec![s.clone()],
        format!("# SECURITY WARNING: keep the secret key used in production secret!\nSECRET_KEY = '{s}'\n\nDEBUG = True"),
    );
    let s = password(rng, 14);
    add(
        "Python requests auth tuple",
        &[],
        vec![s.clone()],
        format!(
            "r = requests.get(f\"{{base}}/api/builds\", auth=(\"admin\", \"{s}\"), timeout=10)"
        ),
    );
    let s = token(rng, ALNUM, 32);
    add(
        "JS const apiKey",
        &[],
        vec![s.clone()],
        format!("const apiKey = \"{s}\";\nconst client = new Client({{ apiKey }});"),
    );
    let s = format!("AIza{}", rng.string(ALNUM, 35));
    add(
        "JS Firebase config",
        &["gcp-api-key"],
        vec![s.clone()],
        format!("const firebaseConfig = {{\n  apiKey: \"{s}\",\n  authDomain: \"demo.firebaseapp.com\",\n}};"),
    );
    let s = token(rng, URLSAFE, 40);
    add(
        "Express session secret",
        &[],
        vec![s.clone()],
        format!("app.use(session({{ secret: '{s}', resave: false, saveUninitialized: false }}));"),
    );
    let s = token(rng, ALNUM, 40);
    add(
        "Go const token",
        &[],
        vec![s.clone()],
        format!("const apiToken = \"{s}\"\n\nfunc client() *http.Client {{"),
    );
    let s = password(rng, 14);
    add(
        "Go password :=",
        &[],
        vec![s.clone()],
        format!("\tpassword := \"{s}\"\n\tdb, err := connect(user, password)"),
    );
    let s = password(rng, 14);
    add(
        "Go MySQL DSN user:pass@tcp()",
        &[],
        vec![s.clone()],
        format!(
            "db, err := sql.Open(\"mysql\", \"root:{s}@tcp(127.0.0.1:3306)/app?parseTime=true\")"
        ),
    );
    let s = jwt(rng);
    add(
        "JS localStorage JWT",
        &["jwt"],
        vec![s.clone()],
        format!("localStorage.setItem('token', '{s}');"),
    );

    // Connection strings.
    let s = b64(&rng.bytes(64));
    add(
        "Azure Storage connection string",
        &[],
        vec![s.clone()],
        format!("AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey={s};EndpointSuffix=core.windows.net\""),
    );
    let s = b64(&rng.bytes(32));
    add(
        "Azure Service Bus connection string",
        &[],
        vec![s.clone()],
        format!("Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={s}"),
    );
    let s = url_password(rng);
    add(
        "mongosh URI",
        &[],
        vec![s.clone()],
        format!("mongosh \"mongodb://admin:{s}@localhost:27017/?authSource=admin\""),
    );
    let s = url_password(rng);
    add(
        "Redis URL with no user",
        &[],
        vec![s.clone()],
        format!("REDIS_URL=redis://:{s}@redis.internal:6379/0"),
    );
    let s = url_password(rng);
    add(
        "AMQP URL",
        &[],
        vec![s.clone()],
        format!("CELERY_BROKER_URL=amqp://worker:{s}@rabbitmq:5672/%2F"),
    );
    let s = url_password(rng);
    add(
        "SQLAlchemy URL",
        &[],
        vec![s.clone()],
        format!("engine = create_engine(\"postgresql+psycopg2://app:{s}@db:5432/app\")"),
    );
    let s = password(rng, 14);
    add(
        "JDBC URL query password",
        &[],
        vec![s.clone()],
        format!(
            "spring.datasource.url=jdbc:postgresql://db:5432/app?user=app&password={s}&ssl=true"
        ),
    );
    let s = password(rng, 14);
    add(
        "JDBC SQL Server properties",
        &[],
        vec![s.clone()],
        format!("jdbc:sqlserver://db.example.com:1433;databaseName=app;user=sa;password={s};encrypt=true"),
    );
    let s = password(rng, 14);
    add(
        "ODBC connection string",
        &[],
        vec![s.clone()],
        format!("Driver={{ODBC Driver 18 for SQL Server}};Server=tcp:acme.database.windows.net,1433;Uid=admin;Pwd={s};Encrypt=yes;"),
    );
    let s = url_password(rng);
    add(
        "SMTP URL",
        &[],
        vec![s.clone()],
        format!("MAILER_DSN=smtp://postmaster%40mg.example.com:{s}@smtp.mailgun.org:587"),
    );

    // Tool output.
    let (pw, base) = (url_password(rng), rng.string(HEX, 128));
    add(
        "heroku config output",
        &[],
        vec![pw.clone(), base.clone()],
        format!("=== acme-api Config Vars\nDATABASE_URL:    postgres://u1a2b:{pw}@ec2-1-2-3-4.compute-1.amazonaws.com:5432/d9f\nSECRET_KEY_BASE: {base}\nWEB_CONCURRENCY: 2"),
    );
    let (key, session) = (
        rng.string(BASE64, 40),
        format!("IQoJb3JpZ2luX2Vj{}", rng.string(BASE64, 300)),
    );
    add(
        "~/.aws/credentials with session token",
        &[],
        vec![key.clone(), session.clone()],
        format!("[default]\naws_access_key_id = ASIA{}\naws_secret_access_key = {key}\naws_session_token = {session}\n", rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    );
    let session = format!("IQoJb3JpZ2luX2Vj{}", rng.string(BASE64, 300));
    add(
        "aws sts JSON",
        &[],
        vec![session.clone()],
        format!("{{\n    \"Credentials\": {{\n        \"AccessKeyId\": \"ASIA{}\",\n        \"SessionToken\": \"{session}\",\n        \"Expiration\": \"2026-01-15T11:00:00Z\"\n    }}\n}}", rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    );
    let s = format!("hvs.CAESI{}", rng.string(&format!("{ALNUM}_-"), 90));
    add(
        "Vault token",
        &[],
        vec![s.clone()],
        format!("export VAULT_ADDR=https://vault.internal:8200\nexport VAULT_TOKEN={s}"),
    );
    let (access, refresh) = (
        format!("ya29.a0{}", rng.string(URLSAFE, 120)),
        format!("1//0{}", rng.string(URLSAFE, 100)),
    );
    add(
        "OAuth token response",
        &[],
        vec![access.clone(), refresh.clone()],
        format!("{{\"access_token\":\"{access}\",\"expires_in\":3599,\"refresh_token\":\"{refresh}\",\"scope\":\"openid\",\"token_type\":\"Bearer\"}}"),
    );
    let s = format!("ya29.a0{}", rng.string(URLSAFE, 120));
    add(
        "gcloud auth print-access-token",
        &[],
        vec![s.clone()],
        format!("$ gcloud auth print-access-token\n{s}\n$ "),
    );
    let s = format!("GOCSPX-{}", rng.string(URLSAFE, 28));
    add(
        "Google client_secret.json",
        &[],
        vec![s.clone()],
        json!({"installed": {"client_id": format!("{}-{}.apps.googleusercontent.com", rng.string(DIGITS, 12), rng.string(LOWER, 32)), "client_secret": s, "redirect_uris": ["http://localhost"]}}).to_string(),
    );
    let s = format!("GOCSPX-{}", rng.string(URLSAFE, 28));
    add(
        "Google OAuth client secret in prose",
        &[],
        vec![s.clone()],
        format!(
            "Use client id 1234-abc.apps.googleusercontent.com with secret {s} for the local test."
        ),
    );

    // Webhooks.
    let s = format!("{}/{}", rng.string(DIGITS, 19), rng.string(URLSAFE, 68));
    add(
        "Discord webhook URL",
        &[],
        vec![s.clone()],
        format!("DISCORD_WEBHOOK_URL=https://discord.com/api/webhooks/{s}"),
    );
    let s = format!(
        "{}@{}/IncomingWebhook/{}/{}",
        uuid(rng),
        uuid(rng),
        rng.string(HEX, 32),
        uuid(rng)
    );
    add(
        "Teams webhook URL",
        &[],
        vec![s.clone()],
        format!("curl -H 'Content-Type: application/json' -d '{{\"text\":\"build ok\"}}' https://acme.webhook.office.com/webhookb2/{s}"),
    );
    let s = format!(
        "{}:AA{}",
        rng.string(DIGITS, 10),
        rng.string(&format!("{ALNUM}_-"), 33)
    );
    add(
        "Telegram bot URL",
        &[],
        vec![s.clone()],
        format!("curl -s \"https://api.telegram.org/bot{s}/sendMessage?chat_id=42&text=hi\""),
    );
    let s = format!(
        "T{}/B{}/{}",
        rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
        rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 10),
        rng.string(ALNUM, 24)
    );
    add(
        "Slack webhook in YAML",
        &["slack-webhook-url"],
        vec![s.clone()],
        format!("alerting:\n  slack_webhook: https://hooks.slack.com/services/{s}\n"),
    );
}
