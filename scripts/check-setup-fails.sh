#!/usr/bin/env bash
# CI cannot pass by skipping (issue 51): runs scripts/setup-clients.sh under
# CI=true with the npm install of Claude Code made to fail (a version that does
# not exist, KDB_CLAUDE_CODE_VERSION), and checks that it exits non-zero, not 3
# (the "registries unreachable" skip), naming the package on stderr.
#
# The other clients are taken from the shared cache by symbolic links (their
# versions are checked and nothing is installed), so the failed install goes
# into a temporary folder and never touches the cached Claude Code.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${KDB_CLIENTS_DIR:-$HOME/.cache/knowledge-db/clients}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for client in node24 openclaw inspector mcp-venv playwright; do
  [ -e "$cache/$client" ] && ln -s "$cache/$client" "$tmp/$client"
done
bogus=0.0.0-no-such-version
status=0
CI=true KDB_CLIENTS_DIR=$tmp KDB_CLAUDE_CODE_VERSION=$bogus \
  scripts/setup-clients.sh >"$tmp/stdout" 2>"$tmp/stderr" || status=$?
fail() {
  echo "check-setup-fails: $1; its stderr:" >&2
  sed 's/^/  /' "$tmp/stderr" >&2
  exit 1
}
[ "$status" -ne 0 ] || fail "setup-clients.sh passed with Claude Code $bogus, which does not exist"
[ "$status" -ne 3 ] || fail "setup-clients.sh exited 3 (skip) under CI=true"
grep -q "@anthropic-ai/claude-code@$bogus" "$tmp/stderr" || fail "setup-clients.sh did not name the package"
echo "check-setup-fails: a failed install of @anthropic-ai/claude-code@$bogus exits $status under CI=true, naming the package" >&2
