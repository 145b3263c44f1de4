// The rolling eviction plan: which of the oldest messages leave so the rest fit.
//
// The same rules as knowledge-db's own `rolling_evict` (src/context/evict.rs),
// on OpenClaw's messages and with OpenClaw's own token estimate:
// - system messages never leave;
// - the newest `minKeep` messages never leave;
// - a tool call leaves together with its results and everything between them
//   (a group), so no result is kept whose call is gone, nor a call without
//   its result;
// - groups leave oldest first until the kept messages plus the note take at
//   most `target × budget` tokens.
// When even the newest `minKeep` messages do not fit the budget itself, more
// groups leave (never the last one) until they do, and the plan says so: a
// prompt over budget would be refused by the provider, which is worse.

import { isoTime, timestampOf, toolCallIds } from "./messages.js";

/**
 * @typedef {import("./messages.js").AgentMessage} AgentMessage
 * @typedef {{count: number, tokens: number, firstTs?: number, lastTs?: number}} Evicted
 */

/**
 * The note that replaces evicted messages, in the words of the spec.
 * @param {Evicted} evicted
 */
export function rollNote(evicted) {
  return (
    `[Context rolled: ${evicted.count} messages evicted (${evicted.tokens} tokens). ` +
    `Full transcript searchable via memory_search. ` +
    `Evicted range: ${isoTime(evicted.firstTs)} to ${isoTime(evicted.lastTs)}]`
  );
}

/**
 * The note as a message in the prompt.
 * @param {Evicted} evicted
 * @returns {AgentMessage}
 */
export function noteMessage(evicted) {
  return {
    role: "user",
    content: [{ type: "text", text: rollNote(evicted) }],
    timestamp: evicted.lastTs ?? Date.now(),
  };
}

/**
 * Groups of message indexes: a tool call with everything up to its last result.
 * @param {AgentMessage[]} messages
 * @param {number[]} indexes the candidates, in order
 * @returns {number[][]}
 */
export function groups(messages, indexes) {
  /** @type {number[][]} */
  const out = [];
  let i = 0;
  while (i < indexes.length) {
    const calls = new Set(toolCallIds(messages[indexes[i]]));
    let end = i;
    let grew = calls.size > 0;
    while (grew) {
      grew = false;
      for (let j = end + 1; j < indexes.length; j++) {
        const m = messages[indexes[j]];
        if (m.role === "toolResult" && m.toolCallId && calls.has(String(m.toolCallId))) {
          end = j;
          grew = true;
        }
      }
      // Calls made inside the group bring their results in too.
      for (let j = i + 1; j <= end; j++) {
        for (const id of toolCallIds(messages[indexes[j]])) {
          if (!calls.has(id)) {
            calls.add(id);
            grew = true;
          }
        }
      }
    }
    out.push(indexes.slice(i, end + 1));
    i = end + 1;
  }
  return out;
}

/**
 * Which messages leave.
 * @param {{
 *   messages: AgentMessage[],
 *   tokens: number[],
 *   budget: number,
 *   target: number,
 *   minKeep: number,
 *   previous: Evicted | null,
 *   note: boolean,
 *   noteTokens: (m: AgentMessage) => number,
 * }} p
 * @returns {{evict: number[], evicted: Evicted | null, keptTokens: number, belowMinKeep: boolean, fits: boolean}}
 *   `evict` are indexes into `messages`; `evicted` the running totals (previous
 *   ones included) for the note; `keptTokens` what stays, the note included.
 */
export function planRoll({ messages, tokens, budget, target, minKeep, previous, note, noteTokens }) {
  const candidates = [];
  for (let i = 0; i < messages.length; i++) if (messages[i].role !== "system") candidates.push(i);
  const all = groups(messages, candidates);
  const protectedFrom = candidates.length - Math.min(minKeep, candidates.length);
  const protectedIndex = candidates[protectedFrom] ?? Number.POSITIVE_INFINITY;
  const total = tokens.reduce((a, b) => a + b, 0);
  const goal = Math.floor(target * budget);

  /** @type {number[]} */
  const evict = [];
  let kept = total;
  let running = previous ? { ...previous } : null;
  const noteCost = () => (note && running ? noteTokens(noteMessage(running)) : 0);
  // The previous note is replaced by the new one: it is not in `messages`.
  let belowMinKeep = false;
  for (let g = 0; g < all.length; g++) {
    const group = all[g];
    if (kept + noteCost() <= goal) break;
    const isLast = g === all.length - 1;
    const inProtected = group[group.length - 1] >= protectedIndex;
    if (inProtected) {
      // Past the minimum: only to fit the budget itself, and never the last group.
      if (kept + noteCost() <= budget || isLast) break;
      belowMinKeep = true;
    }
    for (const i of group) {
      evict.push(i);
      kept -= tokens[i];
      const t = timestampOf(messages[i]);
      running = running ?? { count: 0, tokens: 0 };
      running.count += 1;
      running.tokens += tokens[i];
      if (t !== undefined) {
        running.firstTs = running.firstTs ?? t;
        running.lastTs = t;
      }
    }
  }
  const keptTokens = kept + noteCost();
  return {
    evict,
    evicted: evict.length ? running : previous,
    keptTokens,
    belowMinKeep,
    fits: keptTokens <= budget,
  };
}
