// `knowledge-db ui` in a real browser: Debian's Chromium, headless, driven
// by playwright-core (both installed by scripts/setup-clients.sh; no browser
// is downloaded). On a store of real Claude Code sessions (ingested from
// ../shared/eval, with the hooks' summaries and queues) the test searches,
// opens a result, walks a session's timeline to its raw turns, reads the
// health page, forgets a record and a session with --allow-delete (and is
// refused without it), and is refused without the token, with a foreign Host
// header and with a foreign Origin. It checks the marks of a snippet after
// non-ASCII text, the sessions' titles, the low-confidence marks and the
// empty store's views (which say how to fill it), and saves a screenshot of
// each view.
//
// Run by ./test.sh (its viewer block). Environment:
//   KNOWLEDGE_DB_BIN      the binary (default target/debug/knowledge-db)
//   KDB_CHROMIUM          the browser (default /usr/bin/chromium)
//   KDB_PLAYWRIGHT_CORE   playwright-core's folder (default in the clients cache)
//   KDB_SHARED_EVAL       the evaluation data (default ../shared/eval beside the checkout, or ../../shared/eval)
//   KDB_UI_SESSIONS       sessions to ingest (default 30; 288 is all of them)
//   KDB_UI_STORE          build the store there (kept) or reuse it if it exists
//   KDB_UI_SCREENSHOTS    folder for the screenshots (default: a temporary one)
//   KDB_CLIENT_TESTS=skip the registries were unreachable: skip, saying so

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gunzipSync } from "node:zlib";
import { after, before, test } from "node:test";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const BIN = process.env.KNOWLEDGE_DB_BIN || join(repo, "target/debug/knowledge-db");
const CHROMIUM = process.env.KDB_CHROMIUM || "/usr/bin/chromium";
const CLIENTS = process.env.KDB_CLIENTS_DIR || join(process.env.HOME || "/root", ".cache/knowledge-db/clients");
const PLAYWRIGHT = process.env.KDB_PLAYWRIGHT_CORE || join(CLIENTS, "playwright/node_modules/playwright-core");
// ../shared beside the checkout; ../../shared from a worktree under wt/.
const EVAL =
  process.env.KDB_SHARED_EVAL ||
  [join(repo, "..", "shared/eval"), join(repo, "..", "..", "shared/eval")].find(existsSync) ||
  join(repo, "..", "shared/eval");
const TRANSCRIPTS = join(EVAL, "transcripts/claude-code-entire-cli");
const SESSIONS = Number(process.env.KDB_UI_SESSIONS || 30);
const SKIP = process.env.KDB_CLIENT_TESTS === "skip" ? "Chromium and playwright-core could not be installed (apt/npm unreachable)" : false;
const BROWSER_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const work = mkdtempSync(join(tmpdir(), "kdb-ui-test-"));
const store = process.env.KDB_UI_STORE || join(work, "store");
const shots = process.env.KDB_UI_SCREENSHOTS || join(work, "screenshots");
const env = { ...process.env, KNOWLEDGE_DB_UPKEEP: "off" };
delete env.KNOWLEDGE_DB_HOME;

/** Runs the binary on the store; returns {status, stdout, stderr}. */
function kdb(args, input) {
  const out = spawnSync(BIN, ["--store", store, ...args], { env, input, encoding: "utf8", maxBuffer: 1 << 28 });
  if (out.error) throw out.error;
  return out;
}

function kdbJson(args) {
  const out = kdb([...args, "--json"]);
  assert.equal(out.status, 0, `${args.join(" ")}: ${out.stderr}`);
  return JSON.parse(out.stdout);
}

/** The session id a transcript's lines carry (Claude Code's `sessionId`). */
function sessionIdOf(text, fallback) {
  const match = /"sessionId":"([^"]+)"/.exec(text);
  return match ? match[1] : fallback;
}

/**
 * A store of real sessions, as a user of the hooks has it: the transcripts
 * ingested, each session's hooks run once at a compaction (its cold tasks and
 * segments summarized and queued), one hook failure logged, verified.
 */
function buildStore() {
  if (existsSync(join(store, "config.toml"))) return;
  const names = readdirSync(TRANSCRIPTS).filter((n) => n.endsWith(".jsonl.gz")).sort();
  // Every ninth file: sessions spread over the whole period.
  const picked = SESSIONS >= names.length ? names : names.filter((_, i) => i % 9 === 0).slice(0, SESSIONS);
  const folder = join(work, "transcripts");
  mkdirSync(folder, { recursive: true });
  const files = picked.map((name) => {
    const text = gunzipSync(readFileSync(join(TRANSCRIPTS, name))).toString("utf8");
    const path = join(folder, name.replace(/\.gz$/, ""));
    writeFileSync(path, text);
    return { path, session: sessionIdOf(text, name.replace(/\.jsonl\.gz$/, "")) };
  });
  assert.equal(kdb(["init"]).status, 0);
  const ingest = kdb(["ingest", folder, "--embed", "later"]);
  assert.equal(ingest.status, 0, ingest.stderr);
  for (const { path, session } of files) {
    const hook = { session_id: session, transcript_path: path, hook_event_name: "PreCompact", trigger: "manual" };
    const out = kdb(["hook", "pre-compact"], JSON.stringify(hook));
    assert.equal(out.status, 0, out.stderr);
  }
  // A transcript in a folder that does not exist is an error the log keeps (a
  // missing file in a folder that does is only not written yet).
  const broken = { session_id: "broken-session", transcript_path: join(folder, "gone", "gone.jsonl"), hook_event_name: "PostToolUse", tool_name: "Bash" };
  kdb(["hook", "post-tool-use"], JSON.stringify(broken));
  // A note whose matches come after non-ASCII text (an em dash, accents, an
  // emoji: 3, 2 and 4 bytes in UTF-8, 1, 1 and 2 in JavaScript's strings).
  const note = { id: "note-unicode", title: "unicode marks", text: "Café notes — naïve 🚀 plan: the zebrafish ledger of the quokka harbor" };
  assert.equal(kdb(["add", "-", "--embed", "later"], JSON.stringify(note)).status, 0);
  assert.equal(kdb(["verify"]).status, 0);
}

/** Starts `knowledge-db ui`; resolves to {url, port, child}. */
async function startUi(extra = []) {
  const stats = kdbJson(["stats"]);
  const vectors = stats.vectors.with_vector > 0 ? [] : ["--no-vectors"];
  const child = spawn(BIN, ["--store", store, "ui", ...vectors, ...extra], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n")) resolve(line.trim());
    });
    child.on("exit", (code) => reject(new Error(`ui exited ${code}: ${stderr}`)));
  });
  const port = Number(new URL(url).port);
  return { url, port, child, stderr: () => stderr };
}

/** Stops the server with Ctrl-C (SIGINT); resolves to its exit code. */
function stopUi(server) {
  return new Promise((resolve) => {
    server.child.on("exit", (code) => resolve(code));
    server.child.kill("SIGINT");
  });
}

/** A raw HTTP request (node's client lets a test set Host and Origin). */
function request(port, path, { method = "GET", headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method, headers }, (res) => {
      let text = "";
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on("error", reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** A screenshot into `shots`, its time added to the timings. */
async function shot(options) {
  const started = Date.now();
  await page.screenshot(options);
  timings.screenshots = (timings.screenshots || 0) + Date.now() - started;
}

let chromium;
let readOnly;
let context;
let page;
const timings = {};

before(async () => {
  if (SKIP) return;
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup-clients.sh (it installs Debian's chromium)`);
  assert.ok(existsSync(PLAYWRIGHT), `${PLAYWRIGHT} is missing: run scripts/setup-clients.sh (or set KDB_PLAYWRIGHT_CORE)`);
  assert.ok(existsSync(BIN), `${BIN} is missing: cargo build`);
  assert.ok(existsSync(TRANSCRIPTS), `${TRANSCRIPTS} is missing (the shared evaluation data)`);
  ({ chromium } = await import(pathToFileURL(join(PLAYWRIGHT, "index.mjs")).href));
  buildStore();
  mkdirSync(shots, { recursive: true });
  readOnly = await startUi();
  context = await chromium.launchPersistentContext(mkdtempSync(join(work, "profile-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: BROWSER_FLAGS,
    viewport: { width: 1280, height: 800 },
  });
  page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => console.error(`page error: ${e.message}`));
});

after(async () => {
  if (context) await context.close();
  if (readOnly && readOnly.child.exitCode === null) readOnly.child.kill("SIGKILL");
  if (!process.env.KDB_UI_STORE) rmSync(work, { recursive: true, force: true });
  if (Object.keys(timings).length) console.log(`viewer timings (ms): ${JSON.stringify(timings)}`);
});

test("a request without the token, with a foreign Host or a foreign Origin is refused", { skip: SKIP }, async () => {
  const { port, url } = readOnly;
  const path = new URL(url).pathname;
  assert.equal((await request(port, "/")).status, 403);
  assert.equal((await request(port, "/api/info")).status, 403);
  const wrong = path.replace(/\/t\/[0-9a-f]{8}/, "/t/00000000");
  assert.equal((await request(port, `${wrong}api/info`)).status, 403);
  const rebinding = await request(port, `${path}api/info`, { headers: { Host: `evil.example:${port}` } });
  assert.equal(rebinding.status, 403);
  assert.match(rebinding.text, /Host header/);
  const good = await request(port, `${path}api/info`, { headers: { Host: `localhost:${port}` } });
  assert.equal(good.status, 200, good.text);
  assert.equal(JSON.parse(good.text).allow_delete, false);
  assert.equal(good.headers["referrer-policy"], "no-referrer");
  assert.match(good.headers["content-security-policy"], /default-src 'none'/);
  // The page itself and its scripts carry the token too.
  assert.equal((await request(port, "/assets/app.js")).status, 403);
  assert.equal((await request(port, `${path}assets/app.js`)).status, 200);
  // Read-only: a forget from the page's own origin is still refused.
  const origin = `http://127.0.0.1:${port}`;
  const json = { "Content-Type": "application/json", Origin: origin };
  const refused = await request(port, `${path}api/forget`, { method: "POST", headers: json, body: '{"ids":["x"]}' });
  assert.equal(refused.status, 403);
  assert.match(JSON.parse(refused.text).error, /read-only/);
  // Bounded: a query too long, a page too big.
  const long = await request(port, `${path}api/search?q=${"x".repeat(2001)}`);
  assert.equal(long.status, 400);
  assert.match(JSON.parse(long.text).error, /at most 2000/);
  assert.equal((await request(port, `${path}api/sessions?limit=1000`)).status, 400);
});

/// Waits until the page shows the answer to a query asked with these
/// parameters: until then the previous answer (or none) is on the page, and
/// reading hits earlier reads the wrong ones.
async function answered(asked) {
  await page.waitForFunction((want) => {
    const answer = document.querySelector("[data-testid=answer]");
    if (!answer) return false;
    const got = JSON.parse(answer.dataset.asked || "{}");
    return Object.entries(want).every(([k, v]) => got[k] === v);
  }, asked);
}

test("search: hits with their score parts, and the abstention", { skip: SKIP }, async () => {
  const started = Date.now();
  await page.goto(readOnly.url);
  await page.waitForSelector("form.search input[name=q]");
  timings.first_paint = await page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime);
  timings.page_ready = Date.now() - started;
  assert.ok(timings.first_paint > 0, "Chromium reported no first contentful paint");
  await page.fill("input[name=q]", "hook timeout");
  await page.click("form.search button[type=submit]");
  await page.waitForSelector("[data-testid=hit]");
  const hits = await page.locator("[data-testid=hit]").count();
  assert.ok(hits > 0);
  timings.search_round_trip = await page.evaluate(async () => {
    const t = performance.now();
    await (await fetch("api/search?q=hook%20timeout&k=20")).json();
    return performance.now() - t;
  });
  // Each hit names its project (the git root of the session's folder: every
  // real session has one) and its origin (local: nothing was pulled).
  const projects = await page.locator("[data-testid=hit] .hit-meta .project").allInnerTexts();
  assert.ok(projects.length === hits && projects.every((p) => p.startsWith("/")), projects.join(", "));
  const origins = await page.locator("[data-testid=hit] .hit-meta .origin").allInnerTexts();
  assert.deepEqual([...new Set(origins)], ["local"]);
  await page.locator("[data-testid=hit] details.why summary").first().click();
  const why = await page.locator("[data-testid=hit] details.why table").first().innerText();
  assert.match(why, /BM25 \(words\)/);
  assert.match(why, /rank 1|rank \d+/);
  await shot({ path: join(shots, "viewer-search.png") });

  // The project filter offers the projects; one narrows the hits to it.
  const offered = await page.locator("select[name=project] option").evaluateAll((os) => os.map((o) => o.value));
  assert.ok(offered.includes(projects[0]), `${projects[0]} not offered: ${offered.join(", ")}`);
  await page.selectOption("select[name=project]", projects[0]);
  await page.click("form.search button[type=submit]");
  await answered({ project: projects[0] });
  const scoped = await page.locator("[data-testid=hit] .hit-meta .project").allInnerTexts();
  assert.deepEqual([...new Set(scoped)], [projects[0]]);
  await page.selectOption("select[name=project]", "");

  // A filter narrows the hits to one kind.
  await page.selectOption("select[name=kind]", "message");
  await page.click("form.search button[type=submit]");
  await answered({ kind: "message" });
  const kinds = await page.locator("[data-testid=hit] .badge.kind-message").count();
  assert.equal(kinds, await page.locator("[data-testid=hit]").count());

  // Nothing relevant: the abstention says so with the best score, and names
  // the words no record holds.
  // Marks sit on the matched words after an em dash, accents and an emoji.
  await page.goto(`${readOnly.url}#/search?q=${encodeURIComponent("zebrafish ledger quokka harbor")}`);
  await answered({ q: "zebrafish ledger quokka harbor" });
  const marks = await page.locator("[data-testid=hit] .snippet mark").allInnerTexts();
  assert.ok(marks.length >= 4, `marks: ${marks.join("|")}`);
  for (const mark of marks) assert.match(mark, /^(zebrafish|ledger|quokka|harbor)$/i, `a mark slipped: ${marks.join("|")}`);

  // A question about something the store does not hold: no hit passes for
  // an answer (each is marked, or nothing comes back, said in the page's own
  // words: its checkbox, never the CLI's flags).
  const absent = "kubernetes helm chart rollback strategy";
  await page.goto(`${readOnly.url}#/search?q=${encodeURIComponent(absent)}`);
  await answered({ q: absent });
  const absentHits = await page.locator("[data-testid=hit]").count();
  if (absentHits > 0) {
    assert.equal(await page.locator("[data-testid=hit].unsure, [data-testid=hit].weak").count(), absentHits, "an off-topic hit looks like an answer");
    await page.waitForSelector("[data-testid=low-confidence]");
  } else {
    const said = await page.locator("[data-testid=explanation]").innerText();
    assert.doesNotMatch(said, /--all|--min-score/);
  }
  await shot({ path: join(shots, "viewer-search-absent.png") });

  const nothing = "zqxjv wombat kazoo";
  await page.goto(`${readOnly.url}#/search?q=${encodeURIComponent(nothing)}`);
  // A hash change keeps the page: wait for this query's answer, not the last one's.
  await answered({ q: nothing });
  await page.waitForSelector("[data-testid=search-summary]");
  const summary = await page.locator("[data-testid=search-summary]").innerText();
  assert.match(summary, /No results/);
  const unknown = await page.locator("[data-testid=unknown-words]").innerText();
  assert.match(unknown, /zqxjv/);
});

test("a message hit's session link opens the raw turns that hold it", { skip: SKIP }, async () => {
  await page.goto(`${readOnly.url}#/search?q=${encodeURIComponent("hook timeout")}&kind=message`);
  await page.waitForSelector("[data-testid=hit] .session-link");
  const id = await page.locator("[data-testid=hit] .title a").first().getAttribute("title");
  await page.locator("[data-testid=hit] .session-link").first().click();
  await page.waitForSelector("[data-testid=turns] .message");
  let found = page.locator(`[data-testid=turns] a.record-link[title="${id}"]`);
  while (!(await found.count()) && (await page.locator("section.session-pane button.more").count())) {
    await page.locator("section.session-pane button.more").click();
    await page.waitForTimeout(200);
    found = page.locator(`[data-testid=turns] a.record-link[title="${id}"]`);
  }
  assert.ok(await found.count(), `message ${id} is not in the turns its link opened`);
});

test("a result opens its record: JSON, tier, access count, vector state, provenance", { skip: SKIP }, async () => {
  await page.goto(`${readOnly.url}#/search?q=${encodeURIComponent("hook timeout")}&kind=message`);
  await page.waitForSelector("[data-testid=hit] .title a");
  await page.locator("[data-testid=hit] .title a").first().click();
  await page.waitForSelector("[data-testid=record]");
  assert.match(page.url(), /#\/record\?id=/);
  const provenance = await page.locator("[data-testid=provenance]").innerText();
  assert.match(provenance, /\.jsonl line \d+ \(claude-code, via ingest\)/);
  assert.match(await page.locator("[data-testid=project]").innerText(), /^\/\S+/);
  assert.match(await page.locator("[data-testid=origin]").innerText(), /^local/);
  assert.match(await page.locator("[data-testid=vector-state]").innerText(), /^(none|draft|full)$/);
  // The search and this read were logged: the count shows them.
  assert.match(await page.locator("[data-testid=access-count]").innerText(), /^[1-9]/);
  const json = JSON.parse(await page.locator("pre.json").innerText());
  assert.equal(json.kind, "message");
  await shot({ path: join(shots, "viewer-record.png") });
});

test("the timeline walks from a session's summary to its raw turns", { skip: SKIP }, async () => {
  const { sessions } = await (await fetch(`${readOnly.url}api/sessions?limit=100`)).json();
  const withSummary = sessions.find((s) => (s.by_kind.segment || s.by_kind.task) && s.by_kind.message);
  assert.ok(withSummary, "no session has both summaries and messages");
  await page.goto(readOnly.url);
  await page.click("nav a[data-tab=timeline]");
  await page.waitForSelector("[data-testid=sessions] a");
  // Lazy: the first page of sessions only.
  assert.ok((await page.locator("[data-testid=sessions] a").count()) <= 25);
  // Projects → sessions: the session's project lists it (and only its own).
  const projects = await page.locator("[data-testid=projects] a[data-project]").evaluateAll((as) => as.map((a) => a.dataset.project));
  assert.ok(projects.length > 1 && projects.includes(withSummary.group), projects.join(", "));
  await page.click(`[data-testid=projects] a[data-project="${withSummary.group}"]`);
  await page.waitForFunction(() => location.hash.includes("group="));
  const { total } = await (await fetch(`${readOnly.url}api/sessions?group=${encodeURIComponent(withSummary.group)}`)).json();
  await page.waitForSelector(`[data-testid=sessions][data-group="${withSummary.group}"][data-total="${total}"]`);
  let link = page.locator(`[data-session="${withSummary.session_id}"]`);
  while (!(await link.count())) {
    await page.click("button.more");
    await page.waitForTimeout(200);
    link = page.locator(`[data-session="${withSummary.session_id}"]`);
  }
  // Sessions are listed by their first prompt, not as bare ids.
  const titles = await page.locator("[data-testid=sessions] a.session-title").allInnerTexts();
  assert.ok(titles.length > 0 && titles.every((t) => !/^[0-9a-f]{8}…$/.test(t)), `untitled sessions: ${titles.join(" | ")}`);
  await link.click();
  await page.waitForSelector("[data-testid=summaries] li");
  assert.ok((await page.locator("[data-testid=session-title]").innerText()).length > 0);
  const raw = page.locator("[data-testid=raw-turns]").first();
  const label = await raw.innerText();
  const [, first] = /turns (\d+)–(\d+)/.exec(label);
  await raw.click();
  await page.waitForFunction((from) => location.hash.includes(`from=${from}`), first);
  await page.waitForSelector("[data-testid=turns] .message");
  const heading = await page.locator("[data-testid=turns] h4.turn").first().innerText();
  assert.equal(heading, `turn ${first}`);
  // Tool calls are folded; text messages are not.
  const folded = await page.locator("[data-testid=turns] details.message.tool").count();
  const open = await page.locator("[data-testid=turns] div.message").count();
  assert.ok(folded + open > 0);
  await shot({ path: join(shots, "viewer-timeline.png") });
});

test("the health page shows stats, vectors, upkeep, the last verify, queues and hook errors", { skip: SKIP }, async () => {
  const stats = kdbJson(["stats"]);
  await page.goto(readOnly.url);
  await page.click("nav a[data-tab=health]");
  await page.waitForSelector("[data-testid=health]");
  const text = await page.locator("[data-testid=health]").innerText();
  assert.ok(text.includes(stats.records.toLocaleString("en-US")), `${stats.records} records not shown`);
  assert.match(await page.locator("[data-testid=verify]").innerText(), /all checks passed/);
  assert.match(await page.locator("[data-testid=vectors]").innerText(), /waiting/);
  // The viewer runs with KNOWLEDGE_DB_UPKEEP=off: the page says so, and why.
  assert.equal(await page.locator("[data-testid=upkeep-worker]").innerText(), "off");
  assert.match(await page.locator("[data-testid=upkeep-off]").innerText(), /KNOWLEDGE_DB_UPKEEP=off is set in the environment/);
  assert.ok((await page.locator("[data-testid=queues] tr").count()) > 1, "no compression queue listed");
  const byProject = await page.locator("[data-testid=by-project]").innerText();
  assert.ok(Object.keys(stats.by_project).every((p) => byProject.includes(p || "(no project)")), byProject);
  assert.match(await page.locator("[data-testid=hook-log]").innerText(), /broken-session error: .*No such file/);
  // The whole page down to the hook log and the first queues (at most 1400 px).
  const height = Math.min(1400, await page.evaluate(() => document.documentElement.scrollHeight));
  await shot({ path: join(shots, "viewer-health.png"), fullPage: true, clip: { x: 0, y: 0, width: 1280, height } });
});

test("forgetting needs --allow-delete, a confirmation and the page's own origin", { skip: SKIP }, async () => {
  // Read-only: the button is there, disabled, and says how to allow it.
  await page.goto(`${readOnly.url}#/record?id=note-unicode`);
  await page.waitForSelector("[data-testid=delete-record]");
  assert.ok(await page.locator("[data-testid=delete-record]").isDisabled());
  assert.match(await page.locator("[data-testid=delete-record]").getAttribute("title"), /--allow-delete/);
  assert.equal(await stopUi(readOnly), 0, "Ctrl-C did not stop the viewer cleanly");
  assert.match(readOnly.stderr(), /stopped/);
  const server = await startUi(["--allow-delete"]);
  try {
    const path = new URL(server.url).pathname;
    const port = server.port;
    const post = (headers, body = '{"ids":["nothing"]}') =>
      request(port, `${path}api/forget`, { method: "POST", headers, body });
    assert.equal((await post({ "Content-Type": "application/json", Origin: "http://evil.example" })).status, 403);
    assert.equal((await post({ "Content-Type": "application/json" })).status, 403);
    assert.equal((await post({ "Content-Type": "text/plain", Origin: `http://127.0.0.1:${port}` })).status, 403);
    const huge = await post({ "Content-Type": "application/json", Origin: `http://127.0.0.1:${port}` }, `{"ids":["${"x".repeat(70000)}"]}`);
    assert.equal(huge.status, 413);

    const { sessions } = await (await fetch(`${server.url}api/sessions?limit=100`)).json();
    const [victim, other] = sessions.filter((s) => s.by_kind.message > 2);
    const turns = await (await fetch(`${server.url}api/turns?session=${encodeURIComponent(other.session_id)}&limit=5`)).json();
    const recordId = turns.messages.find((m) => m.id).id;
    assert.equal(kdb(["get", recordId]).status, 0);

    // Asked first: dismissing forgets nothing.
    await page.goto(`${server.url}#/record?id=${encodeURIComponent(recordId)}`);
    await page.waitForSelector("[data-testid=delete-record]");
    page.once("dialog", (d) => d.dismiss());
    await page.click("[data-testid=delete-record]");
    await page.waitForTimeout(300);
    assert.equal(kdb(["get", recordId]).status, 0, "a dismissed confirmation deleted the record");
    page.once("dialog", (d) => d.accept());
    await page.click("[data-testid=delete-record]");
    await page.waitForSelector("[data-testid=deleted]");
    assert.equal(kdb(["get", recordId]).status, 1, "the record is still there");

    // A whole session.
    const before = kdbJson(["stats"]).records;
    await page.goto(`${server.url}#/timeline?session=${encodeURIComponent(victim.session_id)}`);
    page.once("dialog", (d) => d.accept());
    await page.click("[data-testid=delete-session]");
    await page.waitForSelector("[data-testid=deleted]");
    const deleted = Number(/Forgot (\d+) records/.exec(await page.locator("[data-testid=deleted]").innerText())[1]);
    assert.equal(deleted, victim.records);
    assert.equal(kdbJson(["stats"]).records, before - victim.records);
    const left = kdbJson(["search", "error", "--session", victim.session_id, "--all-namespaces", "--mode", "bm25", "--all"]);
    assert.equal(left.results.length, 0);
  } finally {
    assert.equal(await stopUi(server), 0);
  }
});

test("an empty store's views say how to fill it", { skip: SKIP }, async () => {
  const empty = join(work, "empty-store");
  assert.equal(spawnSync(BIN, ["--store", empty, "init"], { env }).status, 0);
  const child = spawn(BIN, ["--store", empty, "ui", "--no-vectors"], { env, stdio: ["ignore", "pipe", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(out.split("\n")[0].trim());
    });
    child.on("exit", (code) => reject(new Error(`ui exited ${code}`)));
  });
  try {
    for (const [view, name] of [["search?q=anything", "search"], ["timeline", "timeline"], ["health", "health"]]) {
      await page.goto(`${url}#/${view}`);
      await page.waitForSelector("[data-testid=empty-store]");
      const text = await page.locator("[data-testid=empty-store]").innerText();
      assert.match(text, /knowledge-db ingest ~\/.claude\/projects/);
      assert.match(text, /knowledge-db hook install/);
      await shot({ path: join(shots, `viewer-empty-${name}.png`) });
    }
    assert.doesNotMatch(await page.locator("main").innerText(), /\b1 sessions\b|\b0 session\b/);
  } finally {
    await new Promise((resolve) => {
      child.on("exit", resolve);
      child.kill("SIGINT");
    });
  }
});
