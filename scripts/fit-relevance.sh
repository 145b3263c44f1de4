#!/usr/bin/env bash
# Refits the relevance models of src/search/relevance.rs and the default minimum
# score from the dev sets, and reports them on both halves (see
# scripts/fit-relevance.py). Reproducible: the stores are kept in WORK and
# reused, so only the first run embeds (SciFact ~5 min, LoCoMo ~2 min, the
# agent-question transcripts ~20 min on 2 cores).
#
#   scripts/fit-relevance.sh [WORK]     # WORK defaults to /tmp/kdb-fit
#
# Each set's store also answers the other sets' queries: nothing in it is
# about them, so they are the "not answerable" examples of the fit.
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-/tmp/kdb-fit}"
bin="${KNOWLEDGE_DB_BIN:-target/release/knowledge-db}"
python="${PYTHON:-$HOME/.cache/knowledge-db/venv/bin/python}"
mkdir -p "$work"

declare -A corpus=(
  [scifact]=../shared/eval/scifact-dev
  [locomo]=../shared/eval/locomo-dev
  [agent]=dev-sets/agent-questions
)
# Other sets' queries, renamed xneg-*, as "not answerable" examples.
for name in "${!corpus[@]}"; do
  python3 - "$name" "${corpus[scifact]}" "${corpus[locomo]}" "${corpus[agent]}" > "$work/$name-cross.jsonl" <<'EOF'
import json, sys
own, dirs = sys.argv[1], dict(zip(["scifact", "locomo", "agent"], sys.argv[2:]))
for name, d in dirs.items():
    if name == own:
        continue
    for line in open(f"{d}/queries.jsonl"):
        q = json.loads(line)
        print(json.dumps({"_id": "xneg-" + name + "-" + q["_id"], "text": q["text"], "metadata": {"kind": "cross"}}))
EOF
  cat dev-sets/negatives/queries.jsonl >> "$work/$name-cross.jsonl"
done

dumps=()
for name in scifact locomo agent; do
  "$bin" eval --corpus "${corpus[$name]}" --keep-store "$work/store-$name" \
    --negatives "$work/$name-cross.jsonl" --dump-candidates "$work/$name.jsonl" --json \
    > "$work/$name-eval.json"
  dumps+=("$name=$work/$name.jsonl")
done
"$python" scripts/fit-relevance.py --shipped src/search/relevance.rs "${dumps[@]}"
