#!/usr/bin/env node
// Rolls the largest real Claude Code sessions through OpenClaw's harness with
// the knowledge-db context engine, then looks every evicted message up again.
//
//   node bench/roll-transcripts.mjs [DIR] [N] [--budget 50000] [--bin PATH] [--with-model]
//
// DIR defaults to shared/eval/transcripts/claude-code-entire-cli (beside the
// checkout, see test/transcripts.js), N to 20 (the largest by decompressed
// size). Each session is read by `knowledge-db evict --dry-run` and turned into
// OpenClaw messages, then replayed one user turn at a time (rollSession in
// test/transcripts.js): the history so far goes to the engine (afterTurn,
// which stores what is new); when it exceeds the budget,
// compactContextEngineWithSafetyTimeout runs (timed), then
// assembleHarnessContextEngine (its estimatedTokens must be within budget).
// Afterwards each evicted message with at least 3 words is searched with
// memory_search (top 10, through the plugin's client) by its own first 16
// words. Without --with-model the store has no vectors (BM25), as in
// benches/evict-replay.py. Not run by CI.

import { join, resolve } from "node:path";

import { messageKeys, messageText } from "../src/messages.js";
import { searchPayload } from "../src/memory.js";
import { rollNote } from "../src/roll.js";
import { parseArgs } from "./args.mjs";
import { REPO, importOpenclaw, rollingMemory, tempStore, withoutModel } from "../test/helpers.js";
import { TRANSCRIPTS, largestTranscripts, readTranscript, rollSession, sessionIdOf, sharedEval } from "../test/transcripts.js";

const { args, flag, present } = parseArgs();
const budget = Number(flag("--budget", "50000"));
const bin = resolve(flag("--bin", join(REPO, "target/release/knowledge-db")));
process.env.KNOWLEDGE_DB_BIN = bin; // the helpers' store init uses it too
const withModel = present("--with-model");
const dir = resolve(args[0] ?? sharedEval(TRANSCRIPTS));
const count = Number(args[1] ?? 20);
if (!withModel) withoutModel();
const files = largestTranscripts(dir, count);

const { store } = tempStore();
const { memory, client, helpers } = await rollingMemory({ store, binary: bin });
const harness = await importOpenclaw("plugin-sdk/agent-harness-runtime");
const engine = memory.engine("bench");
const tokens = (list) => list.reduce((a, m) => a + helpers.estimateTokens(m), 0);
const percentile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * q) - 1))] : NaN;
};

const rows = [];
const compactMs = [];
const assembleMs = [];
const evictedAll = [];
const notes = [];
let overBudget = 0;
for (const f of files) {
  const messages = readTranscript(bin, store, f);
  const sessionId = sessionIdOf(f);
  const replay = await rollSession({ harness, engine, memory, sessionId, messages, budget, tokens });
  compactMs.push(...replay.compactMs);
  assembleMs.push(...replay.assembleMs);
  overBudget += replay.overBudget;
  const compactions = replay.compactions;
  const s = memory.session(sessionId);
  const keys = messageKeys(messages);
  const through = s.evicted ? keys.lastIndexOf(s.evicted.throughKey) : -1;
  const evicted = messages.slice(0, through + 1).filter((m) => m.role !== "system");
  evicted.forEach((m) => evictedAll.push({ id: `${sessionId}:${keys[messages.indexOf(m)]}`, text: messageText(m) }));
  rows.push({ session: sessionId, messages: messages.length, tokens: tokens(messages), evicted: s.evicted?.count ?? 0, evictedTokens: s.evicted?.tokens ?? 0, compactions });
  if (s.evicted) notes.push(rollNote(s.evicted));
}

let asked = 0;
let top10 = 0;
let top1 = 0;
for (const e of evictedAll) {
  const words = e.text.split(/\s+/).filter(Boolean);
  if (words.length < 3) continue;
  asked += 1;
  const payload = await searchPayload(client, "openclaw", words.slice(0, 16).join(" "), { maxResults: 10 });
  const rank = payload.results.findIndex((r) => r.path === e.id);
  if (rank >= 0) top10 += 1;
  if (rank === 0) top1 += 1;
}
await client.close();

console.log(`budget ${budget} tokens (OpenClaw's estimate), ${files.length} largest sessions of ${dir}, ${withModel ? "hybrid" : "BM25 (no model)"}`);
console.log("session                               messages   tokens  evicted  evicted tokens  compactions");
for (const r of rows) {
  console.log(`${r.session.padEnd(37)} ${String(r.messages).padStart(8)} ${String(r.tokens).padStart(8)} ${String(r.evicted).padStart(8)} ${String(r.evictedTokens).padStart(15)} ${String(r.compactions).padStart(12)}`);
}
for (const note of notes) console.log(note);
const total = (k) => rows.reduce((a, r) => a + r[k], 0);
console.log(
  JSON.stringify(
    {
      sessions: rows.length,
      messages: total("messages"),
      evicted_messages: total("evicted"),
      evicted_tokens: total("evictedTokens"),
      sessions_with_eviction: rows.filter((r) => r.evicted > 0).length,
      compactions: compactMs.length,
      compaction_ms: { p50: percentile(compactMs, 0.5), p95: percentile(compactMs, 0.95), max: Math.max(...compactMs) },
      assemble_ms: { p50: percentile(assembleMs, 0.5), p95: percentile(assembleMs, 0.95), calls: assembleMs.length },
      assembled_over_budget: overBudget,
      searched: asked,
      found_top10: top10,
      found_top10_share: asked ? top10 / asked : null,
      found_first_share: asked ? top1 / asked : null,
    },
    null,
    1,
  ),
);
