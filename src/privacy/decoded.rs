//! Base64 values of a Kubernetes Secret, decoded before they are judged.
//!
//! `kubectl get secret -o yaml` (or `-o json`) and a Secret's manifest hold
//! every value of `data:` in base64, so no rule sees the password inside
//! (`password: SHVudGVyMjIh`, `config.env: REJfUEFTU1dPUkQ9…`). In a text that
//! names a Secret, each such value is decoded; it is a secret when its key
//! names one (`password`, `token`, `tls.key`, `.dockerconfigjson`, …) or when
//! the rules find a secret in its decoded text. The base64 value is then
//! replaced whole. Values that do not decode to text, and keys such as
//! `username` or `host` whose decoded text holds nothing, stay.

use std::ops::Range;
use std::sync::OnceLock;

use base64::Engine;
use regex::Regex;

/// `key: <base64>` (YAML) or `"key": "<base64>"` (JSON, escaped or not).
fn data_value() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r#"(?m)(?:(?:^|\\n)[ \t]+([A-Za-z0-9._-]+)[ \t]*:[ \t]*["']?([A-Za-z0-9+/]{8,}={0,2})["']?[ \t]*(?:\r?$|\\[rn])|\\{0,2}"([A-Za-z0-9._-]+)\\{0,2}"[ \t]*:[ \t]*\\{0,2}"([A-Za-z0-9+/]{8,}={0,2})\\{0,2}")"#,
        )
        .ok()
    })
    .as_ref()
}

/// Key names that hold a secret whatever their value says.
fn secret_key() -> Option<&'static Regex> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?i)pass|pwd|secret|token|key|cred|auth|dsn|conn|dockerconfig|private|\.env$|cert\.pem$|\.p12$|\.jks$")
            .ok()
    })
    .as_ref()
}

/// One base64 value of a Secret: where it stands, and what it decodes to.
pub(crate) struct DataValue {
    pub range: Range<usize>,
    /// Whether its key names a secret.
    pub secret_key: bool,
    pub decoded: String,
}

/// The base64 `data:` values of the Secrets `text` shows (none unless it
/// names a Secret).
pub(crate) fn data_values(text: &str) -> Vec<DataValue> {
    if !text.contains("Secret") {
        return Vec::new();
    }
    let (Some(re), Some(secret_key)) = (data_value(), secret_key()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut from = 0;
    // Matches may share a line break (one ends a line, the next starts the
    // next line): each search starts after the last value.
    while let Some(caps) = re.captures_at(text, from) {
        from = caps.get(0).map_or(text.len(), |m| m.end().max(from + 1));
        let (Some(key), Some(value)) = (
            caps.get(1).or_else(|| caps.get(3)),
            caps.get(2).or_else(|| caps.get(4)),
        ) else {
            continue;
        };
        from = value.end();
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(value.as_str()) else {
            continue;
        };
        let Ok(decoded) = String::from_utf8(bytes) else {
            continue;
        };
        if decoded
            .chars()
            .any(|c| c.is_control() && !c.is_whitespace())
        {
            continue;
        }
        out.push(DataValue {
            range: value.range(),
            secret_key: secret_key.is_match(key.as_str()),
            decoded,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_of_a_secret_are_decoded() {
        let text = "apiVersion: v1\nkind: Secret\ndata:\n  username: ZGVwbG95LWJvdA==\n  password: SHVudGVyMjIh\n";
        let values = data_values(text);
        assert_eq!(values.len(), 2);
        assert_eq!(values[0].decoded, "deploy-bot");
        assert!(!values[0].secret_key);
        assert_eq!(&text[values[1].range.clone()], "SHVudGVyMjIh");
        assert!(values[1].secret_key);
        assert!(data_values("data:\n  password: SHVudGVyMjIh\n").is_empty());
    }
}
