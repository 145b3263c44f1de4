#!/usr/bin/env python3
"""Where `knowledge-db pack` lands on real transcripts: tokens after packing as a
share of the budget, for the N largest transcripts that exceed it.

    benches/pack-landing.py [DIR] [N] [--budgets 20000,40000] [--bin target/release/knowledge-db]

For each of the N largest transcripts in DIR (by decompressed size) and each
budget, it runs `pack --transcript F --budget B --dry-run --json` (no store is
written) and prints the tokens before and after, the landing share, what was
dropped, truncated and cut, and the time in process; then min / median / max of
the share per budget. Give --bin an older build to compare.
"""
import argparse, gzip, json, os, statistics, subprocess

p = argparse.ArgumentParser()
p.add_argument("dir", nargs="?", default="../shared/eval/transcripts/claude-code-entire-cli")
p.add_argument("n", nargs="?", type=int, default=20)
p.add_argument("--budgets", default="20000,40000")
p.add_argument("--bin", default="target/release/knowledge-db")
a = p.parse_args()

def size(f):
    opener = gzip.open if f.endswith(".gz") else open
    with opener(f, "rb") as fh:
        return len(fh.read())

files = [os.path.join(a.dir, f) for f in os.listdir(a.dir) if f.endswith((".jsonl", ".jsonl.gz"))]
files = sorted(files, key=size, reverse=True)[: a.n]
for budget in (int(b) for b in a.budgets.split(",")):
    shares, seconds = [], []
    print(f"budget {budget}")
    for f in files:
        out = subprocess.run([a.bin, "--store", "/nonexistent/knowledge-db-pack-landing", "pack", "--transcript", f,
                              "--budget", str(budget), "--dry-run", "--json"], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"  {os.path.basename(f)[:40]:40} error: {out.stderr.strip()}")
            continue
        d = json.loads(out.stdout)
        if d["tokens_before"] <= budget:
            continue
        share = d["tokens_after"] / budget
        shares.append(share)
        seconds.append(d["pack_seconds"])
        print(f"  {os.path.basename(f)[:40]:40} {d['tokens_before']:7} -> {d['tokens_after']:6} ({share:.3f}); "
              f"dropped {d['dropped_count']}, outputs truncated {d.get('outputs_truncated', 0)}, "
              f"cut {len(d.get('cut_ids', []))}; {d['pack_seconds'] * 1000:.1f} ms")
    if shares:
        print(f"  {len(shares)} over the budget: share min {min(shares):.3f}, median {statistics.median(shares):.3f}, "
              f"max {max(shares):.3f}; {min(seconds) * 1000:.0f}-{max(seconds) * 1000:.0f} ms in process")
