// A scripted stand-in for the Anthropic Messages API, for driving the real
// Claude Code (`claude -p`) offline: point ANTHROPIC_BASE_URL at it.
//
// It answers `POST /v1/messages` (Claude Code adds `?beta=true`) with a
// streamed (SSE) message taken from a script, and records every request body
// it receives, so a test can read exactly what the model would have seen.
//
// The script. Claude Code sends three kinds of model requests, and each kind
// has its own queue of replies:
//   main      the conversation itself (the session's own chain of requests);
//   subagent  a subagent's requests (an `Agent` tool call runs one);
//   compact   the request for the summary of a compaction (`/compact`, or
//             the automatic one when the context is nearly full).
// A reply (a "step") is one of:
//   "text"                                   a text answer, end_turn
//   {text: "…"}                              the same
//   {tool: "Bash", input: {…}, text?: "…"}   one tool_use (stop_reason tool_use)
//   {tools: [{name, input}, …], text?}       several tool_use blocks at once
//   (req) => step                            computed from the request
// and may carry `usage: {input_tokens, output_tokens, cache_read_input_tokens}`
// (reported in message_start/message_delta; a large input_tokens makes Claude
// Code think its context is full, which is how a test triggers the automatic
// compaction). A queue that runs dry answers "Done." (main, subagent) or a
// fixed summary (compact).
//
// Other endpoints: `/v1/messages/count_tokens` answers a token estimate
// (characters / 4); anything else gets 404 with an API-shaped error, and is
// recorded, so a test can see what else the client asked for.
//
// Every request is appended to `requests` (and to `recordFile` as one JSON
// line when given): {n, method, path, kind, session, body}.

import { appendFileSync } from "node:fs";
import http from "node:http";

/** All the text of a message content (a string or a list of blocks). */
export function contentText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      if (block.type === "text") return block.text;
      if (block.type === "tool_result") return contentText(block.content);
      if (block.type === "tool_use") return JSON.stringify(block.input);
      return "";
    })
    .join("\n");
}

/** The system prompt as one string. */
export function systemText(body) {
  return contentText(body.system || []);
}

/** The text of a request's last user message. */
export function lastUserText(body) {
  const users = (body.messages || []).filter((m) => m.role === "user");
  return users.length ? contentText(users[users.length - 1].content) : "";
}

/** The text of every message of a request (system-role messages included). */
export function messagesText(body) {
  return (body.messages || []).map((m) => contentText(m.content)).join("\n");
}

/** The tool_result blocks of a request's last user message. */
export function lastToolResults(body) {
  const users = (body.messages || []).filter((m) => m.role === "user");
  const last = users[users.length - 1];
  if (!last || !Array.isArray(last.content)) return [];
  return last.content.filter((b) => b.type === "tool_result");
}

/** Which queue a model request belongs to: "compact", "subagent" or "main". */
export function classify(body) {
  const last = lastUserText(body);
  if (/create a detailed summary of the conversation|summary of the conversation so far|Your task is to create a detailed summary/i.test(last))
    return "compact";
  // Claude Code marks a subagent's requests in the billing line that opens
  // the system prompt (`cc_is_subagent=true`); both have the Agent tool.
  if (/cc_is_subagent=true/.test(systemText(body).slice(0, 400))) return "subagent";
  return "main";
}

let idCounter = 0;
const nextId = (prefix) => `${prefix}_standin${String(++idCounter).padStart(6, "0")}`;

/** The reply's content blocks and stop reason from a step. */
function blocksOf(step) {
  if (typeof step === "string") step = { text: step };
  const blocks = [];
  if (step.text) blocks.push({ type: "text", text: step.text });
  const tools = step.tools || (step.tool ? [{ name: step.tool, input: step.input || {} }] : []);
  for (const t of tools) blocks.push({ type: "tool_use", id: t.id || nextId("toolu"), name: t.name, input: t.input || {} });
  if (!blocks.length) blocks.push({ type: "text", text: "Done." });
  return { blocks, stop: tools.length ? "tool_use" : "end_turn", usage: step.usage || {} };
}

/** Writes one streamed message. */
function stream(res, model, { blocks, stop, usage }) {
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": nextId("req") });
  const input = usage.input_tokens ?? 1000;
  const output = usage.output_tokens ?? 20;
  ev("message_start", {
    message: {
      id: nextId("msg"), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null,
      usage: { input_tokens: input, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: usage.cache_read_input_tokens ?? 0 },
    },
  });
  blocks.forEach((block, index) => {
    if (block.type === "text") {
      ev("content_block_start", { index, content_block: { type: "text", text: "" } });
      ev("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      ev("content_block_start", { index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } });
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) } });
    }
    ev("content_block_stop", { index });
  });
  ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: output } });
  ev("message_stop", {});
  res.end();
}

/** A non-streamed message (Claude Code streams its model calls; kept for completeness). */
function whole(res, model, { blocks, stop, usage }) {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({
    id: nextId("msg"), type: "message", role: "assistant", model, content: blocks, stop_reason: stop, stop_sequence: null,
    usage: { input_tokens: usage.input_tokens ?? 1000, output_tokens: usage.output_tokens ?? 20 },
  }));
}

const COMPACT_SUMMARY =
  "<summary>\n1. Primary Request and Intent: the user asked for scripted work in a test project.\n" +
  "2. Pending Tasks: none.\n3. Current Work: the scripted session.\n</summary>";

/**
 * Starts the stand-in on 127.0.0.1 (a free port) and returns its handle:
 *   url                       the base URL for ANTHROPIC_BASE_URL
 *   script({main, subagent, compact})  replace the queues (arrays of steps)
 *   requests                  every request so far
 *   model(kind?)              the recorded model requests (of one kind)
 *   mark() / since(mark)      the requests after a point
 *   close()
 */
export async function startStandIn({ recordFile } = {}) {
  const queues = { main: [], subagent: [], compact: [] };
  const requests = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = { unparsed: raw };
      }
      const path = req.url.split("?")[0];
      const isModel = req.method === "POST" && path === "/v1/messages" && body && Array.isArray(body.messages);
      const kind = isModel ? classify(body) : path === "/v1/messages/count_tokens" ? "count_tokens" : "other";
      const entry = {
        n: requests.length + 1, method: req.method, path: req.url, kind,
        session: req.headers["x-claude-code-session-id"] || null, body,
      };
      requests.push(entry);
      if (recordFile) appendFileSync(recordFile, JSON.stringify(entry) + "\n");
      if (kind === "count_tokens") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ input_tokens: Math.ceil(raw.length / 4) }));
        return;
      }
      if (!isModel) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ type: "error", error: { type: "not_found_error", message: `the stand-in does not serve ${req.method} ${path}` } }));
        return;
      }
      let step = queues[kind].shift();
      if (typeof step === "function") step = step(body, entry);
      if (step === undefined) step = kind === "compact" ? COMPACT_SUMMARY : "Done.";
      entry.reply = step;
      const reply = blocksOf(step);
      (body.stream ? stream : whole)(res, body.model || "claude-stand-in", reply);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script({ main = [], subagent = [], compact = [] } = {}) {
      queues.main = [...main];
      queues.subagent = [...subagent];
      queues.compact = [...compact];
    },
    /** Steps still unanswered, per queue (a test checks its script was used up). */
    left() {
      return { main: queues.main.length, subagent: queues.subagent.length, compact: queues.compact.length };
    },
    model(kind) {
      return requests.filter((r) => r.kind !== "count_tokens" && r.kind !== "other" && (!kind || r.kind === kind));
    },
    mark() {
      return requests.length;
    },
    since(mark, kind) {
      return requests.slice(mark).filter((r) => (kind ? r.kind === kind : true));
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
