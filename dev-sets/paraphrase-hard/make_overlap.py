#!/usr/bin/env python3
"""Lexical overlap of each question with its answer session.

overlap = share of the question's content words (lowercased [a-z0-9]+ tokens, minus a
basic English stopword list and a list of very generic words) that occur anywhere in the
answer session's user prompts and assistant text blocks (tool calls/results not counted).

Usage: python3 make_overlap.py            # print overlaps, median, max
       python3 make_overlap.py --write    # also store them in queries.jsonl metadata
"""
import gzip, json, os, re, statistics, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEV_LIST = os.path.join(HERE, '..', 'agent-questions', 'transcripts.txt')

STOP = set("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from
further had has have having he her here hers him his how i i'd i'm if in into is it it's its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them then there these they this those
through to too under until up very was we we'd were what when where which while who whom why will
with would you your yours yourself ve ll re s t d m don didn doesn isn wasn weren won wouldn couldn
shouldn aren hasn haven let lets let's us yeah ok okay oh hey pls please""".split())
GENERIC = set("""thing things stuff way ways time times thought think remember remind recall
know knew get got getting make made making use used using want wanted need needed one two
ever back again still even really right actually also just something someone somebody anything
again last week day month earlier ago end ended ending happen happened happens see saw look
looked work worked working went go going come came new old kind sort bit lot like good bad
tell told said say ask asked help fine sure which whatever""".split())

def tokens(text):
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", ""))

def content_words(text):
    return [w for w in tokens(text) if w not in STOP and w not in GENERIC and len(w) > 1]

def session_files():
    out = {}
    for l in open(DEV_LIST):
        l = l.strip()
        if not l or l.startswith('#'):
            continue
        p = os.path.normpath(os.path.join(os.path.dirname(DEV_LIST), l))
        out[os.path.basename(p).replace('.jsonl.gz', '').replace('.jsonl', '')[-36:]] = p
    return out

def session_vocab(path):
    op = gzip.open if path.endswith('.gz') else open
    vocab = set()
    with op(path, 'rt', errors='replace') as f:
        for line in f:
            try:
                d = json.loads(line)
            except Exception:
                continue
            if d.get('type') not in ('user', 'assistant'):
                continue
            c = (d.get('message') or {}).get('content')
            if isinstance(c, str):
                txt = c
            elif isinstance(c, list):
                txt = '\n'.join(b.get('text', '') for b in c if isinstance(b, dict) and b.get('type') == 'text')
            else:
                continue
            vocab.update(tokens(txt))
    return vocab

def overlap(text, vocab):
    cw = content_words(text)
    if not cw:
        return 0.0
    return round(sum(1 for w in cw if w in vocab) / len(cw), 2)

def main():
    qpath = os.path.join(HERE, 'queries.jsonl')
    queries = [json.loads(l) for l in open(qpath)]
    rel = {}
    for l in list(open(os.path.join(HERE, 'qrels', 'sessions.tsv')))[1:]:
        q, s, _ = l.rstrip('\n').split('\t')
        rel[q] = s
    files = session_files()
    vals = []
    for q in queries:
        vocab = session_vocab(files[rel[q['_id']]])
        ov = overlap(q['text'], vocab)
        shared = sorted(set(w for w in content_words(q['text']) if w in vocab))
        q['metadata']['overlap'] = ov
        vals.append(ov)
        print(f"{q['_id']}\t{ov:.2f}\t{' '.join(shared)}")
    print(f"n={len(vals)} median={statistics.median(vals):.2f} max={max(vals):.2f} "
          f"mean={statistics.mean(vals):.2f} over0.5={sum(v > 0.5 for v in vals)}")
    if '--write' in sys.argv:
        with open(qpath, 'w') as f:
            for q in queries:
                f.write(json.dumps(q, ensure_ascii=False) + '\n')

if __name__ == '__main__':
    main()
