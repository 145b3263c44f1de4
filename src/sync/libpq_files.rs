//! libpq's connection files, read as libpq reads them: the connection
//! service file (`pg_service.conf`) and the password file (`~/.pgpass`).
//!
//! Teams keep their Postgres password out of URLs and environments with
//! these two files, so sync reads them the way `psql` does:
//! - **`service=NAME`** (in the URL's query or the `key=value` words) takes
//!   the settings of section `[NAME]` of `$PGSERVICEFILE` (default
//!   `~/.pg_service.conf`), or, when that file has no such section, of
//!   `$PGSYSCONFDIR/pg_service.conf` (default
//!   `/etc/postgresql-common/pg_service.conf`, Debian's libpq). Settings in
//!   the URL win over the service's.
//! - **The password**, when neither the URL nor the service gives one, comes
//!   from `$PGPASSWORD`, else from the password file: `passfile=` (URL or
//!   service), else `$PGPASSFILE`, else `~/.pgpass`. Its lines are
//!   `host:port:database:user:password`, `*` matching anything and `\:` /
//!   `\\` escaping; the first line that matches wins. Like libpq, a password
//!   file that others may read (group or world bits) is not read, and the
//!   message says so.
//!
//! Nothing here ever returns a password in a message: [`Source`] names the
//! file and line (or the variable) a password came from, never its value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The system service file of Debian's libpq, when `PGSYSCONFDIR` is unset.
pub const SYSTEM_SERVICE_DIR: &str = "/etc/postgresql-common";

/// A service's settings, and the file they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// The service file.
    pub path: PathBuf,
    /// `key = value` settings of its section (a password among them, maybe).
    pub settings: BTreeMap<String, String>,
}

/// Where a password came from: shown in messages, with no value in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The URL (user:password@, or `password=`).
    Url,
    /// A service's section.
    Service {
        /// The service's name.
        name: String,
        /// Its file.
        path: PathBuf,
    },
    /// `$PGPASSWORD`.
    Environment,
    /// A line of a password file.
    PassFile {
        /// The file.
        path: PathBuf,
        /// The 1-based line.
        line: usize,
    },
    /// None found; what was looked at (and why a file was skipped).
    None {
        /// The places looked at, in order, for people.
        looked: Vec<String>,
    },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Url => f.write_str("password from the URL"),
            Source::Service { name, path } => {
                write!(f, "password from service `{name}` in {}", path.display())
            }
            Source::Environment => f.write_str("password from PGPASSWORD"),
            Source::PassFile { path, line } => {
                write!(f, "password from {} line {line}", path.display())
            }
            Source::None { looked } => {
                write!(f, "no password: none in {}", looked.join(", "))
            }
        }
    }
}

/// The user's home folder, as libpq finds it (`$HOME` first).
fn home() -> Option<PathBuf> {
    dirs::home_dir()
}

/// The non-empty value of an environment variable.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Finds service `name`: in the user's service file, else the system's.
pub fn service(name: &str) -> Result<Service> {
    let user_file = env("PGSERVICEFILE")
        .map(PathBuf::from)
        .or_else(|| home().map(|h| h.join(".pg_service.conf")));
    let system_file = PathBuf::from(env("PGSYSCONFDIR").unwrap_or(SYSTEM_SERVICE_DIR.into()))
        .join("pg_service.conf");
    let mut looked = Vec::new();
    for path in user_file.into_iter().chain([system_file]) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                looked.push(format!("{} (absent)", path.display()));
                continue;
            }
            Err(e) => return Err(Error::io(&path, e)),
        };
        if let Some(settings) = parse_service(&text, name, &path)? {
            return Ok(Service { path, settings });
        }
        looked.push(path.display().to_string());
    }
    Err(Error::Usage(format!(
        "sync URL: service `{name}` is defined in none of {}",
        looked.join(", ")
    )))
}

/// The settings of section `[name]` of a service file's text.
fn parse_service(text: &str, name: &str, path: &Path) -> Result<Option<BTreeMap<String, String>>> {
    let mut inside = false;
    let mut found = None::<BTreeMap<String, String>>;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if inside {
                break;
            }
            inside = section.trim() == name;
            if inside {
                found = Some(BTreeMap::new());
            }
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(Error::Usage(format!(
                "{} line {}: expected `key=value` in service `{name}`",
                path.display(),
                n + 1
            )));
        };
        let key = key.trim().to_ascii_lowercase();
        if key == "service" {
            return Err(Error::Usage(format!(
                "{} line {}: a service cannot name another service",
                path.display(),
                n + 1
            )));
        }
        if let Some(settings) = found.as_mut() {
            settings.insert(key, value.trim().to_string());
        }
    }
    Ok(found)
}

/// What a password file is looked up by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The host (a socket folder looks up as `localhost`, as in libpq).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The database.
    pub dbname: String,
    /// The user.
    pub user: String,
}

/// The password file to read: `passfile` (URL or service), else
/// `$PGPASSFILE`, else `~/.pgpass`.
pub fn passfile_path(passfile: Option<&str>) -> Option<PathBuf> {
    passfile
        .map(PathBuf::from)
        .or_else(|| env("PGPASSFILE").map(PathBuf::from))
        .or_else(|| home().map(|h| h.join(".pgpass")))
}

/// Looks `lookups` up (in order; the first that matches wins) in the
/// password file at `path`: `Ok(Some((password, line)))`, `Ok(None)` when no
/// line matches, `Err(why)` when the file is not read (absent, or open to
/// others) — a reason for people, with no secret in it.
pub fn passfile_password(
    path: &Path,
    lookups: &[Lookup],
) -> std::result::Result<Option<(String, usize)>, String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{} (absent)", path.display()))
        }
        Err(e) => return Err(format!("{} (unreadable: {e})", path.display())),
    };
    if !meta.is_file() {
        return Err(format!("{} (not a plain file)", path.display()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "{} (not read: others may read it, mode {:o}; `chmod 600` it, as libpq asks)",
                path.display(),
                mode & 0o777
            ));
        }
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{} (unreadable: {e})", path.display()))?;
    for lookup in lookups {
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.starts_with('#') {
                continue;
            }
            let Some(fields) = split_pgpass(line) else {
                continue;
            };
            let wanted = [
                lookup.host.as_str(),
                &lookup.port.to_string(),
                lookup.dbname.as_str(),
                lookup.user.as_str(),
            ];
            if fields[..4]
                .iter()
                .zip(wanted)
                .all(|(field, want)| field == "*" || field == want)
            {
                return Ok(Some((fields[4].clone(), n + 1)));
            }
        }
    }
    Ok(None)
}

/// The five fields of a password file line (`\` escapes the next
/// character), or `None` for a line with fewer.
fn split_pgpass(line: &str) -> Option<[String; 5]> {
    let mut fields: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut()?.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut()?.push(c),
        }
    }
    fields.try_into().ok()
}

/// This process's user name, as libpq defaults it (`$USER`, `$LOGNAME`,
/// else the password database).
pub fn os_user() -> Option<String> {
    if let Some(user) = env("USER").or_else(|| env("LOGNAME")) {
        return Some(user);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let uid = std::fs::metadata("/proc/self").ok()?.uid();
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|line| {
            let mut parts = line.split(':');
            let name = parts.next()?;
            let id: u32 = parts.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_string())
        })
    }
    #[cfg(not(unix))]
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_service_section() {
        let text = "# team services\n[other]\nhost=x\n\n[team]\nhost = db.internal\nport=5433\n\
                    dbname=memory\n[later]\nhost=y\n";
        let settings = parse_service(text, "team", Path::new("f"))
            .unwrap()
            .unwrap();
        assert_eq!(settings["host"], "db.internal");
        assert_eq!(settings["port"], "5433");
        assert_eq!(settings.len(), 3);
        assert_eq!(parse_service(text, "absent", Path::new("f")).unwrap(), None);
        let nested = parse_service("[a]\nservice=b\n", "a", Path::new("f")).unwrap_err();
        assert!(nested.to_string().contains("line 2"), "{nested}");
        let bad = parse_service("[a]\nhost\n", "a", Path::new("f")).unwrap_err();
        assert!(bad.to_string().contains("key=value"), "{bad}");
    }

    #[test]
    fn splits_pgpass_lines_with_escapes() {
        let fields = split_pgpass(r"db\:1:5432:*:ana:pa\:ss\\w:rd").unwrap();
        assert_eq!(fields[0], "db:1");
        assert_eq!(fields[3], "ana");
        assert_eq!(fields[4], r"pa:ss\w:rd");
        assert!(split_pgpass("host:5432:db:user").is_none());
    }

    fn lookup(host: &str, db: &str) -> Lookup {
        Lookup {
            host: host.into(),
            port: 5432,
            dbname: db.into(),
            user: "ana".into(),
        }
    }

    #[test]
    fn the_first_matching_line_wins_and_an_open_file_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(
            &path,
            "# comment\nother:5432:*:ana:wrongpw\ndb:5432:team:ana:firstpw\n*:*:*:*:anypw\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        assert_eq!(
            passfile_password(&path, &[lookup("db", "team")]).unwrap(),
            Some(("firstpw".into(), 3))
        );
        assert_eq!(
            passfile_password(&path, &[lookup("elsewhere", "x")]).unwrap(),
            Some(("anypw".into(), 4))
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let why = passfile_password(&path, &[lookup("db", "team")]).unwrap_err();
            // No password in the message (the temporary folder's random
            // name, which may hold "pw", left out of the check).
            let said = why.replace(&path.display().to_string(), "<path>");
            assert!(said.contains("chmod 600") && !said.contains("pw"), "{why}");
        }
        let why = passfile_password(&dir.path().join("absent"), &[]).unwrap_err();
        assert!(why.contains("absent"), "{why}");
    }

    #[test]
    fn a_source_never_shows_a_value() {
        let sources = [
            Source::Url,
            Source::Environment,
            Source::Service {
                name: "team".into(),
                path: "/home/a/.pg_service.conf".into(),
            },
            Source::PassFile {
                path: "/home/a/.pgpass".into(),
                line: 3,
            },
        ];
        let shown: Vec<String> = sources.iter().map(ToString::to_string).collect();
        assert_eq!(shown[3], "password from /home/a/.pgpass line 3");
        assert!(shown[2].contains("service `team`"));
    }
}
