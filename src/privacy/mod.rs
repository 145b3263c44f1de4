//! Privacy: secrets never stored, private spans dropped.
//!
//! An agent's transcripts hold whatever passed through its terminal: `env`
//! dumps, `.env` files it read, `Authorization` headers, keys pasted into a
//! prompt. Every write path of the store sends its text through one
//! [`Redactor`] before anything reaches disk ([`redact_record`] for records,
//! [`redact_value`] for any other JSON), which does two things:
//!
//! 1. **`<private>…</private>` spans are dropped**, tags and all, in any case
//!    and across lines; nested spans count as one, and an opening tag that is
//!    never closed drops everything after it (safer than keeping it). This
//!    happens first, and even when secret redaction is turned off.
//! 2. **Secrets become placeholders** that name their kind,
//!    `[REDACTED github-pat]`: never a mask like `***` that a model could
//!    replay as a value. Only the secret goes: in `API_KEY=sk-…` the name
//!    stays, `API_KEY=[REDACTED openai-api-key]`. The rules are gitleaks'
//!    default set ([`GITLEAKS_VERSION`], vendored, MIT) plus knowledge-db's
//!    own for what transcripts hold and gitleaks leaves out (credentials in
//!    URLs, `Authorization` headers, short passwords, truncated private keys):
//!    see `rules`. A rule's regex is compiled the first time one of its
//!    keywords appears, so text that names none costs one Aho-Corasick pass.
//!
//! Redacting is idempotent: a placeholder is never redacted again. No
//! pattern list is complete: a secret of a format no rule knows, or split
//! across two texts, is stored as written.
//!
//! The settings are the `[privacy]` table of the store's `config.toml`
//! ([`PrivacySettings`]): extra patterns of the user's, and values or
//! patterns never to redact.

mod card;
mod decoded;
mod mnemonic;
mod normalize;
mod private;
pub mod provenance;
mod rules;
mod scan;
mod structured;
mod syntax;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::record::Record;
use rules::{Allowlist, Prefilter, Rule};
use scan::{Allowed, Hit, Scanner};

pub use rules::GITLEAKS_VERSION;

/// `[privacy]` of `config.toml`.
///
/// ```toml
/// [privacy]
/// redact = true                      # secrets -> [REDACTED kind]; <private> spans are dropped either way
/// allow = ["pk_test_TYooMQauvdEDq54NiTphI7jx"]   # literal values never redacted
/// allow_patterns = ['''^AKIA[A-Z0-9]{12}EXAMPLE$''']  # regexes of values never redacted
///
/// [[privacy.extra_patterns]]
/// name = "acme-token"                # the placeholder reads [REDACTED acme-token]
/// regex = '''acme_[a-z0-9]{32}'''
/// keywords = ["acme_"]               # optional: run the regex only on text holding one
/// secret_group = 1                   # optional: redact only this capture group
/// entropy = 3.0                      # optional: ignore values this random or less
/// ```
///
/// Regexes are in gitleaks' (RE2) syntax, as in gitleaks' own rules: `\w`,
/// `\d`, `\s` and `\b` are ASCII.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PrivacySettings {
    /// Replace secrets with placeholders (default `true`). `<private>` spans
    /// are dropped whatever this says.
    pub redact: bool,
    /// The user's own secret formats, redacted like the built-in ones.
    pub extra_patterns: Vec<ExtraPattern>,
    /// Literal values never redacted (e.g. a public test key): a finding that
    /// lies inside an occurrence of one is left alone.
    pub allow: Vec<String>,
    /// Regexes of values never redacted: a finding whose secret one of them
    /// matches (anywhere: anchor with `^…$` to match the whole) is left alone.
    pub allow_patterns: Vec<String>,
}

impl Default for PrivacySettings {
    fn default() -> Self {
        PrivacySettings {
            redact: true,
            extra_patterns: Vec::new(),
            allow: Vec::new(),
            allow_patterns: Vec::new(),
        }
    }
}

/// One `[[privacy.extra_patterns]]` entry: a secret format of the user's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPattern {
    /// The kind, as the placeholder names it: letters, digits, `-`, `_`, `.`.
    pub name: String,
    /// The regex (gitleaks' RE2 syntax).
    pub regex: String,
    /// Redact only this capture group (default: the first group that
    /// matched, else the whole match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_group: Option<usize>,
    /// Run the regex only on text holding one of these words (any case);
    /// none: on every text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// A value whose Shannon entropy is not above this is left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entropy: Option<f64>,
}

/// What a redaction replaced: how many values of each kind, and how many
/// private spans it dropped.
#[derive(Default, Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Findings {
    /// Values replaced, by kind (the rule id the placeholder names).
    pub kinds: BTreeMap<String, u64>,
    /// `<private>` spans dropped.
    pub private_spans: u64,
}

impl Findings {
    /// Adds `other`'s counts to these.
    pub fn absorb(&mut self, other: &Findings) {
        for (kind, count) in &other.kinds {
            *self.kinds.entry(kind.clone()).or_default() += count;
        }
        self.private_spans += other.private_spans;
    }

    /// Values replaced plus spans dropped.
    pub fn total(&self) -> u64 {
        self.kinds.values().sum::<u64>() + self.private_spans
    }

    /// Whether nothing was replaced or dropped.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

impl fmt::Display for Findings {
    /// `3 secrets redacted (2 github-pat, 1 generic-api-key), 1 private span dropped`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secrets: u64 = self.kinds.values().sum();
        let plural = |n: u64| if n == 1 { "" } else { "s" };
        write!(f, "{secrets} secret{} redacted", plural(secrets))?;
        if secrets > 0 {
            let kinds: Vec<String> = self
                .kinds
                .iter()
                .map(|(kind, n)| format!("{n} {kind}"))
                .collect();
            write!(f, " ({})", kinds.join(", "))?;
        }
        write!(
            f,
            ", {} private span{} dropped",
            self.private_spans,
            plural(self.private_spans)
        )
    }
}

/// One secret in a text: its kind and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSpan {
    /// The rule id the placeholder would name.
    pub kind: String,
    /// Its byte range in the text.
    pub range: std::ops::Range<usize>,
}

/// A text after redaction, and what was replaced in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Redacted<'a> {
    /// The redacted text (borrowed when nothing changed).
    pub text: Cow<'a, str>,
    /// What was replaced or dropped.
    pub found: Findings,
}

/// The built-in rules, parsed once per process and shared by every redactor.
struct Builtin {
    rules: Vec<Rule>,
    /// gitleaks' global allowlist, which every rule obeys (the user's too).
    allowlists: Vec<Allowlist>,
    prefilter: Prefilter,
}

fn builtin_rules() -> std::result::Result<&'static Builtin, &'static str> {
    static BUILTIN: OnceLock<std::result::Result<Builtin, String>> = OnceLock::new();
    BUILTIN
        .get_or_init(|| {
            let gitleaks = rules::parse("gitleaks.json", rules::GITLEAKS_RULES)?;
            let own = rules::parse("knowledge-db.toml", rules::OWN_RULES)?;
            let all = gitleaks.join(own)?;
            let prefilter = Prefilter::new(&all.rules);
            Ok(Builtin {
                rules: all.rules,
                allowlists: all.allowlists,
                prefilter,
            })
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Compiled redaction rules: the built-in set plus the user's settings.
/// Cheap to share between threads (`Send + Sync`); regexes compile on first
/// use and stay compiled.
pub struct Redactor {
    builtin: &'static Builtin,
    redact: bool,
    extra: Vec<Rule>,
    extra_prefilter: Prefilter,
    allowed: Allowed,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("redact", &self.redact)
            .field("builtin_rules", &self.builtin.rules.len())
            .field("extra_rules", &self.extra.len())
            .field("allowed_values", &self.allowed.values.len())
            .field("allowed_patterns", &self.allowed.patterns.len())
            .finish()
    }
}

/// A setting's error: `Error::Config` on `config.toml`, naming the key. The
/// caller that knows the store's folder may put the full path in.
fn setting_error(key: String, message: impl fmt::Display) -> Error {
    Error::Config {
        path: PathBuf::from("config.toml"),
        message: format!("{key}: {message}"),
    }
}

impl Redactor {
    /// The rules of `settings`: the built-in set, the extra patterns and the
    /// allow-list. An extra pattern or allow pattern that does not compile, or
    /// a bad name, is an [`Error::Config`] naming the key
    /// (`privacy.extra_patterns[0].regex: …`) against `config.toml`.
    pub fn new(settings: &PrivacySettings) -> Result<Redactor> {
        let builtin = builtin_rules().map_err(|e| Error::Config {
            path: PathBuf::from("src/privacy/rules"),
            message: format!("the built-in secret rules do not load: {e}"),
        })?;
        let mut extra = Vec::with_capacity(settings.extra_patterns.len());
        for (i, pattern) in settings.extra_patterns.iter().enumerate() {
            let key = |field: &str| format!("privacy.extra_patterns[{i}].{field}");
            let name_ok = !pattern.name.is_empty()
                && pattern
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
            if !name_ok {
                return Err(setting_error(
                    key("name"),
                    format!(
                        "`{}`: use letters, digits, `-`, `_` or `.` (it is shown as [REDACTED name])",
                        pattern.name
                    ),
                ));
            }
            if pattern.entropy.is_some_and(|e| !e.is_finite() || e < 0.0) {
                return Err(setting_error(
                    key("entropy"),
                    "must be a number of 0 or more",
                ));
            }
            let rule = Rule::extra(
                &pattern.name,
                &pattern.regex,
                pattern.secret_group,
                pattern.entropy,
                &pattern.keywords,
            );
            extra.push(rule.map_err(|e| {
                let field = if e.starts_with("secret_group") {
                    "secret_group"
                } else {
                    "regex"
                };
                setting_error(key(field), e)
            })?);
        }
        let patterns = settings
            .allow_patterns
            .iter()
            .enumerate()
            .map(|(i, p)| {
                rules::compile(&syntax::go_to_rust(p))
                    .map_err(|e| setting_error(format!("privacy.allow_patterns[{i}]"), e))
            })
            .collect::<Result<Vec<_>>>()?;
        let extra_prefilter = Prefilter::new(&extra);
        Ok(Redactor {
            builtin,
            redact: settings.redact,
            extra,
            extra_prefilter,
            allowed: Allowed {
                values: settings.allow.clone(),
                patterns,
            },
        })
    }

    /// The redactor of the default settings, built once per process.
    pub fn builtin() -> &'static Redactor {
        static DEFAULT: OnceLock<Redactor> = OnceLock::new();
        DEFAULT.get_or_init(|| {
            // The built-in rules are part of the binary and the rule tests
            // load every one of them: failing here is a build defect.
            Redactor::new(&PrivacySettings::default())
                .expect("the built-in secret rules load (tested by privacy::rules)")
        })
    }

    /// `text` with its private spans dropped and its secrets replaced by
    /// placeholders; borrowed when nothing changed.
    pub fn redact<'a>(&self, text: &'a str) -> Redacted<'a> {
        let (text, private_spans) = private::strip(text);
        let mut found = Findings {
            private_spans,
            ..Findings::default()
        };
        if !self.redact {
            return Redacted { text, found };
        }
        let hits = self.hits(&text);
        let text = scan::replace(text, &hits, &mut found);
        Redacted { text, found }
    }

    /// The secrets of `text`, merged, in text order: what the rules find in
    /// it as written, in its normalised view (nested escapes undone,
    /// invisible characters and line breaks inside vendor tokens taken out:
    /// `normalize`), and the base64 values of a Kubernetes Secret that hold
    /// one (`decoded`).
    fn hits(&self, text: &str) -> Vec<Hit<'_>> {
        let mut hits = self.scanner(text).raw_hits(text);
        if let Some(view) = normalize::view(text) {
            let placeholders = scan::placeholder_spans(text);
            for mut hit in self.scanner(&view.text).raw_hits(&view.text) {
                hit.span = view.original(&hit.span);
                let clear = !placeholders
                    .iter()
                    .any(|p| p.start < hit.span.end && hit.span.start < p.end);
                if !hit.span.is_empty() && clear {
                    hits.push(hit);
                }
            }
        }
        // Values known by their shape or by the structure around them,
        // checked by code rather than a regex (see each module).
        let shaped = [
            (mnemonic::find(text), "bip39-mnemonic", 0),
            (card::find(text), "card-number", 0),
            (
                structured::find_both(text, structured::yaml_block_scalars),
                "yaml-block-secret",
                1,
            ),
            (
                structured::find_both(text, structured::table_cells),
                "table-secret-column",
                1,
            ),
        ];
        let placeholders = scan::placeholder_spans(text);
        for (spans, id, rank) in shaped {
            for span in spans {
                if !placeholders
                    .iter()
                    .any(|p| p.start < span.end && span.start < p.end)
                {
                    hits.push(Hit { span, id, rank });
                }
            }
        }
        for value in decoded::data_values(text) {
            if value.secret_key
                || !self
                    .scanner(&value.decoded)
                    .raw_hits(&value.decoded)
                    .is_empty()
            {
                hits.push(Hit {
                    span: value.range,
                    id: "kubernetes-secret-data",
                    rank: 1,
                });
            }
        }
        scan::merge(hits)
    }

    /// Where the secrets of `text` are and what kind each is, in text order,
    /// without changing it (for reports and reviews; `<private>` tags are not
    /// looked at). With `redact = false`, none.
    pub fn find(&self, text: &str) -> Vec<SecretSpan> {
        if !self.redact {
            return Vec::new();
        }
        self.hits(text)
            .into_iter()
            .map(|hit| SecretSpan {
                kind: hit.id.to_string(),
                range: hit.span,
            })
            .collect()
    }

    /// The rules `text` wakes, with what they obey.
    fn scanner(&self, text: &str) -> Scanner<'_> {
        let builtin = self.builtin;
        Scanner {
            groups: vec![
                (
                    &builtin.rules[..],
                    builtin.prefilter.woken(text, builtin.rules.len()),
                ),
                (
                    &self.extra[..],
                    self.extra_prefilter.woken(text, self.extra.len()),
                ),
            ],
            global: &builtin.allowlists,
            allowed: &self.allowed,
        }
    }

    /// Redacts `text` in place; what was replaced.
    pub fn redact_string(&self, text: &mut String) -> Findings {
        let Redacted { text: out, found } = self.redact(text);
        if let Cow::Owned(out) = out {
            *text = out;
        }
        found
    }
}

/// Redacts every string of a JSON value in place, recursively, object keys
/// included (a secret used as a key: `{"ghp_…": "ci"}`); what was replaced.
/// For hook state, queue entries, logs.
pub fn redact_value(redactor: &Redactor, value: &mut Value) -> Findings {
    let mut found = Findings::default();
    walk(redactor, value, &mut found);
    found
}

/// Keys shorter than this are names, never a secret: they are not scanned
/// (a record's JSON has many short keys; the shortest vendor token is longer).
const SHORTEST_SECRET_KEY: usize = 12;

/// Whether an object key is worth scanning: long enough for a secret, and
/// not a name of letters and underscores (`tool_use_result`, `isSidechain`).
fn may_be_secret_key(key: &str) -> bool {
    key.len() >= SHORTEST_SECRET_KEY && !key.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_')
}

fn walk(redactor: &Redactor, value: &mut Value, found: &mut Findings) {
    match value {
        Value::String(text) => found.absorb(&redactor.redact_string(text)),
        Value::Array(items) => items.iter_mut().for_each(|v| walk(redactor, v, found)),
        Value::Object(map) => {
            map.values_mut().for_each(|v| walk(redactor, v, found));
            let secret_keys = map
                .keys()
                .any(|k| may_be_secret_key(k) && redactor.redact(k).found.total() > 0);
            if secret_keys {
                let old = std::mem::take(map);
                for (mut key, v) in old {
                    if may_be_secret_key(&key) {
                        found.absorb(&redactor.redact_string(&mut key));
                    }
                    map.insert(key, v);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Redacts a record before it is stored: every string of its JSON
/// (`record.source`, recursively, object keys too) and its `context`,
/// then re-derives its searchable fields from the redacted JSON, so the text
/// index, the stored JSON, the embedding text and everything after see only
/// the redacted text. Returns what it replaced.
///
/// The id, namespace and `context_from` mirror fields of the JSON: they are
/// redacted the same way (deterministically, so the same input keeps the same
/// id) but not counted again. A context at its length limit loses the word it
/// was cut in (it may be the first part of a secret); redact records before
/// their contexts are cut and linked, so that nothing is cut mid-secret.
pub fn redact_record(redactor: &Redactor, record: &mut Record) -> Findings {
    redact_record_sealed(redactor, record, Findings::default())
}

/// Redacts records added together (`add`, MCP `memory_add`, sync): first the
/// tool results that are secrets by their call, paired across the records
/// ([`provenance::seal_blocks`]), with every copy of such an output in the
/// records' other strings and contexts (a reply carries its prompt), then
/// each record as [`redact_record`] does.
pub fn redact_records(redactor: &Redactor, records: &mut [Record]) -> Findings {
    let mut sealed_by_record = vec![Findings::default(); records.len()];
    if redactor.redact {
        let calls = provenance::secret_calls(records.iter().map(|r| &r.source));
        let mut outputs = Vec::new();
        for (record, found) in records.iter_mut().zip(&mut sealed_by_record) {
            let (sealed, originals) = provenance::seal_collect(&mut record.source, &calls);
            *found = sealed;
            outputs.extend(originals);
        }
        if !outputs.is_empty() {
            for (record, found) in records.iter_mut().zip(&mut sealed_by_record) {
                let before = record.source.clone();
                provenance::replace_copies(&mut record.source, &outputs);
                let mut context = record.context.take().map(Value::String);
                if let Some(c) = context.as_mut() {
                    provenance::replace_copies(c, &outputs);
                }
                record.context = context.and_then(|c| c.as_str().map(str::to_string));
                if found.is_empty() && record.source != before {
                    // Re-derive its fields below: they hold the output.
                    found.kinds.insert(provenance::SECRET_OUTPUT.to_string(), 0);
                }
            }
        }
    }
    let mut found = Findings::default();
    for (record, sealed) in records.iter_mut().zip(sealed_by_record) {
        found.absorb(&redact_record_sealed(redactor, record, sealed));
    }
    found.kinds.retain(|_, n| *n > 0);
    found
}

/// [`redact_record`] of a record whose source `sealed` already changed (its
/// fields are derived again whenever `sealed` names a kind).
fn redact_record_sealed(redactor: &Redactor, record: &mut Record, sealed: Findings) -> Findings {
    let mut found = sealed;
    found.absorb(&redact_value(redactor, &mut record.source));
    if let Some(context) = &mut record.context {
        drop_cut_word(context);
        found.absorb(&redactor.redact_string(context));
    }
    if record
        .context
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        record.context = None;
    }
    redactor.redact_string(&mut record.id);
    redactor.redact_string(&mut record.namespace);
    if let Some(from) = &mut record.context_from {
        redactor.redact_string(from);
    }
    let changed = !found.kinds.is_empty() || found.private_spans > 0;
    found.kinds.retain(|_, n| *n > 0);
    if changed {
        match crate::record::parse::derive_fields(record.kind, &record.source) {
            Ok(fields) => record.fields = fields,
            // Redaction only swaps text for text, so the fields derive as
            // before; should they not, the old fields are redacted in place.
            Err(_) => redact_fields(redactor, &mut record.fields),
        }
    }
    found
}

/// A context cut at its length limit (`record::context::clip`) may end in the
/// first part of a secret, which no rule recognises any more: the word the
/// cut went through is dropped. Callers should redact before they cut (see
/// DESIGN.md); this is the safety net when they did not.
fn drop_cut_word(context: &mut String) {
    if context.chars().count() < crate::record::context::MAX_CONTEXT_CHARS {
        return;
    }
    let keep = context.rfind(char::is_whitespace).map_or(0, |at| {
        at + context[at..].chars().next().map_or(1, char::len_utf8)
    });
    context.truncate(keep);
}

fn redact_fields(redactor: &Redactor, fields: &mut crate::record::Fields) {
    redactor.redact_string(&mut fields.title);
    redactor.redact_string(&mut fields.content);
    let lists = [
        &mut fields.decisions,
        &mut fields.files,
        &mut fields.commands,
        &mut fields.errors,
    ];
    for list in lists {
        for item in list.iter_mut() {
            redactor.redact_string(item);
        }
    }
    if let Some(session) = &mut fields.session_id {
        redactor.redact_string(session);
    }
}
