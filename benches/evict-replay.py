#!/usr/bin/env python3
"""Replay the largest real transcripts through `knowledge-db evict` and find every
evicted message again with `knowledge-db search`.

    benches/evict-replay.py [DIR] [N] [--window 200000] [--bin target/release/knowledge-db]
                            [--truncate-tools] [--skip-turns] [--overhead N]

For each of the N largest transcripts in DIR (by decompressed size) it runs
`evict --context-window W --json` into one fresh store, then searches (BM25, k=10,
one batch) for every evicted message with a query made from its own text (its
first 16 words; with --truncate-tools also every truncated message) and reports how often the message is in the top 10 (and top 1),
the eviction times and the token counts. With --truncate-tools, old and long
tool outputs become placeholders first (their full text is stored too) and the
table shows the tokens before and after truncation. `evict` budgets against the
real prompt (messages plus the overhead its usage figures report); --overhead 0
counts the messages alone. A transcript whose minimum does not fit the window
(context overflow) is listed and skipped.

A message counts as found when it is a hit or a copy folded into one (search
shows identical texts once and lists the copies' ids as `duplicates`); the
share found as its own hit is printed beside it.

It then adds the same evicted messages through `add` into a second store, which
links each to the turn before it (conversation context, src/record/context.rs),
and runs the same queries there: the measurement behind why transcripts are
linked by role (an answer to its prompt) and not turn by turn.
"""
import argparse, gzip, json, os, re, statistics, subprocess, sys, tempfile, time

p = argparse.ArgumentParser()
p.add_argument("dir", nargs="?", default="../shared/eval/transcripts/claude-code-entire-cli")
p.add_argument("n", nargs="?", type=int, default=20)
p.add_argument("--window", type=int, default=200000)
p.add_argument("--bin", default="target/release/knowledge-db")
p.add_argument("--truncate-tools", action="store_true")
p.add_argument("--skip-turns", action="store_true", help="skip the turn-record comparison")
p.add_argument("--overhead", type=int, help="passed to evict (default: measured from usage figures)")
a = p.parse_args()
# BM25 only: no background upkeep embedding the replay's stores after it ends.
os.environ.setdefault("KNOWLEDGE_DB_UPKEEP", "off")

files = [os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith((".jsonl", ".jsonl.gz"))]
def size(f):
    opener = gzip.open if f.endswith(".gz") else open
    with opener(f, "rb") as fh:
        return len(fh.read())
files = sorted(files, key=size, reverse=True)[: a.n]

work = tempfile.mkdtemp(prefix="evict-replay-")
store = os.path.join(work, "store")
kdb = lambda *args: subprocess.run([a.bin, "--store", store, *args], check=True, capture_output=True, text=True).stdout
kdb("init")
queries, rows, seen = [], [], set()
for f in files:
    started = time.perf_counter()
    extra = ["--truncate-tools"] if a.truncate_tools else []
    if a.overhead is not None:
        extra += ["--overhead", str(a.overhead)]
    try:
        report = json.loads(kdb("evict", "--transcript", f, "--context-window", str(a.window), "--json", *extra))
    except subprocess.CalledProcessError as e:
        print(f"skipped {os.path.basename(f)}: {e.stderr.strip()}")
        continue
    wall = time.perf_counter() - started
    tr = report.get("truncation") or {}
    rows.append((os.path.basename(f), report["messages_before"], report["evicted_count"],
                 report["tokens_before"], report["tokens_after"], report["evict_seconds"], wall,
                 tr.get("outputs_truncated", 0), tr.get("tokens_after", report["tokens_before"])))
    for rid in report["evicted_ids"] + tr.get("record_ids", []):
        if rid not in seen:
            seen.add(rid)
            queries.append(rid)
print(f"{'transcript':60} {'msgs':>6} {'evicted':>7} {'tokens before':>13} {'truncated':>9} {'after trunc':>11} {'after':>7} {'evict s':>8} {'cli s':>6}")
for r in rows:
    print(f"{r[0]:60} {r[1]:6} {r[2]:7} {r[3]:13} {r[7]:9} {r[8]:11} {r[4]:7} {r[5]:8.3f} {r[6]:6.2f}")
if a.truncate_tools:
    before, after = sum(r[3] for r in rows), sum(r[8] for r in rows)
    print(f"truncation: {sum(r[7] for r in rows)} tool outputs, {before} -> {after} tokens "
          f"({100 * (before - after) / max(before, 1):.1f}% saved); evicted {sum(r[2] for r in rows)} messages; "
          f"evict time (truncation + eviction, in process) total {sum(r[5] for r in rows):.2f}s, process total {sum(r[6] for r in rows):.2f}s")

# Queries: the first 16 words of each evicted message's stored text.
qfile = os.path.join(work, "queries.jsonl")
records, sources = {}, {}
ids = list(queries)
for i in range(0, len(ids), 500):
    out = json.loads(kdb("get", *ids[i:i + 500])) if len(ids[i:i + 500]) > 1 else {"records": [json.loads(kdb("get", ids[i]))]}
    for r in out["records"]:
        records[r["id"]] = r["source"]["text"]
        sources[r["id"]] = r["source"]
with open(qfile, "w") as q:
    for rid in ids:
        words = re.findall(r"\S+", records[rid])[:16]
        q.write(json.dumps({"_id": rid, "text": " ".join(words)}) + "\n")
def found(out):
    """Per query: (in the top 10, first), counting a record found when it is a
    hit or a copy folded into one (search shows identical texts once, with
    their ids as `duplicates`), and as its own hit only."""
    rows = []
    for line in out.splitlines():
        r = json.loads(line)
        q = r["query_id"]
        hits = [[x["id"], *(x.get("duplicates") or [])] for x in r["results"]]
        own = [h[0] for h in hits]
        rows.append((any(q in h for h in hits), bool(hits) and q in hits[0], q in own, bool(own) and own[0] == q))
    return [sum(r[i] for r in rows) for i in range(4)], len(rows)


out = kdb("search", "--queries", qfile, "--mode", "bm25", "-k", "10", "--all-namespaces")
(top10, top1, own10, own1), n = found(out)
print(f"evicted messages: {n}; found in top 10 by a query from their own text: {top10} ({100*top10/max(n,1):.1f}%); top 1: {top1} ({100*top1/max(n,1):.1f}%)"
      f" (as their own hit, not a copy folded into another: top 10 {100*own10/max(n,1):.1f}%, top 1 {100*own1/max(n,1):.1f}%)")
print(f"eviction (rolling_evict incl. token counting) mean {statistics.mean(r[5] for r in rows):.3f}s, max {max(r[5] for r in rows):.3f}s; store kept in {work}")

# The same messages added through `add`, which links each to the turn before it
# in the same session (conversation context), then the same queries.
linked_store = os.path.join(work, "linked")
subprocess.run([a.bin, "--store", linked_store, "init"], check=True, capture_output=True)
lfile = os.path.join(work, "linked.jsonl")
with open(lfile, "w") as out:
    for rid in ids:
        out.write(json.dumps(sources[rid]) + "\n")
subprocess.run([a.bin, "--store", linked_store, "add", lfile, "--embed", "later"], check=True, capture_output=True)
out = subprocess.run([a.bin, "--store", linked_store, "search", "--queries", qfile, "--mode", "bm25", "-k", "10", "--all-namespaces"],
                     check=True, capture_output=True, text=True).stdout
(l10, l1, _, _), _ = found(out)
print(f"with conversation context (linked by add): top 10: {l10} ({100*l10/max(n,1):.1f}%); top 1: {l1} ({100*l1/max(n,1):.1f}%)")
if a.skip_turns:
    sys.exit(0)

# The same queries against turn records (a user prompt with the replies and tool
# calls that follow it, in one record), to choose the unit ingest stores.
turn_store = os.path.join(work, "turns")
subprocess.run([a.bin, "--store", turn_store, "init"], check=True, capture_output=True)
turns, turn_of = {}, {}
for rid in ids:
    src = sources[rid]
    key = f"{src['session_id']}:turn:{src['turn_index']}"
    turns.setdefault(key, []).append(records[rid])
    turn_of[rid] = key
tfile = os.path.join(work, "turns.jsonl")
with open(tfile, "w") as t:
    for key, texts in turns.items():
        t.write(json.dumps({"kind": "message", "id": key, "role": "turn", "text": "\n".join(texts)}) + "\n")
subprocess.run([a.bin, "--store", turn_store, "add", tfile, "--embed", "later"], check=True, capture_output=True)
out = subprocess.run([a.bin, "--store", turn_store, "search", "--queries", qfile, "--mode", "bm25", "-k", "10", "--all-namespaces"],
                     check=True, capture_output=True, text=True).stdout
t10 = t1 = 0
for line in out.splitlines():
    r = json.loads(line)
    got = [x["id"] for x in r["results"]]
    t10 += turn_of[r["query_id"]] in got
    t1 += bool(got) and got[0] == turn_of[r["query_id"]]
chars_msg = statistics.mean(len(records[i]) for i in ids) if ids else 0
chars_turn = statistics.mean(len("\n".join(v)) for v in turns.values()) if turns else 0
print(f"as turn records ({len(turns)} turns): the message's turn in top 10: {t10} ({100*t10/max(n,1):.1f}%); top 1: {t1} ({100*t1/max(n,1):.1f}%)")
print(f"mean record text: message {chars_msg:.0f} chars, turn {chars_turn:.0f} chars")
