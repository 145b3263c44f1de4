#!/usr/bin/env bash
# Hostile input (issue 32), measured: each case of docs/reliability.md run
# against one or more builds under `timeout 60` and GNU `time -v`, printing a
# markdown table row per case: exit code, wall seconds, peak RSS ("Maximum
# resident set size") and what the build said (first line of stderr, or the
# MCP answer). The hostile files are made under a fresh folder (sparse where
# large; a FIFO, links to /dev/zero and to folders) and removed at the end.
#
#   scripts/measure-hostile.sh [BINARY...]   (default: target/release/knowledge-db)
#
# Environment: WORK (default /tmp/hostile-measure), LIMIT_SECS (60),
# CAP_KIB (address-space cap per run, default 6 GiB: a build that would grow
# without end is stopped there, shown as exit 134 "memory allocation ... failed",
# rather than taking a shared machine into the OOM killer).
set -u
bins=("$@")
[ ${#bins[@]} -eq 0 ] && bins=(target/release/knowledge-db)
work=${WORK:-/tmp/hostile-measure}
limit=${LIMIT_SECS:-60}
cap=${CAP_KIB:-6291456}
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
export KNOWLEDGE_DB_UPKEEP=off QMD_CONFIG_DIR="$work/qmd-config"
unset KNOWLEDGE_DB_HOME

# --- The hostile files ---------------------------------------------------
# Folders whose directory symlinks form two loops (a/b/up -> a, a/again -> a/b).
for kind in records transcripts; do
  mkdir -p "$work/$kind/a/b"
  ln -s "$work/$kind/a" "$work/$kind/a/b/up"
  ln -s "$work/$kind/a/b" "$work/$kind/a/again"
done
echo '{"id": "loop-note", "text": "a note in a looping folder"}' > "$work/records/a/b/notes.jsonl"
echo '{"role": "user", "content": "hello from a loop"}' > "$work/transcripts/a/b/t.jsonl"
mkfifo "$work/fifo.jsonl"
ln -s /dev/zero "$work/zero.jsonl"
# Gzip bomb: one gzip member of 1 GiB of zeros (about 1 MB), 18 times: ~18 MB
# that decompresses to 18 GiB.
head -c 1G /dev/zero | gzip -9 > "$work/member.gz"
for _ in $(seq 18); do cat "$work/member.gz"; done > "$work/bomb.jsonl.gz"
rm "$work/member.gz"
bomb_mb=$(( $(stat -c %s "$work/bomb.jsonl.gz") / 1000000 ))
# A 2 GB sparse transcript: one real message, then zeros.
printf '%s\n' '{"type":"user","sessionId":"sp","uuid":"u1","message":{"role":"user","content":"hello sparse"}}' > "$work/sparse.jsonl"
truncate -s 2G "$work/sparse.jsonl"
# One invalid UTF-8 byte (Latin-1 e-acute) inside a message.
printf '{"type":"user","sessionId":"u8","uuid":"u1","message":{"role":"user","content":"zeppelin caf\xe9 plan"}}\n' > "$work/badutf8.jsonl"
# A QMD collection: a 1 GB markdown file beside two small ones.
mkdir -p "$work/md" && truncate -s 1G "$work/md/huge.md"
echo "# Kiwis" > "$work/md/kiwis.md" && echo "the kiwi orchard note" >> "$work/md/kiwis.md"
echo "# Router" > "$work/md/router.md" && echo "the mesh router keeps its state" >> "$work/md/router.md"

# --- MCP streams ---------------------------------------------------------
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"measure","version":"0"}}}'
ping='{"jsonrpc":"2.0","id":3,"method":"ping"}'
mcp_400m() { # 400 MiB without a newline, then one, then a ping.
  echo "$init"; head -c 400M /dev/zero | tr '\0' a; echo; echo "$ping"
}
mcp_17m() { # a memory_add request line of 17 MiB, then a ping.
  echo "$init"
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_add","arguments":{"records":[{"id":"big","text":"'
  head -c 17M /dev/zero | tr '\0' x
  printf '"}]}}}\n'; echo "$ping"
}
mcp_100k() { # memory_add of 100,000 records in one call (about 5 MB), then a ping.
  echo "$init"
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_add","arguments":{"records":['
  seq 1 100000 | sed 's/.*/{"id":"r&","text":"note &"}/' | paste -sd, | tr -d '\n'
  printf ']}}}\n'; echo "$ping"
}
# What the server answered: each answer's error message or result, in order.
mcp_said() {
  jq -rc 'select(.id != 1) | "id \(.id): " + (if .error then "error \(.error.code) \(.error.message)"
    elif .result.isError then "tool error: \(.result.content[0].text)"
    elif .result.content then "result: \(.result.content[0].text[0:80])" else "result" end)' "$1" 2>/dev/null |
    paste -sd ';' | sed 's/;/; /g'
}

# --- Measuring -----------------------------------------------------------
# row NAME SAYS-FROM COMMAND...: stdin is the function's stdin. SAYS-FROM is
# "err" (first stderr line that is not a banner), "mcp" (the answers), or a
# command run after, whose output is the message.
row() {
  local name=$1 says=$2; shift 2
  local out="$work/out" err="$work/err" t="$work/time"
  ( ulimit -v "$cap"; exec /usr/bin/time -v -o "$t" timeout "$limit" "$@" ) >"$out" 2>"$err"
  local code=$? msg
  local secs rss
  secs=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; printf "%.2f", s}' "$t")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%d", $2/1024}' "$t")
  case $says in
    err) msg=$(grep -v '^Command \(terminated\|exited\)\|^\s*$' "$err" | head -1)
         [ -n "$msg" ] || msg="(stdout) $(grep -v '^\s*$' "$out" | head -1)" ;;
    mcp) msg=$(mcp_said "$out"); [ -n "$msg" ] || msg="(no answer) $(grep -v '^\s*$\|serving store' "$err" | head -1)" ;;
    *) msg=$(eval "$says" 2>&1 | paste -sd " ")
       [ "$code" = 0 ] || msg="$(grep -v '^Command \(terminated\|exited\)\|^\s*$' "$err" | head -1); $msg" ;;
  esac
  [ "$code" = 124 ] && msg="killed by timeout ${limit}s; ${msg}"
  msg=$(printf '%s' "$msg" | tr -d '\000-\037' | cut -c1-230)
  printf '| %s | %s | %s | %s s | %s MB | %s |\n' "$name" "$bin_name" "$code" "$secs" "$rss" "${msg//|/\\|}"
}
hook_input() { # EVENT TRANSCRIPT [SESSION]
  printf '{"session_id":"%s","transcript_path":"%s","cwd":"%s","hook_event_name":"%s","tool_name":"Bash"}\n' \
    "${3:-s-$1}" "$2" "$work" "$1"
}

echo "| case | build | exit | time | peak RSS | says |"
echo "|---|---|---|---|---|---|"
for bin in "${bins[@]}"; do
  bin_name=$(basename "$bin")
  s="$work/store-$bin_name"
  "$bin" --store "$s" init >/dev/null 2>&1
  k=(--store "$s")
  hooklog="grep -h 'session=s-sparse' '$s/hooks/hooks.log' 2>/dev/null | tail -1 | grep . || echo '(nothing in hooks.log)'"
  mcp_400m | row "MCP: a 400 MiB line, no newline until its end, then a ping" mcp "$bin" "${k[@]}" mcp
  mcp_17m | row "MCP: a 17 MiB memory_add line, then a ping" mcp "$bin" "${k[@]}" mcp
  mcp_100k | row "MCP: memory_add of 100,000 records in one call" mcp "$bin" "${k[@]}" mcp
  row "add: a folder with two symlink loops" err "$bin" "${k[@]}" add --embed later "$work/records/a" </dev/null
  row "ingest: a folder with two symlink loops" err "$bin" "${k[@]}" ingest --embed later "$work/transcripts/a" </dev/null
  row "ingest: a FIFO" err "$bin" "${k[@]}" ingest --embed later "$work/fifo.jsonl" </dev/null
  hook_input post-tool-use "$work/fifo.jsonl" | row "hook post-tool-use: a FIFO transcript" err "$bin" "${k[@]}" hook post-tool-use
  hook_input pre-compact "$work/fifo.jsonl" | row "hook pre-compact: a FIFO transcript" err "$bin" "${k[@]}" hook pre-compact
  row "ingest: a link to /dev/zero" err "$bin" "${k[@]}" ingest --embed later "$work/zero.jsonl" </dev/null
  hook_input post-tool-use /dev/zero | row "hook post-tool-use: /dev/zero as transcript" err "$bin" "${k[@]}" hook post-tool-use
  row "ingest: a gzip bomb ($bomb_mb MB -> 18 GiB of zeros)" err "$bin" "${k[@]}" ingest --embed later "$work/bomb.jsonl.gz" </dev/null
  hook_input post-tool-use "$work/sparse.jsonl" s-sparse | row "hook post-tool-use: a 2 GB sparse transcript, 1st call" "$hooklog" "$bin" "${k[@]}" hook post-tool-use
  hook_input post-tool-use "$work/sparse.jsonl" s-sparse | row "  the same, 2nd call" "$hooklog" "$bin" "${k[@]}" hook post-tool-use
  row "qmd update: a 1 GB markdown file beside 2 small ones" err sh -c "'$bin' --store '$s' qmd collection add '$work/md' --name notes >/dev/null 2>&1; exec '$bin' --store '$s' qmd update" </dev/null
  row "  then qmd search: are the small ones indexed?" \
    "for w in kiwi router; do '$bin' --store '$s' qmd search \$w --json 2>/dev/null | grep -q \"\$w\" && echo -n \"\$w found; \" || echo -n \"\$w NOT found; \"; done" \
    "$bin" "${k[@]}" qmd search kiwi </dev/null
  # The searches run on a store holding a record (empty, a search returns early).
  echo '{"id": "kiwi-note", "text": "kiwi orchard"}' | "$bin" "${k[@]}" add --embed later - >/dev/null 2>&1
  row "search -k 18446744073709551615" err "$bin" "${k[@]}" search kiwi -k 18446744073709551615 </dev/null
  row "search -k 100000000" err "$bin" "${k[@]}" search kiwi -k 100000000 </dev/null
  row "ingest: one invalid UTF-8 byte in a message" \
    "grep -o '[0-9]* messages\\?,\\|[0-9]* not JSON\\|[0-9]* bytes\\? of invalid UTF-8 replaced[^)]*)' '$work/out' | paste -sd ' '; \
     '$bin' --store '$s' search zeppelin -k 1 --json 2>/dev/null | grep -q '"id": "u8:u1"' && echo 'kept: search finds it' || echo 'lost: search does not find it'" \
    "$bin" "${k[@]}" ingest --embed later "$work/badutf8.jsonl" </dev/null
done
