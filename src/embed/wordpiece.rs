//! BERT's WordPiece tokenizer, as the model's `tokenizer.json` describes it.
//!
//! all-MiniLM-L6-v2 reads token ids. Its `tokenizer.json` names four steps, done
//! here exactly as Hugging Face's `tokenizers` crate does them, so the ids (and so
//! the vectors) are the same to the last one:
//!
//! 1. **Special tokens** written in the text (`[SEP]`, `[MASK]`, …) are matched
//!    literally, before anything else, and become their own ids.
//! 2. **Normalising** (`BertNormalizer`): control characters dropped, every kind
//!    of whitespace made a space, spaces put around CJK ideographs, accents
//!    stripped (NFD, then non-spacing marks dropped), lower case.
//! 3. **Splitting** (`BertPreTokenizer`): at whitespace, and around each
//!    punctuation character.
//! 4. **WordPiece**: each word becomes the longest vocabulary entries that cover
//!    it from the left (`##` marks a piece inside a word); a word that cannot be
//!    covered, or is longer than 100 characters, is `[UNK]`.
//!
//! Then `[CLS] … [SEP]`, cut to the model's longest input.
//!
//! **Why not the `tokenizers` crate:** it handles every tokenizer family of the
//! Hugging Face hub, and compiling it and the crates only it needs took about a
//! tenth of a release build's CPU (issue 40), for the one family this model
//! uses. The character tables are the same crates `tokenizers` uses
//! (`unicode_categories`, `unicode-normalization-alignments`), so "control",
//! "punctuation" and "accent" mean what they mean there. `tests/wordpiece.rs`
//! compares both tokenizers on random and real text.
//!
//! A `tokenizer.json` of another kind (a BPE or SentencePiece model, other
//! normalisers) is refused with the field that differs.

use std::collections::HashMap;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

/// A WordPiece tokenizer read from a `tokenizer.json`.
#[derive(Debug)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    /// The special tokens, matched literally in the text in one pass
    /// (leftmost, then longest, as `tokenizers` matches them), and their ids.
    specials: AhoCorasick,
    special_ids: Vec<u32>,
    normalizer: Normalizer,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_word_chars: usize,
    /// Longest output, `[CLS]` and `[SEP]` included.
    max_len: usize,
}

/// `BertNormalizer`'s switches.
#[derive(Debug, Clone, Copy)]
struct Normalizer {
    clean_text: bool,
    chinese_chars: bool,
    strip_accents: bool,
    lowercase: bool,
}

/// Why a `tokenizer.json` cannot be used: the field, and what is wrong with it.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct TokenizerError {
    /// The JSON path of the field, like `model.type`.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn error(field: &str, message: impl Into<String>) -> TokenizerError {
    TokenizerError {
        field: field.to_string(),
        message: message.into(),
    }
}

type Json = serde_json::Value;

impl WordPiece {
    /// Reads `path` (a `tokenizer.json`); ids are cut to `max_len`.
    pub fn from_file(path: &Path, max_len: usize) -> Result<WordPiece, TokenizerError> {
        let bytes = std::fs::read(path).map_err(|e| error("(file)", e.to_string()))?;
        let json: Json =
            serde_json::from_slice(&bytes).map_err(|e| error("(file)", e.to_string()))?;
        WordPiece::from_json(&json, max_len)
    }

    /// Reads a parsed `tokenizer.json`.
    pub fn from_json(json: &Json, max_len: usize) -> Result<WordPiece, TokenizerError> {
        let model = &json["model"];
        expect_type(model, "model", "WordPiece")?;
        let vocab: HashMap<String, u32> = match &model["vocab"] {
            Json::Object(map) => map
                .iter()
                .map(|(token, id)| {
                    as_id(id)
                        .map(|id| (token.clone(), id))
                        .ok_or_else(|| error("model.vocab", format!("{token:?} has no id")))
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(error("model.vocab", "not a map of tokens to ids")),
        };
        let id_of = |field: &str, token: &str| {
            vocab
                .get(token)
                .copied()
                .ok_or_else(|| error(field, format!("{token:?} is not in the vocabulary")))
        };
        let unk = id_of("model.unk_token", str_field(model, "model", "unk_token")?)?;
        let prefix = str_field(model, "model", "continuing_subword_prefix")?.to_string();
        let max_word_chars = model["max_input_chars_per_word"]
            .as_u64()
            .ok_or_else(|| error("model.max_input_chars_per_word", "not a number"))?
            as usize;
        let normalizer = Normalizer::from_json(&json["normalizer"])?;
        expect_type(&json["pre_tokenizer"], "pre_tokenizer", "BertPreTokenizer")?;
        let (cls, sep) = frame(&json["post_processor"], &id_of)?;
        let (specials, special_ids) = specials(&json["added_tokens"])?;
        Ok(WordPiece {
            vocab,
            specials,
            special_ids,
            normalizer,
            unk,
            cls,
            sep,
            prefix,
            max_word_chars,
            max_len: max_len.max(2),
        })
    }

    /// The id of `token`, if the vocabulary has it.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.vocab.get(token).copied()
    }

    /// `text`'s ids: `[CLS]`, at most `max_len - 2` tokens, `[SEP]`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let room = self.max_len - 2;
        let mut ids = Vec::with_capacity(room.min(text.len() / 3 + 8) + 2);
        ids.push(self.cls);
        let mut scratch = (String::new(), String::new());
        let mut from = 0;
        for special in self.specials.find_iter(text) {
            if ids.len() > room {
                break;
            }
            self.plain(&text[from..special.start()], room, &mut scratch, &mut ids);
            ids.push(self.special_ids[special.pattern().as_usize()]);
            from = special.end();
        }
        if ids.len() <= room {
            self.plain(&text[from..], room, &mut scratch, &mut ids);
        }
        ids.truncate(room + 1);
        ids.push(self.sep);
        ids
    }

    /// Appends the ids of `text`, which holds no special token, until `ids`
    /// holds more than `room` (`scratch`: the normalised text and a piece).
    fn plain(&self, text: &str, room: usize, scratch: &mut (String, String), ids: &mut Vec<u32>) {
        let (normalized, piece) = scratch;
        self.normalizer.apply(text, normalized);
        for word in words(normalized) {
            self.word_pieces(word, piece, ids);
            if ids.len() > room {
                break;
            }
        }
    }

    /// Appends `word`'s WordPiece ids to `ids` (`piece` is scratch space).
    fn word_pieces(&self, word: &str, piece: &mut String, ids: &mut Vec<u32>) {
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    break Some(id);
                }
                // Shorter by one character from the right.
                match word[start..end].char_indices().next_back() {
                    Some((at, _)) if at > 0 => end = start + at,
                    _ => break None,
                }
            };
            match found {
                Some(id) => ids.push(id),
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

impl Normalizer {
    fn from_json(json: &Json) -> Result<Normalizer, TokenizerError> {
        expect_type(json, "normalizer", "BertNormalizer")?;
        let flag = |name: &str| {
            json[name]
                .as_bool()
                .ok_or_else(|| error(&format!("normalizer.{name}"), "not true or false"))
        };
        let lowercase = flag("lowercase")?;
        let strip_accents = match &json["strip_accents"] {
            Json::Null => lowercase,
            Json::Bool(b) => *b,
            _ => return Err(error("normalizer.strip_accents", "not true, false or null")),
        };
        Ok(Normalizer {
            clean_text: flag("clean_text")?,
            chinese_chars: flag("handle_chinese_chars")?,
            strip_accents,
            lowercase,
        })
    }

    /// `text` normalised into `out` (cleared first).
    fn apply(&self, text: &str, out: &mut String) {
        out.clear();
        let mut staged = String::with_capacity(text.len() + 8);
        for c in text.chars() {
            if self.clean_text {
                if c == '\0' || c == '\u{fffd}' || is_control(c) {
                    continue;
                }
                if is_whitespace(c) {
                    staged.push(' ');
                    continue;
                }
            }
            if self.chinese_chars && is_chinese_char(c) {
                staged.push(' ');
                staged.push(c);
                staged.push(' ');
            } else {
                staged.push(c);
            }
        }
        let lower = |c: char, out: &mut String| {
            if self.lowercase {
                out.extend(c.to_lowercase());
            } else {
                out.push(c);
            }
        };
        if self.strip_accents {
            for (c, _) in staged.nfd().filter(|(c, _)| !c.is_mark_nonspacing()) {
                lower(c, out);
            }
        } else {
            for c in staged.chars() {
                lower(c, out);
            }
        }
    }
}

/// `BertPreTokenizer`: the words of `text`, split at whitespace (dropped) and
/// around each punctuation character (kept as a word of its own).
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace)
        .flat_map(split_punctuation)
        .filter(|w| !w.is_empty())
}

fn split_punctuation(word: &str) -> impl Iterator<Item = &str> {
    let mut rest = word;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = match rest.char_indices().find(|&(_, c)| is_bert_punctuation(c)) {
            Some((0, c)) => c.len_utf8(),
            Some((at, _)) => at,
            None => rest.len(),
        };
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

fn is_bert_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control, format, unassigned, private-use (`tokenizers`' "is_other").
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

/// The CJK ideograph blocks, which BERT splits into single characters.
fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

fn expect_type(json: &Json, field: &str, wanted: &str) -> Result<(), TokenizerError> {
    match json["type"].as_str() {
        Some(t) if t == wanted => Ok(()),
        Some(t) => Err(error(
            &format!("{field}.type"),
            format!("{t:?}, but only {wanted:?} (BERT's WordPiece tokenizers) is read"),
        )),
        None => Err(error(
            &format!("{field}.type"),
            format!("missing; expected {wanted:?}"),
        )),
    }
}

fn str_field<'j>(json: &'j Json, parent: &str, name: &str) -> Result<&'j str, TokenizerError> {
    json[name]
        .as_str()
        .ok_or_else(|| error(&format!("{parent}.{name}"), "not a string"))
}

/// The ids of the tokens put before and after the text: `TemplateProcessing`
/// of the form `[CLS] $A [SEP]`, or `BertProcessing`.
fn frame(
    json: &Json,
    id_of: &impl Fn(&str, &str) -> Result<u32, TokenizerError>,
) -> Result<(u32, u32), TokenizerError> {
    match json["type"].as_str() {
        Some("BertProcessing") => {
            let token = |name: &str| {
                json[name][0]
                    .as_str()
                    .ok_or_else(|| error(&format!("post_processor.{name}"), "not [token, id]"))
            };
            let field = "post_processor";
            Ok((id_of(field, token("cls")?)?, id_of(field, token("sep")?)?))
        }
        Some("TemplateProcessing") => {
            let field = "post_processor.single";
            let single = json["single"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            fn special(item: &Json) -> Option<&str> {
                item["SpecialToken"]["id"].as_str()
            }
            match single {
                [first, middle, last]
                    if middle["Sequence"]["id"] == "A"
                        && special(first).is_some()
                        && special(last).is_some() =>
                {
                    let id = |item: &Json| {
                        let token = special(item).unwrap_or_default();
                        as_id(&json["special_tokens"][token]["ids"][0])
                            .map_or_else(|| id_of(field, token), Ok)
                    };
                    Ok((id(first)?, id(last)?))
                }
                _ => Err(error(
                    field,
                    "only a template of the form [CLS] $A [SEP] is read",
                )),
            }
        }
        _ => Err(error(
            "post_processor.type",
            "only TemplateProcessing and BertProcessing are read",
        )),
    }
}

/// An id: a whole number that fits in `u32`.
fn as_id(json: &Json) -> Option<u32> {
    json.as_u64().and_then(|id| u32::try_from(id).ok())
}

/// The added tokens, matched literally in the raw text, and their ids.
fn specials(json: &Json) -> Result<(AhoCorasick, Vec<u32>), TokenizerError> {
    let list = json.as_array().map(Vec::as_slice).unwrap_or(&[]);
    let mut contents = Vec::with_capacity(list.len());
    let mut ids = Vec::with_capacity(list.len());
    for (i, token) in list.iter().enumerate() {
        let field = |name: &str| format!("added_tokens[{i}].{name}");
        for switch in ["normalized", "single_word", "lstrip", "rstrip"] {
            if token[switch].as_bool() == Some(true) {
                return Err(error(&field(switch), "only false is read"));
            }
        }
        let content = token["content"]
            .as_str()
            .filter(|c| !c.is_empty())
            .ok_or_else(|| error(&field("content"), "not a non-empty string"))?;
        let id = as_id(&token["id"]).ok_or_else(|| error(&field("id"), "not an id"))?;
        contents.push(content);
        ids.push(id);
    }
    let automaton = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostLongest)
        .build(&contents)
        .map_err(|e| error("added_tokens", e.to_string()))?;
    Ok((automaton, ids))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tiny() -> WordPiece {
        WordPiece::from_json(&tiny_json(), 12).unwrap()
    }

    fn tiny_json() -> Json {
        let vocab: serde_json::Map<String, Json> = [
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##want", "##ed", "want", "runn",
            "##ing", ",", "!", "cafe", "hello", "a", "##b", "中",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
        let added: Vec<Json> = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
            .iter()
            .enumerate()
            .map(|(i, t)| {
                json!({"id": i, "content": t, "special": true, "normalized": false,
                                  "single_word": false, "lstrip": false, "rstrip": false})
            })
            .collect();
        json!({
            "added_tokens": added,
            "normalizer": {"type": "BertNormalizer", "clean_text": true,
                           "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
            "pre_tokenizer": {"type": "BertPreTokenizer"},
            "post_processor": {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                           {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                   "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": vocab},
        })
    }

    #[test]
    fn without_added_tokens_special_looking_text_is_plain_text() {
        let mut json = tiny_json();
        json["added_tokens"] = json!([]);
        let t = WordPiece::from_json(&json, 12).unwrap();
        assert_eq!(t.encode("a[MASK]"), vec![2, 15, 1, 1, 1, 3]);
    }

    #[test]
    fn words_are_covered_by_the_longest_pieces_from_the_left() {
        let t = tiny();
        assert_eq!(t.encode("unwanted running"), vec![2, 5, 6, 7, 9, 10, 3]);
        assert_eq!(t.encode(""), vec![2, 3]);
    }

    #[test]
    fn a_word_the_pieces_cannot_cover_is_unknown_whole() {
        assert_eq!(tiny().encode("wantx ab"), vec![2, 1, 15, 16, 3]);
    }

    #[test]
    fn normalising_strips_accents_and_case_and_splits_punctuation_and_ideographs() {
        let t = tiny();
        assert_eq!(t.encode("CAFÉ,Hello!"), vec![2, 13, 11, 14, 12, 3]);
        assert_eq!(t.encode("a中b"), vec![2, 15, 17, 1, 3]);
        assert_eq!(t.encode("a\u{200b}\u{0}b"), vec![2, 15, 16, 3]);
    }

    #[test]
    fn special_tokens_in_the_text_are_matched_before_normalising() {
        let t = tiny();
        assert_eq!(t.encode("a[MASK]a [mask]"), vec![2, 15, 4, 15, 1, 1, 1, 3]);
    }

    #[test]
    fn output_is_cut_to_the_longest_input_with_the_frame_kept() {
        let ids = tiny().encode(&"a ".repeat(50));
        assert_eq!(ids.len(), 12);
        assert_eq!((ids[0], ids[11]), (2, 3));
        assert!(ids[1..11].iter().all(|&id| id == 15));
    }

    #[test]
    fn another_kind_of_tokenizer_is_refused_by_its_field() {
        let json = json!({"model": {"type": "BPE"}});
        let e = WordPiece::from_json(&json, 8).unwrap_err();
        assert_eq!(e.field, "model.type");
        assert!(e.message.contains("BPE"), "{e}");
    }
}
