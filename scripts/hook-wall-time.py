#!/usr/bin/env python3
"""Wall time of `knowledge-db hook post-tool-use` on real Claude Code transcripts.

For each of the N largest transcripts (by decompressed size) of a folder of
.jsonl.gz files, decompressed to a temporary folder (Claude Code's
transcript_path is plain JSONL), on a fresh store:
  1. cold: the file without its last --tail lines, no saved state (reads it whole);
  2. incremental: the last lines appended, same state (reads only them);
  3. replay: a second fresh store and a copy of the file written line by line;
     after each line with a tool call the installed matcher fires on (Write,
     Edit, TaskCreate, TaskUpdate) the hook runs, as Claude Code would run it,
     with the default gates (every 10 assistant turns, 70% usage), counting the
     cold tasks and segments found over the session's life; then one `--force`
     call at the end (what is cold there, ignoring the gates).
Wall time is process start to exit, measured around subprocess.run.

Usage: scripts/hook-wall-time.py [--bin target/release/knowledge-db]
          [--dir ../shared/eval/transcripts/claude-code-entire-cli] [-n 20]
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


MATCHER = {"Write", "Edit", "TaskCreate", "TaskUpdate"}


def fires(line):
    """Whether the line is a main-chain assistant line calling a tool the hook matches."""
    if b'"tool_use"' not in line:
        return False
    try:
        entry = json.loads(line)
    except ValueError:
        return False
    if entry.get("type") != "assistant" or entry.get("isSidechain"):
        return False
    content = (entry.get("message") or {}).get("content") or []
    return any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") in MATCHER
               for b in content)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/knowledge-db")
    ap.add_argument("--dir", default="../shared/eval/transcripts/claude-code-entire-cli")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--tail", type=int, default=40)
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    files = [os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".jsonl.gz")]
    sized = sorted(((len(gzip.open(f).read()), f) for f in files), reverse=True)[: args.n]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size, gz in sized:
            lines = gzip.open(gz).read().splitlines(keepends=True)
            session = os.path.basename(gz)[: -len(".jsonl.gz")]
            path = os.path.join(tmp, session + ".jsonl")
            store = os.path.join(tmp, session + ".store")
            subprocess.run([binary, "--store", store, "init"], check=True, capture_output=True)
            with open(path, "wb") as f:
                f.writelines(lines[: -args.tail])
            cold_s, cold = call(binary, store, session, path)
            with open(path, "ab") as f:
                f.writelines(lines[-args.tail:])
            inc_s, inc = call(binary, store, session, path)
            # Replay the session's life on a fresh store.
            replay_store = os.path.join(tmp, session + ".replay")
            subprocess.run([binary, "--store", replay_store, "init"], check=True, capture_output=True)
            replay_path = os.path.join(tmp, session + ".replay.jsonl")
            open(replay_path, "wb").close()
            tasks = segments = calls = checks = 0
            times = []
            written = 0
            for i, line in enumerate(lines):
                if not fires(line):
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
            with open(replay_path, "ab") as f:
                f.writelines(lines[written:])
            _, forced = call(binary, replay_store, session, replay_path, ["--force"])
            rows.append({
                "session": session, "mib": size / 2**20, "lines": len(lines),
                "turns": inc["assistant_turns"], "cold_ms": cold_s * 1e3, "inc_ms": inc_s * 1e3,
                "inc_bytes": inc["read"]["bytes_read"], "usage": inc["usage"]["fraction"],
                "calls": calls, "checks": checks, "replay_max_ms": max(times, default=0) * 1e3,
                "replay_median_ms": statistics.median(times) * 1e3 if times else 0,
                "tasks": tasks, "segments": segments,
                "forced_tasks": forced["cold_tasks"], "forced_segments": forced["cold_segments"],
            })
            r = rows[-1]
            print("%-52s %5.2f MiB %5d turns  cold %6.1f ms  incr %5.1f ms (%6d B)  usage %3.0f%%  "
                  "replay %3d calls %2d checks median %5.1f max %5.1f ms: %2d tasks %2d segments; forced +%d/+%d" % (
                      session, r["mib"], r["turns"], r["cold_ms"], r["inc_ms"], r["inc_bytes"],
                      r["usage"] * 100, r["calls"], r["checks"], r["replay_median_ms"], r["replay_max_ms"], r["tasks"],
                      r["segments"], r["forced_tasks"], r["forced_segments"]), flush=True)
    for key in ["cold_ms", "inc_ms", "replay_median_ms", "replay_max_ms"]:
        values = sorted(r[key] for r in rows)
        print("%-14s median %6.1f ms  max %6.1f ms" % (key, statistics.median(values), values[-1]))
    print("cold tasks found over the replays: %d, cold segments: %d; forced at the end: +%d tasks, +%d segments"
          % (sum(r["tasks"] for r in rows), sum(r["segments"] for r in rows),
             sum(r["forced_tasks"] for r in rows), sum(r["forced_segments"] for r in rows)))
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
