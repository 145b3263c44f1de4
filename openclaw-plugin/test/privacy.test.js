// Secrets through the OpenClaw plugin's write paths: a conversation holding
// fresh random secrets (typed in a prompt, shown by a tool, repeated by the
// assistant) and a <private> span is stored by the context engine as OpenClaw
// drives it (afterTurn, compaction rolling the oldest messages out through
// memory_add), then read back through the plugin's memory_search and
// memory_get and the CLI's export. No secret comes back; the placeholders
// naming their kind do; the private span is gone; an identifier that only
// looks like a key is still found. The redaction itself is the store's
// (knowledge-db redacts every record before it is written).

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomInt } from "node:crypto";
import { after, before, test } from "node:test";

import { searchPayload } from "../src/memory.js";
import { conversation, importOpenclaw, rollingMemory, tempStore } from "./helpers.js";
import { rollSession } from "./transcripts.js";

const SESSION = "privacy-session";
const BUDGET = 3_000;
const pick = (alphabet, n) => Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join("");
const UPPER32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
// Fresh every run, so no fixture or earlier store can hold them.
const SECRETS = {
  "aws-access-token": `AKIA${pick(UPPER32, 16)}`,
  "github-pat": `ghp_${pick(ALNUM, 36)}`,
  "stripe-access-token": `sk_live_${pick(ALNUM, 24)}`,
};
const PASSWORD = pick(ALNUM, 22);
const PRIVATE = `Privet Drive ${randomInt(100, 999)}`;

/** @type {Awaited<ReturnType<typeof rollingMemory>>} */
let gateway;
/** @type {string} */
let store;
/** @type {any[]} */
let messages;

/** The conversation, with the secrets where they turn up in real sessions. */
function withSecrets() {
  const list = conversation(24, { words: 40 });
  const say = (i, text) => list[i].content.unshift({ type: "text", text });
  say(0, `Deploy with AWS_ACCESS_KEY_ID=${SECRETS["aws-access-token"]} please. <private>My home is ${PRIVATE}.</private> Keep the posthogAPIKey client as it is.`);
  list[2].content.unshift({ type: "text", text: `export GITHUB_TOKEN=${SECRETS["github-pat"]}\nSTRIPE_KEY=${SECRETS["stripe-access-token"]}` });
  say(3, `I set DB_PASSWORD=${PASSWORD} in .env and pushed with ${SECRETS["github-pat"]}.`);
  return list;
}

before(async () => {
  const harness = await importOpenclaw("plugin-sdk/agent-harness-runtime");
  ({ store } = tempStore());
  gateway = await rollingMemory({ store });
  const engine = gateway.memory.engine("test");
  messages = withSecrets();
  const tokens = (list) => list.reduce((a, m) => a + gateway.helpers.estimateTokens(m), 0);
  await rollSession({ harness, engine, memory: gateway.memory, sessionId: SESSION, messages, budget: BUDGET, tokens });
  const s = gateway.memory.session(SESSION);
  assert.ok(s.evicted && s.evicted.count >= 4, `the secrets' messages were not rolled out: ${JSON.stringify(s.evicted)}`);
});

after(async () => {
  await gateway.client.close();
});

/** Everything the plugin and the CLI give back about the session. */
async function givenBack() {
  const parts = [];
  for (const query of ["deploy AWS access key", "GITHUB_TOKEN STRIPE_KEY export", "DB_PASSWORD env pushed", "home Privet Drive", ...Object.values(SECRETS), PASSWORD]) {
    const payload = await searchPayload(gateway.client, "openclaw", query, { maxResults: 20, minScore: 0 });
    parts.push(JSON.stringify(payload.results ?? payload));
  }
  const exported = execFileSync(gateway.client.config.binary, ["--store", store, "export", "--no-vectors"], {
    encoding: "utf8",
    env: { ...process.env, KNOWLEDGE_DB_UPKEEP: "off" },
  });
  parts.push(exported);
  const ids = exported.split("\n").filter(Boolean).map((l) => JSON.parse(l).id);
  assert.ok(ids.length >= 8, `only ${ids.length} records stored`);
  for (const id of ids) parts.push(JSON.stringify(await gateway.client.call("memory_get", { id })));
  return parts.join("\n");
}

test("no planted secret comes back from memory_search, memory_get or export", async () => {
  const text = await givenBack();
  for (const [kind, secret] of Object.entries(SECRETS)) {
    assert.ok(!text.includes(secret.slice(4, 16)), `${kind} came back`);
    assert.ok(text.includes(`[REDACTED ${kind}]`), `no placeholder for ${kind}`);
  }
  assert.ok(!text.includes(PASSWORD), "the password came back");
  assert.ok(!text.includes(PRIVATE), "the <private> span came back");
});

test("an identifier that only looks like a key is still found", async () => {
  const payload = await searchPayload(gateway.client, "openclaw", "posthogAPIKey client", { maxResults: 5, minScore: 0 });
  assert.ok(JSON.stringify(payload).includes("posthogAPIKey"), JSON.stringify(payload).slice(0, 400));
});
