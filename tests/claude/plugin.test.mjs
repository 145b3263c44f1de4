// The knowledge-db Claude Code plugin and the way out (issue 53), with the
// real Claude Code (the pinned version scripts/setup-clients.sh installs),
// headless and offline against the Messages API stand-in:
// - `claude plugin validate` passes on the marketplace (the checkout) and on
//   the plugin;
// - `claude plugin marketplace add <checkout>` + `claude plugin install
//   knowledge-db@knowledge-db`, and no `hook install`: a session is captured,
//   a later prompt gets its recall block and the brief, the MCP tool is
//   listed and answers; `claude plugin details` gives the token cost the
//   README quotes; `hook install` refuses beside the enabled plugin;
// - the plugin's uninstall: the next session runs no hook of ours, the store
//   is intact;
// - without a binary the plugin says once in the session how to get one, and
//   the session completes;
// - `hook install` then the plugin: every hook runs once, not twice;
// - `hook uninstall`: the project's files are byte for byte as before the
//   install, the next session runs no hook of ours, the store is intact.
//
// Run by ./test.sh after claude.test.mjs; environment as there.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { after, before, test } from "node:test";

import { CLAUDE, hookRuns, makeWorld, repo, skipReason } from "./harness.mjs";
import { contentText, lastToolResults, messagesText, startStandIn } from "./standin.mjs";

const SKIP = skipReason();
if (SKIP) console.log(`# SKIPPING the plugin tests: ${SKIP}`);

const ID = "knowledge-db@knowledge-db";
const MCP_TOOL = "mcp__plugin_knowledge-db_knowledge-db__memory_search";

let api;
const worlds = [];
before(async () => {
  if (!SKIP) api = await startStandIn({ recordFile: process.env.KDB_CLAUDE_RECORD });
});
after(async () => {
  if (api) await api.close();
  for (const w of worlds) {
    if (process.env.KDB_CLAUDE_KEEP) console.log(`# kept ${w.dir}`);
    else w.remove();
  }
});

/**
 * A world without `hook install`. With `binary`, a copy of the binary is on
 * the PATH as `knowledge-db` (how pipx or a wheel installs it); the hooks'
 * store is the world's (KNOWLEDGE_DB_HOME).
 */
function world(name, { binary = true, install = false } = {}) {
  const w = makeWorld(name, { api, install, copyBin: true });
  worlds.push(w);
  if (binary) w.env.PATH = `${join(w.dir, "bin")}:${w.env.PATH}`;
  w.env.KNOWLEDGE_DB_HOME = w.store;
  return w;
}

/**
 * `claude ARGS` (not a session: plugin management), in the world; resolves
 * {status, stdout, stderr}. Asynchronous: `plugin details` asks the stand-in
 * (in this process) to count tokens.
 */
function claudeCli(w, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(CLAUDE, args, { cwd: w.proj, env: w.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

async function installPlugin(w) {
  const add = await claudeCli(w, ["plugin", "marketplace", "add", repo]);
  assert.equal(add.status, 0, `marketplace add: ${add.stdout}${add.stderr}`);
  const install = await claudeCli(w, ["plugin", "install", ID]);
  assert.equal(install.status, 0, `plugin install: ${install.stdout}${install.stderr}`);
}

/** One `claude -p` session on a script: {run, requests, main, session}. */
async function session(w, prompt, script, opts = {}) {
  api.script(script);
  const mark = api.mark();
  const allowed = ["--allowedTools", `Bash Write Edit Read ToolSearch Skill ${MCP_TOOL} mcp__knowledge-db__memory_search`];
  const run = await w.claude(prompt, { ...opts, args: [...allowed, ...(opts.args || [])] });
  const requests = api.since(mark).filter((r) => r.kind !== "count_tokens" && r.kind !== "other");
  assert.equal(run.status, 0, `claude -p exited ${run.status}\nstdout: ${run.stdout}\nstderr: ${run.stderr}\ndebug: ${run.debug}`);
  const left = api.left();
  assert.deepEqual(left, { main: 0, subagent: 0, compact: 0 }, `script not used up: ${JSON.stringify(left)} (${run.debug})`);
  return { run, requests, main: requests.filter((r) => r.kind === "main"), session: requests.find((r) => r.session)?.session };
}

/** The work the later prompts recall: a failing retry test fixed. */
function retryWork(w) {
  const client = join(w.proj, "client.py");
  return {
    prompt: "The HTTP client retry tests fail intermittently; find out why and fix it",
    script: {
      main: [
        { tool: "Bash", input: { command: "printf 'test_retry_backoff FAILED\\nNameError: name backoff is not defined\\n'", description: "Run the retry tests" } },
        { tool: "Write", input: { file_path: client, content: "def get(url, retries=3):\n    sleep(backoff.delay(1))\n" } },
        {
          text: "The root cause is a missing import of the backoff module in client.py; I'll import it instead of vendoring the exponential backoff code.",
          tool: "Edit", input: { file_path: client, old_string: "def get(", new_string: "import backoff\n\ndef get(" },
        },
        "Fixed: the retry tests pass now that client.py imports the backoff module.",
      ],
    },
  };
}

/** Our hook runs in a session's debug log (by either registration). */
function ourHookRuns(debug) {
  return hookRuns(debug).filter((r) => /knowledge-db/.test(r.command));
}

/** Every file under dir (but .git), with its bytes. */
function tree(dir) {
  const out = {};
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (name === ".git") continue;
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(dir, p)] = readFileSync(p).toString("base64");
    }
  };
  walk(dir);
  return out;
}

const QUESTION = "what was the root cause when the HTTP client retry tests failed?";

test("plugin: `claude plugin validate` passes on the marketplace and on the plugin", { skip: SKIP }, async () => {
  const w = world("validate");
  for (const target of [repo, join(repo, "plugin")]) {
    const out = await claudeCli(w, ["plugin", "validate", "--strict", target]);
    assert.equal(out.status, 0, `validate ${target}:\n${out.stdout}${out.stderr}`);
    assert.match(out.stdout, /Validation passed/);
  }
  const out = await claudeCli(w, ["plugin", "validate", join(repo, "plugin")]);
  for (const part of ["hooks: PostToolUse", "hooks: UserPromptSubmit", "mcpServers: knowledge-db", "skills: knowledge-db:knowledge-db", "bin: knowledge-db"]) {
    assert.ok(out.stdout.includes(part), `${part} not in:\n${out.stdout}`);
  }
});

test("plugin: installed from the checkout's marketplace, no `hook install`: capture, recall, the brief and the MCP tool; details' token cost is the README's", { skip: SKIP }, async () => {
  const w = world("plugin");
  await installPlugin(w);
  assert.ok(!existsSync(join(w.proj, ".claude")), "nothing written into the project");

  const work = retryWork(w);
  const first = await session(w, work.prompt, work.script);
  const runs = ourHookRuns(first.run.debug);
  assert.ok(runs.some((r) => r.event === "Stop" && r.status === 0 && /bin\/knowledge-db" hook stop/.test(r.command)), JSON.stringify(runs));
  // Captured, from Claude Code's own transcript, into the store (not the plugin's folder).
  const records = w.records().filter((r) => r.kind === "message" && r.source?.session_id === first.session);
  assert.ok(records.some((r) => r.source.role === "user" && r.source.text === work.prompt), "the prompt is stored");
  assert.ok(records.some((r) => /root cause is a missing import/.test(r.source.text)), "the answer is stored");
  assert.equal(w.kdb(["upkeep"]).status, 0);

  const asked = await session(w, QUESTION, {
    main: [
      { tool: "ToolSearch", input: { query: `select:${MCP_TOOL}`, max_results: 5 } },
      { tool: MCP_TOOL, input: { query: "backoff module import", limit: 5 } },
      "It was a missing import.",
    ],
  });
  const firstRequest = messagesText(asked.main[0].body);
  assert.match(firstRequest, /UserPromptSubmit hook additional context: knowledge-db recalled \d+ memor/);
  assert.ok(firstRequest.includes(`session ${first.session}`), "recall names the first session");
  assert.match(firstRequest, /SessionStart hook additional context: knowledge-db: recent sessions/, "the brief arrives");
  assert.ok(firstRequest.includes(MCP_TOOL), "the plugin's MCP tool is listed to the model");
  const [result] = lastToolResults(asked.main[2].body);
  assert.ok(result && result.is_error !== true, `memory_search answered: ${JSON.stringify(result)}`);
  assert.ok(contentText(result.content).includes(first.session), "its hits name the first session");
  assert.equal(w.hooksLog(), "", "no hook failed");

  // The skill's `knowledge-db` commands find one on the Bash PATH, the
  // plugin's bin/ included (its launcher runs the user's binary).
  const which = await session(w, "which knowledge-db?", {
    main: [{ tool: "Bash", input: { command: "type -a knowledge-db; \"$(type -ap knowledge-db | grep plugin/bin)\" --version", description: "Find it" } }, "Found."],
  });
  const [found] = lastToolResults(which.main[1].body);
  assert.match(contentText(found.content), /plugin\/bin\/knowledge-db\n(.|\n)*knowledge-db \d/);

  // `claude plugin details`: the token cost, quoted by the README.
  // Offline (no API to count with), as the README quotes it: Claude Code's own estimate.
  const offline = { ...w.env };
  delete offline.ANTHROPIC_BASE_URL;
  delete offline.ANTHROPIC_API_KEY;
  const details = await claudeCli({ ...w, env: offline }, ["plugin", "details", ID]);
  assert.equal(details.status, 0, details.stderr);
  const always = /Always-on:\s+~(\d+) tok/.exec(details.stdout)?.[1];
  const onInvoke = /knowledge-db\s+~(\d+)\s+~(\d+)/.exec(details.stdout)?.[2];
  assert.ok(always && onInvoke, details.stdout);
  const readme = readFileSync(join(repo, "README.md"), "utf8");
  assert.ok(readme.includes(`~${always} tokens`) && readme.includes(`~${onInvoke} tokens`),
    `the README quotes ~${always} tokens always on and ~${onInvoke} per skill call:\n${details.stdout}`);

  // `hook install` beside the enabled plugin is refused: no hook twice.
  const refused = w.kdb(["hook", "install", "--no-history"]);
  assert.equal(refused.status, 2, refused.stdout + refused.stderr);
  assert.match(refused.stderr, /plugin .* is enabled/);
  const doctor = w.kdb(["hook", "doctor"]);
  assert.match(doctor.stdout, /active: the plugin knowledge-db@knowledge-db/, doctor.stdout);

  // The plugin's uninstall: no hook of ours in the next session, the store intact.
  const count = w.records().length;
  const gone = await claudeCli(w, ["plugin", "uninstall", ID]);
  assert.equal(gone.status, 0, gone.stdout + gone.stderr);
  const market = await claudeCli(w, ["plugin", "marketplace", "remove", "knowledge-db"]);
  assert.equal(market.status, 0, market.stdout + market.stderr);
  // Claude Code leaves empty `enabledPlugins` and `extraKnownMarketplaces`
  // objects behind; nothing names knowledge-db any more.
  const settings = readFileSync(join(w.home, ".claude/settings.json"), "utf8");
  assert.doesNotMatch(settings, /knowledge-db/, settings);
  const later = await session(w, QUESTION, { main: ["No memory here."] });
  assert.deepEqual(ourHookRuns(later.run.debug), [], "a hook of ours ran after the uninstall");
  assert.doesNotMatch(messagesText(later.main[0].body), /knowledge-db recalled|mcp__plugin_knowledge-db/);
  assert.equal(w.records().length, count, "the store is intact");
  const after = w.kdb(["hook", "doctor"]);
  assert.match(after.stdout, /nothing is installed/, after.stdout);
});

test("plugin without a binary: says once in the session how to get one, and the session completes", { skip: SKIP }, async () => {
  const w = world("nobinary", { binary: false });
  await installPlugin(w);
  const s = await session(w, "hello", {
    main: [{ tool: "Bash", input: { command: "echo working", description: "Work" } }, "Done."],
  });
  const runs = ourHookRuns(s.run.debug);
  assert.ok(runs.length >= 3, JSON.stringify(runs));
  assert.ok(runs.every((r) => r.status === 0), `a hook failed: ${JSON.stringify(runs)}`);
  const text = messagesText(s.main[0].body);
  const told = text.split("the plugin found no knowledge-db binary").length - 1;
  assert.equal(told, 1, `said ${told} times:\n${text.slice(-3000)}`);
  assert.match(text, /pipx install knowledge-db/);
  assert.equal(messagesText(s.main[1].body).split("the plugin found no knowledge-db binary").length - 1, 1, "not again later in the session");
  assert.ok(!existsSync(w.store), "no store appeared");
});

test("hook install, then the plugin: each hook runs once", { skip: SKIP }, async () => {
  const w = world("both", { install: true });
  const work = retryWork(w);
  await session(w, work.prompt, work.script);
  assert.equal(w.kdb(["upkeep"]).status, 0);
  await installPlugin(w);
  const doctor = w.kdb(["hook", "doctor"]);
  assert.match(doctor.stdout, /active: `hook install`.*step aside/, doctor.stdout);
  const s = await session(w, QUESTION, { main: ["It was a missing import."] });
  const text = messagesText(s.main[0].body);
  assert.equal(text.split("knowledge-db recalled").length - 1, 1, `recalled once:\n${text.slice(-4000)}`);
  assert.equal(text.split("knowledge-db: recent sessions").length - 1, 1, "one brief");
  const stops = ourHookRuns(s.run.debug).filter((r) => r.event === "Stop");
  assert.equal(stops.length, 2, "both registrations' Stop ran (the plugin's stepped aside)");
  const messages = w.records().filter((r) => r.kind === "message" && r.source?.session_id === s.session);
  assert.equal(new Set(messages.map((r) => r.id)).size, messages.length);
  assert.equal(w.hooksLog(), "", "no hook failed");
});

test("hook uninstall: the project's files as before the install, byte for byte; the next session runs no hook of ours; the store intact", { skip: SKIP }, async () => {
  const w = world("uninstall");
  const beforeProj = tree(w.proj);
  const claudeJson = () => (existsSync(join(w.home, ".claude.json")) ? readFileSync(join(w.home, ".claude.json"), "utf8") : null);
  const install = w.kdb(["hook", "install", "--no-history"]);
  assert.equal(install.status, 0, install.stderr);
  const work = retryWork(w);
  const first = await session(w, work.prompt, work.script);
  assert.ok(ourHookRuns(first.run.debug).length > 0);
  const count = w.records().length;
  assert.ok(count > 0, "captured");

  const out = w.kdb(["hook", "uninstall"]);
  assert.equal(out.status, 0, out.stderr);
  assert.match(out.stdout, /removed 6 hooks/);
  assert.match(out.stdout, new RegExp(`the store ${w.store} is kept: ${count} records`));
  assert.deepEqual(tree(w.proj), { ...beforeProj, "client.py": tree(w.proj)["client.py"] }, "the project is as before the install");
  assert.ok(!existsSync(join(w.proj, ".claude")), ".claude/ was the install's and is gone");
  const config = JSON.parse(claudeJson());
  for (const p of Object.values(config.projects || {})) assert.ok(!p.mcpServers?.["knowledge-db"], JSON.stringify(p));

  const later = await session(w, QUESTION, { main: ["No memory here."] });
  assert.deepEqual(ourHookRuns(later.run.debug), [], "a hook of ours ran after the uninstall");
  assert.doesNotMatch(messagesText(later.main[0].body), /knowledge-db recalled|mcp__knowledge-db/);
  assert.equal(w.records().length, count, "the store is intact");
  assert.match(w.kdb(["hook", "doctor"]).stdout, /nothing is installed/);
});
