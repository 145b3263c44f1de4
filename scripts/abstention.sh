#!/usr/bin/env bash
# Measures abstention (issue 20): the share of dev-sets/negatives (121 queries
# with no relevant record: nonsense strings, off-topic questions, developer
# questions about work that never happened) answered with nothing, on four
# stores, and what the default minimum score costs the dev sets' Recall@10.
#
#   scripts/abstention.sh [WORK]     # WORK defaults to /tmp/kdb-abstention
#
# Stores are kept in WORK and reused (the first run embeds: SciFact ~5 min,
# LoCoMo ~2 min, the agent-question transcripts ~20+ min on 2 cores).
# Each eval prints "minimum score ... Recall@10 X, without it Y" and
# "abstention N of 121 ...".
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/kdb-abstention}"
bin="${KNOWLEDGE_DB_BIN:-target/release/knowledge-db}"
negatives=dev-sets/negatives/queries.jsonl
mkdir -p "$work"

for set in scifact locomo; do
  echo "== $set"
  "$bin" eval --corpus "../shared/eval/$set-dev" --keep-store "$work/$set" --negatives "$negatives"
done
echo "== agent questions (transcript store)"
"$bin" eval --corpus dev-sets/agent-questions --keep-store "$work/agent" --negatives "$negatives"

echo "== demo store (data-samples, as ./setup.sh builds it)"
demo="$work/demo"
if [ ! -d "$demo" ]; then
  "$bin" --store "$demo" init >/dev/null
  "$bin" --store "$demo" add data-samples/ >/dev/null
  "$bin" --store "$demo" ingest data-samples/transcripts/ >/dev/null
fi
"$bin" --store "$demo" search --queries "$negatives" --json |
  python3 -c '
import json, sys
rows = [json.loads(line) for line in sys.stdin]
empty = sum(1 for r in rows if not r["results"])
print(f"abstention      {empty} of {len(rows)} queries without a relevant record answered with nothing ({100 * empty / len(rows):.1f}%)")'
