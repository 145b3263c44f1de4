#!/usr/bin/env python3
"""The import graph between the top-level modules of the crates, and its cycles.

Reads every `src/**/*.rs` file, maps it to its top-level module (`src/store/
tier.rs` → `store`, `src/upkeep.rs` → `upkeep`), and collects every
`crate::<module>` path it names (in `use` lines and in code). The binary's
own modules (the `mod x;` lines of `src/main.rs`: cli, eval, bench) also
name the library as `knowledge_db::<module>`; those count as edges too, so
the one graph covers both crates. An edge A → B means a file of A names
something of B. Prints the edges with how many files
make each, then every pair of modules that name each other and every larger
cycle (strongly connected components). Exit status 1 when there is a cycle,
so a test or CI can hold the layering once it is one-way.

Usage: scripts/module-graph.py [--src src] [--json | --check]
(--check prints only the pairs and cycles; `./test.sh` runs it.)
"""
import argparse, collections, json, os, re, sys

PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)")
LIBRARY_PATH = re.compile(r"\bknowledge_db::([a-z_][a-z0-9_]*)")
BINARY_MODULE = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def binary_modules(src):
    """The modules `src/main.rs` declares: they belong to the binary crate."""
    try:
        return set(BINARY_MODULE.findall(open(os.path.join(src, "main.rs"), encoding="utf-8").read()))
    except OSError:
        return set()
# `use crate::{a::x, b::y}` names several modules at once.
GROUP = re.compile(r"\bcrate::\{([^}]*)\}", re.S)


def module_of(src, path):
    rel = os.path.relpath(path, src).split(os.sep)
    head = rel[0]
    return head[:-3] if head.endswith(".rs") else head


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def edges(src):
    count = collections.Counter()
    binary = binary_modules(src)
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            here = module_of(src, path)
            if here in ("lib", "main"):
                continue
            text = strip_comments(open(path, encoding="utf-8").read())
            named = set(PATH.findall(text))
            if here in binary:
                named.update(LIBRARY_PATH.findall(text))
            for group in GROUP.findall(text):
                named.update(m.group(1) for m in re.finditer(r"(?:^|,)\s*([a-z_][a-z0-9_]*)", group))
            for target in named - {here}:
                count[(here, target)] += 1
    return count


def components(nodes, adjacency):
    """Tarjan's strongly connected components."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in adjacency[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", default=os.path.join(os.path.dirname(__file__), "..", "src"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true", help="print only the pairs and cycles")
    args = ap.parse_args()
    count = edges(args.src)
    nodes = {a for a, _ in count} | {b for _, b in count}
    # `crate::foo` where foo is not a module (a re-exported item) is not an edge.
    modules = {module_of(args.src, os.path.join(args.src, n)) for n in os.listdir(args.src)
               if n.endswith(".rs") or os.path.isdir(os.path.join(args.src, n))}
    count = collections.Counter({e: n for e, n in count.items() if e[1] in modules})
    nodes &= modules
    adjacency = collections.defaultdict(list)
    for a, b in count:
        adjacency[a].append(b)
    pairs = sorted({tuple(sorted(e)) for e in count if (e[1], e[0]) in count})
    cycles = components(nodes, adjacency)
    if args.json:
        print(json.dumps({"edges": [[a, b, n] for (a, b), n in sorted(count.items())],
                          "mutual_pairs": pairs, "cycles": cycles}, indent=1))
    else:
        if not args.check:
            for (a, b), n in sorted(count.items()):
                print(f"{a} -> {b}  ({n} file{'s' if n > 1 else ''})")
            print()
        print(f"{len(pairs)} pairs of modules that name each other:")
        for a, b in pairs:
            print(f"  {a} <-> {b}")
        print(f"{len(cycles)} cycles (strongly connected sets of modules):")
        for c in cycles:
            print("  " + ", ".join(c))
    sys.exit(1 if cycles else 0)


if __name__ == "__main__":
    main()
