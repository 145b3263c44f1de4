//! Provenance: a value judged by the command or the file that produced it.
//!
//! Some outputs are secrets as a whole, whatever they look like: what
//! `printenv DB_PASSWORD` prints is the password, with no name beside it;
//! `kubectl get secret … | base64 -d` prints the decoded secret; a Read of
//! Rails' `master.key` or of a cookie jar is the key or the cookies. No rule
//! on the text alone can see that: the command and the path can. An agent's
//! transcript keeps them beside the output (a tool call's input, then its
//! result under the call's id), so the readers of transcripts
//! (`crate::transcript`) pair them and replace such an output whole, before
//! anything else reads it; records added as JSON (`add`, MCP `memory_add`)
//! are paired the same way ([`seal_blocks`]).
//!
//! A call's output is a secret as a whole ([`secret_output`]) when it:
//! - prints a secret-named variable (`printenv DB_PASSWORD`, `echo
//!   $API_TOKEN`, `heroku config:get SECRET_KEY_BASE`);
//! - decodes a Kubernetes Secret (`kubectl get secret … | base64 -d`, a
//!   `base64decode` template), or asks a tool for a token or a stored
//!   secret (`heroku auth:token`, `gh auth token`, `gcloud auth
//!   print-access-token`, `az account get-access-token`, `aws ecr
//!   get-login-password`, `vault kv get`, `aws secretsmanager
//!   get-secret-value`, `op read`, `security find-generic-password -w`,
//!   `sops -d`, `ansible-vault view`, `terraform output -raw db_password`,
//!   `wg show … private-key`, `wg genkey`, `openssl rand`, …);
//! - reads a secret's file, by a file tool (`Read`, `read`) or a command
//!   (`cat`, `head`, `less`, `sed -n`, `Get-Content`, …).
//!
//! A secret's file ([`is_secret_file`]): `*.key`, `*.pem`, `*.p12`, `*.pfx`,
//! `*.jks`, `*.ppk`, `master.key`, `credentials*`, `.vault_pass*`,
//! `.netrc`, `.pgpass`, `.git-credentials`, `.htpasswd`, `/etc/shadow`, cookie
//! jars (`cookies.txt`, `cookie-jar`), SSH private keys (`id_rsa`, …),
//! `secrets.{yml,json,env}`, service-account key files, `.docker/config.json`
//! and WireGuard configurations; not their `.pub`, `.example` or `.sample`.
//! What a file tool writes into one (`Write`, `Edit`) is a secret too.
//!
//! Kept: an output that is empty or an error ("No such file"), and a `.pem`
//! or `.crt` read that holds certificates or public keys only.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use super::scan::PLACEHOLDER_START;
use super::Findings;

/// The kind a whole secret file's contents are named by.
pub const SECRET_FILE: &str = "secret-file";
/// The kind a whole secret-printing command's output is named by.
pub const SECRET_OUTPUT: &str = "secret-command-output";

/// The placeholder that replaces a whole output of `kind`.
pub fn placeholder(kind: &str) -> String {
    format!("{PLACEHOLDER_START}{kind}]")
}

/// A name that names a secret (`DB_PASSWORD`, `api_token`, `SECRET_KEY_BASE`).
/// (`$PWD`, `$AUTHOR` and `$SSH_AUTH_SOCK` are not.)
const SECRET_NAME: &str = r"(?:[A-Za-z0-9_]*(?i:passw(?:or)?d|passwd|passphrase|secret|token|api_?key|apikey|private_?key|access_?key|credentials?)[A-Za-z0-9_]*|[A-Za-z0-9]+_(?i:pass|pwd|key|pat)\b)";

/// Commands whose output is a secret (see the module doc).
fn printing_commands() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        let name = SECRET_NAME;
        let pattern = [
            format!(r"\bprintenv[ \t]+{name}"),
            format!(r#"\b(?:echo|printf)\b[^|;&\n]*?["']?\$\{{?{name}"#),
            format!(r"\bheroku[ \t]+config:get[ \t]+(?:-a[ \t]+\S+[ \t]+)?{name}"),
            format!(r"\bterraform[ \t]+output[ \t]+(?:-[a-z]+[ \t]+)*{name}"),
            format!(r"\baws[ \t]+configure[ \t]+get[ \t]+{name}"),
            r"\bkubectl\b[^;&\n]*\bsecrets?\b[^;&\n]*\|[ \t]*base64[ \t]+(?:-d|--decode|-D)\b".into(),
            r"\bkubectl\b[^;&\n]*\bsecrets?\b[^;&\n]*base64decode".into(),
            r"\bkubectl[ \t]+(?:view-secret|create[ \t]+token)\b".into(),
            r"\bauth:token\b".into(),
            r"\bgh[ \t]+auth[ \t]+token\b".into(),
            r"\bgcloud[ \t]+auth[ \t]+(?:application-default[ \t]+)?print-(?:access|identity)-token\b".into(),
            r"\bgcloud[ \t]+secrets[ \t]+versions[ \t]+access\b".into(),
            r"\baz[ \t]+account[ \t]+get-access-token\b".into(),
            r"\baz[ \t]+keyvault[ \t]+secret[ \t]+show\b".into(),
            r"\baws[ \t]+ecr[ \t]+get-login-password\b".into(),
            r"\baws[ \t]+secretsmanager[ \t]+get-secret-value\b".into(),
            r"\baws[ \t]+ssm[ \t]+get-parameters?\b[^;&\n]*--with-decryption".into(),
            r"\bvault[ \t]+(?:kv[ \t]+get|read|token[ \t]+create|write[ \t]+\S*auth)\b".into(),
            r"\bop[ \t]+(?:read|item[ \t]+get)\b".into(),
            r"\bsecurity[ \t]+find-(?:generic|internet)-password\b[^;&\n]*[ \t]-w\b".into(),
            r"\bsecret-tool[ \t]+lookup\b".into(),
            r"\bbw[ \t]+get[ \t]+(?:password|item|notes)\b".into(),
            r"\blpass[ \t]+show\b".into(),
            r"\bpass[ \t]+show\b".into(),
            r"\bsops[ \t]+(?:[^;&\n|]*[ \t])?(?:-d|--decrypt|decrypt)\b".into(),
            r"\bansible-vault[ \t]+(?:view|decrypt)\b".into(),
            r"\bwg[ \t]+(?:show\b[^;&\n|]*private-key|genkey|genpsk)\b".into(),
            r"\bopenssl[ \t]+rand\b".into(),
            r"\bpwgen\b".into(),
            r"\bnpm[ \t]+token[ \t]+create\b".into(),
            r"\bdoppler[ \t]+secrets[ \t]+(?:get|download)\b".into(),
        ]
        .join("|");
        Regex::new(&pattern).ok()
    })
    .as_ref()
}

/// Commands that print a file they are given (the first word of a simple
/// command).
const FILE_PRINTERS: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "batcat",
    "nl",
    "strings",
    "xxd",
    "od",
    "base64",
    "type",
    "gc",
    "get-content",
    "sed",
    "awk",
    "grep",
    "rg",
    "jq",
    "yq",
    "column",
    "cut",
    "sort",
    "openssl",
    "gpg",
    "sops",
];

/// `command` without the bodies of its here-documents (`cat <<'EOF'` …
/// `EOF`): a commit message or a file written inline is text, not a
/// command, and names no file a command prints.
fn without_heredocs(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut rest = command;
    while let Some(at) = rest.find("<<") {
        let after = &rest[at + 2..];
        let tag: String = after
            .trim_start_matches(['-', '~'])
            .trim_start()
            .trim_start_matches(['\'', '"'])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        out.push_str(&rest[..at + 2]);
        let Some(line_end) = after.find('\n') else {
            out.push_str(after);
            return out;
        };
        out.push_str(&after[..line_end]);
        if tag.is_empty() {
            rest = &after[line_end..];
            continue;
        }
        // The body ends at a line that is the tag alone.
        let body = &after[line_end..];
        let end = body
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .find(|&i| body[i..].lines().next().is_some_and(|l| l.trim() == tag));
        match end {
            Some(i) => rest = &body[i + tag.len()..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// The files the commands of `plain` (a command line without its
/// here-documents) print: the arguments (not flags) of each simple command
/// whose first word is a file printer.
fn printed_files(plain: &str) -> Vec<String> {
    let mut files = Vec::new();
    for segment in plain.split(['\n', ';', '|', '&']) {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'', '`', '(', ')', '$']))
            .filter(|w| !w.is_empty())
            .skip_while(|w| *w == "sudo" || w.contains('='));
        let Some(first) = words.next() else { continue };
        let first = first.rsplit('/').next().unwrap_or(first).to_lowercase();
        if FILE_PRINTERS.contains(&first.as_str()) {
            files.extend(
                words
                    .filter(|w| !w.starts_with(['-', '<', '>']))
                    .map(str::to_string),
            );
        }
    }
    files
}

/// Whether `path` is a file that holds secrets (see the module doc).
pub fn is_secret_file(path: &str) -> bool {
    let path = path.trim().trim_matches(['"', '\'', '`']);
    let lower = path.to_lowercase().replace('\\', "/");
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    if name.is_empty()
        || ["example", "sample", "template", ".dist", ".pub"]
            .iter()
            .any(|w| name.contains(w))
        || [
            ".md", ".rs", ".py", ".go", ".ts", ".js", ".rb", ".java", ".sh",
        ]
        .iter()
        .any(|e| name.ends_with(e))
    {
        return false;
    }
    let by_extension = [
        ".key",
        ".pem",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".ppk",
        ".kdbx",
    ]
    .iter()
    .any(|e| name.ends_with(e));
    let by_name = matches!(
        name,
        "master.key"
            | ".netrc"
            | "_netrc"
            | ".pgpass"
            | "pgpass.conf"
            | ".git-credentials"
            | ".htpasswd"
            | "id_rsa"
            | "id_dsa"
            | "id_ecdsa"
            | "id_ed25519"
            | "secrets.yml"
            | "secrets.yaml"
            | "secrets.json"
            | "secrets.env"
            | ".secrets"
            | "cookies"
            | "cookiejar"
            | "cookie-jar"
            | "cookie_jar"
    ) || name.starts_with("credentials")
        || name.starts_with(".vault_pass")
        || name.starts_with("vault_pass")
        || name.starts_with(".vault-pass")
        || name.starts_with(".vault_password")
        || (name.contains("cookie") && (name.ends_with(".txt") || name.contains("jar")))
        || ((name.contains("service-account") || name.contains("service_account"))
            && name.ends_with(".json"))
        || name.ends_with("-key.json")
        || name.ends_with("_key.json");
    let by_place = lower.ends_with("/etc/shadow")
        || lower.ends_with("/etc/gshadow")
        || (lower.contains("/wireguard/") && name.ends_with(".conf"))
        || lower.ends_with(".docker/config.json");
    by_extension || by_name || by_place
}

/// Whether `command` (a shell command line) prints a secret: a printing
/// command of the module doc, or a file printer given a secret's file.
pub fn prints_secrets(command: &str) -> bool {
    let plain = without_heredocs(command);
    if printing_commands().is_some_and(|re| re.is_match(&plain)) {
        return true;
    }
    printed_files(&plain).iter().any(|f| is_secret_file(f))
}

/// A tool call's command line, in the spellings agents use (`command`,
/// `cmd`, `script`; a list of words as Codex writes it).
fn command_of(input: &Value) -> Option<String> {
    for key in ["command", "cmd", "script"] {
        match input.get(key) {
            Some(Value::String(s)) => return Some(s.clone()),
            Some(Value::Array(words)) => {
                return Some(
                    words
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
            _ => {}
        }
    }
    None
}

/// The file a tool call reads or writes (`file_path`, `path`, `filePath`,
/// `notebook_path`).
fn path_of(input: &Value) -> Option<&str> {
    ["file_path", "path", "filePath", "notebook_path", "file"]
        .iter()
        .find_map(|key| input.get(key).and_then(Value::as_str))
}

/// Whether a tool writes files rather than reads them.
fn writes(tool: &str) -> bool {
    let tool = tool.to_ascii_lowercase();
    [
        "write",
        "edit",
        "multiedit",
        "create",
        "str_replace",
        "apply_patch",
        "notebookedit",
    ]
    .iter()
    .any(|w| tool.contains(w))
}

/// Why the output of the call of `tool` with `input` is a secret as a whole:
/// the kind its placeholder names, or `None`.
pub fn secret_output(tool: &str, input: &Value) -> Option<&'static str> {
    if let Some(command) = command_of(input) {
        if prints_secrets(&command) {
            return Some(SECRET_OUTPUT);
        }
    }
    match path_of(input) {
        Some(path) if !writes(tool) && is_secret_file(path) => Some(SECRET_FILE),
        _ => None,
    }
}

/// Whether the call of `tool` with `input` writes a secret's file: what it
/// writes is a secret as a whole.
pub fn writes_secret_file(tool: &str, input: &Value) -> bool {
    writes(tool) && path_of(input).is_some_and(is_secret_file)
}

/// Whether an output judged secret as a whole holds nothing secret after
/// all: empty, an error, or (a secret's file) certificates and public keys
/// only.
pub fn keeps(kind: &str, output: &str) -> bool {
    let text = output.trim();
    if text.is_empty() || text.starts_with(PLACEHOLDER_START) {
        return true;
    }
    let errors = [
        "No such file",
        "does not exist",
        "Permission denied",
        "EISDIR",
        "ENOENT",
        "not found",
        "Is a directory",
    ];
    if text.len() < 400 && errors.iter().any(|e| text.contains(e)) {
        return true;
    }
    kind == SECRET_FILE
        && !text.contains("PRIVATE KEY")
        && (text.contains("BEGIN CERTIFICATE") || text.contains("BEGIN PUBLIC KEY"))
}

/// Keys of a structured tool result that name where it came from, not what
/// it holds: kept when the rest is replaced.
const KEPT_KEYS: &[&str] = &[
    "filePath",
    "file_path",
    "path",
    "type",
    "numLines",
    "startLine",
    "totalLines",
    "interrupted",
    "isImage",
    "returnCodeInterpretation",
    "exitCode",
    "exit_code",
    "durationMs",
    "truncated",
];

/// Replaces every string of a structured tool result (`toolUseResult`) with
/// `kind`'s placeholder, but those naming where it came from; how many.
pub fn seal_value(value: &mut Value, kind: &str) -> u64 {
    match value {
        Value::String(s) => {
            if keeps(kind, s) {
                0
            } else {
                *s = placeholder(kind);
                1
            }
        }
        Value::Array(items) => items.iter_mut().map(|v| seal_value(v, kind)).sum(),
        Value::Object(map) => map
            .iter_mut()
            .filter(|(k, _)| !KEPT_KEYS.contains(&k.as_str()))
            .map(|(_, v)| seal_value(v, kind))
            .sum(),
        _ => 0,
    }
}

/// Replaces what a call writes into a secret's file (`content`,
/// `new_string`, each edit's `new_string`, `new_source`) with the
/// placeholder; how many values.
pub fn seal_written(input: &mut Value) -> u64 {
    let mut sealed = 0;
    let Some(map) = input.as_object_mut() else {
        return 0;
    };
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("content" | "new_string" | "new_source" | "text" | "file_text", Value::String(s))
                if !keeps(SECRET_FILE, s) =>
            {
                *s = placeholder(SECRET_FILE);
                sealed += 1;
            }
            ("edits", Value::Array(edits)) => {
                sealed += edits.iter_mut().map(seal_written).sum::<u64>();
            }
            _ => {}
        }
    }
    sealed
}

/// Pairs the tool calls and tool results held as content blocks anywhere in
/// `values` (records being added: `{"type": "tool_use", "id", "name",
/// "input"}`, `{"type": "tool_result", "tool_use_id", "content"}`), and
/// replaces whole the results of calls whose output is a secret and what
/// calls write into secrets' files. What it replaced is counted in the
/// returned findings.
pub fn seal_blocks(values: &mut [&mut Value]) -> Findings {
    let calls = secret_calls(values.iter().map(|v| &**v));
    let mut found = Findings::default();
    for value in values.iter_mut() {
        found.absorb(&seal_with(value, &calls));
    }
    found
}

/// The tool calls held as content blocks in `values` whose output is a
/// secret as a whole: (call id, kind).
pub fn secret_calls<'v>(values: impl Iterator<Item = &'v Value>) -> Vec<(String, &'static str)> {
    let mut calls = Vec::new();
    for value in values {
        collect_calls(value, &mut calls);
    }
    calls
}

/// Seals one value's blocks against `calls` (see [`seal_blocks`]); a copy
/// of a sealed output elsewhere in the value (a message record's `text`
/// repeats its tool result) is replaced too.
pub fn seal_with(value: &mut Value, calls: &[(String, &'static str)]) -> Findings {
    seal_collect(value, calls).0
}

/// [`seal_with`], also giving the outputs it sealed (their trimmed text and
/// kind), so that copies of them elsewhere can be replaced
/// ([`replace_copies`]).
pub fn seal_collect(
    value: &mut Value,
    calls: &[(String, &'static str)],
) -> (Findings, Vec<(String, &'static str)>) {
    let mut found = Findings::default();
    let mut sealed = Vec::new();
    seal_in(value, calls, &mut found, &mut sealed);
    if !sealed.is_empty() {
        replace_copies(value, &sealed);
    }
    found.kinds.retain(|_, n| *n > 0);
    (found, sealed)
}

/// Replaces every copy of a sealed output (its trimmed text, 4 bytes or
/// more) in the strings of `value` with the output's placeholder.
pub fn replace_copies(value: &mut Value, sealed: &[(String, &'static str)]) {
    match value {
        Value::String(s) => {
            for (original, kind) in sealed {
                if original.len() >= 4 && s.contains(original.as_str()) {
                    *s = s.replace(original.as_str(), &placeholder(kind));
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_copies(v, sealed)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_copies(v, sealed)),
        _ => {}
    }
}

/// The strings of a value (but the kept keys'), trimmed.
fn strings_of(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.trim().to_string()),
        Value::Array(items) => items.iter().for_each(|v| strings_of(v, out)),
        Value::Object(map) => map
            .iter()
            .filter(|(k, _)| !KEPT_KEYS.contains(&k.as_str()))
            .for_each(|(_, v)| strings_of(v, out)),
        _ => {}
    }
}

fn collect_calls(value: &Value, calls: &mut Vec<(String, &'static str)>) {
    match value {
        Value::Object(map) => {
            if map.get("type").and_then(Value::as_str) == Some("tool_use") {
                let (id, name) = (
                    map.get("id").and_then(Value::as_str),
                    map.get("name").and_then(Value::as_str).unwrap_or(""),
                );
                if let (Some(id), Some(input)) = (id, map.get("input")) {
                    if let Some(kind) = secret_output(name, input) {
                        calls.push((id.to_string(), kind));
                    }
                }
            }
            map.values().for_each(|v| collect_calls(v, calls));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_calls(v, calls)),
        _ => {}
    }
}

fn seal_in(
    value: &mut Value,
    calls: &[(String, &'static str)],
    found: &mut Findings,
    sealed: &mut Vec<(String, &'static str)>,
) {
    match value {
        Value::Object(map) => {
            let kind = match map.get("type").and_then(Value::as_str) {
                Some("tool_result") => map
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.iter().find(|(c, _)| c == id))
                    .map(|(_, kind)| *kind),
                Some("tool_use") => {
                    let name = map
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    if let Some(input) = map.get_mut("input") {
                        if writes_secret_file(&name, input) {
                            let n = seal_written(input);
                            *found.kinds.entry(SECRET_FILE.into()).or_default() += n;
                        }
                    }
                    None
                }
                _ => None,
            };
            match kind {
                Some(kind) => {
                    if let Some(content) = map.get_mut("content") {
                        let mut originals = Vec::new();
                        strings_of(content, &mut originals);
                        let n = seal_value(content, kind);
                        if n > 0 {
                            sealed.extend(
                                originals
                                    .into_iter()
                                    .filter(|o| !keeps(kind, o))
                                    .map(|o| (o, kind)),
                            );
                        }
                        *found.kinds.entry(kind.into()).or_default() += n;
                    }
                }
                None => map
                    .values_mut()
                    .for_each(|v| seal_in(v, calls, found, sealed)),
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| seal_in(v, calls, found, sealed)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_that_print_secrets() {
        for command in [
            "printenv DB_PASSWORD",
            "echo $API_TOKEN",
            "echo \"${STRIPE_SECRET_KEY}\"",
            "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d",
            "kubectl -n prod get secrets app -o go-template='{{.data.token|base64decode}}'",
            "heroku auth:token",
            "gh auth token",
            "gcloud auth print-access-token",
            "sudo wg show wg0 private-key",
            "wg genkey | tee privatekey",
            "terraform output -raw db_password",
            "vault kv get secret/prod/db",
            "aws secretsmanager get-secret-value --secret-id prod/db",
            "cat ~/.vault_pass.txt",
            "head -3 config/master.key",
            "sudo cat /etc/wireguard/wg0.conf",
            "cat ~/.pgpass",
            "Get-Content C:\\Users\\ann\\credentials.json",
        ] {
            assert!(prints_secrets(command), "{command}");
        }
        for command in [
            "printenv",
            "printenv PATH",
            "echo $HOME",
            "kubectl get secrets",
            "terraform output",
            "cat README.md",
            "cat id_ed25519.pub",
            "cat .env.example",
            "ls ~/.ssh",
            "vault status",
            "grep -r token src/",
            // Seen in the real sessions (issue 52's scan): words of a
            // pattern or of a here-document are no files.
            "go test ./... 2>&1 | grep -E \"Phase|StepCount|shadow|FAIL\"",
            "git branch -a | grep \"entire/\" || echo \"Shadow branch not found\"",
            "git commit -m \"$(cat <<'EOF'\nFix the shadow branch and the credentials check\nEOF\n)\"",
            "cat >> notes.md << 'EOF'\nrotate master.key and cookies.txt\nEOF",
        ] {
            assert!(!prints_secrets(command), "{command}");
        }
    }

    #[test]
    fn secret_files_by_name() {
        for path in [
            "/app/config/master.key",
            "server.key",
            "tls/privkey.pem",
            "/home/ann/.netrc",
            "~/.vault_pass.txt",
            "cookies.txt",
            "/tmp/cookie-jar",
            "~/.aws/credentials",
            "credentials.yml.enc",
            "gcp-service-account.json",
            "/etc/shadow",
            "id_rsa",
        ] {
            assert!(is_secret_file(path), "{path}");
        }
        for path in [
            "id_rsa.pub",
            "src/keys.rs",
            "credentials.example.json",
            "README.md",
            "key.txt",
        ] {
            assert!(!is_secret_file(path), "{path}");
        }
    }

    #[test]
    fn blocks_are_paired_and_sealed() {
        let mut call = json!({"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
            "input": {"command": "printenv DB_PASSWORD"}}]});
        let mut result = json!({"content": [{"type": "tool_result", "tool_use_id": "t1",
            "content": "hunter2-but-longer"}]});
        let mut other = json!({"content": [{"type": "tool_result", "tool_use_id": "t2",
            "content": "ordinary output"}]});
        let found = seal_blocks(&mut [&mut call, &mut result, &mut other]);
        assert_eq!(found.kinds.get(SECRET_OUTPUT), Some(&1));
        assert_eq!(
            result["content"][0]["content"],
            "[REDACTED secret-command-output]"
        );
        assert_eq!(other["content"][0]["content"], "ordinary output");
        let mut write = json!({"type": "tool_use", "id": "t3", "name": "Write",
            "input": {"file_path": "config/master.key", "content": "0123abcd"}});
        seal_blocks(&mut [&mut write]);
        assert_eq!(write["input"]["content"], "[REDACTED secret-file]");
        assert_eq!(write["input"]["file_path"], "config/master.key");
    }

    #[test]
    fn certificates_and_errors_are_kept() {
        assert!(keeps(
            SECRET_FILE,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"
        ));
        assert!(keeps(
            SECRET_FILE,
            "cat: /x/master.key: No such file or directory"
        ));
        assert!(!keeps(SECRET_FILE, "9f8e7d6c5b4a39281706f5e4d3c2b1a0"));
    }
}
