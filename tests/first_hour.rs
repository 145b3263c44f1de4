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
        &["upkeep"][..],
        &["ingest", "/nonexistent.jsonl"][..],
    ] {
        let out = kdb(&root).args(args).write_stdin("").output().expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("init --store"), "{args:?} suggests harm: {err}");
        assert_eq!(modes(&root), before, "{args:?} changed the folder");
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
        assert!(said.contains(needle), "init output lacks {needle:?}:\n{said}");
    }
    let mode = std::fs::metadata(&fresh).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    kdb(&empty).arg("init").assert().success();
    let mode = std::fs::metadata(&empty).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "the empty folder became the store's");
    let again = kdb(&empty).arg("init").output().expect("run");
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("a store already exists"));
    // JSON says the retention too.
    let other = TestStore::uninitialised();
    let json = other.json(&["init"]);
    assert_eq!(json["retention"]["prune_after"], "30d");
}
