//! A store this user may not write to: one line saying "permission denied:
//! <path>" and how to look at it, not tantivy's debug output nor advice to run
//! `verify`/`repair` (the store is not damaged).

mod common;

use std::path::Path;

use common::TestStore;

/// Checks the one-line message of a refused permission on `path`.
fn assert_permission_message(stderr: &str, path: &Path) {
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].starts_with(&format!("error: permission denied: {}", path.display())),
        "{stderr}"
    );
    assert!(
        lines[0].contains("check the owner and permissions"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("ermission denied").count(), 1, "{stderr}");
    for noise in ["IoError", "Lockfile", "repair", "verify", "os error"] {
        assert!(!stderr.contains(noise), "{noise} in {stderr}");
    }
}

#[test]
fn a_folder_nobody_may_write_is_named_with_the_fix() {
    // Even root may not create folders in /sys (EPERM), so this runs the same in CI.
    let sys = Path::new("/sys");
    if !sys.is_dir() {
        return;
    }
    let store = sys.join("knowledge-db-test-store");
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"))
        .arg("--store")
        .arg(&store)
        .arg("init")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // `init` creates the store's own folder first (issue 50), so that is the
    // path refused.
    assert_permission_message(&String::from_utf8_lossy(&out.stderr), &store);
}

/// Whether this process runs as root (who may write anywhere chmod allows none).
fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

#[test]
fn a_read_only_store_says_permission_denied_once() {
    let store = TestStore::new();
    store.add_samples();
    // Readable by everyone, writable by nobody.
    let chmod = |mode: &str| {
        let status = std::process::Command::new("chmod")
            .args(["-R", mode])
            .arg(store.dir.path())
            .status()
            .unwrap();
        assert!(status.success());
    };
    chmod("a+rX,a-w");
    let binary = assert_cmd::cargo::cargo_bin("knowledge-db");
    let mut command = if is_root() {
        // chmod does not stop root: run as the unprivileged user `nobody`.
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        c.arg(&binary);
        c
    } else {
        std::process::Command::new(&binary)
    };
    let run = command
        .arg("--store")
        .arg(store.path())
        .args(["search", "token refresh", "--mode", "bm25"])
        .env_remove("KNOWLEDGE_DB_HOME")
        .output();
    chmod("u+w");
    let out = match run {
        Ok(out) => out,
        // No setpriv here: the /sys test above still covers the message.
        Err(e) if is_root() => {
            eprintln!("skipped: cannot drop root privileges ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("Permission denied") && !stderr.contains("error:") {
        // The binary itself is out of reach of `nobody` (a private checkout).
        eprintln!("skipped: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_permission_message(&stderr, &store.path());
}
