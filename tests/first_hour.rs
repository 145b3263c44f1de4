//! A newcomer's first hour (issue 50): what a new user meets around search,
//! each friction with the test that would have caught it. A store never harms
//! a folder it does not own; the messages say what is true; ids, turns and
//! help work as the best CLIs' do.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::TestStore;

fn kdb(store: &Path) -> Command {
    let mut cmd = Command::cargo_bin("knowledge-db").expect("binary");
    cmd.arg("--store")
        .arg(store)
        .env_remove("KNOWLEDGE_DB_HOME")
        .env("KNOWLEDGE_DB_UPKEEP", "off");
    cmd
}

/// Every path under `root` (not following links) with its mode, and the
/// target of each link.
#[cfg(unix)]
fn modes(root: &Path) -> BTreeMap<PathBuf, (u32, Option<PathBuf>)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("stat");
        let link = meta
            .file_type()
            .is_symlink()
            .then(|| std::fs::read_link(&path).expect("link"));
        out.insert(path.clone(), (meta.permissions().mode() & 0o7777, link));
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("dir").flatten() {
                stack.push(entry.path());
            }
        }
    }
    out
}

/// A git project as a user has it: `.git`, a 644 file, a 755 script, a
/// symlink, a `config.toml` and a `text/` folder of its own.
#[cfg(unix)]
fn project(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let root = dir.join("project");
    std::fs::create_dir_all(root.join(".git/objects")).expect("mkdir");
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
    std::fs::write(root.join("README.md"), "# a project\n").expect("write");
    std::fs::write(root.join("run.sh"), "#!/bin/sh\necho hi\n").expect("write");
    std::fs::write(root.join("config.toml"), "title = \"site\"\n").expect("write");
    std::fs::create_dir(root.join("text")).expect("mkdir");
    std::fs::write(root.join("text/notes.txt"), "notes\n").expect("write");
    std::os::unix::fs::symlink("README.md", root.join("LINK.md")).expect("symlink");
    let set = |p: &str, mode| {
        std::fs::set_permissions(root.join(p), std::fs::Permissions::from_mode(mode))
            .expect("chmod")
    };
    set(".git", 0o755);
    set(".git/objects", 0o755);
    set(".git/HEAD", 0o644);
    set("README.md", 0o644);
    set("run.sh", 0o755);
    set("config.toml", 0o644);
    set("text", 0o755);
    set("text/notes.txt", 0o644);
    set(".", 0o755);
    root
}

/// Item 1: `init --store` on a folder that holds a project refuses, says
/// why, and changes nothing: no mode, no file, no link.
#[cfg(unix)]
#[test]
fn init_refuses_a_folder_it_does_not_own_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = project(dir.path());
    let before = modes(&root);
    for args in [&["init"][..], &["init", "--json"][..]] {
        let out = kdb(&root).args(args).output().expect("run");
        assert_eq!(out.status.code(), Some(1), "{args:?} must fail");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("holds 6 entries but no knowledge-db store")
                && err.contains("leaves this one as it is"),
            "{err}"
        );
        assert!(!err.contains("init --store"), "suggests harm: {err}");
        assert_eq!(modes(&root), before, "{args:?} changed the folder");
    }
    // Every other command with --store on it refuses the same way, and
    // none suggests `init` there.
    for args in [
        &["search", "x"][..],
        &["add", "-"][..],
        &["stats"][..],
        &["verify"][..],
        &["repair"][..],
        &["upkeep"][..],
        &["upkeep", "--status"][..],
        &["export"][..],
        &["maintain"][..],
        &["embed"][..],
        &["forget", "--session", "s"][..],
        &["scrub"][..],
        &["mcp"][..],
        &["ingest", "/nonexistent.jsonl"][..],
    ] {
        let out = kdb(&root).args(args).write_stdin("").output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(
            !err.contains("init --store"),
            "{args:?} suggests harm: {err}"
        );
        assert_eq!(modes(&root), before, "{args:?} changed the folder");
    }
    // The hooks (which never fail the agent's call) write nothing there
    // either: no `hooks/` folder, no log, no store.
    let transcript = common::samples().join("hooks");
    for hook in [
        "stop",
        "post-tool-use",
        "user-prompt-submit",
        "session-start",
    ] {
        let input = serde_json::json!({
            "session_id": "7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47",
            "transcript_path": transcript.join("missing.jsonl"),
            "hook_event_name": hook,
            "prompt": "why did the build fail",
            "tool_name": "Bash",
            "source": "startup",
        });
        kdb(&root)
            .args(["hook", hook])
            .write_stdin(input.to_string())
            .output()
            .expect("hook");
        assert_eq!(modes(&root), before, "hook {hook} changed the folder");
    }
}

/// Item 1: a file as the store is refused with its own message (never a
/// suggestion to `init` it), and left as it was.
#[cfg(unix)]
#[test]
fn a_file_as_the_store_is_refused_without_a_harmful_suggestion() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, "mine\n").expect("write");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    for args in [&["init"][..], &["search", "x"][..], &["stats"][..]] {
        let out = kdb(&file).args(args).output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("is a file, not a store folder"), "{err}");
        assert!(!err.contains("init --store"), "{err}");
    }
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "mine\n");
    let mode = std::fs::metadata(&file).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
}

/// Item 1: a missing folder is created owner-only and holds only the
/// store's files; an empty one is taken; a second init names the store.
/// Item 10: `init` states the retention defaults and how to change them.
#[cfg(unix)]
#[test]
fn init_creates_its_folder_or_takes_an_empty_one() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = dir.path().join("a/b/memory");
    let out = kdb(&fresh).arg("init").output().expect("run");
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "created an empty store",
        "older than 7d",
        "for 14d",
        "30d after archiving",
        "[retention]",
        "maintain_on_write = false",
        "knowledge-db ingest",
        "knowledge-db hook install",
    ] {
        assert!(
            said.contains(needle),
            "init output lacks {needle:?}:\n{said}"
        );
    }
    let mode = std::fs::metadata(&fresh)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    kdb(&empty).arg("init").assert().success();
    let mode = std::fs::metadata(&empty)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700, "the empty folder became the store's");
    let again = kdb(&empty).arg("init").output().expect("run");
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("a store already exists"));
    // JSON says the retention too.
    let other = TestStore::uninitialised();
    let json = other.json(&["init"]);
    assert_eq!(json["retention"]["prune_after"], "30d");
}

fn with_samples() -> TestStore {
    let store = TestStore::new();
    store.add_samples();
    store
}

/// Item 3: `--session` takes any unique start of a session id, as git takes
/// short commit ids; an ambiguous one names the candidates; `show` too.
#[test]
fn short_session_ids_work_as_git_short_ids() {
    let store = with_samples();
    let full = store.json(&[
        "search",
        "oauth2.py refresh",
        "--session",
        "4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10",
    ]);
    let short = store.json(&["search", "oauth2.py refresh", "--session", "4f1c9a2e"]);
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|h| h["id"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert!(!ids(&full).is_empty());
    assert_eq!(ids(&short), ids(&full), "a short id keeps other records");
    // Two sessions that start alike: the prefix is refused with both named.
    let twins = r#"{"kind":"message","session_id":"abcd1111-0000","turn_index":1,"role":"user","text":"twin one"}
{"kind":"message","session_id":"abcd2222-0000","turn_index":1,"role":"user","text":"twin two"}"#;
    store.add_later("twins.jsonl", twins.as_bytes());
    let out = store
        .cmd()
        .args(["search", "twin", "--session", "abcd"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ambiguous") && err.contains("abcd1111-0000") && err.contains("abcd2222-0000"),
        "{err}"
    );
}

/// Item 12: a hit prints its session once, short, with its project; the
/// copies it stands for are explained; no Markdown-like marks when piped.
#[test]
fn a_hit_names_its_session_once_and_explains_its_copies() {
    let store = with_samples();
    // Two sessions stored the same words (a note copied from one to the other).
    let text = "The deploy script needs the staging flag before the migration runs";
    let copies = format!(
        "{{\"id\":\"n-copy-1\",\"title\":\"deploy order\",\"text\":\"{text}\",\"session_id\":\"5e5e5e5e-aaaa-4bbb-8ccc-000000000001\",\"project\":\"/home/ana/src/api\"}}\n\
         {{\"id\":\"n-copy-2\",\"title\":\"deploy order\",\"text\":\"{text}\",\"session_id\":\"6f6f6f6f-aaaa-4bbb-8ccc-000000000002\",\"project\":\"/home/ana/src/api\"}}\n"
    );
    store.add_later("copies.jsonl", copies.as_bytes());
    let out = store
        .cmd()
        .args([
            "search",
            "staging flag migration",
            "--all-projects",
            "-k",
            "1",
        ])
        .output()
        .expect("run");
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.matches("5e5e5e5e").count(), 1, "{said}");
    assert!(
        !said.contains("5e5e5e5e-aaaa"),
        "the full session id is printed: {said}"
    );
    assert!(said.contains("project /home/ana/src/api"), "{said}");
    assert!(
        said.contains("the same text is stored 1 more time"),
        "{said}"
    );
    assert!(!said.contains("**"), "{said}");
}

/// Item 6: a question about something the store does not hold gets no hit
/// that looks like an answer; a good one keeps its answer unmarked.
#[test]
fn weak_results_are_marked_low_confidence() {
    let store = with_samples();
    let absent = store.json(&[
        "search",
        "kubernetes helm chart rollback strategy",
        "--all-projects",
    ]);
    let hits = absent["results"].as_array().expect("results");
    assert!(
        hits.iter()
            .all(|h| h["low_confidence"] == true || h["weak"] == true),
        "{absent}"
    );
    let out = store
        .cmd()
        .args([
            "search",
            "kubernetes helm chart rollback strategy",
            "--all-projects",
            "--all",
        ])
        .output()
        .expect("run");
    let said = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no results") || (said.contains("weak") || said.contains("low confidence")),
        "{said}"
    );
    if said.contains("low confidence") && !said.contains("weak") {
        assert!(err.contains("none of these is a confident match"), "{err}");
    }
    let good = store.json(&[
        "search",
        "oauth2.py refresh token",
        "--all-projects",
        "-k",
        "1",
    ]);
    assert_eq!(good["results"][0]["id"], "seg-auth-0001");
    assert!(good["results"][0].get("low_confidence").is_none(), "{good}");
}

/// Item 7: with the upkeep off, `upkeep --status` and `stats` say it is
/// off and why; `ingest --help` states the real `--embed` rule.
#[test]
fn messages_are_true_when_the_upkeep_is_off() {
    let store = with_samples();
    let out = store
        .cmd()
        .args(["upkeep", "--status"])
        .output()
        .expect("run");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with("off (KNOWLEDGE_DB_UPKEEP=off is set in the environment)"),
        "{said}"
    );
    let stats = store.cmd().arg("stats").output().expect("stats");
    assert!(String::from_utf8_lossy(&stats.stdout).contains("upkeep          off ("));
    let on = store
        .cmd()
        .env("KNOWLEDGE_DB_UPKEEP", "on")
        .args(["upkeep", "--status"])
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&on.stdout).starts_with("idle"));
    store.set_config(&[("enabled", "false")]);
    let config_off = store
        .cmd()
        .env_remove("KNOWLEDGE_DB_UPKEEP")
        .args(["upkeep", "--status"])
        .output()
        .expect("run");
    assert!(
        String::from_utf8_lossy(&config_off.stdout).contains("`[upkeep] enabled = false`"),
        "{}",
        String::from_utf8_lossy(&config_off.stdout)
    );
    let help = store
        .cmd()
        .args(["ingest", "--help"])
        .output()
        .expect("help");
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("ingest_inline_max") && help.contains("1,000"),
        "{help}"
    );
}

/// Item 13: the top-level help fits one screen, groups everyday and
/// advanced commands, and its examples are a user's (ingest, hook install;
/// no developer paths); `version`, completions and the man page work.
#[test]
fn help_is_grouped_and_fits_one_screen() {
    let store = TestStore::uninitialised();
    let out = store.cmd().arg("--help").output().expect("help");
    let help = String::from_utf8_lossy(&out.stdout);
    let lines = help.lines().count();
    assert!(lines <= 45, "{lines} lines:\n{help}");
    for needle in [
        "Everyday commands:",
        "Advanced commands:",
        "knowledge-db ingest ~/.claude/projects",
        "knowledge-db hook install",
        "version",
        "completions",
    ] {
        assert!(help.contains(needle), "no {needle:?} in:\n{help}");
    }
    let everyday = help.split("Advanced commands:").next().unwrap_or_default();
    for developer in ["eval", "bench", "tokens", "qmd"] {
        assert!(
            !everyday
                .lines()
                .any(|l| l.trim_start().starts_with(developer)),
            "{developer} among the everyday commands:\n{help}"
        );
    }
    assert!(!help.contains("../shared"), "{help}");
    let search = store
        .cmd()
        .args(["search", "--help"])
        .output()
        .expect("help");
    let search = String::from_utf8_lossy(&search.stdout);
    assert!(
        !search.contains("src/") && !search.contains("::"),
        "{search}"
    );
    let import = store
        .cmd()
        .args(["import", "--help"])
        .output()
        .expect("help");
    let import = String::from_utf8_lossy(&import.stdout);
    assert!(import.lines().all(|l| l.chars().count() <= 100), "{import}");
    let version = store.cmd().arg("version").output().expect("version");
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("knowledge-db "));
    let bash = store
        .cmd()
        .args(["completions", "bash"])
        .output()
        .expect("bash");
    let bash = String::from_utf8_lossy(&bash.stdout);
    assert!(
        bash.contains("complete -F") && bash.contains("knowledge-db") && bash.contains("ingest"),
        "{bash}"
    );
    let man = store.cmd().arg("man").output().expect("man");
    let man = String::from_utf8_lossy(&man.stdout);
    assert!(man.starts_with(".ie") || man.contains(".TH"), "{man}");
    assert!(man.contains("ingest"));
    let page = store
        .cmd()
        .args(["man", "search"])
        .output()
        .expect("man search");
    assert!(String::from_utf8_lossy(&page.stdout).contains("knowledge\\-db\\-search"));
}

/// Item 7: an ingest whose vectors are left to the upkeep, with the upkeep
/// off, says who will make them (not "the background upkeep adds them").
#[test]
fn an_ingest_left_without_vectors_says_the_upkeep_is_off() {
    let store = TestStore::new();
    store.set_config(&[("ingest_inline_max", "2")]);
    let model = knowledge_db::embed::ModelLocation::locate();
    let out = store
        .cmd()
        .env("KNOWLEDGE_DB_MODEL_DIR", &model.model_dir)
        .env("ORT_DYLIB_PATH", &model.runtime)
        .arg("ingest")
        .arg(common::samples().join("transcripts/7c2e9f10-4b3a-4d8e-9a61-2f5c0d8e1b47.jsonl.gz"))
        .output()
        .expect("ingest");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("which is off (KNOWLEDGE_DB_UPKEEP=off is set in the environment)")
            && said.contains("knowledge-db embed"),
        "{said}"
    );
    assert!(
        !said.contains("the background upkeep adds their vectors"),
        "{said}"
    );
}
