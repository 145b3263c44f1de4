#!/usr/bin/env node
// What the knowledge-db hooks add to a real Claude Code session: the same
// scripted 10-turn `claude -p` session (9 tool calls — Bash, Write, Edit —
// and a closing answer, served by the stand-in of tests/claude/standin.mjs)
// in four projects, in turn, N times each: one without knowledge-db; one
// with the same six hooks registered but each running `cat >/dev/null` (what
// Claude Code's running of any hook costs); one with `hook install` but its
// MCP entry removed (the hooks and the skill alone); and one with everything `hook install` writes (the MCP server too,
// which `claude -p` starts, and waits for, before the first request); the
// median wall time of each, and each hook's own time as Claude Code's debug
// log reports it.
//
// The project with the hooks keeps its store across the runs (as a user's
// does: recall searches the sessions before it, capture adds one more).
// The embedding model is used (UserPromptSubmit recall loads it), the
// background upkeep is off (it runs outside the session in real use).
//
//   scripts/setup-clients.sh must have installed Claude Code (KDB_CLAUDE), then
//   node benches/claude-overhead.mjs [--runs 7] [--bin target/release/knowledge-db] [--json out.json]

import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";

import { hookRuns, makeWorld, skipReason } from "../tests/claude/harness.mjs";
import { startStandIn } from "../tests/claude/standin.mjs";

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : dflt;
};
const RUNS = Number(opt("--runs", 7));
if (opt("--bin")) process.env.KNOWLEDGE_DB_BIN = opt("--bin");
const BIN = opt("--bin", process.env.KNOWLEDGE_DB_BIN);
const skip = skipReason();
if (skip) {
  console.error(`claude-overhead: ${skip}`);
  process.exit(3);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : null;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : null;
};

function tenTurns(w, i) {
  const f = `${w.proj}/feature_${i}.py`;
  return {
    main: [
      { tool: "Bash", input: { command: "ls", description: "List files" } },
      { tool: "Write", input: { file_path: f, content: "def feature():\n    return 1\n" } },
      { tool: "Bash", input: { command: `python3 -c "print(1)"`, description: "Run it" } },
      { tool: "Edit", input: { file_path: f, old_string: "return 1", new_string: "return 2" } },
      { tool: "Bash", input: { command: "git status --short", description: "Status" } },
      { tool: "Write", input: { file_path: `${f}.md`, content: `# feature ${i}\n` } },
      { tool: "Edit", input: { file_path: f, old_string: "return 2", new_string: "return 3" } },
      { tool: "Bash", input: { command: "echo tests pass", description: "Test" } },
      { tool: "Bash", input: { command: "git diff --stat", description: "Diff" } },
      `Feature ${i} returns 3 now; the tests pass.`,
    ],
  };
}

const api = await startStandIn();
const worlds = {
  plain: makeWorld("overhead-plain", { api, install: false }),
  noop: makeWorld("overhead-noop", { api }),
  hooks: makeWorld("overhead-hooks", { api }),
  full: makeWorld("overhead-full", { api }),
};
// `hook install` registers the MCP server in the project's local scope of ~/.claude.json.
for (const name of ["noop", "hooks"]) {
  const path = join(worlds[name].home, ".claude.json");
  const config = JSON.parse(readFileSync(path, "utf8"));
  for (const project of Object.values(config.projects || {})) delete project.mcpServers?.["knowledge-db"];
  writeFileSync(path, JSON.stringify(config, null, 2));
}
{
  const path = join(worlds.noop.proj, ".claude/settings.local.json");
  const settings = JSON.parse(readFileSync(path, "utf8"));
  for (const groups of Object.values(settings.hooks)) for (const g of groups) for (const h of g.hooks) h.command = "cat >/dev/null";
  writeFileSync(path, JSON.stringify(settings, null, 2));
}
const names = Object.keys(worlds);
const wall = Object.fromEntries(names.map((n) => [n, []]));
const perHook = {};
for (let i = 0; i < RUNS; i++) {
  // A different order each round, so no variant always runs first.
  const order = names.map((_, k) => names[(k + i) % names.length]);
  for (const name of order) {
    const w = worlds[name];
    api.script(tenTurns(w, i));
    const run = await w.claude(`Add feature ${i} to the retry client and run the checks`);
    if (run.status !== 0) throw new Error(`${name} run ${i}: exit ${run.status}: ${run.stderr}`);
    const left = api.left();
    if (left.main) throw new Error(`${name} run ${i}: the script was not used up (${run.debug})`);
    wall[name].push(run.ms);
    if (name === "hooks" || name === "noop") {
      for (const r of hookRuns(run.debug)) {
        const key = r.matcher && r.event !== "PostToolUse" ? `${r.event}:${r.matcher}` : r.event;
        ((perHook[name] ||= {})[key] ||= []).push(r);
      }
    }
    process.stderr.write(`${name} run ${i + 1}/${RUNS}: ${Math.round(run.ms)} ms\n`);
  }
}
await api.close();

const result = {
  runs: RUNS,
  bin: BIN,
  load_average: loadavg(),
  wall_ms: Object.fromEntries(names.map((n) => [n, { median: median(wall[n]), all: wall[n].map(Math.round) }])),
  added_ms_median: {
    noop_hooks: median(wall.noop) - median(wall.plain),
    hooks_and_skill: median(wall.hooks) - median(wall.plain),
    hooks_skill_and_mcp: median(wall.full) - median(wall.plain),
  },
  hooks: Object.fromEntries(
    Object.entries(perHook).map(([variant, byHook]) => [
      variant,
      Object.fromEntries(
        Object.entries(byHook).map(([k, rs]) => {
          const ms = rs.map((r) => r.ms).filter((x) => x !== null);
          return [k, { calls: rs.length, per_session: rs.length / RUNS, p50_ms: median(ms), p95_ms: pct(ms, 95), failed: rs.filter((r) => r.status !== 0).length }];
        }),
      ),
    ]),
  ),
};
console.log(JSON.stringify(result, null, 2));
if (opt("--json")) writeFileSync(opt("--json"), JSON.stringify(result, null, 2));
for (const w of Object.values(worlds)) w.remove();
