// Shared by the tests: the real knowledge-db binary on a temporary store, and
// the real OpenClaw package (installed by scripts/setup-clients.sh).

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { KnowledgeDbClient } from "../src/client.js";
import { RollingMemory } from "../src/engine.js";

export const PLUGIN_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO = resolve(PLUGIN_DIR, "..");

/** The knowledge-db binary: $KNOWLEDGE_DB_BIN, else the debug build, else the release build. */
export function binary() {
  const candidates = [
    process.env.KNOWLEDGE_DB_BIN,
    join(REPO, "target/debug/knowledge-db"),
    join(REPO, "target/release/knowledge-db"),
  ].filter(Boolean);
  const found = candidates.find((p) => existsSync(/** @type {string} */ (p)));
  if (!found) throw new Error(`no knowledge-db binary (build it, or set KNOWLEDGE_DB_BIN); looked at ${candidates.join(", ")}`);
  return /** @type {string} */ (found);
}

/** The installed openclaw package folder. */
export function openclawDir() {
  const clients = process.env.KDB_CLIENTS_DIR ?? join(homedir(), ".cache/knowledge-db/clients");
  const dir = process.env.KDB_OPENCLAW_DIR ?? join(clients, "openclaw/node_modules/openclaw");
  if (!existsSync(join(dir, "package.json"))) {
    throw new Error(`openclaw is not installed at ${dir}: run scripts/setup-clients.sh`);
  }
  return dir;
}

/**
 * Imports `openclaw/<subpath>` from the installed package (the tests run
 * outside OpenClaw, which would resolve these imports for a loaded plugin).
 * @param {string} subpath e.g. "plugin-sdk/agent-harness-runtime"
 */
export async function importOpenclaw(subpath) {
  const dir = openclawDir();
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const entry = pkg.exports[`./${subpath}`];
  const file = typeof entry === "string" ? entry : entry.default;
  return import(pathToFileURL(join(dir, file)).href);
}

/** The helpers the plugin takes from OpenClaw, from the real package. */
export async function hostHelpers() {
  const core = await importOpenclaw("plugin-sdk/core");
  const agentCore = await importOpenclaw("plugin-sdk/agent-core");
  return {
    delegate: core.delegateCompactionToRuntime,
    memoryPrompt: core.buildMemorySystemPromptAddition,
    estimateTokens: agentCore.estimateTokens,
  };
}

/** A fresh store folder (removed at exit), created by `knowledge-db init`. */
export function tempStore() {
  const dir = mkdtempSync(join(tmpdir(), "kdb-openclaw-"));
  const store = join(dir, "store");
  execFileSync(binary(), ["--store", store, "init"], { stdio: "ignore" });
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  return { dir, store };
}

/** No embedding model: the tests run on BM25 and stay quick. */
export function withoutModel() {
  process.env.KNOWLEDGE_DB_MODELS = join(tmpdir(), "kdb-no-models");
  delete process.env.KNOWLEDGE_DB_MODEL_DIR;
}

/** Collects warnings and infos. */
export function captureLogger() {
  /** @type {{warn: string[], info: string[]}} */
  const seen = { warn: [], info: [] };
  return {
    seen,
    warn: (/** @type {string} */ m) => seen.warn.push(m),
    info: (/** @type {string} */ m) => seen.info.push(m),
  };
}

/**
 * A RollingMemory on a store, with OpenClaw's real helpers.
 * @param {{store: string, binary?: string, config?: object, delegate?: (p: any) => Promise<any>}} p
 */
export async function rollingMemory({ store, binary: bin, config = {}, delegate }) {
  const helpers = await hostHelpers();
  const logger = captureLogger();
  const engineConfig = { namespace: "openclaw", targetUtilization: 0.8, minKeepMessages: 10, evictionNote: true, recall: true, ...config };
  const client = new KnowledgeDbClient({ binary: bin ?? binary(), store, namespace: engineConfig.namespace }, logger);
  const memory = new RollingMemory(client, engineConfig, { ...helpers, ...(delegate ? { delegate } : {}), logger });
  return { memory, client, logger, helpers };
}

let clock = Date.parse("2026-11-20T09:00:00.000Z");

/** A conversation: `turns` user prompts, each answered with a tool call, its result and a reply. */
export function conversation(turns, { words = 60, start } = {}) {
  if (start !== undefined) clock = start;
  const messages = [];
  const filler = (n, seed) =>
    Array.from({ length: n }, (_, i) => `w${(seed * 31 + i * 7) % 997}`).join(" ");
  for (let t = 1; t <= turns; t++) {
    const ts = () => (clock += 1000);
    messages.push({ role: "user", content: [{ type: "text", text: `turn ${t} question about module${t}.rs zq${t}marker ${filler(words, t)}` }], timestamp: ts() });
    const call = `call-${t}`;
    messages.push({
      role: "assistant",
      content: [{ type: "toolCall", id: call, name: "read", arguments: { path: `src/module${t}.rs` } }],
      timestamp: ts(),
    });
    messages.push({ role: "toolResult", toolCallId: call, toolName: "read", content: [{ type: "text", text: `fn module${t}() { ${filler(words, t + 1000)} }` }], isError: false, timestamp: ts() });
    messages.push({ role: "assistant", content: [{ type: "text", text: `answer ${t}: module${t} looks fine ${filler(words / 2, t + 2000)}` }], timestamp: ts() });
  }
  return messages;
}
