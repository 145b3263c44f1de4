#!/usr/bin/env python3
"""The background upkeep catching up on a whole history, and the hooks meanwhile.

1. Ingests every transcript of --dir into a fresh store with `--embed later`
   and the upkeep off (BM25 only, the state a user's history is in right after
   ingest), and times it.
2. Replays hook calls (`hook post-tool-use` after each matched tool call of
   the --hooks largest sessions, a second store so the hooks' summaries do
   not add to the history) with no worker running: the baseline.
3. Starts the worker as a write would (`upkeep --background`: nice 19, idle
   I/O) and, while it runs, replays the same hook calls again, timing each
   call from process start to exit; samples the worker's progress.
4. Reports when every record first had a vector (a large backlog is drafted
   by the int8 model first), the worker's wall time (drafts replaced too), CPU time and CPU share (of one core: 200%
   is both cores), its peak RSS (and, sampled each second, its peak
   anonymous and file-backed parts), vectors per second, and hook latency
   p50/p95/max before and during.

Usage: benches/upkeep-catchup.py [--bin target/release/knowledge-db]
         [--dir ../shared/eval/transcripts/claude-code-entire-cli] [--hooks 3]
         [--limit N (transcripts, for a quick run)] [--json]
"""
import argparse, gzip, json, os, resource, statistics, subprocess, sys, tempfile, time, threading


def run(binary, store, *args, env=None, stdin=None):
    out = subprocess.run([binary, "--store", store, *args], input=stdin,
                         capture_output=True, env=env)
    if out.returncode != 0:
        raise SystemExit("%s failed: %s" % (" ".join(args), out.stderr.decode()))
    return out.stdout


MATCHER = {"Bash", "Write", "Edit", "TaskCreate", "TaskUpdate", "TodoWrite"}


def fires(line):
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


def replay_hooks(binary, store, sessions, workdir, env, stop=None, limit=None):
    """Replays the sessions through `hook post-tool-use`; returns each call's seconds."""
    times = []
    for n, lines in enumerate(sessions):
        path = os.path.join(workdir, "replay-%d-%d.jsonl" % (n, time.monotonic_ns()))
        session = "upkeep-bench-%d-%d" % (n, time.monotonic_ns())
        with open(path, "wb") as out:
            for line in lines:
                out.write(line)
                out.flush()
                if not fires(line):
                    continue
                payload = json.dumps({"session_id": session, "transcript_path": path,
                                      "cwd": workdir, "hook_event_name": "PostToolUse",
                                      "tool_name": "Edit"}).encode()
                started = time.perf_counter()
                result = subprocess.run([binary, "--store", store, "hook", "post-tool-use"],
                                        input=payload, capture_output=True, env=env)
                times.append(time.perf_counter() - started)
                if result.returncode != 0:
                    raise SystemExit("hook failed: %s" % result.stderr.decode())
                if (stop and stop.is_set()) or (limit and len(times) >= limit):
                    return times
    return times


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/knowledge-db")
    ap.add_argument("--dir", default="../shared/eval/transcripts/claude-code-entire-cli")
    ap.add_argument("--hooks", type=int, default=3, help="largest sessions replayed through the hook")
    ap.add_argument("--limit", type=int, default=None, help="only the first N transcripts")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    files = sorted(os.path.join(args.dir, f) for f in os.listdir(args.dir)
                   if f.endswith(".jsonl.gz") or f.endswith(".jsonl"))
    if args.limit:
        files = files[:args.limit]
    work = tempfile.mkdtemp(prefix="upkeep-bench-")
    store, hooks_store = os.path.join(work, "store"), os.path.join(work, "hooks-store")
    off = dict(os.environ, KNOWLEDGE_DB_UPKEEP="off")
    run(binary, store, "init")
    run(binary, hooks_store, "init")

    started = time.perf_counter()
    ingest = json.loads(run(binary, store, "ingest", "--embed", "later", "--json", *files, env=off))
    ingest_seconds = time.perf_counter() - started
    stats = json.loads(run(binary, store, "stats", "--json"))
    waiting = stats["vectors"]["without_vector"]

    largest = sorted(files, key=os.path.getsize, reverse=True)[:args.hooks]
    sessions = []
    for f in largest:
        opener = gzip.open if f.endswith(".gz") else open
        with opener(f, "rb") as fh:
            sessions.append([l if l.endswith(b"\n") else l + b"\n" for l in fh])
    before = replay_hooks(binary, hooks_store, sessions, work, off)

    # The worker, as a write starts it (same command, same priorities).
    started = time.perf_counter()
    worker = subprocess.Popen([binary, "--store", store, "upkeep", "--background"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = []
    memory = {"RssAnon": 0, "RssFile": 0}
    stop = threading.Event()

    def sample_memory():
        # Peak anonymous memory (the process's own) apart from file pages it has
        # mapped (the index's files, the model): the kernel can drop the latter.
        try:
            with open("/proc/%d/status" % worker.pid) as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in memory:
                        memory[key] = max(memory[key], int(value.split()[0]))
        except (OSError, ValueError):
            pass

    covered = {}

    def read_status():
        try:
            with open(os.path.join(store, "upkeep", "status.json")) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def note_coverage(s):
        # Every record has a vector (drafts included) once the worker moves on
        # to making drafts again with the full model.
        if s and s.get("step") == "re-embedding" and "seconds" not in covered:
            covered["seconds"] = round(time.perf_counter() - started, 1)

    def sample():
        while not stop.is_set():
            sample_memory()
            s = read_status()
            note_coverage(s)
            if s:
                progress.append((round(time.perf_counter() - started, 1), s.get("embedded", 0),
                                 s.get("vectors_outdated", 0)))
            for _ in range(5):
                if stop.wait(1):
                    break
                sample_memory()
                note_coverage(read_status())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    during = []
    hooks_thread = threading.Thread(
        target=lambda: during.extend(replay_hooks(binary, hooks_store, sessions, work, off, stop)),
        daemon=True)
    hooks_thread.start()
    _, status, usage = os.wait4(worker.pid, 0)
    wall = time.perf_counter() - started
    stop.set()
    hooks_thread.join()
    cpu = usage.ru_utime + usage.ru_stime
    after = json.loads(run(binary, store, "stats", "--json"))
    report = {
        "transcripts": len(files),
        "records": stats["records"],
        "ingest_seconds": round(ingest_seconds, 1),
        "records_waiting_for_vectors": waiting,
        "worker_exit": status,
        "worker_wall_seconds": round(wall, 1),
        "worker_cpu_seconds": round(cpu, 1),
        "worker_cpu_share_percent": round(100 * cpu / wall, 1),
        "worker_peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "worker_peak_anon_mb": round(memory["RssAnon"] / 1024, 1),
        "worker_peak_file_mb": round(memory["RssFile"] / 1024, 1),
        "vectors_per_second": round(waiting / wall, 1),
        # Every record searchable by meaning (drafts by the int8 model first
        # when the backlog is large); then the full model replaces the drafts.
        "every_record_vectored_seconds": covered.get("seconds", round(wall, 1)),
        "drafted": (read_status() or {}).get("last_run", {}).get("drafted", 0),
        "left_without_vector": after["vectors"]["without_vector"],
        "left_as_drafts": after["vectors"].get("drafts", 0),
        "hook_calls_before": len(before),
        "hook_before_ms": {"p50": round(1000 * pct(before, .5), 1), "p95": round(1000 * pct(before, .95), 1),
                           "max": round(1000 * max(before), 1)},
        "hook_calls_during": len(during),
        "hook_during_ms": {"p50": round(1000 * pct(during, .5), 1), "p95": round(1000 * pct(during, .95), 1),
                           "max": round(1000 * max(during), 1) if during else None},
        "progress": progress,
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
