// Makes an OpenClaw memory-core workspace fixture with OpenClaw's own code where
// a code path writes memory files without a model:
//   memory/YYYY-MM-DD-HHMM.md  <- the bundled session-memory hook's handler
//                                (dist/bundled/session-memory/handler.js), called
//                                with a `command:new` event, as /new does.
//   MEMORY.md's "## Promoted From Short-Term Memory" section <- memory-core's
//                                dreaming code (applyShortTermPromotions), with
//                                OpenClaw's own plugin-state SQLite store.
//   memory/YYYY-MM-DD.md and MEMORY.md's curated top <- written by the agent's
//                                model through its file tools in real use
//                                (free-form Markdown); no model here, so this
//                                script writes them (see tests/import/FORMATS.md).
// Usage: node make-openclaw.mjs OPENCLAW_PKG_DIR OUT_DIR
// Needs Node >= 24.16 (openclaw's own requirement). TZ is forced to UTC.
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { pathToFileURL } from "node:url";

const [pkg, out] = process.argv.slice(2);
if (!pkg || !out) { console.error("usage: make-openclaw.mjs OPENCLAW_PKG_DIR OUT_DIR"); process.exit(2); }
process.env.TZ = "UTC";
const state = fs.mkdtempSync(path.join(os.tmpdir(), "oc-state-"));
process.env.OPENCLAW_STATE_DIR = state;
process.env.OPENCLAW_HOME = state;
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;
const ws = path.join(out, "workspace");
fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(path.join(ws, "memory"), { recursive: true });

const handlerMod = await import(pathToFileURL(path.join(pkg, "dist/bundled/session-memory/handler.js")).href);
const saveSessionToMemory = handlerMod.default;

// The session-memory hook renders each message as `role: <JSON string>`
// (capture.ts quoteSessionMemoryText), one per line.
const line = (role, text) => `${role}: ${JSON.stringify(text)}`;
const sessions = [
  {
    id: "3f9c2a1e-7b44-4d1a-9d0e-0c1f5a6b7c01", at: "2026-11-20T09:14:05Z",
    msgs: [
      ["user", "The payments-api deploy fails on staging with 'relation \"ledger_entries\" does not exist'."],
      ["assistant", "The migration 0042_ledger_entries.sql was never applied on staging: the migrate job runs before the schema lock is released. I moved the migrate step after `pg_advisory_unlock` in deploy/migrate.sh and the deploy went through."],
      ["user", "Good. Remember that staging migrations must run after the advisory unlock."],
    ],
  },
  {
    id: "8a1d0b52-19e3-4c6f-a2b7-55e0d9c3f202", at: "2026-11-21T16:42:30Z",
    msgs: [
      ["user", "Why is the Grafana dashboard for the Zürich cluster empty?"],
      ["assistant", "Prometheus scrapes zrh-prom-01 with the old label `dc=zurich`; the dashboard filters on `dc=zürich` with the umlaut. I normalised the label to ASCII `zurich` in monitoring/prometheus.yml and the panels filled."],
    ],
  },
  {
    id: "c07e4f19-5d2a-4b8e-9f31-a6b2c8d4e303", at: "2026-11-21T16:42:59Z",
    msgs: [
      ["user", "I ran the backup with `pg_dump \"postgresql://admin:password=hunter2xyz@db.internal/payments\"` – is that fine?"],
      ["assistant", "It worked, but the password is now in your shell history. Rotate it and use a ~/.pgpass file instead; the backup script scripts/backup.sh now reads PGPASSFILE."],
    ],
  },
];
for (const s of sessions) {
  const ev = {
    type: "command", action: "new", sessionKey: "agent:main:main",
    timestamp: new Date(s.at), messages: [],
    context: {
      agentId: "main", workspaceDir: ws, commandSource: "cli",
      cfg: { agents: { defaults: { userTimezone: "UTC" } } },
      previousSessionEntry: { sessionId: s.id },
      previousSessionMemory: { status: "available", content: s.msgs.map(([r, t]) => line(r, t)).join("\n"), originClass: "agent" },
    },
  };
  await saveSessionToMemory(ev);
  // the hook writes in the background; wait so that two sessions in the same
  // minute get the -2 suffix instead of racing for one name
  await handlerMod.flushSessionMemoryWritesForTest();
}

// Daily note as the agent writes it with its file tools (free-form Markdown,
// one file per UTC/user-timezone day, appended to during the day).
fs.writeFileSync(path.join(ws, "memory", "2026-11-20.md"), `# 2026-11-20

## payments-api
- Staging deploy failed: migration 0042_ledger_entries.sql not applied. Fix: run migrate after \`pg_advisory_unlock\` (deploy/migrate.sh).
- Decision: ledger amounts stay integer cents (BIGINT), never floats. Files: src/ledger/amount.rs, migrations/0042_ledger_entries.sql.

## infra
- CI runner ran out of disk: the Docker layer cache grew to 40 GB. Added \`docker builder prune --keep-storage 10GB\` to .ci/cleanup.sh.
- Leaked key found in an old commit of tools/upload.py: AKIAQ7RZ3XKLMN4PWT2V (revoked on 2026-11-20, kept here only as a reminder).
`);
fs.writeFileSync(path.join(ws, "memory", "2026-11-21.md"), `# 2026-11-21

- Zürich cluster dashboard empty: label \`dc=zürich\` vs \`dc=zurich\`; normalised to ASCII in monitoring/prometheus.yml.
- Benutzer-Feedback: Die Suche ist zu langsam – p95 of /search is 870 ms; the trigram index on notes.title is missing.
`);
// MEMORY.md: the curated part is what an agent writes by hand (free-form);
// the "## Promoted From Short-Term Memory" section below it is written by
// memory-core's own dreaming code: applyShortTermPromotions (deep phase, the
// deterministic append path used when no model consolidates), with OpenClaw's
// own SQLite plugin-state store (under the temporary OPENCLAW_STATE_DIR) for its
// lock and recall state. The candidates' recall stats stand in for what
// memory_search recalls would have accumulated.
fs.writeFileSync(path.join(ws, "MEMORY.md"), `# MEMORY.md

## Decisions
- payments-api stores money as integer cents (BIGINT) everywhere; floats were the cause of the 2026-10 rounding bug.
- Staging migrations run after the advisory unlock (deploy/migrate.sh).
- Never put database passwords on the command line; use ~/.pgpass (scripts/backup.sh reads PGPASSFILE).
`);
// dist/ chunk names carry build hashes and minified export letters: find them by
// the names in their export lines (openclaw is pinned, so this stays stable).
function distExport(prefix, name) {
  const dist = path.join(pkg, "dist");
  for (const f of fs.readdirSync(dist).filter((f) => f.startsWith(prefix) && f.endsWith(".mjs"))) {
    const m = new RegExp(`\\b${name} as (\\w+)\\b`).exec(fs.readFileSync(path.join(dist, f), "utf8"));
    if (m) return { file: path.join(dist, f), key: m[1] };
  }
  throw new Error(`make-openclaw: no dist/${prefix}*.mjs exports ${name} (another openclaw version?)`);
}
async function load(prefix, name) {
  const { file, key } = distExport(prefix, name);
  return (await import(pathToFileURL(file).href))[key];
}
const applyShortTermPromotions = await load("short-term-promotion-", "applyShortTermPromotions");
const configureState = await load("dreaming-state-", "configureMemoryCoreDreamingState");
const createPluginStateKeyedStore = await load("plugin-state-store-", "createPluginStateKeyedStore");
configureState((options) => createPluginStateKeyedStore("memory-core", options, () => {}));
const dailyLine = (file, needle) => {
  const lines = fs.readFileSync(path.join(ws, file), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`make-openclaw: ${needle} not in ${file}`);
  return { line: i + 1, snippet: lines[i] };
};
const candidates = [
  ["memory/2026-11-20.md", "CI runner ran out of disk", ["ci disk", "docker cache"], 0.912, 4],
  ["memory/2026-11-21.md", "Zürich cluster dashboard", ["grafana", "prometheus label"], 0.861, 3],
].map(([file, needle, conceptTags, score, recalls]) => {
  const { line, snippet } = dailyLine(file, needle);
  return { key: `memory:${file}:${line}:${line}`, path: file, startLine: line, endLine: line, source: "memory",
    snippet, score, avgScore: score - 0.04, signalCount: recalls, recallCount: recalls, uniqueQueries: 3, ageDays: 2,
    conceptTags, provenance: { originClass: "owner" } };
});
const promoted = await applyShortTermPromotions({
  workspaceDir: ws, candidates, minScore: 0, minRecallCount: 0, minUniqueQueries: 0,
  nowMs: Date.parse("2026-11-22T03:00:00Z"), timezone: "UTC",
});
if (promoted.applied !== candidates.length) {
  console.error(`make-openclaw: dreaming promoted ${promoted.applied} of ${candidates.length}: ${JSON.stringify(promoted.rejectedCandidates)}`);
  process.exit(1);
}

// expected.json: counts read back from the files themselves.
const files = fs.readdirSync(path.join(ws, "memory")).filter((f) => f.endsWith(".md")).sort();
const hookFiles = files.filter((f) => /^\d{4}-\d{2}-\d{2}-.+\.md$/.test(f));
const dailyFiles = files.filter((f) => /^\d{4}-\d{2}-\d{2}\.md$/.test(f));
if (hookFiles.length !== sessions.length) { console.error(`make-openclaw: the session-memory hook wrote ${hookFiles.length} files, expected ${sessions.length}: ${files}`); process.exit(1); }
const bullets = (f) => fs.readFileSync(f, "utf8").split("\n").filter((l) => /^- /.test(l)).length;
const expected = {
  tool: "openclaw", version, generated_by: "tests/import/make-openclaw.mjs",
  workspace: "workspace",
  files: { "MEMORY.md": 1, daily_notes: dailyFiles, session_memory_hook_files: hookFiles },
  counts: {
    memory_md_bullets: bullets(path.join(ws, "MEMORY.md")),
    daily_note_bullets: Object.fromEntries(dailyFiles.map((f) => [f, bullets(path.join(ws, "memory", f))])),
    session_files: hookFiles.length,
  },
  planted_secrets: ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"],
  queries: [
    { question: "why was the Zurich grafana dashboard empty", expected_source: "memory/2026-11-21.md" },
    { question: "staging deploy relation ledger_entries does not exist", expected_source: "memory/" + hookFiles[0] },
    { question: "how do we store money amounts in payments-api", expected_source: "MEMORY.md" },
  ],
};
fs.writeFileSync(path.join(out, "expected.json"), JSON.stringify(expected, null, 2) + "\n");
fs.rmSync(state, { recursive: true, force: true });
console.log(`make-openclaw: ${out} (${files.length} files under memory/)`);
