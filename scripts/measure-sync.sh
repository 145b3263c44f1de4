#!/usr/bin/env bash
# Measures sync on the 288 real Claude Code sessions of
# ../shared/eval/transcripts/claude-code-entire-cli (docs/sync.md's table):
#   1. the first push of 287 sessions (ingested into namespace `team`, every
#      record with its full vector) into an empty database: time and bytes;
#   2. the first pull of all of it into an empty store;
#   3. an incremental sync of the 288th session: ingested (and embedded) on
#      the first machine, pushed, pulled by the second;
#   4. search latency on the store that pulled everything against a store
#      that holds the same records added locally (`export` | `add`), over the
#      agent questions (dev-sets/agent-questions), warm, in one process each.
#
#   scripts/measure-sync.sh [WORKDIR]     # default /tmp/kdb-sync-measure
#
# Needs a release build (cargo build --release), the model
# (scripts/setup-model.sh) and the test server (scripts/pg-test-server.sh
# start). Reuses WORKDIR/source if it is there (the ingest and the embedding
# take most of the time); prints one JSON object.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${1:-/tmp/kdb-sync-measure}
bin=$repo/target/release/knowledge-db
sessions=$repo/../shared/eval/transcripts/claude-code-entire-cli
[ -d "$sessions" ] || sessions=/work/shared/eval/transcripts/claude-code-entire-cli
export KNOWLEDGE_DB_UPKEEP=off
eval "$(scripts/pg-test-server.sh start)"
mkdir -p "$work"
cd "$work"

ls "$sessions"/*.jsonl.gz | sort >all.txt
head -n -1 all.txt >first.txt
tail -n 1 all.txt >last.txt
if [ ! -f source/done ]; then
  rm -rf source
  "$bin" --store source init >/dev/null
  # shellcheck disable=SC2046
  "$bin" --store source ingest --namespace team --embed later --json $(cat first.txt) >ingest.json
  nice "$bin" --store source embed --json >embed.json
  touch source/done
fi
rm -rf a b local
cp -a source a
db=kdb_measure
"$KDB_PG_BIN/psql" -q "$KDB_PG_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
url=${KDB_PG_URL%/*}/$db
table_bytes() { "$KDB_PG_BIN/psql" -tA "$url" -c "SELECT pg_total_relation_size('kdb_records')"; }
"$bin" --store a sync --url "$url" --share team --json >push.json
push_table=$(table_bytes)
"$bin" --store b init >/dev/null
"$bin" --store b sync --url "$url" --json >pull.json
# One new session: ingested with its vectors on A, pushed, pulled by B.
start=$(date +%s.%N)
# shellcheck disable=SC2046
"$bin" --store a ingest --namespace team --json $(cat last.txt) >ingest-one.json
ingest_one=$(echo "$(date +%s.%N) - $start" | bc)
"$bin" --store a sync --url "$url" --share team --json >push-one.json
"$bin" --store b sync --url "$url" --json >pull-one.json
# The same records added locally: A's export into a fresh store, with the
# same vectors (--embed later: no model pass for the ones A lacked either).
"$bin" --store local init >/dev/null
"$bin" --store a export --tier l2 >a.export.jsonl
"$bin" --store local add --embed later a.export.jsonl --json >local-add.json
queries=$repo/dev-sets/agent-questions/queries.jsonl
latency() {
  "$bin" --store "$1" search --queries "$queries" --namespace team --json >/dev/null
  "$bin" --store "$1" search --queries "$queries" --namespace team --json >"$1.search.jsonl"
}
latency b
latency local
python3 - "$ingest_one" "$push_table" <<'EOF'
import json, statistics, sys
def load(name): return json.load(open(name))
def took(name):
    ms = sorted(json.loads(l)["took_ms"] for l in open(name))
    return {"queries": len(ms), "p50_ms": round(statistics.median(ms), 2),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 2), "mean_ms": round(statistics.mean(ms), 2)}
def ids(name):
    return [[r["id"] for r in json.loads(l)["results"]][:5] for l in open(name)]
push, pull = load("push.json"), load("pull.json")
out = {
    "records": push["pushed"],
    "first_push": {k: push[k] for k in ("pushed", "push_bytes", "push_seconds", "seconds")},
    "server_table_bytes_after_first_push": int(sys.argv[2]),
    "first_pull": {k: pull[k] for k in ("pulled", "pulled_with_vector", "pull_bytes", "pull_seconds", "seconds")},
    "one_session": {"ingest_seconds": float(sys.argv[1]),
                    "push": {k: load("push-one.json")[k] for k in ("pushed", "push_bytes", "push_seconds", "seconds")},
                    "pull": {k: load("pull-one.json")[k] for k in ("pulled", "pulled_with_vector", "pull_bytes", "pull_seconds", "seconds")}},
    "search_pulled": took("b.search.jsonl"),
    "search_local": took("local.search.jsonl"),
    "same_top5": sum(a == b for a, b in zip(ids("b.search.jsonl"), ids("local.search.jsonl"))),
}
print(json.dumps(out, indent=1))
EOF
