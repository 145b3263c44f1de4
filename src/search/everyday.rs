//! Everyday words: the words that say how a question is asked, not what it is
//! about.
//!
//! "What did we do last time about two pods running migrations at once?" is
//! about pods and migrations; `what`, `did`, `we`, `last`, `time` and
//! `about` only frame it. BM25 weighs a word by how few records hold it, so
//! on a large store such words are already cheap. On a small one they are
//! not: a store of one session may hold no `did` or `last` at all, and a word
//! no record holds gets the highest weight there is. Coverage (the share of
//! the question's weight a record holds) and the normalised BM25 score then
//! read the frame as the question's most distinctive part, and no record
//! covers a fifth of it however well it answers: recall stayed silent on a
//! new user's store although search ranked the answer first.
//!
//! So a word of this list weighs at most [`EVERYDAY_WEIGHT`] in the
//! question's weights, whatever the store. The list is general English
//! (pronouns, auxiliaries, prepositions, conjunctions, question words, words
//! of time and of remembering), not tuned on any question set; a word that is
//! a name in code (`test`, `file`, `error`) is not on it. The words are
//! matched in their analysed form, so `remembered` and `remember` are one.

use std::collections::HashSet;
use std::sync::OnceLock;

/// The most an everyday word weighs: BM25's IDF of a word that one record in
/// four holds (`ln(1 + 3.0)`, about 1.39), so such a word never outweighs a
/// word of substance and never counts for nothing either.
pub const EVERYDAY_WEIGHT: f32 = 1.386_294_4;

/// Everyday English, as typed: how a question about past work is framed.
const WORDS: &[&str] = &[
    // pronouns and determiners
    "i",
    "me",
    "my",
    "mine",
    "myself",
    "we",
    "us",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "he",
    "him",
    "his",
    "she",
    "her",
    "it",
    "its",
    "they",
    "them",
    "their",
    "this",
    "that",
    "these",
    "those",
    "a",
    "an",
    "the",
    "some",
    "any",
    "every",
    "each",
    "all",
    "both",
    "either",
    "neither",
    "no",
    "other",
    "another",
    "such",
    "own",
    "same",
    "one",
    "ones",
    "someone",
    "somebody",
    "something",
    "anything",
    "everything",
    "nothing",
    "thing",
    "things",
    "stuff",
    "lot",
    "lots",
    "bit",
    "kind",
    "sort",
    "way",
    "ways",
    // auxiliaries and the commonest verbs
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "do",
    "does",
    "did",
    "done",
    "doing",
    "have",
    "has",
    "had",
    "having",
    "will",
    "would",
    "shall",
    "should",
    "can",
    "could",
    "may",
    "might",
    "must",
    "get",
    "gets",
    "got",
    "gotten",
    "getting",
    "go",
    "goes",
    "went",
    "gone",
    "going",
    "make",
    "made",
    "making",
    "take",
    "took",
    "taken",
    "come",
    "came",
    "let",
    "lets",
    "want",
    "wanted",
    "need",
    "needed",
    "try",
    "tried",
    "trying",
    "put",
    "keep",
    "kept",
    "see",
    "saw",
    "seen",
    "look",
    "looked",
    "looking",
    "know",
    "knew",
    "known",
    "think",
    "thought",
    "guess",
    "mean",
    "meant",
    "happen",
    "happened",
    "happening",
    "end",
    "ended",
    // remembering and talking
    "remember",
    "remembered",
    "recall",
    "recalled",
    "remind",
    "reminded",
    "forget",
    "forgot",
    "forgotten",
    "say",
    "said",
    "says",
    "tell",
    "told",
    "talk",
    "talked",
    "talking",
    "mention",
    "mentioned",
    "discuss",
    "discussed",
    "ask",
    "asked",
    "figure",
    "figured",
    "again",
    // prepositions and conjunctions
    "about",
    "above",
    "across",
    "after",
    "against",
    "along",
    "among",
    "around",
    "as",
    "at",
    "before",
    "behind",
    "below",
    "between",
    "beyond",
    "by",
    "down",
    "during",
    "except",
    "for",
    "from",
    "in",
    "inside",
    "into",
    "like",
    "near",
    "of",
    "off",
    "on",
    "onto",
    "out",
    "outside",
    "over",
    "past",
    "per",
    "since",
    "than",
    "through",
    "till",
    "to",
    "toward",
    "towards",
    "under",
    "until",
    "up",
    "upon",
    "via",
    "with",
    "within",
    "without",
    "and",
    "but",
    "or",
    "nor",
    "so",
    "yet",
    "if",
    "because",
    "while",
    "whether",
    "though",
    "although",
    "unless",
    "whereas",
    // question words
    "what",
    "which",
    "who",
    "whom",
    "whose",
    "when",
    "where",
    "why",
    "how",
    "whatever",
    // time and degree
    "last",
    "time",
    "times",
    "ago",
    "earlier",
    "previously",
    "previous",
    "recently",
    "recent",
    "once",
    "ever",
    "never",
    "always",
    "often",
    "sometimes",
    "already",
    "still",
    "just",
    "now",
    "then",
    "there",
    "here",
    "back",
    "soon",
    "later",
    "today",
    "yesterday",
    "week",
    "day",
    "days",
    "month",
    "while",
    "first",
    "before",
    "again",
    "also",
    "too",
    "very",
    "really",
    "quite",
    "much",
    "many",
    "more",
    "most",
    "less",
    "least",
    "few",
    "little",
    "only",
    "even",
    "actually",
    "basically",
    "probably",
    "maybe",
    "perhaps",
    "anyway",
    "ok",
    "okay",
    "please",
    "thanks",
    "hey",
    "hi",
    "yes",
    "not",
    "don't",
    "didn't",
    "doesn't",
    "isn't",
    "wasn't",
    "weren't",
    "can't",
    "couldn't",
    "won't",
    "wouldn't",
    "we're",
    "we've",
    "i'm",
    "i've",
    "it's",
    "that's",
    "what's",
];

/// The analysed forms of [`WORDS`] (stemmed as the index stems them).
fn analysed() -> &'static HashSet<String> {
    static SET: OnceLock<HashSet<String>> = OnceLock::new();
    SET.get_or_init(|| {
        let mut analyzer = crate::index::tokenizer::analyzer();
        let mut set = HashSet::new();
        for word in WORDS {
            let mut stream = analyzer.token_stream(word);
            while let Some(token) = stream.next() {
                set.insert(token.text.clone());
            }
        }
        set
    })
}

/// Whether an analysed query term is an everyday word.
pub fn is_everyday(term: &str) -> bool {
    analysed().contains(term)
}

/// The question's weights: each term's IDF, an everyday word's at most
/// [`EVERYDAY_WEIGHT`].
pub fn question_weights(terms: &[String], idfs: &[f32]) -> Vec<f32> {
    terms
        .iter()
        .zip(idfs)
        .map(|(term, &idf)| {
            if is_everyday(term) {
                idf.min(EVERYDAY_WEIGHT)
            } else {
                idf
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysed_terms(text: &str) -> Vec<String> {
        let mut analyzer = crate::index::tokenizer::analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        out
    }

    #[test]
    fn the_frame_of_a_question_is_everyday_and_its_subject_is_not() {
        let terms = analysed_terms("What did we do last time about two pods running migrations?");
        let everyday: Vec<&String> = terms.iter().filter(|t| is_everyday(t)).collect();
        let subject: Vec<&String> = terms.iter().filter(|t| !is_everyday(t)).collect();
        assert_eq!(everyday.len(), 7, "{everyday:?}");
        assert!(
            subject.iter().any(|t| t.starts_with("migrat")),
            "{subject:?}"
        );
        assert!(subject.iter().any(|t| t.starts_with("pod")), "{subject:?}");
        // Inflections meet their stem: `remembered` is `remember`.
        assert!(analysed_terms("remembered").iter().all(|t| is_everyday(t)));
        // Words that name things in code stay words of substance.
        for word in ["test", "file", "error", "parser", "deadlock", "build"] {
            assert!(!is_everyday(word), "{word}");
        }
    }

    #[test]
    fn an_everyday_word_weighs_at_most_the_cap_and_others_keep_their_idf() {
        let terms: Vec<String> = ["what", "migrat", "the"].map(String::from).to_vec();
        let weights = question_weights(&terms, &[9.0, 9.0, 0.2]);
        assert_eq!(weights, vec![EVERYDAY_WEIGHT, 9.0, 0.2]);
    }
}
