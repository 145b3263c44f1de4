// Recall in the context engine, driven through OpenClaw's own harness
// (assembleHarnessContextEngine, compactContextEngineWithSafetyTimeout) on a
// real Claude Code session rolled at a small budget, with the real binary and
// the embedding model loaded: recall's calibrated scores need vectors, and
// the mcp child embeds what memory_add writes when the model is there.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { messageKeys, messageText } from "../src/messages.js";
import { textMessage } from "../src/recall.js";
import { importOpenclaw, rollingMemory, tempStore } from "./helpers.js";
import { TRANSCRIPTS, readTranscript, rollSession, sharedEval } from "./transcripts.js";

// A session about resume integration tests failing after a dependency update
// (143 messages, 32k tokens by OpenClaw's estimate).
const SESSION = "0a76fbfe-d767-433e-b4b1-a39e044f21e8";
const BUDGET = 20_000;
const ON_TOPIC = "Why were the resume integration tests failing with \"you have uncommitted changes\" on the dependency update branch?";
const OFF_TOPIC = [
  "Give me a recipe for banana bread that uses only three bananas and no butter",
  "Write a haiku about the first snow of winter",
];
const RECALLED = /^knowledge-db recalled \d+ memor/m;

/** @type {any} */
let harness;
/** @type {Awaited<ReturnType<typeof rollingMemory>>} */
let gateway;
/** @type {any} */
let engine;
/** @type {string} */
let store;
/** @type {any[]} */
let messages;
/** @type {Set<string>} */
let evictedIds;
const clients = [];

/** @param {any[]} list */
const tokens = (list) => list.reduce((a, m) => a + gateway.helpers.estimateTokens(m), 0);
const idsOf = (/** @type {any[]} */ list) => {
  const keys = messageKeys(list);
  return list.map((_, i) => `${SESSION}:${keys[i]}`);
};

/**
 * @param {any} eng
 * @param {any[]} history
 * @param {string | undefined} prompt
 * @param {number} [budget]
 */
function assemble(eng, history, prompt, budget = BUDGET) {
  return harness.assembleHarnessContextEngine({
    contextEngine: eng,
    sessionId: SESSION,
    sessionKey: `agent:main:${SESSION}`,
    messages: history,
    tokenBudget: budget,
    modelId: "test-model",
    ...(prompt === undefined ? {} : { prompt }),
  });
}

/** The record ids a recall block names. */
function recalledIds(/** @type {string | undefined} */ addition) {
  return [...String(addition ?? "").matchAll(/^ {3}id (\S+); read it whole/gm)].map((m) => m[1]);
}

/** The ids of the messages an assemble result holds. */
function inContext(/** @type {any[]} */ history, /** @type {any[]} */ shown) {
  const ids = idsOf(history);
  return new Set(shown.map((m) => ids[history.indexOf(m)]).filter(Boolean));
}

/** A turn as OpenClaw appends it: the prompt, then the reply. */
function turn(/** @type {string} */ prompt, /** @type {string} */ reply, /** @type {number} */ at) {
  return [
    { role: "user", content: [{ type: "text", text: prompt }], timestamp: at },
    { role: "assistant", content: [{ type: "text", text: reply }], timestamp: at + 1000 },
  ];
}

before(async () => {
  harness = await importOpenclaw("plugin-sdk/agent-harness-runtime");
  ({ store } = tempStore());
  gateway = await rollingMemory({ store });
  clients.push(gateway.client);
  engine = gateway.memory.engine("test");
  const stats = await gateway.client.call("memory_stats", {});
  assert.equal(stats.vector, "used", `recall needs the embedding model (scripts/setup-model.sh), the child says: ${stats.vector}`);
  messages = readTranscript(gateway.client.config.binary, store, `${sharedEval(TRANSCRIPTS)}/${SESSION}.jsonl.gz`);
  await rollSession({ harness, engine, memory: gateway.memory, sessionId: SESSION, messages, budget: BUDGET, tokens });
  const s = gateway.memory.session(SESSION);
  assert.ok(s.evicted && s.evicted.count > 20, `the session did not roll: ${JSON.stringify(s.evicted)}`);
  const through = messageKeys(messages).lastIndexOf(s.evicted.throughKey);
  evictedIds = new Set(idsOf(messages).slice(0, through + 1));
  const vectors = (await gateway.client.call("memory_stats", {})).vectors;
  assert.equal(vectors.without_vector, 0, "memory_add left records without a vector");
});

after(async () => {
  for (const c of clients) await c.close();
});

test("a prompt about evicted work gets it back in systemPromptAddition, counted in estimatedTokens", async () => {
  const source = messages.find((m) => m.role === "assistant" && messageText(m).startsWith("The integration tests are failing with the error"));
  assert.ok(source, "the source message is not in the session");
  const sourceId = idsOf(messages)[messages.indexOf(source)];
  assert.ok(evictedIds.has(sourceId), "the source message was not evicted");

  const result = await assemble(engine, messages, ON_TOPIC);
  assert.match(result.systemPromptAddition ?? "", RECALLED, JSON.stringify(gateway.logger.seen));
  const ids = recalledIds(result.systemPromptAddition);
  assert.ok(ids.includes(sourceId), `${sourceId} not recalled: ${ids}`);
  for (const id of ids) assert.ok(evictedIds.has(id), `${id} was not evicted`);
  assert.equal(result.estimatedTokens, tokens(result.messages) + gateway.helpers.estimateTokens(textMessage(result.systemPromptAddition)));
  assert.ok(result.estimatedTokens <= BUDGET, `${result.estimatedTokens} tokens`);
});

test("an off-topic prompt gets nothing", async () => {
  for (const prompt of OFF_TOPIC) {
    const result = await assemble(engine, messages, prompt);
    assert.doesNotMatch(result.systemPromptAddition ?? "", RECALLED, prompt);
    assert.equal(result.estimatedTokens, tokens(result.messages));
    assert.ok(gateway.memory.session(SESSION).lastRecall?.recalled.whyNot, "no reason given for recalling nothing");
  }
});

test("a message still in the context is never recalled", async () => {
  const shown = (await assemble(engine, messages, undefined)).messages;
  const live = inContext(messages, shown);
  // A long assistant text still in the context, asked about in its own words.
  const kept = shown.filter((m) => m.role === "assistant" && messageText(m).split(/\s+/).length >= 20).at(-1);
  assert.ok(kept, "no assistant text left in the context");
  const keptId = idsOf(messages)[messages.indexOf(kept)];
  const prompt = messageText(kept).split(/\s+/).slice(0, 30).join(" ");
  // Unexcluded, the store would recall it: the exclusion is what keeps it out.
  const unexcluded = await gateway.client.call("memory_recall", { prompt, project: "*" });
  assert.ok(unexcluded.memories.some((/** @type {any} */ m) => m.id === keptId), `${keptId} not recalled even unexcluded: ${JSON.stringify(unexcluded.whyNot)}`);

  const result = await assemble(engine, messages, prompt);
  const ids = recalledIds(result.systemPromptAddition);
  assert.ok(!ids.includes(keptId), `${keptId} is in the context and was recalled`);
  for (const id of ids) assert.ok(!live.has(id), `${id} is in the context and was recalled`);
});

test("the same prompt in the next turn does not inject the same memory again; a retried attempt gets the same block", async () => {
  const s = gateway.memory.session(SESSION);
  const told = new Set(s.recalled);
  assert.ok(told.size > 0, "nothing was recalled before");
  const start = Number(messages.at(-1).timestamp) + 60_000;
  const next = [...messages, ...turn(ON_TOPIC, "They failed because .entire/ was not ignored in the test repositories.", start)];
  await engine.afterTurn({ sessionId: SESSION, sessionKey: `agent:main:${SESSION}`, messages: next, tokenBudget: BUDGET });
  const again = await assemble(engine, next, ON_TOPIC);
  const ids = recalledIds(again.systemPromptAddition);
  for (const id of ids) assert.ok(!told.has(id), `${id} injected twice`);
  const retried = await assemble(engine, next, ON_TOPIC);
  assert.equal(retried.systemPromptAddition, again.systemPromptAddition);
  assert.equal(retried.estimatedTokens, again.estimatedTokens);

  // The turn ends; a new gateway (new engine, new child) reads the set back.
  const told2 = new Set(s.recalled);
  const third = [...next, ...turn(ON_TOPIC, "As said: .entire/ was not ignored.", start + 60_000)];
  await engine.afterTurn({ sessionId: SESSION, sessionKey: `agent:main:${SESSION}`, messages: third, tokenBudget: BUDGET });
  const restarted = await rollingMemory({ store });
  clients.push(restarted.client);
  const fresh = await assemble(restarted.memory.engine("test"), third, ON_TOPIC);
  for (const id of recalledIds(fresh.systemPromptAddition)) assert.ok(!told2.has(id), `${id} injected again after a restart`);
  assert.deepEqual(new Set(restarted.memory.session(SESSION).recalled.slice(0, told2.size)), told2);
});

test("recall searches the plugin's namespace only", async () => {
  const note = { id: "note-elsewhere", namespace: "elsewhere", text: "The resume integration tests failed with \"you have uncommitted changes\" on the dependency update branch because .entire/ was not ignored." };
  await gateway.client.call("memory_add", { records: [note] });
  // A child of every namespace recalls it: the namespace is what keeps it out.
  const everywhere = await rollingMemory({ store, config: { namespace: "*" } });
  clients.push(everywhere.client);
  const wide = await everywhere.client.call("memory_recall", { prompt: ON_TOPIC, project: "*" });
  assert.ok(wide.memories.some((/** @type {any} */ m) => m.id === note.id), JSON.stringify(wide.memories.map((/** @type {any} */ m) => m.id)));
  const result = await assemble(engine, [], ON_TOPIC);
  assert.doesNotMatch(result.systemPromptAddition ?? "", /note-elsewhere/);
});

test("recall: false recalls nothing", async () => {
  const off = await rollingMemory({ store, config: { recall: false } });
  clients.push(off.client);
  const result = await assemble(off.memory.engine("test"), messages, ON_TOPIC);
  assert.equal(result.systemPromptAddition, undefined);
  assert.equal(off.memory.session(SESSION).lastRecall, null);
});

test("without the store assemble still works: no recall, a warning", async () => {
  const down = await rollingMemory({ store, binary: "/nonexistent/knowledge-db" });
  clients.push(down.client);
  const result = await assemble(down.memory.engine("test"), messages.slice(0, 20), ON_TOPIC, 1_000_000);
  assert.equal(result.messages.length, 20);
  assert.equal(result.systemPromptAddition, undefined);
  assert.ok(down.logger.seen.warn.some((w) => w.includes("recall is unavailable")), JSON.stringify(down.logger.seen));
});

test("older messages leave to make room for the recalled block", async () => {
  const fresh = await rollingMemory({ store });
  clients.push(fresh.client);
  const eng = fresh.memory.engine("test");
  const shown = (await assemble(eng, messages, undefined)).messages;
  const full = tokens(shown);
  const before = fresh.memory.session(SESSION).evicted?.count ?? 0;
  // Whatever the tests above recalled may come again here.
  fresh.memory.session(SESSION).recalled = [];
  // The context just fits: the block can only come in if older messages leave.
  const prompt = "what did we find about the .gitignore for .entire in the test environment";
  const result = await assemble(eng, messages, prompt, full + 50);
  assert.match(result.systemPromptAddition ?? "", RECALLED);
  assert.ok((fresh.memory.session(SESSION).evicted?.count ?? 0) > before, "nothing left to make room");
  assert.ok(result.estimatedTokens <= full + 50, `${result.estimatedTokens} over ${full + 50}`);
  const live = inContext(messages, result.messages);
  for (const id of recalledIds(result.systemPromptAddition)) assert.ok(!live.has(id), `${id} is in the context and was recalled`);
});
