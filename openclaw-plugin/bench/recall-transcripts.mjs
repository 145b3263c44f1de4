#!/usr/bin/env node
// Recall in assemble, measured: the largest real Claude Code sessions rolled
// through OpenClaw's harness (as bench/roll-transcripts.mjs rolls them), then
// prompts about what was evicted, and off-topic prompts, through
// assembleHarnessContextEngine with the embedding model loaded.
//
//   node bench/recall-transcripts.mjs [DIR] [N] [--budget 50000] [--bin PATH]
//        [--offtopic FILE] [--words 24] [--min-words 8] [--json OUT]
//        [--questions dev-sets/agent-questions]
//
// DIR defaults to shared/eval/transcripts/claude-code-entire-cli, N to 20,
// --offtopic to dev-sets/recall/offtopic.jsonl. After the roll:
// - on-topic: every evicted user or assistant message whose own text (text
//   blocks; no tool call, result or thinking) has at least --min-words words
//   becomes a prompt, its first --words words, asked in its own session with
//   the session's whole history (assemble returns the rolled view). Hit: that
//   message's record id is among the memories in systemPromptAddition. Also
//   counted: any message of the session that was evicted recalled, anything
//   recalled, and recalled ids still in the assembled context (must be 0).
//   A prompt that more than one message of the rolled sessions begins with
//   (ambiguous: it cannot name one source) is also reported apart.
// - off-topic: each prompt of --offtopic as the first prompt of a new session
//   (empty history: nothing excluded). Silent: no memory recalled.
// - with --questions: the sessions rolled are the answer sessions of that dev
//   set (qrels/sessions.tsv) instead of the N largest, and each question is
//   asked twice: as the first prompt of a new session (hit: a message of the
//   answer session recalled, as benches/memory-loop.py counts the hooks'
//   recall; record hit: a recalled message is one of the question's qrels
//   records, ingest's ids being `<session>:<transcript line uuid>`), and in
//   its answer session after the roll (only sessions that rolled; counted
//   apart: the questions one of whose qrels records was evicted, and how
//   often such a record, or any evicted message of the session, came back).
// Each probe is independent: the session's recalled set is emptied before it.
// Latency: each probe runs assemble twice, with recall off and on (the order
// alternating), timed around assembleHarnessContextEngine; the added latency
// is the difference of each pair. Not run by CI.

import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { messageKeys } from "../src/messages.js";
import { parseArgs } from "./args.mjs";
import { REPO, importOpenclaw, rollingMemory, tempStore } from "../test/helpers.js";
import { TRANSCRIPTS, largestTranscripts, readTranscript, rollSession, sessionIdOf, sharedEval, uuidOf } from "../test/transcripts.js";

const { args, flag } = parseArgs();
const budget = Number(flag("--budget", "50000"));
const bin = resolve(flag("--bin", join(REPO, "target/release/knowledge-db")));
process.env.KNOWLEDGE_DB_BIN = bin; // the helpers' store init uses it too
const offtopicFile = resolve(flag("--offtopic", join(REPO, "dev-sets/recall/offtopic.jsonl")));
const promptWords = Number(flag("--words", "24"));
const minWords = Number(flag("--min-words", "8"));
const jsonOut = flag("--json", "");
const questionsDir = flag("--questions", "");
const dir = resolve(args[0] ?? sharedEval(TRANSCRIPTS));
const count = Number(args[1] ?? 20);

/** @param {string} file a TSV of query-id, corpus-id, score with a header */
const qrels = (file) => {
  /** @type {Map<string, string[]>} */
  const out = new Map();
  for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
    const [q, id] = line.split("\t");
    if (q && id) out.set(q, [...(out.get(q) ?? []), id]);
  }
  return out;
};
const questions = questionsDir
  ? readFileSync(join(questionsDir, "queries.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l))
  : [];
const answerSessions = questionsDir ? qrels(join(questionsDir, "qrels/sessions.tsv")) : new Map();
const answerRecords = questionsDir ? qrels(join(questionsDir, "qrels/records.tsv")) : new Map();
const everyTranscript = questionsDir ? largestTranscripts(dir, Number.POSITIVE_INFINITY) : [];
const files = questionsDir
  ? [...new Set([...answerSessions.values()].flat())].map((uuid) => {
      const found = everyTranscript.find((f) => sessionIdOf(f).endsWith(uuid));
      if (!found) throw new Error(`no transcript of answer session ${uuid} in ${dir}`);
      return found;
    })
  : largestTranscripts(dir, count);

const { store } = tempStore();
const { memory, client, helpers, logger } = await rollingMemory({ store, binary: bin });
const harness = await importOpenclaw("plugin-sdk/agent-harness-runtime");
const engine = memory.engine("bench");
const tokens = (/** @type {any[]} */ list) => list.reduce((a, m) => a + helpers.estimateTokens(m), 0);
const vector = (await client.call("memory_stats", {})).vector;
if (vector !== "used") throw new Error(`recall needs the embedding model; the child says: ${vector}`);

/** The words of a message's own text blocks (what a person wrote or read). */
function ownWords(/** @type {any} */ m) {
  if (m.role !== "user" && m.role !== "assistant") return [];
  const blocks = Array.isArray(m.content) ? m.content : [{ type: "text", text: String(m.content ?? "") }];
  return blocks
    .filter((/** @type {any} */ b) => b?.type === "text" && typeof b.text === "string")
    .map((/** @type {any} */ b) => b.text)
    .join(" ")
    .split(/\s+/)
    .filter(Boolean);
}

/** The memory ids a recall block names. */
function recalledIds(/** @type {string | undefined} */ addition) {
  return [...String(addition ?? "").matchAll(/^ {3}id (\S+); read it whole/gm)].map((m) => m[1]);
}

/**
 * One probe: assemble with recall off and on (alternating order), timed.
 * @param {string} sessionId
 * @param {any[]} history
 * @param {string} prompt
 * @param {number} i
 */
async function probe(sessionId, history, prompt, i) {
  const s = memory.session(sessionId);
  const run = async (/** @type {boolean} */ on) => {
    memory.config.recall = on;
    s.recalled = [];
    s.lastRecall = null;
    const t = performance.now();
    const result = await harness.assembleHarnessContextEngine({
      contextEngine: engine,
      sessionId,
      sessionKey: `agent:bench:${sessionId}`,
      messages: history,
      tokenBudget: budget,
      modelId: "bench",
      prompt,
    });
    const ms = performance.now() - t;
    return { result, ms, best: s.lastRecall?.recalled.bestScore ?? null };
  };
  let off;
  let on;
  if (i % 2) {
    off = await run(false);
    on = await run(true);
  } else {
    on = await run(true);
    off = await run(false);
  }
  memory.config.recall = true;
  const addition = on.result.systemPromptAddition;
  const keys = messageKeys(history);
  const shown = new Set(on.result.messages.map((/** @type {any} */ m) => history.indexOf(m)).filter((/** @type {number} */ j) => j >= 0).map((/** @type {number} */ j) => `${sessionId}:${keys[j]}`));
  const ids = recalledIds(addition);
  return {
    ids,
    chars: addition?.length ?? 0,
    inContext: ids.filter((id) => shown.has(id)).length,
    onMs: on.ms,
    offMs: off.ms,
    overBudget: on.result.estimatedTokens > budget,
    best: on.best,
  };
}

const percentile = (/** @type {number[]} */ xs, /** @type {number} */ q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil(s.length * q) - 1))] : NaN;
};
const round = (/** @type {number} */ x) => Math.round(x * 10) / 10;

const sessions = [];
let rolledMessages = 0;
let evictedMessages = 0;
const rollStarted = performance.now();
for (const f of files) {
  const messages = readTranscript(bin, store, f);
  const sessionId = sessionIdOf(f);
  await rollSession({ harness, engine, memory, sessionId, messages, budget, tokens });
  const s = memory.session(sessionId);
  const keys = messageKeys(messages);
  const through = s.evicted ? keys.lastIndexOf(s.evicted.throughKey) : -1;
  rolledMessages += messages.length;
  evictedMessages += through + 1;
  sessions.push({ sessionId, messages, keys, through });
}
const rollSeconds = (performance.now() - rollStarted) / 1000;

/** A message's prompt: the first words of its own text, or null when it has too few. */
const promptOf = (/** @type {any} */ m) => {
  const words = ownWords(m);
  return words.length < minWords ? null : words.slice(0, promptWords).join(" ");
};
// A prompt several messages begin with (Claude Code's "This session is being
// continued from a previous conversation…" summaries) cannot name one source.
/** @type {Map<string, number>} */
const promptUses = new Map();
for (const { messages } of sessions) {
  for (const m of messages) {
    const prompt = promptOf(m);
    if (prompt) promptUses.set(prompt, (promptUses.get(prompt) ?? 0) + 1);
  }
}

/** @type {any[]} */
const onTopic = [];
for (const { sessionId, messages, keys, through } of sessions) {
  const evicted = new Set(keys.slice(0, through + 1).map((k) => `${sessionId}:${k}`));
  for (let i = 0; i <= through; i++) {
    const prompt = promptOf(messages[i]);
    if (!prompt) continue;
    const source = `${sessionId}:${keys[i]}`;
    const r = await probe(sessionId, messages, prompt, onTopic.length);
    onTopic.push({
      ...r,
      source,
      role: messages[i].role,
      ambiguous: (promptUses.get(prompt) ?? 0) > 1,
      hit: r.ids.includes(source),
      sessionHit: r.ids.some((id) => evicted.has(id)),
    });
  }
}

/** @type {any[]} */
const asked = [];
for (const [i, q] of questions.entries()) {
  const uuids = answerSessions.get(q._id) ?? [];
  const own = sessions.filter((s) => uuids.some((u) => s.sessionId.endsWith(u)));
  const records = new Set(answerRecords.get(q._id) ?? []);
  /** The recalled ids that are messages of the answer sessions (and of its qrels records). */
  const isAnswer = (/** @type {any} */ m) => {
    const uuid = uuidOf(m);
    return Boolean(uuid && uuids.some((u) => records.has(`${u}:${uuid}`)));
  };
  const judge = (/** @type {string[]} */ ids, /** @type {boolean} */ evictedOnly) => {
    let session = false;
    let record = false;
    let answerEvicted = false;
    for (const s of own) {
      const limit = evictedOnly ? s.through + 1 : s.messages.length;
      for (let j = 0; j < limit; j++) {
        if (evictedOnly && isAnswer(s.messages[j])) answerEvicted = true;
        if (!ids.includes(`${s.sessionId}:${s.keys[j]}`)) continue;
        session = true;
        if (isAnswer(s.messages[j])) record = true;
      }
    }
    return { session, record, answerEvicted };
  };
  const fresh = await probe(`question-${q._id}`, [], q.text, i);
  const entry = { id: q._id, kind: q.metadata?.kind, text: q.text, newSession: { ...fresh, ...judge(fresh.ids, false) } };
  const rolled = own.find((s) => s.through >= 0);
  if (rolled) {
    const inSession = await probe(rolled.sessionId, rolled.messages, q.text, i + 1);
    Object.assign(entry, { inSession: { ...inSession, ...judge(inSession.ids, true) } });
  }
  asked.push(entry);
}

const offPrompts = readFileSync(offtopicFile, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));
/** @type {any[]} */
const offTopic = [];
for (const [i, q] of offPrompts.entries()) {
  const r = await probe(`offtopic-${q._id}`, [], q.text, i);
  offTopic.push({ ...r, id: q._id, kind: q.metadata?.kind, text: q.text });
}
await client.close();

const all = [...onTopic, ...offTopic, ...asked.map((q) => q.newSession), ...asked.flatMap((q) => (q.inSession ? [q.inSession] : []))];
const share = (/** @type {any[]} */ xs, /** @type {(x: any) => boolean} */ f) => (xs.length ? round((100 * xs.filter(f).length) / xs.length) : null);
const byRole = Object.fromEntries(
  ["user", "assistant"].map((role) => {
    const xs = onTopic.filter((p) => p.role === role);
    return [role, { prompts: xs.length, source_recalled_pct: share(xs, (p) => p.hit) }];
  }),
);
const recalledChars = all.filter((p) => p.chars).map((p) => p.chars);
const report = {
  setup: {
    sessions: files.length,
    dir,
    budget,
    rolled_messages: rolledMessages,
    evicted_messages: evictedMessages,
    sessions_with_eviction: sessions.filter((s) => s.through >= 0).length,
    roll_seconds: round(rollSeconds),
    prompt: `first ${promptWords} words of each evicted user/assistant text of >= ${minWords} words`,
    offtopic: offtopicFile,
  },
  on_topic: {
    prompts: onTopic.length,
    source_recalled_pct: share(onTopic, (p) => p.hit),
    evicted_message_of_session_recalled_pct: share(onTopic, (p) => p.sessionHit),
    anything_recalled_pct: share(onTopic, (p) => p.ids.length > 0),
    by_role: byRole,
    unambiguous: {
      prompts: onTopic.filter((p) => !p.ambiguous).length,
      source_recalled_pct: share(onTopic.filter((p) => !p.ambiguous), (p) => p.hit),
    },
  },
  ...(questionsDir
    ? {
        questions: {
          dir: resolve(questionsDir),
          asked: asked.length,
          new_session: {
            answer_session_recalled_pct: share(asked, (q) => q.newSession.session),
            qrels_record_recalled_pct: share(asked, (q) => q.newSession.record),
            anything_recalled_pct: share(asked, (q) => q.newSession.ids.length > 0),
          },
          in_rolled_answer_session: {
            asked: asked.filter((q) => q.inSession).length,
            evicted_message_of_session_recalled_pct: share(asked.filter((q) => q.inSession), (q) => q.inSession.session),
            anything_recalled_pct: share(asked.filter((q) => q.inSession), (q) => q.inSession.ids.length > 0),
            answer_evicted: asked.filter((q) => q.inSession?.answerEvicted).length,
            answer_evicted_then_recalled_pct: share(asked.filter((q) => q.inSession?.answerEvicted), (q) => q.inSession.record),
            answer_evicted_then_session_recalled_pct: share(asked.filter((q) => q.inSession?.answerEvicted), (q) => q.inSession.session),
          },
        },
      }
    : {}),
  off_topic: {
    prompts: offTopic.length,
    nothing_recalled_pct: share(offTopic, (p) => p.ids.length === 0),
    recalled: offTopic.filter((p) => p.ids.length).map((p) => ({ id: p.id, best: p.best, text: p.text })),
  },
  recalled_ids_in_context: all.reduce((a, p) => a + p.inContext, 0),
  estimated_tokens_over_budget: all.filter((p) => p.overBudget).length,
  block_chars: { median: percentile(recalledChars, 0.5), max: Math.max(0, ...recalledChars) },
  assemble_ms: {
    recall_off: { p50: round(percentile(all.map((p) => p.offMs), 0.5)), p95: round(percentile(all.map((p) => p.offMs), 0.95)) },
    recall_on: { p50: round(percentile(all.map((p) => p.onMs), 0.5)), p95: round(percentile(all.map((p) => p.onMs), 0.95)) },
    added: { p50: round(percentile(all.map((p) => p.onMs - p.offMs), 0.5)), p95: round(percentile(all.map((p) => p.onMs - p.offMs), 0.95)) },
    calls: all.length,
  },
  warnings: logger.seen.warn.length,
};
console.log(JSON.stringify(report, null, 1));
if (jsonOut) writeFileSync(jsonOut, JSON.stringify({ report, onTopic, offTopic, asked }, null, 1));
