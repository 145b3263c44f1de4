#!/usr/bin/env bash
# Hostile input, measured: each case of docs/reliability.md run against one or
# more builds, with its exit code, wall time and peak RSS (GNU time), and the
# first line it printed on stderr. Hostile files are made under a temporary
# folder (sparse where they are large) and removed at the end.
#
#   scripts/measure-hostile.sh [BINARY...]      (default: target/release/knowledge-db)
#
# Every case runs under `timeout 20`: a build that would block or grow forever
# shows as killed (exit 124) with the RSS it had reached.
set -u
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(target/release/knowledge-db)
work=$(mktemp -d /tmp/hostile-measure.XXXXXX)
trap 'rm -rf "$work"' EXIT
export KNOWLEDGE_DB_UPKEEP=off

# The hostile files.
mkdir -p "$work/loop/a" && ln -s .. "$work/loop/a/up" && ln -s "$work/loop" "$work/loop/a/again"
mkfifo "$work/fifo.jsonl"
ln -s /dev/zero "$work/zero.jsonl"
head -c 2G /dev/zero | gzip -1 > "$work/bomb.jsonl.gz"
printf '%s\n' '{"type":"user","sessionId":"sp","uuid":"u1","message":{"role":"user","content":"hello"}}' > "$work/sparse.jsonl"
truncate -s 2G "$work/sparse.jsonl"
printf '{"type":"user","sessionId":"u8","uuid":"u1","message":{"role":"user","content":"caf\xe9 latte order"}}\n' > "$work/badutf8.jsonl"
mkdir -p "$work/md" && echo "# small note about kiwis" > "$work/md/small.md" && truncate -s 1G "$work/md/huge.md"

row() { # name, binary, command...
  local name=$1 bin=$2; shift 2
  local err="$work/err" t="$work/time"
  /usr/bin/time -f "%e %M" -o "$t" timeout 20 "$@" >/dev/null 2>"$err" </dev/null
  local code=$?
  local first
  first=$(grep -v '^Command terminated\|^\s*$' "$err" | head -1 | cut -c1-150)
  printf '| %s | %s | %s | %s s | %s MB | %s |\n' "$name" "$(basename "$bin")" "$code" \
    "$(cut -d' ' -f1 "$t" | tail -1)" "$(( $(cut -d' ' -f2 "$t" | tail -1) / 1024 ))" "${first//|/\\|}"
}

echo "| case | build | exit | time | peak RSS | says |"
echo "|---|---|---|---|---|---|"
for bin in "${bins[@]}"; do
  s="$work/store-$(basename "$bin")"
  "$bin" --store "$s" init >/dev/null 2>&1
  row "MCP: a 400 MiB line without a newline" "$bin" sh -c "head -c 400M /dev/zero | tr '\\0' a | '$bin' --store '$s' mcp"
  row "add: a folder with two symlink loops" "$bin" "$bin" --store "$s" add "$work/loop"
  row "ingest: a FIFO" "$bin" "$bin" --store "$s" ingest "$work/fifo.jsonl"
  row "ingest: a symlink to /dev/zero" "$bin" "$bin" --store "$s" ingest "$work/zero.jsonl"
  row "ingest: a gzip bomb (2 MB -> 2 GiB)" "$bin" "$bin" --store "$s" ingest "$work/bomb.jsonl.gz"
  row "hook post-tool-use: a 2 GB sparse transcript" "$bin" sh -c "echo '{\"session_id\":\"sp\",\"transcript_path\":\"$work/sparse.jsonl\",\"hook_event_name\":\"PostToolUse\",\"tool_name\":\"Bash\"}' | '$bin' --store '$s' hook post-tool-use"
  row "search -k 18446744073709551615" "$bin" "$bin" --store "$s" search kiwis -k 18446744073709551615
  row "search -k 100000000" "$bin" "$bin" --store "$s" search kiwis -k 100000000
  row "ingest: one invalid UTF-8 byte in a message" "$bin" "$bin" --store "$s" ingest "$work/badutf8.jsonl"
  row "qmd update: a 1 GB markdown file beside a small one" "$bin" sh -c "'$bin' --store '$s' qmd collection add '$work/md' --name notes >/dev/null 2>&1; '$bin' --store '$s' qmd update"
  row "  then: qmd search kiwis finds the small file" "$bin" sh -c "'$bin' --store '$s' qmd search kiwis --json | grep -q small.md || { echo 'the small file was not indexed' >&2; exit 1; }"
done
