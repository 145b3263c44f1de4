//! OpenClaw's memory: the agent workspace's markdown files.
//!
//! An OpenClaw agent keeps its long-term memory as plain markdown in its
//! workspace (`~/.openclaw/workspace`): `MEMORY.md` (or `memory.md`), the
//! curated memory, and `memory/*.md`, the daily logs (`YYYY-MM-DD.md`, and
//! `YYYY-MM-DD-<slug>.md` from the session-memory hook), which its memory
//! search indexes. Each file is split at its `#` and `##` headings and each
//! section becomes a `note`: id `openclaw:<file>#<heading slug>` (the file
//! alone when it has one section), title the heading, text the section, time
//! the date in the file's name (`MEMORY.md` has none: a file's modification
//! time would change the record whenever the workspace is copied). A section
//! whose heading is renamed comes in as a new note (its old one stays).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::markdown::{first_title, sections};
use super::{
    origin_json, read_text, record_id, relative, slug, ImportError, Item, ReadLimits, Source, Tool,
};
use crate::error::Origin;

/// The files of a workspace (or the one file given) that hold memory.
fn memory_files(path: &Path) -> Result<(PathBuf, Vec<PathBuf>), ImportError> {
    if path.is_file() {
        let root = path.parent().unwrap_or(Path::new("")).to_path_buf();
        return Ok((root, vec![path.to_path_buf()]));
    }
    let mut files = Vec::new();
    for name in ["MEMORY.md", "memory.md"] {
        let file = path.join(name);
        // On a case-insensitive file system both names are one file.
        if file.is_file() && !files.iter().any(|f: &PathBuf| same_file(f, &file)) {
            files.push(file);
        }
    }
    let daily = path.join("memory");
    if daily.is_dir() {
        // Dreaming's working files and copies of other tools' memory are not
        // the agent's memory of its own.
        let skipped = [daily.join("dreaming"), daily.join("imports")];
        files.extend(crate::bounded::walk(&daily, true, &|p| {
            p.extension().is_some_and(|e| e == "md") && !skipped.iter().any(|s| p.starts_with(s))
        })?);
    }
    Ok((path.to_path_buf(), files))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The date a daily log's name starts with (`2026-01-05.md`, `2026-01-05-fix.md`).
fn date_in_name(file: &Path) -> Option<String> {
    let stem = file.file_stem()?.to_str()?;
    let date = stem.get(..10)?;
    let ok = date.bytes().enumerate().all(|(i, b)| match i {
        4 | 7 => b == b'-',
        _ => b.is_ascii_digit(),
    });
    (ok && crate::record::parse::parse_time(date).is_some()).then(|| format!("{date}T00:00:00Z"))
}

pub(super) fn read(
    path: &Path,
    limits: &ReadLimits,
    source: &mut Source,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), ImportError> {
    let (root, files) = memory_files(path)?;
    if files.is_empty() {
        return Err(ImportError::NotFound {
            tool: Tool::Openclaw,
            path: path.to_path_buf(),
            why: "no MEMORY.md, memory.md or memory/*.md".into(),
        });
    }
    let mut section_count = 0;
    for (done, file) in files.iter().enumerate() {
        progress(done, files.len());
        let text = read_text(file, limits.markdown, source)?;
        let at = relative(file, &root);
        let time = date_in_name(file);
        let file_title = first_title(&text).unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| at.clone())
        });
        let parts = sections(&text, 2);
        let single = parts.len() == 1;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (index, part) in parts.into_iter().enumerate() {
            if part.text.trim().is_empty() {
                continue;
            }
            let source_id = if single {
                at.clone()
            } else {
                let base = part.heading.as_deref().map_or("top".into(), slug);
                let n = seen.entry(base.clone()).or_insert(0);
                *n += 1;
                if *n == 1 {
                    format!("{at}#{base}")
                } else {
                    format!("{at}#{base}-{n}")
                }
            };
            let title = match &part.heading {
                Some(h) if *h != file_title => format!("{file_title}: {h}"),
                Some(h) => h.clone(),
                None => file_title.clone(),
            };
            let mut value = json!({
                "kind": "note",
                "id": record_id(Tool::Openclaw, &source_id),
                "title": title,
                "text": without_comments(&part.text).trim(),
                "metadata": {
                    "origin": origin_json(Tool::Openclaw, &source_id, &at),
                    "file": at,
                    "section": index,
                },
            });
            if let Some(time) = &time {
                value["timestamp"] = json!(time);
            }
            source.items.push(Item {
                origin: Origin::file(format!("{}: section {}", file.display(), index + 1)),
                value,
                project: None,
            });
            section_count += 1;
        }
    }
    progress(files.len(), files.len());
    source.counts.insert("files".into(), files.len());
    source.counts.insert("sections".into(), section_count);
    Ok(())
}

/// The text without HTML comments (dreaming's promotion markers,
/// `<!-- trigger: … -->`): bookkeeping, not memory.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start..].find("-->") {
            Some(end) => rest = &rest[start + end + 3..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_bookkeeping() {
        assert_eq!(
            without_comments(
                "- snippet <!-- trigger: a, b --> <!-- importance: 9 -->\n<!-- marker -->\nnext"
            ),
            "- snippet  \n\nnext"
        );
        assert_eq!(without_comments("a <!-- open"), "a ");
    }

    #[test]
    fn daily_log_names_give_the_date() {
        assert_eq!(
            date_in_name(Path::new("memory/2026-01-05.md")).as_deref(),
            Some("2026-01-05T00:00:00Z")
        );
        assert_eq!(
            date_in_name(Path::new("memory/2026-01-05-oauth-fix.md")).as_deref(),
            Some("2026-01-05T00:00:00Z")
        );
        assert_eq!(date_in_name(Path::new("MEMORY.md")), None);
        assert_eq!(date_in_name(Path::new("2026-13-45.md")), None);
    }
}
