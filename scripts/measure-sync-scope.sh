#!/usr/bin/env bash
# Measures a 3-project pull scope (docs/sync.md, "Measured"): the 288 real
# Claude Code sessions of ../shared/eval/transcripts/claude-code-entire-cli,
# ingested into namespace `team` (each record's project is its session's
# folder: the corpus's real projects, one per person's checkout), pushed
# whole from one store; then pulled into an empty store twice over, once
# whole (`--pull '*'`) and once scoped to three projects, the two pulls
# alternated over ROUNDS rounds (the machine is shared: A/B back to back).
#
#   scripts/measure-sync-scope.sh [WORKDIR]   # default /tmp/kdb-sync-scope
#
# SCOPE (three project paths, space-separated) overrides the projects; EMBED=0
# skips the model pass (records then travel without vectors); ROUNDS (default
# 2). Needs a release build and the test server (scripts/pg-test-server.sh).
# Reuses WORKDIR/source when it is there. Prints one JSON object.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${1:-/tmp/kdb-sync-scope}
bin=${KDB_BIN:-$repo/target/release/knowledge-db}
sessions=$repo/../shared/eval/transcripts/claude-code-entire-cli
[ -d "$sessions" ] || sessions=/work/shared/eval/transcripts/claude-code-entire-cli
scope=${SCOPE:-/Users/gtrrz-victor/wks/cli /Users/paul/src/entireio/cli /Users/dip/Repositories/cli}
rounds=${ROUNDS:-2}
export KNOWLEDGE_DB_UPKEEP=off
eval "$(scripts/pg-test-server.sh start)"
mkdir -p "$work"
cd "$work"

if [ ! -f source/done ]; then
  rm -rf source
  "$bin" --store source init >/dev/null
  # shellcheck disable=SC2046
  "$bin" --store source ingest --namespace team --embed later --json $(ls "$sessions"/*.jsonl.gz) >ingest.json
  if [ "${EMBED:-1}" = 1 ]; then nice "$bin" --store source embed --json >embed.json; fi
  touch source/done
fi
db=kdb_scope
"$KDB_PG_BIN/psql" -q "$KDB_PG_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
url=${KDB_PG_URL%/*}/$db
rm -f source/sync/state.json source/sync/manifest.jsonl
# Each store its own origin: a machine always pulls what its origin wrote.
set_config() { # STORE KEY VALUE: one line of the store's [sync]
  sed -i "s|^$2 = .*|$2 = $3|" "$1/config.toml"
}
set_config source origin '"team@source"'
"$bin" --store source sync --url "$url" --share '*' --no-pull --json >push.json
"$KDB_PG_BIN/psql" -tA -F $'\t' "$url" \
  -c "SELECT coalesce(project, ''), count(*) FROM kdb_records WHERE NOT deleted GROUP BY 1 ORDER BY 2 DESC" >projects.tsv
pulls=$(printf '"project:%s", ' $scope)
pulls="[${pulls%, }]"
pull() { # NAME PULL: a pull into an empty store, its report in NAME-ROUND.json
  rm -rf "$1"
  "$bin" --store "$1" init >/dev/null
  set_config "$1" origin "\"$1@reader\""
  set_config "$1" pull "$2"
  "$bin" --store "$1" sync --url "$url" --no-push --json >"$1-$round.json"
  du -sk "$1" | cut -f1 >"$1-$round.kib"
}
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then
    pull whole '["*"]'; pull scoped "$pulls"
  else
    pull scoped "$pulls"; pull whole '["*"]'
  fi
done
"$bin" --store scoped sync --status >scoped-status.txt
python3 - "$rounds" "$scope" <<'PY'
import json, sys
rounds, scope = int(sys.argv[1]), sys.argv[2].split()
projects = [l.rstrip("\n").split("\t") for l in open("projects.tsv") if l.strip()]
def runs(name):
    out = []
    for r in range(1, rounds + 1):
        j = json.load(open(f"{name}-{r}.json"))
        out.append({k: j[k] for k in ("pulled", "pulled_with_vector", "pull_bytes", "pull_seconds", "seconds", "left_remote")}
                   | {"store_kib": int(open(f"{name}-{r}.kib").read())})
    return out
whole, scoped = runs("whole"), runs("scoped")
mean = lambda rs, k: sum(r[k] for r in rs) / len(rs)
print(json.dumps({
    "projects_on_server": len(projects),
    "records_on_server": sum(int(n) for _, n in projects),
    "scope": {p: next((int(n) for q, n in projects if q == p), 0) for p in scope},
    "whole": whole, "scoped": scoped,
    "fraction_of_records_pulled": round(mean(scoped, "pulled") / mean(whole, "pulled"), 4),
    "fraction_of_bytes_pulled": round(mean(scoped, "pull_bytes") / mean(whole, "pull_bytes"), 4),
    "pull_seconds_whole": round(mean(whole, "pull_seconds"), 2),
    "pull_seconds_scoped": round(mean(scoped, "pull_seconds"), 2),
    "time_saved": round(1 - mean(scoped, "pull_seconds") / mean(whole, "pull_seconds"), 4),
    "push": {k: json.load(open("push.json"))[k] for k in ("pushed", "push_bytes", "push_seconds")},
}, indent=1))
PY
