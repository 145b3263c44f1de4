// The plugin as a user installs it: OpenClaw's own CLI and loader, a throwaway
// HOME, `plugins install -l` of this folder and of the `npm pack` tarball,
// `plugins inspect --runtime --json`, and `openclaw knowledge-db status|search`.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";

import { PLUGIN_DIR, binary, openclawDir, tempStore, withoutModel } from "./helpers.js";

withoutModel();

/** Runs the real `openclaw` CLI with HOME in `home`. */
function openclaw(home, args, extraEnv = {}) {
  return execFileSync(process.execPath, [join(openclawDir(), "openclaw.mjs"), ...args], {
    env: { ...process.env, HOME: home, OPENCLAW_HOME: undefined, NO_COLOR: "1", ...extraEnv },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 240_000,
  });
}

function freshHome() {
  const home = mkdtempSync(join(tmpdir(), "kdb-openclaw-home-"));
  process.on("exit", () => rmSync(home, { recursive: true, force: true }));
  return home;
}

/** The plugin's defaults at work: `knowledge-db` on PATH, the store from KNOWLEDGE_DB_HOME. */
function defaultsEnv(store) {
  return { PATH: `${dirname(binary())}:${process.env.PATH}`, KNOWLEDGE_DB_HOME: store };
}

function inspect(home) {
  const out = openclaw(home, ["plugins", "inspect", "knowledge-db", "--runtime", "--json"]);
  return JSON.parse(out.slice(out.indexOf("{")));
}

function assertLoaded(report) {
  assert.deepEqual(report.diagnostics, [], JSON.stringify(report.diagnostics));
  assert.equal(report.plugin.status, "loaded", report.plugin.error);
  assert.deepEqual(report.plugin.contextEngineIds, ["knowledge-db"]);
  assert.deepEqual([...report.plugin.toolNames].sort(), ["memory_get", "memory_search"]);
  assert.deepEqual(report.plugin.cliCommands, ["knowledge-db"]);
  assert.equal(report.plugin.activationReason, "selected memory slot");
}

test("linked with `plugins install -l`: loaded without diagnostics, both slots selected, CLI works", () => {
  const home = freshHome();
  const { store } = tempStore();
  const file = join(store, "..", "note.json");
  writeFileSync(file, JSON.stringify({ id: "note-cli", namespace: "openclaw", text: "the gateway port is 18789 (quokka)" }));
  execFileSync(binary(), ["--store", store, "add", file], { stdio: "ignore" });
  openclaw(home, ["plugins", "install", "-l", PLUGIN_DIR, "--force", "--accept-capabilities"]);
  const env = defaultsEnv(store);
  const slots = JSON.parse(openclaw(home, ["config", "get", "plugins.slots", "--json"]));
  assert.equal(slots.memory, "knowledge-db");
  assert.equal(slots.contextEngine, "knowledge-db");
  assertLoaded(inspect(home));
  // OpenClaw validates the config against the manifest's schema: `recall` is a boolean.
  openclaw(home, ["config", "set", "plugins.entries.knowledge-db.config.recall", "false"]);
  const config = JSON.parse(openclaw(home, ["config", "get", "plugins.entries.knowledge-db.config", "--json"]));
  assert.equal(config.recall, false);
  assert.throws(
    () => openclaw(home, ["config", "set", "plugins.entries.knowledge-db.config.recall", '"sometimes"']),
    (/** @type {any} */ error) => /recall: invalid config: must be boolean/.test(String(error.stderr) + String(error.stdout)),
  );

  const status = JSON.parse(openclaw(home, ["knowledge-db", "status", "--json"], env).replace(/^[^{]*/, ""));
  assert.equal(status.provider, "knowledge-db");
  assert.equal(status.custom.records, 1, JSON.stringify(status.custom));
  assert.equal(status.dbPath, store);
  const found = JSON.parse(openclaw(home, ["knowledge-db", "search", "quokka", "--json"], env).replace(/^[^{]*/, ""));
  assert.equal(found.results[0].path, "note-cli");
});

test("installed from the `npm pack` tarball: loaded without diagnostics", () => {
  const home = freshHome();
  const packDir = mkdtempSync(join(tmpdir(), "kdb-pack-"));
  process.on("exit", () => rmSync(packDir, { recursive: true, force: true }));
  const name = execFileSync("npm", ["pack", "--silent", "--pack-destination", packDir], { cwd: PLUGIN_DIR, encoding: "utf8" }).trim().split("\n").at(-1);
  openclaw(home, ["plugins", "install", join(packDir, name), "--force", "--accept-capabilities"]);
  const report = inspect(home);
  assertLoaded(report);
  assert.notEqual(report.plugin.rootDir, PLUGIN_DIR, "the tarball was linked, not installed");
  writeFileSync(join(packDir, "ok"), "");
});
