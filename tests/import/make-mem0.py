#!/usr/bin/env python3
"""Makes a mem0 (OSS `mem0ai`) fixture with mem0's own Memory class, offline.

Usage: MEM0_VENV_PYTHON make-mem0.py OUT_DIR

- infer=False: messages are stored as memories verbatim, no LLM call (the default
  OpenAI LLM object is built with a dummy key and never used).
- Embedder: mem0 has no offline embedder without torch/fastembed downloads, so
  this script swaps EmbedderFactory.create for a small deterministic hashed
  bag-of-words embedder (384 dims). The importer reads text and metadata, not
  vectors; everything else (ids, hashes, payloads, history) is mem0's own code.
- Vector store: mem0's default, Qdrant in local mode (qdrant-client, no server),
  at OUT_DIR/qdrant/ (mem0's default path is /tmp/qdrant).
- History: mem0's SQLite history at OUT_DIR/.mem0/history.db (MEM0_DIR; default
  ~/.mem0/history.db).
Writes OUT_DIR/get_all.json ({user_id: get_all(...)} as mem0 returns it),
OUT_DIR/export.json (the flat list of memories, mem0's platform export
shape), OUT_DIR/expected.json.
"""
import hashlib
import json
import math
import os
import re
import shutil
import sqlite3
import sys
from pathlib import Path

out = Path(sys.argv[1]).resolve()
shutil.rmtree(out, ignore_errors=True)
out.mkdir(parents=True)
os.environ.update(MEM0_DIR=str(out / ".mem0"), MEM0_TELEMETRY="False", TZ="UTC",
                  OPENAI_API_KEY="sk-offline-unused")
import time  # noqa: E402
time.tzset()

from mem0 import Memory  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402
import mem0.utils.factory as factory  # noqa: E402
import importlib.metadata as md  # noqa: E402

DIMS = 384


class HashedBowEmbedding(EmbeddingBase):
    """Deterministic offline stand-in for an embedding model."""

    def __init__(self, config=None):
        super().__init__(config)

    def embed(self, text, memory_action=None):
        v = [0.0] * DIMS
        for w in re.findall(r"\w+", text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % DIMS] += 1.0 if (h >> 32) & 1 else -1.0
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]


factory.EmbedderFactory.create = classmethod(lambda cls, provider, config, vector_config: HashedBowEmbedding())

memory = Memory.from_config({
    "vector_store": {"provider": "qdrant", "config": {
        "collection_name": "mem0", "path": str(out / "qdrant"), "on_disk": True, "embedding_model_dims": DIMS}},
    "embedder": {"provider": "openai", "config": {"embedding_dims": DIMS, "api_key": "sk-offline-unused"}},
    "history_db_path": str(out / ".mem0" / "history.db"),
})

MEMORIES = [
    ("alice", "claude-code", "payments-api uses integer cents (BIGINT) for all money amounts; floats caused the October rounding bug.", {"project": "payments-api", "category": "decision"}),
    ("alice", "claude-code", "Staging migrations must run after pg_advisory_unlock in deploy/migrate.sh, otherwise 0042_ledger_entries.sql is skipped.", {"project": "payments-api", "category": "bugfix", "files": ["deploy/migrate.sh"]}),
    ("alice", "claude-code", "Ledger double posting was fixed with an idempotency key (payment_id, leg) and a UNIQUE index (migrations/0043_idempotency.sql).", {"project": "payments-api", "category": "bugfix"}),
    ("alice", None, "Alice prefers reviewing diffs with `git diff --stat` first, then file by file.", {"category": "preference"}),
    ("alice", "claude-code", "The leaked AWS key AKIAQ7RZ3XKLMN4PWT2V in tools/upload.py was revoked; CI now injects credentials.", {"project": "payments-api", "category": "security"}),
    ("alice", None, "Never run pg_dump \"postgresql://admin:password=hunter2xyz@db.internal/payments\" by hand; scripts/backup.sh reads PGPASSFILE.", {"project": "payments-api", "category": "ops"}),
    ("bob", "codex", "notes-web /search p95 regressed to 870 ms because migration 0051 dropped the trigram index notes_title_trgm; 0052 re-adds it.", {"project": "notes-web", "category": "bugfix"}),
    ("bob", "codex", "Die Grafana-Übersicht für Zürich war leer: Prometheus label dc=zürich vs dc=zurich; normalised to ASCII.", {"project": "notes-web", "category": "ops"}),
    ("bob", None, "Bob écrit les messages de commit en français, à l'impératif.", {"category": "preference"}),
    ("bob", "codex", "notes-web deploys from the release/* branches only; main is never deployed directly.", {"project": "notes-web", "category": "decision"}),
]
added = []
for user, agent, text, meta in MEMORIES:
    kw = {"user_id": user, "metadata": meta, "infer": False}
    if agent:
        kw["agent_id"] = agent
    res = memory.add([{"role": "user", "content": text}], **kw)
    added.extend(res["results"])

# One update and one delete, so history.db shows every event kind.
upd = next(r for r in added if "git diff --stat" in r["memory"])
memory.update(upd["id"], "Alice prefers reviewing diffs with `git diff --stat` first, then `git diff -w` file by file.")
tmp = memory.add([{"role": "user", "content": "Temporary note: the staging DB is read-only until 2026-11-30."}],
                 user_id="alice", metadata={"project": "payments-api"}, infer=False)["results"][0]
memory.delete(tmp["id"])

get_all = {u: memory.get_all(filters={"user_id": u}, top_k=1000) for u in ["alice", "bob"]}
(out / "get_all.json").write_text(json.dumps(get_all, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
flat = [m for u in ["alice", "bob"] for m in get_all[u]["results"]]
(out / "export.json").write_text(json.dumps(flat, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
hist = {}
for m in flat:
    hist[m["id"]] = [dict(h) if not isinstance(h, dict) else h for h in memory.history(m["id"])]
(out / "history.json").write_text(json.dumps(hist, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def find(needle):
    m = next(m for m in flat if needle in m["memory"])
    return {"id": m["id"], "memory": m["memory"], "user_id": m.get("user_id")}


db = sqlite3.connect(out / ".mem0" / "history.db")
events = dict(db.execute("SELECT event, COUNT(*) FROM history GROUP BY event").fetchall())
db.close()
memory.vector_store.client.close()
expected = {
    "tool": "mem0", "version": md.version("mem0ai"), "generated_by": "tests/import/make-mem0.py",
    "files": {"get_all": "get_all.json", "export": "export.json", "history_json": "history.json",
              "history_db": ".mem0/history.db", "qdrant": "qdrant/"},
    "counts": {"alice": len(get_all["alice"]["results"]), "bob": len(get_all["bob"]["results"]),
               "total": len(flat), "history_events": events},
    "planted_secrets": ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"],
    "queries": [
        {"question": "how does payments-api store money amounts", "expected": find("integer cents")},
        {"question": "why did notes-web search get slow", "expected": find("trigram index")},
        {"question": "Zürich Grafana dashboard empty", "expected": find("Zürich")},
    ],
}
(out / "expected.json").write_text(json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
print(f"make-mem0: {out} {json.dumps(expected['counts'])}")
