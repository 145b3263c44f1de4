#!/usr/bin/env python3
"""Prints a Claude Code session turn by turn: the reading aid behind
tests/fixtures/hook-summary-labels.json.

Turns count the assistant's API responses of the main chain from 1, as the hooks
do (one response split over several lines is one turn; sidechains are skipped).
Each turn shows the prompt that led into it, the assistant's text in full, its
tool calls (edits with their file, shell commands, task updates) and failed or
failure-looking tool results.

Usage: scripts/hook-label-aid.py SESSION [--from N] [--to M] [--tasks]
  SESSION: a transcript (.jsonl.gz) or the start of a file name in
           ../shared/eval/transcripts/claude-code-entire-cli
  --tasks: only prompts and task events (TaskCreate, TaskUpdate, TodoWrite)
"""
import argparse, gzip, json, os, re, sys
D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "eval", "transcripts", "claude-code-entire-cli")

def load(name):
    path = name if os.path.exists(name) else os.path.join(D, [f for f in os.listdir(D) if f.startswith(name)][0])
    turns = []  # list of dicts: n, prompt, items
    cur = {"n": 0, "items": []}
    last_rid = None
    pending_prompt = []
    for line in gzip.open(path).read().splitlines():
        try: e = json.loads(line)
        except ValueError: continue
        if e.get("isSidechain"): continue
        t = e.get("type")
        m = e.get("message") or {}
        c = m.get("content")
        if t == "system" and e.get("subtype") == "compact_boundary":
            pending_prompt.append("=== COMPACT BOUNDARY ===")
        if t == "user":
            if isinstance(c, str):
                if e.get("isCompactSummary"):
                    pending_prompt.append("[compact summary]")
                elif e.get("isMeta"):
                    pass
                else:
                    pending_prompt.append("PROMPT: " + c.strip()[:600])
            elif isinstance(c, list):
                for b in c:
                    if not isinstance(b, dict): continue
                    if b.get("type") == "text" and not e.get("isMeta"):
                        pending_prompt.append("PROMPT: " + b.get("text", "").strip()[:600])
                    if b.get("type") == "tool_result":
                        content = b.get("content")
                        if isinstance(content, list):
                            content = "\n".join(x.get("text", "") for x in content if isinstance(x, dict))
                        content = content or ""
                        if b.get("is_error"):
                            cur["items"].append("   ERR: " + content.strip()[:300].replace("\n", " | "))
                        elif re.search(r"FAIL|error|Error|panic|failed", content[:2000]):
                            lines = [l for l in content.splitlines() if re.search(r"FAIL|error|Error|panic|failed", l)]
                            cur["items"].append("   res~: " + " | ".join(lines[:3])[:300])
        if t == "assistant":
            rid = (m.get("id"), e.get("requestId"))
            if rid != last_rid:
                cur = {"n": len(turns) + 1, "items": list(pending_prompt)}
                pending_prompt = []
                turns.append(cur)
                last_rid = rid
            for b in c or []:
                if not isinstance(b, dict): continue
                if b.get("type") == "text":
                    cur["items"].append("TEXT: " + b.get("text", "").strip())
                elif b.get("type") == "tool_use":
                    i = b.get("input") or {}
                    name = b.get("name")
                    if name in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
                        desc = "EDIT %s %s" % (name, i.get("file_path") or i.get("notebook_path"))
                    elif name == "Bash":
                        desc = "BASH " + (i.get("command") or "")[:200].replace("\n", " ")
                    elif name in ("TaskCreate",):
                        desc = "TASKCREATE %s" % (i.get("subject"))
                    elif name == "TaskUpdate":
                        desc = "TASKUPDATE %s" % json.dumps({k: v for k, v in i.items() if k in ("taskId", "id", "task_id", "status", "subject")})
                    elif name == "TodoWrite":
                        desc = "TODOWRITE " + "; ".join("[%s] %s" % (x.get("status"), x.get("content")) for x in i.get("todos", []))
                    elif name in ("Read", "Grep", "Glob"):
                        desc = "%s %s" % (name.upper(), i.get("file_path") or i.get("pattern") or "")
                    else:
                        desc = "%s %s" % (name, json.dumps(i)[:150])
                    cur["items"].append("  > " + desc)
    return turns

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("session")
    ap.add_argument("--from", dest="a", type=int, default=1)
    ap.add_argument("--to", dest="b", type=int, default=10**9)
    ap.add_argument("--tasks", action="store_true", help="only task events and prompts")
    ap.add_argument("--width", type=int, default=700)
    args = ap.parse_args()
    turns = load(args.session)
    for t in turns:
        if not (args.a <= t["n"] <= args.b): continue
        items = t["items"]
        if args.tasks:
            items = [i for i in items if i.startswith(("PROMPT", "===", "  > TASK", "  > TODO"))]
            if not items: continue
        print("#%d" % t["n"])
        for i in items:
            print("   " + i[: args.width].replace("\n", "\n      "))
    print("total turns", len(turns), file=sys.stderr)

main()
