#!/usr/bin/env python3
"""Makes damaged and unknown-version sources from the real fixtures, for the
importer's error paths. Stdlib only.

Usage: python3 make-damaged.py FIXTURES_DIR
Writes FIXTURES_DIR/damaged/<case>/ and FIXTURES_DIR/damaged/expected.json:
{case: {"from": tool, "path": relative path to pass to import, "what": ...,
"expect": "error" | "warn-and-import" | "import"}}.
"""
import json
import shutil
import sqlite3
import sys
from pathlib import Path

fx = Path(sys.argv[1]).resolve()
out = fx / "damaged"
shutil.rmtree(out, ignore_errors=True)
out.mkdir(parents=True)
cases = {}


def case(name, tool, path, what, expect):
    cases[name] = {"from": tool, "path": f"{name}/{path}", "what": what, "expect": expect}


def copy(src, dst):
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


cm = fx / "claude-mem/.claude-mem/claude-mem.db"
# 1. claude-mem: truncated file (a copy cut at 8 KiB: header intact, pages missing)
d = out / "claude-mem-truncated/.claude-mem/claude-mem.db"
d.parent.mkdir(parents=True)
d.write_bytes(cm.read_bytes()[:8192])
case("claude-mem-truncated", "claude-mem", ".claude-mem/claude-mem.db",
     "SQLite file cut at 8 KiB (database disk image is malformed)", "error")
# 2. claude-mem: not SQLite at all
d = out / "claude-mem-not-sqlite/.claude-mem/claude-mem.db"
d.parent.mkdir(parents=True)
d.write_text("this is not a database\n")
case("claude-mem-not-sqlite", "claude-mem", ".claude-mem/claude-mem.db", "text file named claude-mem.db", "error")
# 3. claude-mem: a newer, unknown schema (schema_versions 999, an extra column)
d = out / "claude-mem-future/.claude-mem/claude-mem.db"
copy(cm, d)
with sqlite3.connect(d) as db:
    db.execute("INSERT INTO schema_versions(version, applied_at) VALUES (999, '2027-01-01T00:00:00.000Z')")
    db.execute("ALTER TABLE observations ADD COLUMN future_field TEXT")
case("claude-mem-future", "claude-mem", ".claude-mem/claude-mem.db",
     "max(schema_versions.version)=999 > 52 and an unknown column; known columns intact", "warn-and-import")
# 4. claude-mem: an old/foreign layout: no observations table
d = out / "claude-mem-no-observations/.claude-mem/claude-mem.db"
copy(cm, d)
with sqlite3.connect(d) as db:
    db.execute("DROP TABLE observations")
case("claude-mem-no-observations", "claude-mem", ".claude-mem/claude-mem.db",
     "observations table missing (unknown layout)", "error")
# 5. mempalace: chroma.sqlite3 without the mempalace_drawers collection
pal = fx / "mempalace/palace"
d = out / "mempalace-no-drawers/palace"
shutil.copytree(pal, d)
with sqlite3.connect(d / "chroma.sqlite3") as db:
    db.execute("UPDATE collections SET name = 'something_else' WHERE name = 'mempalace_drawers'")
case("mempalace-no-drawers", "mempalace", "palace", "chroma.sqlite3 has no mempalace_drawers collection", "error")
# 6. mempalace: palace dir without chroma.sqlite3
d = out / "mempalace-no-sqlite/palace"
shutil.copytree(pal, d)
(d / "chroma.sqlite3").unlink()
case("mempalace-no-sqlite", "mempalace", "palace", "HNSW dirs only, chroma.sqlite3 missing", "error")
# 7. basic-memory: a note without frontmatter, one not UTF-8, memory.db missing
bm = fx / "basic-memory/home"
d = out / "basic-memory-rough/home"
shutil.copytree(bm, d)
(d / ".basic-memory/memory.db").unlink()
proj = d / "notes/payments-api"
(proj / "loose").mkdir()
(proj / "loose/No frontmatter.md").write_text("# No frontmatter\n\n- [idea] a note typed by hand #manual\n", encoding="utf-8")
(proj / "loose/latin1.md").write_bytes("---\ntitle: Latin-1\n---\nZ\xfcrich in Latin-1\n".encode("latin-1"))
case("basic-memory-rough", "basic-memory", "home",
     "memory.db missing (files are the truth); one note without frontmatter (title = file stem); one note in Latin-1 (not UTF-8)",
     "warn-and-import")
# 8. openclaw: not UTF-8 daily note, and an unexpected name under memory/
oc = fx / "openclaw/workspace"
d = out / "openclaw-rough/workspace"
shutil.copytree(oc, d)
(d / "memory/2026-11-22.md").write_bytes(b"# 2026-11-22\n\n- caf\xe9 au lait \xff\xfe\n")
(d / "memory/notes-misc.md").write_text("# misc\n\n- a note outside the date pattern\n", encoding="utf-8")
case("openclaw-rough", "openclaw", "workspace",
     "memory/2026-11-22.md is not UTF-8; memory/notes-misc.md does not match the date patterns", "warn-and-import")
# 9. mem0: invalid JSON, and JSON of an unknown shape
d = out / "mem0-bad-json"
d.mkdir()
(d / "export.json").write_text('[{"id": "x", "memory": "cut here', encoding="utf-8")
case("mem0-bad-json", "mem0", "export.json", "truncated JSON", "error")
d = out / "mem0-unknown-shape"
d.mkdir()
(d / "export.json").write_text(json.dumps({"memories_v9": [{"uuid": "1", "body": "?"}]}), encoding="utf-8")
case("mem0-unknown-shape", "mem0", "export.json", "an object without results/array of memories", "error")

(out / "expected.json").write_text(json.dumps(cases, indent=2) + "\n", encoding="utf-8")
print(f"make-damaged: {out} ({len(cases)} cases)")
