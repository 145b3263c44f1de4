#!/usr/bin/env python3
"""The same records and queries through the stores users would pick instead.

Reads the folder `knowledge-db bench run --export DIR` wrote (docs.jsonl,
queries.jsonl, doc_vectors.f32, query_vectors.f32: the very vectors knowledge-db
used) and measures, for each peer, index time, search latency per query
(p50/p95/p99, k=10, in process, query vectors precomputed as for knowledge-db) and
recall@10 of the generated queries:

- sqlite-fts5:        SQLite FTS5 BM25 (what OpenClaw's built-in memory uses for text)
- sqlite-fts5+vector: FTS5 top 100 + brute-force cosine top 100, fused like
                      knowledge-db's default (min-max linear, vector weight 0.4):
                      OpenClaw's built-in hybrid without sqlite-vec
- bm25s:              the bm25s Python library (sparse-matrix BM25)
- lancedb-hybrid:     LanceDB with its full-text index and vector search, fused by
                      its default reranker (RRF)

With `--knowledge-db REPORT.json` (the `bench run --json` output of the same run)
it prints each peer's latency as a ratio to knowledge-db's. With `--store` (the
store that run built with vectors) knowledge-db's own top 10 for the same queries
is judged by the same code as the peers' (see `Judge` for the two recalls).
Not part of CI: run it with benches/peers.sh.
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

# LanceDB's Rust side logs deprecation notes on every query unless told not to.
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("RUST_LOG", "error")

DIM = 384
ALPHA = 0.4
DEPTH = 100


def load(folder):
    docs = [json.loads(l) for l in open(os.path.join(folder, "docs.jsonl"))]
    queries = [json.loads(l) for l in open(os.path.join(folder, "queries.jsonl"))]
    dv = np.fromfile(os.path.join(folder, "doc_vectors.f32"), dtype="<f4").reshape(-1, DIM)
    qv = np.fromfile(os.path.join(folder, "query_vectors.f32"), dtype="<f4").reshape(-1, DIM)
    assert len(dv) == len(docs) and len(qv) == len(queries)
    return docs, queries, dv, qv


def pct(times, q):
    times = sorted(times)
    return times[min(len(times) - 1, int(len(times) * q))]


class Judge:
    """Recall@10 of the generated queries, the same way for every system.

    `recall_at_10` counts a query as found when its one judged record is in the
    top 10. Above ~57k records the generator reuses sessions with new ids, so a
    target's exact text often exists in several records of which only one is
    judged (at 1M: median 9 copies); `recall_any_copy_at_10` also counts a top-10
    record whose text is identical to the target's, so that which of the
    identical copies a system happens to rank first does not decide the number.
    """

    def __init__(self, docs, queries):
        self.queries = queries
        self.text_of = {d["id"]: d["text"] for d in docs}

    def recall(self, found_lists):
        exact = any_copy = 0
        for q, found in zip(self.queries, found_lists):
            target = q["target"]
            exact += target in found
            text = self.text_of.get(target)
            any_copy += target in found or any(self.text_of.get(d) == text for d in found)
        n = max(1, len(self.queries))
        return round(exact / n, 4), round(any_copy / n, 4)


def summary(name, index_s, n_docs, times, found_lists, judge):
    exact, any_copy = judge.recall(found_lists)
    return {
        "peer": name,
        "index_seconds": round(index_s, 3),
        "records_per_sec": round(n_docs / index_s, 1) if index_s > 0 else None,
        "p50_ms": round(pct(times, 0.5), 3),
        "p95_ms": round(pct(times, 0.95), 3),
        "p99_ms": round(pct(times, 0.99), 3),
        "recall_at_10": exact,
        "recall_any_copy_at_10": any_copy,
    }


WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text):
    terms = {t.lower() for t in WORD.findall(text)}
    return " OR ".join('"%s"' % t.replace('"', "") for t in sorted(terms)) or '""'


def minmax(pairs):
    if not pairs:
        return {}
    lo, hi = min(s for _, s in pairs), max(s for _, s in pairs)
    return {d: ((s - lo) / (hi - lo) if hi > lo else 1.0) for d, s in pairs}


def run_sqlite(docs, queries, dv, qv, with_vectors, judge):
    folder = tempfile.mkdtemp()
    db = sqlite3.connect(os.path.join(folder, "fts.db"))
    start = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, text)")
    db.executemany("INSERT INTO docs(id, text) VALUES (?, ?)", ((d["id"], d["text"]) for d in docs))
    db.commit()
    index_s = time.perf_counter() - start
    ids = [d["id"] for d in docs]
    rowid_of = {}
    for rowid, doc_id in db.execute("SELECT rowid, id FROM docs"):
        rowid_of[doc_id] = rowid
    times, found_lists = [], []
    for q, vec in zip(queries, qv):
        start = time.perf_counter()
        rows = db.execute(
            "SELECT id, -bm25(docs) FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
            (fts_query(q["text"]), DEPTH if with_vectors else 10),
        ).fetchall()
        if with_vectors:
            sims = dv @ vec
            top = np.argpartition(-sims, DEPTH)[:DEPTH] if len(sims) > DEPTH else np.arange(len(sims))
            vector = minmax([(ids[i], float(sims[i])) for i in top])
            text = minmax([(r[0], r[1]) for r in rows])
            fused = {d: ALPHA * vector.get(d, 0.0) + (1 - ALPHA) * text.get(d, 0.0) for d in set(vector) | set(text)}
            found = [d for d, _ in sorted(fused.items(), key=lambda x: -x[1])[:10]]
        else:
            found = [r[0] for r in rows]
        times.append((time.perf_counter() - start) * 1000)
        found_lists.append(found)
    name = "sqlite-fts5+vector" if with_vectors else "sqlite-fts5"
    return summary(name, index_s, len(docs), times, found_lists, judge)


def run_bm25s(docs, queries, judge):
    import bm25s

    start = time.perf_counter()
    corpus_tokens = bm25s.tokenize([d["text"] for d in docs], show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus_tokens, show_progress=False)
    index_s = time.perf_counter() - start
    times, found_lists = [], []
    for q in queries:
        start = time.perf_counter()
        tokens = bm25s.tokenize([q["text"]], show_progress=False)
        results, _ = retriever.retrieve(tokens, k=min(10, len(docs)), show_progress=False, n_threads=1)
        times.append((time.perf_counter() - start) * 1000)
        found_lists.append([docs[i]["id"] for i in results[0]])
    return summary("bm25s", index_s, len(docs), times, found_lists, judge)


def run_lancedb(docs, queries, dv, qv, judge):
    import lancedb
    import pyarrow as pa
    from lancedb.index import FTS, IvfPq

    folder = tempfile.mkdtemp()
    start = time.perf_counter()
    db = lancedb.connect(folder)
    table = db.create_table(
        "docs",
        pa.table({
            "id": [d["id"] for d in docs],
            "text": [d["text"] for d in docs],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(dv.reshape(-1)), DIM),
        }),
    )
    table.create_index("text", config=FTS())
    if len(docs) >= 100_000:
        table.create_index("vector", config=IvfPq(distance_type="cosine"))
    index_s = time.perf_counter() - start
    times, found_lists = [], []
    for q, vec in zip(queries, qv):
        start = time.perf_counter()
        rows = (
            table.search(query_type="hybrid")
            .vector(vec.tolist())
            .text(q["text"])
            .limit(10)
            .select(["id"])
            .to_list()
        )
        times.append((time.perf_counter() - start) * 1000)
        found_lists.append([r["id"] for r in rows])
    return summary("lancedb-hybrid", index_s, len(docs), times, found_lists, judge)


def knowledge_db_recall(binary, store, queries, mode, judge):
    """Our own top 10 for the same queries, judged by the same `Judge`.

    Runs `knowledge-db search --queries` once on the store `bench run` built (its
    latency is `bench run`'s in-process timing, like the peers' here)."""
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for i, q in enumerate(queries):
            f.write(json.dumps({"_id": f"q{i}", "text": q["text"]}) + "\n")
        path = f.name
    out = subprocess.run(
        [binary, "--store", store, "search", "--queries", path, "--json", "--mode", mode,
         "-k", "10", "--all-namespaces"],
        check=True, capture_output=True, text=True,
    ).stdout
    os.unlink(path)
    by_id = {}
    for line in out.splitlines():
        row = json.loads(line)
        by_id[row["query_id"]] = [r["id"] for r in row["results"]]
    return judge.recall([by_id.get(f"q{i}", []) for i in range(len(queries))])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("export", help="the folder `bench run --export` wrote")
    parser.add_argument("--knowledge-db", help="`bench run --json` report of the same run")
    parser.add_argument("--skip", action="append", default=[], help="peer to leave out")
    parser.add_argument(
        "--store",
        help="the store `bench run` built with vectors (store-vectors-N in its --work): judge"
        " knowledge-db's own top 10 on the same queries with the same code",
    )
    parser.add_argument(
        "--bin", default="target/release/knowledge-db", help="knowledge-db binary for --store"
    )
    parser.add_argument(
        "--max-queries",
        type=int,
        help="time only N evenly spaced queries (the generator writes them in corpus order, so"
        " a stride spreads them over the corpus); at 1M records SQLite FTS5 takes about half a"
        " second per query",
    )
    args = parser.parse_args()
    docs, queries, dv, qv = load(args.export)
    if args.max_queries is not None and 0 < args.max_queries < len(queries):
        picked = np.linspace(0, len(queries) - 1, args.max_queries).round().astype(int)
        queries, qv = [queries[i] for i in picked], qv[picked]
    print(f"{len(docs)} records, {len(queries)} queries", file=sys.stderr)
    judge = Judge(docs, queries)
    runs = [
        ("sqlite-fts5", lambda: run_sqlite(docs, queries, dv, qv, False, judge)),
        ("sqlite-fts5+vector", lambda: run_sqlite(docs, queries, dv, qv, True, judge)),
        ("bm25s", lambda: run_bm25s(docs, queries, judge)),
        ("lancedb-hybrid", lambda: run_lancedb(docs, queries, dv, qv, judge)),
    ]
    results = []
    for name, fn in runs:
        if name in args.skip:
            continue
        print(f"running {name}...", file=sys.stderr)
        try:
            results.append(fn())
        except Exception as e:  # a peer that fails to install or run is reported, not fatal
            results.append({"peer": name, "error": f"{type(e).__name__}: {e}"})
    ours = {}
    if args.knowledge_db:
        report = json.load(open(args.knowledge_db))
        for s in report["search"]:
            ours[s["mode"]] = dict(s, recall_any_copy_at_10=None)
    if args.store:
        for mode in ("bm25", "hybrid"):
            exact, any_copy = knowledge_db_recall(args.bin, args.store, queries, mode, judge)
            ours.setdefault(mode, {"p50_ms": None})
            ours[mode].update(recall_at_10=exact, recall_any_copy_at_10=any_copy)
            results.append({"peer": f"knowledge-db {mode} (same queries)", "recall_at_10": exact,
                            "recall_any_copy_at_10": any_copy, "p50_ms_all_queries": ours[mode]["p50_ms"]})
    print("| peer | index records/s | p50 ms | p95 ms | p99 ms | recall@10 | any copy | knowledge-db (mode) p50 ms | its recall@10 | its any copy | p50 ratio (peer / ours) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        if "error" in r:
            print(f"| {r['peer']} | failed: {r['error']} ||||||||||")
            continue
        if r["peer"].startswith("knowledge-db"):
            continue
        mode = "hybrid" if ("vector" in r["peer"] or "hybrid" in r["peer"]) else "bm25"
        o = ours.get(mode, {})
        ratio = f"{r['p50_ms'] / o['p50_ms']:.1f}x" if o.get("p50_ms") else "-"
        print(
            f"| {r['peer']} | {r['records_per_sec']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} "
            f"| {r['recall_at_10']} | {r['recall_any_copy_at_10']} "
            f"| {o.get('p50_ms', '-')} ({mode}) | {o.get('recall_at_10', '-')} | {o.get('recall_any_copy_at_10') or '-'} | {ratio} |"
        )
    print(json.dumps(results), file=sys.stderr)


if __name__ == "__main__":
    main()
