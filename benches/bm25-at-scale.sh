#!/usr/bin/env bash
# Add throughput and BM25 search latency at scale, on records generated from the
# real Claude Code transcripts in ../shared/eval (not part of CI: it takes a minute
# and wants a release build).
#
#   benches/bm25-at-scale.sh [RECORDS]    (default 100000)
#
# Prints: the eval table (add records/s, in-process search latency at depth 100,
# recall of the generated queries), in-process latency at k=10, and the time of a
# one-shot `knowledge-db search` process from start to exit.
set -euo pipefail
cd "$(dirname "$0")/.."
records="${1:-100000}"
transcripts="../shared/eval/transcripts/claude-code-entire-cli"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cargo build --release --locked 2>&1 | tail -n 1
bin="$PWD/target/release/knowledge-db"

"$bin" bench gen --from "$transcripts" --records "$records" --queries 1000 --seed 42 --out "$work/corpus"
"$bin" eval --corpus "$work/corpus" --group-by type --keep-store "$work/store"

"$bin" --store "$work/store" search --queries "$work/corpus/queries.jsonl" -k 10 --all-namespaces --json |
python3 -c '
import json, sys
t = sorted(json.loads(l)["took_ms"] for l in sys.stdin)
pick = lambda p: t[min(len(t) - 1, int(len(t) * p))]
print(f"in-process search, k=10, {len(t)} queries: p50 {pick(0.5):.2f} ms, p95 {pick(0.95):.2f} ms, p99 {pick(0.99):.2f} ms")'

python3 - "$bin" "$work/store" <<'PY'
import subprocess, sys, time
bin, store = sys.argv[1], sys.argv[2]
queries = ["registry.go", "shadow branch checkpoint", "go test integration", "parseConfig", "why did the lint fail"]
times = []
for i in range(100):
    start = time.perf_counter()
    subprocess.run([bin, "--store", store, "search", queries[i % len(queries)], "--json"],
                   stdout=subprocess.DEVNULL, check=True)
    times.append((time.perf_counter() - start) * 1000)
times.sort()
print(f"one-shot CLI search (process start to exit), 100 runs: p50 {times[50]:.1f} ms, p95 {times[95]:.1f} ms")
PY
du -sh "$work/store" | awk '{print "store on disk: " $1}'
