//! `knowledge-db sync` never shows or saves the server's password, in any
//! URL form libpq accepts (issue 38). Needs no server: nothing listens on
//! port 1 of loopback, so every sync fails, and its message, `sync --status`
//! and the store's files are looked at.

mod common;

use common::TestStore;

/// A store that syncs as `origin`, sharing `share` (TOML array text).
fn machine(origin: &str, share: &str) -> TestStore {
    let store = TestStore::new();
    store.set_config(&[("origin", &format!("\"{origin}\"")), ("share", share)]);
    store
}

/// Every file under `dir`, recursively, with its bytes.
fn files_under(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// A password in the URL's query (`?password=`, `sslpassword=`, keys
/// percent-encoded, a password holding `&`, `@` or `#`) is masked in the
/// error message, `sync --status` (text and JSON) and `sync/state.json`
/// (issue 38: only `user:pass@` and the key=value form were). Needs no
/// server: nothing listens on port 1 of loopback.
#[test]
fn a_password_anywhere_in_the_url_is_never_shown_or_saved() {
    let secret = "Qz7pW9xKm2";
    let urls = [
        format!("postgres://kdb@127.0.0.1:1/team?password={secret}"),
        format!("postgresql://kdb@127.0.0.1:1/team?sslmode=disable&password={secret}&application_name=kdb"),
        format!("postgres://kdb@127.0.0.1:1/team?sslmode=disable&sslpassword={secret}"),
        format!("postgres://kdb@127.0.0.1:1/team?pass%77ord={secret}"),
        format!("postgres://kdb@127.0.0.1:1/team?password={secret}%26more"),
        format!("postgres://kdb:{secret}%40x@127.0.0.1:1/team"),
        format!("postgres://kdb:{secret}@x@127.0.0.1:1/team"),
        format!("host=127.0.0.1 port=1 user=kdb password = '{secret} x' dbname=team"),
        format!("host=127.0.0.1 port=1 user=kdb sslpassword={secret} dbname=team"),
    ];
    for url in &urls {
        let a = machine("ana@laptop", "[\"team\"]");
        let out = a.cmd().args(["sync", "--url", url]).output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{url}");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!printed.contains(secret), "{url}: {printed}");
        for args in [
            &["sync", "--status"][..],
            &["sync", "--status", "--json"][..],
        ] {
            for env in [None, Some(url.as_str())] {
                let mut cmd = a.cmd();
                cmd.args(args);
                if let Some(url) = env {
                    cmd.env("KNOWLEDGE_DB_SYNC_URL", url);
                }
                let out = cmd.output().unwrap();
                let printed = format!(
                    "{}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                assert!(!printed.contains(secret), "{url} {args:?}: {printed}");
            }
        }
        for (path, bytes) in files_under(&a.path()) {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(secret),
                "{url}: {} holds the password",
                path.display()
            );
        }
    }
}
