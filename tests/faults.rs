//! The fault campaign (issue 51), in the spirit of SQLite's and redb's
//! corruption testing: every kind of file a store holds, under every fault a
//! disk, a user or an install can cause, and what every command and hook
//! does then.
//!
//! Kinds ([`KINDS`]): the text index's segment files, the meta files, the
//! vector files and graphs, the archive's frames and its index, the hooks'
//! and ingest's state, the config, the locks, the logs and reports. Faults
//! ([`FAULTS`]): cut short, emptied, replaced by random bytes, flipped
//! bytes, unreadable (mode 000, run without the capabilities that let root
//! ignore it), a read-only file system (the file's folder bind-mounted
//! read-only), a full disk (its folder on a full tmpfs) and deleted while a
//! process (the MCP server) has it open.
//!
//! Each case copies one template store, damages one file chosen by its seed,
//! runs the commands and hooks a user meets (verify, search, get, add,
//! stats, export, `hook stop`, `hook user-prompt-submit`, the MCP server),
//! then undoes what the environment did (space freed, the mount gone, the
//! mode restored), runs `repair` and `verify` again and reads every record
//! back. What must hold (each failure is counted, by kind):
//! - **panic**: no command exits 101 or prints a panic;
//! - **hang**: every command ends within [`COMMAND_BOUND`];
//! - **untrue**: a command that fails exits non-zero with an `error:` line
//!   naming the damaged file (or its folder, for the file system's faults);
//!   a hook exits 0 and, when it says where it logged, the log is there;
//!   `verify` fails, naming the file, on damage to a file it checks; after
//!   `repair`, `verify` passes unless `repair` exited 1 naming what was lost;
//! - **lost**: every record acknowledged before or during the case is there
//!   after `repair`, unless its own file was damaged and `repair` (or
//!   `verify`) named it.
//!
//! CI runs every (kind × fault) pair once, with seeds from `KDB_FAULT_SEED`
//! (default 51), and every case in `tests/faults.regressions` (cases that
//! once failed). `KDB_FAULT_CASES=1000 cargo nextest run --test faults
//! --run-ignored only` runs that many random cases; the counts are in
//! docs/durability.md.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// The longest any one command may take before it counts as a hang.
const COMMAND_BOUND: Duration = Duration::from_secs(180);

/// The kinds of file in a store: a name, and which files (by their path
/// relative to the store) are of the kind.
/// Whether a file (its path relative to the store) is of a kind.
type OfKind = fn(&str) -> bool;

const KINDS: &[(&str, OfKind)] = &[
    ("segment", |p| {
        p.starts_with("text/")
            && [
                ".idx",
                ".pos",
                ".term",
                ".fast",
                ".fieldnorm",
                ".store",
                ".del",
            ]
            .iter()
            .any(|x| p.ends_with(x))
    }),
    ("meta", |p| {
        [
            "text/meta.json",
            "text/.managed.json",
            "archive/index/meta.json",
        ]
        .contains(&p)
    }),
    ("vectors", |p| p.starts_with("vectors/")),
    ("archive-frames", |p| {
        p.starts_with("archive/") && p.ends_with(".jsonl.zst")
    }),
    ("archive-index", |p| {
        p.starts_with("archive/index/")
            && [
                ".idx",
                ".pos",
                ".term",
                ".fast",
                ".fieldnorm",
                ".store",
                ".del",
            ]
            .iter()
            .any(|x| p.ends_with(x))
    }),
    ("hooks-state", |p| {
        p.starts_with("hooks/") && p.ends_with(".json")
    }),
    ("ingest-state", |p| p.starts_with("ingest/")),
    ("config", |p| p == "config.toml" || p == "embedding-rules"),
    ("lock", |p| {
        p == "LOCK" || p.ends_with(".tantivy-writer.lock")
    }),
    ("logs-and-reports", |p| {
        [
            "access.log",
            "verify.json",
            "archive/maintain.json",
            "hooks/hooks.log",
        ]
        .contains(&p)
    }),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Truncated,
    Empty,
    Random,
    Flipped,
    Unreadable,
    ReadOnly,
    DiskFull,
    DeletedWhileOpen,
}

const FAULTS: &[Fault] = &[
    Fault::Truncated,
    Fault::Empty,
    Fault::Random,
    Fault::Flipped,
    Fault::Unreadable,
    Fault::ReadOnly,
    Fault::DiskFull,
    Fault::DeletedWhileOpen,
];

impl Fault {
    fn name(self) -> &'static str {
        match self {
            Fault::Truncated => "truncated",
            Fault::Empty => "empty",
            Fault::Random => "random",
            Fault::Flipped => "flipped",
            Fault::Unreadable => "unreadable",
            Fault::ReadOnly => "read-only",
            Fault::DiskFull => "disk-full",
            Fault::DeletedWhileOpen => "deleted-while-open",
        }
    }

    fn parse(name: &str) -> Option<Fault> {
        FAULTS.iter().copied().find(|f| f.name() == name)
    }

    /// Faults of the bytes themselves (the others are the environment's).
    fn damages_bytes(self) -> bool {
        matches!(
            self,
            Fault::Truncated | Fault::Empty | Fault::Random | Fault::Flipped
        )
    }
}

/// A small seeded generator (xorshift64*): the same seed, the same case.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// The store every case starts from, made once per test process.
struct Template {
    _dir: tempfile::TempDir,
    store: PathBuf,
    /// Every record, by id: its tier and source JSON.
    records: BTreeMap<String, (String, Value)>,
}

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("knowledge-db")
}

/// `knowledge-db --store S ARGS` as the campaign runs it: no upkeep, a
/// state folder of its own, and, as root, without the capabilities that let
/// root read and write files whatever their mode (so a file of mode 000 is
/// as unreadable as for its user).
fn command(store: &Path, state: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--store").arg(store).args(args);
    cmd.env("KNOWLEDGE_DB_UPKEEP", "off")
        .env("XDG_STATE_HOME", state)
        .env("KNOWLEDGE_DB_HNSW_MIN_ROWS", "8")
        .env_remove("KNOWLEDGE_DB_HOME");
    // SAFETY: prctl only changes this (forked, single-threaded) child's
    // capability bounding set before exec.
    unsafe {
        cmd.pre_exec(|| {
            for cap in [1, 2, 3] {
                // CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
            Ok(())
        });
    }
    cmd
}

/// What one command did.
#[derive(Debug, Clone)]
struct Ran {
    what: String,
    code: Option<i32>,
    hung: bool,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn panicked(&self) -> bool {
        self.code == Some(101)
            || self.stderr.contains("panicked at")
            || self.stderr.contains("RUST_BACKTRACE")
    }
    fn ok(&self) -> bool {
        self.code == Some(0)
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or(Value::Null)
    }
}

fn run(mut cmd: Command, what: &str, stdin: &[u8]) -> Ran {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn knowledge-db");
    let mut input = child.stdin.take().expect("stdin");
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut out);
            }
            String::from_utf8_lossy(&out).into_owned()
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let status = wait_bounded(&mut child);
    let (code, hung) = match status {
        Some(status) => (status.code().or(status.signal().map(|s| 128 + s)), false),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            (None, true)
        }
    };
    let _ = writer.join();
    Ran {
        what: what.to_string(),
        code,
        hung,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// The child's exit, or `None` when it has not exited within [`COMMAND_BOUND`]
/// (its exit is looked for every 10 ms).
fn wait_bounded(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let started = std::time::Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if started.elapsed() > COMMAND_BOUND {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn must(ran: Ran) -> Ran {
    assert!(ran.ok(), "{}: {}\n{}", ran.what, ran.stderr, ran.stdout);
    ran
}

fn template() -> Template {
    let dir = tempfile::tempdir().expect("tmp");
    let store = dir.path().join("store");
    let state = dir.path().join("state");
    let cmd = |args: &[&str]| command(&store, &state, args);
    must(run(cmd(&["init"]), "init", b""));
    // The samples (old: the archive takes them), with vectors and graphs.
    let samples = common::samples();
    let mut add = cmd(&["add"]);
    add.arg(&samples);
    must(run(add, "add samples", b""));
    must(run(cmd(&["archive", "--older-than", "1d"]), "archive", b""));
    // Recent notes in two more segments, with vectors.
    for batch in 0..2 {
        let lines: String = (0..12)
            .map(|i| {
                json!({"id": format!("n{batch}-{i}"), "title": format!("note {i} of batch {batch}"),
                       "text": format!("batch {batch} note {i}: retry the flaky upload with backoff {}", i * 7)})
                .to_string()
                    + "\n"
            })
            .collect();
        let file = dir.path().join(format!("notes{batch}.jsonl"));
        fs::write(&file, lines).expect("notes");
        let mut add = cmd(&["add"]);
        add.arg(&file);
        must(run(add, "add notes", b""));
    }
    // A transcript ingested (ingest's state), then captured by the hooks
    // (their state, queue and preservation block).
    let transcript = dir.path().join("session.jsonl");
    fs::write(
        &transcript,
        gunzip(&samples.join("transcripts/uncompacted-session.jsonl.gz")),
    )
    .expect("transcript");
    let mut ingest = cmd(&["ingest", "--embed", "later"]);
    ingest.arg(&transcript);
    must(run(ingest, "ingest", b""));
    let hook = |event: &str, name: &str| {
        let input = hook_input(name, "s-template", &transcript);
        must(run(cmd(&["hook", event]), event, input.as_bytes()))
    };
    hook("stop", "Stop");
    hook("pre-compact", "PreCompact");
    must(run(
        cmd(&["search", "--mode", "bm25", "retry backoff"]),
        "search",
        b"",
    ));
    must(run(cmd(&["verify"]), "verify", b""));
    let records = export(&store, &state).expect("export of the template");
    Template {
        _dir: dir,
        store,
        records,
    }
}

fn gunzip(path: &Path) -> String {
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut flate2::read::GzDecoder::new(fs::File::open(path).expect("sample")),
        &mut text,
    )
    .expect("gunzip");
    text
}

fn hook_input(event: &str, session: &str, transcript: &Path) -> String {
    json!({
        "session_id": session,
        "transcript_path": transcript,
        "cwd": "/home/dev/httpkit",
        "permission_mode": "default",
        "hook_event_name": event,
        "prompt": "how did we make the flaky upload retry with backoff?",
        "source": "startup",
        "trigger": "auto",
    })
    .to_string()
}

/// Every record of the store, by id: (tier, source); `None` when export fails.
fn export(store: &Path, state: &Path) -> Option<BTreeMap<String, (String, Value)>> {
    let ran = run(
        command(store, state, &["export", "--no-vectors"]),
        "export",
        b"",
    );
    if !ran.ok() {
        return None;
    }
    Some(
        ran.stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|v| {
                (
                    v["id"].as_str().unwrap_or_default().to_string(),
                    (v["tier"].to_string(), v["source"].clone()),
                )
            })
            .collect(),
    )
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        let kind = entry.file_type().expect("type");
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_file() {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

fn files_of(store: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_of(store, &path, out);
        } else if let Ok(rel) = path.strip_prefix(store) {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

/// The cases to run: `(kind, fault, seed, only files whose path ends so)`.
type Case = (&'static str, Fault, u64, Option<&'static str>);

/// A mount made for a case, undone when dropped.
struct Mount {
    target: PathBuf,
    /// For a full disk: the folder's files, copied back when it is unmounted.
    copy_back: Option<PathBuf>,
}

impl Drop for Mount {
    fn drop(&mut self) {
        let saved = self.copy_back.as_ref().map(|keep| {
            let _ = fs::remove_dir_all(keep);
            copy_dir(&self.target, keep);
            keep.clone()
        });
        let _ = Command::new("umount").arg(&self.target).status();
        if let Some(saved) = saved {
            let _ = fs::remove_dir_all(&self.target);
            copy_dir(&saved, &self.target);
        }
    }
}

fn sh(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The folder `dir` read-only, by a bind mount onto itself.
fn read_only(dir: &Path) -> Option<Mount> {
    let d = dir.to_str()?;
    if !sh(&["mount", "--bind", d, d]) {
        return None;
    }
    let mount = Mount {
        target: dir.to_path_buf(),
        copy_back: None,
    };
    sh(&["mount", "-o", "remount,bind,ro", d, d]).then_some(mount)
}

/// The folder `dir` on a tmpfs of its size plus a little, filled to the brim.
fn full_disk(dir: &Path, scratch: &Path) -> Option<Mount> {
    let mut bytes = 0u64;
    let mut files = Vec::new();
    files_of(dir, dir, &mut files);
    for f in &files {
        bytes += fs::metadata(dir.join(f)).map_or(0, |m| m.len());
    }
    // tmpfs counts whole pages: room for every file's last page, and a little.
    let size = bytes + 4096 * (files.len() as u64 + 64);
    let saved = scratch.join("saved");
    copy_dir(dir, &saved);
    let d = dir.to_str()?;
    if !sh(&[
        "mount",
        "-t",
        "tmpfs",
        "-o",
        &format!("size={size}"),
        "tmpfs",
        d,
    ]) {
        return None;
    }
    let mount = Mount {
        target: dir.to_path_buf(),
        copy_back: Some(scratch.join("back")),
    };
    copy_dir(&saved, dir);
    // Fill what is left.
    let mut filler = fs::File::create(dir.join(".filler")).ok()?;
    let block = vec![0u8; 4096];
    while filler.write_all(&block).is_ok() {}
    let _ = filler.sync_all();
    Some(mount)
}

/// A tiny MCP client over stdio, which never panics: `None` for no answer.
struct McpChild {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    next_id: u64,
    stderr: PathBuf,
}

impl McpChild {
    fn start(store: &Path, state: &Path, stderr: PathBuf) -> McpChild {
        let mut cmd = command(store, state, &["mcp"]);
        let log = fs::File::create(&stderr).expect("stderr file");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("spawn mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut mcp = McpChild {
            child,
            stdin,
            lines,
            next_id: 1,
            stderr,
        };
        mcp.call(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "faults", "version": "1"}}),
        );
        let _ = writeln!(
            mcp.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
        mcp
    }

    fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{line}").ok()?;
        let deadline = std::time::Instant::now() + COMMAND_BOUND;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.lines.recv_timeout(left).ok()?;
            let message: Value = serde_json::from_str(&line).ok()?;
            if message["id"] == json!(id) {
                return Some(message);
            }
        }
    }

    fn tool(&mut self, name: &str, arguments: Value) -> Option<Value> {
        self.call("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes stdin, waits for the exit (bounded); the stderr it printed.
    fn finish(mut self) -> (bool, String) {
        drop(self.stdin);
        let exited = wait_bounded(&mut self.child).is_some();
        if !exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        (exited, fs::read_to_string(&self.stderr).unwrap_or_default())
    }
}

/// What a case found wrong, by class.
#[derive(Debug, Default)]
struct Findings {
    panics: Vec<String>,
    hangs: Vec<String>,
    untrue: Vec<String>,
    lost: Vec<String>,
    /// Damage no check can tell from a valid file (not a failure).
    undetectable: Vec<String>,
}

impl Findings {
    fn is_empty(&self) -> bool {
        self.panics.is_empty()
            && self.hangs.is_empty()
            && self.untrue.is_empty()
            && self.lost.is_empty()
    }
}

/// One case: damages one file of a copy of the template, runs everything,
/// repairs, and says what went wrong. `None` when the fault cannot be made
/// here (no file of the kind, or no mount allowed).
fn case(template: &Template, (kind, fault, seed, only): Case) -> Option<Findings> {
    let mut scratch = tempfile::tempdir().expect("tmp");
    if std::env::var_os("KDB_FAULT_KEEP").is_some() {
        eprintln!(
            "faults: case {kind} {} {seed} in {}",
            fault.name(),
            scratch.path().display()
        );
        scratch.disable_cleanup(true);
    }
    let store = scratch.path().join("store");
    let state = scratch.path().join("state");
    copy_dir(&template.store, &store);
    // The hooks capture another session (the template's records stay as
    // they were unless the fault took them).
    let transcript = scratch.path().join("session.jsonl");
    fs::write(&transcript, gunzip(&common::samples().join(
        "transcripts/claude-code-2.1.328/-home-dev-httpkit/6acdeb09-9352-4057-997b-261220c30e85.jsonl.gz",
    )))
    .expect("transcript");
    let mut rng = Rng::new(seed);
    let mut candidates = Vec::new();
    files_of(&store, &store, &mut candidates);
    let matches = KINDS.iter().find(|(k, _)| *k == kind).expect("kind").1;
    candidates.retain(|p| matches(p) && only.is_none_or(|end| p.ends_with(end)));
    // Ordered by what does not change between runs (segment names are
    // random): the extension, then the size; so a seed names the same file
    // in another run, as far as sizes tell segments apart.
    let key = |p: &String| {
        let ext = Path::new(p)
            .extension()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        let size = fs::metadata(store.join(p)).map_or(0, |m| m.len());
        (ext, size, p.clone())
    };
    candidates.sort_by_key(key);
    if candidates.is_empty() {
        return None;
    }
    let rel = candidates[rng.below(candidates.len() as u64) as usize].clone();
    let file = store.join(&rel);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = file.parent().unwrap_or(&store).to_path_buf();
    let label = format!("{kind} × {} (seed {seed}): {rel}", fault.name());
    let mut found = Findings::default();
    let cmd = |args: &[&str]| command(&store, &state, args);

    // The fault.
    let mut mount = None;
    let mut mcp_log = None;
    match fault {
        Fault::Truncated => {
            let len = fs::metadata(&file).expect("len").len();
            let keep = if len <= 1 { 0 } else { 1 + rng.below(len - 1) };
            fs::OpenOptions::new()
                .write(true)
                .open(&file)
                .and_then(|f| f.set_len(keep))
                .expect("truncate");
        }
        Fault::Empty => fs::write(&file, b"").expect("empty"),
        Fault::Random => {
            let len = fs::metadata(&file).expect("len").len().max(1);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            fs::write(&file, bytes).expect("random");
        }
        Fault::Flipped => {
            let mut bytes = fs::read(&file).expect("read");
            if bytes.is_empty() {
                bytes.push(0xff);
            } else {
                for _ in 0..1 + rng.below(3) {
                    let at = rng.below(bytes.len() as u64) as usize;
                    bytes[at] ^= 1 + rng.below(255) as u8;
                }
            }
            fs::write(&file, bytes).expect("flip");
        }
        Fault::Unreadable => {
            fs::set_permissions(&file, fs::Permissions::from_mode(0o000)).expect("chmod")
        }
        Fault::ReadOnly => mount = Some(read_only(&folder)?),
        Fault::DiskFull => mount = Some(full_disk(&folder, &scratch.path().join("full"))?),
        Fault::DeletedWhileOpen => {
            let log = scratch.path().join("mcp.stderr");
            let mut mcp = McpChild::start(&store, &state, log.clone());
            let before = mcp.tool("memory_search", json!({"query": "retry backoff"}));
            fs::remove_file(&file).expect("delete");
            let mut answers = vec![before];
            answers.push(mcp.tool("memory_search", json!({"query": "flaky upload"})));
            answers.push(mcp.tool(
                "memory_add",
                json!({"records": [{"id": "mcp-added", "text": "added through MCP after a file was deleted"}]}),
            ));
            answers.push(mcp.tool("memory_get", json!({"id": "n0-1"})));
            let (exited, stderr) = mcp.finish();
            if !exited || answers.iter().any(Option::is_none) {
                found.hangs.push(format!(
                    "{label}: the MCP server stopped answering: {answers:?}"
                ));
            }
            if stderr.contains("panicked at") {
                found.panics.push(format!("{label}: mcp: {stderr}"));
            }
            mcp_log = Some(answers);
        }
    }

    // What a user meets.
    let mut ran = Vec::new();
    let verify_first = run(cmd(&["verify", "--json"]), "verify", b"");
    ran.push(verify_first.clone());
    ran.push(run(
        cmd(&["search", "--mode", "bm25", "--json", "retry backoff"]),
        "search",
        b"",
    ));
    if kind == "vectors" {
        ran.push(run(
            cmd(&["search", "--json", "a flaky upload retried with backoff"]),
            "hybrid search",
            b"",
        ));
    }
    ran.push(run(cmd(&["get", "--json", "n1-3"]), "get", b""));
    ran.push(run(cmd(&["stats", "--json"]), "stats", b""));
    let new_note = scratch.path().join("new.json");
    fs::write(
        &new_note,
        json!({"id": "case-added", "text": "a note added to a damaged store"}).to_string(),
    )
    .expect("note");
    let mut add = cmd(&["add", "--embed", "later"]);
    add.arg(&new_note);
    let added = run(add, "add", b"");
    ran.push(added.clone());
    let hooks: Vec<Ran> = [
        ("stop", "Stop"),
        ("user-prompt-submit", "UserPromptSubmit"),
        ("session-start", "SessionStart"),
    ]
    .iter()
    .map(|(event, name)| {
        let input = hook_input(name, "s-case", &transcript);
        run(
            cmd(&["hook", event]),
            &format!("hook {event}"),
            input.as_bytes(),
        )
    })
    .collect();

    // Every command: no panic, no hang, a failure says what and where.
    for r in ran.iter().chain(&hooks) {
        if r.hung {
            found.hangs.push(format!("{label}: {} hung", r.what));
        } else if r.panicked() {
            found
                .panics
                .push(format!("{label}: {} panicked: {}", r.what, r.stderr));
        } else if !r.ok() && !r.what.starts_with("hook") && r.what != "verify" {
            // (verify's own naming is checked below)
            // The file, or for the file system's faults its folder; a
            // damaged block a merge carried into another segment of the
            // folder is named where it now is.
            let in_folder = r.stderr.contains(&folder.display().to_string());
            let names = r.stderr.contains(&name)
                || (!fault.damages_bytes() && in_folder)
                || (in_folder && r.stderr.contains("holds a record that does not decode"));
            if !r.stderr.starts_with("error:") || !names {
                found.untrue.push(format!(
                    "{label}: {} exited {:?} without naming {name}: {}",
                    r.what, r.code, r.stderr
                ));
            }
        }
    }
    for h in &hooks {
        if h.ok() {
            // A hook that says where it logged: the log is there.
            if let Some(at) = h.stderr.find("logged to ") {
                let rest = &h.stderr[at + "logged to ".len()..];
                let path: String = rest
                    .split([' ', ')', '\n'])
                    .next()
                    .unwrap_or_default()
                    .to_string();
                if mount.is_none() && !Path::new(&path).is_file() {
                    found.untrue.push(format!(
                        "{label}: {} says it logged to {path}, which does not exist: {}",
                        h.what, h.stderr
                    ));
                }
            }
        } else if !h.hung && !h.panicked() {
            found.untrue.push(format!(
                "{label}: {} exited {:?} (a hook exits 0): {}",
                h.what, h.code, h.stderr
            ));
        }
    }
    // verify names a damaged file it checks.
    let verify_checks = fault.damages_bytes()
        && matches!(
            kind,
            "segment"
                | "meta"
                | "vectors"
                | "archive-frames"
                | "archive-index"
                | "config"
                | "hooks-state"
                | "ingest-state"
        )
        || (fault.damages_bytes() && rel.ends_with(".json") && kind == "logs-and-reports");
    if verify_checks && !verify_first.hung && !verify_first.panicked() {
        let report = verify_first.json();
        let said = format!("{}{}", verify_first.stdout, verify_first.stderr);
        // A damaged `embedding-rules` is a warning (the vectors are made
        // again), as is a `config.toml` cut short; every other file verify
        // checks fails it.
        let may_pass = rel == "embedding-rules" || rel == "config.toml";
        // A config.toml damaged into another valid config (cut at a line
        // break, a digit flipped into another) cannot be told from one a
        // person wrote: counted apart, not as an untrue message.
        let still_valid_config = rel == "config.toml"
            && verify_first.ok()
            && !said.contains(&name)
            && ran.iter().any(|r| r.what == "stats" && r.ok());
        // A JSON state file (the hooks', ingest positions) carries no
        // checksum: bytes flipped inside a string that leave it valid JSON
        // of the same shape cannot be told from a state the hooks wrote.
        // So does tantivy's list of the files it manages: a name flipped into
        // another only means that file is never garbage-collected (verify
        // fails an unreadable list, not a short one).
        let still_valid_state = (matches!(kind, "hooks-state" | "ingest-state")
            || rel.ends_with(".managed.json"))
            && rel.ends_with(".json")
            && verify_first.ok()
            && fs::read(&file)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v.is_object());
        if still_valid_config {
            found
                .undetectable
                .push(format!("{label}: still a valid config"));
        } else if still_valid_state {
            found
                .undetectable
                .push(format!("{label}: still a valid state file"));
        } else if verify_first.ok() && !may_pass {
            found
                .untrue
                .push(format!("{label}: verify passed on a damaged file: {said}"));
        } else if !(said.contains(&name) || may_pass && verify_first.ok()) {
            found.untrue.push(format!(
                "{label}: verify failed without naming {name}: {report}{}",
                verify_first.stderr
            ));
        }
    }

    // The environment recovers: space freed, the mount gone, the mode back.
    drop(mount);
    if fault == Fault::Unreadable {
        let _ = fs::set_permissions(&file, fs::Permissions::from_mode(0o600));
    }
    let repaired = run(cmd(&["repair", "--json"]), "repair", b"");
    let verified = run(cmd(&["verify", "--json"]), "verify after repair", b"");
    for r in [&repaired, &verified] {
        if r.hung {
            found.hangs.push(format!("{label}: {} hung", r.what));
        } else if r.panicked() {
            found
                .panics
                .push(format!("{label}: {} panicked: {}", r.what, r.stderr));
        }
    }
    let repair_said = format!("{}{}", repaired.stdout, repaired.stderr);
    if !verified.ok() && repaired.ok() {
        found.untrue.push(format!(
            "{label}: repair exited 0 but verify still fails: {}{} / repair: {repair_said}",
            verified.stdout, verified.stderr
        ));
    }
    if !repaired.ok() && !repaired.hung && !repaired.panicked() {
        let report = repaired.json();
        let named = report["unrepairable"]
            .as_array()
            .is_some_and(|u| !u.is_empty())
            || repaired.stderr.starts_with("error:");
        if !named {
            found.untrue.push(format!(
                "{label}: repair failed without saying why: {repair_said}"
            ));
        }
    }

    // Every acknowledged record is there, unless its own file was damaged
    // and repair or verify named it.
    let own_file_damaged = (fault.damages_bytes() || fault == Fault::DeletedWhileOpen)
        && (kind == "archive-frames"
            || (kind == "segment" && (rel.ends_with(".store") || rel.ends_with(".del"))));
    let after = export(&store, &state);
    let mut acknowledged: BTreeSet<String> = template.records.keys().cloned().collect();
    if added.ok() {
        acknowledged.insert("case-added".into());
    }
    if mcp_log
        .as_ref()
        .and_then(|a| a.get(2).cloned().flatten())
        .is_some_and(|a| a["result"]["isError"] != true)
    {
        acknowledged.insert("mcp-added".into());
    }
    match after {
        None => found
            .lost
            .push(format!("{label}: export fails after repair: {repair_said}")),
        Some(after) => {
            for id in &acknowledged {
                if after.contains_key(id) {
                    continue;
                }
                let named =
                    repair_said.contains(id.as_str()) || verify_first.stdout.contains(id.as_str());
                let frame_named = kind == "archive-frames" && repair_said.contains(&name);
                if !(own_file_damaged && (named || frame_named)) {
                    found.lost.push(format!(
                        "{label}: record {id} is gone{}: {repair_said}",
                        if own_file_damaged {
                            " and not named"
                        } else {
                            ""
                        }
                    ));
                }
            }
            for (id, (_, source)) in &template.records {
                if let Some((_, now)) = after.get(id) {
                    if now != source && !own_file_damaged {
                        found.lost.push(format!("{label}: record {id} changed"));
                    }
                }
            }
        }
    }
    Some(found)
}

/// Runs `cases`, prints the counts, and fails on any finding.
fn campaign(cases: &[Case]) {
    if !nix_root() {
        eprintln!("faults: SKIPPED: the campaign runs as root (mounts, capabilities)");
        return;
    }
    let template = template();
    let mut totals = Findings::default();
    let (mut ran, mut skipped) = (0usize, Vec::new());
    let mut pairs = BTreeSet::new();
    for (n, &(kind, fault, seed, only)) in cases.iter().enumerate() {
        if n > 0 && n % 50 == 0 {
            eprintln!("faults: {n} of {} cases run", cases.len());
        }
        match case(&template, (kind, fault, seed, only)) {
            None => skipped.push(format!("{kind} × {}", fault.name())),
            Some(found) => {
                ran += 1;
                pairs.insert((kind, fault));
                if !found.is_empty() {
                    eprintln!("faults: {kind} × {} seed {seed}: {found:#?}", fault.name());
                }
                totals.panics.extend(found.panics);
                totals.hangs.extend(found.hangs);
                totals.untrue.extend(found.untrue);
                totals.lost.extend(found.lost);
                totals.undetectable.extend(found.undetectable);
            }
        }
    }
    let summary = json!({
        "cases": ran,
        "pairs": pairs.len(),
        "skipped": skipped,
        "panics": totals.panics.len(),
        "hangs": totals.hangs.len(),
        "untrue": totals.untrue.len(),
        "lost": totals.lost.len(),
        "undetectable": totals.undetectable.len(),
    });
    eprintln!("faults: {summary}");
    if let Some(path) = std::env::var_os("KDB_FAULT_REPORT") {
        let _ = fs::write(path, serde_json::to_vec_pretty(&json!({"summary": summary,
            "panics": totals.panics, "hangs": totals.hangs, "untrue": totals.untrue, "lost": totals.lost,
            "undetectable": totals.undetectable})).unwrap_or_default());
    }
    assert!(totals.is_empty(), "{summary}");
}

fn nix_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn base_seed() -> u64 {
    std::env::var("KDB_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(51)
}

fn pair_seed(base: u64, kind: &str, fault: Fault) -> u64 {
    let mut h = base ^ 0xcbf2_9ce4_8422_2325;
    for b in kind.bytes().chain(fault.name().bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x1000_0000_01b3);
    }
    h
}

/// Every (kind × fault) pair once: what CI runs. `KDB_FAULT_ONLY="kind
/// fault seed"` runs that one case instead (to look into a finding).
#[test]
fn every_kind_of_file_under_every_fault() {
    if let Ok(only) = std::env::var("KDB_FAULT_ONLY") {
        let line: &'static str = only.leak();
        let case = parse_case(line).expect("KDB_FAULT_ONLY=\"kind fault seed [file]\"");
        campaign(&[case]);
        return;
    }
    let base = base_seed();
    let mut cases: Vec<Case> = KINDS
        .iter()
        .flat_map(|(kind, _)| {
            FAULTS
                .iter()
                .map(move |f| (*kind, *f, pair_seed(base, kind, *f), None))
        })
        .collect();
    cases.extend(regressions());
    campaign(&cases);
}

/// Cases that once failed (`tests/faults.regressions`: `kind fault seed
/// [end of the file's path]`).
fn regressions() -> Vec<Case> {
    include_str!("faults.regressions")
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(|l| parse_case(l).unwrap_or_else(|| panic!("not a case: {l}")))
        .collect()
}

/// `kind fault seed [end of the file's path]`.
fn parse_case(line: &'static str) -> Option<Case> {
    let mut parts = line.split_whitespace();
    let kind = parts.next()?;
    let kind = KINDS.iter().find(|(k, _)| *k == kind)?.0;
    let fault = Fault::parse(parts.next()?)?;
    let seed = parts.next()?.parse().ok()?;
    Some((kind, fault, seed, parts.next()))
}

/// `KDB_FAULT_CASES=N` random cases (kind, fault and file by seed), by hand.
#[test]
#[ignore = "long: KDB_FAULT_CASES=1000 cargo nextest run --test faults --run-ignored only"]
fn random_cases_by_hand() {
    let n: u64 = std::env::var("KDB_FAULT_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let mut rng = Rng::new(base_seed() ^ 0x5eed);
    let cases: Vec<Case> = (0..n)
        .map(|_| {
            let kind = KINDS[rng.below(KINDS.len() as u64) as usize].0;
            let fault = FAULTS[rng.below(FAULTS.len() as u64) as usize];
            (kind, fault, rng.next(), None)
        })
        .collect();
    campaign(&cases);
}
