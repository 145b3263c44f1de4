//! Builds the English word-frequency table search weighs unfamiliar words by
//! (`src/search/english/words.fst`); run through `scripts/build-word-table.sh`,
//! which makes its input from wordfreq.
//!
//! ```sh
//! cargo run --release --example build_word_table -- words.tsv src/search/english/words.fst
//! ```
//!
//! Input: one `word<TAB>frequency` per line (a word's share of all English
//! tokens). Each word is analysed as the index analyses text (the code
//! tokenizer, then the stemmer), and every term it gives gets the word's
//! frequency added: `migration`, `migrations` and `migrated` sum into one
//! term. Output: an FST map from each term to its frequency in centibels
//! (`round(-100 · log10(frequency))`, wordfreq's own unit), sorted, so the
//! same input always gives the same bytes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};

use anyhow::{bail, Context, Result};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        bail!("usage: build_word_table WORDS.tsv OUT.fst");
    };
    let file = std::fs::File::open(input).with_context(|| format!("reading {input}"))?;
    let mut analyzer = knowledge_db::index::tokenizer::analyzer();
    let mut terms: BTreeMap<String, f64> = BTreeMap::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{input}:{}", n + 1))?;
        let Some((word, freq)) = line.split_once('\t') else {
            bail!("{input}:{}: expected word<TAB>frequency", n + 1);
        };
        let freq: f64 = freq
            .trim()
            .parse()
            .with_context(|| format!("{input}:{}: frequency {freq:?}", n + 1))?;
        let mut stream = analyzer.token_stream(word);
        let mut seen: Vec<String> = Vec::new();
        while let Some(token) = stream.next() {
            if !seen.contains(&token.text) {
                seen.push(token.text.clone());
            }
        }
        for term in seen {
            *terms.entry(term).or_default() += freq;
        }
    }
    let mut builder = tantivy_fst::MapBuilder::memory();
    for (term, freq) in &terms {
        let centibels = (-100.0 * freq.min(1.0).log10()).round().max(0.0) as u64;
        builder.insert(term.as_bytes(), centibels)?;
    }
    let bytes = builder.into_inner()?;
    std::fs::write(output, &bytes).with_context(|| format!("writing {output}"))?;
    eprintln!(
        "build_word_table: {} terms, {} bytes -> {output}",
        terms.len(),
        bytes.len()
    );
    Ok(())
}
