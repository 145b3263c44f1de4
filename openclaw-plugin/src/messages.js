// OpenClaw messages as knowledge-db sees them: a stable key per message, its
// searchable text, and the `message` record written for it.
//
// A message's key is its role, its timestamp and, for a tool result, the id of
// the call it answers (never its content: OpenClaw prunes old tool output in
// memory, and the pruned copy must still be recognised as the same message).
// Messages that share all three get `#2`, `#3` in order. The record id is
// `<sessionId>:<key>`, so writing a message twice changes nothing.

/** @typedef {{role: string, content?: any, timestamp?: number, toolCallId?: string, toolName?: string, [k: string]: any}} AgentMessage */

/**
 * Keys of `messages`, in order.
 * @param {AgentMessage[]} messages
 * @returns {string[]}
 */
export function messageKeys(messages) {
  /** @type {Map<string, number>} */
  const seen = new Map();
  return messages.map((m, i) => {
    const base = `${m.role}@${timestampOf(m) ?? `i${i}`}${m.toolCallId ? `/${m.toolCallId}` : ""}`;
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    return n === 1 ? base : `${base}#${n}`;
  });
}

/** @param {AgentMessage} m */
export function timestampOf(m) {
  const t = m.timestamp;
  if (typeof t === "number" && Number.isFinite(t)) return t;
  if (typeof t === "string" && !Number.isNaN(Date.parse(t))) return Date.parse(t);
  return undefined;
}

/** @param {number | undefined} t */
export function isoTime(t) {
  return t === undefined ? "unknown time" : new Date(t).toISOString();
}

/**
 * The text search indexes for a message: its text blocks, tool calls as
 * `name(arguments)`, thinking, and tool results.
 * @param {AgentMessage} m
 */
export function messageText(m) {
  if (typeof m.content === "string") return m.content;
  if (m.role === "compactionSummary" || m.role === "branchSummary") return String(m.summary ?? "");
  if (m.role === "bashExecution") return `$ ${m.command ?? ""}\n${m.output ?? ""}`;
  const parts = [];
  for (const block of Array.isArray(m.content) ? m.content : []) {
    if (!block || typeof block !== "object") continue;
    if (block.type === "text" && typeof block.text === "string") parts.push(block.text);
    else if (block.type === "thinking" && typeof block.thinking === "string") parts.push(block.thinking);
    else if (block.type === "toolCall") {
      parts.push(`${block.name ?? "tool"}(${JSON.stringify(block.arguments ?? {})})`);
    } else if (block.type === "image") parts.push("[image]");
  }
  return parts.join("\n");
}

/**
 * Tool call ids an assistant message makes.
 * @param {AgentMessage} m
 * @returns {string[]}
 */
export function toolCallIds(m) {
  if (m.role !== "assistant" || !Array.isArray(m.content)) return [];
  return m.content.filter((b) => b && b.type === "toolCall" && b.id).map((b) => String(b.id));
}

/**
 * The knowledge-db `message` record for a message.
 * @param {{sessionId: string, namespace: string, key: string, turn: number, message: AgentMessage}} p
 */
export function messageRecord({ sessionId, namespace, key, turn, message: m }) {
  const t = timestampOf(m);
  /** @type {Record<string, unknown>} */
  const record = {
    kind: "message",
    id: `${sessionId}:${key}`,
    namespace,
    session_id: sessionId,
    turn_index: turn,
    role: m.role === "toolResult" ? "tool" : m.role,
    text: messageText(m) || `[${m.role} message without text]`,
    source: "openclaw",
  };
  if (t !== undefined) record.timestamp = new Date(t).toISOString();
  const tools = Array.isArray(m.content)
    ? m.content.filter((b) => b && b.type === "toolCall" && b.name).map((b) => String(b.name))
    : [];
  if (m.toolName) tools.push(String(m.toolName));
  if (tools.length) record.tool_names = [...new Set(tools)];
  if (m.toolCallId) record.tool_call_id = String(m.toolCallId);
  return record;
}
