//! Go regular expressions (gitleaks' dialect, RE2) as Rust's `regex` crate reads them.
//!
//! The two dialects agree on almost everything; where they differ, this
//! rewrites the Go pattern so it means in Rust what it meant in gitleaks:
//! - `\w`, `\d`, `\s` and their negations are ASCII in Go and Unicode in Rust:
//!   they become explicit ASCII classes. `\b` and `\B` become `(?-u:\b)` and
//!   `(?-u:\B)`, ASCII as in Go; this also keeps Rust's fast lazy DFA on text
//!   with non-ASCII letters, where a Unicode `\b` would send it to a slower engine.
//! - A `{` that does not open a repetition (`\${VAR}`) is a literal in Go and
//!   an error in Rust: it is escaped.
//!
//! `.` and negated classes stay Unicode, as in Go (they match a whole
//! character), so a match never splits a UTF-8 character.

/// `pattern` (Go syntax) rewritten for the `regex` crate.
pub(crate) fn go_to_rust(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 32);
    let mut i = 0;
    // Inside a bracket class, and whether the next character is its first
    // (where `]` is a literal).
    let mut in_class = false;
    let mut class_first = false;
    while i < chars.len() {
        let c = chars[i];
        let first = class_first;
        class_first = false;
        match c {
            '\\' if i + 1 < chars.len() => {
                let escaped = chars[i + 1];
                i += 2;
                match ascii_class(escaped) {
                    Some(class) => {
                        out.push_str(class);
                        // `[\w-.]`: Go reads the `-` after a class as a literal;
                        // Rust would read a range from a class and refuse.
                        if in_class && chars.get(i) == Some(&'-') && chars.get(i + 1) != Some(&']')
                        {
                            out.push_str("\\-");
                            i += 1;
                        }
                    }
                    None if !in_class && (escaped == 'b' || escaped == 'B') => {
                        out.push_str("(?-u:\\");
                        out.push(escaped);
                        out.push(')');
                    }
                    None => {
                        out.push('\\');
                        out.push(escaped);
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                class_first = true;
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                // A POSIX class such as `[:alpha:]`, copied whole.
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == ':' && chars[j + 1] == ']')
                    .map_or(chars.len(), |j| j + 2);
                out.extend(&chars[i..end]);
                i = end;
                continue;
            }
            '[' => out.push_str("\\["),
            ']' if in_class && !first => {
                in_class = false;
                out.push(']');
            }
            '{' if !in_class && !opens_repetition(&chars[i..]) => out.push_str("\\{"),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

/// The ASCII class Go means by `\w`, `\d`, `\s` or a negation, written so it
/// also works nested inside a bracket class.
fn ascii_class(escaped: char) -> Option<&'static str> {
    Some(match escaped {
        'w' => "[0-9A-Za-z_]",
        'W' => "[^0-9A-Za-z_]",
        'd' => "[0-9]",
        'D' => "[^0-9]",
        's' => "[\\t\\n\\f\\r ]",
        'S' => "[^\\t\\n\\f\\r ]",
        _ => return None,
    })
}

/// Whether `rest` (starting at a `{`) is a repetition: `{n}`, `{n,}` or `{n,m}`.
fn opens_repetition(rest: &[char]) -> bool {
    let Some(close) = rest.iter().position(|&c| c == '}') else {
        return false;
    };
    let inner: String = rest[1..close].iter().collect();
    let mut parts = inner.splitn(2, ',');
    let low = parts.next().unwrap_or("");
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    digits(low)
        && parts
            .next()
            .is_none_or(|high| high.is_empty() || digits(high))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_become_ascii_and_literal_braces_are_escaped() {
        let cases = [
            (r"\w+", "[0-9A-Za-z_]+"),
            (r"[\w.-]{0,50}?", "[[0-9A-Za-z_].-]{0,50}?"),
            (r"[^\s]", r"[^[\t\n\f\r ]]"),
            (r"\bghp_\B", r"(?-u:\b)ghp_(?-u:\B)"),
            (r"[\w-.]", r"[[0-9A-Za-z_]\-.]"),
            (r"[\w-]", r"[[0-9A-Za-z_]-]"),
            (r"^\${(?:[A-Z_]+)}$", r"^\$\{(?:[A-Z_]+)}$"),
            (r"a{2,}b{3}c{1,4}", "a{2,}b{3}c{1,4}"),
            (r"[]a]", "[]a]"),
            (r"[[:alpha:]\d]", "[[:alpha:][0-9]]"),
            (r"\x60\.", r"\x60\."),
        ];
        for (go, rust) in cases {
            assert_eq!(go_to_rust(go), rust, "{go}");
            regex::Regex::new(rust).unwrap_or_else(|e| panic!("{go}: {e}"));
        }
    }

    #[test]
    fn the_translation_matches_as_go_does() {
        let word = regex::Regex::new(&go_to_rust(r"^\w+$")).unwrap();
        assert!(word.is_match("abc_123"));
        assert!(!word.is_match("café"), "Go's \\w is ASCII");
        let boundary = regex::Regex::new(&go_to_rust(r"\bkey\b")).unwrap();
        assert!(boundary.is_match("é key é"));
        let any = regex::Regex::new(&go_to_rust(r"^[^a]$")).unwrap();
        assert!(
            any.is_match("é"),
            "a negated class matches a whole character"
        );
    }
}
