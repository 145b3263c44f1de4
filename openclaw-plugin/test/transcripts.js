// Real Claude Code sessions as OpenClaw messages, and their replay through
// OpenClaw's harness: shared by the recall test and the bench scripts.
//
// A session is read by `knowledge-db evict --dry-run` (the library's
// transcript reader; like `evict` it starts at the last compaction boundary,
// the live context) and turned into OpenClaw messages (user, assistant with
// text/thinking/toolCall blocks, toolResult). The evaluation data is read
// where it lies (`../shared/eval` beside the checkout, or beside the folder of
// worktrees), never copied.

import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";

import { REPO } from "./helpers.js";

/** The real Claude Code sessions the tests and benches replay. */
export const TRANSCRIPTS = "transcripts/claude-code-entire-cli";

/**
 * `shared/eval/<name>`: $KDB_SHARED_EVAL/<name>, else beside the checkout
 * (`../shared/eval`), else beside the worktrees' folder (`../../shared/eval`).
 * @param {string} name
 */
export function sharedEval(name) {
  const roots = [process.env.KDB_SHARED_EVAL, join(REPO, "../shared/eval"), join(REPO, "../../shared/eval")].filter(Boolean);
  const found = roots.map((r) => join(/** @type {string} */ (r), name)).find((p) => existsSync(p));
  if (!found) throw new Error(`no ${name} under ${roots.join(", ")} (set KDB_SHARED_EVAL to the shared/eval folder)`);
  return found;
}

/** @param {string} file */
function readMaybeGzip(file) {
  return file.endsWith(".gz") ? gunzipSync(readFileSync(file)) : readFileSync(file);
}

/**
 * The `count` largest transcripts of `dir` (by decompressed size), largest first.
 * @param {string} dir
 * @param {number} count
 */
export function largestTranscripts(dir, count) {
  return readdirSync(dir)
    .filter((f) => /\.jsonl(\.gz)?$/.test(f))
    .map((f) => ({ file: join(dir, f), size: readMaybeGzip(join(dir, f)).length }))
    .sort((a, b) => b.size - a.size)
    .slice(0, count)
    .map((t) => t.file);
}

/** The session id of a transcript file (its name without `.jsonl[.gz]`). */
export function sessionIdOf(/** @type {string} */ file) {
  return String(file.split("/").at(-1)).replace(/\.jsonl(\.gz)?$/, "");
}

/**
 * knowledge-db's generic message (as `evict` prints it) as OpenClaw messages.
 * @param {any} generic
 * @returns {import("../src/messages.js").AgentMessage[]}
 */
export function toOpenClaw(generic) {
  const ts = Date.parse(generic.timestamp);
  const blocks = typeof generic.content === "string" ? [{ type: "text", text: generic.content }] : generic.content ?? [];
  if (generic.role === "assistant") {
    const content = blocks.flatMap((/** @type {any} */ b) => {
      if (b.type === "text") return [{ type: "text", text: b.text }];
      if (b.type === "thinking") return [{ type: "thinking", thinking: b.thinking ?? "" }];
      if (b.type === "tool_use") return [{ type: "toolCall", id: b.id, name: b.name, arguments: b.input ?? {} }];
      return [];
    });
    return [{ role: "assistant", content, timestamp: ts }];
  }
  const results = blocks.filter((/** @type {any} */ b) => b.type === "tool_result");
  if (results.length) {
    return results.map((/** @type {any} */ b) => ({
      role: "toolResult",
      toolCallId: b.tool_use_id,
      content: [{ type: "text", text: typeof b.content === "string" ? b.content : (b.content ?? []).map((/** @type {any} */ c) => c.text ?? "").join("\n") }],
      isError: Boolean(b.is_error),
      timestamp: ts,
    }));
  }
  const text = blocks.filter((/** @type {any} */ b) => b.type === "text").map((/** @type {any} */ b) => b.text).join("\n");
  return [{ role: generic.role === "system" ? "system" : "user", content: [{ type: "text", text }], timestamp: ts }];
}

/** The transcript line (its `uuid`) each message read by readTranscript came from. */
const sources = new WeakMap();

/**
 * The uuid of the transcript line a message came from (record ids of
 * `knowledge-db ingest` and the dev sets' qrels are `<session>:<uuid>`).
 * @param {import("../src/messages.js").AgentMessage} m
 * @returns {string | undefined}
 */
export function uuidOf(m) {
  return sources.get(m);
}

/**
 * A transcript's live context as OpenClaw messages, read by the binary.
 * @param {string} bin the knowledge-db binary
 * @param {string} store any store (the dry run writes nothing)
 * @param {string} file a Claude Code transcript (.jsonl or .jsonl.gz)
 */
export function readTranscript(bin, store, file) {
  const out = execFileSync(bin, ["--store", store, "evict", "--transcript", file, "--context-window", "1000000000", "--dry-run"], {
    maxBuffer: 1 << 30,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  return out
    .split("\n")
    .filter(Boolean)
    .flatMap((l) => {
      const generic = JSON.parse(l);
      const messages = toOpenClaw(generic);
      if (generic.uuid) for (const m of messages) sources.set(m, String(generic.uuid));
      return messages;
    });
}

/**
 * Replays `messages` one user turn at a time as OpenClaw drives the engine:
 * afterTurn with the history so far; when it exceeds `budget`,
 * compactContextEngineWithSafetyTimeout; then assembleHarnessContextEngine.
 * @param {{
 *   harness: any, engine: any, memory: import("../src/engine.js").RollingMemory,
 *   sessionId: string, messages: import("../src/messages.js").AgentMessage[], budget: number,
 *   tokens: (list: import("../src/messages.js").AgentMessage[]) => number,
 * }} p
 * @returns {Promise<{compactions: number, compactMs: number[], assembleMs: number[], overBudget: number}>}
 */
export async function rollSession({ harness, engine, memory, sessionId, messages, budget, tokens }) {
  const sessionKey = `agent:bench:${sessionId}`;
  const compactMs = [];
  const assembleMs = [];
  let compactions = 0;
  let overBudget = 0;
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
  return { compactions, compactMs, assembleMs, overBudget };
}
