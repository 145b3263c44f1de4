#!/usr/bin/env bash
# Builds src/search/english/words.fst, the English word frequencies that
# search weighs a query's words by where the store is too small to know them
# (src/search/english.rs, issue 49).
#
#   scripts/build-word-table.sh
#
# Source: wordfreq 3.1.1 from PyPI (code Apache-2.0; its data, which the
# table is derived from, CC BY-SA 4.0: Wikipedia, OpenSubtitles and SUBTLEX,
# Google Books Ngrams, Twitter, Reddit and web text; see docs/search.md,
# "English word weights"). Every word of its `large` English list is run
# through knowledge-db's own analyzer (the code tokenizer and the stemmer the
# index uses) and the frequencies of the words that analyse to one term are
# summed, so a term is looked up exactly as a query analyses it. The output
# is deterministic: the same wordfreq and analyzer give the same bytes (its
# sha256 is printed and recorded in docs/search.md). Needs PyPI and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
version=3.1.1
pkg="${XDG_CACHE_HOME:-$HOME/.cache}/knowledge-db/wordfreq-$version"
if [ ! -f "$pkg/wordfreq/__init__.py" ]; then
  echo "build-word-table: installing wordfreq $version from PyPI into $pkg" >&2
  rm -rf "$pkg.partial"
  python3 -m pip install --quiet --disable-pip-version-check --target "$pkg.partial" "wordfreq==$version"
  mv "$pkg.partial" "$pkg"
fi
tsv=$(mktemp)
trap 'rm -f "$tsv"' EXIT
PYTHONPATH="$pkg" python3 - "$tsv" <<'PY'
import sys
import wordfreq
words = wordfreq.get_frequency_dict("en", wordlist="large")
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for word, freq in sorted(words.items()):
        if "\t" in word or "\n" in word:
            continue
        out.write(f"{word}\t{freq:.6e}\n")
print(f"build-word-table: {len(words)} words from wordfreq", file=sys.stderr)
PY
cargo run --release --locked --quiet --example build_word_table -- "$tsv" src/search/english/words.fst
sha256sum src/search/english/words.fst
