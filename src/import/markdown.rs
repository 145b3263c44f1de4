//! Markdown as the markdown-based memory tools write it: YAML frontmatter,
//! sections under headings, and basic-memory's observation and relation lines.
//!
//! Only what the importers need, read leniently: a frontmatter is a flat map
//! of scalars and lists (`key: value`, `key: [a, b]`, or `key:` followed by
//! `- item` lines), anything more nested is kept as its raw text; headings
//! and list items inside fenced code blocks are text, not structure. Nothing
//! here panics on any input (a property test holds it).

use serde_json::{Map, Value};

/// A markdown document split into its frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The frontmatter's keys, in order (empty when there is none).
    pub frontmatter: Map<String, Value>,
    /// The text after the frontmatter.
    pub body: String,
}

/// Splits `text` into its frontmatter (between `---` lines at the very top)
/// and its body. A `---` opening without a closing one is body text.
pub fn split_frontmatter(text: &str) -> Document {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let whole = |frontmatter| Document {
        frontmatter,
        body: text.to_string(),
    };
    match lines.next() {
        Some(first) if first.trim_end() == "---" => {}
        _ => return whole(Map::new()),
    }
    let mut yaml = Vec::new();
    let mut consumed = text.split_inclusive('\n').next().map_or(0, str::len);
    for line in lines {
        consumed += line.len();
        if line.trim_end() == "---" || line.trim_end() == "..." {
            return Document {
                frontmatter: parse_yaml_map(&yaml),
                body: text.get(consumed..).unwrap_or_default().to_string(),
            };
        }
        yaml.push(line.trim_end_matches(['\n', '\r']));
    }
    whole(Map::new())
}

/// A flat YAML map: scalars, inline lists and block lists; other shapes are
/// kept as their text.
fn parse_yaml_map(lines: &[&str]) -> Map<String, Value> {
    let mut map = Map::new();
    let mut current: Option<(String, Vec<String>)> = None;
    let finish = |map: &mut Map<String, Value>, current: Option<(String, Vec<String>)>| {
        if let Some((key, rest)) = current {
            let items: Vec<Value> = rest
                .iter()
                .filter_map(|l| l.trim_start().strip_prefix('-'))
                .map(|item| Value::String(unquote(item.trim())))
                .collect();
            let value = if !rest.is_empty() && items.len() == rest.len() {
                Value::Array(items)
            } else if rest.is_empty() {
                Value::Null
            } else {
                Value::String(rest.join("\n").trim().to_string())
            };
            map.insert(key, value);
        }
    };
    for line in lines {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t') || line.starts_with('-');
        if indented {
            if let Some((_, rest)) = &mut current {
                rest.push(line.to_string());
            }
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        finish(&mut map, current.take());
        let key = unquote(key.trim());
        let value = value.trim();
        if value.is_empty() {
            current = Some((key, Vec::new()));
        } else {
            map.insert(key, scalar_or_list(value));
        }
    }
    finish(&mut map, current.take());
    map
}

fn scalar_or_list(value: &str) -> Value {
    if let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) {
        return Value::Array(
            inner
                .split(',')
                .map(|item| unquote(item.trim()))
                .filter(|item| !item.is_empty())
                .map(Value::String)
                .collect(),
        );
    }
    Value::String(unquote(value))
}

fn unquote(text: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(quote).and_then(|t| t.strip_suffix(quote)) {
            return inner.to_string();
        }
    }
    text.to_string()
}

/// A frontmatter value as a list of strings: a list, or a comma-separated string.
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::String(s)) => s
            .split(',')
            .map(|t| t.trim().trim_start_matches('#'))
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// One part of a document under a heading.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The heading's text; `None` for what comes before the first heading.
    pub heading: Option<String>,
    /// The section's text, heading line included.
    pub text: String,
}

/// The document's first `# ` heading, if any (outside code fences).
pub fn first_title(body: &str) -> Option<String> {
    let mut fence = Fence::default();
    body.lines()
        .filter(|line| !fence.inside(line))
        .find_map(|line| heading(line).filter(|(level, _)| *level == 1))
        .map(|(_, text)| text)
}

/// Splits `body` at headings of `level` or higher (`##` for 2: `#` and
/// `##` both start a section); headings in code fences are text.
pub fn sections(body: &str, level: usize) -> Vec<Section> {
    let mut out = Vec::new();
    let mut current = Section {
        heading: None,
        text: String::new(),
    };
    let mut fence = Fence::default();
    for line in body.split_inclusive('\n') {
        let in_code = fence.inside(line);
        let starts = (!in_code)
            .then(|| heading(line))
            .flatten()
            .filter(|(l, _)| *l <= level);
        if let Some((_, text)) = starts {
            let done = std::mem::replace(
                &mut current,
                Section {
                    heading: Some(text),
                    text: String::new(),
                },
            );
            if done.heading.is_some() || !done.text.trim().is_empty() {
                out.push(done);
            }
        }
        current.text.push_str(line);
    }
    if current.heading.is_some() || !current.text.trim().is_empty() {
        out.push(current);
    }
    out
}

/// An ATX heading: its level and text.
fn heading(line: &str) -> Option<(usize, String)> {
    let trimmed = line.trim_end();
    let hashes = trimmed.len() - trimmed.trim_start_matches('#').len();
    if hashes == 0 || hashes > 6 || line.starts_with(' ') {
        return None;
    }
    let rest = &trimmed[hashes..];
    if !rest.is_empty() && !rest.starts_with(' ') && !rest.starts_with('\t') {
        return None;
    }
    let text = rest.trim().trim_end_matches('#').trim().to_string();
    Some((hashes, text))
}

/// Tracks fenced code blocks (``` or ~~~) line by line.
#[derive(Default)]
struct Fence {
    open: Option<String>,
}

impl Fence {
    /// Whether `line` is code (a fence line itself counts as code).
    fn inside(&mut self, line: &str) -> bool {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (&self.open, marker) {
            (Some(open), Some(m)) if m == open => {
                self.open = None;
                true
            }
            (Some(_), _) => true,
            (None, Some(m)) => {
                self.open = Some(m.to_string());
                true
            }
            (None, None) => false,
        }
    }
}

/// A basic-memory observation: `- [category] content #tag (context)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The category in brackets, if any.
    pub category: Option<String>,
    /// The text, tags kept in it, context taken off.
    pub content: String,
    /// The `#tags` in it, without `#`.
    pub tags: Vec<String>,
    /// A trailing `(context)`, if any.
    pub context: Option<String>,
}

/// A basic-memory relation: `- relation_type [[Target]] (context)`, or a
/// `[[Target]]` link in any text (type `links_to`).
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The relation's type.
    pub kind: String,
    /// The entity linked to.
    pub target: String,
}

/// What a basic-memory document's body holds besides its prose.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Graph {
    /// Observation list items, in order.
    pub observations: Vec<Observation>,
    /// Relations (explicit list items and inline links), in order.
    pub relations: Vec<Relation>,
}

/// The observations and relations of a basic-memory body, by basic-memory's
/// rules: list items (outside code and block quotes) that start with
/// `[category] ` or hold a `#tag` word are observations; list items of the
/// form `type [[Target]]` (an optional `(context)` after) are relations;
/// every other `[[Target]]` in the text is a `links_to` relation.
pub fn graph(body: &str) -> Graph {
    let mut out = Graph::default();
    let mut fence = Fence::default();
    for line in body.lines() {
        if fence.inside(line) || line.trim_start().starts_with('>') {
            continue;
        }
        let item = list_item(line);
        if let Some(item) = item {
            if let Some(relation) = explicit_relation(item) {
                out.relations.push(relation);
                continue;
            }
            if let Some(observation) = observation(item) {
                out.observations.push(observation);
            }
        }
        out.relations.extend(inline_links(line));
    }
    out
}

/// The text of a `- ` / `* ` / `+ ` list item line.
fn list_item(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    ["- ", "* ", "+ "]
        .into_iter()
        .find_map(|bullet| trimmed.strip_prefix(bullet))
        .map(str::trim)
}

fn observation(item: &str) -> Option<Observation> {
    if ["[ ]", "[x]", "[X]", "[-]"]
        .iter()
        .any(|t| item.starts_with(t))
        || (item.starts_with("[[") && item.ends_with("]]"))
    {
        return None;
    }
    let mut category = None;
    let mut content = item;
    if let Some(rest) = item.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            let name = rest[..end].trim();
            let after = &rest[end + 1..];
            let is_link = after.starts_with('(');
            let valid = !name.is_empty()
                && !name.contains(['[', '(', ')'])
                && !is_clock(name)
                && (name.chars().count() != 1 || name.chars().all(char::is_alphanumeric));
            if valid
                && !is_link
                && after.starts_with(char::is_whitespace)
                && !after.trim().is_empty()
            {
                category = Some(name.to_string());
                content = after.trim();
            }
        }
    }
    let has_tag = content.split_whitespace().any(|w| w.starts_with('#'));
    if category.is_none() && !has_tag {
        return None;
    }
    let mut context = None;
    let mut text = content.to_string();
    if text.ends_with(')') {
        if let Some(start) = text.rfind('(') {
            context = Some(text[start + 1..text.len() - 1].trim().to_string());
            text = text[..start].trim().to_string();
        }
    }
    let tags = text
        .split_whitespace()
        .filter(|w| w.starts_with('#'))
        .flat_map(|w| w.split('#'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    (!text.is_empty()).then_some(Observation {
        category,
        content: text,
        tags,
        context,
    })
}

/// `12:30`, `1:02:03.500` and ranges of them: transcript timecodes, not categories.
fn is_clock(name: &str) -> bool {
    !name.is_empty()
        && name.chars().any(|c| c == ':')
        && name
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | '.' | ',' | ' ' | '-'))
}

fn explicit_relation(item: &str) -> Option<Relation> {
    let (before, rest) = item.split_once("[[")?;
    let kind = before.trim();
    let kind = match kind.chars().next() {
        Some(q @ ('"' | '\'')) if kind.len() > 1 && kind.ends_with(q) => {
            kind[1..kind.len() - 1].trim()
        }
        _ if kind.is_empty() || kind.contains(char::is_whitespace) => return None,
        _ => kind,
    };
    let (target, after) = rest.split_once("]]")?;
    let after = after.trim();
    let single_context = after.starts_with('(')
        && after.ends_with(')')
        && after[1..].find(')') == Some(after.len() - 2);
    if kind.is_empty() || target.trim().is_empty() || !(after.is_empty() || single_context) {
        return None;
    }
    Some(Relation {
        kind: kind.to_string(),
        target: target.trim().to_string(),
    })
}

fn inline_links(text: &str) -> Vec<Relation> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("[[") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("]]") else {
            break;
        };
        let target = after[..end].trim();
        if !target.is_empty() {
            out.push(Relation {
                kind: "links_to".into(),
                target: target.to_string(),
            });
        }
        rest = &after[end + 2..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frontmatter_of_scalars_and_lists() {
        let doc = split_frontmatter(
            "---\ntitle: \"Coffee: brewing\"\ntype: note\ntags:\n- coffee\n- brewing\npermalink: coffee\nother: [a, 'b']\n---\n# Coffee\n\nbody\n",
        );
        assert_eq!(doc.frontmatter["title"], "Coffee: brewing");
        assert_eq!(doc.frontmatter["tags"], json!(["coffee", "brewing"]));
        assert_eq!(doc.frontmatter["other"], json!(["a", "b"]));
        assert_eq!(doc.body, "# Coffee\n\nbody\n");
        // No closing fence: all body.
        let doc = split_frontmatter("---\ntitle: x\n");
        assert!(doc.frontmatter.is_empty());
        assert_eq!(doc.body, "---\ntitle: x\n");
        assert_eq!(string_list(Some(&json!("a, #b"))), ["a", "b"]);
    }

    #[test]
    fn sections_split_at_headings_outside_code() {
        let body = "# Memory\nintro\n## Build\nuse cargo\n```\n## not a heading\n```\n### sub\nmore\n## Deploy\nship\n";
        let parts = sections(body, 2);
        let headings: Vec<_> = parts.iter().map(|s| s.heading.clone()).collect();
        assert_eq!(
            headings,
            [
                Some("Memory".into()),
                Some("Build".into()),
                Some("Deploy".into())
            ]
        );
        assert!(parts[1].text.contains("## not a heading"));
        assert!(parts[1].text.contains("### sub"));
        assert_eq!(first_title(body).as_deref(), Some("Memory"));
        assert_eq!(sections("plain text\n", 2).len(), 1);
        assert!(sections("", 2).is_empty());
    }

    #[test]
    fn observations_and_relations_as_basic_memory_reads_them() {
        let body = "# Coffee\n\n## Observations\n- [method] Pour over gives clarity #brewing\n- [tip] Water at 96C #temp #heat (from experience)\n- [ ] a task\n- [12:30] timecode line\n- plain item without tags\n- #solo tagged item\n\n## Relations\n- relates_to [[Coffee Bean Origins]]\n- \"made with\" [[Grinder]] (burr)\n- see the [[Tea]] note and [[Milk]]\n\n```\n- [fake] inside code #x\n```\n> - [quoted] callout #y\n";
        let g = graph(body);
        let cats: Vec<_> = g.observations.iter().map(|o| o.category.clone()).collect();
        assert_eq!(cats, [Some("method".into()), Some("tip".into()), None]);
        assert_eq!(g.observations[1].tags, ["temp", "heat"]);
        assert_eq!(
            g.observations[1].context.as_deref(),
            Some("from experience")
        );
        assert_eq!(g.observations[1].content, "Water at 96C #temp #heat");
        let rels: Vec<_> = g
            .relations
            .iter()
            .map(|r| (r.kind.as_str(), r.target.as_str()))
            .collect();
        assert_eq!(
            rels,
            [
                ("relates_to", "Coffee Bean Origins"),
                ("made with", "Grinder"),
                ("links_to", "Tea"),
                ("links_to", "Milk")
            ]
        );
    }

    proptest::proptest! {
        /// Any text, markdown-like or not, parses without a panic.
        #[test]
        fn any_text_parses_without_panic(s in "(\\PC|\n|---\n|- \\[|\\]\\]|\\[\\[|#|```|\\(|\\)){0,200}") {
            let doc = split_frontmatter(&s);
            let _ = graph(&doc.body);
            let _ = sections(&doc.body, 2);
            let _ = first_title(&doc.body);
        }
    }
}
