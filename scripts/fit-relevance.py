#!/usr/bin/env python3
"""Fits the relevance models of src/search/relevance.rs and picks the default
minimum score, on half of the dev sets; reports both halves.

Input: candidate dumps written by `knowledge-db eval --dump-candidates FILE`
(one JSON line per query: every candidate of both retrievers with its exact
BM25 score, cosine similarity, ranks, grade, and the inputs the binary reads
beside them: predecessor, identifier share, date, coverage), given as NAME=PATH. In each
dump, query ids starting with `xneg-` are queries of another data set (nothing
in this store answers them: the "not answerable" examples), ids starting with
`neg-` are the hand-written negatives of dev-sets/negatives (only ever used for
checking), and the rest are the set's own judged queries.

Queries are split in two by a hash of their id: the fitting half trains every
model and chooses the minimum score (the highest that loses at most
--max-cost Recall@10 on each set's fitting half); the checking half and the
hand-written negatives are only measured. Needs numpy (the model venv of
scripts/setup-model.sh has it). Run through scripts/fit-relevance.sh.
"""
import argparse
import hashlib
import json
import math
import re
import sys

import numpy as np


def load(path):
    queries = []
    with open(path) as f:
        for line in f:
            d = json.loads(line)
            c = d["candidates"]
            q = {
                "id": d["query_id"],
                "kind": (d.get("metadata") or {}).get("kind", ""),
                "relevant": d["relevant"],
                "idf_sum": d["idf_sum"],
                "bm25": np.array([r[1] for r in c], dtype=np.float64),
                "brank": np.array([r[2] or 0 for r in c]),
                "cos": np.array([np.nan if r[3] is None else r[3] for r in c], dtype=np.float64),
                "vrank": np.array([r[4] or 0 for r in c]),
                "rel": np.array([r[5] for r in c], dtype=np.float64),
                # Pool index of the turn this candidate's context came from.
                "pred": [r[6] if len(r) > 6 else None for r in c],
                # Share of the query's identifiers the candidate holds.
                "ident": np.array([r[7] if len(r) > 7 else 0.0 for r in c], dtype=np.float64),
                # 1 when the candidate's own time falls on the date the query names.
                "dated": np.array([r[8] if len(r) > 8 else 0 for r in c], dtype=np.float64),
                # Share of the query's IDF weight in the terms the candidate holds.
                "cov": np.array([r[9] if len(r) > 9 else 0.0 for r in c], dtype=np.float64),
            }
            queries.append(q)
    return queries


def half(query_id):
    return int(hashlib.sha1(query_id.encode()).hexdigest(), 16) % 2


def zscores(x, in_list):
    """Z-scores over the list members; others get the list's lowest (as Rust)."""
    if not in_list.any():
        return np.zeros(len(x))
    vals = x[in_list]
    mean = vals.mean()
    std = vals.std() or 1.0
    return np.where(in_list, (x - mean) / std, (vals.min() - mean) / std)


def features(q):
    cos = np.nan_to_num(q["cos"], nan=0.0)
    bn = q["bm25"] / q["idf_sum"] if q["idf_sum"] > 0 else np.zeros(len(cos))
    zb = zscores(q["bm25"], q["brank"] > 0)
    zv = zscores(cos, q["vrank"] > 0)
    # Coverage next to the best-covering candidate (relevance.rs coverage_gap).
    cg = q["cov"] - q["cov"].max(initial=0.0)
    return {"cos": cos, "bn": bn, "zb": zb, "zv": zv, "cg": cg}


# The models: which candidates each sees, and its features.
MODELS = {
    "HYBRID": {
        "pool": lambda q: np.ones(len(q["bm25"]), dtype=bool),
        "relevant": ["cos", "bn", "zb", "zv", "cg"],
        "answerable": ["cos", "bn"],
    },
    "BM25_ONLY": {
        "pool": lambda q: q["brank"] > 0,
        "relevant": ["bn"],
        "answerable": ["bn"],
    },
    "VECTOR_ONLY": {
        "pool": lambda q: q["vrank"] > 0,
        "relevant": ["cos"],
        "answerable": ["cos"],
    },
}


def fit_logistic(X, y, w, l2=1e-3, iters=100):
    X1 = np.hstack([X, np.ones((len(X), 1))])
    beta = np.zeros(X1.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-(X1 @ beta)))
        g = X1.T @ ((p - y) * w) + l2 * np.r_[beta[:-1], 0]
        H = (X1 * (p * (1 - p) * w)[:, None]).T @ X1 + l2 * np.eye(X1.shape[1])
        step = np.linalg.solve(H, g)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def relevant_rows(queries, model):
    """Each judged query's pool, weighted so that every query counts once and
    relevant and other candidates weigh the same."""
    X, y, w = [], [], []
    for q in queries:
        pool = model["pool"](q)
        if not pool.any():
            continue
        f = features(q)
        rel = (q["rel"][pool] > 0).astype(float)
        if rel.sum() == 0:
            continue
        X.append(np.c_[tuple(f[name][pool] for name in model["relevant"])])
        y.append(rel)
        w.append(np.where(rel > 0, 0.5 / rel.sum(), 0.5 / max(1, (1 - rel).sum())))
    return np.vstack(X), np.concatenate(y), np.concatenate(w)


def best_evidence(q, model, ans_w=None):
    """The answerable model's inputs: with both retrievers and known weights,
    the features of the one candidate whose evidence is strongest (as
    relevance.rs reads them); else each feature's best over the pool."""
    pool = model["pool"](q)
    f = features(q)
    if not pool.any():
        return [0.0 for _ in model["answerable"]]
    X = np.c_[tuple(f[name][pool] for name in model["answerable"])]
    if ans_w is not None and len(model["answerable"]) > 1:
        logits = X @ ans_w[:-1]
        k = int(np.argmax(logits))
        if logits[k] < 0:  # no candidate beats an empty one (relevance.rs starts from [0, 0])
            return [0.0 for _ in model["answerable"]]
        return list(X[k])
    return list(X.max(axis=0))


def answerable_rows(positives, negatives, model, ans_w=None):
    X = [best_evidence(q, model, ans_w) for q in positives + negatives]
    y = np.r_[np.ones(len(positives)), np.zeros(len(negatives))]
    w = np.where(y > 0, 0.5 / len(positives), 0.5 / max(1, len(negatives)))
    return np.array(X), y, w


# Added to the logit of a candidate dated on the query's date (relevance.rs DATE_WEIGHT).
DATE_WEIGHT = 3.0

# Taken off the answerable logit of a hybrid search whose best BM25 share is
# under WORDLESS_SHARE (relevance.rs wordless_penalty).
WORDLESS_SHARE = 0.2
WORDLESS_PENALTY = 4.0


def wordless_penalty(q, pool):
    f = features(q)
    best = f["bn"][pool].max(initial=0.0)
    return WORDLESS_PENALTY * min(1.0, max(0.0, 1.0 - best / WORDLESS_SHARE))


# Neighbour raising (src/search/neighbours.rs).
RAISE = 0.3
FROM_TOP = 20


def raise_predecessors(q, pool, level, logits):
    """Raises the predecessors of the best FROM_TOP candidates, as Rust does."""
    index = np.flatnonzero(pool)
    if len(index) == 0:
        return logits
    at = {int(i): k for k, i in enumerate(index)}
    order = np.argsort(-(level * sigmoid(logits)), kind="stable")
    weakest = logits.min()
    before = logits.copy()
    for k in order[:FROM_TOP]:
        p = q["pred"][index[k]]
        if p is not None and p in at:
            j = at[p]
            logits[j] = max(logits[j], before[j] + RAISE * (before[k] - weakest))
    return logits


def scores(q, name, fitted, neighbours=True):
    """Calibrated scores of the query's pool (as relevance.rs computes them)."""
    model = MODELS[name]
    pool = model["pool"](q)
    f = features(q)
    rel_w, ans_w = fitted[name]
    # A model fitted before an input was added reads the inputs it knew (new
    # ones are appended), so older relevance.rs files can be measured too.
    X = np.c_[tuple(f[n][pool] for n in model["relevant"][: len(rel_w) - 1])]
    logit = np.dot(best_evidence(q, model, ans_w), ans_w[:-1]) + ans_w[-1]
    if name == "HYBRID":
        logit -= wordless_penalty(q, pool)
    level = sigmoid(logit)
    # A record holding every identifier of the query vouches for itself.
    level = np.where(q["ident"][pool] >= 1.0, 1.0, level)
    logits = X @ rel_w[:-1] + rel_w[-1] + DATE_WEIGHT * q["dated"][pool]
    if neighbours:
        logits = raise_predecessors(q, pool, level, logits)
    return pool, level * sigmoid(logits)


def quality(queries, name, fitted, min_score):
    """Mean nDCG@10 and Recall@10, with and without the minimum score."""
    ndcg = r10 = r10_all = 0.0
    for q in queries:
        pool, s = scores(q, name, fitted)
        rel = q["rel"][pool]
        order = np.argsort(-s, kind="stable")[:10]
        kept = [i for i in order if s[i] >= min_score]
        n = max(q["relevant"], 1)
        r10 += sum(rel[i] > 0 for i in kept) / n
        r10_all += sum(rel[i] > 0 for i in order) / n
        dcg = sum(rel[i] / math.log2(j + 2) for j, i in enumerate(kept))
        idcg = sum(1 / math.log2(j + 2) for j in range(min(n, 10)))
        ndcg += dcg / idcg
    m = max(len(queries), 1)
    return {"ndcg@10": ndcg / m, "R@10": r10 / m, "R@10 no minimum": r10_all / m}


def answered_nothing(queries, name, fitted, min_score):
    return sum(1 for q in queries if scores(q, name, fitted)[1].max(initial=0) < min_score)


def shipped(path):
    """The models and minimum compiled into the binary (src/search/relevance.rs),
    in the form `fitted` has, to measure them on the same dumps."""
    text = open(path).read()
    number = r"(-?[0-9.]+)"
    models = {}
    for name in MODELS:
        m = re.search(
            rf"pub const {name}: Models<[^>]*> = Models \{{\s*answerable: Logistic \{{\s*"
            rf"weights: \[([^\]]*)\],\s*bias: {number},\s*\}},\s*relevant: Logistic \{{\s*"
            rf"weights: \[([^\]]*)\],\s*bias: {number},", text)
        if not m:
            raise SystemExit(f"{path}: cannot read the {name} models")
        weights = lambda w, b: np.array([float(x) for x in w.split(",") if x.strip()] + [float(b)])
        models[name] = (weights(m.group(3), m.group(4)), weights(m.group(1), m.group(2)))
    minimum = re.search(r"pub const DEFAULT_MIN_SCORE: f32 = ([0-9.]+);", text)
    if not minimum:
        raise SystemExit(f"{path}: cannot read DEFAULT_MIN_SCORE")
    return models, float(minimum.group(1))


def report(sets, fitted, chosen):
    """The quality tables of every mode and the abstention table."""
    header = ["set", "half", "queries", "nDCG@10", "R@10", "R@10 without minimum", "cost"]
    for mode in MODELS:
        print(f"## {mode}, minimum {chosen:.2f}")
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for set_name, s in sets.items():
            for h, label in ((0, "fit"), (1, "check")):
                qs = [q for q in s["pos"] if half(q["id"]) == h]
                r = quality(qs, mode, fitted, chosen)
                print(f"| {set_name} | {label} | {len(qs)} | {r['ndcg@10']:.4f} | {r['R@10']:.4f} | "
                      f"{r['R@10 no minimum']:.4f} | {r['R@10 no minimum'] - r['R@10']:.4f} |")
        print()
    print("## Answered with nothing (hybrid), minimum", f"{chosen:.2f}")
    print("| set | hand-written negatives | other sets' queries (check half) |")
    print("|---|---|---|")
    for set_name, s in sets.items():
        neg = s["neg"]
        cross = [q for q in s["cross"] if half(q["id"]) == 1]
        print(f"| {set_name} | {answered_nothing(neg, 'HYBRID', fitted, chosen)} of {len(neg)} | "
              f"{answered_nothing(cross, 'HYBRID', fitted, chosen)} of {len(cross)} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dumps", nargs="+", help="NAME=PATH of an `eval --dump-candidates` file")
    ap.add_argument("--max-cost", type=float, default=0.005, help="Recall@10 the minimum may cost on a fitting half")
    ap.add_argument("--answerable-from", metavar="RS", help="fit the relevant models only: keep the "
                    "answerable models of this file (src/search/relevance.rs) and choose the minimum with them")
    ap.add_argument("--shipped", metavar="RS", help="also measure the models compiled in from this file "
                    "(src/search/relevance.rs) on the same dumps, to compare with the refit")
    args = ap.parse_args()
    sets = {}
    for spec in args.dumps:
        name, path = spec.split("=", 1)
        qs = load(path)
        sets[name] = {
            "pos": [q for q in qs if not q["id"].startswith(("neg-", "xneg-"))],
            "cross": [q for q in qs if q["id"].startswith("xneg-")],
            "neg": [q for q in qs if q["id"].startswith("neg-")],
        }
    fit_pos = [q for s in sets.values() for q in s["pos"] if half(q["id"]) == 0]
    fit_cross = [q for s in sets.values() for q in s["cross"] if half(q["id"]) == 0]
    fitted = {}
    kept = shipped(args.answerable_from)[0] if args.answerable_from else None
    for name, model in MODELS.items():
        rel_w = fit_logistic(*relevant_rows(fit_pos, model))
        if kept:
            fitted[name] = (rel_w, kept[name][1])
            continue
        ans_w = fit_logistic(*answerable_rows(fit_pos, fit_cross, model))
        # Joint evidence depends on the weights that pick its candidate:
        # refit a few times on the candidate the last fit picks.
        for _ in range(3):
            ans_w = fit_logistic(*answerable_rows(fit_pos, fit_cross, model, ans_w))
        fitted[name] = (rel_w, ans_w)

    # The default minimum: the highest on a grid costing at most max_cost
    # Recall@10 on every set's fitting half (hybrid ranking).
    grid = [round(0.01 * i, 2) for i in range(1, 60)]
    chosen = 0.0
    for t in grid:
        costs = []
        for s in sets.values():
            fit = [q for q in s["pos"] if half(q["id"]) == 0]
            qual = quality(fit, "HYBRID", fitted, t)
            costs.append(qual["R@10 no minimum"] - qual["R@10"])
        if max(costs) <= args.max_cost:
            chosen = t
        else:
            break

    print("# Fitted by scripts/fit-relevance.py on the fitting half of:", ", ".join(sets))
    for name, model in MODELS.items():
        rel_w, ans_w = fitted[name]
        print(f"# {name}: answerable from best {model['answerable']}, relevant from {model['relevant']}")
        print(f"#   answerable weights {np.round(ans_w[:-1], 4).tolist()} bias {ans_w[-1]:.4f}")
        print(f"#   relevant   weights {np.round(rel_w[:-1], 4).tolist()} bias {rel_w[-1]:.4f}")
    print(f"# DEFAULT_MIN_SCORE = {chosen:.2f} (highest minimum costing <= {args.max_cost} Recall@10 on each fitting half)")
    print()
    report(sets, fitted, chosen)
    if args.shipped:
        models, minimum = shipped(args.shipped)
        print(f"# The shipped models ({args.shipped}), minimum {minimum:.2f}, on the same dumps")
        print()
        report(sets, models, minimum)
    return 0


if __name__ == "__main__":
    sys.exit(main())
