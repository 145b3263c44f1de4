//! Secret rules in gitleaks' format, and how one rule judges a match.
//!
//! Two rule files are compiled into the binary: gitleaks' default
//! configuration (`rules/gitleaks.toml`, vendored unchanged, MIT,
//! [`GITLEAKS_VERSION`]) and knowledge-db's own additions for what agent
//! transcripts hold and gitleaks leaves out (`rules/knowledge-db.toml`).
//! Each rule is honoured as gitleaks honours it:
//! - `keywords`: the rule runs only on text holding one of them (any case);
//!   a rule without keywords always runs;
//! - `regex` (Go syntax, see `syntax`), compiled on first use, so a text
//!   that names no keyword costs no compilation;
//! - the secret is `secretGroup`, else the first capture group that matched
//!   something, else the whole match;
//! - `entropy`: a secret whose Shannon entropy is not above it is no secret;
//! - allowlists (the global one and the rule's): `regexes` against the secret,
//!   the match or the line (`regexTarget`), `stopwords` contained in the
//!   secret (any case), combined by `condition` (OR, or AND).
//!
//! Two changes to gitleaks' patterns, both for text that is not source code:
//! - about 150 of its rules require the secret to be followed by a quote, a
//!   space, `;` or an escaped newline (`(?:[\x60'"\s;]|\\[nr]|$)`). In
//!   transcripts a secret is as often followed by prose punctuation (`my key
//!   is sk-ant-….`), a table bar, a URL's `&`, or an escaped quote (`\"`),
//!   and would be missed; those rules also accept `.,:!?)]}>|&#<\` there
//!   ([`PROSE_END`]);
//! - about 100 rules find `name = value` with quotes and spaces around the
//!   operator; agents' tool calls are kept as JSON text, where those quotes
//!   are escaped (`{"command":"export API_KEY=\"…\""}`), so escaped
//!   quotes are accepted among them too ([`ESCAPED_QUOTES`]).
//!
//! Scanned text has no file path and no commit, so what depends on them
//! cannot apply: a rule with a `path` never runs (gitleaks would run it only
//! on files of that name: `hashicorp-tf-password`, `kubernetes-secret-yaml`,
//! `nuget-config-password`, `pkcs12-file`, `freemius-secret-key`), and an
//! allowlist entry that needs a path or a commit never holds. The
//! `gitleaks:allow` comment is not honoured: a transcript line carrying it is
//! still a secret reaching the store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::{Regex, RegexBuilder};
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::syntax::go_to_rust;

/// The gitleaks release `rules/gitleaks.toml` comes from (its header names
/// the commit); `scripts/update-secret-rules.sh` replaces the file.
pub const GITLEAKS_VERSION: &str = "v8.30.1";

/// gitleaks' default rules as the binary reads them: `rules/gitleaks.toml`
/// converted to JSON by the update script (serde_json reads it in a fifth of
/// the time toml takes, which a hook pays on its first use); a test checks
/// that both files hold the same data.
pub(crate) const GITLEAKS_RULES: &str = include_str!("rules/gitleaks.json");

/// gitleaks' default rules, as vendored (the source of `GITLEAKS_RULES`).
#[cfg(test)]
const GITLEAKS_TOML: &str = include_str!("rules/gitleaks.toml");

/// knowledge-db's own rules, in the same format (TOML, small).
pub(crate) const OWN_RULES: &str = include_str!("rules/knowledge-db.toml");

/// Rules that name a kind of place rather than a kind of key, and their
/// rank when two rules find overlapping values (a lower rank names the
/// placeholder). A rule not listed is a vendor's (rank 0): it always wins, so
/// `API_KEY=sk-ant-…` reads `[REDACTED anthropic-api-key]`. Rank 1 names the
/// place precisely (a URL's password, a header, a password assignment); rank
/// 2 is gitleaks' catch-all; rank 3 is ours, which backs it up (it also
/// catches what generic-api-key's stopwords or entropy let through).
const GENERAL_RULES: &[(&str, u8)] = &[
    ("curl-auth-header", 1),
    ("curl-auth-user", 1),
    ("authorization-header", 1),
    ("bearer-token", 1),
    ("url-password", 1),
    ("url-query-secret", 1),
    ("password-assignment", 1),
    ("private-key-fragment", 1),
    ("cookie", 1),
    ("password-flag", 1),
    ("netrc-password", 1),
    ("pgpass-password", 1),
    ("dsn-password", 1),
    ("basic-auth-pair", 1),
    ("base64-prefixed-key", 1),
    ("piped-password", 1),
    ("command-password", 1),
    ("vendor-token", 1),
    ("secret-tag", 1),
    ("secret-key-value", 1),
    ("secret-in-code", 1),
    ("password-prompt", 1),
    ("config-set-secret", 1),
    ("secret-setter", 1),
    ("secret-file-write", 1),
    ("terraform-sensitive-output", 1),
    ("aws-secret-in-prose", 1),
    ("secret-word-intl", 2),
    ("password-letters", 3),
    ("password-in-prose", 2),
    ("secret-in-prose", 2),
    ("password-as", 2),
    ("generic-api-key", 2),
    ("secret-assignment", 3),
];

/// A rule's rank (see [`GENERAL_RULES`]).
fn rank_of(id: &str) -> u8 {
    GENERAL_RULES
        .iter()
        .find(|(general, _)| *general == id)
        .map_or(0, |&(_, rank)| rank)
}

/// The end of a secret in ~150 of gitleaks' rules (Go syntax, as written there).
const CODE_END: &str = r#"(?:[\x60'"\s;]|\\[nr]|$)"#;

/// What knowledge-db accepts there instead: the same, plus prose punctuation,
/// a URL's `&` or `#`, a tag's `<`, a table's `|` and a backslash (an escaped
/// quote or newline in JSON held as text).
pub(crate) const PROSE_END: &str = r#"(?:[\x60'"\s;.,:!?)\]}>|&#<\\]|$)"#;

/// The quotes and spaces around the operator of gitleaks' `name = value`
/// rules, and the same with escaped quotes allowed (JSON held as text). Only a
/// backslash before a quote: one before `n` is an escaped line break, and
/// `KEY=\nOTHER=…` holds no value.
const ESCAPED_QUOTES: [(&str, &str); 2] = [
    (r#"[\s'"]{0,3}(?:="#, r#"(?:[\s'"]|\\{1,2}["']){0,3}(?:="#),
    (
        r#"[\x60'"\s=]{0,5}"#,
        r#"(?:[\x60'"\s=]|\\{1,2}["'\x60]){0,5}"#,
    ),
];

/// gitleaks' pattern as knowledge-db runs it (see the module doc).
fn for_transcripts(pattern: &str) -> String {
    let mut pattern = pattern.replace(CODE_END, PROSE_END);
    for (code, text) in ESCAPED_QUOTES {
        pattern = pattern.replace(code, text);
    }
    pattern
}

/// gitleaks allowlist patterns that mean a whole value but are not anchored
/// as one, and what knowledge-db runs instead. Unanchored, they let real
/// secrets go: `^true|false|null$` allows any secret that holds `false`
/// anywhere or ends in `null` (any case), and vault-service-token's
/// `s\.[A-Za-z]{24}` allows every `hvs.` token whose first 24 characters
/// happen to be letters (about 1 in 50). Found by the battery's random
/// values (tests/privacy_battery.rs).
const ANCHORED_ALLOWLIST: &[(&str, &str)] = &[
    (r"(?i)^true|false|null$", r"(?i)^(?:true|false|null)$"),
    (r"s\.[A-Za-z]{24}", r"^s\.[A-Za-z]{24}$"),
];

/// An allowlist pattern as knowledge-db runs it (see [`ANCHORED_ALLOWLIST`]).
fn anchored(pattern: &str) -> &str {
    ANCHORED_ALLOWLIST
        .iter()
        .find(|(as_written, _)| *as_written == pattern)
        .map_or(pattern, |&(_, anchored)| anchored)
}

/// Compiled program size allowed per rule: gitleaks' larger patterns
/// (bounded repetitions of case-folded classes) pass the default 10 MB only
/// just, or not at all.
const REGEX_SIZE_LIMIT: usize = 64 << 20;

/// One rule file, as gitleaks writes it. Unknown fields are refused, so a
/// newer gitleaks that adds a field fails the rule test instead of being
/// half honoured.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RuleFile {
    #[serde(default, rename = "title")]
    _title: Option<IgnoredAny>,
    #[serde(default, rename = "minVersion")]
    _min_version: Option<IgnoredAny>,
    /// The global allowlist (gitleaks' older single-table spelling).
    #[serde(default)]
    allowlist: Option<AllowlistDef>,
    /// Global allowlists.
    #[serde(default)]
    allowlists: Vec<AllowlistDef>,
    #[serde(default)]
    rules: Vec<RuleDef>,
}

/// One `[[rules]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RuleDef {
    pub id: String,
    #[serde(default, rename = "description")]
    _description: Option<IgnoredAny>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub secret_group: Option<usize>,
    #[serde(default)]
    pub entropy: Option<f64>,
    #[serde(default)]
    pub keywords: Vec<String>,
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default, rename = "tags")]
    _tags: Option<IgnoredAny>,
    #[serde(default)]
    allowlist: Option<AllowlistDef>,
    #[serde(default)]
    allowlists: Vec<AllowlistDef>,
}

/// One allowlist table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct AllowlistDef {
    #[serde(default, rename = "description")]
    _description: Option<IgnoredAny>,
    #[serde(default)]
    condition: Option<String>,
    #[serde(default)]
    regex_target: Option<String>,
    #[serde(default)]
    regexes: Vec<String>,
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    commits: Vec<String>,
    /// On a global allowlist: the rules it belongs to (none: every rule).
    #[serde(default)]
    target_rules: Vec<String>,
}

/// A regex translated and compiled the first time it is needed, so loading
/// the rules costs neither. `None` inside: the pattern does not compile (the
/// rule tests make sure no vendored one does that).
#[derive(Debug)]
pub(crate) struct LazyRegex {
    /// The pattern in Go syntax, as the rule file has it.
    go: String,
    compiled: OnceLock<Option<Regex>>,
}

impl LazyRegex {
    /// A Go pattern, compiled on first use.
    fn go(pattern: String) -> LazyRegex {
        LazyRegex {
            go: pattern,
            compiled: OnceLock::new(),
        }
    }

    /// The compiled regex, or `None` when the pattern does not compile.
    pub(crate) fn get(&self) -> Option<&Regex> {
        self.compiled
            .get_or_init(|| compile(&go_to_rust(&self.go)).ok())
            .as_ref()
    }

    /// Compiles it now: the error says why it does not compile.
    pub(crate) fn check(&self) -> Result<(), String> {
        compile(&go_to_rust(&self.go)).map(|_| ())
    }
}

/// A Rust pattern compiled with the raised size limit.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// What an allowlist's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Secret,
    Match,
    Line,
}

/// One allowlist, ready to judge findings.
#[derive(Debug)]
pub(crate) struct Allowlist {
    target: Target,
    all: bool,
    /// Every pattern joined into one, as gitleaks does.
    regexes: Option<LazyRegex>,
    stopwords: Vec<String>,
    stopword_automaton: OnceLock<Option<AhoCorasick>>,
    /// It has a path or commit condition, which scanned text never meets.
    needs_path_or_commit: bool,
}

/// The strings one finding is judged by.
pub(crate) struct Candidate<'t> {
    /// The secret: the chosen group, else the match.
    pub secret: &'t str,
    /// The rule's whole match.
    pub matched: &'t str,
    /// The line(s) the match stands on.
    pub line: &'t str,
}

impl Allowlist {
    fn new(def: &AllowlistDef) -> Result<Allowlist, String> {
        let target = match def.regex_target.as_deref() {
            None | Some("secret") => Target::Secret,
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            Some(other) => return Err(format!("unknown regexTarget `{other}`")),
        };
        let all = match def.condition.as_deref().map(str::to_ascii_uppercase) {
            None => false,
            Some(c) if c == "OR" => false,
            Some(c) if c == "AND" => true,
            Some(other) => return Err(format!("unknown condition `{other}`")),
        };
        let regexes = (!def.regexes.is_empty()).then(|| {
            let joined = def
                .regexes
                .iter()
                .map(|r| format!("(?:{})", anchored(r)))
                .collect::<Vec<_>>()
                .join("|");
            LazyRegex::go(joined)
        });
        Ok(Allowlist {
            target,
            all,
            regexes,
            stopwords: def.stopwords.iter().map(|w| w.to_lowercase()).collect(),
            stopword_automaton: OnceLock::new(),
            needs_path_or_commit: !def.paths.is_empty() || !def.commits.is_empty(),
        })
    }

    /// Whether this allowlist lets the finding go (gitleaks' `checkFindingAllowed`).
    pub(crate) fn allows(&self, candidate: &Candidate) -> bool {
        let target = match self.target {
            Target::Secret => candidate.secret,
            Target::Match => candidate.matched,
            Target::Line => candidate.line,
        };
        let regex = || {
            self.regexes
                .as_ref()
                .and_then(LazyRegex::get)
                .is_some_and(|r| !target.is_empty() && r.is_match(target))
        };
        let stopword = || self.holds_stopword(candidate.secret);
        if self.all {
            // Every condition it has must hold; a path or commit never does.
            !self.needs_path_or_commit
                && (self.regexes.is_none() || regex())
                && (self.stopwords.is_empty() || stopword())
                && (self.regexes.is_some() || !self.stopwords.is_empty())
        } else {
            regex() || stopword()
        }
    }

    fn holds_stopword(&self, secret: &str) -> bool {
        if self.stopwords.is_empty() || secret.is_empty() {
            return false;
        }
        let automaton = self.stopword_automaton.get_or_init(|| {
            AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .build(&self.stopwords)
                .ok()
        });
        match automaton {
            Some(a) => a.is_match(secret),
            None => {
                let lower = secret.to_lowercase();
                self.stopwords.iter().any(|w| lower.contains(w.as_str()))
            }
        }
    }

    /// Compiles its regexes now (for the rule tests).
    #[cfg(test)]
    pub(crate) fn check(&self) -> Result<(), String> {
        self.regexes.as_ref().map_or(Ok(()), LazyRegex::check)
    }
}

/// One rule, ready to scan.
#[derive(Debug)]
pub(crate) struct Rule {
    /// The rule's id: the kind named in the placeholder.
    pub id: String,
    pub regex: LazyRegex,
    pub secret_group: Option<usize>,
    pub entropy: Option<f64>,
    /// Lowercase keywords; empty: the rule always runs.
    pub keywords: Vec<String>,
    pub allowlists: Vec<Allowlist>,
    /// 0 for a vendor's rule; more for rules that name a kind of place
    /// (see [`GENERAL_RULES`]): the lowest names an overlap.
    pub rank: u8,
}

impl Rule {
    /// A rule from its definition; `None` for a rule that cannot apply to
    /// text without a file path (a `path` rule).
    pub(crate) fn new(def: &RuleDef) -> Result<Option<Rule>, String> {
        let (Some(regex), None) = (&def.regex, &def.path) else {
            return Ok(None);
        };
        let allowlists = def
            .allowlist
            .iter()
            .chain(&def.allowlists)
            .map(Allowlist::new)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("rule `{}`: {e}", def.id))?;
        Ok(Some(Rule {
            id: def.id.clone(),
            regex: LazyRegex::go(for_transcripts(regex)),
            secret_group: def.secret_group,
            entropy: def.entropy,
            keywords: def.keywords.iter().map(|k| k.to_lowercase()).collect(),
            allowlists,
            rank: rank_of(&def.id),
        }))
    }

    /// A rule of the user's (`[[privacy.extra_patterns]]`), compiled now.
    pub(crate) fn extra(
        id: &str,
        regex: &str,
        secret_group: Option<usize>,
        entropy: Option<f64>,
        keywords: &[String],
    ) -> Result<Rule, String> {
        let rule = Rule {
            id: id.to_string(),
            regex: LazyRegex::go(regex.to_string()),
            secret_group,
            entropy,
            keywords: keywords.iter().map(|k| k.to_lowercase()).collect(),
            allowlists: Vec::new(),
            rank: 0,
        };
        let compiled = rule.regex.get().ok_or_else(|| {
            rule.regex
                .check()
                .err()
                .unwrap_or_else(|| "does not compile".into())
        })?;
        if let Some(group) = secret_group {
            if group >= compiled.captures_len() {
                return Err(format!(
                    "secret_group {group} but the regex has {} capture group(s)",
                    compiled.captures_len() - 1
                ));
            }
        }
        Ok(rule)
    }

    /// Whether a secret's entropy is too low for this rule.
    pub(crate) fn too_plain(&self, secret: &str) -> bool {
        self.entropy
            .is_some_and(|min| shannon_entropy(secret) <= min)
    }
}

/// Rules and allowlists read from one file of gitleaks' format.
pub(crate) struct Parsed {
    pub rules: Vec<Rule>,
    /// Global allowlists: every rule obeys them.
    pub allowlists: Vec<Allowlist>,
    /// Global allowlists with `targetRules`: (rule id, allowlist), to be
    /// added to those rules, wherever they are defined.
    pub targeted: Vec<(String, Allowlist)>,
}

impl Parsed {
    /// Adds `other`'s rules and allowlists to these, then gives every
    /// targeted allowlist to the rules it names; an allowlist naming a rule
    /// that does not exist is an error (a rule renamed upstream).
    pub(crate) fn join(mut self, other: Parsed) -> Result<Parsed, String> {
        self.rules.extend(other.rules);
        self.allowlists.extend(other.allowlists);
        self.targeted.extend(other.targeted);
        for (id, allowlist) in std::mem::take(&mut self.targeted) {
            let rule = self.rules.iter_mut().find(|r| r.id == id).ok_or_else(|| {
                format!("an allowlist targets rule `{id}`, which no file defines")
            })?;
            rule.allowlists.push(allowlist);
        }
        Ok(self)
    }
}

/// Reads a rule file, TOML or (by its name) JSON; `name` names it in errors.
pub(crate) fn parse(name: &str, text: &str) -> Result<Parsed, String> {
    let file: RuleFile = if name.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?
    } else {
        toml::from_str(text).map_err(|e| format!("{name}: {e}"))?
    };
    let mut rules = Vec::with_capacity(file.rules.len());
    for def in &file.rules {
        if let Some(rule) = Rule::new(def).map_err(|e| format!("{name}: {e}"))? {
            rules.push(rule);
        }
    }
    let mut allowlists = Vec::new();
    let mut targeted = Vec::new();
    for def in file.allowlist.iter().chain(&file.allowlists) {
        let error = |e: String| format!("{name}: global allowlist: {e}");
        if def.target_rules.is_empty() {
            allowlists.push(Allowlist::new(def).map_err(error)?);
        }
        for id in &def.target_rules {
            targeted.push((id.clone(), Allowlist::new(def).map_err(error)?));
        }
    }
    Ok(Parsed {
        rules,
        allowlists,
        targeted,
    })
}

/// Shannon entropy of `text` in bits, exactly as gitleaks computes it
/// (characters counted, divided by the length in bytes).
pub(crate) fn shannon_entropy(text: &str) -> f64 {
    if text.is_empty() {
        return 0.0;
    }
    let mut counts: Vec<(char, u32)> = Vec::new();
    for c in text.chars() {
        match counts.iter_mut().find(|(k, _)| *k == c) {
            Some((_, n)) => *n += 1,
            None => counts.push((c, 1)),
        }
    }
    let length = text.len() as f64;
    counts
        .iter()
        .map(|&(_, n)| {
            let p = f64::from(n) / length;
            -p * p.log2()
        })
        .sum()
}

/// One automaton over every rule's keywords, and which rules each keyword wakes.
#[derive(Debug)]
pub(crate) struct Prefilter {
    /// The keywords, lowercase (the automata's pattern ids index them).
    keywords: Vec<String>,
    /// An NFA over them: cheap to build, what a short-lived process uses.
    automaton: Option<AhoCorasick>,
    /// A DFA over the same keywords, built once [`DFA_AFTER`] bytes were
    /// scanned: its search is several times faster (the automaton runs over
    /// every byte of every text stored), but building it costs about a
    /// millisecond, which a hook redacting a few KB would pay for nothing.
    dfa: OnceLock<Option<AhoCorasick>>,
    /// Bytes scanned with the NFA so far.
    scanned: AtomicUsize,
    /// For each keyword (the automaton's pattern id), the rules it wakes.
    wakes: Vec<Vec<usize>>,
    /// Rules without keywords: they always run.
    always: Vec<usize>,
}

/// Bytes a prefilter scans with its NFA before it builds its DFA.
const DFA_AFTER: usize = 4 << 20;

/// The keyword automaton of `kind` (any case, every match reported).
fn keyword_automaton(keywords: &[String], kind: AhoCorasickKind) -> Option<AhoCorasick> {
    if keywords.is_empty() {
        return None;
    }
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::Standard)
        .kind(Some(kind))
        .build(keywords)
        .ok()
}

impl Prefilter {
    pub(crate) fn new(rules: &[Rule]) -> Prefilter {
        let mut keywords: Vec<String> = Vec::new();
        let mut wakes: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            if rule.keywords.is_empty() {
                always.push(index);
            }
            for keyword in &rule.keywords {
                match keywords.iter().position(|k| k == keyword) {
                    Some(k) => wakes[k].push(index),
                    None => {
                        keywords.push(keyword.clone());
                        wakes.push(vec![index]);
                    }
                }
            }
        }
        let automaton = keyword_automaton(&keywords, AhoCorasickKind::ContiguousNFA);
        Prefilter {
            keywords,
            automaton,
            dfa: OnceLock::new(),
            scanned: AtomicUsize::new(0),
            wakes,
            always,
        }
    }

    /// The automaton to scan `len` more bytes with: the DFA once it is
    /// built or [`DFA_AFTER`] bytes were scanned, else the NFA.
    fn searcher(&self, len: usize) -> Option<&AhoCorasick> {
        if let Some(dfa) = self.dfa.get() {
            return dfa.as_ref().or(self.automaton.as_ref());
        }
        if self.scanned.fetch_add(len, Ordering::Relaxed) < DFA_AFTER {
            return self.automaton.as_ref();
        }
        self.dfa
            .get_or_init(|| keyword_automaton(&self.keywords, AhoCorasickKind::DFA))
            .as_ref()
            .or(self.automaton.as_ref())
    }

    /// The rules `text` wakes, in rule order. Text that holds no keyword
    /// costs one pass of the automaton and no allocation.
    pub(crate) fn woken(&self, text: &str, rules: usize) -> Vec<usize> {
        let mut found = self
            .searcher(text.len())
            .map(|a| a.find_overlapping_iter(text).peekable());
        let any_keyword = found.as_mut().is_some_and(|f| f.peek().is_some());
        if !any_keyword && self.always.is_empty() {
            return Vec::new();
        }
        let mut woken = vec![false; rules];
        for &r in &self.always {
            woken[r] = true;
        }
        let mut seen = vec![false; self.wakes.len()];
        for hit in found.into_iter().flatten() {
            let keyword = hit.pattern().as_usize();
            if !std::mem::replace(&mut seen[keyword], true) {
                for &r in &self.wakes[keyword] {
                    woken[r] = true;
                }
            }
        }
        woken
            .iter()
            .enumerate()
            .filter_map(|(i, &w)| w.then_some(i))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_vendored_rule_and_allowlist_compiles() {
        let gitleaks = parse("gitleaks.json", GITLEAKS_RULES).unwrap_or_else(|e| panic!("{e}"));
        let own = parse("knowledge-db.toml", OWN_RULES).unwrap_or_else(|e| panic!("{e}"));
        assert!(!own.rules.is_empty() && !own.targeted.is_empty());
        let all = gitleaks.join(own).unwrap_or_else(|e| panic!("{e}"));
        let mut failures = Vec::new();
        for rule in &all.rules {
            if let Err(e) = rule.regex.check() {
                failures.push(format!("{}: {e}", rule.id));
            }
            for allowlist in &rule.allowlists {
                if let Err(e) = allowlist.check() {
                    failures.push(format!("{} allowlist: {e}", rule.id));
                }
            }
        }
        for allowlist in &all.allowlists {
            if let Err(e) = allowlist.check() {
                failures.push(format!("global allowlist: {e}"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        let mut ids: Vec<&str> = all.rules.iter().map(|r| r.id.as_str()).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "two rules share an id");
        for (general, _) in GENERAL_RULES {
            assert!(
                ids.contains(general),
                "GENERAL_RULES names `{general}`, which no file defines"
            );
        }
    }

    #[test]
    fn the_vendored_file_is_the_version_named() {
        let header = GITLEAKS_TOML.lines().next().unwrap_or("");
        assert!(
            header.contains(&format!("gitleaks {GITLEAKS_VERSION} ")),
            "{header}"
        );
        let parsed = parse("gitleaks.toml", GITLEAKS_TOML).unwrap();
        // 222 rules in v8.30.1, less the 5 that need a file path.
        assert_eq!(parsed.rules.len(), 217);
        assert!(parsed.rules.iter().any(|r| r.id == "generic-api-key"));
        // The two rewrites of for_transcripts still find what they rewrite:
        // a newer gitleaks that spells them otherwise fails here.
        assert_eq!(GITLEAKS_TOML.matches(CODE_END).count(), 152);
        for (code, _) in ESCAPED_QUOTES {
            assert!(GITLEAKS_TOML.matches(code).count() >= 96, "{code}");
        }
        // So do the anchored allowlist patterns.
        for (as_written, _) in ANCHORED_ALLOWLIST {
            assert!(
                GITLEAKS_TOML.contains(&format!("'''{as_written}'''")),
                "{as_written}"
            );
        }
    }

    #[test]
    fn the_json_the_binary_reads_is_the_vendored_toml() {
        let toml: toml::Value = toml::from_str(GITLEAKS_TOML).unwrap();
        let from_toml = serde_json::to_value(toml).unwrap();
        let json: serde_json::Value = serde_json::from_str(GITLEAKS_RULES).unwrap();
        assert!(
            from_toml == json,
            "src/privacy/rules/gitleaks.json is not gitleaks.toml: run scripts/update-secret-rules.sh"
        );
    }

    #[test]
    fn the_dfa_wakes_the_same_rules_as_the_nfa() {
        let all = parse("gitleaks.json", GITLEAKS_RULES)
            .and_then(|g| g.join(parse("knowledge-db.toml", OWN_RULES)?))
            .unwrap_or_else(|e| panic!("{e}"));
        let prefilter = Prefilter::new(&all.rules);
        let texts = [
            "export GITHUB_TOKEN=ghp_x and a Cookie: a=b",
            "mysql -uroot -pX shop; curl -u a:b https://x; ya29.abc whsec_ GOCSPX-",
            "nothing to see here",
        ];
        let by_nfa: Vec<Vec<usize>> = texts
            .iter()
            .map(|t| prefilter.woken(t, all.rules.len()))
            .collect();
        assert!(prefilter.dfa.get().is_none());
        prefilter.scanned.store(DFA_AFTER, Ordering::Relaxed);
        let by_dfa: Vec<Vec<usize>> = texts
            .iter()
            .map(|t| prefilter.woken(t, all.rules.len()))
            .collect();
        assert!(prefilter.dfa.get().is_some_and(Option::is_some));
        assert_eq!(by_nfa, by_dfa);
        assert!(by_nfa[0].len() > by_nfa[2].len() + 3, "{by_nfa:?}");
    }

    #[test]
    fn entropy_is_gitleaks_entropy() {
        assert_eq!(shannon_entropy(""), 0.0);
        assert_eq!(shannon_entropy("aaaa"), 0.0);
        assert!((shannon_entropy("abcd") - 2.0).abs() < 1e-9);
        // Go divides by bytes: a two-byte character counts as one symbol of
        // frequency 1/2 in a string of length 2.
        assert!((shannon_entropy("é") - 0.5).abs() < 1e-9);
    }

    #[test]
    fn allowlists_follow_their_condition_and_target() {
        let def = |condition: Option<&str>, paths: Vec<String>| AllowlistDef {
            condition: condition.map(str::to_string),
            regex_target: Some("line".into()),
            regexes: vec!["^import".into()],
            stopwords: vec!["EXAMPLE".into()],
            paths,
            ..AllowlistDef::default()
        };
        let candidate = |secret, line| Candidate {
            secret,
            matched: secret,
            line,
        };
        let or = Allowlist::new(&def(None, vec![])).unwrap();
        assert!(or.allows(&candidate("abc", "import x")));
        assert!(or.allows(&candidate("keyexample1", "let k")));
        assert!(!or.allows(&candidate("abc", "let k")));
        let and = Allowlist::new(&def(Some("AND"), vec![])).unwrap();
        assert!(!and.allows(&candidate("abc", "import x")));
        assert!(and.allows(&candidate("example", "import x")));
        let with_path = Allowlist::new(&def(Some("AND"), vec![r"\.bb$".into()])).unwrap();
        assert!(!with_path.allows(&candidate("example", "import x")));
    }
}
