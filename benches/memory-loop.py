#!/usr/bin/env python3
"""The memory loop as an installed user gets it: real Claude Code sessions
replayed through the hooks `hook install` writes, event by event, then
questions about that work asked as the first prompt of a new session, and
off-topic prompts that must get nothing.

1. A throw-away HOME and project; `knowledge-db --store S hook install --dir P`
   (with `--no-history` when the binary knows it). The hook commands are read
   back from P/.claude/settings.local.json and run through `sh -c` with the event's
   JSON on stdin, as Claude Code runs them.
2. Each session of --list (default: the dev sessions of
   dev-sets/agent-questions/transcripts.txt) is written line by line into
   HOME/.claude/projects/<cwd>/<session>.jsonl while its events fire:
   SessionStart(startup) first; Stop before each new prompt (the previous turn
   ended) and at the end; PostToolUse after the result of each tool call the
   installed matcher fires on; PreCompact before a compaction boundary and
   SessionStart(compact) after its summary; the subagent transcripts
   (<session>/subagents/) are written, then SessionEnd. Only events the
   install registered fire (an old install has no Stop, so it is not called).
3. Capture: the sessions with message records in the store, against the
   messages a plain `ingest --dry-run` reads from the same files.
4. `knowledge-db upkeep` (what the background worker does) gives the vectors.
5. Recall: each question of --questions is asked through the installed
   UserPromptSubmit hook in a new session whose cwd is the answer session's;
   hit = the answer session is named in the injected context. Each off-topic
   prompt of --offtopic the same way; it must get nothing. The hook's wall
   time (process start to exit) and the injected size are recorded. For the
   threshold sweep, the same prompts run once more with `--json` and
   `[recall] min_score = 0` (top --max-memories by score), so the hit rates at
   every threshold come from one pass.
6. Search (the before/after table): the answer session in `search -k 5`.

Usage: benches/memory-loop.py [--bin target/release/knowledge-db] [--dir DIR]
          [--list FILE] [--questions DIR] [--offtopic FILE] [--limit N]
          [--work DIR] [--json OUT] [--skip-recall]
"""
import argparse, gzip, json, os, shutil, statistics, subprocess, sys, tempfile, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MATCHER = {"Bash", "Write", "Edit", "TaskCreate", "TaskUpdate", "TodoWrite"}


def pct(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read().splitlines(keepends=True)


class Install:
    def __init__(self, binary, work):
        self.binary = os.path.abspath(binary)
        self.home = os.path.join(work, "home")
        self.project = os.path.join(work, "project")
        self.store = os.path.join(work, "store")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.project, exist_ok=True)
        self.env = dict(os.environ, HOME=self.home)
        self.env.pop("KNOWLEDGE_DB_HOME", None)
        self.env.pop("CLAUDE_CONFIG_DIR", None)
        # The model stays where the real user installed it.
        cache = os.environ.get("KNOWLEDGE_DB_MODELS") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "knowledge-db")
        self.env["KNOWLEDGE_DB_MODELS"] = cache
        help_text = self.run(["hook", "install", "--help"]).stdout
        args = ["hook", "install", "--dir", self.project]
        if "--no-history" in help_text:
            args.append("--no-history")
        out = self.run(args)
        if out.returncode != 0:
            sys.exit("install failed: " + out.stderr)
        with open(os.path.join(self.project, ".claude", "settings.local.json")) as f:
            settings = json.load(f)
        self.hooks = {}
        for event, groups in settings["hooks"].items():
            for group in groups:
                for hook in group["hooks"]:
                    self.hooks.setdefault(event, []).append((group.get("matcher"), hook["command"]))

    def run(self, args, stdin=None):
        return subprocess.run([self.binary, "--store", self.store, *args], input=stdin,
                              capture_output=True, text=True, env=self.env)

    def fire(self, event, payload, matcher_value=None):
        """Runs the installed hooks of `event` whose matcher fits; returns
        (seconds, stdout) of the last one, or None when none is installed."""
        result = None
        for matcher, command in self.hooks.get(event, []):
            if matcher and matcher_value is not None and matcher_value not in matcher.split("|"):
                continue
            started = time.perf_counter()
            out = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True,
                                 text=True, env=self.env, cwd=self.project)
            elapsed = time.perf_counter() - started
            if out.returncode != 0 or out.stderr.strip():
                print(f"warning: {event} hook: exit {out.returncode}: {out.stderr.strip()[:300]}", file=sys.stderr)
            result = (elapsed, out.stdout)
        return result


def is_prompt(entry):
    if entry.get("type") != "user" or entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
        return False
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return bool(content.strip())
    return any(b.get("type") == "text" for b in content or [] if isinstance(b, dict))


def session_of(install, path, lines=None):
    """(file session name, the sessionId its lines carry, cwd, where the
    replay writes it)."""
    session = os.path.basename(path).split(".")[0]
    lines = lines if lines is not None else read_lines(path)
    cwd, sid = None, None
    for raw in lines[:200]:
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        cwd = cwd or entry.get("cwd")
        sid = sid or entry.get("sessionId")
    cwd = cwd or install.project
    folder = os.path.join(install.home, ".claude", "projects", "".join(c if c.isalnum() else "-" for c in cwd))
    return session, sid or session, cwd, os.path.join(folder, session + ".jsonl")


def replay_session(install, path, timings):
    lines = read_lines(path)
    session, sid, cwd, transcript = session_of(install, path, lines)
    folder = os.path.dirname(transcript)
    os.makedirs(folder, exist_ok=True)
    base = {"session_id": session, "transcript_path": transcript, "cwd": cwd, "permission_mode": "default"}

    def fire(event, extra=None, matcher_value=None):
        payload = dict(base, hook_event_name=event, **(extra or {}))
        got = install.fire(event, payload, matcher_value)
        if got:
            timings.setdefault(event, []).append((session, got[0]))

    out = open(transcript, "wb")
    fire("SessionStart", {"source": "startup"}, "startup")
    tools = {}
    answered = False
    for raw in lines:
        try:
            entry = json.loads(raw)
        except ValueError:
            entry = {}
        if is_prompt(entry) and answered:
            out.flush()
            fire("Stop", {"stop_hook_active": False})
            answered = False
        if entry.get("type") == "system" and entry.get("subtype") == "compact_boundary":
            out.flush()
            fire("PreCompact", {"trigger": "auto", "custom_instructions": ""}, "auto")
        out.write(raw if raw.endswith(b"\n") else raw + b"\n")
        if entry.get("isCompactSummary"):
            out.flush()
            fire("SessionStart", {"source": "compact"}, "compact")
        if entry.get("type") == "assistant" and not entry.get("isSidechain"):
            answered = True
            for block in (entry.get("message") or {}).get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    tools[block.get("id")] = block.get("name")
        if entry.get("type") == "user" and not entry.get("isSidechain"):
            content = (entry.get("message") or {}).get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    name = tools.pop(block.get("tool_use_id"), None)
                    if name in MATCHER:
                        out.flush()
                        fire("PostToolUse", {"tool_name": name, "tool_input": {}, "tool_response": {}}, name)
    out.close()
    fire("Stop", {"stop_hook_active": False})
    sub = os.path.join(os.path.dirname(path), session, "subagents")
    if os.path.isdir(sub):
        target = os.path.join(folder, session, "subagents")
        os.makedirs(target, exist_ok=True)
        for name in sorted(os.listdir(sub)):
            data = b"".join(read_lines(os.path.join(sub, name)))
            plain = name[:-3] if name.endswith(".gz") else name
            with open(os.path.join(target, plain), "wb") as f:
                f.write(data)
    fire("SessionEnd", {"reason": "prompt_input_exit"})
    return session, cwd, len(lines), transcript, sid


def export_messages(binary, store, env):
    """Message ids by session id."""
    out = subprocess.run([binary, "--store", store, "export", "--no-vectors"], capture_output=True,
                         text=True, env=env)
    per_session = {}
    for line in out.stdout.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("kind") == "message":
            sid = (record.get("source") or {}).get("session_id")
            per_session.setdefault(sid, set()).add(record["id"])
    return per_session


def capture_report(install, replayed):
    """The hooks' store against a plain `ingest` of the same files: the
    sessions and messages the hooks stored of what ingest stores."""
    reference = os.path.join(os.path.dirname(install.store), "reference-store")
    shutil.rmtree(reference, ignore_errors=True)
    files = []
    for _, _, _, transcript, _ in replayed:
        files.append(transcript)
        sub = os.path.join(os.path.dirname(transcript), os.path.basename(transcript)[:-6], "subagents")
        if os.path.isdir(sub):
            files += [os.path.join(sub, n) for n in sorted(os.listdir(sub))]
    env = dict(install.env, KNOWLEDGE_DB_UPKEEP="off")
    subprocess.run([install.binary, "--store", reference, "init"], capture_output=True, env=env)
    subprocess.run([install.binary, "--store", reference, "ingest", "--embed", "later", *files],
                   capture_output=True, env=env)
    expected = export_messages(install.binary, reference, env)
    stored = export_messages(install.binary, install.store, install.env)
    shutil.rmtree(reference, ignore_errors=True)
    with_any = sum(1 for s, ids in expected.items() if stored.get(s, set()) & ids)
    complete = sum(1 for s, ids in expected.items() if ids <= stored.get(s, set()))
    return {
        "sessions": len(expected),
        "sessions_with_messages": with_any,
        "sessions_complete": complete,
        "messages_expected": sum(len(ids) for ids in expected.values()),
        "messages_stored": sum(len(ids & stored.get(s, set())) for s, ids in expected.items()),
        "records": json.loads(install.run(["stats", "--json"]).stdout)["records"],
    }


def read_queries(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def read_qrels(path):
    answers = {}
    with open(path) as f:
        next(f)
        for line in f:
            qid, sid, score = line.rstrip("\n").split("\t")
            if int(score) > 0:
                answers.setdefault(qid, set()).add(sid)
    return answers


def set_recall(install, settings):
    config = os.path.join(install.store, "config.toml")
    with open(config) as f:
        text = f.read()
    head = text.split("\n[recall]")[0].rstrip("\n")
    body = "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
    with open(config, "w") as f:
        f.write(head + "\n\n[recall]\n" + body)


def ask(install, prompt, cwd, json_mode=False):
    session = "bench-" + uuid.uuid4().hex
    payload = {"session_id": session, "transcript_path": os.path.join(install.home, session + ".jsonl"),
               "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
               "permission_mode": "default"}
    if json_mode:
        out = install.run(["hook", "user-prompt-submit", "--json"], stdin=json.dumps(payload))
        return json.loads(out.stdout)
    got = install.fire("UserPromptSubmit", payload)
    if got is None:
        return None
    seconds, stdout = got
    context = ""
    if stdout.strip():
        context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return seconds, context


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.path.join(ROOT, "target/release/knowledge-db"))
    parser.add_argument("--dir", default=os.path.join(ROOT, "../shared/eval/transcripts/claude-code-entire-cli"))
    parser.add_argument("--list", default=os.path.join(ROOT, "dev-sets/agent-questions/transcripts.txt"))
    parser.add_argument("--questions", default=os.path.join(ROOT, "dev-sets/agent-questions"))
    parser.add_argument("--offtopic", default=os.path.join(ROOT, "dev-sets/recall/offtopic.jsonl"))
    parser.add_argument("--limit", type=int, default=0, help="replay only the first N sessions")
    parser.add_argument("--work", help="keep the HOME, project and store here")
    parser.add_argument("--max-memories", type=int, default=3)
    parser.add_argument("--skip-recall", action="store_true")
    parser.add_argument("--recall-only", action="store_true",
                        help="reuse the --work folder of an earlier run: ask again, replay nothing")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="memory-loop-")
    if args.recall_only:
        if not (args.work and os.path.isdir(work)):
            sys.exit("--recall-only needs the --work folder of an earlier run")
    else:
        if args.work and os.path.exists(work):
            shutil.rmtree(work)
        os.makedirs(work, exist_ok=True)
    install = Install(args.bin, work)
    listed = []
    with open(args.list) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                listed.append(os.path.normpath(os.path.join(os.path.dirname(args.list), line)))
    if args.limit:
        listed = listed[: args.limit]
    report = {"binary": install.binary, "sessions": len(listed), "hooks": sorted(install.hooks)}

    timings, replayed = {}, []
    if args.recall_only:
        for path in listed:
            session, sid, cwd, transcript = session_of(install, path)
            replayed.append((session, cwd, 0, transcript, sid))
        report["capture"] = capture_report(install, replayed)
        ask_all(install, args, replayed, report)
        finish(report, args)
        return
    started = time.perf_counter()
    for i, path in enumerate(listed):
        replayed.append(replay_session(install, path, timings))
        print(f"\rreplayed {i + 1}/{len(listed)}", end="", file=sys.stderr)
    print(file=sys.stderr)
    report["replay_seconds"] = round(time.perf_counter() - started, 1)

    report["capture"] = capture_report(install, replayed)
    biggest = sorted(replayed, key=lambda r: -r[2])[:20]
    big = {s for s, *_ in biggest}
    report["hook_seconds"] = {}
    for event, values in timings.items():
        all_times = [t for _, t in values]
        in_big = [t for s, t in values if s in big]
        report["hook_seconds"][event] = {
            "calls": len(all_times), "p50": pct(all_times, 50), "p95": pct(all_times, 95), "max": max(all_times),
            "largest20_p50": pct(in_big, 50), "largest20_p95": pct(in_big, 95)}
    # The background worker the captures nudged embeds the messages; wait
    # for it (and run what it left, if anything) before asking.
    started = time.perf_counter()
    while True:
        status = install.run(["upkeep", "--status", "--json"])
        try:
            running = json.loads(status.stdout).get("running")
        except ValueError:
            running = False
        if not running:
            break
        time.sleep(2)
    upkeep = install.run(["upkeep"])
    report["vectored_seconds_after_replay"] = round(time.perf_counter() - started, 1)
    if upkeep.returncode != 0:
        print("upkeep failed: " + upkeep.stderr, file=sys.stderr)
    report["records_without_vector"] = json.loads(install.run(["stats", "--json"]).stdout)["vectors"]["without_vector"]

    if not args.skip_recall:
        ask_all(install, args, replayed, report)
    finish(report, args)


def ask_all(install, args, replayed, report):
    """Search, recall through the installed hook, and the threshold sweep."""
    cwd_of = {s: cwd for s, cwd, *_ in replayed}
    cwd_of.update({sid: cwd for _, cwd, _, _, sid in replayed})
    questions = read_queries(os.path.join(args.questions, "queries.jsonl"))
    answers = read_qrels(os.path.join(args.questions, "qrels", "sessions.tsv"))
    offtopic = read_queries(args.offtopic)
    default_cwd = statistics.mode([c for _, c, *_ in replayed])
    asked = [(q, cwd_of.get(next(iter(answers.get(q["_id"], {""}))), default_cwd)) for q in questions]
    # Search (the before/after table): the answer session in the top 5.
    top5 = 0
    for q, cwd in asked:
        out = install.run(["search", q["text"], "-k", "5", "--json", "--all-namespaces", "--all"])
        try:
            hits = json.loads(out.stdout)["results"]
        except ValueError:
            hits = []
        top5 += any(h.get("session_id") in answers.get(q["_id"], ()) for h in hits)
    report["search_top5"] = round(top5 / len(asked), 3)
    if "UserPromptSubmit" in install.hooks:
        # One pass through the installed hook, as configured.
        hits, injected_off, seconds, sizes, by_kind = 0, 0, [], [], {}
        for q, cwd in asked:
            t, context = ask(install, q["text"], cwd)
            seconds.append(t)
            ok = any(s in context for s in answers.get(q["_id"], ()))
            hits += ok
            kind = q.get("metadata", {}).get("kind", "?")
            by_kind.setdefault(kind, [0, 0])
            by_kind[kind][0] += ok
            by_kind[kind][1] += 1
            if context:
                sizes.append(len(context))
        off_by_kind = {}
        for q in offtopic:
            t, context = ask(install, q["text"], default_cwd)
            seconds.append(t)
            injected_off += bool(context)
            kind = q.get("metadata", {}).get("kind", "?")
            off_by_kind.setdefault(kind, [0, 0])
            off_by_kind[kind][0] += bool(context)
            off_by_kind[kind][1] += 1
            if context:
                sizes.append(len(context))
        report["recall"] = {
            "questions": len(asked), "answer_session_injected": round(hits / len(asked), 3),
            "by_kind": {k: f"{a}/{n}" for k, (a, n) in by_kind.items()},
            "offtopic": len(offtopic), "offtopic_nothing_injected": round(1 - injected_off / len(offtopic), 3),
            "offtopic_injected_by_kind": {k: f"{a}/{n}" for k, (a, n) in off_by_kind.items()},
            "hook_p50": pct(seconds, 50), "hook_p95": pct(seconds, 95), "hook_max": max(seconds),
            "context_chars_median": statistics.median(sizes) if sizes else 0,
            "context_chars_max": max(sizes) if sizes else 0,
        }
        # The sweep: scores of the top memories at min_score 0.
        config = os.path.join(install.store, "config.toml")
        with open(config) as f:
            saved = f.read()
        set_recall(install, {"min_score": 0.0, "max_memories": args.max_memories})
        rows = []
        for q, cwd in asked:
            answer = ask(install, q["text"], cwd, json_mode=True).get("answer") or {}
            rows.append(("q", [(m["score"], m.get("session_id") in answers.get(q["_id"], ()))
                               for m in answer.get("memories", [])]))
        for q in offtopic:
            answer = ask(install, q["text"], default_cwd, json_mode=True).get("answer") or {}
            rows.append(("off", [(m["score"], False) for m in answer.get("memories", [])]))
        with open(config, "w") as f:
            f.write(saved)
        sweep = {}
        for t in [x / 100 for x in range(5, 100, 5)]:
            q_hit = sum(any(s >= t and ok for s, ok in ms) for kind, ms in rows if kind == "q")
            off_hit = sum(any(s >= t for s, _ in ms) for kind, ms in rows if kind == "off")
            sweep[f"{t:.2f}"] = {"answer_injected": round(q_hit / len(asked), 3),
                                 "offtopic_nothing": round(1 - off_hit / len(offtopic), 3)}
        report["sweep"] = sweep


def finish(report, args):
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")




if __name__ == "__main__":
    main()
