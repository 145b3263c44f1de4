#!/usr/bin/env python3
"""Makes a basic-memory fixture with basic-memory's own code, offline.

Usage: BASIC_MEMORY_VENV_PYTHON make-basic-memory.py BASIC_MEMORY_BIN OUT_DIR

HOME is a temporary directory laid out as the real one: OUT_DIR/home/ holds
~/.basic-memory/ (config.json and the SQLite index memory.db), and the two
projects. note folders are OUT_DIR/home/notes/<project>/. Projects are
made with `basic-memory project add`; notes are written by basic-memory's MCP
tool write_note (the function `basic-memory tool write-note` calls), all in one
process because each CLI start takes ~12 s. basic-memory 0.24.1 from PyPI
does not bring fastembed, so it reports "semantic search is unavailable on
this host" and indexes keywords only; nothing is downloaded. The markdown
files and the SQLite index are what an import reads.
"""
import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

bm_bin, out = sys.argv[1], Path(sys.argv[2]).resolve()
shutil.rmtree(out, ignore_errors=True)
home = out / "home"
home.mkdir(parents=True)
os.environ.update(HOME=str(home), TZ="UTC", HF_HUB_OFFLINE="1")
env = dict(os.environ)

PROJECTS = {"payments-api": home / "notes" / "payments-api",
            "notes-web": home / "notes" / "notes-web"}
for name, path in PROJECTS.items():
    path.mkdir(parents=True)
    r = subprocess.run([bm_bin, "project", "add", name, str(path)], env=env,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"make-basic-memory: project add {name} failed:\n{r.stdout}\n{r.stderr}")

NOTES = [
    ("payments-api", "decisions", "Money as integer cents", ["decision", "ledger"], "decision", """# Money as integer cents

All amounts in payments-api are BIGINT cents. The October rounding bug came from
f64 arithmetic in src/ledger/amount.rs.

## Observations
- [decision] Amounts are stored as BIGINT cents, never floats #ledger #money
- [bug] f64 arithmetic caused the October rounding bug (src/ledger/amount.rs) #ledger
- [file] src/ledger/amount.rs

## Relations
- motivated_by [[October rounding bug]]
- part_of [[Ledger design]]
"""),
    ("payments-api", "bugs", "Ledger double posting fix", ["bugfix", "ledger"], "note", """# Ledger double posting fix

A retry that fired after COMMIT posted the same ledger entry twice.

## Observations
- [bug] Retries after COMMIT inserted duplicate ledger rows #ledger
- [fix] Idempotency key (payment_id, leg) with a UNIQUE index, migrations/0043_idempotency.sql #postgres
- [test] tests/ledger_retry.rs reproduces the double posting (retry after commit)

## Relations
- implements [[Money as integer cents]]
- relates_to [[Staging migration order]]
"""),
    ("payments-api", "bugs", "Staging migration order", ["bugfix", "deploy"], "note", """# Staging migration order

The staging deploy failed with `relation "ledger_entries" does not exist`.

## Observations
- [bug] migrate ran before pg_advisory_unlock, so 0042_ledger_entries.sql was skipped #deploy
- [fix] deploy/migrate.sh migrates after the unlock #deploy
- [gotcha] Never back up with pg_dump "postgresql://admin:password=hunter2xyz@db.internal/payments" on the command line; use ~/.pgpass #security

## Relations
- fixed_in [[deploy/migrate.sh]]
"""),
    ("payments-api", "security", "Leaked AWS key rotation", ["security"], "note", """# Leaked AWS key rotation

tools/upload.py had a hard-coded key AKIAQ7RZ3XKLMN4PWT2V. It was revoked on 2026-11-14.

## Observations
- [incident] AWS key AKIAQ7RZ3XKLMN4PWT2V committed in tools/upload.py, revoked #security #aws
- [fix] tools/upload.py reads credentials from the CI secret store #ci

## Relations
- relates_to [[Staging migration order]]
"""),
    ("notes-web", "performance", "Search latency regression", ["performance", "postgres"], "note", """# Search latency regression

p95 of /search went from 120 ms to 870 ms after migration 0051.

## Observations
- [cause] Migration 0051 recreated notes and dropped the trigram index notes_title_trgm #postgres
- [fix] migrations/0052_notes_title_trgm.sql re-adds the GIN trigram index; p95 back to 110 ms #performance
- [test] tests/search_index.rs fails when the index is missing

## Relations
- caused_by [[Migration 0051 notes rebuild]]
"""),
    ("notes-web", "ops", "Tableau de bord Zürich", ["ops", "i18n"], "note", """# Tableau de bord Zürich

Die Grafana-Übersicht für Zürich war leer.

## Observations
- [cause] Le tableau de bord filtrait sur dc=zürich, le scraper envoyait dc=zurich #monitoring
- [fix] monitoring/prometheus.yml utilise partout l'ASCII zurich #monitoring
- [lesson] Label values must match byte for byte (ü ≠ u) #i18n

## Relations
- relates_to [[Search latency regression]]
"""),
]


async def write_all():
    from basic_memory.mcp.tools import write_note
    results = []
    for project, folder, title, tags, note_type, content in NOTES:
        res = await write_note(title=title, content=content, directory=folder, project=project,
                               tags=tags, note_type=note_type, output_format="json")
        results.append(res if isinstance(res, dict) else json.loads(res))
    return results


from basic_memory.cli.commands.routing import force_routing  # noqa: E402
from basic_memory.cli.commands.command_utils import run_with_cleanup  # noqa: E402

# run_with_cleanup is what the CLI uses: it drains the queued markdown writes
# (0.24 accepts a note into memory.db's note_content first and materializes
# the file off the request path) before the event loop closes.
with force_routing(local=True, cloud=False):
    results = run_with_cleanup(write_all())

# Counts from basic-memory's own index (memory.db) and from the files.
db = sqlite3.connect(home / ".basic-memory" / "memory.db")
q = lambda sql: dict(db.execute(sql).fetchall())  # noqa: E731
counts = {
    "notes": q("SELECT p.name, COUNT(*) FROM entity e JOIN project p ON p.id=e.project_id GROUP BY p.name"),
    "observations": q("SELECT p.name, COUNT(*) FROM observation o JOIN project p ON p.id=o.project_id GROUP BY p.name"),
    "relations": q("SELECT p.name, COUNT(*) FROM relation r JOIN project p ON p.id=r.project_id GROUP BY p.name"),
    "markdown_files": {n: len(list(p.rglob("*.md"))) for n, p in PROJECTS.items()},
}
pending = db.execute("SELECT COUNT(*) FROM note_content WHERE file_write_status != 'synced'").fetchone()[0]
if pending:
    sys.exit(f"make-basic-memory: {pending} notes were not written to markdown files")
alembic = db.execute("SELECT version_num FROM alembic_version").fetchone()[0]
db.close()
by_title = {r["title"]: r for r in results}
for r in results:
    if r.get("action") not in ("created", "updated"):
        sys.exit(f"make-basic-memory: write_note did not create a note: {r}")
version = subprocess.run([bm_bin, "--version"], env=env, capture_output=True, text=True).stdout.strip()
expected = {
    "tool": "basic-memory", "version": version, "generated_by": "tests/import/make-basic-memory.py",
    "home": "home", "config": "home/.basic-memory/config.json", "index": "home/.basic-memory/memory.db",
    "alembic_version": alembic,
    "projects": {n: str(p.relative_to(out)) for n, p in PROJECTS.items()},
    "counts": counts,
    "planted_secrets": ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"],
    "queries": [
        {"question": "why were ledger entries posted twice", "expected": {k: by_title["Ledger double posting fix"][k] for k in ("title", "permalink", "file_path")}},
        {"question": "how are money amounts stored", "expected": {k: by_title["Money as integer cents"][k] for k in ("title", "permalink", "file_path")}},
        {"question": "Zürich dashboard empty", "expected": {k: by_title["Tableau de bord Zürich"][k] for k in ("title", "permalink", "file_path")}},
    ],
}
# the log would only hold this run's absolute paths
(home / ".basic-memory" / "basic-memory.log").unlink(missing_ok=True)
(out / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
print(f"make-basic-memory: {out} {json.dumps(counts)}")
