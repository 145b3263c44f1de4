// knowledge-db for OpenClaw: one plugin in both exclusive slots.
//
// - memory (`plugins.slots.memory`): memory_search and memory_get tools, the
//   memory search manager OpenClaw's runtime asks for, and `openclaw
//   knowledge-db search|status`;
// - context engine `knowledge-db` (`plugins.slots.contextEngine`): rolling
//   context, and recall of what the store holds about each prompt, see
//   src/engine.js and src/recall.js.
// Both talk to one long-lived `knowledge-db mcp` child (src/client.js).

import { createRequire } from "node:module";

import { KnowledgeDbClient, message } from "./src/client.js";
import { ENGINE_ID, RollingMemory } from "./src/engine.js";
import { createManager, jsonResult, providerStatus, readMemory, searchPayload, storeStatus } from "./src/memory.js";

const PLUGIN_ID = "knowledge-db";
const CLI_COMMAND = "knowledge-db";
const CLI_DESCRIPTION = "Search long-term memory (knowledge-db) and show what its store holds";
const VERSION = createRequire(import.meta.url)("./package.json").version;

/** Defaults of the manifest's configSchema. */
export const DEFAULTS = {
  binary: "knowledge-db",
  namespace: "openclaw",
  targetUtilization: 0.8,
  minKeepMessages: 10,
  evictionNote: true,
  recall: true,
};

/** @param {Record<string, unknown> | undefined} raw */
export function resolveConfig(raw) {
  const c = { ...DEFAULTS, ...(raw ?? {}) };
  const store = c.store ?? process.env.KNOWLEDGE_DB_HOME ?? undefined;
  return {
    binary: String(c.binary),
    store: store ? String(store) : undefined,
    namespace: String(c.namespace),
    targetUtilization: Number(c.targetUtilization),
    minKeepMessages: Math.floor(Number(c.minKeepMessages)),
    evictionNote: c.evictionNote !== false,
    recall: c.recall !== false,
  };
}

/** One client (one child) per gateway process and configuration. */
const clients = new Map();

/** @param {ReturnType<typeof resolveConfig>} config @param {any} logger */
function sharedClient(config, logger) {
  const key = `${config.binary}\0${config.store ?? ""}\0${config.namespace}`;
  let client = clients.get(key);
  if (!client) {
    client = new KnowledgeDbClient(config, logger);
    clients.set(key, client);
  }
  return client;
}

/** One line on stdout (OpenClaw's CLI sends console.log to stderr). */
function print(/** @type {string} */ line) {
  process.stdout.write(`${line}\n`);
}

/** Stops every child (tests; a gateway's children end with it anyway). */
export async function closeAll() {
  for (const client of clients.values()) await client.close();
  clients.clear();
}

/** OpenClaw's own helpers, when this OpenClaw has them. */
async function hostHelpers() {
  /** @type {any} */
  const helpers = {};
  try {
    const core = await import("openclaw/plugin-sdk/core");
    helpers.delegate = core.delegateCompactionToRuntime;
    helpers.memoryPrompt = core.buildMemorySystemPromptAddition;
  } catch {}
  try {
    const agentCore = await import("openclaw/plugin-sdk/agent-core");
    helpers.estimateTokens = agentCore.estimateTokens;
  } catch {}
  // OpenClaw's estimate is characters / 4 per message; the same rule if absent.
  helpers.estimateTokens ??= (/** @type {any} */ m) => Math.ceil(JSON.stringify(m.content ?? "").length / 4);
  return helpers;
}

const SEARCH_PARAMETERS = {
  type: "object",
  properties: {
    query: { type: "string", description: "Words, identifiers, file names, error codes, or a question." },
    queries: {
      type: "array",
      items: { type: "string" },
      maxItems: 7,
      description:
        "More phrasings of the same need, searched together with `query` and fused by rank: the user's words, the names you guess (commands, files, settings, errors), the effect it had.",
    },
    maxResults: { type: "integer", minimum: 1, maximum: 100, description: "How many results (default 8)." },
    minScore: { type: "number", description: "Drop results scoring below this (0..1)." },
  },
  required: ["query"],
  additionalProperties: false,
};

const GET_PARAMETERS = {
  type: "object",
  properties: {
    path: { type: "string", description: "A memory_search result's path (a record id, or a file)." },
    id: { type: "string", description: "A record id, as recalled memories give it (the same as path)." },
    from: { type: "integer", minimum: 0, description: "First turn of a record's messages (or first line of a file)." },
    lines: { type: "integer", minimum: 1, description: "How many messages (or lines); default 50." },
  },
  additionalProperties: false,
};

/**
 * @param {() => Promise<{client: KnowledgeDbClient, config: ReturnType<typeof resolveConfig>}>} get
 */
function memoryTools(get) {
  const search = {
    label: "Memory Search",
    name: "memory_search",
    description:
      "Search long-term memory (knowledge-db): earlier messages of this and past sessions, including those rolled out of the context window, compressed segments, task summaries and notes. Use it before answering about prior work, decisions, files or errors, and whenever the context says messages were rolled. Past work is often remembered in other words than it was done in: give more phrasings of the need in `queries` (the user's words, the names you guess, the effect it had). Results have path, startLine-endLine (turns), score and snippet; read one in full with memory_get. A date in the query (2026-03-09, March 9, on Monday, last week, yesterday) ranks what was written then first. `unknownWords` lists query words no stored record holds: results can match only the other words or the meaning.",
    parameters: SEARCH_PARAMETERS,
    /** @param {string} _id @param {any} params */
    execute: async (_id, params) => {
      const { client, config } = await get();
      try {
        return jsonResult(
          await searchPayload(client, config.namespace, String(params.query ?? ""), {
            maxResults: params.maxResults,
            minScore: params.minScore,
            queries: Array.isArray(params.queries) ? params.queries.map(String) : undefined,
          }),
        );
      } catch (error) {
        return jsonResult({
          results: [],
          disabled: true,
          unavailable: true,
          error: message(error),
          warning: "Memory search is unavailable: knowledge-db could not be reached or refused the query.",
          action: "Check the knowledge-db plugin's `binary` and `store` settings (openclaw memory status), then retry memory_search.",
        });
      }
    },
  };
  const get_ = {
    label: "Memory Get",
    name: "memory_get",
    description:
      "Read one memory_search hit (by its path) or recalled memory (by its id) in full: a message, a segment or task with the raw messages of its turn range (page with from = first turn and lines = how many), or a note.",
    parameters: GET_PARAMETERS,
    /** @param {string} _id @param {any} params */
    execute: async (_id, params) => {
      const { client } = await get();
      const path = String(params.path ?? params.id ?? "");
      if (!path) return jsonResult({ path, text: "", disabled: true, error: "give `path` (a memory_search hit's) or `id` (a record id)" });
      try {
        return jsonResult(await readMemory(client, { path, from: params.from, lines: params.lines }));
      } catch (error) {
        return jsonResult({ path, text: "", disabled: true, error: message(error) });
      }
    },
  };
  return [search, get_];
}

/**
 * `openclaw knowledge-db search|status`, on the plugin's own store. Not
 * `openclaw memory …`: OpenClaw 2026.9.6 registers memory-core's `memory`
 * command even while memory-core is disabled (and that command does not ask
 * the slot owner), so a second `memory` is refused as a duplicate, or wins
 * only by load order.
 */
function registerMemoryCli(api, get) {
  api.registerCli(
    async ({ program }) => {
      const memory = program.command(CLI_COMMAND).description(CLI_DESCRIPTION);
      memory
        .command("search")
        .description("Search long-term memory")
        .argument("<query...>", "what to look for")
        .option("--max-results <n>", "how many results", (v) => Number.parseInt(v, 10))
        .option("--min-score <x>", "drop results scoring below this", Number.parseFloat)
        .option("--json", "print OpenClaw's memory_search payload as JSON")
        .action(async (/** @type {string[]} */ words, /** @type {any} */ opts) => {
          const { client, config } = await get();
          try {
            const payload = await searchPayload(client, config.namespace, words.join(" "), {
              maxResults: opts.maxResults,
              minScore: opts.minScore,
            });
            if (opts.json) print(JSON.stringify(payload, null, 2));
            else if (!payload.results?.length) print(`No results (${payload.debug?.vector ?? ""}).`);
            else {
              payload.results.forEach((/** @type {any} */ r, /** @type {number} */ i) => {
                print(`${i + 1}. ${r.citation} (score ${Number(r.score).toFixed(3)})`);
                print(`   ${String(r.snippet).split("\n")[0]}`);
              });
            }
          } finally {
            await client.close();
          }
        });
      memory
        .command("status")
        .description("What the knowledge-db store holds")
        .option("--json", "print OpenClaw's memory status as JSON")
        .action(async (/** @type {any} */ opts) => {
          const { client } = await get();
          try {
            let status = null;
            let error = null;
            try {
              status = await storeStatus(client);
            } catch (e) {
              error = message(e);
            }
            if (opts.json) print(JSON.stringify(providerStatus(status, error), null, 2));
            else if (!status) {
              print(`knowledge-db: unreachable: ${error}`);
              process.exitCode = 1;
            } else {
              print(`store: ${status.store}`);
              print(`records: ${status.records} (${JSON.stringify(status.byKind)})`);
              print(`vectors waiting: ${status.vectorsWaiting}`);
              print(`model present: ${status.modelPresent ? "yes" : "no"}; vector search: ${status.vector}`);
            }
          } finally {
            await client.close();
          }
        });
    },
    { descriptors: [{ name: CLI_COMMAND, description: CLI_DESCRIPTION, hasSubcommands: true }] },
  );
}

export default {
  id: PLUGIN_ID,
  name: "knowledge-db",
  description: "Long-term memory and rolling context on knowledge-db",
  /** @param {any} api */
  register(api) {
    const config = resolveConfig(api.pluginConfig);
    const logger = api.logger ?? console;
    /** @type {Promise<{client: KnowledgeDbClient, config: typeof config, memory: RollingMemory}> | null} */
    let ready = null;
    // Nothing starts until the first call: inspecting the plugin spawns nothing.
    const get = () => {
      ready ??= hostHelpers().then((helpers) => {
        const client = sharedClient(config, logger);
        const memory = new RollingMemory(client, config, { ...helpers, logger });
        return { client, config, memory };
      });
      return ready;
    };

    api.registerContextEngine(ENGINE_ID, async () => (await get()).memory.engine(VERSION));

    api.registerMemoryCapability({
      deterministicRecallToolName: "memory_search",
      runtime: {
        async getMemorySearchManager() {
          const { client } = await get();
          try {
            return { manager: await createManager(client, config.namespace) };
          } catch (error) {
            return { manager: null, error: message(error) };
          }
        },
        resolveMemoryBackendConfig() {
          return { backend: "builtin" };
        },
        // The store holds this user's own sessions: every hit may be shown.
        async authorizeSearchHits({ hits }) {
          return hits;
        },
      },
    });

    for (const tool of memoryTools(get)) {
      api.registerTool(() => tool, { names: [tool.name] });
    }
    if (typeof api.registerCli === "function") {
      // A fresh client per CLI run, closed when the command is done.
      registerMemoryCli(api, async () => ({ client: new KnowledgeDbClient(config, logger), config }));
    }
  },
};
