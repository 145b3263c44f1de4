//! BIP39 mnemonics: a wallet's seed phrase, told from English by its word
//! list and its checksum.
//!
//! A mnemonic is 12, 15, 18, 21 or 24 words of BIP39's English list of 2,048
//! (`rules/bip39-english.txt`, the list every wallet uses); each word is 11
//! bits, and the last bits are the first bits of the SHA-256 of the others
//! (4 bits for 12 words, 8 for 24). A run of list words whose checksum holds
//! is a seed phrase: one run in 16 (12 words) to 256 (24 words) of list words
//! passes by chance, and English prose seldom strings 12 list words together
//! (the list has no "the", "and", "of" or "is"). The words may be separated
//! by spaces, line breaks, commas, quotes or a numbering (`1. abandon
//! 2. ability`), in any case.

use std::ops::Range;
use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// BIP39's English word list, sorted (one word a line).
const ENGLISH: &str = include_str!("rules/bip39-english.txt");

/// The list, sorted as BIP39 writes it (a word's position is its index).
fn words() -> &'static [&'static str] {
    static WORDS: OnceLock<Vec<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| {
        ENGLISH
            .lines()
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect()
    })
}

/// A word of 3 to 8 ASCII letters, lowercased, packed into an integer: a
/// lookup compares integers, several times cheaper than comparing strings.
fn packed(word: &[u8]) -> Option<u64> {
    if !(3..=8).contains(&word.len()) {
        return None;
    }
    Some(word.iter().fold(0u64, |key, b| {
        (key << 8) | u64::from(b.to_ascii_lowercase())
    }))
}

/// The list's packed words with their indices, sorted by key.
fn keys() -> &'static [(u64, u16)] {
    static KEYS: OnceLock<Vec<(u64, u16)>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys: Vec<(u64, u16)> = words()
            .iter()
            .enumerate()
            .filter_map(|(i, w)| Some((packed(w.as_bytes())?, u16::try_from(i).ok()?)))
            .collect();
        keys.sort_unstable();
        keys
    })
}

/// Word counts a mnemonic may have, longest first.
const LENGTHS: [usize; 5] = [24, 21, 18, 15, 12];

/// Whether the gap between two words of a phrase may stand there: white
/// space, commas, quotes, brackets and a numbering, 12 bytes at most.
fn joins(gap: &str) -> bool {
    let bytes = gap.as_bytes();
    let (mut i, mut len) = (0, 0);
    while i < bytes.len() {
        // Escaped line breaks and tabs (JSON held as text) count as one
        // white space character.
        let escape = bytes[i] == b'\\' && matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't'));
        let b = bytes[i];
        let separator =
            b.is_ascii_whitespace() || b.is_ascii_digit() || b",\"'[]().:;-".contains(&b);
        if !(escape || separator) {
            return false;
        }
        i += if escape { 2 } else { 1 };
        len += 1;
        if len > 12 {
            return false;
        }
    }
    len > 0
}

/// The index of `word` (any case) in the list.
fn index(word: &str) -> Option<u16> {
    let key = packed(word.as_bytes())?;
    let keys = keys();
    keys.binary_search_by_key(&key, |&(k, _)| k)
        .ok()
        .map(|at| keys[at].1)
}

/// Whether the words with these indices are a mnemonic whose checksum
/// holds. Three quarters of its words at least must differ: a random
/// phrase of 24 words from 2,048 repeats one now and then, a word repeated
/// down a page (`word word word …`) is no phrase.
fn checksum_holds(indices: &[u16]) -> bool {
    let mut distinct = indices.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() * 4 < indices.len() * 3 {
        return false;
    }
    let bits = indices.len() * 11;
    let checksum_bits = bits / 33;
    let entropy_bits = bits - checksum_bits;
    let mut entropy = vec![0u8; entropy_bits / 8];
    let bit = |i: usize| (indices[i / 11] >> (10 - i % 11)) & 1 == 1;
    for i in 0..entropy_bits {
        if bit(i) {
            entropy[i / 8] |= 0x80 >> (i % 8);
        }
    }
    let hash = Sha256::digest(&entropy);
    (0..checksum_bits).all(|i| bit(entropy_bits + i) == ((hash[i / 8] >> (7 - i % 8)) & 1 == 1))
}

/// The byte ranges of the BIP39 mnemonics in `text`, each from its first
/// word to its last.
pub(crate) fn find(text: &str) -> Vec<Range<usize>> {
    // The shortest phrase: 12 words of 3 letters, 11 single-byte gaps.
    if text.len() < 12 * 3 + 11 {
        return Vec::new();
    }
    // Runs of words shaped like list words (3 to 8 ASCII letters, not glued
    // to other word characters), joined by gaps that may stand inside a
    // phrase. Only a run of 12 or more has its words looked up: most text
    // never strings 12 such words together, and a lookup per word of every
    // text cost more than all the other checks of a record.
    let mut found = Vec::new();
    let mut shaped: Vec<Range<usize>> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_alphabetic() {
            // An escaped line break or tab is a separator, not an `n` word.
            let escape = bytes[i] == b'\\' && matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't'));
            i += if escape { 2 } else { 1 };
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
            i += 1;
        }
        // A word glued to other word characters (`abandon_x`, `é`) is none.
        let glued = (start > 0 && (bytes[start - 1] == b'_' || bytes[start - 1] >= 0x80))
            || (i < bytes.len() && (bytes[i] == b'_' || bytes[i] >= 0x80));
        if glued || !(3..=8).contains(&(i - start)) {
            check_shaped(text, &shaped, &mut found);
            shaped.clear();
            continue;
        }
        let joined = shaped
            .last()
            .is_some_and(|last| joins(&text[last.end..start]));
        if !joined {
            check_shaped(text, &shaped, &mut found);
            shaped.clear();
        }
        shaped.push(start..i);
    }
    check_shaped(text, &shaped, &mut found);
    found
}

/// Looks up the words of one run of shaped words, when it is long enough
/// to hold a phrase, and checks each run of list words inside it.
fn check_shaped(text: &str, shaped: &[Range<usize>], found: &mut Vec<Range<usize>>) {
    if shaped.len() < 12 {
        return;
    }
    let mut run: Vec<(Range<usize>, u16)> = Vec::new();
    for word in shaped {
        match index(&text[word.clone()]) {
            Some(at) => run.push((word.clone(), at)),
            None => {
                check_run(&run, found);
                run.clear();
            }
        }
    }
    check_run(&run, found);
}

/// Adds to `found` the mnemonics inside one run of list words: the longest
/// window whose checksum holds, then on after it.
fn check_run(run: &[(Range<usize>, u16)], found: &mut Vec<Range<usize>>) {
    if run.len() < 12 {
        return;
    }
    let indices: Vec<u16> = run.iter().map(|(_, i)| *i).collect();
    let mut start = 0;
    while start + 12 <= run.len() {
        let hit = LENGTHS
            .iter()
            .filter(|&&n| start + n <= run.len())
            .find(|&&n| checksum_holds(&indices[start..start + n]));
        match hit {
            Some(&n) => {
                found.push(run[start].0.start..run[start + n - 1].0.end);
                start += n;
            }
            None => start += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BIP39's test vectors (trezor's vectors.json): entropy 9e885d95…, 12
    /// words, and 68a79eac…, 24 words.
    const VECTOR: &str =
        "ozone drill grab fiber curtain grace pudding thank cruise elder eight picnic";

    #[test]
    fn the_list_is_bip39s() {
        assert_eq!(words().len(), 2048);
        assert_eq!(words()[0], "abandon");
        assert_eq!(words()[2047], "zoo");
        assert!(words().windows(2).all(|w| w[0] < w[1]), "sorted");
    }

    #[test]
    fn a_mnemonic_with_its_checksum_is_found_in_any_layout() {
        let text = format!("my seed phrase: {VECTOR}. keep it safe");
        let found = find(&text);
        assert_eq!(found.len(), 1);
        assert_eq!(&text[found[0].clone()], VECTOR);
        let long = "hamster diagram private dutch cause delay private meat slide toddler razor book happy fancy gospel tennis maple dilemma loan word shrug inflict delay length";
        assert_eq!(find(long), vec![0..long.len()]);
        let numbered: String = VECTOR
            .split(' ')
            .enumerate()
            .map(|(i, w)| format!("{}. {w}\n", i + 1))
            .collect();
        assert_eq!(find(&numbered).len(), 1);
        let listed = format!("[\"{}\"]", VECTOR.replace(' ', "\", \""));
        assert_eq!(find(&listed).len(), 1);
        assert_eq!(find(&VECTOR.to_uppercase()).len(), 1);
    }

    #[test]
    fn list_words_without_the_checksum_or_too_few_stay() {
        // The last word changed: the checksum fails.
        let wrong = VECTOR.replace("picnic", "piano");
        assert!(find(&wrong).is_empty());
        assert!(find(
            "abandon ability able about above absent absorb abstract absurd abuse access"
        )
        .is_empty());
        // BIP39's all-zero example repeats one word: the documented example
        // phrase, public, is left as written.
        assert!(find("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about").is_empty());
        assert!(find("the quick brown fox jumps over the lazy dog").is_empty());
        assert!(find(&"word ".repeat(117)).is_empty(), "one word repeated");
    }
}
