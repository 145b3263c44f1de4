#!/usr/bin/env bash
# The sync fault and load suite (tests/sync_faults.rs) at a size chosen by
# hand (docs/sync.md, "Faults and load"): STORES stores with RECORDS shared
# records each push and pull at once through a Postgres of the test's own,
# which is SIGKILLed and restarted PG_KILLS times (a third mid-push, a third
# mid-pull, the rest in mixed syncs), behind a loopback proxy that cuts
# connections at random, while sync processes are SIGKILLed at random.
#
#   scripts/measure-sync-faults.sh [STORES] [RECORDS] [PG_KILLS] [BATCH]
#                                  # default 20 10000 50 1000
#
# The syncs run the release binary (cargo build --release first; KDB_FAULT_BIN
# names another), the test itself and its setup and checks the debug build.
# Prints the test's JSON summary: records lost, duplicates, wrong text or
# vector, unshared records that leaked, seconds to converge, the faults.
set -euo pipefail
cd "$(dirname "$0")/.."
export KDB_FAULT_STORES=${1:-20} KDB_FAULT_RECORDS=${2:-10000} KDB_FAULT_PG_KILLS=${3:-50}
export KDB_FAULT_BATCH=${4:-1000} KDB_FAULT_SEED=${SEED:-5}
export KDB_FAULT_REPORT=${REPORT:-/tmp/kdb-sync-faults.json}
eval "$(scripts/pg-test-server.sh start)"
export KDB_FAULT_BIN=${KDB_FAULT_BIN:-$PWD/target/release/knowledge-db}
[ -x "$KDB_FAULT_BIN" ] || { echo "no $KDB_FAULT_BIN: cargo build --release first" >&2; exit 1; }
cargo test --test sync_faults -- --nocapture >&2
cat "$KDB_FAULT_REPORT"
