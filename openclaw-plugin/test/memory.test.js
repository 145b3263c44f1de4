// The memory slot: memory_search / memory_get tools and the search manager, on
// the real binary, in OpenClaw's shapes.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import plugin, { closeAll } from "../index.js";
import { binary, tempStore, withoutModel } from "./helpers.js";

withoutModel();

/** Registers the plugin on a recording api and returns what it registered. */
function registerOn(pluginConfig) {
  const registered = { tools: new Map(), engines: new Map(), memory: null, cli: [] };
  plugin.register({
    pluginConfig,
    logger: { warn() {}, info() {} },
    registerTool: (factory, opts) => {
      for (const name of opts.names) registered.tools.set(name, factory({}));
    },
    registerContextEngine: (id, factory) => registered.engines.set(id, factory),
    registerMemoryCapability: (capability) => {
      registered.memory = capability;
    },
    registerCli: (registrar, opts) => registered.cli.push(opts),
  });
  return registered;
}

const KEYS = ["path", "startLine", "endLine", "score", "textScore", "snippet", "source", "citation"];
let store;
let api;
let manager;

before(async () => {
  ({ store } = tempStore());
  const records = [];
  for (let turn = 1; turn <= 8; turn++) {
    records.push({
      kind: "message", id: `sess-a:m${turn}`, session_id: "sess-a", turn_index: turn,
      role: turn % 2 ? "user" : "assistant", namespace: "openclaw",
      text: `turn ${turn}: the flaky websocket reconnect in ws_client.ts retried without backoff`,
    });
  }
  records.push({
    segment_id: "seg-ws", session_id: "sess-a", start_turn: 3, end_turn: 6, namespace: "openclaw",
    topic: "Websocket reconnect loop", compressed_content: "Added jittered exponential backoff in ws_client.ts.",
    key_files: ["src/net/ws_client.ts"],
  });
  records.push({ id: "note-other", namespace: "elsewhere", text: "websocket notes in another namespace" });
  const file = join(store, "..", "records.jsonl");
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join("\n"));
  execFileSync(binary(), ["--store", store, "add", file], { stdio: "ignore" });
  api = registerOn({ binary: binary(), store });
  const { manager: m } = await api.memory.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  manager = m;
});

after(async () => {
  await manager?.close();
  await closeAll();
});

test("the plugin registers both slots' surfaces", () => {
  assert.deepEqual([...api.tools.keys()].sort(), ["memory_get", "memory_search"]);
  assert.deepEqual([...api.engines.keys()], ["knowledge-db"]);
  assert.equal(api.cli[0].descriptors[0].name, "knowledge-db");
});

test("memory_search answers in OpenClaw's MemorySearchResult shape, in its namespace", async () => {
  const result = await api.tools.get("memory_search").execute("call-1", { query: "websocket reconnect backoff", maxResults: 3 });
  const payload = result.details;
  assert.equal(result.content[0].type, "text");
  assert.deepEqual(JSON.parse(result.content[0].text), payload);
  assert.ok(payload.results.length > 0 && payload.results.length <= 3, JSON.stringify(payload));
  for (const r of payload.results) {
    for (const key of KEYS) assert.ok(key in r, `${key} missing in ${JSON.stringify(r)}`);
    assert.ok(r.snippet.endsWith(`Source: ${r.citation}`));
    assert.notEqual(r.path, "note-other", "searched outside the namespace");
  }
  const segment = payload.results.find((r) => r.path === "seg-ws");
  assert.ok(segment, "the segment is found");
  assert.equal(segment.startLine, 3);
  assert.equal(segment.endLine, 6);
  assert.equal(segment.source, "sessions");
});

test("memory_search names query words no stored record holds, for the model to read", async () => {
  const result = await api.tools.get("memory_search").execute("call-2", { query: "Kubernetes websocket reconnect" });
  const payload = result.details;
  assert.ok(payload.results.length > 0, JSON.stringify(payload));
  assert.deepEqual(payload.unknownWords, ["Kubernetes"]);
  assert.deepEqual(JSON.parse(result.content[0].text).unknownWords, ["Kubernetes"]);
  const known = await api.tools.get("memory_search").execute("call-3", { query: "websocket reconnect" });
  assert.equal(known.details.unknownWords, undefined);
});

test("maxResults and minScore are honoured", async () => {
  const one = await manager.search("websocket", { maxResults: 1 });
  assert.equal(one.length, 1);
  const all = await manager.search("websocket", { maxResults: 20 });
  assert.ok(all.length > 1);
  const cut = all[1].score;
  const high = await manager.search("websocket", { maxResults: 20, minScore: cut });
  assert.ok(high.every((r) => r.score >= cut) && high.length < all.length + 1 && high.length >= 1);
  assert.deepEqual(await manager.search("websocket", { minScore: 1e9 }), []);
});

test("memory_get reads a segment with its turn range, paged", async () => {
  const page = (await api.tools.get("memory_get").execute("call-2", { path: "seg-ws", from: 3, lines: 2 })).details;
  assert.equal(page.path, "seg-ws");
  assert.match(page.text, /# Websocket reconnect loop/);
  assert.match(page.text, /\[turn 3\] user: turn 3/);
  assert.match(page.text, /\[turn 4\] assistant: turn 4/);
  assert.doesNotMatch(page.text, /\[turn 5\]/);
  assert.equal(page.nextFrom, 5);
  assert.equal(page.truncated, true);
  const message = await manager.readFile({ relPath: "sess-a:m7" });
  assert.equal(message.status, "ok");
  assert.match(message.text, /turn 7: the flaky websocket/);
  const missing = await manager.readFile({ relPath: "no-such-record" });
  assert.deepEqual(missing, { status: "not_found", text: "", path: "no-such-record" });
  const failed = (await api.tools.get("memory_get").execute("call-3", { path: "no-such-record" })).details;
  assert.equal(failed.disabled, true);
  assert.match(failed.error, /no-such-record/);
});

test("memory_get also takes a record id, as recalled memories name it", async () => {
  const byId = (await api.tools.get("memory_get").execute("call-5", { id: "sess-a:m7" })).details;
  const byPath = (await api.tools.get("memory_get").execute("call-6", { path: "sess-a:m7" })).details;
  assert.deepEqual(byId, byPath);
  assert.match(byId.text, /turn 7: the flaky websocket/);
  const neither = (await api.tools.get("memory_get").execute("call-7", {})).details;
  assert.equal(neither.disabled, true);
  assert.match(neither.error, /`path`.*`id`/);
});

test("status and probes say what the store holds", async () => {
  assert.equal(await manager.probeVectorStoreAvailability(), true);
  const status = manager.status();
  assert.equal(status.provider, "knowledge-db");
  assert.equal(status.custom.records, 10);
  assert.equal(status.custom.vectorsWaiting, 10);
  assert.equal(status.dbPath, store);
  assert.equal(status.custom.modelPresent, false);
  assert.equal(status.vector.available, false);
  const probe = await manager.probeEmbeddingAvailability();
  assert.equal(probe.ok, false);
  assert.match(probe.error, /unavailable/);
});

test("an unreachable binary gives OpenClaw's unavailable payload, not an exception", async () => {
  const broken = registerOn({ binary: "/nonexistent/knowledge-db", store });
  const result = (await broken.tools.get("memory_search").execute("call-4", { query: "x" })).details;
  assert.equal(result.unavailable, true);
  assert.deepEqual(result.results, []);
  assert.match(result.error, /nonexistent/);
  const { manager: none, error } = await broken.memory.runtime.getMemorySearchManager({ cfg: {}, agentId: "main" });
  // The manager exists and says the truth in its status.
  assert.ok(none || error);
  if (none) assert.match(String(none.status().custom.error), /nonexistent/);
});
