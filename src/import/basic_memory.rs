//! basic-memory: a project folder of markdown notes.
//!
//! basic-memory keeps each entity of its knowledge graph as a markdown file
//! (the default project is `~/basic-memory`): YAML frontmatter (`title`,
//! `type`, `permalink`, `tags`, and any other keys), a body of prose,
//! observations (`- [category] text #tag (context)`) and relations
//! (`- relation_type [[Target]]`, or a `[[Target]]` anywhere). Each file
//! becomes one `note`: id `basic-memory:<permalink>` (the permalink stays
//! when a file moves; without one, the file's path), title the entity's
//! title, text the whole body, tags the frontmatter's and the observations',
//! and `metadata` keeps the entity type, the observations (category, text,
//! tags, context) and the relations. Observations of category `decision`
//! are also its `key_decisions`. Its time is the frontmatter's `created` (or
//! `date`); never the file's modification time, which a copy of the folder
//! changes (and with it every record, on the next import).

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::markdown::{first_title, graph, split_frontmatter, string_list};
use super::{
    origin_json, read_text, record_id, relative, ImportError, Item, ReadLimits, Source, Tool,
};
use crate::error::Origin;

pub(super) fn read(
    path: &Path,
    limits: &ReadLimits,
    source: &mut Source,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), ImportError> {
    let (root, files) = if path.is_file() {
        (
            path.parent().unwrap_or(Path::new("")).to_path_buf(),
            vec![path.to_path_buf()],
        )
    } else {
        let files =
            crate::bounded::walk(path, true, &|p| p.extension().is_some_and(|e| e == "md"))?;
        (path.to_path_buf(), files)
    };
    if files.is_empty() {
        return Err(ImportError::NotFound {
            tool: Tool::BasicMemory,
            path: path.to_path_buf(),
            why: "no markdown notes (*.md) in it".into(),
        });
    }
    let project = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (mut observations, mut relations) = (0, 0);
    for (done, file) in files.iter().enumerate() {
        progress(done, files.len());
        let text = read_text(file, limits.markdown, source)?;
        let at = relative(file, &root);
        let item = entity(file, &at, &text, &project)?;
        observations += item.1;
        relations += item.2;
        source.items.push(item.0);
    }
    progress(files.len(), files.len());
    source.counts.insert("entities".into(), files.len());
    source.counts.insert("observations".into(), observations);
    source.counts.insert("relations".into(), relations);
    Ok(())
}

/// One note file as an item, with its counts of observations and relations.
fn entity(
    file: &Path,
    at: &str,
    text: &str,
    project: &str,
) -> Result<(Item, usize, usize), ImportError> {
    let doc = split_frontmatter(text);
    let fm = &doc.frontmatter;
    let str_of = |key: &str| {
        fm.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let stem = at.strip_suffix(".md").unwrap_or(at).to_string();
    let title = str_of("title")
        .or_else(|| first_title(&doc.body))
        .unwrap_or_else(|| {
            file.file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| stem.clone())
        });
    let permalink = str_of("permalink").unwrap_or(stem);
    let entity_type = str_of("type").unwrap_or_else(|| "note".into());
    let g = graph(&doc.body);
    let mut tags: BTreeSet<String> = string_list(fm.get("tags")).into_iter().collect();
    tags.extend(g.observations.iter().flat_map(|o| o.tags.iter().cloned()));
    let decisions: Vec<String> = g
        .observations
        .iter()
        .filter(|o| {
            o.category
                .as_deref()
                .is_some_and(|c| c.eq_ignore_ascii_case("decision"))
        })
        .map(|o| o.content.clone())
        .collect();
    let observations: Vec<Value> = g
        .observations
        .iter()
        .map(|o| json!({"category": o.category, "content": o.content, "tags": o.tags, "context": o.context}))
        .collect();
    let relations: Vec<Value> = g
        .relations
        .iter()
        .map(|r| json!({"type": r.kind, "target": r.target}))
        .collect();
    let body = doc.body.trim();
    let text = if body.is_empty() {
        title.clone()
    } else {
        body.to_string()
    };
    let mut extra = Map::new();
    for (key, value) in fm {
        if !matches!(key.as_str(), "title" | "type" | "permalink" | "tags") {
            extra.insert(key.clone(), value.clone());
        }
    }
    let mut value = json!({
        "kind": "note",
        "id": record_id(Tool::BasicMemory, &permalink),
        "title": title,
        "text": text,
        "tags": tags,
        "metadata": {
            "origin": origin_json(Tool::BasicMemory, &permalink, at),
            "project": project,
            "entity_type": entity_type,
            "permalink": permalink,
            "tags": tags,
            "observations": observations,
            "relations": relations,
            "frontmatter": extra,
        },
    });
    if !decisions.is_empty() {
        value["key_decisions"] = json!(decisions);
    }
    let time = ["created", "date", "created_at"]
        .iter()
        .filter_map(|k| str_of(k))
        .find(|t| crate::record::parse::parse_time(t).is_some());
    if let Some(time) = time {
        value["timestamp"] = json!(time);
    }
    let counts = (g.observations.len(), g.relations.len());
    Ok((
        Item {
            origin: Origin::file(file.display().to_string()),
            value,
            project: Some(project.to_string()),
        },
        counts.0,
        counts.1,
    ))
}
