//! What the hostile-input tests share: the binary under test (another one
//! through `HOSTILE_BIN`, to show a test failing before its fix), commands
//! that must end within a deadline, hostile files made on the spot (a FIFO, a
//! link to `/dev/zero`, a sparse file, a gzip bomb, symlink loops; never
//! committed), and a small MCP client.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

#[allow(unused_imports)]
pub use crate::common::mcp::{is_error, text_of, Mcp};

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

/// `knowledge-db mcp <args>` of the binary under test on `store`, initialized.
pub fn mcp(store: &TestStore, args: &[&str]) -> Mcp {
    mcp_with_env(store, args, &[])
}

/// [`mcp`] with more environment variables.
pub fn mcp_with_env(store: &TestStore, args: &[&str], env: &[(&str, &Path)]) -> Mcp {
    let mut cmd = kdb(store);
    cmd.arg("mcp").args(args);
    crate::common::mcp::without_model(&mut cmd, store);
    for (key, value) in env {
        cmd.env(key, value);
    }
    Mcp::initialized(cmd)
}
