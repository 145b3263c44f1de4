// Makes a claude-mem database fixture with claude-mem's own storage code:
// plugin/sqlite/SessionStore.js from the npm package (its schema, its
// migrations, its insert paths), run under Bun because that module imports
// bun:sqlite (claude-mem's worker runs on Bun too).
// Usage: bun make-claude-mem.mjs CLAUDE_MEM_PKG_DIR OUT_DIR
// Writes OUT_DIR/.claude-mem/claude-mem.db (as ~/.claude-mem/claude-mem.db)
// and OUT_DIR/expected.json.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

const [pkg, outArg] = process.argv.slice(2);
if (!pkg || !outArg) { console.error("usage: bun make-claude-mem.mjs CLAUDE_MEM_PKG_DIR OUT_DIR"); process.exit(2); }
const out = path.resolve(outArg);
fs.rmSync(out, { recursive: true, force: true });
const dataDir = path.join(out, ".claude-mem");
fs.mkdirSync(dataDir, { recursive: true });
// read at module load by SessionStore.js (paths.ts): the data dir and its db
process.env.CLAUDE_MEM_DATA_DIR = dataDir;
process.env.TZ = "UTC";
const require = createRequire(import.meta.url);
const { SessionStore } = require(path.join(pkg, "plugin/sqlite/SessionStore.js"));
const version = JSON.parse(fs.readFileSync(path.join(pkg, "package.json"), "utf8")).version;

const store = new SessionStore(); // default path: $CLAUDE_MEM_DATA_DIR/claude-mem.db
const day = (d, h = 10) => Date.parse(`2026-11-${String(d).padStart(2, "0")}T${String(h).padStart(2, "0")}:00:00Z`);

// Two projects, five sessions. Each session: prompts -> observations -> summary,
// the order claude-mem's hooks and worker write them in.
const sessions = [
  {
    content: "a1b2c3d4-0001-4e5f-8a9b-000000000001", memory: "mem-7f3e2a10-payments-1", project: "payments-api",
    prompts: ["The staging deploy fails with relation \"ledger_entries\" does not exist. Find out why."],
    observations: [{
      type: "bugfix", title: "Staging migration skipped before advisory unlock",
      subtitle: "deploy/migrate.sh ran migrations while the schema lock was held",
      narrative: "The staging deploy failed because migration 0042_ledger_entries.sql never ran: deploy/migrate.sh started the migrate job before pg_advisory_unlock. Moving the migrate step after the unlock fixed the deploy.",
      facts: ["Migration 0042_ledger_entries.sql creates ledger_entries", "deploy/migrate.sh now migrates after pg_advisory_unlock"],
      concepts: ["problem-solution", "gotcha"], files_read: ["deploy/migrate.sh", "migrations/0042_ledger_entries.sql"], files_modified: ["deploy/migrate.sh"],
      at: day(12, 9),
    }],
    summary: { request: "Fix the failing staging deploy", investigated: "deploy/migrate.sh and the migration order", learned: "Migrations must run after the advisory unlock", completed: "Moved the migrate step; staging deploy is green", next_steps: "Add a CI check that every migration ran", notes: null, files_read: ["deploy/migrate.sh"], files_edited: ["deploy/migrate.sh"], at: day(12, 10) },
  },
  {
    content: "a1b2c3d4-0002-4e5f-8a9b-000000000002", memory: "mem-7f3e2a10-payments-2", project: "payments-api",
    prompts: ["Ledger entries are sometimes posted twice. Investigate src/ledger/posting.rs.", "Add a regression test for the double posting."],
    observations: [{
      type: "bugfix", title: "Double posting when retry fired after COMMIT",
      subtitle: "idempotency key (payment_id, leg) with a UNIQUE index",
      narrative: "A retry that fired after COMMIT inserted the same ledger entry a second time. Added an idempotency key (payment_id, leg) with a UNIQUE index in migrations/0043_idempotency.sql and insert-ignore on conflict in src/ledger/posting.rs.",
      facts: ["Retries after COMMIT caused duplicate ledger rows", "UNIQUE(payment_id, leg) prevents duplicates"],
      concepts: ["problem-solution", "how-it-works"], files_read: ["src/ledger/posting.rs"], files_modified: ["src/ledger/posting.rs", "migrations/0043_idempotency.sql", "tests/ledger_retry.rs"],
      at: day(13, 14),
    }, {
      type: "decision", title: "Money is stored as integer cents",
      subtitle: "BIGINT cents everywhere, no floats",
      narrative: "Decided that all amounts are BIGINT cents; the October rounding bug came from f64 arithmetic in src/ledger/amount.rs.",
      facts: ["Amounts are BIGINT cents", "f64 caused the October rounding bug"],
      concepts: ["why-it-exists", "trade-off"], files_read: ["src/ledger/amount.rs"], files_modified: ["src/ledger/amount.rs"],
      at: day(13, 15),
    }],
    summary: { request: "Stop ledger entries from being posted twice", investigated: "Retry path in src/ledger/posting.rs", learned: "Retries can fire after COMMIT", completed: "Idempotency key with UNIQUE index; regression test tests/ledger_retry.rs", next_steps: "Backfill duplicates from October", notes: "Ran the backup first: pg_dump \"postgresql://admin:password=hunter2xyz@db.internal/payments\" (password since rotated)", files_read: ["src/ledger/posting.rs"], files_edited: ["src/ledger/posting.rs", "migrations/0043_idempotency.sql"], at: day(13, 16) },
  },
  {
    content: "a1b2c3d4-0003-4e5f-8a9b-000000000003", memory: "mem-7f3e2a10-payments-3", project: "payments-api",
    prompts: ["CI leaked an AWS key in tools/upload.py history, clean it up."],
    observations: [{
      type: "change", title: "Revoked leaked AWS key from tools/upload.py",
      subtitle: "moved credentials to the CI secret store",
      narrative: "tools/upload.py had a hard-coded AWS_ACCESS_KEY_ID=AKIAQ7RZ3XKLMN4PWT2V. The key was revoked and the script now reads credentials from the environment set by the CI secret store.",
      facts: ["AKIAQ7RZ3XKLMN4PWT2V was revoked", "tools/upload.py reads AWS credentials from env"],
      concepts: ["gotcha"], files_read: ["tools/upload.py"], files_modified: ["tools/upload.py", ".ci/secrets.md"],
      at: day(14, 11),
    }],
    summary: null,
  },
  {
    content: "b9c8d7e6-0004-4a3b-9c2d-000000000004", memory: "mem-1c9d4b22-notes-4", project: "notes-web",
    prompts: ["/search got slow since Monday, p95 870 ms. Why?"],
    observations: [{
      type: "bugfix", title: "Search p95 regression: trigram index dropped",
      subtitle: "migration 0051 recreated the notes table without notes_title_trgm",
      narrative: "Migration 0051 recreated the notes table and dropped the trigram index on notes.title, so /search fell back to a sequential scan (p95 870 ms). migrations/0052_notes_title_trgm.sql re-adds the GIN index; p95 is back to 110 ms.",
      facts: ["notes_title_trgm is a GIN trigram index on notes.title", "p95 of /search went 870 ms -> 110 ms"],
      concepts: ["problem-solution", "pattern"], files_read: ["migrations/0051_notes_rebuild.sql"], files_modified: ["migrations/0052_notes_title_trgm.sql", "tests/search_index.rs"],
      at: day(18, 9),
    }],
    summary: { request: "Find why /search became slow", investigated: "EXPLAIN of the search query, migration 0051", learned: "Recreating a table drops its indexes", completed: "Re-added the trigram index and a test that fails without it", next_steps: null, notes: null, files_read: ["migrations/0051_notes_rebuild.sql"], files_edited: ["migrations/0052_notes_title_trgm.sql"], at: day(18, 10) },
  },
  {
    content: "b9c8d7e6-0005-4a3b-9c2d-000000000005", memory: "mem-1c9d4b22-notes-5", project: "notes-web",
    prompts: ["Le tableau de bord de Zürich est vide, pourquoi ?"],
    observations: [{
      type: "discovery", title: "Zürich dashboard empty: label dc=zürich vs dc=zurich",
      subtitle: "Prometheus label normalised to ASCII",
      narrative: "Die Grafana-Übersicht für Zürich war leer: the dashboard filtered on dc=zürich while the scraper set dc=zurich. monitoring/prometheus.yml now uses ASCII zurich everywhere.",
      facts: ["Prometheus labels are ASCII: dc=zurich"],
      concepts: ["gotcha"], files_read: ["monitoring/dashboards/zurich.json"], files_modified: ["monitoring/prometheus.yml"],
      at: day(21, 16),
    }],
    summary: { request: "Réparer le tableau de bord de Zürich", investigated: "Grafana panel queries and Prometheus labels", learned: "Label values must match byte for byte", completed: "Normalised the label to zurich", next_steps: null, notes: null, files_read: [], files_edited: ["monitoring/prometheus.yml"], at: day(21, 17) },
  },
];

for (const s of sessions) {
  const sessionDbId = store.createSDKSession(s.content, s.project, s.prompts[0]);
  s.prompts.forEach((p, i) => store.saveUserPrompt(s.content, i + 1, p, sessionDbId));
  store.ensureMemorySessionIdRegistered(sessionDbId, s.memory);
  for (const o of s.observations) {
    const { at, ...obs } = o;
    store.storeObservation(s.memory, s.project, obs, 1, 0, at);
  }
  if (s.summary) {
    const { at, ...sum } = s.summary;
    store.storeSummary(s.memory, s.project, sum, s.prompts.length, 0, at);
  }
  store.markSessionCompleted(sessionDbId);
}

// Read back through the store's own connection.
const db = store.db;
const per = (table) => Object.fromEntries(db.prepare(`SELECT project, COUNT(*) AS n FROM ${table} GROUP BY project ORDER BY project`).all().map((r) => [r.project, r.n]));
const prompts = Object.fromEntries(db.prepare(`SELECT s.project AS project, COUNT(*) AS n FROM user_prompts p JOIN sdk_sessions s ON s.content_session_id = p.content_session_id GROUP BY s.project ORDER BY s.project`).all().map((r) => [r.project, r.n]));
const obsId = (title) => db.prepare("SELECT id FROM observations WHERE title = ?").get(title).id;
const migrations = db.prepare("SELECT name FROM sqlite_master WHERE type='table' AND name='schema_versions'").get()
  ? db.prepare("SELECT version FROM schema_versions ORDER BY version").all().map((r) => r.version) : [];
const expected = {
  tool: "claude-mem", version, generated_by: "tests/import/make-claude-mem.mjs",
  database: ".claude-mem/claude-mem.db",
  projects: store.getAllProjects(),
  counts: {
    sessions: per("sdk_sessions"), observations: per("observations"),
    summaries: per("session_summaries"), prompts,
  },
  schema_versions: migrations,
  planted_secrets: ["AKIAQ7RZ3XKLMN4PWT2V", "hunter2xyz"],
  queries: [
    { question: "why were ledger entries posted twice", expected: { table: "observations", id: obsId("Double posting when retry fired after COMMIT"), title: "Double posting when retry fired after COMMIT", project: "payments-api" } },
    { question: "search got slow, which index was missing", expected: { table: "observations", id: obsId("Search p95 regression: trigram index dropped"), title: "Search p95 regression: trigram index dropped", project: "notes-web" } },
    { question: "Zürich Grafana dashboard empty", expected: { table: "observations", id: obsId("Zürich dashboard empty: label dc=zürich vs dc=zurich"), title: "Zürich dashboard empty: label dc=zürich vs dc=zurich", project: "notes-web" } },
  ],
};
store.close?.();
// SessionStore's logger may have created logs/ beside the db; keep only the db
fs.rmSync(path.join(dataDir, "logs"), { recursive: true, force: true });
fs.writeFileSync(path.join(out, "expected.json"), JSON.stringify(expected, null, 2) + "\n");
console.log(`make-claude-mem: ${out} ${JSON.stringify(expected.counts)}`);
