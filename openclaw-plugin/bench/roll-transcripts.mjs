#!/usr/bin/env node
// Rolls the largest real Claude Code sessions through OpenClaw's harness with
// the knowledge-db context engine, then looks every evicted message up again.
//
//   node bench/roll-transcripts.mjs [DIR] [N] [--budget 50000] [--bin PATH] [--with-model]
//
// DIR defaults to ../shared/eval/transcripts/claude-code-entire-cli (beside the
// checkout), N to 20 (the largest by decompressed size). Each session is read by
// `knowledge-db evict --dry-run` (the library's transcript reader; like `evict`
// it starts at the last compaction boundary, the live context) and turned into
// OpenClaw messages (user, assistant with text/thinking/toolCall blocks,
// toolResult). It is replayed one user turn at a time: the history so far goes
// to the engine (afterTurn, which stores what is new); when it exceeds the
// budget, compactContextEngineWithSafetyTimeout runs (timed), then
// assembleHarnessContextEngine (its estimatedTokens must be within budget).
// Afterwards each evicted message with at least 3 words is searched with
// memory_search (top 10, through the plugin's client) by its own first 16
// words. Without --with-model the store has no vectors (BM25), as in
// benches/evict-replay.py. Not run by CI.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { gunzipSync } from "node:zlib";

import { messageKeys, messageText } from "../src/messages.js";
import { searchPayload } from "../src/memory.js";
import { rollNote } from "../src/roll.js";
import { parseArgs } from "./args.mjs";
import { REPO, importOpenclaw, rollingMemory, tempStore, withoutModel } from "../test/helpers.js";

const { args, flag, present } = parseArgs();
const budget = Number(flag("--budget", "50000"));
const bin = resolve(flag("--bin", join(REPO, "target/release/knowledge-db")));
const withModel = present("--with-model");
const dir = resolve(args[0] ?? join(REPO, "../shared/eval/transcripts/claude-code-entire-cli"));
const count = Number(args[1] ?? 20);
if (!withModel) withoutModel();

const read = (f) => (f.endsWith(".gz") ? gunzipSync(readFileSync(f)) : readFileSync(f));
const files = readdirSync(dir)
  .filter((f) => /\.jsonl(\.gz)?$/.test(f))
  .map((f) => ({ f: join(dir, f), size: read(join(dir, f)).length }))
  .sort((a, b) => b.size - a.size)
  .slice(0, count);

/** knowledge-db's generic message (as `evict` prints it) as OpenClaw messages. */
function toOpenClaw(generic) {
  const ts = Date.parse(generic.timestamp);
  const blocks = typeof generic.content === "string" ? [{ type: "text", text: generic.content }] : generic.content ?? [];
  if (generic.role === "assistant") {
    const content = blocks.flatMap((b) => {
      if (b.type === "text") return [{ type: "text", text: b.text }];
      if (b.type === "thinking") return [{ type: "thinking", thinking: b.thinking ?? "" }];
      if (b.type === "tool_use") return [{ type: "toolCall", id: b.id, name: b.name, arguments: b.input ?? {} }];
      return [];
    });
    return [{ role: "assistant", content, timestamp: ts }];
  }
  const results = blocks.filter((b) => b.type === "tool_result");
  if (results.length) {
    return results.map((b) => ({
      role: "toolResult",
      toolCallId: b.tool_use_id,
      content: [{ type: "text", text: typeof b.content === "string" ? b.content : (b.content ?? []).map((c) => c.text ?? "").join("\n") }],
      isError: Boolean(b.is_error),
      timestamp: ts,
    }));
  }
  const text = blocks.filter((b) => b.type === "text").map((b) => b.text).join("\n");
  return [{ role: generic.role === "system" ? "system" : "user", content: [{ type: "text", text }], timestamp: ts }];
}

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
for (const { f } of files) {
  const out = execFileSync(bin, ["--store", store, "evict", "--transcript", f, "--context-window", "1000000000", "--dry-run"], {
    maxBuffer: 1 << 30,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const messages = out.split("\n").filter(Boolean).flatMap((l) => toOpenClaw(JSON.parse(l)));
  const sessionId = f.split("/").at(-1).replace(/\.jsonl(\.gz)?$/, "");
  const sessionKey = `agent:bench:${sessionId}`;
  let compactions = 0;
  const turnStarts = messages.map((m, i) => (m.role === "user" ? i : -1)).filter((i) => i > 0);
  for (const end of [...turnStarts, messages.length]) {
    const history = messages.slice(0, end);
    await engine.afterTurn({ sessionId, sessionKey, messages: history, prePromptMessageCount: 0, tokenBudget: budget, sessionFile: "" });
    if (tokens(memory.visible(memory.session(sessionId), history)) > budget) {
      const t0 = performance.now();
      const r = await harness.compactContextEngineWithSafetyTimeout(engine, { sessionId, sessionKey, tokenBudget: budget }, 120_000);
      compactMs.push(performance.now() - t0);
      if (!r.ok) throw new Error(`compaction failed: ${JSON.stringify(r)}`);
      if (r.compacted) compactions += 1;
    }
    const t1 = performance.now();
    const assembled = await harness.assembleHarnessContextEngine({ contextEngine: engine, sessionId, sessionKey, messages: history, tokenBudget: budget, modelId: "bench" });
    assembleMs.push(performance.now() - t1);
    if (assembled.estimatedTokens > budget) overBudget += 1;
  }
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
