//! Reaching the server: the connection URL and TLS.
//!
//! The URL is libpq's (`postgres://user:password@host:5432/db?sslmode=require`,
//! or `host=… dbname=…` words), read by rust-postgres, with two of libpq's
//! settings it lacks handled here:
//! - `sslmode`: `disable` (plain), `prefer` (the default: TLS when the server
//!   offers it), `require`, `verify-ca` and `verify-full` (TLS or no
//!   connection). Whenever TLS is used the server's certificate is verified
//!   against the system's trust store (and `sslrootcert`) and its name checked:
//!   knowledge-db never sends a team's memory to a server it cannot verify,
//!   so `require` behaves as libpq's `verify-full`.
//! - `sslrootcert=FILE`: a PEM file of certificate authorities to trust as
//!   well (a private CA, a cloud provider's bundle).
//!
//! - `service=NAME` (`pg_service.conf`) and `passfile=FILE`, with libpq's
//!   password sources: the URL, the service, `$PGPASSWORD`, then the password
//!   file (`$PGPASSFILE`, `~/.pgpass`); see [`super::libpq_files`]. Messages
//!   name the source a password came from, never the password.
//!
//! TLS is rustls with the ring provider: no OpenSSL on the machine needed.
//! A connection that goes silent (a cable pulled, a server gone) is given up
//! in about a minute: TCP keepalives after 30 s idle, and a 60 s limit on
//! unacknowledged writes, unless the URL sets its own.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use super::libpq_files::{self, Lookup, Source};
use crate::error::{Error, Result};

/// How long a connection attempt may take before sync gives up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Idle time before TCP keepalives start probing the server.
const KEEPALIVES_IDLE: Duration = Duration::from_secs(30);

/// How long written data may stay unacknowledged before the connection is
/// given up (Linux's `TCP_USER_TIMEOUT`).
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);

/// A parsed server address, ready to connect.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    /// Extra certificate authorities (`sslrootcert`).
    root_cert: Option<PathBuf>,
    /// The URL with its password replaced, for messages.
    shown: String,
    /// Where the password came from (never the password).
    password_from: Source,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Target {
    /// Reads a URL (or libpq key=value words), with the service it names
    /// and the password libpq would find for it.
    pub fn parse(url: &str) -> Result<Target> {
        let shown = hide_password(url);
        let bad = |why: String| Error::Usage(format!("sync URL {shown}: {why}"));
        let mut taken = take_settings(url.trim()).map_err(bad)?;
        let mut config = postgres::Config::from_str(&taken.rest).map_err(|e| bad(e.to_string()))?;
        let mut password_from = config.get_password().map(|_| Source::Url);
        if let Some(name) = taken.service.clone() {
            let service = libpq_files::service(&name)?;
            apply_service(&mut config, &service, &mut taken)?;
            if password_from.is_none() && service.settings.contains_key("password") {
                password_from = Some(Source::Service {
                    name,
                    path: service.path.clone(),
                });
            }
        }
        if let Some(mode) = taken.mode {
            config.ssl_mode(mode);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("knowledge-db sync");
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        if config.get_keepalives_idle() > KEEPALIVES_IDLE {
            config.keepalives_idle(KEEPALIVES_IDLE);
        }
        if config.get_user().is_none() {
            if let Some(user) = libpq_files::os_user() {
                config.user(&user);
            }
        }
        let password_from = match password_from {
            Some(source) => source,
            None => find_password(&mut config, taken.passfile.as_deref()),
        };
        Ok(Target {
            config,
            root_cert: taken.root_cert,
            shown,
            password_from,
        })
    }

    /// Where the password came from, for messages (never its value).
    pub fn password_from(&self) -> &Source {
        &self.password_from
    }

    /// The URL with its password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Opens a connection: plain when `sslmode=disable`, else through rustls.
    pub fn connect(&self) -> Result<postgres::Client> {
        let failed = |e: postgres::Error| {
            Error::Sync(format!(
                "cannot connect to {} ({}): {}",
                self.shown,
                self.password_from,
                error_text(&e)
            ))
        };
        if self.config.get_ssl_mode() == postgres::config::SslMode::Disable {
            return self.config.connect(postgres::NoTls).map_err(failed);
        }
        let tls = tokio_postgres_rustls::MakeRustlsConnect::new(self.tls_config()?);
        self.config.connect(tls).map_err(failed)
    }

    fn tls_config(&self) -> Result<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        if let Some(path) = &self.root_cert {
            let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            let mut added = 0;
            for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(&bytes) {
                let cert: rustls::pki_types::CertificateDer<'static> =
                    cert.map_err(|e| Error::Sync(format!("sslrootcert {}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| Error::Sync(format!("sslrootcert {}: {e}", path.display())))?;
                added += 1;
            }
            if added == 0 {
                return Err(Error::Sync(format!(
                    "sslrootcert {}: no PEM certificate in it",
                    path.display()
                )));
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Sync(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(config)
    }
}

/// A postgres error with its cause (the server's message, the I/O error).
pub fn error_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The settings of a URL that rust-postgres does not read, taken out of it.
#[derive(Debug, Default)]
struct Taken {
    /// The URL (or words) without them.
    rest: String,
    /// `sslrootcert`.
    root_cert: Option<PathBuf>,
    /// `sslmode`, as rust-postgres should use it.
    mode: Option<postgres::config::SslMode>,
    /// `service`.
    service: Option<String>,
    /// `passfile`.
    passfile: Option<String>,
}

/// libpq's `sslmode` as rust-postgres's (which verifies whenever it uses TLS).
fn ssl_mode(value: &str) -> std::result::Result<postgres::config::SslMode, String> {
    use postgres::config::SslMode;
    Ok(match value {
        "disable" => SslMode::Disable,
        "allow" | "prefer" => SslMode::Prefer,
        "require" | "verify-ca" | "verify-full" => SslMode::Require,
        other => {
            return Err(format!(
                "sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
            ))
        }
    })
}

/// Takes `sslmode`, `sslrootcert`, `service` and `passfile` out of a URL's
/// query or a words string.
fn take_settings(url: &str) -> std::result::Result<Taken, String> {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let (head, pairs, joiner): (&str, Vec<&str>, &str) = if is_url {
        match url.split_once('?') {
            Some((head, query)) => (head, query.split('&').collect(), "&"),
            None => (url, Vec::new(), "&"),
        }
    } else {
        ("", url.split_whitespace().collect(), " ")
    };
    let mut taken = Taken::default();
    let mut kept = Vec::new();
    for pair in pairs {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = if is_url {
            percent_decode(value)
        } else {
            value.to_string()
        };
        match key {
            "sslrootcert" => taken.root_cert = Some(PathBuf::from(value)),
            "sslmode" => taken.mode = Some(ssl_mode(&value)?),
            "service" => taken.service = Some(value),
            "passfile" => taken.passfile = Some(value),
            _ if !pair.is_empty() => kept.push(pair),
            _ => {}
        }
    }
    taken.rest = if is_url {
        if kept.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", kept.join(joiner))
        }
    } else {
        kept.join(joiner)
    };
    Ok(taken)
}

/// Applies a service's settings that the URL does not set (the URL wins).
fn apply_service(
    config: &mut postgres::Config,
    service: &libpq_files::Service,
    taken: &mut Taken,
) -> Result<()> {
    let bad =
        |key: &str, why: &str| Error::Usage(format!("{}: `{key}` {why}", service.path.display()));
    for (key, value) in &service.settings {
        match key.as_str() {
            "host" if config.get_hosts().is_empty() => {
                for host in value.split(',') {
                    config.host(host);
                }
            }
            "hostaddr" if config.get_hostaddrs().is_empty() => {
                for addr in value.split(',') {
                    config.hostaddr(
                        addr.trim()
                            .parse()
                            .map_err(|_| bad(key, "is not an IP address"))?,
                    );
                }
            }
            "port" if config.get_ports().is_empty() => {
                for port in value.split(',') {
                    config.port(port.trim().parse().map_err(|_| bad(key, "is not a port"))?);
                }
            }
            "dbname" if config.get_dbname().is_none() => {
                config.dbname(value);
            }
            "user" if config.get_user().is_none() => {
                config.user(value);
            }
            "password" if config.get_password().is_none() => {
                config.password(value.as_str());
            }
            "options" if config.get_options().is_none() => {
                config.options(value);
            }
            "application_name" if config.get_application_name().is_none() => {
                config.application_name(value);
            }
            "connect_timeout" if config.get_connect_timeout().is_none() => {
                let secs: u64 = value
                    .parse()
                    .map_err(|_| bad(key, "is not a number of seconds"))?;
                if secs > 0 {
                    config.connect_timeout(Duration::from_secs(secs));
                }
            }
            "sslmode" if taken.mode.is_none() => {
                taken.mode = Some(ssl_mode(value).map_err(|why| bad(key, &why))?);
            }
            "sslrootcert" if taken.root_cert.is_none() => {
                taken.root_cert = Some(PathBuf::from(value));
            }
            "passfile" if taken.passfile.is_none() => taken.passfile = Some(value.clone()),
            "host" | "hostaddr" | "port" | "dbname" | "user" | "password" | "options"
            | "application_name" | "connect_timeout" | "sslmode" | "sslrootcert" | "passfile" => {}
            _ => return Err(bad(key, "is a setting knowledge-db sync does not read")),
        }
    }
    Ok(())
}

/// libpq's password search when neither the URL nor the service gives one:
/// `$PGPASSWORD`, then the password file for this host, port, database and
/// user. Sets the password found; returns where it came from.
fn find_password(config: &mut postgres::Config, passfile: Option<&str>) -> Source {
    if let Ok(password) = std::env::var("PGPASSWORD") {
        if !password.is_empty() {
            config.password(password.as_str());
            return Source::Environment;
        }
    }
    let mut looked = vec!["the URL".to_string(), "PGPASSWORD".to_string()];
    let Some(path) = libpq_files::passfile_path(passfile) else {
        looked.push("a password file (no home folder)".into());
        return Source::None { looked };
    };
    let user = config.get_user().unwrap_or_default().to_string();
    let dbname = config.get_dbname().unwrap_or(&user).to_string();
    let ports = config.get_ports();
    let mut hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|host| match host {
            postgres::config::Host::Tcp(name) => name.clone(),
            // A socket folder, as libpq looks it up.
            #[cfg(unix)]
            postgres::config::Host::Unix(_) => "localhost".to_string(),
        })
        .collect();
    if hosts.is_empty() {
        hosts = config
            .get_hostaddrs()
            .iter()
            .map(ToString::to_string)
            .collect();
    }
    if hosts.is_empty() {
        hosts.push("localhost".into());
    }
    let lookups: Vec<Lookup> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| Lookup {
            host: host.clone(),
            port: ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432),
            dbname: dbname.clone(),
            user: user.clone(),
        })
        .collect();
    match libpq_files::passfile_password(&path, &lookups) {
        Ok(Some((password, line))) => {
            config.password(password.as_str());
            Source::PassFile { path, line }
        }
        Ok(None) => {
            looked.push(format!("{} (no line for this server)", path.display()));
            Source::None { looked }
        }
        Err(why) => {
            looked.push(why);
            Source::None { looked }
        }
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// libpq's settings that hold a secret (`password`, `sslpassword`), as a key
/// of a URL's query or a `key=value` word; keys are compared percent-decoded
/// and in any case.
fn is_password_key(key: &str) -> bool {
    let key = percent_decode(key).to_ascii_lowercase();
    key == "password" || key == "sslpassword"
}

/// The URL with every password replaced by `***`, in every form libpq
/// accepts: `scheme://user:PASSWORD@host…` (the password may hold `@`, `/`,
/// `#` or `?` unescaped: it runs to the last `@` before the query),
/// `?password=…` / `&sslpassword=…` in the query (keys percent-encoded or
/// not), and the `key = value` words (`password='a b'`, spaces around `=`,
/// quoted values with escapes).
pub fn hide_password(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let head = &url[..scheme_end + 3];
        let after = &url[scheme_end + 3..];
        // The query starts at the first `?` after the user part's first `@`
        // (a password may hold a `?`), else at the first `?`.
        let query_at = match after.find('@') {
            Some(first_at) => after[first_at..].find('?').map(|q| first_at + q),
            None => after.find('?'),
        };
        let (before_query, query) = match query_at {
            Some(q) => (&after[..q], Some(&after[q + 1..])),
            None => (after, None),
        };
        let mut out = String::from(head);
        match before_query.rfind('@') {
            Some(at) if before_query[..at].contains(':') => {
                let colon = before_query[..at].find(':').unwrap_or(at);
                out.push_str(&before_query[..colon]);
                out.push_str(":***");
                out.push_str(&before_query[at..]);
            }
            _ => out.push_str(before_query),
        }
        if let Some(query) = query {
            out.push('?');
            out.push_str(&hide_query_passwords(query));
        }
        return out;
    }
    hide_word_passwords(url)
}

/// A URL's query with the values of password keys replaced. A value runs to
/// the next `&` that starts another `key=` (a password may hold `&`).
fn hide_query_passwords(query: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut hiding = false;
    for part in query.split('&') {
        let (key, has_value) = match part.split_once('=') {
            Some((key, _)) => (key, true),
            None => (part, false),
        };
        let starts_pair = has_value
            && !key.is_empty()
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'%' | b'-' | b'.'));
        if hiding && !starts_pair {
            // Still the password's value (it held a `&`).
            continue;
        }
        hiding = starts_pair && is_password_key(key);
        if hiding {
            parts.push(format!("{key}=***"));
        } else {
            parts.push(part.to_string());
        }
    }
    parts.join("&")
}

/// libpq's `key = value` words with the values of password keys replaced;
/// everything else is kept as written.
fn hide_word_passwords(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            out.push(bytes[i] as char);
            i += 1;
            continue;
        }
        // A key: up to `=` or white space.
        let key_start = i;
        while i < bytes.len() && bytes[i] != b'=' && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &text[key_start..i];
        let mut j = i;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= bytes.len() || bytes[j] != b'=' {
            out.push_str(key);
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j].is_ascii_whitespace() {
            j += 1;
        }
        // The value: quoted (with backslash escapes) or up to white space.
        let value_start = j;
        if j < bytes.len() && bytes[j] == b'\'' {
            j += 1;
            while j < bytes.len() && bytes[j] != b'\'' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            j = (j + 1).min(bytes.len());
        } else {
            while j < bytes.len() && !bytes[j].is_ascii_whitespace() {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
        }
        let j = j.min(bytes.len());
        out.push_str(&text[key_start..value_start]);
        if is_password_key(key) {
            out.push_str("***");
        } else {
            out.push_str(&text[value_start..j]);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hides_passwords() {
        assert_eq!(
            hide_password("postgres://kdb:s3cret@db.example:5432/team?sslmode=require"),
            "postgres://kdb:***@db.example:5432/team?sslmode=require"
        );
        assert_eq!(
            hide_password("postgres://kdb@db/team"),
            "postgres://kdb@db/team"
        );
        assert_eq!(
            hide_password("host=db user=kdb password=s3cret"),
            "host=db user=kdb password=***"
        );
    }

    /// Every form libpq takes a password in (issue 38: a query parameter
    /// was shown as written).
    #[test]
    fn hides_passwords_in_every_form_libpq_accepts() {
        let cases = [
            (
                "postgres://u@h/db?password=s3cretQ",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgresql://u@h:5432/db?sslmode=require&password=s3cretQ&application_name=x",
                "postgresql://u@h:5432/db?sslmode=require&password=***&application_name=x",
            ),
            (
                "postgres://u@h/db?sslpassword=s3cretQ",
                "postgres://u@h/db?sslpassword=***",
            ),
            (
                "postgres://u@h/db?PassWord=s3cretQ",
                "postgres://u@h/db?PassWord=***",
            ),
            (
                "postgres://u@h/db?pass%77ord=s3cretQ",
                "postgres://u@h/db?pass%77ord=***",
            ),
            (
                "postgres://u@h/db?password=s3c%26retQ",
                "postgres://u@h/db?password=***",
            ),
            (
                "postgres://u@h/db?password=s3c&retQ&sslmode=disable",
                "postgres://u@h/db?password=***&sslmode=disable",
            ),
            ("postgres://u:s3c@r#t/Q@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u:s3c?retQ@h/db?sslmode=disable",
                "postgres://u:***@h/db?sslmode=disable",
            ),
            (
                "postgres://u:s3cretQ@h1:5432,h2:5433/db",
                "postgres://u:***@h1:5432,h2:5433/db",
            ),
            (
                "postgres:///db?host=/tmp&password=s3cretQ",
                "postgres:///db?host=/tmp&password=***",
            ),
            (
                "host=h password = s3cretQ dbname=d",
                "host=h password = *** dbname=d",
            ),
            (
                "host=h password='s3c ret\\' Q' dbname=d",
                "host=h password=*** dbname=d",
            ),
            ("host=h sslpassword=s3cretQ", "host=h sslpassword=***"),
            ("host=h PASSWORD=s3cretQ", "host=h PASSWORD=***"),
        ];
        for (url, shown) in cases {
            let hidden = hide_password(url);
            assert_eq!(hidden, shown, "{url}");
            assert!(!hidden.contains("s3c"), "{url} -> {hidden}");
        }
    }

    #[test]
    fn takes_the_settings_rust_postgres_lacks() {
        let taken = take_settings(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x\
             &service=team&passfile=%2Fsecrets%2Fpgpass",
        )
        .unwrap();
        assert_eq!(taken.rest, "postgres://u@h/db?application_name=x");
        assert_eq!(taken.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(taken.mode, Some(postgres::config::SslMode::Require));
        assert_eq!(taken.service.as_deref(), Some("team"));
        assert_eq!(taken.passfile.as_deref(), Some("/secrets/pgpass"));
        let taken = take_settings("host=h sslmode=disable dbname=d service=x").unwrap();
        assert_eq!(taken.rest, "host=h dbname=d");
        assert_eq!(taken.root_cert, None);
        assert_eq!(taken.mode, Some(postgres::config::SslMode::Disable));
        assert_eq!(taken.service.as_deref(), Some("x"));
        assert!(take_settings("postgres://h/db?sslmode=sometimes").is_err());
    }

    #[test]
    fn a_ca_file_without_certificates_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let url = format!(
            "postgres://u@h/db?sslmode=require&sslrootcert={}",
            path.display()
        );
        let e = Target::parse(&url).unwrap().tls_config().unwrap_err();
        assert!(e.to_string().contains("no PEM certificate"), "{e}");
        let missing = "postgres://u@h/db?sslmode=require&sslrootcert=/nonexistent/ca.pem";
        let e = Target::parse(missing).unwrap().tls_config().unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }

    #[test]
    fn a_bad_url_is_a_usage_error_without_the_password() {
        let e = Target::parse("postgres://u:pw@h:notaport/db").unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        assert!(!e.to_string().contains("pw@"), "{e}");
    }
}
