//! The integration tests' one MCP client: a `knowledge-db mcp` child spoken
//! to line by line over stdio, as Claude Code and the other stdio clients do
//! (the real SDK clients are in tests/mcp_clients.rs). Every wait is bounded:
//! a server that stops answering fails the test within a minute instead of
//! hanging it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::TestStore;

/// How long any one answer may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

/// A running `knowledge-db mcp`.
pub struct Mcp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

/// `knowledge-db --store <store> mcp <args>`: no background upkeep, no model
/// (the server must work on BM25 alone and say so).
pub fn command(store: &TestStore, args: &[&str]) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("knowledge-db"));
    cmd.arg("--store").arg(store.path()).arg("mcp").args(args);
    without_model(&mut cmd, store);
    cmd
}

/// The environment of a test server: no upkeep, no model, no home store.
pub fn without_model(cmd: &mut Command, store: &TestStore) {
    cmd.env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("KNOWLEDGE_DB_MODELS", store.dir.path().join("no-models"))
        .env_remove("KNOWLEDGE_DB_MODEL_DIR")
        .env_remove("KNOWLEDGE_DB_HOME");
}

impl Mcp {
    /// Starts the server on `store` with `args` after `mcp`, initialized.
    pub fn start(store: &TestStore, args: &[&str]) -> Mcp {
        Mcp::start_with_env(store, args, &[])
    }

    /// [`Mcp::start`] with more environment variables.
    pub fn start_with_env(store: &TestStore, args: &[&str], env: &[(&str, &Path)]) -> Mcp {
        let mut cmd = command(store, args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        Mcp::initialized(cmd)
    }

    /// Spawns `cmd` (a `knowledge-db mcp` command) and goes through the
    /// handshake.
    pub fn initialized(cmd: Command) -> Mcp {
        let mut mcp = Mcp::spawn(cmd);
        let init = mcp.initialize();
        assert!(init.get("result").is_some(), "{init}");
        mcp
    }

    /// Spawns `cmd` without a handshake (a test of the handshake itself).
    pub fn spawn(mut cmd: Command) -> Mcp {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp {
            child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// `initialize` at 2025-11-25 and the `initialized` notification; the
    /// server's answer.
    pub fn initialize(&mut self) -> Value {
        let answer = self.call(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "knowledge-db-test", "version": "1.0"}
            }),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        answer
    }

    /// Writes `bytes` and a newline.
    pub fn raw(&mut self, bytes: &[u8]) {
        self.partial(bytes);
        self.partial(b"\n");
    }

    /// Writes `bytes` without a newline.
    pub fn partial(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// Writes one message as a line.
    pub fn send(&mut self, message: &Value) {
        self.raw(message.to_string().as_bytes());
    }

    /// Closes the server's stdin (it exits at the end of its input).
    pub fn close(&mut self) {
        self.stdin.take();
    }

    /// The next line from the server within `timeout`, as JSON; `None` when
    /// nothing came.
    pub fn receive(&mut self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// The next message, which must come within a minute and be JSON-RPC 2.0
    /// (every line a server writes to stdout must be).
    pub fn next(&mut self) -> Value {
        let message = self.receive(ANSWER_WITHIN).expect("a message within 60 s");
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        message
    }

    /// The answer with `id`, within a minute; messages before it are skipped.
    pub fn answer(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .receive(left)
                .unwrap_or_else(|| panic!("no answer to request {id} within 60 s"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == *id {
                return message;
            }
        }
    }

    /// Sends a request; its id.
    pub fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns its answer.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.answer(&json!(id))
    }

    /// Calls a tool; its result (`isError` set for a refusal). A JSON-RPC
    /// error fails the test.
    pub fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self.call("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(answer.get("error").is_none(), "{name}: {answer}");
        answer["result"].clone()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One session on `store`: the tools called in order, their results.
pub fn session(store: &TestStore, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut server = Mcp::start(store, &[]);
    calls
        .iter()
        .map(|(name, arguments)| server.tool(name, arguments.clone()))
        .collect()
}

/// The text of a tool result.
pub fn text_of(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Whether a tool result is a refusal.
pub fn is_error(result: &Value) -> bool {
    result["isError"] == json!(true)
}
