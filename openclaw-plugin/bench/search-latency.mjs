#!/usr/bin/env node
// memory_search latency through the plugin: the manager's search() (OpenClaw's
// MemorySearchResult shape, via the long-lived `knowledge-db mcp` child and the
// official MCP TypeScript SDK), one call at a time, as OpenClaw makes them.
//
//   node bench/search-latency.mjs STORE QUERIES.jsonl [CALLS=1000] [--bin PATH] [--namespace NS]
//
// QUERIES.jsonl has one {"text": ...} a line (`knowledge-db bench gen` writes
// queries.jsonl). Prints p50/p95/p99/mean/max in ms, the first call (child
// start included) apart, and how many calls found nothing. Not run by CI.
//
//   knowledge-db bench gen --from ../shared/eval/transcripts/claude-code-entire-cli --records 10000 --out /tmp/g10k
//   knowledge-db --store /tmp/s10k init && knowledge-db --store /tmp/s10k add /tmp/g10k/corpus.jsonl
//   node bench/search-latency.mjs /tmp/s10k /tmp/g10k/queries.jsonl 1000 --namespace '*'

import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { KnowledgeDbClient } from "../src/client.js";
import { createManager } from "../src/memory.js";
import { parseArgs } from "./args.mjs";
import { REPO } from "../test/helpers.js";

const { args, flag } = parseArgs();
const bin = resolve(flag("--bin", join(REPO, "target/release/knowledge-db")));
const namespace = flag("--namespace", "*");
const [store, queriesFile, callsArg] = args;
if (!store || !queriesFile) {
  console.error("usage: node bench/search-latency.mjs STORE QUERIES.jsonl [CALLS] [--bin PATH] [--namespace NS]");
  process.exit(2);
}
const calls = Number(callsArg ?? 1000);
const queries = readFileSync(queriesFile, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l).text);

const client = new KnowledgeDbClient({ binary: bin, store, namespace });
const started = performance.now();
const manager = await createManager(client, namespace);
const readyMs = performance.now() - started;
const status = manager.status();
const times = [];
let empty = 0;
for (let i = 0; i < calls; i++) {
  const t = performance.now();
  const results = await manager.search(queries[i % queries.length], { maxResults: 10 });
  times.push(performance.now() - t);
  if (!results.length) empty += 1;
}
await client.close();
times.sort((a, b) => a - b);
const pct = (q) => times[Math.min(times.length - 1, Math.max(0, Math.ceil(times.length * q) - 1))];
console.log(
  JSON.stringify(
    {
      calls,
      records: status.custom?.records,
      vector_search: status.custom?.vectorSearch,
      p50_ms: pct(0.5),
      p95_ms: pct(0.95),
      p99_ms: pct(0.99),
      mean_ms: times.reduce((a, b) => a + b, 0) / times.length,
      max_ms: times.at(-1),
      child_start_and_status_ms: readyMs,
      calls_without_results: empty,
    },
    null,
    1,
  ),
);
