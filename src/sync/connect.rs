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
//! TLS is rustls with the ring provider: no OpenSSL on the machine needed.

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};

/// How long a connection attempt may take before sync gives up.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed server address, ready to connect.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    /// Extra certificate authorities (`sslrootcert`).
    root_cert: Option<PathBuf>,
    /// The URL with its password replaced, for messages.
    shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Target {
    /// Reads a URL (or libpq key=value words).
    pub fn parse(url: &str) -> Result<Target> {
        let shown = hide_password(url);
        let bad = |why: String| Error::Usage(format!("sync URL {shown}: {why}"));
        let (rest, root_cert, mode) = take_tls_settings(url.trim()).map_err(bad)?;
        let mut config = postgres::Config::from_str(&rest).map_err(|e| bad(e.to_string()))?;
        if let Some(mode) = mode {
            config.ssl_mode(mode);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("knowledge-db sync");
        }
        Ok(Target {
            config,
            root_cert,
            shown,
        })
    }

    /// The URL with its password hidden.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Opens a connection: plain when `sslmode=disable`, else through rustls.
    pub fn connect(&self) -> Result<postgres::Client> {
        let failed = |e: postgres::Error| {
            Error::Sync(format!(
                "cannot connect to {}: {}",
                self.shown,
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

type TlsSettings = (String, Option<PathBuf>, Option<postgres::config::SslMode>);

/// Takes `sslmode` and `sslrootcert` out of a URL's query or a words string:
/// the rest, the CA file, and the mode rust-postgres should use.
fn take_tls_settings(url: &str) -> std::result::Result<TlsSettings, String> {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let (head, pairs, joiner): (&str, Vec<&str>, &str) = if is_url {
        match url.split_once('?') {
            Some((head, query)) => (head, query.split('&').collect(), "&"),
            None => (url, Vec::new(), "&"),
        }
    } else {
        ("", url.split_whitespace().collect(), " ")
    };
    let (mut kept, mut root_cert, mut mode) = (Vec::new(), None, None);
    for pair in pairs {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = if is_url {
            percent_decode(value)
        } else {
            value.to_string()
        };
        match key {
            "sslrootcert" => root_cert = Some(PathBuf::from(value)),
            "sslmode" => {
                use postgres::config::SslMode;
                mode = Some(match value.as_str() {
                    "disable" => SslMode::Disable,
                    "allow" | "prefer" => SslMode::Prefer,
                    "require" | "verify-ca" | "verify-full" => SslMode::Require,
                    other => {
                        return Err(format!(
                        "sslmode `{other}` is not one of disable, prefer, require, verify-ca, verify-full"
                    ))
                    }
                });
            }
            _ if !pair.is_empty() => kept.push(pair),
            _ => {}
        }
    }
    let rest = if is_url {
        if kept.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", kept.join(joiner))
        }
    } else {
        kept.join(joiner)
    };
    Ok((rest, root_cert, mode))
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

/// The URL with any password replaced by `***`.
pub fn hide_password(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let after = &url[scheme_end + 3..];
        let authority_end = after.find(['/', '?']).unwrap_or(after.len());
        let authority = &after[..authority_end];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                return format!(
                    "{}{}:***{}",
                    &url[..scheme_end + 3],
                    &authority[..colon],
                    &url[scheme_end + 3 + at..]
                );
            }
        }
        return url.to_string();
    }
    url.split_whitespace()
        .map(|word| {
            if word.starts_with("password=") {
                "password=***"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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

    #[test]
    fn takes_the_tls_settings_rust_postgres_lacks() {
        let (rest, root, mode) = take_tls_settings(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&application_name=x",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u@h/db?application_name=x");
        assert_eq!(root, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(mode, Some(postgres::config::SslMode::Require));
        let (rest, root, mode) = take_tls_settings("host=h sslmode=disable dbname=d").unwrap();
        assert_eq!(rest, "host=h dbname=d");
        assert_eq!(root, None);
        assert_eq!(mode, Some(postgres::config::SslMode::Disable));
        assert!(take_tls_settings("postgres://h/db?sslmode=sometimes").is_err());
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
