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
//!   follows it is a word of the next line; and the same for the value of a
//!   secret-like name (`API_KEY=…`, `token: …`, "the secret is …") that runs
//!   to the end of a line and goes on at the start of the next;
//! - **compatibility and look-alike letters** (issue 52): full-width forms
//!   (`ｐａｓｓｗｏｒｄ：`, `API_KEY＝`), ideographic spaces, mathematical and
//!   enclosed letters become their NFKC forms, so a full-width colon is a
//!   colon; and a word that mixes ASCII letters with Cyrillic, Greek or
//!   small-capital look-alikes (`pаsswоrd` with a Cyrillic `а` and `о`) is
//!   read by its skeleton, each look-alike as the ASCII letter it imitates
//!   (Unicode's confusables). A word written wholly in another script
//!   (`пароль`, `токен`) is left as it is: the rules know those words by
//!   their own spelling.
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

/// The ASCII letter a look-alike letter of another script imitates
/// (Unicode's confusables.txt, the letters whose skeleton is one ASCII
/// letter: Cyrillic, Greek, Latin small capitals and a few others).
#[rustfmt::skip]
fn confusable(c: char) -> Option<char> {
    Some(match c {
        'а' => 'a', 'А' => 'A', 'В' => 'B', 'в' => 'b', 'е' => 'e', 'Е' => 'E', 'ё' => 'e',
        'к' => 'k', 'К' => 'K', 'М' => 'M', 'м' => 'm', 'Н' => 'H', 'н' => 'h', 'о' => 'o',
        'О' => 'O', 'р' => 'p', 'Р' => 'P', 'с' => 'c', 'С' => 'C', 'т' => 't', 'Т' => 'T',
        'у' => 'y', 'У' => 'Y', 'х' => 'x', 'Х' => 'X', 'ѕ' => 's', 'Ѕ' => 'S', 'і' => 'i',
        'І' => 'I', 'ј' => 'j', 'Ј' => 'J', 'ԁ' => 'd', 'ԛ' => 'q', 'ԝ' => 'w', 'Ԝ' => 'W',
        'ү' => 'y', 'Ү' => 'Y', 'һ' => 'h', 'Һ' => 'H', 'ӏ' => 'l', 'Ӏ' => 'I', 'ɡ' => 'g',
        'α' => 'a', 'Α' => 'A', 'Β' => 'B', 'ε' => 'e', 'Ε' => 'E', 'Ζ' => 'Z', 'Η' => 'H',
        'ι' => 'i', 'Ι' => 'I', 'κ' => 'k', 'Κ' => 'K', 'Μ' => 'M', 'ν' => 'v', 'Ν' => 'N',
        'ο' => 'o', 'Ο' => 'O', 'ρ' => 'p', 'Ρ' => 'P', 'τ' => 't', 'Τ' => 'T', 'υ' => 'u',
        'Υ' => 'Y', 'χ' => 'x', 'Χ' => 'X', 'ω' => 'w', 'ı' => 'i', 'ȷ' => 'j', 'ǀ' => 'l',
        'ᴀ' => 'a', 'ʙ' => 'b', 'ᴄ' => 'c', 'ᴅ' => 'd', 'ᴇ' => 'e', 'ɢ' => 'g', 'ʜ' => 'h',
        'ɪ' => 'i', 'ᴊ' => 'j', 'ᴋ' => 'k', 'ʟ' => 'l', 'ᴍ' => 'm', 'ɴ' => 'n', 'ᴏ' => 'o',
        'ᴘ' => 'p', 'ʀ' => 'r', 'ꜱ' => 's', 'ᴛ' => 't', 'ᴜ' => 'u', 'ᴠ' => 'v', 'ᴡ' => 'w',
        'ʏ' => 'y', 'ᴢ' => 'z',
        _ => return None,
    })
}

/// Whether NFKC may change `c` into something the rules read: the blocks of
/// compatibility characters that stand for ASCII ones (full-width and
/// half-width forms, ideographic and typographic spaces, small form
/// variants, letter-like symbols, enclosed and mathematical alphanumerics,
/// modifier letters). Other scripts' letters are left alone.
fn compatible(c: char) -> bool {
    matches!(c,
        '\u{00A0}' | '\u{02B0}'..='\u{02FF}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{2100}'..='\u{214F}' | '\u{2460}'..='\u{24FF}'
        | '\u{3000}' | '\u{FE30}'..='\u{FE6F}' | '\u{FF01}'..='\u{FFEE}'
        | '\u{1D400}'..='\u{1D7FF}' | '\u{1F100}'..='\u{1F1FF}')
}

/// Whether `c` is worth a view of its own: a compatibility character the
/// rules would read differently, but the full-width punctuation CJK prose
/// is written with (`，（）！？；`), which no rule reads and which would
/// otherwise send every Chinese or Japanese text through the rules twice.
fn worth_folding(c: char) -> bool {
    compatible(c)
        && !matches!(
            c,
            '\u{FF01}'
                | '\u{FF08}'
                | '\u{FF09}'
                | '\u{FF0C}'
                | '\u{FF1B}'
                | '\u{FF1F}'
                | '\u{3000}'
        )
        && nfkc(c).is_some()
}

/// `c` as NFKC writes it, when that differs from `c` (see [`compatible`]).
fn nfkc(c: char) -> Option<String> {
    use unicode_normalization_alignments::UnicodeNormalization;
    if !compatible(c) {
        return None;
    }
    let out: String = std::iter::once(c).nfkc().map(|(c, _)| c).collect();
    out.chars().ne(std::iter::once(c)).then_some(out)
}

/// The byte ranges of the words of `text` read by their skeleton: runs of
/// letters and digits that hold an ASCII letter and a look-alike, and no
/// other letter of another script (see the module doc).
fn mixed_script_words(text: &str) -> Vec<Range<usize>> {
    let mut words = Vec::new();
    let mut start: Option<usize> = None;
    let (mut ascii, mut lookalike, mut other) = (false, false, false);
    for (i, c) in text.char_indices() {
        let is_lookalike = !c.is_ascii() && confusable(c).is_some();
        if c.is_alphanumeric() || is_lookalike {
            if start.is_none() {
                start = Some(i);
                (ascii, lookalike, other) = (false, false, false);
            }
            ascii |= c.is_ascii_alphabetic();
            lookalike |= is_lookalike;
            other |= !c.is_ascii() && !is_lookalike && !compatible(c);
        } else if let Some(at) = start.take() {
            if ascii && lookalike && !other {
                words.push(at..i);
            }
        }
    }
    if let Some(at) = start {
        if ascii && lookalike && !other {
            words.push(at..text.len());
        }
    }
    words
}

/// A secret's value cut by a line break: a secret-like name, its operator
/// (or "is"), a run of token characters to the end of the line, and a bare
/// run of token characters starting the next (a terminal or an editor
/// wrapped it; a paste broke it). The line break is taken out when what
/// follows it reads as the rest of a token, not as a word.
fn wrapped_value() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?i)(?:passw(?:or)?d|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|auth|pwd|_pass|_key)[\w.-]{0,20}(?:\\{0,2}["'])?[ \t]{0,3}(?:=|:|[ \t]is)[ \t]{0,3}(?:\\{0,2}["'])?[A-Za-z0-9+/_.~=!@#$%^&*-]{8,}((?:\r?\n|(?:\\r)?\\n)[ \t]*)([A-Za-z0-9+/_-]{3,}={0,2})(?:[\s"'`,;]|\\[nrt"]|$)"#,
        )
        .ok()
    })
    .as_ref()
}

/// Vendor prefixes whose token may be broken across lines (see the module doc).
fn broken_token() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?:ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-ant-|sk-proj-|sk-svcacct-|sk_live_|rk_live_|xox[abposr]-|hf_|npm_|pypi-|dckr_pat_|dop_v1_|doo_v1_|AKIA|ASIA|AIza|SG\.|shpat_|lin_api_|pplx-|xai-|GOCSPX-|ya29\.)[A-Za-z0-9_.\-\x{200B}-\x{200F}\x{2060}-\x{2064}\x{FEFF}\x{AD}]{4,}(?:\r?\n|(?:\\r)?\\n)[A-Za-z0-9_-]+(?:[\s"'`,;]|\\[nrt"]|$)"#,
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

/// Whether `text` holds something the view would change, and the
/// mixed-script words it holds (see [`mixed_script_words`]).
fn worth_a_view(text: &str) -> (bool, Vec<Range<usize>>) {
    // An escaped escape (`\\"`, `\\n`: two levels deep or more), an
    // invisible or compatibility character or a look-alike inside an ASCII
    // word (never in ASCII text), a vendor token or a secret's value before
    // a line break.
    // One pass over the characters outside ASCII (most texts have none, or
    // a few dashes and arrows): the words are read only when a look-alike
    // letter is there at all.
    let (mut lookalike, mut foldable) = (false, false);
    if !text.is_ascii() {
        for c in text.chars().filter(|c| !c.is_ascii()) {
            lookalike |= confusable(c).is_some();
            foldable |= is_invisible(c) || worth_folding(c);
            if lookalike && foldable {
                break;
            }
        }
    }
    let words = if lookalike {
        mixed_script_words(text)
    } else {
        Vec::new()
    };
    let worth = !words.is_empty()
        || foldable
        || text.contains("\\\\\"")
        || text.contains("\\\\n")
        || broken_token().is_some_and(|re| re.is_match(text))
        || wrapped_value().is_some_and(|re| re.is_match(text));
    (worth, words)
}

/// The view of `text`, or `None` when it would be the text itself.
pub(crate) fn view(text: &str) -> Option<View> {
    let (worth, words) = worth_a_view(text);
    if !worth {
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
        if !c.is_ascii() {
            if let Some(folded) = nfkc(c) {
                for f in folded.chars() {
                    push(&mut out, &mut from, f, i..i + len);
                }
                changed = true;
                i += len;
                continue;
            }
            let in_word = words.iter().any(|w| w.start <= i && i < w.end);
            if let Some(ascii) = confusable(c).filter(|_| in_word) {
                push(&mut out, &mut from, ascii, i..i + len);
                changed = true;
                i += len;
                continue;
            }
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
        .chain(wrapped_value().into_iter().flat_map(|re| {
            re.captures_iter(text).filter_map(|caps| {
                let (brk, next) = (caps.get(1)?, caps.get(2)?);
                looks_like_a_token(next.as_str()).then(|| brk.range())
            })
        }))
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
    fn full_width_and_look_alike_letters_read_as_ascii() {
        assert_eq!(seen("ＡＰＩ＿ＫＥＹ＝abc"), "API_KEY=abc");
        assert_eq!(seen("password：Xy7"), "password:Xy7");
        // A Cyrillic а and о inside an ASCII word.
        assert_eq!(seen("p\u{0430}ssw\u{043e}rd: x"), "password: x");
        // Words wholly in another script stay as written.
        assert!(view("пароль: qwerty123, токен").is_none());
        assert!(view("密码是 abc123").is_none());
        // Mapped back to the original bytes, whole characters.
        let text = "ｔｏｋｅｎ＝Xy7";
        let v = view(text).unwrap();
        let at = v.text.find('=').unwrap();
        assert_eq!(&text[v.original(&(at..at + 1))], "＝");
    }

    #[test]
    fn a_secret_value_wrapped_at_a_line_end_is_joined() {
        assert_eq!(
            seen("API_KEY=Xk29fjq83nfa0Qz\nP7sKw02 rest"),
            "API_KEY=Xk29fjq83nfa0QzP7sKw02 rest"
        );
        assert_eq!(
            seen("token: 8fjq83nfa0Qz91\n    a8B2kq\n"),
            "token: 8fjq83nfa0Qz91a8B2kq\n"
        );
        // The next line's word, or its assignment, is not part of the value.
        assert!(view("API_KEY=Xk29fjq83nfa0Qz\nexport FOO=1").is_none());
        assert!(view("password: Xy7kq2Lm99\n  username: bob").is_none());
        assert!(view("DB_PASSWORD=hunterabcd\nDB_PORT=5432").is_none());
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
