//! The fourth part of the battery of `battery.rs`: shapes a planted set of
//! stop 46 found slipping past the rules, with fresh random values: names
//! that end in PASS, secrets held in XML elements and in key/value configs,
//! passwords of letters and digits after "password" in prose, "pass is",
//! "secret is", "set the password to …" unquoted, "use … as the password",
//! the word for password in other languages, secrets set in code by subscript,
//! call or setter, password prompts with what was typed, `config set` of a
//! token, YAML env lists and `creds:`.
#![allow(dead_code)]

use crate::battery::Case;
use crate::secrets::{password, token, Rng, ALNUM};

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
    // Letters and digits only: the passwords people type, which the
    // identifier allowlists once took for names.
    let alnum = |rng: &mut Rng, n: usize| token(rng, ALNUM, n);

    let s = alnum(rng, 12);
    add(
        "a .env DB_PASS",
        &["password-assignment"],
        s.clone(),
        format!("DB_HOST=db.internal\nDB_USER=app\nDB_PASS=\"{s}\"\n"),
    );
    let s = alnum(rng, 14);
    add(
        "export SMTP_PASS",
        &["password-assignment"],
        s.clone(),
        format!("export SMTP_PASS={s}\n"),
    );
    let s = alnum(rng, 13);
    add(
        "compose MYSQL_ROOT_PASS",
        &["password-assignment"],
        s.clone(),
        format!("    environment:\n      MYSQL_ROOT_PASS: {s}\n"),
    );
    let s = alnum(rng, 12);
    add("Maven settings.xml <password>", &["secret-tag"], s.clone(), format!("<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>{s}</password>\n</server>"));
    let s = alnum(rng, 20);
    add("<client-secret> in CDATA", &["secret-tag"], s.clone(), format!("<oauth>\n  <client-id>web</client-id>\n  <client-secret><![CDATA[{s}]]></client-secret>\n</oauth>"));
    let s = alnum(rng, 14);
    add(
        ".NET appSettings password",
        &["secret-key-value"],
        s.clone(),
        format!("<appSettings>\n  <add key=\"SmtpPassword\" value=\"{s}\" />\n</appSettings>"),
    );
    let s = alnum(rng, 24);
    add(
        "env name/value JSON",
        &["secret-key-value"],
        s.clone(),
        format!("\"env\": [{{\"name\": \"API_TOKEN\", \"value\": \"{s}\"}}]"),
    );
    let s = alnum(rng, 11);
    add(
        "password and a value in prose",
        &[],
        s.clone(),
        format!("log in as admin, password {s}, then open the settings"),
    );
    let s = alnum(rng, 10);
    add(
        "ssh with password",
        &[],
        s.clone(),
        format!("ssh deploy@10.0.3.7 with password {s}"),
    );
    let s = alnum(rng, 10);
    add(
        "the admin pass is",
        &["secret-in-prose"],
        s.clone(),
        format!("fyi the admin pass is {s} until Friday"),
    );
    let s = alnum(rng, 16);
    add(
        "the webhook secret is",
        &["secret-in-prose"],
        s.clone(),
        format!("The webhook secret is {s}."),
    );
    let s = alnum(rng, 12);
    add(
        "set the password to, unquoted",
        &["secret-in-prose"],
        s.clone(),
        format!("set the password to {s} for now"),
    );
    let s = alnum(rng, 14);
    add(
        "set the signing secret to",
        &["secret-in-prose"],
        s.clone(),
        format!("then set the signing secret to {s} in the dashboard"),
    );
    let s = password(rng, 12);
    add(
        "use ... as the password",
        &["password-as"],
        s.clone(),
        format!("use {s} as the password for the staging db"),
    );
    let s = alnum(rng, 12);
    add(
        "signed up with ... as my password",
        &["password-as"],
        s.clone(),
        format!("I signed up with {s} as my password."),
    );
    let s = alnum(rng, 14);
    add(
        "try ... as the password, at a line's end",
        &["password-as"],
        s.clone(),
        format!("If the login fails, try {s} as the password\nthen reset it."),
    );
    let s = alnum(rng, 10);
    add(
        "Passwort (German)",
        &["password-assignment"],
        s.clone(),
        format!("Benutzer: admin\nPasswort: {s}"),
    );
    let s = alnum(rng, 10);
    add(
        "contraseña (Spanish)",
        &["password-assignment"],
        s.clone(),
        format!("usuario: root, contraseña: {s}"),
    );
    let s = alnum(rng, 10);
    add(
        "mot de passe (French)",
        &["password-assignment"],
        s.clone(),
        format!("identifiant : admin\nmot de passe : {s}"),
    );
    let s = password(rng, 14);
    add(
        "os.environ subscript",
        &["secret-in-code"],
        s.clone(),
        format!("os.environ[\"DB_PASSWORD\"] = \"{s}\""),
    );
    let s = alnum(rng, 32);
    add(
        "config subscript, single quotes",
        &["secret-in-code"],
        s.clone(),
        format!("config['api_key'] = '{s}'"),
    );
    let s = password(rng, 14);
    add(
        "os.Setenv",
        &["secret-in-code"],
        s.clone(),
        format!("os.Setenv(\"DB_PASSWORD\", \"{s}\")"),
    );
    let s = alnum(rng, 32);
    add(
        "std::env::set_var",
        &["secret-in-code"],
        s.clone(),
        format!("std::env::set_var(\"OPENAI_TOKEN\", \"{s}\");"),
    );
    let s = password(rng, 13);
    add(
        "a setter named after the secret",
        &["secret-in-code"],
        s.clone(),
        format!("dataSource.setPassword(\"{s}\");"),
    );
    let s = password(rng, 13);
    add(
        "a builder's .password(…)",
        &["secret-in-code"],
        s.clone(),
        format!("Client.builder().user(\"ann\").password(\"{s}\").build()"),
    );
    let s = alnum(rng, 12);
    add(
        "a password prompt and what was typed",
        &["password-prompt"],
        s.clone(),
        format!("spawn ssh ann@db\nPassword for ann@db: {s}\nWelcome to Ubuntu"),
    );
    let s = alnum(rng, 36);
    add(
        "npm config set _authToken",
        &["config-set-secret"],
        s.clone(),
        format!("npm config set //registry.npmjs.org/:_authToken {s}"),
    );
    let s = alnum(rng, 16);
    add("Kubernetes env in YAML", &["secret-key-value"], s.clone(), format!("        env:\n          - name: DB_PASSWORD\n            value: \"{s}\"\n          - name: DB_USER\n            value: app"));
    let s = password(rng, 12);
    add(
        "creds: user / password",
        &[],
        s.clone(),
        format!("creds: ann / {s}"),
    );
}
