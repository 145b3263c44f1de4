#!/usr/bin/env node
// Times the viewer (`knowledge-db ui`) in headless Chromium on a store: the
// first contentful paint, the first view drawn (Search, and the Timeline's
// first page of sessions), and search round trips (the page's own fetch, and
// a query submitted until its hits are drawn), from the User Timing marks the
// page sets (kdb:search-view, kdb:sessions-drawn, kdb:search-drawn). Prints JSON with medians and 95th percentiles.
//
//   eval "$(scripts/setup-clients.sh)"
//   node scripts/ui-measure.mjs --store STORE [--bin target/release/knowledge-db]
//        [--loads 10] [--queries dev-sets/agent-questions/queries.jsonl]
//
// docs/viewer.md has the numbers measured with it and how the store was built.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const store = args.store;
if (!store) {
  console.error("usage: node scripts/ui-measure.mjs --store STORE [--bin BIN] [--loads N] [--queries FILE]");
  process.exit(2);
}
const bin = args.bin || join(repo, "target/release/knowledge-db");
const loads = Number(args.loads || 10);
const queriesFile = args.queries || join(repo, "dev-sets/agent-questions/queries.jsonl");
const playwright = process.env.KDB_PLAYWRIGHT_CORE || join(process.env.HOME, ".cache/knowledge-db/clients/playwright/node_modules/playwright-core");
const { chromium } = await import(pathToFileURL(join(playwright, "index.mjs")).href);

const queries = readFileSync(queriesFile, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line).text);

function stats(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { n: sorted.length, median: round(at(0.5)), p95: round(at(0.95)), max: round(sorted[sorted.length - 1]) };
}
const round = (x) => Math.round(x * 10) / 10;

const env = { ...process.env, KNOWLEDGE_DB_UPKEEP: "off" };
const child = spawn(bin, ["--store", store, "ui"], { env, stdio: ["ignore", "pipe", "inherit"] });
const url = await new Promise((resolve, reject) => {
  let out = "";
  child.stdout.on("data", (d) => {
    out += d;
    if (out.includes("\n")) resolve(out.split("\n")[0].trim());
  });
  child.on("exit", (code) => reject(new Error(`ui exited ${code}`)));
});
const profile = mkdtempSync(join(tmpdir(), "kdb-ui-measure-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.KDB_CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 960 },
});

try {
  const result = { store, url_port: new URL(url).port, loads, queries: queries.length };
  // Warm the server once (the engine and model were opened at start; this
  // only makes the first timed load like the others).
  let page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("form.search");
  await page.close();

  // Times the page marks itself (User Timing, from navigation start): the
  // search view drawn with the store's info, the first page of sessions drawn.
  const mark = (name) => page.evaluate((n) => performance.getEntriesByName(n).pop()?.startTime, name);
  const paints = [];
  const searchReady = [];
  const timelineReady = [];
  for (let i = 0; i < loads; i++) {
    page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(() => performance.getEntriesByName("kdb:search-view").length > 0);
    searchReady.push(await mark("kdb:search-view"));
    paints.push(await mark("first-contentful-paint"));
    await page.close();
    page = await context.newPage();
    await page.goto(`${url}#/timeline`);
    await page.waitForFunction(() => performance.getEntriesByName("kdb:sessions-drawn").length > 0);
    timelineReady.push(await mark("kdb:sessions-drawn"));
    await page.close();
  }
  result.first_contentful_paint_ms = stats(paints);
  result.search_view_drawn_ms = stats(searchReady);
  result.timeline_first_page_drawn_ms = stats(timelineReady);

  page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("form.search");
  const fetches = [];
  const server = [];
  for (const q of queries) {
    const [elapsed, took] = await page.evaluate(async (q) => {
      const t = performance.now();
      const answer = await (await fetch(`api/search?q=${encodeURIComponent(q)}&k=20`)).json();
      return [performance.now() - t, answer.took_ms];
    }, q);
    fetches.push(elapsed);
    server.push(took);
  }
  result.search_fetch_round_trip_ms = stats(fetches);
  result.search_server_took_ms = stats(server);

  const typed = [];
  for (const [i, q] of queries.slice(0, 20).entries()) {
    await page.fill("input[name=q]", q);
    await page.click("form.search button[type=submit]");
    await page.waitForFunction((n) => performance.getEntriesByName("kdb:search-drawn").length > n, i);
    typed.push(await page.evaluate(() => performance.getEntriesByName("kdb:search-drawn").pop().duration));
  }
  result.search_submit_to_drawn_ms = stats(typed);

  const sessions = await page.evaluate(async () => (await (await fetch("api/sessions?limit=25")).json()).total);
  result.sessions = sessions;
  const info = await page.evaluate(async () => (await fetch("api/info")).json());
  result.records = info.records;
  result.vector = info.vector;
  result.projects = await page.evaluate(async () => (await (await fetch("api/groups")).json()).groups.length);
  console.log(JSON.stringify(result, null, 2));
} finally {
  await context.close();
  child.kill("SIGINT");
  rmSync(profile, { recursive: true, force: true });
}
