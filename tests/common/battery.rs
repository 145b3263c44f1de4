//! A battery of realistic places where secrets turn up in coding-agent
//! sessions (typed prompts, `env` output, files an agent read, curl calls,
//! configs of every format, key files, shell history, command lines, source
//! code, connection strings, cookies, webhooks), each with fresh random
//! values, for `tests/privacy_battery.rs`. Unlike `secrets::planted`, which
//! plants one value per rule, this plants one value (or a few) per *context*:
//! it measures how many of the places a secret is found in are covered.
//!
//! Use it with `#[path = "common/secrets.rs"] mod secrets;` and
//! `#[path = "common/battery.rs"] mod battery;` in the same test crate.
#![allow(dead_code)]

use base64::Engine;
use serde_json::json;

use crate::secrets::{
    jwt, password, pem, token, url_password, Rng, ALNUM, BASE64, DIGITS, HEX, LOWER, URLSAFE,
};

/// One context with the secrets planted in it.
#[derive(Debug, Clone)]
pub struct Case {
    /// What kind of place this is (unique in the battery).
    pub context: &'static str,
    /// The values that must not survive.
    pub secrets: Vec<String>,
    /// The text as an agent's session would hold it.
    pub text: String,
    /// Kinds the placeholder may name (empty: any kind).
    pub kinds: &'static [&'static str],
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn uuid(rng: &mut Rng) -> String {
    format!(
        "{}-{}-4{}-a{}-{}",
        rng.string(HEX, 8),
        rng.string(HEX, 4),
        rng.string(HEX, 3),
        rng.string(HEX, 3),
        rng.string(HEX, 12)
    )
}

pub fn openai(rng: &mut Rng) -> String {
    format!(
        "sk-proj-{}T3BlbkFJ{}{}",
        rng.string(URLSAFE, 74),
        rng.string(URLSAFE, 73),
        rng.string(ALNUM, 1)
    )
}

pub fn ghp(rng: &mut Rng) -> String {
    format!("ghp_{}", rng.string(ALNUM, 36))
}

/// A PEM block with its 64-character lines joined by `sep`.
pub fn pem_joined(rng: &mut Rng, label: &str, bytes: usize, sep: &str) -> String {
    pem(rng, label, bytes).replace('\n', sep)
}

/// Every context, with fresh values.
pub fn cases(rng: &mut Rng) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
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

    // Typed prompts and assistant prose.
    let s = openai(rng);
    add(
        "prompt: vendor key inline",
        &["openai-api-key"],
        vec![s.clone()],
        format!("can you test the completion endpoint with my key {s}? thanks"),
    );
    let s = password(rng, 14);
    add(
        "prompt: password is …",
        &[],
        vec![s.clone()],
        format!("the staging db password is {s} and the user is admin, please connect"),
    );
    let s = token(rng, ALNUM, 40);
    add(
        "prompt: API key: …",
        &[],
        vec![s.clone()],
        format!("Here's the API key: {s}\nuse it for the weather client"),
    );
    let s = password(rng, 12);
    add(
        "assistant: password in backticks",
        &[],
        vec![s.clone()],
        format!(
            "I've set the admin password to `{s}` as you asked; change it after the first login."
        ),
    );
    let s = format!("whsec_{}", rng.string(ALNUM, 32));
    add(
        "assistant: stripe webhook signing secret",
        &[],
        vec![s.clone()],
        format!("The webhook's signing secret is {s}. Put it in your environment before running `stripe listen`."),
    );

    // env / printenv / export -p output.
    let s = rng.string(HEX, 64);
    add(
        "env dump",
        &[],
        vec![s.clone()],
        format!("HOME=/home/dev\nLANG=C.UTF-8\nSESSION_SECRET={s}\nPATH=/usr/local/bin:/usr/bin:/bin\nSHELL=/bin/bash"),
    );
    let s = format!("sk-ant-api03-{}AA", rng.string(URLSAFE, 93));
    add(
        "export -p output",
        &["anthropic-api-key"],
        vec![s.clone()],
        format!("declare -x ANTHROPIC_API_KEY=\"{s}\"\ndeclare -x EDITOR=\"vim\""),
    );
    let s = token(rng, &format!("{ALNUM}!#%*+-_"), 32);
    add(
        "Read of .env (numbered lines)",
        &[],
        vec![s.clone()],
        format!("     1\tNODE_ENV=production\n     2\tJWT_SECRET={s}\n     3\tPORT=3000\n"),
    );
    let s = password(rng, 16);
    add(
        "shell history",
        &[],
        vec![s.clone()],
        format!(
            "  501  cd ~/src/shop\n  502  mysql -uroot -p{s} shop < dump.sql\n  503  git status"
        ),
    );
    let s = b64(&rng.bytes(32));
    add(
        "laravel APP_KEY base64",
        &[],
        vec![s.clone()],
        format!("APP_NAME=Shop\nAPP_ENV=local\nAPP_KEY=base64:{s}\nAPP_DEBUG=true"),
    );

    // curl and HTTP.
    let s = token(rng, ALNUM, 40);
    add(
        "curl Authorization Bearer",
        &["authorization-header", "curl-auth-header", "bearer-token"],
        vec![s.clone()],
        format!("curl -sS -H \"Authorization: Bearer {s}\" https://api.example.com/v1/me | jq ."),
    );
    let s = password(rng, 14);
    add(
        "curl -u user:password",
        &[],
        vec![s.clone()],
        format!("curl -u admin:{s} https://jenkins.example.com/api/json?pretty=true"),
    );
    let s = rng.string(HEX, 32);
    add(
        "curl x-api-key header",
        &[],
        vec![s.clone()],
        format!(
            "curl https://api.example.com/items -H 'x-api-key: {s}' -H 'accept: application/json'"
        ),
    );
    let s = token(rng, URLSAFE, 32);
    add(
        "curl --cookie session",
        &[],
        vec![s.clone()],
        format!("curl -s --cookie \"session={s}\" https://app.example.com/dashboard"),
    );
    let s = rng.string(&format!("{LOWER}{DIGITS}"), 32);
    add(
        "Set-Cookie response header",
        &[],
        vec![s.clone()],
        format!("< HTTP/1.1 302 Found\n< Location: /home\n< Set-Cookie: sessionid={s}; expires=Tue, 01 Jul 2026 10:00:00 GMT; HttpOnly; Path=/; SameSite=Lax\n< Content-Length: 0"),
    );
    let s = format!("s%3A{}.{}", token(rng, URLSAFE, 32), token(rng, ALNUM, 43));
    add(
        "Cookie request header",
        &[],
        vec![s.clone()],
        format!("> GET /api/cart HTTP/1.1\n> Host: shop.example.com\n> Cookie: _ga=GA1.1.123456789.1700000000; connect.sid={s}\n> Accept: */*"),
    );
    let s = jwt(rng);
    add(
        "JWT in a cookie",
        &["jwt"],
        vec![s.clone()],
        format!("Cookie: theme=dark; access_token={s}"),
    );
    let user_pass = format!("deploy:{}", password(rng, 14));
    let s = b64(user_pass.as_bytes());
    add(
        "curl Authorization Basic",
        &[],
        vec![s.clone()],
        format!("curl -H 'Authorization: Basic {s}' https://nexus.example.com/service/rest/v1/repositories"),
    );
    let s = rng.string(HEX, 40);
    add(
        "Authorization: token (GitHub style)",
        &[],
        vec![s.clone()],
        format!("GET /repos/acme/api HTTP/1.1\nAuthorization: token {s}\nUser-Agent: curl/8.5.0"),
    );
    let s = rng.string(HEX, 40);
    add(
        "JS fetch headers object",
        &[],
        vec![s.clone()],
        format!("const res = await fetch(url, {{ headers: {{ 'X-Auth-Token': '{s}', 'Content-Type': 'application/json' }} }});"),
    );

    // Config files.
    let s = password(rng, 14);
    add(
        "YAML database password",
        &[],
        vec![s.clone()],
        format!("database:\n  host: db.internal\n  username: app\n  password: {s}\n  pool: 5"),
    );
    let s = token(rng, URLSAFE, 36);
    add(
        "YAML quoted token",
        &[],
        vec![s.clone()],
        format!("notifications:\n  api_token: \"{s}\"\n  channel: \"#deploys\""),
    );
    let s = token(rng, &format!("{ALNUM}-_"), 32);
    add(
        "JSON camelCase secret",
        &[],
        vec![s.clone()],
        json!({"service": {"clientId": "web-app", "apiSecret": s, "region": "eu-1"}}).to_string(),
    );
    let s = password(rng, 14);
    add(
        "TOML database password",
        &[],
        vec![s.clone()],
        format!("[database]\nhost = \"localhost\"\nuser = \"app\"\npassword = \"{s}\"\n"),
    );
    let s = password(rng, 14);
    add(
        "my.cnf",
        &[],
        vec![s.clone()],
        format!("[client]\nuser=root\npassword={s}\nhost=127.0.0.1"),
    );
    let s = password(rng, 14);
    add(
        "Ansible vars",
        &[],
        vec![s.clone()],
        format!("ansible_user: deploy\nansible_become_password: {s}\n"),
    );
    let s = b64(&rng.bytes(32));
    add(
        "WireGuard config",
        &[],
        vec![s.clone()],
        format!("[Interface]\nAddress = 10.0.0.2/32\nPrivateKey = {s}\nDNS = 1.1.1.1"),
    );
    let s = format!(
        "{} {} {} {}",
        rng.string(LOWER, 4),
        rng.string(LOWER, 4),
        rng.string(LOWER, 4),
        rng.string(LOWER, 4)
    );
    add(
        "Gmail app password",
        &[],
        vec![s.clone()],
        format!("EMAIL_HOST = 'smtp.gmail.com'\nEMAIL_HOST_USER = 'me@example.com'\nEMAIL_HOST_PASSWORD = '{s}'"),
    );

    // Key files.
    let s = pem(rng, "OPENSSH PRIVATE KEY", 400);
    add(
        "heredoc OpenSSH key",
        &["private-key"],
        vec![s.clone()],
        format!("cat > ~/.ssh/id_ed25519 <<'EOF'\n{s}\nEOF\nchmod 600 ~/.ssh/id_ed25519"),
    );
    let body = b64(&rng.bytes(600));
    let lines: Vec<String> = body
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let s = lines.join("\n");
    add(
        "PGP private key block",
        &[],
        vec![s.clone()],
        format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: alice@example.com\n\n{s}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"),
    );
    let body = b64(&rng.bytes(500));
    let lines: Vec<String> = body
        .as_bytes()
        .chunks(64)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let s = lines.join("\n");
    add(
        "PuTTY private key",
        &[],
        vec![s.clone()],
        format!("PuTTY-User-Key-File-3: ssh-rsa\nEncryption: none\nComment: rsa-key-20260101\nPublic-Lines: 2\nAAAAB3NzaC1yc2EAAAADAQABAAABAQC7\nx9yQ==\nPrivate-Lines: {}\n{s}\nPrivate-MAC: {}", lines.len(), rng.string(HEX, 64)),
    );
    let s = pem_joined(rng, "PRIVATE KEY", 600, "\\n");
    add(
        "private key in an env var with \\n",
        &["private-key"],
        vec![s.clone()],
        format!("FIREBASE_PRIVATE_KEY=\"{s}\\n\"\nFIREBASE_PROJECT_ID=demo"),
    );
    let s = pem(rng, "RSA PRIVATE KEY", 600);
    let indented = s.replace('\n', "\n    ");
    add(
        "private key in YAML block scalar",
        &["private-key"],
        vec![s.lines().nth(1).unwrap_or_default().to_string()],
        format!("apiVersion: v1\nkind: Secret\ntype: kubernetes.io/tls\nstringData:\n  tls.key: |\n    {indented}\n"),
    );
    let s = b64(pem(rng, "RSA PRIVATE KEY", 600).as_bytes());
    add(
        "kubeconfig client-key-data",
        &[],
        // The first 48 characters encode the PEM header: not random.
        vec![s[48..].to_string()],
        format!("users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=\n    client-key-data: {s}\n"),
    );
    let s = jwt(rng);
    add(
        "kubeconfig token",
        &[],
        vec![s.clone()],
        format!("users:\n- name: ci\n  user:\n    token: {s}\n"),
    );

    // Registry and tool credentials files.
    let s = b64(format!("deploy:{}", ghp(rng)).as_bytes());
    add(
        "docker config.json auth",
        &[],
        vec![s.clone()],
        format!(
            "{{\n  \"auths\": {{\n    \"ghcr.io\": {{\n      \"auth\": \"{s}\"\n    }}\n  }}\n}}"
        ),
    );
    let s = b64(format!("ci:{}", password(rng, 14)).as_bytes());
    add(
        ".npmrc _auth",
        &[],
        vec![s.clone()],
        format!("registry=https://npm.company.com/\n_auth={s}\nalways-auth=true"),
    );
    let s = b64(password(rng, 14).as_bytes());
    add(
        ".npmrc _password",
        &[],
        vec![s.clone()],
        format!("//npm.company.com/repository/npm/:username=ci\n//npm.company.com/repository/npm/:_password={s}\n//npm.company.com/repository/npm/:email=ci@company.com"),
    );
    let s = ghp(rng);
    add(
        ".npmrc GitHub packages",
        &["github-pat"],
        vec![s.clone()],
        format!("@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={s}"),
    );
    let s = password(rng, 14);
    add(
        ".pypirc private index",
        &[],
        vec![s.clone()],
        format!("[distutils]\nindex-servers = private\n\n[private]\nrepository = https://pypi.company.com/simple\nusername = deploy\npassword = {s}"),
    );
    let s = token(rng, ALNUM, 40);
    add(
        ".netrc",
        &[],
        vec![s.clone()],
        format!("machine git.company.com\n  login deploy\n  password {s}\nmachine api.company.com login deploy password {s}"),
    );
    let s = token(rng, ALNUM, 40);
    add(
        ".git-credentials",
        &[],
        vec![s.clone()],
        format!("https://deploy:{s}@git.company.com\n"),
    );
    let s = format!("glpat-{}", rng.string(&format!("{ALNUM}_-"), 20));
    add(
        "git remote -v",
        &[],
        vec![s.clone()],
        format!("origin\thttps://oauth2:{s}@gitlab.com/acme/api.git (fetch)\norigin\thttps://oauth2:{s}@gitlab.com/acme/api.git (push)"),
    );
    let s = url_password(rng);
    add(
        "git remote add with password",
        &[],
        vec![s.clone()],
        format!("git remote add deploy https://deploy:{s}@git.company.com/acme/site.git"),
    );
    let s = password(rng, 14);
    add(
        ".pgpass",
        &[],
        vec![s.clone()],
        format!("$ cat ~/.pgpass\ndb.internal:5432:app:app_user:{s}\n*:*:*:postgres:{s}"),
    );

    // Infrastructure as code, CI.
    let s = password(rng, 16);
    add(
        "Terraform tfvars",
        &[],
        vec![s.clone()],
        format!("region      = \"eu-west-1\"\ndb_password = \"{s}\"\ninstance    = \"t3.micro\""),
    );
    let s = rng.string(BASE64, 40);
    add(
        "Terraform provider block",
        &[],
        vec![s.clone()],
        format!("provider \"aws\" {{\n  region     = \"us-east-1\"\n  access_key = \"AKIA{}\"\n  secret_key = \"{s}\"\n}}", rng.string("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    );
    let s = token(rng, ALNUM, 40);
    add(
        "GitHub Actions hard-coded env",
        &[],
        vec![s.clone()],
        format!("jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      DEPLOY_TOKEN: {s}\n    steps:\n      - uses: actions/checkout@v4"),
    );
    let s = password(rng, 14);
    add(
        "GitLab CI variables",
        &[],
        vec![s.clone()],
        format!("variables:\n  POSTGRES_USER: runner\n  POSTGRES_PASSWORD: \"{s}\"\n  POSTGRES_DB: test"),
    );
    let s = password(rng, 14);
    add(
        "docker-compose environment list",
        &[],
        vec![s.clone()],
        format!("services:\n  db:\n    image: mysql:8\n    environment:\n      - MYSQL_ROOT_PASSWORD={s}\n      - MYSQL_DATABASE=app"),
    );
    let s = b64(password(rng, 14).as_bytes());
    add(
        "kubectl get secret -o yaml",
        &[],
        vec![s.clone()],
        format!("apiVersion: v1\ndata:\n  password: {s}\n  username: YWRtaW4=\nkind: Secret\nmetadata:\n  name: db-credentials"),
    );

    // Command lines.
    let s = password(rng, 14);
    add(
        "PGPASSWORD= psql",
        &[],
        vec![s.clone()],
        format!(
            "PGPASSWORD='{s}' psql -h db.internal -U app -d app -c 'select count(*) from orders'"
        ),
    );
    let s = password(rng, 14);
    add(
        "mysqldump --password=",
        &[],
        vec![s.clone()],
        format!("mysqldump -u root --password='{s}' --single-transaction shop > shop.sql"),
    );
    let s = token(rng, ALNUM, 36);
    add(
        "docker login -p",
        &[],
        vec![s.clone()],
        format!("docker login -u deploy -p {s} registry.company.com"),
    );
    let s = password(rng, 14);
    add(
        "docker run -e",
        &[],
        vec![s.clone()],
        format!("docker run -d --name pg -e POSTGRES_PASSWORD={s} -p 5432:5432 postgres:16"),
    );
    let s = password(rng, 14);
    add(
        "kubectl create secret --from-literal",
        &[],
        vec![s.clone()],
        format!("kubectl create secret generic db --from-literal=username=app --from-literal=password={s}"),
    );
    let s = password(rng, 14);
    add(
        "helm --set password",
        &[],
        vec![s.clone()],
        format!("helm upgrade --install pg bitnami/postgresql --set auth.postgresPassword={s} --namespace data"),
    );
    let s = password(rng, 14);
    add(
        "sshpass -p",
        &[],
        vec![s.clone()],
        format!("sshpass -p '{s}' ssh -o StrictHostKeyChecking=no deploy@10.0.3.17 'sudo systemctl restart app'"),
    );
    let s = token(rng, ALNUM, 24);
    add(
        "redis-cli -a",
        &[],
        vec![s.clone()],
        format!("redis-cli -h cache.internal -p 6379 -a {s} --no-auth-warning INFO keyspace"),
    );
    let s = password(rng, 14);
    add(
        "keytool -storepass",
        &[],
        vec![s.clone()],
        format!("keytool -importkeystore -srckeystore app.p12 -srcstoretype PKCS12 -destkeystore app.jks -deststorepass {s}"),
    );
    let s = password(rng, 14);
    add(
        "openssl -passout pass:",
        &[],
        vec![s.clone()],
        format!(
            "openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{s}"
        ),
    );
    let s = format!(
        "{}{}Q~{}",
        rng.string(ALNUM, 3),
        rng.string(DIGITS, 1),
        rng.string(&format!("{ALNUM}_~.-"), 34)
    );
    let (app, tenant) = (uuid(rng), uuid(rng));
    add(
        "az login --service-principal",
        &["azure-ad-client-secret"],
        vec![s.clone()],
        format!("az login --service-principal -u {app} -p {s} --tenant {tenant}"),
    );
    let s = password(rng, 14);
    add(
        "sqlcmd -P",
        &[],
        vec![s.clone()],
        format!("sqlcmd -S tcp:db.example.com,1433 -U sa -P '{s}' -Q 'SELECT @@VERSION'"),
    );
    let s = format!("ghs_{}", rng.string(ALNUM, 36));
    add(
        "git clone with an app token",
        &["github-app-token"],
        vec![s.clone()],
        format!("git clone https://x-access-token:{s}@github.com/acme/infra.git"),
    );

    crate::battery_code::cases(rng, &mut out);
    crate::battery_audit::cases(rng, &mut out);
    crate::battery_shapes::cases(rng, &mut out);
    crate::battery_round3::cases(rng, &mut out);
    out
}

/// Whether any run of `window` characters of `secret` (or the whole of a
/// shorter one) is still in `text`; line breaks and PEM armour excepted.
pub fn leaks(secret: &str, text: &str, window: usize) -> Option<String> {
    let chars: Vec<char> = secret.chars().collect();
    let window = chars.len().min(window);
    chars
        .windows(window)
        .map(|w| w.iter().collect::<String>())
        .filter(|w| !w.contains("-----") && !w.contains('\n') && !w.contains("\\n"))
        .find(|w| text.contains(w.as_str()))
}
