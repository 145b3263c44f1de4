//! A second look at a text: the same text with what hides a secret from the
//! rules taken away, mapped back to the original's bytes.
//!
//! The rules read text as written. Three things put a secret out of their
//! sight without changing what a reader (or a model) sees in it:
//! - **escaping, applied more than once**: a secret inside a JSON string
//!   held in a JSON string held in text (`{\\\"password\\\": \\\"…\\\"}`). The
//!   rules know one level (`\"`, `\n`); every run of backslashes before a
//!   quote, a slash or a backslash here becomes nothing, and one before
//!   `n`, `r` or `t` the character it stands for, as often as it is nested;
//! - **invisible characters** inside a token (a zero-width space, joiner, word
//!   joiner, soft hyphen, byte-order mark): taken out;
//! - **a token broken across lines** (a terminal that wrapped it, a paste):
//!   a line break inside a run of token characters that starts with a known
//!   vendor prefix (`ghp_`, `sk-ant-`, `AKIA`, …) is taken out, unless what
//!   follows it is a word of the next line.
//!
//! The rules then run over this view as well as over the text; what they find
//! in the view is mapped back to the original bytes it came from, so the
//! whole escaped, broken or sprinkled secret is replaced. The view is built
//! only when a text holds one of these (most texts hold none, and cost one
//! scan for the trigger bytes).

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

/// Invisible characters that may sit inside a token and are taken out.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}' | '\u{180E}'
    )
}

/// Vendor prefixes whose token may be broken across lines (see the module doc).
fn broken_token() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-ant-|sk-proj-|sk-svcacct-|sk_live_|rk_live_|xox[abposr]-|hf_|npm_|pypi-|dckr_pat_|dop_v1_|doo_v1_|AKIA|ASIA|AIza|SG\.|shpat_|lin_api_|pplx-|GOCSPX-|ya29\.)[A-Za-z0-9_.\-\x{200B}-\x{200F}\x{2060}-\x{2064}\x{FEFF}\x{AD}]{4,}(?:\r?\n|(?:\\r)?\\n)[A-Za-z0-9_-]+(?:[\s"'`,;]|\\[nrt"]|$)"#,
        )
        .ok()
    })
    .as_ref()
}

/// The text as the rules should also see it, and where each of its bytes came from.
#[derive(Debug)]
pub(crate) struct View {
    pub text: String,
    /// For each byte of `text`: the original range it stands for.
    from: Vec<Range<usize>>,
}

impl View {
    /// The original bytes behind `span` of the view.
    pub(crate) fn original(&self, span: &Range<usize>) -> Range<usize> {
        if span.is_empty() || span.end > self.from.len() {
            return 0..0;
        }
        self.from[span.start].start..self.from[span.end - 1].end
    }
}

/// Whether `text` holds something the view would change.
fn worth_a_view(text: &str) -> bool {
    // An escaped escape (`\\"`, `\\n`: two levels deep or more), an
    // invisible character (never in ASCII text), a vendor token before a
    // line break.
    text.contains("\\\\\"")
        || text.contains("\\\\n")
        || (!text.is_ascii() && text.chars().any(is_invisible))
        || broken_token().is_some_and(|re| re.is_match(text))
}

/// The view of `text`, or `None` when it would be the text itself.
pub(crate) fn view(text: &str) -> Option<View> {
    if !worth_a_view(text) {
        return None;
    }
    let breaks = broken_breaks(text);
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from: Vec<Range<usize>> = Vec::with_capacity(text.len());
    let mut i = 0;
    let mut changed = false;
    while i < text.len() {
        if let Some(end) = breaks.iter().find(|b| b.start == i).map(|b| b.end) {
            // A line break inside a broken token: taken out.
            changed = true;
            i = end;
            continue;
        }
        let c = text[i..].chars().next().unwrap_or('\u{FFFD}');
        let len = c.len_utf8();
        if is_invisible(c) {
            changed = true;
            i += len;
            continue;
        }
        if c == '\\' {
            // A run of backslashes: what it escapes, once unescaped fully.
            let run = bytes[i..].iter().take_while(|&&b| b == b'\\').count();
            let next = bytes.get(i + run).copied();
            let single = run == 1;
            match next {
                Some(b'"' | b'\'' | b'/') if !single => {
                    push(
                        &mut out,
                        &mut from,
                        (next.unwrap_or(b'"')) as char,
                        i..i + run + 1,
                    );
                    changed = true;
                    i += run + 1;
                    continue;
                }
                Some(b'n' | b'r' | b't') if !single => {
                    let ch = match next {
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        _ => '\t',
                    };
                    push(&mut out, &mut from, ch, i..i + run + 1);
                    changed = true;
                    i += run + 1;
                    continue;
                }
                _ if run >= 2 => {
                    // Escaped backslashes with nothing after them the rules
                    // care about: one backslash.
                    push(&mut out, &mut from, '\\', i..i + run);
                    changed = true;
                    i += run;
                    continue;
                }
                _ => {}
            }
        }
        push(&mut out, &mut from, c, i..i + len);
        i += len;
    }
    changed.then_some(View { text: out, from })
}

fn push(out: &mut String, from: &mut Vec<Range<usize>>, c: char, origin: Range<usize>) {
    out.push(c);
    for _ in 0..c.len_utf8() {
        from.push(origin.clone());
    }
}

/// The line breaks (`\n`, `\r\n`, or the same escaped) inside broken tokens.
fn broken_breaks(text: &str) -> Vec<Range<usize>> {
    let Some(re) = broken_token() else {
        return Vec::new();
    };
    re.find_iter(text)
        .filter_map(|m| {
            let s = m.as_str();
            let at = s.find(['\r', '\n', '\\'])?;
            let len = ["\r\n", "\n", "\\r\\n", "\\n"]
                .iter()
                .find(|b| s[at..].starts_with(**b))
                .map_or(1, |b| b.len());
            let rest = &s[at + len..];
            let next_line = &rest[..rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len())];
            looks_like_a_token(next_line).then(|| m.start() + at..m.start() + at + len)
        })
        .collect()
}

/// Whether the start of the line after a vendor token goes on with it, or
/// is a word of the next line (`next`, `Use`, `JSON`: letters of one case, or
/// a capitalised word, ten at most). A complete token at the end of a line
/// followed by prose is common, and joining them cost the word after it. A
/// wrapped token's rest is random: mixed case, digits or `_-`, or longer.
fn looks_like_a_token(run: &str) -> bool {
    let letters = run.chars().all(|c| c.is_ascii_alphabetic());
    let lower = run.chars().skip(1).all(|c| c.is_ascii_lowercase());
    let upper = run.chars().all(|c| c.is_ascii_uppercase());
    let word = letters && run.len() <= 10 && (lower || upper);
    !run.is_empty() && !word
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(text: &str) -> String {
        view(text).map_or_else(|| text.to_string(), |v| v.text)
    }

    #[test]
    fn nested_escapes_invisible_characters_and_broken_tokens_go() {
        assert_eq!(
            seen(r#"{\\\"password\\\": \\\"Xy7!kq2L\\\"}"#),
            r#"{"password": "Xy7!kq2L"}"#
        );
        assert_eq!(seen(r#"a\\\\\\\"b\\\\nc"#), "a\"b\nc");
        assert_eq!(seen("ghp_ab\u{200B}cd"), "ghp_abcd");
        assert_eq!(
            seen("token ghp_abcdef\ngh1jk rest"),
            "token ghp_abcdefgh1jk rest"
        );
        assert_eq!(seen("ghp_abcdef\\ngh1jk"), "ghp_abcdefgh1jk");
        assert!(view("plain text, one \\\"level\\\" of escaping").is_none());
        assert!(view("line one\nline two").is_none());
    }

    #[test]
    fn a_word_after_a_token_on_the_next_line_is_not_joined_to_it() {
        // A complete token, then prose: the next line's first word stays.
        assert!(view("ghp_abcdef0123\nnext line").is_none());
        assert!(view("ghp_abcdef0123\nUse this one").is_none());
        assert!(view("ghp_abcdef0123\\nJSON follows").is_none());
        // A wrapped token's random rest is joined.
        assert_eq!(seen("ghp_abcdef\nx9Yq2 rest"), "ghp_abcdefx9Yq2 rest");
        assert_eq!(seen("ghp_abcdef\nqWeRtYuI rest"), "ghp_abcdefqWeRtYuI rest");
    }

    #[test]
    fn spans_map_back_to_the_original_bytes() {
        let text = "x ghp_ab\u{200B}cd\ne9";
        let v = view(text).unwrap();
        let at = v.text.find("ghp_").unwrap();
        let span = at..at + "ghp_abcde9".len();
        assert_eq!(&v.text[span.clone()], "ghp_abcde9");
        assert_eq!(&text[v.original(&span)], "ghp_ab\u{200B}cd\ne9");
    }
}
