#!/usr/bin/env python3
"""Wall time and behaviour of `knowledge-db hook post-tool-use` on real Claude
Code transcripts: the replay benchmark of the compression loop.

For each of the N largest transcripts (by decompressed size) of a folder of
.jsonl.gz files, decompressed to a temporary folder (Claude Code's
transcript_path is plain JSONL), on a fresh store:
  1. cold: the file without its last --tail lines, no saved state (reads it whole);
  2. incremental: the last lines appended, same state (reads only them);
  3. replay: a second fresh store and a copy of the file written line by line;
     after each line with a tool call the installed matcher fires on (Bash,
     Write, Edit, TaskCreate, TaskUpdate, TodoWrite) the hook runs, as Claude
     Code would run it, with the default gates (every 10 assistant turns, 70%
     usage, reminders again after 20 turns), counting the cold tasks and
     segments found, the items queued and the reminders shown over the
     session's life (nobody compresses, so a pending batch keeps being
     announced every 20 turns); then one `--force` call at the end (what is
     cold there, ignoring the gates).
Wall time is process start to exit, measured around subprocess.run; the replay
reports p50/p95/max over every call of every session. The reminders' sizes are
counted with the o200k tokenizer by `knowledge-db tokens` (generic format, each
reminder one message, its 4-token message overhead taken off).

Usage: scripts/hook-wall-time.py [--bin target/release/knowledge-db]
          [--dir ../shared/eval/transcripts/claude-code-entire-cli] [-n 20] [--json out.json]
"""
import argparse, gzip, json, os, statistics, subprocess, tempfile, time


def call(binary, store, session, path, extra=()):
    payload = json.dumps({"session_id": session, "transcript_path": path, "cwd": "/tmp",
                          "hook_event_name": "PostToolUse", "tool_name": "Edit"})
    started = time.perf_counter()
    out = subprocess.run([binary, "--store", store, "hook", "post-tool-use", "--json", *extra],
                         input=payload.encode(), capture_output=True)
    elapsed = time.perf_counter() - started
    if out.returncode != 0 or out.stderr:
        raise SystemExit("hook failed: %s" % out.stderr.decode())
    return elapsed, json.loads(out.stdout)


MATCHER = {"Bash", "Write", "Edit", "TaskCreate", "TaskUpdate", "TodoWrite"}


def tool_calls(line):
    """The tools a main-chain assistant line calls."""
    if b'"tool_use"' not in line:
        return []
    try:
        entry = json.loads(line)
    except ValueError:
        return []
    if entry.get("type") != "assistant" or entry.get("isSidechain"):
        return []
    content = (entry.get("message") or {}).get("content") or []
    return [b.get("name") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def fires(line):
    """Whether the line calls a tool the hook's matcher fires on."""
    return any(name in MATCHER for name in tool_calls(line))


def session_id(lines):
    """The session id Claude Code gives the hooks: the transcript's own `sessionId`."""
    for line in lines[:200]:
        try:
            sid = json.loads(line).get("sessionId")
        except (ValueError, AttributeError):
            continue
        if sid:
            return sid
    return None


def percentile(values, p):
    values = sorted(values)
    if not values:
        return 0.0
    k = (len(values) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def o200k_tokens(binary, texts):
    """o200k tokens of each text, by `knowledge-db tokens` (without the message overhead)."""
    if not texts:
        return []
    lines = "".join(json.dumps({"role": "user", "content": t}) + "\n" for t in texts)
    out = subprocess.run([binary, "tokens", "-", "--format", "generic", "--json"],
                         input=lines.encode(), capture_output=True, check=True)
    report = json.loads(out.stdout)
    return [m["o200k"] - 4 for m in report["messages"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/knowledge-db")
    ap.add_argument("--dir", default="../shared/eval/transcripts/claude-code-entire-cli")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--tail", type=int, default=40)
    ap.add_argument("--json", help="write the per-session rows and the totals here")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    files = [os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".jsonl.gz")]
    sized = sorted(((len(gzip.open(f).read()), f) for f in files), reverse=True)[: args.n]
    rows = []
    all_times, reminder_texts = [], []
    tool_total = tool_matched = 0
    with tempfile.TemporaryDirectory() as tmp:
        for n, (size, gz) in enumerate(sized):
            lines = gzip.open(gz).read().splitlines(keepends=True)
            session = session_id(lines) or os.path.basename(gz)[: -len(".jsonl.gz")]
            path = os.path.join(tmp, session + ".jsonl")
            # Short store folders, as an installed store has (the reminder names it).
            store = os.path.join(tmp, "s%d" % n)
            subprocess.run([binary, "--store", store, "init"], check=True, capture_output=True)
            with open(path, "wb") as f:
                f.writelines(lines[: -args.tail])
            cold_s, cold = call(binary, store, session, path)
            with open(path, "ab") as f:
                f.writelines(lines[-args.tail:])
            inc_s, inc = call(binary, store, session, path)
            # Replay the session's life on a fresh store.
            replay_store = os.path.join(tmp, "r%d" % n)
            subprocess.run([binary, "--store", replay_store, "init"], check=True, capture_output=True)
            replay_path = os.path.join(tmp, session + ".replay.jsonl")
            open(replay_path, "wb").close()
            tasks = segments = calls = checks = queued = reminders = batches = 0
            times = []
            written = 0
            for i, line in enumerate(lines):
                names = tool_calls(line)
                tool_total += len(names)
                tool_matched += sum(1 for n in names if n in MATCHER)
                if not any(n in MATCHER for n in names):
                    continue
                with open(replay_path, "ab") as f:
                    f.writelines(lines[written:i + 1])
                written = i + 1
                t, r = call(binary, replay_store, session, replay_path)
                times.append(t)
                calls += 1
                checks += r["checked"]
                tasks += r["cold_tasks"]
                segments += r["cold_segments"]
                queued += r["queued"]
                if r["reminded"]:
                    reminders += 1
                    batches += r["queued"] > 0
                    reminder_texts.append(r["message"])
            all_times.extend(times)
            with open(replay_path, "ab") as f:
                f.writelines(lines[written:])
            _, forced = call(binary, replay_store, session, replay_path, ["--force"])
            rows.append({
                "session": session, "mib": size / 2**20, "lines": len(lines),
                "turns": inc["assistant_turns"], "cold_ms": cold_s * 1e3, "inc_ms": inc_s * 1e3,
                "inc_bytes": inc["read"]["bytes_read"], "usage": inc["usage"]["fraction"],
                "calls": calls, "checks": checks, "replay_max_ms": max(times, default=0) * 1e3,
                "replay_median_ms": statistics.median(times) * 1e3 if times else 0,
                "tasks": tasks, "segments": segments, "queued": queued, "reminders": reminders,
                "batches": batches,
                "pending_at_end": forced["pending"],
                "forced_tasks": forced["cold_tasks"], "forced_segments": forced["cold_segments"],
            })
            r = rows[-1]
            print("%-52s %5.2f MiB %5d turns  cold %6.1f ms  incr %5.1f ms (%6d B)  usage %3.0f%%  "
                  "replay %4d calls %2d checks median %5.1f max %6.1f ms: %2d tasks %2d segments, %2d queued, "
                  "%2d reminders; forced +%d/+%d" % (
                      session, r["mib"], r["turns"], r["cold_ms"], r["inc_ms"], r["inc_bytes"],
                      r["usage"] * 100, r["calls"], r["checks"], r["replay_median_ms"], r["replay_max_ms"], r["tasks"],
                      r["segments"], r["queued"], r["reminders"], r["forced_tasks"], r["forced_segments"]), flush=True)
    for key in ["cold_ms", "inc_ms", "replay_median_ms", "replay_max_ms"]:
        values = sorted(r[key] for r in rows)
        print("%-14s median %6.1f ms  max %6.1f ms" % (key, statistics.median(values), values[-1]))
    ms = [t * 1e3 for t in all_times]
    tokens = o200k_tokens(binary, reminder_texts)
    totals = {
        "sessions": len(rows), "calls": len(ms),
        "tool_calls": tool_total, "matched_share": tool_matched / max(tool_total, 1),
        "p50_ms": percentile(ms, 50), "p95_ms": percentile(ms, 95), "max_ms": max(ms, default=0),
        "checks": sum(r["checks"] for r in rows),
        "cold_tasks": sum(r["tasks"] for r in rows), "cold_segments": sum(r["segments"] for r in rows),
        "queued": sum(r["queued"] for r in rows), "reminders": sum(r["reminders"] for r in rows),
        "batches": sum(r["batches"] for r in rows),
        "sessions_reminded": sum(1 for r in rows if r["reminders"]),
        "reminder_tokens_median": statistics.median(tokens) if tokens else 0,
        "reminder_tokens_max": max(tokens, default=0),
        "forced_tasks": sum(r["forced_tasks"] for r in rows),
        "forced_segments": sum(r["forced_segments"] for r in rows),
    }
    print("replay: %d calls (the matcher fires on %.0f%% of %d tool calls): p50 %.1f ms, p95 %.1f ms, max %.1f ms"
          % (totals["calls"], totals["matched_share"] * 100, tool_total, totals["p50_ms"], totals["p95_ms"],
             totals["max_ms"]))
    print("found %d cold tasks and %d cold segments in %d checks; %d items queued in %d batches; %d reminders "
          "(%d announcing a new batch, the rest a batch still pending 20 turns on) in %d sessions, "
          "o200k tokens median %d, max %d; forced at the end: +%d tasks, +%d segments"
          % (totals["cold_tasks"], totals["cold_segments"], totals["checks"], totals["queued"], totals["batches"],
             totals["reminders"], totals["batches"], totals["sessions_reminded"], totals["reminder_tokens_median"],
             totals["reminder_tokens_max"], totals["forced_tasks"], totals["forced_segments"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"totals": totals, "sessions": rows, "reminders": reminder_texts}, f, indent=1)


if __name__ == "__main__":
    main()
