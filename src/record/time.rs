//! Time bounds for `--since` and `--until`: absolute or relative to now.
//!
//! `2026-01-05`, `2026-01-05T10:00:00Z` and `2026-01-05 10:00:00` are absolute;
//! `30m`, `12h`, `7d`, `2w` mean that long before now.

use crate::record::parse::parse_time;

/// Parses a time bound into Unix seconds, relative to `now` (Unix seconds).
pub fn parse_bound(text: &str, now: i64) -> Result<i64, String> {
    if let Some(secs) = parse_time(text) {
        return Ok(secs);
    }
    parse_duration_secs(text).map(|d| now - d).ok_or_else(|| {
        format!(
            "cannot read `{text}` as a time: use a date (2026-01-05), an RFC 3339 time \
                 (2026-01-05T10:00:00Z) or an age such as 30m, 12h, 7d, 2w"
        )
    })
}

/// `90s`, `30m`, `12h`, `7d`, `2w` in seconds.
pub fn parse_duration_secs(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: i64 = number.parse().ok()?;
    let unit_secs = match unit {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return None,
    };
    n.checked_mul(unit_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_and_relative_bounds() {
        assert_eq!(parse_bound("2026-01-05", 0), Ok(1767571200));
        assert_eq!(parse_bound("7d", 1_000_000), Ok(1_000_000 - 7 * 86_400));
        assert_eq!(parse_bound("12h", 100_000), Ok(100_000 - 12 * 3600));
        assert!(parse_bound("soon", 0)
            .unwrap_err()
            .contains("cannot read `soon`"));
        assert_eq!(parse_duration_secs("5x"), None);
        assert_eq!(parse_duration_secs("d"), None);
    }
}
