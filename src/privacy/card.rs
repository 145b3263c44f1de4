//! Payment card numbers, told from other long numbers by their issuer's
//! prefix, their length and the Luhn check digit.
//!
//! A number of 13 to 19 digits is a card number when its prefix and length
//! are a card network's (Visa 4…, Mastercard 51–55 and 2221–2720, American
//! Express 34/37, Discover 6011/644–649/65, JCB 3528–3589, Diners 300–305/36/38,
//! UnionPay 62) and its Luhn check digit holds; and either it is written in
//! the groups cards are printed in (`4111 1111 1111 1111`, `3782-822463-10005`),
//! or a word for a card stands shortly before it (`card`, `visa`, `cc_number`,
//! `tarjeta`, `карта`, `卡号`, …). A bare run of digits with no such word (an
//! id, a timestamp, a phone number) stays: about one in ten random numbers
//! passes Luhn. The networks' published test numbers stay too (public, in
//! every payment tutorial).

use std::ops::Range;

/// Words for a card that make a bare run of digits a card number when they
/// stand up to [`CONTEXT_BYTES`] before it (compared in ASCII lower case).
const CARD_WORDS: &[&str] = &[
    "card",
    "credit",
    "debit",
    "visa",
    "mastercard",
    "amex",
    "discover",
    "cc_",
    "ccnum",
    "cc-num",
    "cc num",
    "pan",
    "tarjeta",
    "cartão",
    "cartao",
    "carte",
    "karte",
    "kredit",
    "kart",
    "карт",
    "卡号",
    "卡號",
    "信用卡",
    "カード",
    "카드",
    "कार्ड",
];

/// How far before a bare number a card word is looked for.
const CONTEXT_BYTES: usize = 48;

/// Test numbers the card networks and payment providers publish.
const TEST_NUMBERS: &[&str] = &[
    "4242424242424242",
    "4000056655665556",
    "4111111111111111",
    "4012888888881881",
    "4000000000000002",
    "4000000000009995",
    "5555555555554444",
    "5200828282828210",
    "5105105105105100",
    "2223003122003222",
    "378282246310005",
    "371449635398431",
    "6011111111111117",
    "6011000990139424",
    "3056930009020004",
    "36227206271667",
    "3566002020360505",
    "6200000000000005",
];

/// Whether `digits` has a card network's prefix and length.
fn issued(digits: &[u8]) -> bool {
    let n = digits.len();
    let prefix = |k: usize| -> u32 {
        digits[..k]
            .iter()
            .fold(0, |acc, d| acc * 10 + u32::from(d - b'0'))
    };
    match digits[0] {
        b'4' => matches!(n, 13 | 16 | 19),
        b'5' => (51..=55).contains(&prefix(2)) && n == 16,
        b'2' => (2221..=2720).contains(&prefix(4)) && n == 16,
        b'3' => {
            (matches!(prefix(2), 34 | 37) && n == 15)
                || ((3528..=3589).contains(&prefix(4)) && (16..=19).contains(&n))
                || (((300..=305).contains(&prefix(3)) || matches!(prefix(2), 36 | 38)) && n == 14)
        }
        b'6' => {
            (prefix(4) == 6011
                || (644..=649).contains(&prefix(3))
                || prefix(2) == 65
                || prefix(2) == 62)
                && (16..=19).contains(&n)
        }
        _ => false,
    }
}

/// Whether the Luhn check digit of `digits` holds.
fn luhn(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d - b'0');
            if i % 2 == 1 {
                let twice = d * 2;
                if twice > 9 {
                    twice - 9
                } else {
                    twice
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether the groups of a number written with separators are those cards
/// are printed in: 4-4-4-4(-3), 4-6-5 (American Express), 4-6-4 (Diners).
fn printed_groups(groups: &[usize]) -> bool {
    matches!(
        groups,
        [4, 4, 4, 4] | [4, 4, 4, 4, 3] | [4, 6, 5] | [4, 6, 4] | [4, 4, 4, 1] | [4, 4, 4, 4, 1, 2]
    ) || (groups.len() >= 4 && groups[..groups.len() - 1].iter().all(|&g| g == 4))
}

/// Whether a card word stands shortly before `at`.
fn named_before(text: &str, at: usize) -> bool {
    let mut from = at.saturating_sub(CONTEXT_BYTES);
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let before = text[from..at].to_lowercase();
    CARD_WORDS.iter().any(|w| before.contains(w))
}

/// The byte ranges of the card numbers in `text`.
pub(crate) fn find(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        // Part of a longer token (`v1.4111…`, `id_4111…`, `x4111…`): skip it whole.
        let glued = start > 0
            && (bytes[start - 1].is_ascii_alphanumeric()
                || matches!(bytes[start - 1], b'_' | b'.' | b'/' | b'+' | b'-' | b'#'));
        let mut digits = Vec::with_capacity(24);
        let mut groups = vec![0usize];
        let mut end = i;
        let mut separator: Option<u8> = None;
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_digit() {
                digits.push(b);
                if let Some(last) = groups.last_mut() {
                    *last += 1;
                }
                i += 1;
                end = i;
            } else if matches!(b, b' ' | b'-')
                && separator.is_none_or(|s| s == b)
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
                && digits.len() < 19
            {
                separator = Some(b);
                groups.push(0);
                i += 1;
            } else {
                break;
            }
        }
        let glued_after = bytes
            .get(end)
            .is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/'))
            && !(bytes[end] == b'.'
                && bytes
                    .get(end + 1)
                    .is_none_or(|b| !b.is_ascii_alphanumeric()));
        if glued || glued_after || !(13..=19).contains(&digits.len()) {
            continue;
        }
        let shaped = if separator.is_some() {
            printed_groups(&groups)
        } else {
            named_before(text, start)
        };
        if shaped
            && issued(&digits)
            && luhn(&digits)
            && !TEST_NUMBERS
                .iter()
                .any(|t| t.as_bytes() == digits.as_slice())
        {
            found.push(start..end);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_numbers_printed_or_named_are_found() {
        // Valid Luhn, not a published test number.
        let visa = "4539 1488 0343 6467";
        assert_eq!(
            find(&format!("card: {visa} exp 12/29")),
            vec![6..6 + visa.len()]
        );
        assert_eq!(
            find("amex 3714-496353-98431").len(),
            0,
            "a published test number"
        );
        assert_eq!(find("charge 3782-822463-10006").len(), 0, "Luhn fails");
        assert_eq!(find("cc_number=4539148803436467").len(), 1);
        assert_eq!(find("Kartennummer 5425233430109903").len(), 1);
    }

    #[test]
    fn other_long_numbers_stay() {
        // A bare number with no card word, timestamps, ids, versions.
        assert!(find("request 4539148803436467 took 12ms").is_empty());
        assert!(find("1733580000000000000 ns").is_empty());
        assert!(find("v4.5391.4880.3436467").is_empty());
        assert!(
            find("card 4242 4242 4242 4242").is_empty(),
            "Stripe's test card"
        );
        assert!(find("phone 4539 1488 034").is_empty());
    }
}
