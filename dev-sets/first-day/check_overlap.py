#!/usr/bin/env python3
"""Checks the first-day pairs fd-16 ... (and fd-off-16 ...) and prints their word overlap.

For each pair: the session file exists, every evidence `<sessionId>:<uuid>` is a line of it,
and the prompt's overlap with the session, computed with ../paraphrase-hard/make_overlap.py
(lowercased [a-z0-9]+ tokens minus stopwords and generic words; share found in the
session's user prompts and assistant text blocks). A second, stricter figure counts the
whole user/assistant content (tool calls, tool results) and the cwd. Also prints the
prompt's content words the session shares and those it never uses.

Session paths are relative to this folder, as in pairs.jsonl; the real transcripts live in
/work/shared (../../../shared from /work/main/dev-sets/first-day). From a worktree elsewhere
pass --shared /work/shared.

Usage: python3 check_overlap.py [--all] [--shared DIR]
"""
import gzip, json, os, re, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'paraphrase-hard'))
import make_overlap as mo  # noqa: E402


def resolve(session, shared):
    p = os.path.normpath(os.path.join(HERE, session))
    if not os.path.exists(p) and shared and '/shared/' in session:
        p = os.path.join(shared, session.split('/shared/', 1)[1])
    return p


def read(path):
    op = gzip.open if path.endswith('.gz') else open
    uuids, full = set(), set()
    with op(path, 'rt', errors='replace') as f:
        for line in f:
            try:
                d = json.loads(line)
            except Exception:
                continue
            if d.get('uuid'):
                uuids.add(f"{d.get('sessionId')}:{d['uuid']}")
            if d.get('type') in ('user', 'assistant'):
                full.update(mo.tokens(json.dumps((d.get('message') or {}).get('content'), ensure_ascii=False)))
                full.update(mo.tokens(d.get('cwd') or ''))
    return uuids, full


def main():
    shared = None
    if '--shared' in sys.argv:
        shared = sys.argv[sys.argv.index('--shared') + 1]
    rows = [json.loads(l) for l in open(os.path.join(HERE, 'pairs.jsonl'))]
    if '--all' not in sys.argv:
        rows = [r for r in rows if int(r['_id'].split('-')[-1]) >= 16]
    vals = {'on': [], 'off': []}
    bad = 0
    for r in rows:
        p = resolve(r['session'], shared)
        if not os.path.exists(p):
            print(f"{r['_id']}: MISSING {p}")
            bad += 1
            continue
        uuids, full = read(p)
        for e in r.get('evidence', []):
            if e not in uuids:
                print(f"{r['_id']}: evidence {e} not in session")
                bad += 1
        text = mo.session_vocab(p)
        cw = mo.content_words(r['prompt'])
        ov, ovf = mo.overlap(r['prompt'], text), mo.overlap(r['prompt'], full)
        shared_w = sorted(set(w for w in cw if w in full))
        new_w = sorted(set(w for w in cw if w not in full))
        kind = 'off' if 'off' in r['_id'] else 'on'
        vals[kind].append(ov)
        print(f"{r['_id']:10s} {r['part']:5s} text={ov:.2f} full={ovf:.2f} words={len(r['prompt'].split()):2d} "
              f"shared=[{' '.join(shared_w)}] never-used=[{' '.join(new_w)}]")
    for k, v in vals.items():
        if v:
            print(f"{k}: n={len(v)} median={statistics.median(v):.2f} mean={statistics.mean(v):.2f} max={max(v):.2f}")
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
