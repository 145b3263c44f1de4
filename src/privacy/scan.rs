//! Finding secrets in one text and writing it back with placeholders.
//!
//! The rules a text wakes (by keyword) run one after the other over the whole
//! text; each match is judged as gitleaks judges it (`rules`), then by the
//! user's allow-list. Findings that overlap are merged, so no part of a secret
//! two rules saw differently survives; the merged span is named after the most
//! specific rule (the lowest rank: a vendor's rule before a general one; then
//! the longer secret, then the earlier rule). Text already redacted is never
//! redacted again: a finding that touches a placeholder is dropped, so
//! redaction is idempotent.

use std::borrow::Cow;
use std::ops::Range;

use regex::Regex;

use super::rules::{Allowlist, Candidate, Rule};
use super::Findings;

/// What every placeholder starts with: `[REDACTED <rule-id>]`.
pub(crate) const PLACEHOLDER_START: &str = "[REDACTED ";

/// The user's allow-list: literal values and patterns never redacted.
#[derive(Debug, Default)]
pub(crate) struct Allowed {
    pub values: Vec<String>,
    pub patterns: Vec<Regex>,
}

impl Allowed {
    /// Whether the user allows the secret at `secret` in `text`: it lies inside
    /// an occurrence of an allowed value, or an allowed pattern matches it.
    fn allows(&self, text: &str, secret: &Range<usize>) -> bool {
        let value = &text[secret.clone()];
        self.patterns.iter().any(|p| p.is_match(value))
            || self.values.iter().any(|allowed| {
                !allowed.is_empty()
                    && text
                        .match_indices(allowed.as_str())
                        .any(|(at, found)| at <= secret.start && secret.end <= at + found.len())
            })
    }
}

/// Everything one scan consults.
pub(crate) struct Scanner<'r> {
    /// The rule groups, each with its own woken rules: (rules, woken indices).
    pub groups: Vec<(&'r [Rule], Vec<usize>)>,
    /// Allowlists every rule obeys (gitleaks' global allowlist).
    pub global: &'r [Allowlist],
    pub allowed: &'r Allowed,
}

/// One secret found: the bytes to replace and the kind that found it.
#[derive(Debug, Clone)]
pub(crate) struct Hit<'r> {
    pub span: Range<usize>,
    /// The rule id (the placeholder's name).
    pub id: &'r str,
    /// The rule's rank (see `rules::GENERAL_RULES`): the lowest names an overlap.
    pub rank: u8,
}

impl<'r> Scanner<'r> {
    /// The secrets of `text`, not merged.
    pub(crate) fn raw_hits(&self, text: &str) -> Vec<Hit<'r>> {
        if self.groups.iter().all(|(_, woken)| woken.is_empty()) {
            return Vec::new();
        }
        let placeholders = placeholder_spans(text);
        let mut hits = Vec::new();
        for (rules, woken) in &self.groups {
            for &index in woken {
                let rule = &rules[index];
                for span in self.rule_hits(rule, text) {
                    if !placeholders.iter().any(|p| overlaps(p, &span)) {
                        hits.push(Hit {
                            span,
                            id: &rule.id,
                            rank: rule.rank,
                        });
                    }
                }
            }
        }
        hits
    }

    /// The spans of the secrets `rule` finds in `text`.
    fn rule_hits(&self, rule: &Rule, text: &str) -> Vec<Range<usize>> {
        let Some(regex) = rule.regex.get() else {
            return Vec::new();
        };
        let mut spans = Vec::new();
        let mut judge = |matched: Range<usize>, secret: Range<usize>| {
            if secret.is_empty() {
                return;
            }
            let value = &text[secret.clone()];
            if rule.too_plain(value) {
                return;
            }
            let candidate = Candidate {
                secret: value,
                matched: &text[matched.clone()],
                line: &text[line_around(text, &matched)],
            };
            let allowed = self.global.iter().any(|a| a.allows(&candidate))
                || rule.allowlists.iter().any(|a| a.allows(&candidate))
                || self.allowed.allows(text, &secret);
            if !allowed {
                spans.push(secret);
            }
        };
        if regex.captures_len() == 1 {
            for m in regex.find_iter(text) {
                let whole = trim_newlines(text, m.range());
                judge(whole.clone(), whole);
            }
        } else {
            for caps in regex.captures_iter(text) {
                let Some(m) = caps.get(0) else { continue };
                let whole = trim_newlines(text, m.range());
                let group = match rule.secret_group {
                    Some(g) => caps.get(g).map(|g| g.range()),
                    None => (1..caps.len())
                        .filter_map(|g| caps.get(g))
                        .find(|g| !g.is_empty())
                        .map(|g| g.range()),
                };
                let secret = group.unwrap_or_else(|| whole.clone());
                judge(whole, secret);
            }
        }
        spans
    }
}

/// `text` with the (merged, ordered) `hits` replaced by their placeholders;
/// what was replaced is added to `found`.
pub(crate) fn replace<'t>(
    text: Cow<'t, str>,
    hits: &[Hit<'_>],
    found: &mut Findings,
) -> Cow<'t, str> {
    if hits.is_empty() {
        return text;
    }
    let mut out = String::with_capacity(text.len() + hits.len() * 24);
    let mut kept = 0;
    for hit in hits {
        out.push_str(&text[kept..hit.span.start]);
        out.push_str(PLACEHOLDER_START);
        out.push_str(hit.id);
        out.push(']');
        kept = hit.span.end;
        *found.kinds.entry(hit.id.to_string()).or_default() += 1;
    }
    out.push_str(&text[kept..]);
    Cow::Owned(out)
}

/// Findings that overlap become one, named after the most specific rule.
pub(crate) fn merge(mut hits: Vec<Hit<'_>>) -> Vec<Hit<'_>> {
    hits.sort_by_key(|h| (h.span.start, std::cmp::Reverse(h.span.end)));
    let mut merged: Vec<Hit> = Vec::with_capacity(hits.len());
    for hit in hits {
        match merged.last_mut() {
            Some(last) if hit.span.start < last.span.end => {
                if outranks(&hit, last) {
                    last.id = hit.id;
                    last.rank = hit.rank;
                }
                last.span.end = last.span.end.max(hit.span.end);
            }
            _ => merged.push(hit),
        }
    }
    merged
}

/// Whether `a` names an overlap better than `b`: the lower rank (a vendor's
/// rule before a general one), then the longer secret (an earlier rule keeps
/// ties).
fn outranks(a: &Hit, b: &Hit) -> bool {
    (a.rank, std::cmp::Reverse(a.span.len())) < (b.rank, std::cmp::Reverse(b.span.len()))
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// The spans of the placeholders already in `text`.
pub(crate) fn placeholder_spans(text: &str) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    for (at, _) in text.match_indices(PLACEHOLDER_START) {
        let rest = &text[at + PLACEHOLDER_START.len()..];
        let name_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            .count();
        if name_len > 0 && rest.as_bytes().get(name_len) == Some(&b']') {
            spans.push(at..at + PLACEHOLDER_START.len() + name_len + 1);
        }
    }
    spans
}

/// gitleaks trims newlines around a match before judging it.
fn trim_newlines(text: &str, span: Range<usize>) -> Range<usize> {
    let inner = &text[span.clone()];
    let start = span.start + (inner.len() - inner.trim_start_matches('\n').len());
    let end = span.end - (inner.len() - inner.trim_end_matches('\n').len());
    start..end.max(start)
}

/// The whole line(s) a span stands on (gitleaks' `Line`, an allowlist target).
fn line_around(text: &str, span: &Range<usize>) -> Range<usize> {
    let start = text[..span.start].rfind('\n').map_or(0, |i| i + 1);
    let end = text[span.end..]
        .find('\n')
        .map_or(text.len(), |i| span.end + i);
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_only_when_whole() {
        let text = "a [REDACTED github-pat] b [REDACTED ] c [REDACTED x y]";
        assert_eq!(placeholder_spans(text), vec![2..23]);
    }

    #[test]
    fn lines_and_trims() {
        let text = "one\ntwo key=abc\nthree";
        assert_eq!(&text[line_around(text, &(8..15))], "two key=abc");
        assert_eq!(trim_newlines("\nab\n\n", 0..5), 1..3);
        assert_eq!(trim_newlines("\n\n", 0..2), 2..2);
    }
}
