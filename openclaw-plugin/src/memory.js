// The memory slot: OpenClaw's memory_search / memory_get tools and its memory
// search manager, answered by knowledge-db through the shared MCP child.
//
// memory_search asks the server for OpenClaw's own payload shape
// (`format: "openclaw"`: path, startLine, endLine, score, vectorScore,
// textScore, snippet, source, citation), so nothing is translated here. A hit's
// `path` is its record id and its lines are its turn range; memory_get with
// that path reads the record, and for a segment or task the raw messages of its
// turn range (`from` = first turn, `lines` = how many messages).
// A `sessions/<id>` path is not offered: the server reads session turn ranges
// by the Claude Code hooks' turn index, which sessions written here lack.

import { message } from "./client.js";

/** @typedef {import("./client.js").KnowledgeDbClient} KnowledgeDbClient */

/**
 * OpenClaw's MemorySearchResult list for a query.
 * @param {KnowledgeDbClient} client
 * @param {string} namespace
 * @param {string} query
 * @param {{maxResults?: number, minScore?: number, queries?: string[]}} [opts]
 */
export async function searchPayload(client, namespace, query, opts = {}) {
  /** @type {Record<string, unknown>} */
  const args = { query, namespace, format: "openclaw" };
  if (opts.maxResults !== undefined) args.maxResults = opts.maxResults;
  if (opts.minScore !== undefined) args.minScore = opts.minScore;
  if (opts.queries?.length) args.queries = opts.queries;
  return client.call("memory_search", args);
}

/**
 * A record (or file lines) as OpenClaw's memory_get answer {path, text, ...}.
 * @param {KnowledgeDbClient} client
 * @param {{path: string, from?: number, lines?: number}} p
 */
export async function readMemory(client, { path, from, lines }) {
  /** @type {Record<string, unknown>} */
  const args = { path };
  if (from !== undefined) args.from = from;
  if (lines !== undefined) args.lines = lines;
  const found = await client.call("memory_get", args);
  if (typeof found.text === "string") return found; // a file of the QMD surface
  return recordPage(path, found);
}

/**
 * @param {string} path
 * @param {any} found {record, messages?, from?, nextFrom?, truncated}
 */
export function recordPage(path, found) {
  const record = found.record ?? {};
  const source = record.source ?? {};
  const head = [];
  const title = source.topic ?? source.title ?? source.subject;
  if (title) head.push(`# ${title}`);
  head.push(`${record.kind ?? "record"} ${record.id ?? path} (${record.citation ?? ""})`);
  const body =
    source.compressed_content ??
    source.summary ??
    source.description ??
    source.text ??
    (typeof source.content === "string" ? source.content : undefined);
  if (body) head.push("", String(body));
  for (const key of ["key_decisions", "key_outcomes", "key_files", "files_modified"]) {
    if (Array.isArray(source[key]) && source[key].length) {
      head.push("", `${key.replace("_", " ")}: ${source[key].join("; ")}`);
    }
  }
  if (Array.isArray(found.messages) && found.messages.length) {
    head.push("", "Messages:");
    for (const m of found.messages) head.push(`[turn ${m.turn_index}] ${m.role}: ${m.text}`);
  }
  /** @type {Record<string, unknown>} */
  const page = { path, text: head.join("\n") };
  if (found.truncated) page.truncated = true;
  if (found.from !== undefined) page.from = found.from;
  if (Array.isArray(found.messages)) page.lines = found.messages.length;
  if (found.nextFrom !== undefined) page.nextFrom = found.nextFrom;
  return page;
}

/** A tool result as memory-core returns them: the payload as JSON text and as details. */
export function jsonResult(payload) {
  return {
    content: [{ type: "text", text: JSON.stringify(payload, null, 2) }],
    details: payload,
  };
}

/**
 * What the store holds, for status() and the probes.
 * @param {KnowledgeDbClient} client
 */
export async function storeStatus(client) {
  const stats = await client.call("memory_stats", {});
  const vectors = stats.vectors ?? {};
  const vector = String(stats.vector ?? "");
  return {
    store: String(stats.store ?? ""),
    records: Number(stats.records ?? 0),
    withVector: Number(vectors.with_vector ?? 0),
    vectorsWaiting: Number(vectors.without_vector ?? 0),
    vector,
    // The model is loaded when vectors are used, or when only the vectors are missing.
    modelPresent: vector === "used" || vector.includes("has a vector yet"),
    byKind: stats.by_kind ?? {},
    byNamespace: stats.by_namespace ?? {},
  };
}

/**
 * OpenClaw's MemoryProviderStatus for a store status.
 * @param {Awaited<ReturnType<typeof storeStatus>> | null} s
 * @param {string | null} error
 */
export function providerStatus(s, error) {
  if (!s) {
    return {
      backend: "builtin",
      provider: "knowledge-db",
      fts: { enabled: true, available: false, error: error ?? "not checked yet" },
      vector: { enabled: true, available: false, loadError: error ?? "not checked yet" },
      custom: { error },
    };
  }
  return {
    backend: "builtin",
    provider: "knowledge-db",
    model: s.vector === "used" ? "all-MiniLM-L6-v2" : "bm25",
    chunks: s.records,
    dbPath: s.store,
    sources: ["memory", "sessions"],
    fts: { enabled: true, available: true },
    vector: {
      enabled: true,
      available: s.vector === "used",
      semanticAvailable: s.vector === "used",
      index: { state: s.records === 0 ? "empty" : s.vectorsWaiting ? "incomplete" : "complete" },
      ...(s.vector === "used" ? {} : { loadError: s.vector }),
      dims: 384,
    },
    custom: {
      records: s.records,
      vectorsWaiting: s.vectorsWaiting,
      store: s.store,
      modelPresent: s.modelPresent,
      vectorSearch: s.vector,
      byKind: s.byKind,
      byNamespace: s.byNamespace,
    },
  };
}

/**
 * The memory search manager OpenClaw's runtime asks for.
 * @param {KnowledgeDbClient} client
 * @param {string} namespace
 */
export async function createManager(client, namespace) {
  /** @type {Awaited<ReturnType<typeof storeStatus>> | null} */
  let last = null;
  /** @type {string | null} */
  let lastError = null;
  const refresh = async () => {
    try {
      last = await storeStatus(client);
      lastError = null;
    } catch (error) {
      lastError = message(error);
    }
    return last;
  };
  await refresh();
  return {
    /** @param {string} query @param {{maxResults?: number, minScore?: number}} [opts] */
    async search(query, opts = {}) {
      const payload = await searchPayload(client, namespace, query, opts);
      return payload.results ?? [];
    },
    /** @param {{relPath: string, from?: number, lines?: number}} p */
    async readFile({ relPath, from, lines }) {
      try {
        return { status: "ok", ...(await readMemory(client, { path: relPath, from, lines })) };
      } catch (error) {
        if (/no record|neither/.test(message(error))) return { status: "not_found", text: "", path: relPath };
        throw error;
      }
    },
    status() {
      void refresh();
      return providerStatus(last, lastError);
    },
    async sync() {
      await refresh();
    },
    getCachedEmbeddingAvailability() {
      return last ? { ok: last.vector === "used", ...(last.vector === "used" ? {} : { error: last.vector }), cached: true } : null;
    },
    async probeEmbeddingAvailability() {
      const s = await refresh();
      if (!s) return { ok: false, error: lastError ?? "knowledge-db is unreachable", checked: true };
      return s.vector === "used" ? { ok: true, checked: true } : { ok: false, error: s.vector, checked: true };
    },
    async probeVectorStoreAvailability() {
      return (await refresh()) !== null;
    },
    async probeVectorAvailability() {
      return (await refresh())?.vector === "used";
    },
    async close() {},
  };
}
