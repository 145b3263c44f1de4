//! English stemming with a memory of the words already stemmed.
//!
//! The Snowball English stemmer costs a few hundred nanoseconds a word, and
//! indexing stems every token of every field: on 100k generated agent records
//! it was 13% of the CPU time of `add`. Words follow Zipf's law (a few
//! thousand words make most of any text), so each thread keeps the stems it
//! computed in a map and looks a word up before stemming it. The result is
//! exactly the stemmer's; only the time changes (`cargo bench --bench
//! hot_paths -- analyze`).

use std::borrow::Cow;
use std::cell::RefCell;

use rustc_hash::FxHashMap;
use tantivy::tokenizer::{Token, TokenFilter, TokenStream, Tokenizer};

/// Words longer than this (in bytes) are stemmed every time: they are mostly
/// identifiers and paths, seldom repeated, and would only fill the map.
const MAX_CACHED_BYTES: usize = 24;

/// Distinct words remembered per thread before the map starts over (a few MB).
const MAX_CACHED_WORDS: usize = 100_000;

thread_local! {
    /// Word -> its stem, or `None` when the stem is the word itself.
    static STEMS: RefCell<FxHashMap<Box<str>, Option<Box<str>>>> =
        RefCell::new(FxHashMap::default());
}

/// The token filter: stems each token as tantivy's English `Stemmer` would.
#[derive(Clone, Copy)]
pub struct CachedStemmer {
    stemmer: frostem::Stemmer,
}

impl Default for CachedStemmer {
    fn default() -> Self {
        CachedStemmer {
            stemmer: frostem::Stemmer::new(frostem::Algorithm::English),
        }
    }
}

impl CachedStemmer {
    /// Replaces `word` by its stem.
    fn stem_in_place(&self, word: &mut String) {
        if word.len() > MAX_CACHED_BYTES {
            if let Cow::Owned(stem) = self.stemmer.stem(word) {
                *word = stem;
            }
            return;
        }
        STEMS.with_borrow_mut(|stems| {
            if let Some(known) = stems.get(word.as_str()) {
                if let Some(stem) = known {
                    word.clear();
                    word.push_str(stem);
                }
                return;
            }
            if stems.len() >= MAX_CACHED_WORDS {
                stems.clear();
            }
            let stem = match self.stemmer.stem(word) {
                Cow::Borrowed(same) if same == word.as_str() => None,
                other => Some(Box::<str>::from(other.as_ref())),
            };
            stems.insert(word.as_str().into(), stem.clone());
            if let Some(stem) = stem {
                word.clear();
                word.push_str(&stem);
            }
        });
    }
}

impl TokenFilter for CachedStemmer {
    type Tokenizer<T: Tokenizer> = CachedStemmerFilter<T>;

    fn transform<T: Tokenizer>(self, tokenizer: T) -> CachedStemmerFilter<T> {
        CachedStemmerFilter {
            stemmer: self,
            inner: tokenizer,
        }
    }
}

/// A tokenizer that stems its inner tokenizer's tokens through a [`CachedStemmer`].
#[derive(Clone)]
pub struct CachedStemmerFilter<T> {
    stemmer: CachedStemmer,
    inner: T,
}

impl<T: Tokenizer> Tokenizer for CachedStemmerFilter<T> {
    type TokenStream<'a> = CachedStemmerStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        CachedStemmerStream {
            stemmer: self.stemmer,
            tail: self.inner.token_stream(text),
        }
    }
}

/// The token stream of a [`CachedStemmerFilter`].
pub struct CachedStemmerStream<T> {
    stemmer: CachedStemmer,
    tail: T,
}

impl<T: TokenStream> TokenStream for CachedStemmerStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        self.stemmer.stem_in_place(&mut self.tail.token_mut().text);
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stemmed(word: &str) -> String {
        let mut word = word.to_string();
        CachedStemmer::default().stem_in_place(&mut word);
        word
    }

    fn plain(word: &str) -> String {
        frostem::Stemmer::new(frostem::Algorithm::English)
            .stem(word)
            .into_owned()
    }

    #[test]
    fn stems_like_the_stemmer_the_first_and_the_second_time() {
        for word in [
            "running",
            "tests",
            "connections",
            "parser",
            "oauth2",
            "e0502",
        ] {
            assert_eq!(stemmed(word), plain(word), "{word}, first time");
            assert_eq!(stemmed(word), plain(word), "{word}, from the map");
        }
        assert_eq!(stemmed("running"), "run");
    }

    #[test]
    fn long_words_are_stemmed_without_the_map() {
        let long = "configurationsmanagementsystems";
        assert!(long.len() > MAX_CACHED_BYTES);
        assert_eq!(stemmed(long), plain(long));
        STEMS.with_borrow(|stems| assert!(!stems.contains_key(long)));
    }

    #[test]
    fn a_full_map_starts_over_and_stays_right() {
        for i in 0..MAX_CACHED_WORDS + 10 {
            let word = format!("w{i}ings");
            assert_eq!(stemmed(&word), plain(&word));
        }
        STEMS.with_borrow(|stems| assert!(stems.len() <= MAX_CACHED_WORDS));
        assert_eq!(stemmed("happily"), plain("happily"));
    }

    proptest! {
        #[test]
        fn any_word_stems_as_the_stemmer_does(word in "[a-z0-9'.]{1,30}") {
            prop_assert_eq!(stemmed(&word), plain(&word));
            prop_assert_eq!(stemmed(&word), plain(&word));
        }
    }
}
