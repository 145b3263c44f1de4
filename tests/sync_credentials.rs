//! libpq's password sources for `knowledge-db sync`, against the test
//! Postgres (`scripts/pg-test-server.sh`, where roles named `kdb_pw_*` must
//! give their password): `~/.pgpass`, `PGPASSFILE`, `service=` in
//! `pg_service.conf` (`PGSERVICEFILE`) with the password in it or in the
//! password file, and `PGPASSWORD`. Every failure names the source it used,
//! never the password; no output and no file of the store holds it.

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};

use common::TestStore;
use pg::{add, machine, pg, Db};

/// A login role that must give its password, owning a database of its own.
struct Role {
    name: String,
    admin: String,
}

impl Drop for Role {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = admin.batch_execute(&format!("DROP ROLE IF EXISTS {}", self.name));
        }
    }
}

/// A password no message may hold: random, long, with characters a
/// password file must escape.
fn fresh_password() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "Kq7:{:x}\\z{}",
        nanos ^ 0x5eed_1234_abcd,
        std::process::id()
    )
}

/// A password file line for `password` (`:` and `\` escaped).
fn pgpass_line(host: &str, port: &str, db: &str, user: &str, password: &str) -> String {
    let escape = |s: &str| s.replace('\\', "\\\\").replace(':', "\\:");
    format!("{host}:{port}:{db}:{user}:{}\n", escape(password))
}

fn write_private(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// Runs `sync --url URL` with only the environment given (no PG* variable
/// of the test's own), returning (exit code, stdout, stderr).
fn sync_with(
    store: &TestStore,
    url: &str,
    home: &Path,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut cmd = store.cmd();
    cmd.args(["sync", "--url", url, "--json"])
        .env("HOME", home)
        .env("PGSYSCONFDIR", home.join("no-system-services"));
    for var in ["PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE"] {
        cmd.env_remove(var);
    }
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().expect("run sync");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file under `dir`, read as bytes.
fn files(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
}

#[test]
fn pgpass_service_files_and_pgpassword_give_the_password_and_nothing_shows_it() {
    let Some(pg) = pg() else { return };
    let db = Db::new(&pg, "pgpass");
    let role = Role {
        name: format!("kdb_pw_{}", std::process::id()),
        admin: pg.admin.clone(),
    };
    let password = fresh_password();
    let mut admin = db.client();
    admin
        .batch_execute(&format!(
            "DROP ROLE IF EXISTS {r}; CREATE ROLE {r} LOGIN PASSWORD '{p}';
             ALTER DATABASE {d} OWNER TO {r}; CREATE EXTENSION IF NOT EXISTS vector;
             ALTER SCHEMA public OWNER TO {r};",
            r = role.name,
            p = password.replace('\'', "''"),
            d = db.name
        ))
        .expect("role");
    // The server's address, from the admin URL (postgres://postgres@HOST:PORT/DB).
    let server = db.url.split('@').nth(1).unwrap().split('/').next().unwrap();
    let (host, port) = server.split_once(':').unwrap();
    let url = format!("postgres://{}@{server}/{}", role.name, db.name);
    let home = tempfile::tempdir().unwrap();
    let store = machine("ana@laptop", "[\"team\"]");
    add(&store, &[("n1", "team", "the pgpass note")]);
    let mut outputs = Vec::new();

    // No password anywhere: the message says where it looked.
    let (code, out, err) = sync_with(&store, &url, home.path(), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("no password: none in the URL, PGPASSWORD")
            && err.contains(".pgpass (absent)"),
        "{err}"
    );
    outputs.push(out + &err);

    // ~/.pgpass open to others: not read, and the message says why.
    let pgpass = home.path().join(".pgpass");
    write_private(
        &pgpass,
        &pgpass_line(host, port, &db.name, &role.name, &password),
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let (code, out, err) = sync_with(&store, &url, home.path(), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("chmod 600"), "{err}");
    outputs.push(out + &err);

    // ~/.pgpass, private: the sync goes through.
    write_private(
        &pgpass,
        &format!(
            "# team server\nelsewhere:5432:*:*:notthisone\n{}",
            pgpass_line(host, port, &db.name, &role.name, &password)
        ),
    );
    let (code, out, err) = sync_with(&store, &url, home.path(), &[]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("\"pushed\": 1"), "{out}");
    outputs.push(out + &err);

    // A wrong password in it: the message names the file and line, not the value.
    let wrong = format!("{password}-wrong");
    write_private(&pgpass, &pgpass_line("*", "*", "*", &role.name, &wrong));
    let (code, out, err) = sync_with(&store, &url, home.path(), &[]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(&format!("password from {} line 1", pgpass.display()))
            && err.contains("password authentication failed"),
        "{err}"
    );
    assert!(!err.contains(&wrong), "the wrong password is shown: {err}");
    outputs.push(out + &err);

    // PGPASSFILE wins over ~/.pgpass.
    let elsewhere = home.path().join("team.pgpass");
    write_private(
        &elsewhere,
        &pgpass_line(host, port, &db.name, &role.name, &password),
    );
    let passfile = elsewhere.to_str().unwrap();
    let (code, out, err) = sync_with(&store, &url, home.path(), &[("PGPASSFILE", passfile)]);
    assert_eq!(code, Some(0), "{out}{err}");
    outputs.push(out + &err);

    // service=NAME: the server from pg_service.conf, the password from the
    // password file it names.
    let services = home.path().join("services.conf");
    write_private(
        &services,
        &format!(
            "[other]\nhost=192.0.2.1\n\n[kdbteam]\nhost={host}\nport={port}\ndbname={}\n\
             user={}\nsslmode=disable\npassfile={passfile}\n",
            db.name, role.name
        ),
    );
    let service_file = services.to_str().unwrap();
    let (code, out, err) = sync_with(
        &store,
        "service=kdbteam",
        home.path(),
        &[("PGSERVICEFILE", service_file)],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    outputs.push(out + &err);

    // The password in the service file itself; ~/.pgpass (wrong) not read.
    write_private(
        &services,
        &format!(
            "[kdbteam]\nhost={host}\nport={port}\ndbname={}\nuser={}\nsslmode=disable\n\
             password={password}\n",
            db.name, role.name
        ),
    );
    let (code, out, err) = sync_with(
        &store,
        "postgres:///?service=kdbteam",
        home.path(),
        &[("PGSERVICEFILE", service_file)],
    );
    assert_eq!(code, Some(0), "{out}{err}");
    outputs.push(out + &err);
    // A wrong one there is named by service and file.
    write_private(
        &services,
        &format!(
            "[kdbteam]\nhost={host}\nport={port}\ndbname={}\nuser={}\nsslmode=disable\n\
             password={wrong}\n",
            db.name, role.name
        ),
    );
    let (code, out, err) = sync_with(
        &store,
        "service=kdbteam",
        home.path(),
        &[("PGSERVICEFILE", service_file)],
    );
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains(&format!(
            "password from service `kdbteam` in {}",
            services.display()
        )),
        "{err}"
    );
    outputs.push(out + &err);
    // An unknown service is named, with the files looked in.
    let (code, out, err) = sync_with(
        &store,
        "service=nosuch",
        home.path(),
        &[("PGSERVICEFILE", service_file)],
    );
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("service `nosuch`"), "{err}");
    outputs.push(out + &err);

    // PGPASSWORD (the environment), when neither the URL nor a service has one.
    std::fs::remove_file(&pgpass).unwrap();
    let (code, out, err) = sync_with(&store, &url, home.path(), &[("PGPASSWORD", &password)]);
    assert_eq!(code, Some(0), "{out}{err}");
    outputs.push(out + &err);

    // Nothing shows the password: no output, no file of the store.
    let status = store
        .cmd()
        .args(["sync", "--status", "--json"])
        .output()
        .unwrap();
    outputs.push(String::from_utf8_lossy(&status.stdout).into_owned());
    let stats = store.cmd().args(["stats"]).output().unwrap();
    outputs.push(String::from_utf8_lossy(&stats.stdout).into_owned());
    for (i, text) in outputs.iter().enumerate() {
        assert!(!text.contains(&password), "output {i} shows the password");
    }
    let mut stored = Vec::new();
    files(&store.path(), &mut stored);
    assert!(stored.len() > 3);
    for (path, bytes) in stored {
        let found = bytes
            .windows(password.len())
            .any(|w| w == password.as_bytes());
        assert!(!found, "{} holds the password", path.display());
    }
}
