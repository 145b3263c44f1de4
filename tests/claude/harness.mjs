// The world a real Claude Code session runs in, for tests/claude/: a HOME of
// its own (so ~/.claude is the test's), a git project with `knowledge-db hook
// install` run in it on a temporary store, and `claude -p` run headless
// against the scripted stand-in (standin.mjs). Nothing of the user's own
// configuration is read: the environment is built from scratch.

import { spawn, spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const BIN = process.env.KNOWLEDGE_DB_BIN || join(repo, "target/debug/knowledge-db");
const realHome = process.env.HOME || "/root";
const CLIENTS = process.env.KDB_CLIENTS_DIR || join(realHome, ".cache/knowledge-db/clients");
export const CLAUDE =
  process.env.KDB_CLAUDE || join(CLIENTS, "claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe");
// The embedding model stays in the real user's cache (a user's hooks find it in theirs).
const MODELS = process.env.KNOWLEDGE_DB_MODELS || join(realHome, ".cache/knowledge-db");

/** Why the tests cannot run here, or false. */
export function skipReason() {
  if (process.env.KDB_CLIENT_TESTS === "skip") return "Claude Code could not be installed (npm unreachable)";
  if (!existsSync(CLAUDE)) return `no Claude Code at ${CLAUDE} (scripts/setup-clients.sh installs it)`;
  if (!existsSync(BIN)) return `no knowledge-db binary at ${BIN} (cargo build, or set KNOWLEDGE_DB_BIN)`;
  return false;
}

/** The tools a session may use without asking (root may not skip permissions). */
export const ALLOWED = "Bash Write Edit Read Agent ToolSearch Skill mcp__knowledge-db__memory_search mcp__knowledge-db__memory_get";

/**
 * A fresh world: {dir, home, proj, store, env, kdb(args, input), claude(prompt, opts),
 * transcripts(), hooksLog(), records()}. `install: false` leaves the project
 * without the hooks (the baseline of the overhead measurement); `copyBin` runs a
 * copy of the binary of the world's own (so a test can remove it).
 */
export function makeWorld(name, { api, install = true, bin = BIN, copyBin = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), `kdb-claude-${name}-`));
  if (copyBin) {
    // A copy of its own (named as installed), which a test may remove.
    mkdirSync(join(dir, "bin"));
    copyFileSync(bin, join(dir, "bin/knowledge-db"));
    chmodSync(join(dir, "bin/knowledge-db"), 0o755);
    bin = join(dir, "bin/knowledge-db");
  }
  const home = join(dir, "home");
  const proj = join(dir, "proj");
  const store = join(dir, "store");
  mkdirSync(home, { recursive: true });
  mkdirSync(proj, { recursive: true });
  const env = {
    PATH: process.env.PATH || "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    TMPDIR: process.env.TMPDIR || "/tmp",
    ANTHROPIC_BASE_URL: api.url,
    ANTHROPIC_API_KEY: "sk-ant-stand-in",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_AUTOUPDATER: "1",
    KNOWLEDGE_DB_MODELS: MODELS,
    // No background upkeep: the tests see exactly what the hooks did.
    KNOWLEDGE_DB_UPKEEP: "off",
  };
  const git = (...args) => spawnSync("git", args, { cwd: proj, env, encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "test@example.com");
  git("config", "user.name", "Test");
  writeFileSync(join(proj, "README.md"), "# httpkit\n\nA small HTTP client with retries.\n");
  git("add", ".");
  git("commit", "-q", "-m", "start");

  const world = {
    dir, home, proj, store, env, bin, runs: 0,
    kdb(args, input) {
      const out = spawnSync(bin, ["--store", store, ...args], { cwd: proj, env, input, encoding: "utf8", maxBuffer: 1 << 28 });
      if (out.error) throw out.error;
      return out;
    },
    /**
     * `claude -p prompt` (headless); resolves {status, stdout, stderr, ms, debug}.
     * `readOnly`: folders made read-only for this session and its hooks (as root:
     * bind mounts remounted read-only in a private mount namespace, `unshare -m`).
     */
    claude(prompt, { args = [], extraEnv = {}, timeout = 90_000, readOnly = [] } = {}) {
      const debug = join(dir, `debug-${++world.runs}.log`);
      const argv = ["-p", prompt, "--allowedTools", ALLOWED, "--debug-file", debug, ...args];
      const [program, programArgs] = readOnly.length === 0 ? [CLAUDE, argv] : [
        "unshare",
        ["-m", "--propagation", "private", "sh", "-c",
          'set -e; while [ "$1" != -- ]; do mount --bind "$1" "$1"; mount -o remount,bind,ro "$1" "$1"; shift; done; shift; exec "$@"',
          "sh", ...readOnly, "--", CLAUDE, ...argv],
      ];
      return new Promise((resolve, reject) => {
        const started = process.hrtime.bigint();
        const child = spawn(program, programArgs, { cwd: proj, env: { ...env, ...extraEnv }, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d) => (stdout += d));
        child.stderr.on("data", (d) => (stderr += d));
        const timer = setTimeout(() => child.kill("SIGKILL"), timeout);
        child.on("error", reject);
        child.on("close", (status) => {
          clearTimeout(timer);
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          resolve({ status, stdout, stderr, ms, debug });
        });
      });
    },
    /** Claude Code's transcripts of this project (main sessions), by session id. */
    transcripts() {
      const root = join(home, ".claude/projects");
      const out = {};
      if (!existsSync(root)) return out;
      for (const p of readdirSync(root)) {
        for (const f of readdirSync(join(root, p))) {
          if (f.endsWith(".jsonl")) out[f.slice(0, -6)] = join(root, p, f);
        }
      }
      return out;
    },
    hooksLog() {
      const p = join(store, "hooks/hooks.log");
      return existsSync(p) ? readFileSync(p, "utf8") : "";
    },
    /** The stored records (export), parsed. */
    records() {
      const out = world.kdb(["export", "--no-vectors"]);
      if (out.status !== 0) throw new Error(`export: ${out.stderr}`);
      return out.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (install) {
    const out = world.kdb(["hook", "install", "--no-history"]);
    if (out.status !== 0) throw new Error(`hook install: ${out.stderr}`);
  }
  return world;
}

/**
 * The hook runs Claude Code's debug log reports:
 * [{event, matcher, command, status, ms}] from lines like
 * `Hooks: PostToolUse:Bash [cmd] finished with status 0 (47ms)` (a plugin's
 * hook: `[cmd] (plugin id) finished …`) and
 * `SessionEnd:other [cmd] completed with status 0`.
 */
export function hookRuns(debugFile) {
  if (!existsSync(debugFile)) return [];
  const runs = [];
  // A plugin's hook adds its id: `… [cmd] (plugin knowledge-db@knowledge-db) finished …`.
  const re = /(?:Hooks: |\] )([A-Za-z]+)(?::([^ \]]+))? \[([^\]]+)\](?: \(plugin [^)]*\))? (?:finished|completed) with status (-?\d+)(?: \((\d+)ms\))?/;
  for (const line of readFileSync(debugFile, "utf8").split("\n")) {
    const m = re.exec(line);
    if (m && !/cc-plugin/.test(m[3])) runs.push({ event: m[1], matcher: m[2] || null, command: m[3], status: Number(m[4]), ms: m[5] ? Number(m[5]) : null });
  }
  return runs;
}

/** The lines of the debug log that mention a hook's output or error. */
export function hookLines(debugFile) {
  if (!existsSync(debugFile)) return [];
  return readFileSync(debugFile, "utf8").split("\n").filter((l) => /[Hh]ook/.test(l) && !/cc-plugin|plugins/.test(l));
}
