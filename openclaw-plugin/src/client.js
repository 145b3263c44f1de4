// One long-lived `knowledge-db mcp` child per gateway, spoken to with the
// official MCP TypeScript SDK. The child keeps the store open and the embedding
// model loaded, so a memory_search costs a round trip on a pipe, not a process
// start. If the child dies (killed, crashed, the binary replaced), the next call
// starts a new one; calls in flight when it died fail with the reason, and the
// caller decides (the context engine then does not evict).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

/** @typedef {{binary: string, store?: string, namespace: string}} ClientConfig */

/** How long one tool call may take before it is reported as failed (ms). */
const CALL_TIMEOUT_MS = 60_000;
/** Most recent lines of the child's stderr kept for error messages. */
const STDERR_LINES = 20;

export class KnowledgeDbError extends Error {}

export class KnowledgeDbClient {
  /**
   * @param {ClientConfig} config
   * @param {{warn?: (msg: string) => void, info?: (msg: string) => void}} [logger]
   */
  constructor(config, logger = {}) {
    this.config = config;
    this.logger = logger;
    /** @type {Promise<Client> | null} */
    this.connecting = null;
    /** @type {Client | null} */
    this.client = null;
    this.starts = 0;
    /** @type {string[]} */
    this.stderr = [];
    this.closed = false;
  }

  /**
   * The command line of the child. It is not scoped with `--namespace`: the
   * engine keeps its session state in `<namespace>-engine`, which a scoped
   * server would refuse to write; every call names its namespace instead.
   */
  args() {
    const args = [];
    if (this.config.store) args.push("--store", this.config.store);
    args.push("mcp");
    return args;
  }

  /** The connected client, starting the child when there is none. */
  async connect() {
    if (this.closed) throw new KnowledgeDbError("the knowledge-db client was closed");
    if (this.client) return this.client;
    if (!this.connecting) {
      this.connecting = this.start().finally(() => {
        this.connecting = null;
      });
    }
    return this.connecting;
  }

  async start() {
    const transport = new StdioClientTransport({
      command: this.config.binary,
      args: this.args(),
      env: childEnv(),
      stderr: "pipe",
    });
    const stderr = transport.stderr;
    if (stderr) {
      stderr.setEncoding?.("utf8");
      stderr.on("data", (chunk) => {
        for (const line of String(chunk).split("\n")) {
          if (!line.trim()) continue;
          this.stderr.push(line);
          if (this.stderr.length > STDERR_LINES) this.stderr.shift();
        }
      });
    }
    const client = new Client({ name: "openclaw-knowledge-db", version: "0.1.0" });
    client.onclose = () => {
      if (this.client === client) {
        this.client = null;
        if (!this.closed) {
          this.logger.warn?.(
            `knowledge-db: the mcp child exited; the next call starts a new one (${this.lastStderr()})`,
          );
        }
      }
    };
    this.starts += 1;
    try {
      await client.connect(transport);
    } catch (error) {
      await transport.close().catch(() => {});
      throw new KnowledgeDbError(
        `cannot start \`${this.config.binary} ${this.args().join(" ")}\`: ${message(error)}${this.stderrSuffix()}`,
      );
    }
    this.client = client;
    this.transport = transport;
    detach(transport, false);
    return client;
  }

  /** The child's process id (tests kill it to check the restart). */
  pid() {
    // @ts-ignore: the SDK keeps the transport on the client.
    return this.client?.transport?.pid ?? null;
  }

  /**
   * Calls a tool and returns its structuredContent; a tool error (isError)
   * becomes a KnowledgeDbError with the tool's message.
   * @param {string} name
   * @param {Record<string, unknown>} args
   */
  async call(name, args) {
    const client = await this.connect();
    let result;
    try {
      result = await client.callTool({ name, arguments: args }, undefined, {
        timeout: CALL_TIMEOUT_MS,
      });
    } catch (error) {
      throw new KnowledgeDbError(`${name} failed: ${message(error)}${this.stderrSuffix()}`);
    }
    if (result.isError) {
      const text = (result.content ?? [])
        .map((/** @type {any} */ c) => (c.type === "text" ? c.text : ""))
        .join(" ");
      throw new KnowledgeDbError(`${name}: ${text}`);
    }
    return /** @type {any} */ (result.structuredContent ?? {});
  }

  lastStderr() {
    return this.stderr.at(-1) ?? "no output on stderr";
  }

  stderrSuffix() {
    return this.stderr.length ? ` (knowledge-db said: ${this.lastStderr()})` : "";
  }

  async close() {
    this.closed = true;
    const client = this.client;
    this.client = null;
    // Closing waits for the child to exit: hold the process until it has.
    if (this.transport) detach(this.transport, true);
    await client?.close().catch(() => {});
  }
}

/**
 * Lets the process exit while the child idles (a one-shot `openclaw` command
 * must not hang on it); a call in flight still holds the process through its
 * timeout timer. The child exits when our end of its stdin closes.
 * @param {any} transport
 * @param {boolean} hold ref again (to wait for the child's exit)
 */
function detach(transport, hold) {
  const child = transport._process;
  if (!child) return;
  const method = hold ? "ref" : "unref";
  child[method]?.();
  for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.[method]?.();
}

/** The gateway's environment for the child (the SDK passes only a safe subset by default). */
function childEnv() {
  /** @type {Record<string, string>} */
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return env;
}

/** @param {unknown} error */
export function message(error) {
  return error instanceof Error ? error.message : String(error);
}
