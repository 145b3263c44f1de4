//! Who may talk to the viewer: the checks every request passes first.
//!
//! The viewer listens on 127.0.0.1 only, but that alone keeps out neither
//! another user of the machine nor a web page the user happens to visit:
//! - **A token.** [`new_token`] draws 32 bytes from the OS random source when
//!   the server starts; every URL the server answers is under `/t/<token>/`
//!   (the page, its scripts, the API), compared in constant time. The URL is
//!   printed once; other local users cannot guess it. No cookie is set (a
//!   cookie for 127.0.0.1 would be sent to every port of it), so the token
//!   lives only in the URL.
//! - **The Host header** must be `127.0.0.1:<port>` or `localhost:<port>`: a
//!   page that rebinds its own DNS name to 127.0.0.1 (DNS rebinding) sends its
//!   own name and is refused.
//! - **Writes** (only delete, only with `--allow-delete`) also need an
//!   `Origin` of the viewer itself and a JSON body: a form or image on another
//!   site cannot send them, and a cross-site `fetch` cannot either without a
//!   CORS preflight, which this server never grants.

use crate::error::{Error, Result};

/// Bytes of randomness in a token (64 hex characters).
const TOKEN_BYTES: usize = 32;

/// A fresh token from the operating system's random source, as hex.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::io("the OS random source", std::io::Error::other(e.to_string())))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `host` (the Host header) names this server on the loopback address.
pub fn host_allowed(host: Option<&str>, port: u16) -> bool {
    let Some(host) = host else {
        return false;
    };
    let host = host.trim().to_ascii_lowercase();
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

/// The rest of `path` after `/t/<token>` when it carries `token`
/// (`/t/<token>/api/search` gives `/api/search`); `None` otherwise.
pub fn strip_token<'a>(path: &'a str, token: &str) -> Option<&'a str> {
    let rest = path.strip_prefix("/t/")?;
    let (given, tail) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    constant_time_eq(given.as_bytes(), token.as_bytes()).then_some(tail)
}

/// Whether a write comes from the viewer's own page: its `Origin` is this
/// server (under either allowed host name).
pub fn same_origin(origin: Option<&str>, port: u16) -> bool {
    let Some(origin) = origin else {
        return false;
    };
    let origin = origin.trim().to_ascii_lowercase();
    origin == format!("http://127.0.0.1:{port}") || origin == format!("http://localhost:{port}")
}

/// Compares without stopping at the first difference, so the time taken does
/// not tell how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_long_random_and_hex() {
        let a = new_token().expect("token");
        let b = new_token().expect("token");
        assert_eq!(a.len(), 64);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_loopback_names_with_this_port_are_hosts() {
        assert!(host_allowed(Some("127.0.0.1:8123"), 8123));
        assert!(host_allowed(Some("LOCALHOST:8123"), 8123));
        for host in [
            "127.0.0.1:8124",
            "127.0.0.1",
            "localhost",
            "evil.example:8123",
            "127.0.0.1.evil.example:8123",
            "[::1]:8123",
            "",
        ] {
            assert!(!host_allowed(Some(host), 8123), "{host}");
        }
        assert!(!host_allowed(None, 8123));
    }

    #[test]
    fn the_token_must_be_the_whole_first_segment() {
        let token = "ab12";
        assert_eq!(
            strip_token("/t/ab12/api/search", token),
            Some("/api/search")
        );
        assert_eq!(strip_token("/t/ab12/", token), Some("/"));
        assert_eq!(strip_token("/t/ab12", token), Some(""));
        for path in [
            "/",
            "/t/",
            "/t/ab1/",
            "/t/ab123/",
            "/t/AB12/",
            "/ab12/",
            "/t//ab12/",
        ] {
            assert_eq!(strip_token(path, token), None, "{path}");
        }
    }

    #[test]
    fn writes_need_the_viewers_own_origin() {
        assert!(same_origin(Some("http://127.0.0.1:9000"), 9000));
        assert!(same_origin(Some("http://localhost:9000"), 9000));
        for origin in [
            "http://127.0.0.1:9001",
            "https://127.0.0.1:9000",
            "http://evil.example",
            "null",
        ] {
            assert!(!same_origin(Some(origin), 9000), "{origin}");
        }
        assert!(!same_origin(None, 9000));
    }
}
