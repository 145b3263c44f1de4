#!/usr/bin/env bash
# knowledge-db side by side with SQLite FTS5 (+ brute-force vectors), bm25s and
# LanceDB on the same generated records, queries and vectors. Not part of CI: it
# installs the peers from PyPI into a venv and wants a release build.
#
#   benches/peers.sh [RECORDS]    (default 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
records="${1:-10000}"
transcripts="../shared/eval/transcripts/claude-code-entire-cli"
work="${KNOWLEDGE_DB_BENCH_WORK:-${TMPDIR:-/tmp}/knowledge-db-bench}"
venv="${KNOWLEDGE_DB_PEERS_VENV:-${TMPDIR:-/tmp}/knowledge-db-peers-venv}"
# The report is written into the work folder before `bench run` would create it.
mkdir -p "$work"

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet numpy bm25s lancedb pyarrow
fi
cargo build --release --locked 2>&1 | tail -n 1
vectors=real
sample=()
# At 1M SQLite FTS5 takes about half a second per query: time 200 of them.
if [ "$records" -gt 100000 ]; then vectors=sampled; sample=(--max-queries 200); fi
target/release/knowledge-db bench run --from "$transcripts" --records "$records" \
  --vectors "$vectors" --work "$work" --export "$work/export-$records" --json > "$work/report-$records.json"
"$venv/bin/python" benches/peers.py "$work/export-$records" --knowledge-db "$work/report-$records.json" \
  --store "$work/store-vectors-$records" --bin target/release/knowledge-db ${sample[@]+"${sample[@]}"}
