// The `knowledge-db` context engine: rolling context instead of summaries.
//
// Every message OpenClaw shows the engine (ingest, ingestBatch, afterTurn,
// commitTurn, and the history assemble receives) is written to knowledge-db as
// a `message` record before anything else happens to it, so whatever is
// evicted later is already searchable with memory_search. When OpenClaw
// compacts, or when assemble gets a budget the context exceeds, the oldest
// messages leave until the rest fit `targetUtilization × budget` (see roll.js)
// and one note stands in their place. No model is called.
//
// What has been evicted is a per-session frontier (the key of the newest
// evicted message and the running totals of the note), written to the store as
// a state record in the same atomic write as the messages it covers, so a
// restarted gateway picks up where it left. If the store cannot be written,
// nothing is evicted: compact() hands the compaction to OpenClaw's own
// (delegateCompactionToRuntime) and warns, since rolling without recall is
// amnesia; assemble() returns everything with the true estimate and asks
// OpenClaw's overflow precheck to stay on.
//
// Recall: assemble() also asks knowledge-db's `memory_recall` (the same flow,
// thresholds and block as the Claude Code prompt hook) what the store holds
// about OpenClaw's `prompt`, leaving out the messages it is about to return
// and what it already recalled in this session, and appends the block to
// `systemPromptAddition`. See recall.js.

import { message } from "./client.js";
import { messageKeys, messageRecord, timestampOf } from "./messages.js";
import { RECALLED_KEPT, inContextIds, joinAdditions, recallFingerprint, recallFor, textMessage } from "./recall.js";
import { noteMessage, planRoll } from "./roll.js";

/**
 * @typedef {import("./messages.js").AgentMessage} AgentMessage
 * @typedef {import("./roll.js").Evicted} Evicted
 * @typedef {import("./client.js").KnowledgeDbClient} KnowledgeDbClient
 * @typedef {{
 *   namespace: string, targetUtilization: number, minKeepMessages: number, evictionNote: boolean,
 *   recall: boolean,
 * }} EngineConfig
 * @typedef {{
 *   sessionId: string,
 *   loaded: boolean,
 *   turns: number,
 *   storedThroughTs: number,
 *   stored: Set<string>,
 *   evicted: (Evicted & {throughKey: string, throughTs?: number}) | null,
 *   committed: string[],
 *   recalled: string[],
 *   lastRecall: import("./recall.js").LastRecall | null,
 *   view: AgentMessage[] | null,
 *   budget: number | null,
 *   lock: Promise<unknown>,
 * }} Session
 */

export const ENGINE_ID = "knowledge-db";
export const AMNESIA_WARNING =
  "knowledge-db: the store cannot be written, so nothing is evicted and OpenClaw's own compaction runs instead (rolling mode without recall is amnesia)";
/** Advancement keys remembered for duplicate detection, per session. */
const COMMITTED_KEPT = 256;

/**
 * Everything the engine keeps between calls: OpenClaw makes a new engine per
 * operation, the sessions live here.
 */
export class RollingMemory {
  /**
   * @param {KnowledgeDbClient} client
   * @param {EngineConfig} config
   * @param {{estimateTokens: (m: AgentMessage) => number,
   *          delegate?: (params: any) => Promise<any>,
   *          memoryPrompt?: (params: any) => string | undefined,
   *          logger?: {warn?: (m: string) => void, info?: (m: string) => void}}} host
   */
  constructor(client, config, host) {
    this.client = client;
    this.config = config;
    this.host = host;
    /** @type {Map<string, Session>} */
    this.sessions = new Map();
  }

  /** @param {AgentMessage} m */
  tokens(m) {
    return this.host.estimateTokens(m);
  }

  /** @param {string} sessionId */
  session(sessionId) {
    let s = this.sessions.get(sessionId);
    if (!s) {
      s = {
        sessionId,
        loaded: false,
        turns: 0,
        storedThroughTs: Number.NEGATIVE_INFINITY,
        stored: new Set(),
        evicted: null,
        committed: [],
        recalled: [],
        lastRecall: null,
        view: null,
        budget: null,
        lock: Promise.resolve(),
      };
      this.sessions.set(sessionId, s);
    }
    return s;
  }

  /**
   * Runs `work` on a session alone (calls for one session never interleave).
   * @template T
   * @param {string} sessionId
   * @param {(s: Session) => Promise<T>} work
   * @returns {Promise<T>}
   */
  withSession(sessionId, work) {
    const s = this.session(sessionId);
    const run = s.lock.then(async () => {
      await this.load(s);
      return work(s);
    });
    s.lock = run.catch(() => {});
    return run;
  }

  stateId(/** @type {string} */ sessionId) {
    return `openclaw-engine:${sessionId}`;
  }

  /** Reads the session's state record once (best effort: unreachable means fresh). */
  async load(/** @type {Session} */ s) {
    if (s.loaded) return;
    try {
      const found = await this.client.call("memory_get", { id: this.stateId(s.sessionId) });
      const state = found?.record?.source?.engine_state;
      if (state) {
        s.turns = Number(state.turns ?? 0);
        s.storedThroughTs = Number(state.stored_through_ts ?? Number.NEGATIVE_INFINITY);
        s.evicted = state.evicted ?? null;
        s.committed = Array.isArray(state.committed) ? state.committed : [];
        s.recalled = Array.isArray(state.recalled) ? state.recalled.map(String) : [];
      }
      s.loaded = true;
    } catch (error) {
      if (/no record with id/.test(message(error))) s.loaded = true;
      // Otherwise unreachable: try again on the next call.
    }
  }

  /**
   * The session's state record, for the write that changes it.
   * @param {Session} s
   * @param {Partial<{turns: number, storedThroughTs: number, evicted: Session["evicted"], committed: string[]}>} next
   */
  stateRecord(s, next) {
    const state = {
      turns: next.turns ?? s.turns,
      stored_through_ts: finiteOrNull(next.storedThroughTs ?? s.storedThroughTs),
      evicted: next.evicted === undefined ? s.evicted : next.evicted,
      committed: next.committed ?? s.committed,
      recalled: s.recalled,
    };
    return {
      kind: "note",
      id: this.stateId(s.sessionId),
      namespace: `${this.config.namespace}-engine`,
      title: `knowledge-db context engine state of OpenClaw session ${s.sessionId}`,
      text: `Rolling context state of session ${s.sessionId}: ${state.evicted?.count ?? 0} messages evicted.`,
      engine_state: state,
    };
  }

  /**
   * Writes the messages not yet stored, with the new state, in one atomic add.
   * @param {Session} s
   * @param {AgentMessage[]} messages
   * @param {{commitKey?: string}} [extra]
   * @returns {Promise<number>} messages written
   */
  async store(s, messages, extra = {}) {
    const keys = messageKeys(messages);
    const records = [];
    let turns = s.turns;
    let through = s.storedThroughTs;
    /** @type {string[]} */
    const newKeys = [];
    messages.forEach((m, i) => {
      const key = keys[i];
      const t = timestampOf(m);
      if (s.stored.has(key) || (t !== undefined && t <= s.storedThroughTs)) return;
      if (m.role === "user") turns += 1;
      records.push(
        messageRecord({ sessionId: s.sessionId, namespace: this.config.namespace, key, turn: turns, message: m }),
      );
      newKeys.push(key);
      if (t !== undefined && t > through) through = t;
    });
    const committed = extra.commitKey ? [...s.committed, extra.commitKey].slice(-COMMITTED_KEPT) : s.committed;
    if (!records.length && !extra.commitKey) return 0;
    records.push(this.stateRecord(s, { turns, storedThroughTs: through, committed }));
    try {
      await this.client.call("memory_add", { records });
    } catch (error) {
      s.loaded = false; // the write may have landed: read the state again next time
      throw error;
    }
    for (const k of newKeys) s.stored.add(k);
    s.turns = turns;
    s.storedThroughTs = through;
    s.committed = committed;
    return newKeys.length;
  }

  /**
   * Stores what it can; a failure is logged and reported as `false`.
   * @param {Session} s
   * @param {AgentMessage[]} messages
   */
  async storeQuietly(s, messages) {
    try {
      await this.store(s, messages);
      return true;
    } catch (error) {
      this.host.logger?.warn?.(`knowledge-db: could not store messages of session ${s.sessionId}: ${message(error)}`);
      return false;
    }
  }

  /**
   * The messages left after the session's evictions, the note in their place.
   * @param {Session} s
   * @param {AgentMessage[]} messages
   * @returns {AgentMessage[]}
   */
  visible(s, messages) {
    const ev = s.evicted;
    if (!ev) return messages;
    const keys = messageKeys(messages);
    let through = keys.lastIndexOf(ev.throughKey);
    if (through < 0 && ev.throughTs !== undefined) {
      // The key is gone (the transcript was rewritten): go by time.
      messages.forEach((m, i) => {
        const t = timestampOf(m);
        if (t !== undefined && t <= /** @type {number} */ (ev.throughTs)) through = i;
      });
    }
    if (through < 0) return messages;
    const pinned = messages.slice(0, through + 1).filter((m) => m.role === "system");
    const rest = messages.slice(through + 1);
    return this.config.evictionNote ? [...pinned, noteMessage(ev), ...rest] : [...pinned, ...rest];
  }

  /**
   * Rolls `messages` (already visible) to fit `budget`, writing the new
   * frontier first. Returns the messages to send, or null when nothing left.
   * @param {Session} s
   * @param {AgentMessage[]} all the full history (for the frontier key)
   * @param {number} budget
   * @param {{belowMinKeep?: boolean}} [opts] `belowMinKeep: false`: evict
   *   nothing rather than any of the newest minKeepMessages
   */
  async roll(s, all, budget, opts = {}) {
    const keys = messageKeys(all);
    const shown = this.visible(s, all);
    // The current note is not a message to evict: plan on what follows it.
    const noteAt = s.evicted && this.config.evictionNote ? shown.findIndex(isNote) : -1;
    const body = noteAt >= 0 ? [...shown.slice(0, noteAt), ...shown.slice(noteAt + 1)] : shown;
    const tokens = body.map((m) => this.tokens(m));
    const plan = planRoll({
      messages: body,
      tokens,
      budget,
      target: this.config.targetUtilization,
      minKeep: this.config.minKeepMessages,
      previous: s.evicted ? { count: s.evicted.count, tokens: s.evicted.tokens, firstTs: s.evicted.firstTs, lastTs: s.evicted.lastTs } : null,
      note: this.config.evictionNote,
      noteTokens: (m) => this.tokens(m),
    });
    if (!plan.evict.length || !plan.evicted) return { plan, changed: false };
    if (plan.belowMinKeep && opts.belowMinKeep === false) return { plan, changed: false };
    const last = body[plan.evict[plan.evict.length - 1]];
    const throughKey = keys[all.indexOf(last)];
    const evicted = { ...plan.evicted, throughKey, throughTs: timestampOf(last) };
    // Written before evicted: any message not stored yet, then the frontier.
    await this.store(s, all);
    try {
      await this.client.call("memory_add", { records: [this.stateRecord(s, { evicted })] });
    } catch (error) {
      s.loaded = false;
      throw error;
    }
    s.evicted = evicted;
    if (plan.belowMinKeep) {
      this.host.logger?.warn?.(
        `knowledge-db: session ${s.sessionId}: the newest ${this.config.minKeepMessages} messages alone exceed the ${budget}-token budget; fewer were kept`,
      );
    }
    return { plan, changed: true };
  }

  /** @param {any} params */
  async assemble(params) {
    const { sessionId, messages, tokenBudget } = params;
    return this.withSession(sessionId, async (s) => {
      s.view = messages;
      if (tokenBudget) s.budget = tokenBudget;
      const stored = await this.storeQuietly(s, messages);
      let out = await this.fit(s, messages, tokenBudget, stored, 0);
      const guidance = this.host.memoryPrompt?.({
        availableTools: params.availableTools ?? new Set(),
        citationsMode: params.citationsMode,
        agentSessionKey: params.sessionKey,
      });
      let recalled = await this.recall(s, params.prompt, messages, out);
      let addition = joinAdditions([guidance, recalled?.text]);
      const extra = () => (addition ? this.tokens(textMessage(addition)) : 0);
      if (recalled && tokenBudget && sum(out, (m) => this.tokens(m)) + extra() > tokenBudget) {
        // The block needs room: older messages leave for it as for any message,
        // but never below minKeepMessages; else it is not given.
        out = await this.fit(s, messages, tokenBudget, stored, extra());
        if (sum(out, (m) => this.tokens(m)) + extra() > tokenBudget) {
          this.host.logger?.info?.(
            `knowledge-db: session ${sessionId}: ${recalled.ids.length} recalled memories left out: the ${tokenBudget}-token budget has no room for them`,
          );
          recalled = null;
          addition = joinAdditions([guidance]);
        }
      }
      if (recalled) this.remember(s, recalled);
      const estimatedTokens = sum(out, (m) => this.tokens(m)) + extra();
      /** @type {Record<string, unknown>} */
      const result = { messages: out, estimatedTokens };
      // Over budget only when eviction was impossible: keep OpenClaw's overflow
      // precheck on, so it compacts (and compact() delegates).
      if (tokenBudget && estimatedTokens > tokenBudget) result.promptAuthority = "preassembly_may_overflow";
      if (addition) result.systemPromptAddition = addition;
      return result;
    });
  }

  /**
   * The visible messages, rolled (when the store holds them) so they fit the
   * budget less `reserve` tokens. The reserve (room for recalled memories)
   * never pushes out the newest minKeepMessages.
   * @param {Session} s
   * @param {AgentMessage[]} messages the full history
   * @param {number | undefined} budget
   * @param {boolean} stored
   * @param {number} reserve
   */
  async fit(s, messages, budget, stored, reserve) {
    const shown = this.visible(s, messages);
    if (!budget || sum(shown, (m) => this.tokens(m)) + reserve <= budget) return shown;
    if (!stored) {
      if (!reserve) this.host.logger?.warn?.(AMNESIA_WARNING);
      return shown;
    }
    try {
      await this.roll(s, messages, budget - reserve, { belowMinKeep: !reserve });
    } catch (error) {
      this.host.logger?.warn?.(`${AMNESIA_WARNING}: ${message(error)}`);
    }
    return this.visible(s, messages);
  }

  /**
   * The memories to recall for `prompt` (see recall.js), or null: recall off,
   * no prompt, nothing confident, or the store unreachable (logged; assemble
   * goes on without it).
   * @param {Session} s
   * @param {unknown} prompt
   * @param {AgentMessage[]} all the full history
   * @param {AgentMessage[]} shown the messages assemble returns
   * @returns {Promise<import("./recall.js").Recalled | null>}
   */
  async recall(s, prompt, all, shown) {
    if (!this.config.recall || typeof prompt !== "string" || !prompt.trim()) return null;
    const fingerprint = recallFingerprint(prompt, all);
    if (s.lastRecall?.fingerprint === fingerprint) {
      // The same turn again (a retried attempt): the same memories.
      return s.lastRecall.recalled.text ? s.lastRecall.recalled : null;
    }
    const exclude = [...new Set([...inContextIds(s.sessionId, all, shown), ...s.recalled, this.stateId(s.sessionId)])];
    let recalled;
    try {
      recalled = await recallFor(this.client, { prompt, exclude, namespace: this.config.namespace });
    } catch (error) {
      this.host.logger?.warn?.(`knowledge-db: recall is unavailable, so nothing is recalled for this prompt: ${message(error)}`);
      return null;
    }
    s.lastRecall = { fingerprint, recalled };
    return recalled.text ? recalled : null;
  }

  /**
   * Marks recalled ids as told (kept in the state record from the next write).
   * @param {Session} s
   * @param {import("./recall.js").Recalled} recalled
   */
  remember(s, recalled) {
    const fresh = recalled.ids.filter((id) => !s.recalled.includes(id));
    if (fresh.length) s.recalled = [...s.recalled, ...fresh].slice(-RECALLED_KEPT);
  }

  /** @param {any} params */
  async compact(params) {
    const { sessionId, force } = params;
    const budget = params.tokenBudget ?? params.runtimeContext?.tokenBudget;
    const outcome = await this.withSession(sessionId, async (s) => {
      const b = budget ?? s.budget;
      if (!s.view) return { delegate: `no messages of session ${sessionId} seen by this gateway yet` };
      if (!b) return { delegate: "no token budget given" };
      const all = s.view;
      if (!(await this.storeQuietly(s, all))) return { delegate: AMNESIA_WARNING, warn: true };
      const before = sum(this.visible(s, all), (m) => this.tokens(m));
      const goal = Math.floor(this.config.targetUtilization * b);
      if (before <= goal) {
        return {
          result: {
            ok: true,
            compacted: false,
            reason: `the context (${before} tokens) already fits ${this.config.targetUtilization} of the ${b}-token budget${force ? "" : "; nothing to evict"}`,
            result: { tokensBefore: before, tokensAfter: before },
          },
        };
      }
      let rolled;
      try {
        rolled = await this.roll(s, all, b);
      } catch (error) {
        return { delegate: `${AMNESIA_WARNING}: ${message(error)}`, warn: true };
      }
      const after = sum(this.visible(s, all), (m) => this.tokens(m));
      if (!rolled.changed) {
        return {
          result: {
            ok: true,
            compacted: false,
            reason: `nothing can be evicted: the newest ${this.config.minKeepMessages} messages (and the system prompt) are kept`,
            result: { tokensBefore: before, tokensAfter: after },
          },
        };
      }
      const note = noteMessage(/** @type {Evicted} */ (s.evicted)).content[0].text;
      return {
        result: {
          ok: true,
          compacted: true,
          result: {
            summary: note,
            tokensBefore: before,
            tokensAfter: after,
            details: {
              engine: ENGINE_ID,
              evictedMessages: rolled.plan.evict.length,
              evictedTotal: s.evicted?.count,
              evictedTokensTotal: s.evicted?.tokens,
              belowMinKeep: rolled.plan.belowMinKeep,
            },
          },
        },
      };
    });
    if (outcome.result) return outcome.result;
    if (outcome.warn) this.host.logger?.warn?.(outcome.delegate);
    else this.host.logger?.info?.(`knowledge-db: delegating compaction to OpenClaw: ${outcome.delegate}`);
    if (!this.host.delegate) {
      return { ok: false, compacted: false, reason: `${outcome.delegate} (and OpenClaw's compaction is not available)` };
    }
    return this.host.delegate(params);
  }

  /** @param {{sessionId: string, message: AgentMessage}} params */
  async ingest({ sessionId, message: m }) {
    return this.withSession(sessionId, async (s) => {
      try {
        return { ingested: (await this.store(s, [m])) > 0 };
      } catch (error) {
        this.host.logger?.warn?.(`knowledge-db: ingest failed (retried at the next assemble): ${message(error)}`);
        return { ingested: false };
      }
    });
  }

  /** @param {{sessionId: string, messages: AgentMessage[]}} params */
  async ingestBatch({ sessionId, messages }) {
    return this.withSession(sessionId, async (s) => {
      try {
        return { ingestedCount: await this.store(s, messages) };
      } catch (error) {
        this.host.logger?.warn?.(`knowledge-db: ingestBatch failed (retried at the next assemble): ${message(error)}`);
        return { ingestedCount: 0 };
      }
    });
  }

  /** @param {any} params */
  async afterTurn(params) {
    const { sessionId, messages, tokenBudget } = params;
    await this.withSession(sessionId, async (s) => {
      s.view = messages;
      if (tokenBudget) s.budget = tokenBudget;
      await this.storeQuietly(s, messages);
    });
  }

  /**
   * One atomic, idempotent write per admitted turn, keyed by advancementKey.
   * @param {{advancementKey: string, sessionId: string, messages: AgentMessage[]}} params
   */
  async commitTurn({ advancementKey, sessionId, messages }) {
    return this.withSession(sessionId, async (s) => {
      if (s.committed.includes(advancementKey)) return { status: "duplicate" };
      // Throws when the store cannot be written: the host keeps the turn queued.
      await this.store(s, messages, { commitKey: advancementKey });
      return { status: "committed" };
    });
  }

  /**
   * A ContextEngine object for OpenClaw (a new one per operation; state lives here).
   * @param {string} version
   */
  engine(version) {
    return {
      info: {
        id: ENGINE_ID,
        name: "knowledge-db rolling context",
        version,
        ownsCompaction: true,
        transcriptSemantics: {
          currentTurnFence: "before-current-turn-entry-v1",
          turnAdvancementIdempotency: "atomic-idempotent-v1",
        },
        turnMaintenanceMode: "background",
      },
      ingest: (/** @type {any} */ p) => this.ingest(p),
      ingestBatch: (/** @type {any} */ p) => this.ingestBatch(p),
      afterTurn: (/** @type {any} */ p) => this.afterTurn(p),
      commitTurn: (/** @type {any} */ p) => this.commitTurn(p),
      assemble: (/** @type {any} */ p) => this.assemble(p),
      compact: (/** @type {any} */ p) => this.compact(p),
      maintain: async () => ({ changed: false, bytesFreed: 0, rewrittenEntries: 0, reason: "the transcript is never rewritten: evicted messages stay in it and in knowledge-db" }),
      dispose: async () => {},
    };
  }
}

/** @param {AgentMessage} m */
function isNote(m) {
  return m.role === "user" && Array.isArray(m.content) && typeof m.content[0]?.text === "string" && m.content[0].text.startsWith("[Context rolled: ");
}

/**
 * @template T
 * @param {T[]} items
 * @param {(x: T) => number} f
 */
function sum(items, f) {
  let total = 0;
  for (const x of items) total += f(x);
  return total;
}

/** @param {number} n */
function finiteOrNull(n) {
  return Number.isFinite(n) ? n : null;
}
