//! Secrets told by the structure around them, parsed rather than matched:
//! YAML block scalars and table columns.
//!
//! - **YAML block scalars**: `password: |` or `client_secret: >-` puts the
//!   value on the lines after the key, indented deeper (literal `|` or folded
//!   `>`, with any chomping or indentation indicator). Under a key that names
//!   a secret, those lines are the secret. (Plain and quoted scalars on the
//!   key's line are the assignment rules' part.) An encrypted value (`!vault
//!   |`) is left as it is.
//! - **Tables** (Markdown `| … |` with a `|---|` row, ASCII `+---+` boxes):
//!   a column whose header names a secret (`password`, `secret`, `token`,
//!   `api key`, `private key`, `credential`, or the word in another
//!   language) makes every cell under it a secret, unless the cell is empty,
//!   a placeholder or a description (several words).

use std::ops::Range;

/// `text` with JSON's escaped line breaks and quotes undone (a tool's JSON
/// output held as text: `"password: |\\n    …"`), and for each byte of it
/// the byte of `text` it came from (one more entry: `text`'s end); `None`
/// when `text` has no escaped line break.
pub(crate) fn unescaped(text: &str) -> Option<(String, Vec<usize>)> {
    if !text.contains("\\n") {
        return None;
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len() + 1);
    let mut i = 0;
    while i < bytes.len() {
        let next = bytes.get(i + 1).copied();
        match (bytes[i], next) {
            (b'\\', Some(b'n')) => {
                out.push(b'\n');
                from.push(i);
                i += 2;
            }
            (b'\\', Some(b'r')) => i += 2,
            (b'\\', Some(b't')) => {
                out.push(b'\t');
                from.push(i);
                i += 2;
            }
            (b'\\', Some(c @ (b'"' | b'\\'))) => {
                out.push(c);
                from.push(i);
                i += 2;
            }
            (b, _) => {
                out.push(b);
                from.push(i);
                i += 1;
            }
        }
    }
    from.push(text.len());
    // Only ASCII escapes were replaced by ASCII bytes: still UTF-8.
    String::from_utf8(out).ok().map(|s| (s, from))
}

/// The secrets `find` finds in `text`, and in its unescaped form (mapped
/// back to `text`'s bytes).
pub(crate) fn find_both(text: &str, find: fn(&str) -> Vec<Range<usize>>) -> Vec<Range<usize>> {
    // Undoing the escapes does not make the marks a structure needs (`: |`,
    // `|-`): without them in the text, neither form holds one, and the
    // unescaped copy (and its map, eight bytes a byte) is not made.
    if !might_hold_structure(text) {
        return Vec::new();
    }
    let mut spans = find(text);
    if let Some((plain, from)) = unescaped(text) {
        spans.extend(find(&plain).into_iter().map(|r| from[r.start]..from[r.end]));
    }
    spans
}

/// Whether `text` has the marks of a YAML block scalar or of a table.
fn might_hold_structure(text: &str) -> bool {
    might_hold_block_scalar(text) || might_hold_table(text)
}

/// A key followed by `|` or `>`: `key: |`, `key:>-`.
fn might_hold_block_scalar(text: &str) -> bool {
    text.contains(": |") || text.contains(": >") || text.contains(":|") || text.contains(":>")
}

/// A separator row: `|---|`, `| --- |`, `|:--|`, `+---+`.
fn might_hold_table(text: &str) -> bool {
    text.contains('|')
        && ["|-", "| -", "|:", "-+", "-|"]
            .iter()
            .any(|s| text.contains(s))
}

/// Whether a key or a column header names a secret.
fn names_a_secret(name: &str) -> bool {
    let lower = name.to_lowercase();
    let lower = lower.trim_matches(|c: char| !c.is_alphanumeric());
    let settings = [
        "name", "length", "policy", "hint", "hash", "type", "expir", "ttl", "url", "file", "path",
        "count", "id", "required",
    ];
    if settings.iter().any(|s| lower.ends_with(s)) || about_secrets(lower) {
        return false;
    }
    [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "token",
        "api key",
        "api_key",
        "apikey",
        "api-key",
        "private key",
        "private_key",
        "privatekey",
        "access key",
        "access_key",
        "credential",
        "contraseña",
        "senha",
        "passwort",
        "kennwort",
        "mot de passe",
        "пароль",
        "密码",
        "密碼",
        "パスワード",
        "비밀번호",
        "पासवर्ड",
        "şifre",
        "parola",
    ]
    .iter()
    .any(|w| lower.contains(w))
        || lower == "pass"
        || lower.ends_with("_pass")
        || lower.ends_with(" pass")
        || lower.starts_with("pass_")
}

/// Whether a header or key names something about secrets that is not one:
/// token counts and tokenizers, hashes, policies, names of secrets.
fn about_secrets(lower: &str) -> bool {
    [
        "tokens",
        "token count",
        "tokenizer",
        "bypass",
        "passed",
        "compass",
        "passenger",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// The line ranges of `text` (without their line break).
fn lines(text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in text.bytes().enumerate() {
        if b == b'\n' {
            let end = if i > start && text.as_bytes()[i - 1] == b'\r' {
                i - 1
            } else {
                i
            };
            out.push(start..end);
            start = i + 1;
        }
    }
    out.push(start..text.len());
    out
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// The secrets of `text` held as YAML block scalars under secret-like keys:
/// the range from the first content line's first character to the last
/// content line's end.
pub(crate) fn yaml_block_scalars(text: &str) -> Vec<Range<usize>> {
    if !might_hold_block_scalar(text) {
        return Vec::new();
    }
    let lines = lines(text);
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = &text[lines[i].clone()];
        i += 1;
        let Some(colon) = line.rfind(':') else {
            continue;
        };
        let (key, rest) = (&line[..colon], line[colon + 1..].trim());
        let block = rest.starts_with(['|', '>'])
            && rest[1..]
                .chars()
                .all(|c| matches!(c, '-' | '+' | '0'..='9' | ' ' | '\t'));
        let key = key
            .trim()
            .trim_start_matches("- ")
            .trim_matches(['"', '\'']);
        if !block || key.is_empty() || !names_a_secret(key) {
            continue;
        }
        let key_indent = indent(line);
        let mut first: Option<usize> = None;
        let mut last = 0;
        while i < lines.len() {
            let next = &text[lines[i].clone()];
            if next.trim().is_empty() {
                i += 1;
                continue;
            }
            if indent(next) <= key_indent {
                break;
            }
            let start = lines[i].start + indent(next);
            first.get_or_insert(start);
            last = lines[i].end;
            i += 1;
        }
        if let Some(start) = first {
            found.push(start..last);
        }
    }
    found
}

/// The cells of one table row between its bars, each trimmed.
fn cells(text: &str, line: &Range<usize>) -> Vec<Range<usize>> {
    let row = &text[line.clone()];
    // What stands before the first bar is no cell (a prompt, or the start
    // of the JSON string the table is printed in).
    let Some(first_bar) = row.find('|') else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut at = line.start + first_bar + 1;
    loop {
        let next = text[at..line.end].find('|').map(|i| at + i);
        let end = next.unwrap_or(line.end);
        let cell = &text[at..end];
        let lead = cell.len() - cell.trim_start().len();
        let trail = cell.len() - cell.trim_end().len();
        if next.is_some() || !cell.trim().is_empty() {
            out.push(at + lead..(end - trail).max(at + lead));
        }
        match next {
            Some(bar) => at = bar + 1,
            None => break,
        }
    }
    out
}

/// Whether a row is a table's separator (`|---|:--:|`, `+-----+----+`).
fn separator(row: &str) -> bool {
    let row = row.trim();
    (row.starts_with('|') || row.starts_with('+'))
        && row.contains("--")
        && row
            .chars()
            .all(|c| matches!(c, '|' | '+' | '-' | ':' | '=' | ' ' | '\t'))
}

/// Whether a cell under a secret's header holds a value, not a placeholder
/// or a description.
fn holds_a_value(cell: &str) -> bool {
    let lower = cell.to_lowercase();
    let placeholders = [
        "-", "—", "–", "n/a", "na", "none", "null", "nil", "empty", "unset", "yes", "no", "true",
        "false", "required", "optional", "string", "text", "hidden", "masked", "secret",
        "password", "token", "changeme", "✓", "✗", "x", "…", "...", "tbd", "todo", "?",
    ];
    cell.chars().count() >= 4
        && !placeholders.contains(&lower.as_str())
        && !cell
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ',' | '.' | '%' | '_'))
        && !cell.contains(char::is_whitespace)
        && !cell.starts_with("[REDACTED")
        && !cell.starts_with('$')
        && !cell.starts_with('<')
        && !cell.contains("${")
        && !cell.contains("{{")
        && !cell
            .chars()
            .all(|c| c == '*' || c == '•' || c == 'x' || c == 'X')
}

/// The secrets of `text` held in table columns whose header names a secret.
pub(crate) fn table_cells(text: &str) -> Vec<Range<usize>> {
    if !might_hold_table(text) {
        return Vec::new();
    }
    let lines = lines(text);
    let mut found = Vec::new();
    let mut i = 0;
    while i + 1 < lines.len() {
        let header = &lines[i];
        let below = &text[lines[i + 1].clone()];
        let header_text = &text[header.clone()];
        // Markdown: header, then a separator. ASCII: border, header, border.
        let (head, body_from) = if header_text.contains('|') && separator(below) {
            (header.clone(), i + 2)
        } else if separator(header_text)
            && below.contains('|')
            && lines
                .get(i + 2)
                .is_some_and(|l| separator(&text[l.clone()]))
        {
            (lines[i + 1].clone(), i + 3)
        } else {
            i += 1;
            continue;
        };
        let columns: Vec<usize> = cells(text, &head)
            .iter()
            .enumerate()
            .filter(|(_, c)| names_a_secret(&text[(*c).clone()]))
            .map(|(k, _)| k)
            .collect();
        let mut j = body_from;
        while j < lines.len() {
            let row = &text[lines[j].clone()];
            if separator(row) {
                j += 1;
                continue;
            }
            if !row.contains('|') {
                break;
            }
            let row_cells = cells(text, &lines[j]);
            for &k in &columns {
                if let Some(cell) = row_cells.get(k) {
                    if holds_a_value(&text[cell.clone()]) {
                        found.push(cell.clone());
                    }
                }
            }
            j += 1;
        }
        i = j.max(i + 1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(text: &str, find: fn(&str) -> Vec<Range<usize>>) -> Vec<&str> {
        find(text).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn escaped_line_breaks_are_read_as_lines() {
        let text = r#"{"out":"db:\n  password: |\n    Xy7!kq2L\n  user: app"}"#;
        let found = find_both(text, yaml_block_scalars);
        assert_eq!(
            found.iter().map(|r| &text[r.clone()]).collect::<Vec<_>>(),
            ["Xy7!kq2L"]
        );
    }

    #[test]
    fn block_scalars_under_secret_keys_are_secrets() {
        let text = "db:\n  password: |\n    Xy7!kq2L\n    second line\n  user: app\n";
        assert_eq!(
            secrets(text, yaml_block_scalars),
            ["Xy7!kq2L\n    second line"]
        );
        let folded = "client_secret: >-\n  abc\n  def\nnext: 1";
        assert_eq!(secrets(folded, yaml_block_scalars), ["abc\n  def"]);
        assert!(secrets("description: |\n  some text\n", yaml_block_scalars).is_empty());
        assert!(secrets(
            "password: !vault |\n  $ANSIBLE_VAULT;1.1\n",
            yaml_block_scalars
        )
        .is_empty());
        assert!(secrets("password_policy: |\n  12 chars\n", yaml_block_scalars).is_empty());
    }

    #[test]
    fn table_columns_under_secret_headers_are_secrets() {
        let md = "| user | password | host |\n|---|---|---|\n| ann | Xy7!kq2L | db1 |\n| bob | -- | db2 |\n| cy | hunter | db3 |";
        assert_eq!(secrets(md, table_cells), ["Xy7!kq2L", "hunter"]);
        let ascii = "+------+----------+\n| user | API Key  |\n+------+----------+\n| ann  | k3y-9f8e7d |\n+------+----------+";
        assert_eq!(secrets(ascii, table_cells), ["k3y-9f8e7d"]);
        let docs = "| field | description |\n|---|---|\n| password | The user's password |";
        assert!(secrets(docs, table_cells).is_empty());
        let about = "| name | password required |\n|---|---|\n| ann | yes |";
        assert!(secrets(about, table_cells).is_empty());
    }
}
