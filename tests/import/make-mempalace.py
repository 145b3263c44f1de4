#!/usr/bin/env python3
"""Makes a MemPalace palace fixture with MemPalace's own CLI (`mempalace init`,
`mempalace mine` in projects mode and in convos mode), offline.

Usage: PYTHON_OF_MEMPALACE_VENV make-mempalace.py MEMPALACE_BIN MINILM_DIR OUT_DIR

MemPalace embeds with chromadb's ONNXMiniLM_L6_V2, which downloads
onnx.tar.gz into ~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/ unless the
extracted files are already in .../onnx/. This script runs MemPalace with HOME
set to a temporary directory whose .cache/chroma/.../onnx/ holds links to the
project's local all-MiniLM-L6-v2 (scripts/setup-model.sh) and a vocab.txt
written from its tokenizer.json (chromadb only checks that vocab.txt exists;
it tokenizes with tokenizer.json). Nothing is downloaded.

Writes OUT_DIR/palace/ (the palace: chroma.sqlite3 + HNSW segment dirs +
mempalace_embedder.json + .mempalace/origin.json), OUT_DIR/sources/ (what was
mined; drawers' source_file points there), OUT_DIR/status.txt (`mempalace
status`) and OUT_DIR/expected.json.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

mp_bin, minilm, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
out = out.resolve()
shutil.rmtree(out, ignore_errors=True)
out.mkdir(parents=True)
home = Path(tempfile.mkdtemp(prefix="mp-home-"))
onnx = home / ".cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx"
onnx.mkdir(parents=True)
for f in ["config.json", "model.onnx", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json"]:
    (onnx / f).symlink_to(minilm / f)
vocab = json.loads((minilm / "tokenizer.json").read_text())["model"]["vocab"]
(onnx / "vocab.txt").write_text("\n".join(k for k, _ in sorted(vocab.items(), key=lambda kv: kv[1])) + "\n")

env = dict(os.environ, HOME=str(home), TZ="UTC", PYTHONIOENCODING="utf-8",
           HF_HUB_OFFLINE="1", ANONYMIZED_TELEMETRY="False")
for k in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]:
    env.pop(k, None)
palace = out / "palace"
src = out / "sources"

# ---- a small project (wing "payments-api") ----
proj = src / "payments-api"
files = {
    "README.md": """# payments-api

Service that posts ledger entries for card payments.

## Decisions
- Amounts are integer cents (BIGINT). The October rounding bug came from f64 arithmetic
  in src/ledger/amount.rs; all floats were removed in PR #212.
- Staging migrations run after `pg_advisory_unlock` (deploy/migrate.sh), otherwise
  migration 0042_ledger_entries.sql is skipped and the deploy fails with
  'relation "ledger_entries" does not exist'.
""",
    "src/ledger/posting.rs": """// Ledger posting. Entries are append-only.
// Bug fixed 2026-11-12: a retry fired after COMMIT posted the same entry twice.
// Fix: idempotency key (payment_id, leg) with a UNIQUE index, see migrations/0043.
pub fn post(entry: &Entry, tx: &mut Transaction) -> Result<PostingId> {
    tx.insert_ignore_duplicate(entry.idempotency_key(), entry)
}
""",
    "docs/runbook.md": """# Runbook: Zürich cluster

Die Grafana-Übersicht für Zürich war leer: the Prometheus label was `dc=zürich`
in the dashboard and `dc=zurich` on the scraper. Both now use ASCII `zurich`
(monitoring/prometheus.yml).

Backups: scripts/backup.sh reads PGPASSFILE. Do not run
pg_dump "postgresql://admin:password=hunter2xyz@db.internal/payments" by hand.
""",
    "deploy/deploy.sh": """#!/bin/sh
# Deploys payments-api. An old key leaked in this file once and was revoked:
# export AWS_ACCESS_KEY_ID=AKIAQ7RZ3XKLMN4PWT2V
set -eu
./deploy/migrate.sh && kubectl rollout restart deploy/payments-api
""",
}
for rel, text in files.items():
    p = proj / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (1794700800, 1794700800))  # 2026-11-15T00:00:00Z: drawers' content_date

# ---- a conversation (wing "convos"), plain text with '>' user turns ----
convo_dir = src / "convos"
convo_dir.mkdir(parents=True)
convo = convo_dir / "2026-11-18-search-latency.txt"
convo.write_text("""> Why is /search so slow since Monday? p95 went from 120 ms to 870 ms.

The trigram index on notes.title was dropped by migration 0051 (it recreated the
table). Re-adding `CREATE INDEX notes_title_trgm ON notes USING gin (title gin_trgm_ops)`
brings p95 back to 110 ms.

> Add it back in a new migration and note it in the changelog.

Done: migrations/0052_notes_title_trgm.sql and CHANGELOG.md. I also added a test
that fails when the index is missing (tests/search_index.rs).

> Merci ! Et pour l'équipe de Zürich, le tableau de bord est réparé ?

Oui : le label Prometheus est maintenant `dc=zurich` partout.
""", encoding="utf-8")
os.utime(convo, (1795046400, 1795046400))  # 2026-11-19T00:00:00Z


def run(*args):
    r = subprocess.run([mp_bin, "--palace", str(palace), *args], env=env, cwd=str(out),
                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(f"make-mempalace: mempalace {' '.join(args)} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}\n")
        sys.exit(1)
    return r.stdout


run("init", "--yes", "--no-llm", str(proj))
run("mine", str(proj), "--wing", "payments-api", "--agent", "fixture")
run("mine", str(convo_dir), "--mode", "convos", "--wing", "convos", "--agent", "fixture")
status = run("status")
(out / "status.txt").write_text(status, encoding="utf-8")

# Counts read back through chromadb, MemPalace's own storage library.
import chromadb  # noqa: E402  (the mempalace venv's)

client = chromadb.PersistentClient(path=str(palace))
counts = {}
for name in ["mempalace_drawers", "mempalace_closets"]:
    col = client.get_collection(name)
    got = col.get(include=["metadatas", "documents"])
    per = Counter(f"{m.get('wing')}/{m.get('room')}" for m in got["metadatas"])
    counts[name] = {"total": len(got["ids"]), "by_wing_room": dict(sorted(per.items()))}
    if name == "mempalace_drawers":
        drawers = sorted(zip(got["ids"], got["documents"], got["metadatas"]), key=lambda t: t[0])


def drawer_for(needle):
    for i, d, m in drawers:
        if needle in d:
            return {"id": i, "wing": m.get("wing"), "room": m.get("room"), "source_file": m.get("source_file")}
    raise SystemExit(f"make-mempalace: no drawer contains {needle!r}")


for secret in ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"]:
    drawer_for(secret)  # the planted secrets must be in the palace
version = subprocess.run([mp_bin, "--version"], capture_output=True, text=True, env=env).stdout.strip()
expected = {
    "tool": "mempalace",
    "version": version,
    "generated_by": "tests/import/make-mempalace.py",
    "palace": "palace",
    "collections": counts,
    "drawers": counts["mempalace_drawers"]["total"],
    "planted_secrets": ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"],
    "queries": [
        {"question": "why did ledger entries get posted twice", "expected": drawer_for("posted the same entry twice")},
        {"question": "search p95 latency regression trigram index", "expected": drawer_for("trigram index")},
        {"question": "why was the Zürich Grafana dashboard empty", "expected": drawer_for("Grafana-Übersicht")},
    ],
}
(out / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
shutil.rmtree(home, ignore_errors=True)
print(f"make-mempalace: {out} ({expected['drawers']} drawers)")
