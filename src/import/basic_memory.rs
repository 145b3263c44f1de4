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
//! tags, context) and the relations, and `project` the basic-memory project.
//! Given a home holding `.basic-memory/config.json` (the default: `~`), every
//! project the config lists is read. Observations of category `decision`
//! are also its `key_decisions`. Its time is the frontmatter's `created` (or
//! `date`); never the file's modification time, which a copy of the folder
//! changes (and with it every record, on the next import).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::markdown::{first_title, graph, split_frontmatter, string_list};
use super::{
    origin_json, read_text, record_id, relative, ImportError, Item, ReadLimits, Source, Tool,
};
use crate::error::Origin;

/// The projects a basic-memory home's `.basic-memory/config.json` lists,
/// as (name, folder): `"projects": {"name": "/path"}` or, in newer versions,
/// `{"name": {"path": "/path", …}}`. `None` when `dir` holds no such config.
pub(super) fn configured_projects(
    dir: &Path,
) -> Result<Option<Vec<(String, PathBuf)>>, ImportError> {
    let file = dir.join(".basic-memory").join("config.json");
    if !file.is_file() {
        return Ok(None);
    }
    let limit = crate::bounded::Limit {
        bytes: 1 << 20,
        setting: "basic-memory's config.json",
    };
    let bytes = crate::bounded::read_whole(&file, limit, false)?;
    let expected =
        "basic-memory's config: {\"projects\": {\"name\": \"/path\" or {\"path\": \"/path\"}}}";
    let config: Value = serde_json::from_slice(&bytes).map_err(|e| {
        ImportError::corrupt(
            &file,
            Some(format!("line {}", e.line())),
            format!("not JSON: {e}"),
            expected,
        )
    })?;
    let Some(projects) = config.get("projects").and_then(Value::as_object) else {
        return Err(ImportError::corrupt(
            &file,
            Some("field projects".into()),
            "no `projects` map",
            expected,
        ));
    };
    let mut out = Vec::new();
    for (name, value) in projects {
        let folder = value
            .as_str()
            .or_else(|| value.get("path").and_then(Value::as_str))
            .ok_or_else(|| {
                ImportError::corrupt(
                    &file,
                    Some(format!("field projects.{name}")),
                    "a project without its path",
                    expected,
                )
            })?;
        let folder = match folder.strip_prefix("~/") {
            Some(rest) => dir.join(rest),
            None => PathBuf::from(folder),
        };
        // A home copied elsewhere names its old folders: the project is then
        // looked for at the same place under this home.
        let folder = if folder.exists() {
            folder
        } else {
            moved(dir, &folder).unwrap_or(folder)
        };
        out.push((name.clone(), folder));
    }
    Ok(Some(out))
}

/// Where `folder` (an absolute path that no longer exists) is under `home`:
/// the longest tail of its components that exists there.
fn moved(home: &Path, folder: &Path) -> Option<PathBuf> {
    let parts: Vec<_> = folder.components().collect();
    (1..parts.len())
        .map(|skip| {
            parts[skip..]
                .iter()
                .fold(home.to_path_buf(), |p, c| p.join(c))
        })
        .find(|candidate| candidate.is_dir())
}

pub(super) fn read(
    path: &Path,
    limits: &ReadLimits,
    source: &mut Source,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(), ImportError> {
    // A home with basic-memory's config: every project it lists (a project
    // whose folder is gone is counted as missing); else one project folder
    // (or one note), named after its folder.
    let projects: Vec<(String, PathBuf)> = match configured_projects(path)? {
        Some(projects) => projects,
        None if path.is_file() => vec![(String::new(), path.to_path_buf())],
        None => {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            vec![(name, path.to_path_buf())]
        }
    };
    let mut work: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    let mut missing = 0;
    for (name, folder) in &projects {
        if folder.is_file() {
            let root = folder.parent().unwrap_or(Path::new("")).to_path_buf();
            let name = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            work.push((name, root, folder.clone()));
        } else if folder.is_dir() {
            for file in
                crate::bounded::walk(folder, true, &|p| p.extension().is_some_and(|e| e == "md"))?
            {
                work.push((name.clone(), folder.clone(), file));
            }
        } else {
            missing += 1;
        }
    }
    if work.is_empty() {
        return Err(ImportError::NotFound {
            tool: Tool::BasicMemory,
            path: path.to_path_buf(),
            why: "no markdown notes (*.md) in it".into(),
        });
    }
    let (mut observations, mut relations) = (0, 0);
    for (done, (project, root, file)) in work.iter().enumerate() {
        progress(done, work.len());
        let text = read_text(file, limits.markdown, source)?;
        let at = relative(file, root);
        let item = entity(file, &at, &text, project)?;
        observations += item.1;
        relations += item.2;
        source.items.push(item.0);
    }
    progress(work.len(), work.len());
    source.counts.insert("entities".into(), work.len());
    source.counts.insert("observations".into(), observations);
    source.counts.insert("relations".into(), relations);
    if projects.len() > 1 || missing > 0 {
        source
            .counts
            .insert("projects".into(), projects.len() - missing);
    }
    if missing > 0 {
        source.counts.insert("projects_missing".into(), missing);
    }
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
