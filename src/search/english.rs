//! English word weights: how rare a word is in English, for the stores too
//! small to say.
//!
//! BM25 weighs a query word by how few records hold it. That is a fine
//! measure of a word on a store of thousands of records, and a poor one on a
//! new user's store of one session: there, a word no record holds gets the
//! highest weight there is, however ordinary it is. "What did we do last
//! time about two pods running migrations concurrently?" on a store whose one
//! session talked of two pods running migrations at once then puts most of
//! the question's weight on `concurrently`, the one word of it the session
//! never used, and no record covers a tenth of the question: recall stays
//! silent although search ranks the session first.
//!
//! So every word's weight also hears from English. `words.fst` holds the
//! frequency of every term of wordfreq's large English list (Wikipedia,
//! subtitles, books, Twitter, Reddit and web text; built by
//! `scripts/build-word-table.sh` through this crate's own analyzer, so a term
//! is looked up exactly as a query analyses it). [`Prior`] reads it as a
//! corpus of `docs` background records of `length` words each, added to the
//! store's own: a word's document frequency is the store's count plus the
//! records of the background that would hold it, and its weight is BM25's
//! IDF over both. On a store of a few records the background speaks:
//! `concurrently` weighs what a word seen once in three hundred thousand
//! English words weighs, `what` and `did` next to nothing. As the store grows
//! its own counts take over, and on a store of forty thousand records the
//! background moves a word's weight only where the store holds it rarely or
//! not at all. A term English has never seen (an identifier, an error code,
//! a misspelling) counts as rarer than any word it has.
//!
//! The weights are used wherever a query word's importance is read: the BM25
//! score itself (each term boosted from the store's IDF to this one), the
//! share of the query a record covers, and the normalised BM25 score the
//! relevance model and the recall gate read.

use std::sync::OnceLock;

use tantivy_fst::raw::Fst;

/// The table: analysed term → frequency in centibels (`-100 · log10`), as
/// `scripts/build-word-table.sh` writes it from wordfreq 3.1.1.
static WORDS: &[u8] = include_bytes!("english/words.fst");

/// The frequency of a term English has never seen: a tenth of the rarest
/// word of wordfreq's large list (which stops at 10⁻⁸).
pub const UNSEEN: f64 = 1e-9;

fn table() -> Option<&'static Fst<&'static [u8]>> {
    static TABLE: OnceLock<Option<Fst<&'static [u8]>>> = OnceLock::new();
    TABLE.get_or_init(|| Fst::new(WORDS).ok()).as_ref()
}

/// The share of English words that are `term` (an analysed term: lowercase,
/// stemmed), or [`UNSEEN`].
pub fn frequency(term: &str) -> f64 {
    table()
        .and_then(|fst| fst.get(term))
        .map(|out| 10f64.powf(-(out.value() as f64) / 100.0))
        .unwrap_or(UNSEEN)
}

/// English as a background corpus added to a store's records when weighing
/// a word: `docs` records of `length` words each. `docs = 0` leaves the
/// store's own statistics alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Background records: how many records a store holds before its own
    /// counts weigh as much as English.
    pub docs: f32,
    /// Words in each background record.
    pub length: f32,
}

impl From<&crate::store::config::Ranking> for Prior {
    /// `[ranking] english_docs` and `english_length` (0 turns it off).
    fn from(ranking: &crate::store::config::Ranking) -> Self {
        Prior {
            docs: ranking.english_docs.max(0.0),
            length: ranking.english_length.max(0.0),
        }
    }
}

impl Prior {
    /// Without a background: BM25's own weights.
    pub const OFF: Prior = Prior {
        docs: 0.0,
        length: 0.0,
    };

    /// Whether the background changes anything.
    pub fn is_on(&self) -> bool {
        self.docs > 0.0 && self.length > 0.0
    }

    /// The share of background records holding `term`: one minus the chance
    /// that none of a record's `length` words is it.
    pub fn doc_share(&self, term: &str) -> f64 {
        let f = frequency(term);
        -(-(self.length as f64) * f).exp_m1()
    }

    /// `term`'s weight: BM25's IDF over the store's `docs` records, of which
    /// `doc_freq` hold it, and the background's.
    pub fn idf(&self, term: &str, doc_freq: u64, docs: u64) -> f32 {
        let store_docs = docs as f64;
        let store_freq = (doc_freq as f64).min(store_docs);
        let (n, df) = if self.is_on() {
            let background = self.docs as f64;
            (
                store_docs + background,
                store_freq + background * self.doc_share(term),
            )
        } else {
            (store_docs, store_freq)
        };
        let x = (n - df + 0.5) / (df + 0.5);
        (1.0 + x).ln() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysed(word: &str) -> String {
        let mut analyzer = crate::index::tokenizer::analyzer();
        let mut stream = analyzer.token_stream(word);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        assert_eq!(out.len(), 1, "{word}: {out:?}");
        out.remove(0)
    }

    #[test]
    fn the_table_knows_english_and_counts_inflections_as_one_term() {
        let the = frequency(&analysed("the"));
        let migration = frequency(&analysed("migrations"));
        assert!(the > 0.03 && the < 0.08, "{the}");
        assert!(migration > 1e-6 && migration < 1e-4, "{migration}");
        // `migrations` and `migration` are one term, their frequencies summed.
        assert_eq!(analysed("migrations"), analysed("migration"));
        assert_eq!(frequency("parseconfig"), UNSEEN);
    }

    #[test]
    fn nearly_every_term_of_the_table_is_its_own_analysed_form() {
        // The table was built through this analyzer; a term that analyses to
        // something else would never be looked up (a stemmer or tokenizer
        // change needs `scripts/build-word-table.sh` again).
        use tantivy_fst::Streamer;
        let fst = table().expect("the table loads");
        let mut analyzer = crate::index::tokenizer::analyzer();
        let mut stream = fst.stream();
        let (mut checked, mut differ) = (0, Vec::new());
        while let Some((key, _)) = stream.next() {
            checked += 1;
            if checked % 97 != 0 {
                continue;
            }
            let term = String::from_utf8_lossy(key).to_string();
            let mut found = false;
            {
                let mut tokens = analyzer.token_stream(&term);
                while let Some(token) = tokens.next() {
                    found |= token.text == term;
                }
            }
            if !found {
                differ.push(term);
            }
        }
        assert!(checked > 100_000, "{checked} terms");
        assert!(
            // The English stemmer is not idempotent on every stem
            // ("direction" can stem from "directions" yet analyse to
            // "direct"); such terms are dead weight, not wrong weights. About
            // 2% of a sample were so when the table was built.
            differ.len() * 25 < checked / 97,
            "{} of {}: {:?}",
            differ.len(),
            checked / 97,
            &differ[..differ.len().min(20)]
        );
    }

    #[test]
    fn on_a_small_store_english_says_which_words_are_rare() {
        let prior = Prior {
            docs: 1000.0,
            length: 100.0,
        };
        // A store of 12 records that never holds `concurrently` nor `what`:
        // BM25 alone weighs them the same, English does not.
        let concurrently = prior.idf(&analysed("concurrently"), 0, 12);
        let what = prior.idf(&analysed("what"), 0, 12);
        assert!(concurrently > 3.0 * what, "{concurrently} {what}");
        let off = Prior::OFF;
        assert_eq!(
            off.idf(&analysed("concurrently"), 0, 12),
            off.idf(&analysed("what"), 0, 12)
        );
    }

    #[test]
    fn on_a_large_store_its_own_counts_decide() {
        let prior = Prior {
            docs: 1000.0,
            length: 100.0,
        };
        // A word English finds rare but the store holds in half its records
        // weighs little on a large store.
        let term = analysed("checkpoint");
        let large = prior.idf(&term, 20_000, 40_000);
        let bare = Prior::OFF.idf(&term, 20_000, 40_000);
        assert!((large - bare).abs() < 0.05, "{large} {bare}");
        let small = prior.idf(&term, 5, 10);
        assert!(small > 2.0 * large, "{small} {large}");
    }
}
