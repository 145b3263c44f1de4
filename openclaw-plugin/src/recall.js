// Recall for the context engine: what the store holds about the user's
// prompt, asked of knowledge-db's `memory_recall` (the library's recall flow:
// the same ranking, `[recall] min_score` threshold, size limits and block as
// the Claude Code prompt hook; nothing is ranked or thresholded here).
//
// Left out of a recall: every message assemble() is about to return (the
// model has them already) and every record recalled before in the session
// (it was told once). The recalled ids are kept in the session's state record
// (the last RECALLED_KEPT), written with the session's next write, which is
// the turn's own messages: a gateway that restarts before the turn is stored
// recalls again for the retried turn, whose model never saw the first answer.
// A retried attempt of the same turn (same prompt, same history) gets the
// same block again rather than nothing.

import { messageKeys } from "./messages.js";

/**
 * @typedef {import("./messages.js").AgentMessage} AgentMessage
 * @typedef {import("./client.js").KnowledgeDbClient} KnowledgeDbClient
 * @typedef {{id: string, kind: string, title: string, when?: string, session_id?: string, turns?: [number, number], score: number, text: string}} Memory
 * @typedef {{text: string, ids: string[], memories: Memory[], bestScore: number | null, whyNot: string | null}} Recalled
 * @typedef {{fingerprint: string, recalled: Recalled}} LastRecall
 */

/** Recalled record ids remembered per session (never recalled twice). */
export const RECALLED_KEPT = 256;

/**
 * A text as a message, for OpenClaw's token estimate of it.
 * @param {string} text
 * @returns {AgentMessage}
 */
export function textMessage(text) {
  return { role: "user", content: [{ type: "text", text }] };
}

/**
 * The record ids of the messages of `all` that `shown` still holds (the
 * note, which is no stored message, has none).
 * @param {string} sessionId
 * @param {AgentMessage[]} all the session's full history
 * @param {AgentMessage[]} shown what assemble returns (a subset of `all`, plus the note)
 */
export function inContextIds(sessionId, all, shown) {
  const keys = messageKeys(all);
  /** @type {Map<AgentMessage, string>} */
  const keyOf = new Map(all.map((m, i) => [m, keys[i]]));
  const ids = [];
  for (const m of shown) {
    const key = keyOf.get(m);
    if (key !== undefined) ids.push(`${sessionId}:${key}`);
  }
  return ids;
}

/**
 * What makes an assemble call the same turn again: the prompt and the
 * history it follows.
 * @param {string} prompt
 * @param {AgentMessage[]} all
 */
export function recallFingerprint(prompt, all) {
  const keys = messageKeys(all);
  return `${all.length}\u0000${keys.at(-1) ?? ""}\u0000${prompt}`;
}

/**
 * Asks knowledge-db what to recall for `prompt`, from the plugin's namespace.
 * @param {KnowledgeDbClient} client
 * @param {{prompt: string, exclude: string[], namespace: string}} p
 * @returns {Promise<Recalled>}
 */
export async function recallFor(client, { prompt, exclude, namespace }) {
  // Records the plugin writes have no project: every project is searched.
  const answer = await client.call("memory_recall", { prompt, project: "*", exclude, namespace });
  /** @type {Memory[]} */
  const memories = Array.isArray(answer.memories) ? answer.memories : [];
  const text = typeof answer.text === "string" ? answer.text : "";
  // The block stops before a memory that would pass its size limit: only
  // those it shows were told.
  const told = memories.filter((m) => text.includes(String(m.id)));
  return {
    text: told.length ? text : "",
    ids: told.map((m) => String(m.id)),
    memories: told,
    bestScore: typeof answer.bestScore === "number" ? answer.bestScore : null,
    whyNot: typeof answer.whyNot === "string" ? answer.whyNot : null,
  };
}

/**
 * The system prompt addition: the host's memory guidance, then the block.
 * @param {(string | undefined | null)[]} parts
 */
export function joinAdditions(parts) {
  const kept = parts.filter((p) => typeof p === "string" && p.trim());
  return kept.length ? kept.join("\n\n") : undefined;
}
