//! `<private>…</private>` spans: what the user marked for the memory never to keep.
//!
//! A span runs from `<private>` to its matching `</private>`, tags included,
//! in any case, across lines (`< Private >` and `</ PRIVATE>` count too).
//! Spans nest: `<private>a <private>b</private> c</private>` is one span.
//! An opening tag that is never closed drops everything after it: keeping
//! the rest would keep exactly what the user meant to hide. A closing tag
//! with no opening one is dropped by itself (the text around it stays).

use std::borrow::Cow;
use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

/// The tags, in any case: with any white space inside the brackets (line
/// breaks, NBSP, an escaped `\n` of JSON held as text), attributes
/// (`<private reason="pii">`), a self-closing slash (`<private/>`, read as an
/// opening tag), HTML-escaped (`&lt;private&gt;`, `&#60;`), JSON-escaped
/// (`\u003c`) and fullwidth (`＜ｐｒｉｖａｔｅ＞`) brackets and letters.
fn tags() -> Option<&'static Regex> {
    static TAGS: OnceLock<Option<Regex>> = OnceLock::new();
    TAGS.get_or_init(|| {
        let open = r"(?:<|＜|&lt;|&#0*60;|&#x0*3c;|\\?\\u003c)";
        let close = r"(?:>|＞|&gt;|&#0*62;|&#x0*3e;|\\?\\u003e)";
        let space = r"(?:\s|\\[nrt])";
        let word = r"(?:private|ｐｒｉｖａｔｅ)";
        // `name="value"`: an attribute needs its `=` (so `if a < private &&
        // b > c` in code is no tag).
        let attribute = r#"[A-Za-z_:][-\w:.]*(?:\s|\\[nrt])*=(?:\s|\\[nrt])*(?:\\?"[^"\n]*?\\?"|'[^'\n]*'|&quot;.*?&quot;|[^\s<>＜＞&"'/]+)"#;
        Regex::new(&format!(
            r"(?i){open}{space}*([/／]?){space}*{word}(?:{space}+{attribute})*{space}*/?{space}*{close}"
        ))
        .ok()
    })
    .as_ref()
}

/// `text` without its private spans, and how many spans were dropped
/// (an unclosed one counts once, a lone closing tag not at all).
pub(crate) fn strip(text: &str) -> (Cow<'_, str>, u64) {
    // Nothing to do unless the word is there: the common case costs one
    // case-insensitive substring search.
    if !contains_private(text) {
        return (Cow::Borrowed(text), 0);
    }
    let Some(tags) = tags() else {
        return (Cow::Borrowed(text), 0);
    };
    let mut out = String::with_capacity(text.len());
    let mut depth = 0u32;
    let mut spans = 0;
    let mut kept_from = 0;
    let mut changed = false;
    for tag in tags.captures_iter(text) {
        let (Some(whole), closing) = (tag.get(0), tag.get(1).is_some_and(|m| !m.is_empty())) else {
            continue;
        };
        changed = true;
        match (closing, depth) {
            (false, 0) => {
                out.push_str(&text[kept_from..whole.start()]);
                spans += 1;
                depth = 1;
            }
            (false, _) => depth += 1,
            (true, 0) => {
                // A closing tag alone: drop the tag, keep what is around it.
                out.push_str(&text[kept_from..whole.start()]);
                kept_from = whole.end();
            }
            (true, 1) => {
                depth = 0;
                kept_from = whole.end();
            }
            (true, _) => depth -= 1,
        }
    }
    if !changed {
        return (Cow::Borrowed(text), 0);
    }
    if depth == 0 {
        out.push_str(&text[kept_from..]);
    }
    (Cow::Owned(out), spans)
}

/// Whether `text` holds "private" in any case (when the searcher cannot be
/// built, say yes: the tag search then decides).
fn contains_private(text: &str) -> bool {
    static WORD: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    WORD.get_or_init(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([
                "private",
                "ｐｒｉｖａｔｅ",
                "ＰＲＩＶＡＴＥ",
                "Ｐｒｉｖａｔｅ",
            ])
            .ok()
    })
    .as_ref()
    .is_none_or(|word| word.is_match(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_dropped_whole_in_any_case_across_lines() {
        let cases = [
            ("a <private>key</private> b", "a  b", 1),
            ("a <PRIVATE>x\ny\n</Private> b", "a  b", 1),
            ("<private>a</private>b<private>c</private>", "b", 2),
            ("x <private>a <private>b</private> c</private> y", "x  y", 1),
            ("keep <private>everything after", "keep ", 1),
            ("stray </private> close", "stray  close", 0),
            ("< private >a</ private >b", "b", 1),
            ("a <private\n>k</private> b", "a  b", 1),
            ("a <private reason=\"pii\">k</private> b", "a  b", 1),
            ("a <private\u{a0}>k</private\u{a0}> b", "a  b", 1),
            ("a <private/>k</private> b", "a  b", 1),
            ("a &lt;private&gt;k&lt;/private&gt; b", "a  b", 1),
            ("a ＜private＞k＜/private＞ b", "a  b", 1),
            ("a ＜ｐｒｉｖａｔｅ＞k＜／ｐｒｉｖａｔｅ＞ b", "a  b", 1),
            (
                "a \\u003cprivate\\u003ek\\u003c/private\\u003e b",
                "a  b",
                1,
            ),
            ("a <private_key>k b", "a <private_key>k b", 0),
            ("private matters, no tags", "private matters, no tags", 0),
            ("no word at all", "no word at all", 0),
        ];
        for (text, expected, spans) in cases {
            let (out, n) = strip(text);
            assert_eq!((out.as_ref(), n), (expected, spans), "{text:?}");
        }
    }

    #[test]
    fn untouched_text_is_borrowed() {
        assert!(matches!(strip("private but no tag").0, Cow::Borrowed(_)));
    }
}
