// The context engine driven through OpenClaw's own harness
// (assembleHarnessContextEngine, compactContextEngineWithSafetyTimeout), with
// the real knowledge-db binary behind it.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { noteMessage } from "../src/roll.js";
import { conversation, importOpenclaw, rollingMemory, tempStore, withoutModel } from "./helpers.js";

withoutModel();
/** @type {any} */
let harness;
const clients = [];
before(async () => {
  harness = await importOpenclaw("plugin-sdk/agent-harness-runtime");
});
after(async () => {
  for (const c of clients) await c.close();
});

async function setup(options = {}) {
  const { store } = tempStore();
  const made = await rollingMemory({ store, ...options });
  clients.push(made.client);
  return { store, ...made, engine: made.memory.engine("test") };
}

const NOTE = /^\[Context rolled: (\d+) messages evicted \((\d+) tokens\)\. Full transcript searchable via memory_search\. Evicted range: (\S+) to (\S+)\]$/;

function assemble(engine, sessionId, messages, tokenBudget) {
  return harness.assembleHarnessContextEngine({
    contextEngine: engine,
    sessionId,
    sessionKey: `agent:main:${sessionId}`,
    messages,
    tokenBudget,
    modelId: "test-model",
  });
}

test("assemble over budget rolls the oldest messages out, stored first, with one exact note", async () => {
  const { engine, client, helpers } = await setup();
  const system = { role: "system", content: [{ type: "text", text: "You are the test agent." }], timestamp: 1 };
  const messages = [system, ...conversation(40)];
  const budget = 4000;
  const result = await assemble(engine, "roll-1", messages, budget);
  const out = result.messages;
  assert.ok(out.length < messages.length, "nothing evicted");
  assert.equal(out[0], system, "the system prompt left");
  const noteText = out[1].content[0].text;
  const [, n, t, first, last] = NOTE.exec(noteText) ?? assert.fail(`not the note: ${noteText}`);
  const evicted = messages.slice(1, 1 + Number(n));
  assert.equal(out.length, messages.length - Number(n) + 1);
  assert.equal(first, new Date(evicted[0].timestamp).toISOString());
  assert.equal(last, new Date(evicted.at(-1).timestamp).toISOString());
  assert.equal(Number(t), evicted.reduce((a, m) => a + helpers.estimateTokens(m), 0));
  // OpenClaw's own count of what it will send: within target × budget.
  const sent = out.reduce((a, m) => a + helpers.estimateTokens(m), 0);
  assert.equal(result.estimatedTokens, sent);
  assert.ok(sent <= 0.8 * budget, `${sent} tokens kept`);
  assert.ok(out.length - 2 >= 10, "fewer than minKeepMessages kept");
  // No tool result without its call.
  const calls = new Set(out.flatMap((m) => (m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : [])));
  for (const m of out) if (m.role === "toolResult") assert.ok(calls.has(m.toolCallId), `orphan ${m.toolCallId}`);
  // Every evicted message is searchable, by its own words.
  const payload = await client.call("memory_search", { query: "zq2marker", namespace: "openclaw", format: "openclaw" });
  assert.match(payload.results[0].path, /^roll-1:user@/);
  assert.equal(payload.results[0].source, "sessions");
  // The next assemble (same history plus a turn) keeps the frontier and one note.
  const more = [...messages, ...conversation(1)];
  const again = await assemble(engine, "roll-1", more, budget);
  assert.equal(again.messages.filter((m) => NOTE.test(m.content?.[0]?.text ?? "")).length, 1);
  assert.ok(again.estimatedTokens <= budget);
});

test("compact through OpenClaw's safety timeout evicts to the target and reports the note", async () => {
  const { engine } = await setup();
  const messages = conversation(30);
  await assemble(engine, "compact-1", messages, 100_000); // fits: nothing evicted
  const result = await harness.compactContextEngineWithSafetyTimeout(
    engine,
    { sessionId: "compact-1", sessionKey: "agent:main:compact-1", tokenBudget: 3000, force: true },
    30_000,
  );
  assert.equal(result.ok, true, JSON.stringify(result));
  assert.equal(result.compacted, true);
  assert.match(result.result.summary, NOTE);
  assert.ok(result.result.tokensAfter <= 0.8 * 3000, JSON.stringify(result.result));
  assert.ok(result.result.tokensBefore > result.result.tokensAfter);
  const after = await assemble(engine, "compact-1", messages, 3000);
  assert.equal(after.messages[0].content[0].text, result.result.summary);
  // Already within the target: nothing to evict, said so.
  const idle = await harness.compactContextEngineWithSafetyTimeout(
    engine,
    { sessionId: "compact-1", sessionKey: "agent:main:compact-1", tokenBudget: 3000, force: true },
    30_000,
  );
  assert.equal(idle.compacted, false);
  assert.match(idle.reason, /already fits/);
});

test("commitTurn writes once per advancementKey, also after a restart", async () => {
  const { store, engine } = await setup();
  const turn = conversation(1);
  assert.deepEqual(await engine.commitTurn({ advancementKey: "turn-1", sessionId: "commit-1", messages: turn }), { status: "committed" });
  assert.deepEqual(await engine.commitTurn({ advancementKey: "turn-1", sessionId: "commit-1", messages: turn }), { status: "duplicate" });
  // A new gateway (new memory, new child): the key is read back from the store.
  const { memory } = await (async () => {
    const made = await rollingMemory({ store });
    clients.push(made.client);
    return made;
  })();
  const fresh = memory.engine("test");
  assert.deepEqual(await fresh.commitTurn({ advancementKey: "turn-1", sessionId: "commit-1", messages: turn }), { status: "duplicate" });
  assert.deepEqual(await fresh.commitTurn({ advancementKey: "turn-2", sessionId: "commit-1", messages: conversation(1) }), { status: "committed" });
  assert.equal(engine.info.transcriptSemantics.turnAdvancementIdempotency, "atomic-idempotent-v1");
  assert.equal(engine.info.ownsCompaction, true);
});

test("without a writable store nothing is evicted and compaction goes to OpenClaw's own", async () => {
  const { helpers } = await rollingMemory({ store: "/nonexistent" });
  /** @type {any[]} */
  const delegated = [];
  const { engine, logger } = await setup({
    binary: "/nonexistent/knowledge-db",
    delegate: async (params) => {
      delegated.push(params);
      // OpenClaw's real delegate, which has no live session to compact here.
      return helpers.delegate(params).catch((error) => ({ ok: false, compacted: false, reason: String(error) }));
    },
  });
  const messages = conversation(30);
  const assembled = await assemble(engine, "down-1", messages, 2000);
  assert.equal(assembled.messages.length, messages.length, "evicted without a store");
  assert.equal(assembled.promptAuthority, "preassembly_may_overflow");
  const result = await harness.compactContextEngineWithSafetyTimeout(
    engine,
    { sessionId: "down-1", sessionKey: "agent:main:down-1", tokenBudget: 2000, force: true },
    30_000,
  );
  assert.equal(delegated.length, 1, JSON.stringify(result));
  assert.equal(delegated[0].sessionId, "down-1");
  assert.ok(logger.seen.warn.some((w) => w.includes("rolling mode without recall is amnesia")), JSON.stringify(logger.seen));
});

test("the child is restarted when it dies", async () => {
  const { client, engine } = await setup();
  await engine.ingest({ sessionId: "restart-1", message: conversation(1)[0] });
  const pid = client.pid();
  assert.ok(pid, "no child");
  process.kill(pid, "SIGKILL");
  // Wait for the client to see the child's exit (its close event), not for a
  // fixed time: on a loaded machine 300 ms was not always enough.
  for (const since = Date.now(); client.pid() !== null; ) {
    assert.ok(Date.now() - since < 60_000, "the child's exit was never seen");
    await new Promise((r) => setTimeout(r, 20));
  }
  const result = await engine.ingest({ sessionId: "restart-1", message: conversation(1)[0] });
  assert.equal(result.ingested, true);
  assert.notEqual(client.pid(), pid);
  assert.equal(client.starts, 2);
});

test("the note message counts like any message", async () => {
  const { helpers } = await rollingMemory({ store: "/nonexistent" });
  const note = noteMessage({ count: 3, tokens: 99, firstTs: 0, lastTs: 1000 });
  assert.ok(helpers.estimateTokens(note) > 10);
});
