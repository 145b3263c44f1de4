//! What the hostile-input tests share: the binary under test (another one
//! through `HOSTILE_BIN`, to show a test failing before its fix), commands
//! that must end within a deadline, hostile files made on the spot (a FIFO, a
//! link to `/dev/zero`, a sparse file, a gzip bomb, symlink loops; never
//! committed), and a small MCP client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::TestStore;

/// The binary under test: `$HOSTILE_BIN` when set (e.g. a build of `main`,
/// to watch these tests fail before the fixes), else this package's.
pub fn bin() -> PathBuf {
    std::env::var_os("HOSTILE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("knowledge-db"))
}

/// `knowledge-db --store <store>` without the background upkeep.
pub fn kdb(store: &TestStore) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--store").arg(store.path());
    cmd.env_remove("KNOWLEDGE_DB_HOME");
    cmd.env("KNOWLEDGE_DB_UPKEEP", "off");
    cmd
}

/// What a command did within its deadline.
pub struct Ran {
    pub output: Output,
    /// It was still running at the deadline and was killed.
    pub timed_out: bool,
    pub seconds: f64,
}

impl Ran {
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    pub fn code(&self) -> Option<i32> {
        self.output.status.code()
    }
}

/// Runs `cmd` with `stdin`, killing it at `timeout`.
pub fn run(mut cmd: Command, stdin: &[u8], timeout: Duration) -> Ran {
    let started = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = child.stdin.take().expect("stdin");
    let bytes = stdin.to_vec();
    std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = reader(child.stdout.take().expect("stdout"));
    let err = reader(child.stderr.take().expect("stderr"));
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait().expect("wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        output: Output {
            status,
            stdout: out.recv_timeout(Duration::from_secs(5)).unwrap_or_default(),
            stderr: err.recv_timeout(Duration::from_secs(5)).unwrap_or_default(),
        },
        timed_out,
        seconds: started.elapsed().as_secs_f64(),
    }
}

fn reader(mut from: impl Read + Send + 'static) -> Receiver<Vec<u8>> {
    let (send, receive) = channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = from.read_to_end(&mut bytes);
        let _ = send.send(bytes);
    });
    receive
}

/// A FIFO at `path`.
pub fn fifo(path: &Path) -> PathBuf {
    let c_path = std::ffi::CString::new(path.to_str().expect("utf-8 path")).expect("c path");
    // SAFETY: a valid NUL-terminated path for the call's duration.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0, "mkfifo");
    path.to_path_buf()
}

/// A symlink at `path` to `/dev/zero`.
pub fn dev_zero(path: &Path) -> PathBuf {
    std::os::unix::fs::symlink("/dev/zero", path).expect("symlink");
    path.to_path_buf()
}

/// A sparse file of `len` zero bytes (no disk blocks) at `path`.
pub fn sparse(path: &Path, len: u64) -> PathBuf {
    std::fs::File::create(path)
        .and_then(|f| f.set_len(len))
        .expect("sparse file");
    path.to_path_buf()
}

/// A gzip bomb: one member of `member_mib` MiB of zeros, `copies` times
/// (gzip readers read concatenated members as one stream).
pub fn gzip_bomb(path: &Path, member_mib: usize, copies: usize) -> PathBuf {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..member_mib {
        encoder.write_all(&zeros).expect("gzip");
    }
    let member = encoder.finish().expect("gzip");
    let mut file = std::fs::File::create(path).expect("create");
    for _ in 0..copies {
        file.write_all(&member).expect("write");
    }
    path.to_path_buf()
}

/// Two folders whose symlinks form loops: `root/a/b/up -> root/a` and
/// `root/a/again -> root/a/b`; returns `root/a`.
pub fn symlink_loops(root: &Path) -> PathBuf {
    let a = root.join("a");
    let b = a.join("b");
    std::fs::create_dir_all(&b).expect("mkdir");
    std::os::unix::fs::symlink(&a, b.join("up")).expect("loop 1");
    std::os::unix::fs::symlink(&b, a.join("again")).expect("loop 2");
    a
}

/// The peak resident memory of a running process (`VmHWM`), in bytes.
pub fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A running `knowledge-db mcp` spoken to line by line.
pub struct Mcp {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Mcp {
    /// Starts the server on `store` with `args` after `mcp`, without a model.
    pub fn start(store: &TestStore, args: &[&str]) -> Mcp {
        Mcp::start_with_env(store, args, &[])
    }

    /// [`Mcp::start`] with more environment variables.
    pub fn start_with_env(store: &TestStore, args: &[&str], env: &[(&str, &Path)]) -> Mcp {
        let mut cmd = kdb(store);
        cmd.arg("mcp").args(args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.env("KNOWLEDGE_DB_MODELS", store.dir.path().join("no-models"));
        cmd.env_remove("KNOWLEDGE_DB_MODEL_DIR");
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
        let mut mcp = Mcp {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        let init = mcp.call(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "hostile-test", "version": "1.0"}
            }),
        );
        assert!(init.get("result").is_some(), "{init}");
        mcp.raw(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        mcp
    }

    /// Writes `bytes` and a newline.
    pub fn raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    /// Writes `bytes` without a newline.
    pub fn partial(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    /// The next line from the server within `timeout`, as JSON.
    pub fn receive(&mut self, timeout: Duration) -> Option<Value> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
    }

    /// The answer with `id`, within 60 s.
    pub fn answer(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .receive(left)
                .unwrap_or_else(|| panic!("no answer to request {id} within 60 s"));
            if message["id"] == *id {
                return message;
            }
        }
    }

    /// Sends a request and returns its answer.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.raw(request.to_string().as_bytes());
        self.answer(&json!(id))
    }

    /// Calls a tool; returns its result (`isError` set for a refusal).
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
