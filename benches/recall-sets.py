#!/usr/bin/env python3
"""Recall by meaning, measured (issue 37): prompts asked through the installed
hook's own path (`knowledge-db hook user-prompt-submit --json`) in a new
session whose cwd is the answer session's, on a store of the dev sessions;
then the first-day pairs, each on a store of its one session.

  benches/recall-sets.py --bin target/release/knowledge-db --store S [--part tune|check|all]
                         [--sets agent-questions,paraphrase,paraphrase-hard] [--misses]
                         [--first-day-work DIR]

S: a store of the dev sessions, e.g.
  knowledge-db --store S init
  knowledge-db --store S ingest --embed later $(sed '/^#/d; s#^#dev-sets/agent-questions/#' dev-sets/agent-questions/transcripts.txt)
  knowledge-db --store S embed

Reports, per set and kind, how many questions had an answer session among the
injected memories, and how many more had it named in a lead (a candidate
session told when nothing was confident; issue 49), how many off-topic prompts
got nothing and how many got no lead either, and the hook's wall time. With
`--phrasings`, the hard set is also searched the way an agent searches
(`search Q1 --or Q2 --or Q3`, dev-sets/paraphrase-hard/phrasings.jsonl): the
answer session among the first 5 distinct sessions. The first-day pairs are
reported by batch (fd-01..15, and fd-16.. written to forget the words). `--part check` reads only the parts kept out of tuning: look at
them once, after choosing.
"""
import argparse, gzip, json, os, statistics, subprocess, sys, time, uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def first_cwd(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        for i, line in enumerate(f):
            if i > 200:
                break
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("cwd"):
                return entry["cwd"], entry.get("sessionId")
    return None, None


def ask(binary, store, prompt, cwd):
    payload = {"session_id": "bench-" + uuid.uuid4().hex, "transcript_path": "/nonexistent.jsonl",
               "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
               "permission_mode": "default"}
    env = dict(os.environ, KNOWLEDGE_DB_UPKEEP="off")
    started = time.perf_counter()
    out = subprocess.run([binary, "--store", store, "hook", "user-prompt-submit", "--json"],
                         input=json.dumps(payload), capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    try:
        answer = json.loads(out.stdout).get("answer") or {}
    except ValueError:
        sys.exit(f"hook failed: {out.stderr[:300]}")
    return answer.get("memories", []), answer.get("leads", []), seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(ROOT, "target/release/knowledge-db"))
    p.add_argument("--store", required=True)
    p.add_argument("--part", default="tune", choices=["tune", "check", "all"])
    p.add_argument("--list", default=os.path.join(ROOT, "dev-sets/agent-questions/transcripts.txt"))
    p.add_argument("--first-day-work", help="keep the one-session stores here (default: a temp folder)")
    p.add_argument("--sets", default="agent-questions,paraphrase,paraphrase-hard",
                   help="question sets of dev-sets/ to ask, comma-separated")
    p.add_argument("--misses", action="store_true",
                   help="for each question whose answer was not injected, print where plain search ranks it")
    p.add_argument("--phrasings", action="store_true",
                   help="also search the hard set with three phrasings (search Q1 --or Q2 --or Q3), top 5 sessions")
    p.add_argument("--no-first-day", action="store_true", help="skip the first-day pairs")
    a = p.parse_args()
    base = os.path.dirname(a.list)
    cwd_of = {}
    for line in open(a.list):
        line = line.strip()
        if line and not line.startswith("#"):
            path = os.path.normpath(os.path.join(base, line))
            cwd, sid = first_cwd(path)
            if cwd:
                cwd_of[os.path.basename(path).split(".")[0]] = cwd
                cwd_of[sid] = cwd
    default_cwd = statistics.mode(list(cwd_of.values()))
    seconds, report = [], {}
    for name in [n for n in a.sets.split(",") if n]:
        folder = os.path.join(ROOT, "dev-sets", name)
        answers = {}
        with open(os.path.join(folder, "qrels", "sessions.tsv")) as f:
            next(f)
            for row in f:
                qid, sid, grade = row.rstrip("\n").split("\t")
                if int(grade) > 0:
                    answers.setdefault(qid, set()).add(sid)
        for line in open(os.path.join(folder, "queries.jsonl")):
            q = json.loads(line)
            md = q.get("metadata", {})
            if a.part != "all" and md.get("part", "tune") != a.part:
                continue
            sids = sorted(answers.get(q["_id"], ()))
            memories, leads, t = ask(a.bin, a.store, q["text"], cwd_of.get(sids[0], default_cwd) if sids else default_cwd)
            seconds.append(t)
            key = f"{name}:{md.get('kind', '?')}"
            hit = any(m.get("session_id") in sids for m in memories)
            led = not hit and any(l.get("session_id") in sids for l in leads)
            if a.misses and not hit:
                print(f"  missed {q['_id']} ({key}){' (led)' if led else ''}: {where_search_ranks(a, q['text'], sids)}: {q['text'][:90]}")
            report.setdefault(key, [0, 0, 0])
            report[key][0] += hit
            report[key][1] += led
            report[key][2] += 1
    silent = [0, 0, 0]
    if a.part != "check":
        for line in open(os.path.join(ROOT, "dev-sets/recall/offtopic.jsonl")):
            memories, leads, t = ask(a.bin, a.store, json.loads(line)["text"], default_cwd)
            seconds.append(t)
            silent[0] += not memories
            silent[1] += not memories and not leads
            silent[2] += 1
    for key, (hits, led, n) in sorted(report.items()):
        print(f"{key}: answer session injected {hits}/{n}, named in a lead {led} more ({hits + led}/{n})")
    if silent[2]:
        print(f"off-topic prompts that got nothing: {silent[0]}/{silent[2]}; no lead either: {silent[1]}/{silent[2]}")
    seconds.sort()
    if seconds:
        print(f"hook wall time p50 {seconds[len(seconds) // 2]:.3f} s, p95 {seconds[int(len(seconds) * 0.95)]:.3f} s")
    if a.phrasings:
        phrasings(a)
    if not a.no_first_day:
        first_day(a)


def sessions_of(a, queries, k=5):
    """The first k distinct sessions of `search Q1 --or Q2 ...` (default search, every project)."""
    args = [a.bin, "--store", a.store, "search", queries[0]]
    for q in queries[1:]:
        args += ["--or", q]
    out = subprocess.run(args + ["-k", "30", "--json", "--all-namespaces", "--all-projects"],
                         capture_output=True, text=True)
    try:
        hits = json.loads(out.stdout)["results"]
    except ValueError:
        sys.exit(f"search failed: {out.stderr[:300]}")
    seen = []
    for h in hits:
        sid = h.get("session_id")
        if sid and sid not in seen:
            seen.append(sid)
    return seen[:k]


def phrasings(a):
    folder = os.path.join(ROOT, "dev-sets", "paraphrase-hard")
    answers = {}
    with open(os.path.join(folder, "qrels", "sessions.tsv")) as f:
        next(f)
        for row in f:
            qid, sid, grade = row.rstrip("\n").split("\t")
            if int(grade) > 0:
                answers.setdefault(qid, set()).add(sid)
    texts = {json.loads(l)["_id"]: json.loads(l)["text"] for l in open(os.path.join(folder, "queries.jsonl"))}
    counts = {"question alone": [0, 0], "three phrasings": [0, 0], "question and three phrasings": [0, 0]}
    for line in open(os.path.join(folder, "phrasings.jsonl")):
        q = json.loads(line)
        part = q.get("metadata", {}).get("part", q.get("part", "tune"))
        if a.part != "all" and part != a.part:
            continue
        sids = answers.get(q["_id"], set())
        for key, queries in (("question alone", [texts[q["_id"]]]),
                             ("three phrasings", q["queries"]),
                             ("question and three phrasings", [texts[q["_id"]]] + q["queries"])):
            counts[key][0] += any(s in sids for s in sessions_of(a, queries))
            counts[key][1] += 1
    for key, (hits, n) in counts.items():
        print(f"paraphrase-hard, explicit search, {key}: answer session in the first 5 sessions {hits}/{n}")


def where_search_ranks(a, text, sids):
    """The answer session's best rank and score in plain `search -k 30 --all`."""
    out = subprocess.run([a.bin, "--store", a.store, "search", text, "-k", "30", "--all", "--json",
                          "--all-namespaces", "--all-projects"], capture_output=True, text=True)
    try:
        hits = json.loads(out.stdout)["results"]
    except ValueError:
        return "search failed"
    for rank, h in enumerate(hits, 1):
        if h.get("session_id") in sids:
            return f"search rank {rank}, score {h.get('score', 0):.2f}"
    return "not in search's top 30"


def first_day(a):
    import tempfile
    work = a.first_day_work or tempfile.mkdtemp(prefix="first-day-")
    pairs = os.path.join(ROOT, "dev-sets/first-day/pairs.jsonl")
    counts = {}
    for line in open(pairs):
        pair = json.loads(line)
        if a.part != "all" and pair.get("part", "tune") != a.part:
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(pairs), pair["session"]))
        store = os.path.join(work, os.path.basename(path).split(".")[0])
        if not os.path.exists(os.path.join(store, "config.toml")):
            for args in (["init"], ["ingest", "--embed", "now", path]):
                subprocess.run([a.bin, "--store", store, *args], check=True, capture_output=True)
        memories, leads, _ = ask(a.bin, store, pair["prompt"], first_cwd(path)[0] or "/tmp")
        number = int(pair["_id"].rsplit("-", 1)[1])
        batch = "fd-01..15" if number <= 15 else "fd-16..36"
        key = (batch, "silent" if pair.get("expect") == "nothing" else "recalled")
        c = counts.setdefault(key, [0, 0, 0])
        if key[1] == "silent":
            c[0] += not memories
            c[1] += not memories and not leads
        else:
            c[0] += bool(memories)
            c[1] += bool(memories) or bool(leads)
        c[2] += 1
    for batch in sorted({b for b, _ in counts}):
        r = counts.get((batch, "recalled"), [0, 0, 0])
        s = counts.get((batch, "silent"), [0, 0, 0])
        print(f"first day {batch}: recalled {r[0]}/{r[2]} (or led {r[1]}/{r[2]}); "
              f"unrelated prompts silent {s[0]}/{s[2]} (no lead either {s[1]}/{s[2]})")


if __name__ == "__main__":
    main()
