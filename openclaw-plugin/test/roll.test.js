// The eviction plan alone: its rules on fixed and on random conversations.

import assert from "node:assert/strict";
import { test } from "node:test";

import { groups, planRoll, rollNote } from "../src/roll.js";

const tokensOf = (/** @type {any} */ m) => Math.ceil(JSON.stringify(m.content).length / 4);

/** A seeded random conversation with system messages, tool calls and results. */
function randomConversation(seed, length) {
  let x = seed;
  const rand = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
  const messages = [{ role: "system", content: "You are helpful.".repeat(1 + Math.floor(rand() * 20)), timestamp: 1 }];
  let ts = 1000;
  let call = 0;
  while (messages.length < length) {
    const text = "x".repeat(1 + Math.floor(rand() * 800));
    const r = rand();
    if (r < 0.3) messages.push({ role: "user", content: [{ type: "text", text }], timestamp: (ts += 1000) });
    else if (r < 0.6) {
      // A call, sometimes two in one message, results possibly after other messages.
      const ids = [`c${++call}`];
      if (rand() < 0.3) ids.push(`c${++call}`);
      messages.push({ role: "assistant", content: ids.map((id) => ({ type: "toolCall", id, name: "t", arguments: { text } })), timestamp: (ts += 1000) });
      if (rand() < 0.2) messages.push({ role: "assistant", content: [{ type: "text", text: "thinking aloud" }], timestamp: (ts += 1000) });
      for (const id of ids) messages.push({ role: "toolResult", toolCallId: id, content: [{ type: "text", text }], timestamp: (ts += 1000) });
    } else messages.push({ role: "assistant", content: [{ type: "text", text }], timestamp: (ts += 1000) });
  }
  return messages;
}

test("the note is exactly the spec's words with real numbers and ISO times", () => {
  const note = rollNote({ count: 12, tokens: 3456, firstTs: Date.parse("2026-01-23T14:21:43.537Z"), lastTs: Date.parse("2026-01-23T15:58:16.140Z") });
  assert.equal(
    note,
    "[Context rolled: 12 messages evicted (3456 tokens). Full transcript searchable via memory_search. Evicted range: 2026-01-23T14:21:43.537Z to 2026-01-23T15:58:16.140Z]",
  );
});

test("a tool call and its results form one group, with everything between", () => {
  const m = [
    { role: "user", content: [] },
    { role: "assistant", content: [{ type: "toolCall", id: "a" }] },
    { role: "assistant", content: [{ type: "toolCall", id: "b" }] },
    { role: "toolResult", toolCallId: "a", content: [] },
    { role: "toolResult", toolCallId: "b", content: [] },
    { role: "assistant", content: [{ type: "text", text: "done" }] },
  ];
  assert.deepEqual(groups(m, [0, 1, 2, 3, 4, 5]), [[0], [1, 2, 3, 4], [5]]);
});

test("the plan holds its rules on 300 random conversations", () => {
  for (let seed = 1; seed <= 300; seed++) {
    const messages = randomConversation(seed, 20 + (seed % 80));
    const tokens = messages.map(tokensOf);
    const total = tokens.reduce((a, b) => a + b, 0);
    const budget = Math.max(200, Math.floor(total * (0.2 + (seed % 7) / 10)));
    const minKeep = 1 + (seed % 12);
    const plan = planRoll({ messages, tokens, budget, target: 0.8, minKeep, previous: null, note: true, noteTokens: tokensOf });
    const evicted = new Set(plan.evict);
    const kept = messages.filter((_, i) => !evicted.has(i));
    // Never the system prompt.
    assert.ok(!plan.evict.some((i) => messages[i].role === "system"), `seed ${seed}: system evicted`);
    // Oldest first: the evicted non-system messages are a prefix of them.
    const nonSystem = messages.map((m, i) => i).filter((i) => messages[i].role !== "system");
    assert.deepEqual(plan.evict, nonSystem.slice(0, plan.evict.length), `seed ${seed}: not a prefix`);
    // Never a result without its call, nor a call without its result.
    const keptCalls = new Set(kept.flatMap((m) => (m.role === "assistant" ? m.content.filter((b) => b.type === "toolCall").map((b) => b.id) : [])));
    const keptResults = new Set(kept.filter((m) => m.role === "toolResult").map((m) => m.toolCallId));
    assert.deepEqual([...keptResults].sort(), [...keptCalls].sort(), `seed ${seed}: split tool call`);
    // The newest minKeep stay unless the budget itself forces more out.
    const keptNonSystem = kept.filter((m) => m.role !== "system").length;
    if (!plan.belowMinKeep) assert.ok(keptNonSystem >= Math.min(minKeep, nonSystem.length), `seed ${seed}: min keep`);
    // Short of the target only when the next group reaches into the newest
    // minKeep; short of the budget only when one group is left.
    const remaining = groups(messages, nonSystem).filter((g) => !evicted.has(g[0]));
    const protectedStart = nonSystem[nonSystem.length - Math.min(minKeep, nonSystem.length)];
    if (plan.keptTokens > Math.floor(0.8 * budget)) {
      assert.ok(remaining.length <= 1 || remaining[0].at(-1) >= protectedStart, `seed ${seed}: stopped early`);
    }
    if (plan.keptTokens > budget) assert.equal(remaining.length, 1, `seed ${seed}: over budget`);
    if (plan.evict.length) {
      assert.equal(plan.evicted?.count, plan.evict.length);
      assert.equal(plan.evicted?.tokens, plan.evict.reduce((a, i) => a + tokens[i], 0));
    }
    assert.ok(plan.keptTokens <= total + 200);
  }
});

test("previous evictions are carried in the note's totals", () => {
  const messages = Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: [{ type: "text", text: "y".repeat(400) }], timestamp: 10_000 + i * 1000 }));
  const tokens = messages.map(tokensOf);
  const previous = { count: 7, tokens: 700, firstTs: 1000, lastTs: 9000 };
  const plan = planRoll({ messages, tokens, budget: 2000, target: 0.8, minKeep: 10, previous, note: true, noteTokens: tokensOf });
  assert.ok(plan.evict.length > 0);
  assert.equal(plan.evicted?.count, 7 + plan.evict.length);
  assert.equal(plan.evicted?.firstTs, 1000);
  assert.equal(plan.evicted?.lastTs, messages[plan.evict.at(-1) ?? 0].timestamp);
  assert.ok(plan.keptTokens <= 1600, `${plan.keptTokens}`);
});
