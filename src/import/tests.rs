//! The import core on small sources written here: plans, ids, failures.

use std::path::Path;

use super::*;
use crate::privacy::Redactor;

fn limits() -> ReadLimits {
    ReadLimits::of(&Limits::default())
}

fn read(tool: Tool, path: &Path) -> Result<Source, ImportError> {
    let options = ReadOptions {
        limits: limits(),
        claude_mem_prompts: true,
    };
    read_source(tool, path, &options, &mut |_, _| {})
}

fn options() -> ParseOptions {
    ParseOptions {
        added_at: "2026-01-05T10:00:00Z".into(),
        ..ParseOptions::default()
    }
}

#[test]
fn an_openclaw_workspace_plans_one_note_per_section() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("MEMORY.md"),
        "# Memory\n\nintro\n\n## Build\nUse cargo nextest.\n\n## Deploy\nShip on Fridays never.\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("memory")).unwrap();
    std::fs::write(
        dir.path().join("memory/2026-01-05.md"),
        "- fixed the OAuth refresh race\n",
    )
    .unwrap();
    let source = read(Tool::Openclaw, dir.path()).unwrap();
    assert_eq!(source.counts["files"], 2);
    assert_eq!(source.counts["sections"], 4);
    let plan = plan(source, &options(), Redactor::builtin()).unwrap();
    let ids: Vec<_> = plan.records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "openclaw:MEMORY.md#memory",
            "openclaw:MEMORY.md#build",
            "openclaw:MEMORY.md#deploy",
            "openclaw:memory/2026-01-05.md"
        ]
    );
    assert_eq!(plan.by_kind[&Kind::Note], 4);
    assert_eq!(plan.examples.len(), 1);
    let daily = &plan.records[3];
    assert_eq!(daily.fields.timestamp, Some(1767571200));
    assert_eq!(daily.source["metadata"]["origin"]["tool"], "openclaw");
}

#[test]
fn a_mem0_export_with_a_bad_memory_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mem0.json");
    std::fs::write(
        &file,
        r#"{"results": [{"id": "a1", "memory": "Prefers tabs", "user_id": "alice", "created_at": "2026-01-05T10:00:00-08:00", "categories": ["style"]}, {"id": "a2"}]}"#,
    )
    .unwrap();
    let e = read(Tool::Mem0, &file).unwrap_err().to_string();
    assert!(
        e.contains("mem0.json (memory 2, field memory): missing"),
        "{e}"
    );
    std::fs::write(
        &file,
        r#"[{"id": "a1", "memory": "Prefers tabs", "user_id": "alice"}]"#,
    )
    .unwrap();
    let plan = plan(
        read(Tool::Mem0, &file).unwrap(),
        &options(),
        Redactor::builtin(),
    )
    .unwrap();
    assert_eq!(plan.records[0].id, "mem0:a1");
    assert_eq!(plan.by_project["user alice"], 1);
    // Not JSON: the line and column.
    std::fs::write(&file, "{\"results\": [\n{oops}]}").unwrap();
    let e = read(Tool::Mem0, &file).unwrap_err().to_string();
    assert!(
        e.contains("(line 2, column 2)") && e.contains("expected mem0's get_all output"),
        "{e}"
    );
}

#[test]
fn examples_are_redacted_and_invalid_records_fail_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.jsonl");
    std::fs::write(
        &file,
        "{\"id\": \"k\", \"memory\": \"the key is AKIAIOSFODNN7EXAMPLF for prod\"}\n",
    )
    .unwrap();
    let plan = plan(
        read(Tool::Mem0, &file).unwrap(),
        &options(),
        Redactor::builtin(),
    )
    .unwrap();
    assert!(
        !plan.examples[0].text.contains("AKIAIOSFODNN7EXAMPLF"),
        "{:?}",
        plan.examples
    );
    // An empty memory passes the source's checks but not the record parser.
    std::fs::write(&file, "{\"id\": \"k\", \"memory\": \"  \"}\n").unwrap();
    let e = super::plan(
        read(Tool::Mem0, &file).unwrap(),
        &options(),
        Redactor::builtin(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("m.jsonl:1") && e.contains("nothing was written"),
        "{e}"
    );
}

#[test]
fn missing_sources_say_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let e = read(Tool::Openclaw, dir.path()).unwrap_err().to_string();
    assert!(
        e.contains("no MEMORY.md") && e.contains("expected an OpenClaw workspace"),
        "{e}"
    );
    let e = read(Tool::ClaudeMem, &dir.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no such file or folder"), "{e}");
    assert_eq!(Tool::Mem0.default_path(Path::new("/h")), None);
    assert_eq!(
        Tool::ClaudeMem.default_path(Path::new("/h")),
        Some(PathBuf::from("/h/.claude-mem"))
    );
}

/// An import larger than the inline limit is stored without vectors (the
/// upkeep adds them) and says so; one within it is embedded before `apply`
/// returns.
#[test]
fn a_large_import_leaves_its_vectors_to_the_upkeep() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.jsonl");
    std::fs::write(
        &file,
        "{\"id\": \"1\", \"memory\": \"prefers tabs\"}\n{\"id\": \"2\", \"memory\": \"deploys on thursdays\"}\n",
    )
    .unwrap();
    for (name, max, deferred, embedded) in [("small", 1, 2, 0), ("large", 10, 0, 2)] {
        let store = Store::init(&dir.path().join(name)).unwrap();
        let plan = plan(
            read(Tool::Mem0, &file).unwrap(),
            &options(),
            store.redactor(),
        )
        .unwrap();
        let mut embedder = crate::embed::HashEmbedder::new(16);
        let report = apply(
            &store,
            plan,
            Some(&mut embedder),
            Some(max),
            Duration::from_secs(5),
            Instant::now(),
        )
        .unwrap();
        let stored = report.store.unwrap();
        assert_eq!(report.vectors_deferred, deferred, "{name}");
        assert_eq!(stored.embedded, embedded, "{name}");
        assert_eq!(stored.without_vector, deferred, "{name}");
    }
}

#[test]
fn defaults_follow_the_tools_own_config() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    assert_eq!(
        Tool::BasicMemory.default_path(h),
        Some(h.join("basic-memory"))
    );
    assert_eq!(
        Tool::Mempalace.default_path(h),
        Some(h.join(".mempalace/palace"))
    );
    std::fs::create_dir_all(h.join(".basic-memory")).unwrap();
    std::fs::write(
        h.join(".basic-memory/config.json"),
        r#"{"projects": {"main": "/srv/notes", "work": "~/work-notes"}, "default_project": "work"}"#,
    )
    .unwrap();
    assert_eq!(Tool::BasicMemory.default_path(h), Some(h.to_path_buf()));
    let projects = basic_memory::configured_projects(h).unwrap().unwrap();
    assert_eq!(
        projects,
        [
            ("main".to_string(), PathBuf::from("/srv/notes")),
            ("work".to_string(), h.join("work-notes"))
        ]
    );
    // The newer shape: each project an object with its path.
    std::fs::write(
        h.join(".basic-memory/config.json"),
        r#"{"projects": {"main": {"path": "/srv/notes", "mode": "local"}}, "default_project": "main"}"#,
    )
    .unwrap();
    let projects = basic_memory::configured_projects(h).unwrap().unwrap();
    assert_eq!(
        projects,
        [("main".to_string(), PathBuf::from("/srv/notes"))]
    );
    std::fs::create_dir_all(h.join(".mempalace")).unwrap();
    std::fs::write(
        h.join(".mempalace/config.json"),
        r#"{"palace_path": "/data/palace"}"#,
    )
    .unwrap();
    assert_eq!(
        Tool::Mempalace.default_path(h),
        Some(PathBuf::from("/data/palace"))
    );
    // A config that does not parse leaves the tool's default.
    std::fs::write(h.join(".mempalace/config.json"), "{oops").unwrap();
    assert_eq!(
        Tool::Mempalace.default_path(h),
        Some(h.join(".mempalace/palace"))
    );
}
