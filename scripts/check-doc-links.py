#!/usr/bin/env python3
"""Checks the links of README.md, DESIGN.md and docs/*.md: every relative
link names a file that exists and every #anchor a heading of its file (as
GitHub derives anchors). Exits 1 listing the broken ones. Run by test.sh."""
import glob, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def slug(heading):
    text = heading.strip("#").strip().lower()
    text = re.sub(r"[^a-z0-9 _-]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, counts = set(), {}
    in_code = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        s = slug(line)
        n = counts.get(s, 0)
        counts[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    return found


def main():
    files = [os.path.join(ROOT, f) for f in ("README.md", "DESIGN.md")]
    files += glob.glob(os.path.join(ROOT, "docs", "*.md"))
    broken = []
    for path in files:
        text = open(path, encoding="utf-8").read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(linked):
                broken.append(f"{os.path.relpath(path, ROOT)}: {target} (no such file)")
            elif anchor and linked.endswith(".md") and anchor not in anchors(linked):
                broken.append(f"{os.path.relpath(path, ROOT)}: {target} (no such heading)")
    for b in broken:
        print(b)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
