//! The fault and load suite of sync: N stores push and pull at once through
//! a real Postgres 18 with pgvector (a server of this test's own, from the
//! test server's binaries, on loopback), while
//! - Postgres is killed with SIGKILL (the postmaster and every backend, as a
//!   crash would) and restarted, in the middle of pushes and of pulls;
//! - a TCP proxy on loopback between the stores and the server cuts
//!   connections at random (a seeded byte budget per connection);
//! - sync processes are killed with SIGKILL at random moments.
//!
//! Then, with the faults stopped, the stores sync until nothing moves, and:
//! every store holds every shared record exactly once, with the text and
//! the vector it was written with; nothing unshared is on the server (nor in
//! another store); and a push or a pull killed in the middle re-sends, when
//! resumed, only what the server (or the store) lacks, plus at most one
//! batch.
//!
//! In CI it runs small (4 stores, 250 shared records each, 3 server kills,
//! a fixed seed). The sizes come from the environment, for a larger run by
//! hand (`scripts/measure-sync-faults.sh`, docs/sync.md):
//! `KDB_FAULT_STORES`, `KDB_FAULT_RECORDS` (shared records per store),
//! `KDB_FAULT_PG_KILLS`, `KDB_FAULT_BATCH`, `KDB_FAULT_SEED`,
//! `KDB_FAULT_REPORT` (a file for the JSON summary), and `KDB_FAULT_BIN` (the
//! binary the syncs run, e.g. a release build; setup and checks use this
//! build's).

mod common;
#[path = "common/pg.rs"]
mod pg;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::TestStore;
use serde_json::{json, Value};

/// A seeded xorshift64* generator: the same faults for the same seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A Postgres of this test's own (initdb'd in a temporary folder), which it
/// may kill. As root it runs as `nobody`, as `scripts/pg-test-server.sh`
/// does.
struct Server {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    as_nobody: bool,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    fn new(bin: &Path) -> Server {
        let as_nobody = Command::new("id")
            .arg("-u")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
            .unwrap_or(false);
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        if as_nobody {
            let ok = Command::new("chown")
                .arg("nobody")
                .arg(&data)
                .status()
                .unwrap();
            assert!(ok.success());
        }
        let mut server = Server {
            bin: bin.to_path_buf(),
            dir,
            port: free_port(),
            child: None,
            as_nobody,
        };
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-instructions",
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.start();
        server
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_nobody {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "nobody", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Starts the server and waits until it takes connections (crash
    /// recovery included).
    fn start(&mut self) {
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(self.data())
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=on"])
            .args(["-c", "max_connections=200"])
            .arg("-k")
            .arg(self.data())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let started = Instant::now();
        while postgres::Client::connect(&self.url("postgres"), postgres::NoTls).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "Postgres did not come back: {}",
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILLs the postmaster and every backend at once, as a crash would,
    /// and waits until none is left.
    fn kill9(&mut self) {
        let pid_file = std::fs::read_to_string(self.data().join("postmaster.pid")).unwrap();
        let postmaster: i32 = pid_file.lines().next().unwrap().trim().parse().unwrap();
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            if parent_of(pid) == Some(postmaster) {
                pids.push(pid);
            }
        }
        for pid in &pids {
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        let started = Instant::now();
        while pids.iter().any(|pid| alive(*pid)) {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "backends linger"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Stale now; a process that took the dead postmaster's number must
        // not make the next start believe it still runs.
        let _ = std::fs::remove_file(self.data().join("postmaster.pid"));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill9();
        }
    }
}

/// The parent of a process, from `/proc/PID/stat`.
fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// Whether a process exists and is not a zombie.
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 2..].chars().next())
            .is_some_and(|state| state != 'Z'),
        Err(_) => false,
    }
}

/// A TCP proxy on loopback in front of the server that cuts connections at
/// random: with `chance`, a connection gets a budget of bytes (uniform below
/// `budget`), and both its sockets are shut when it is spent.
struct Proxy {
    port: u16,
    chaos: Arc<AtomicBool>,
    cuts: Arc<AtomicU64>,
}

impl Proxy {
    fn start(upstream: u16, seed: u64, chance: f64, budget: u64) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let chaos = Arc::new(AtomicBool::new(true));
        let cuts = Arc::new(AtomicU64::new(0));
        let rng = Arc::new(Mutex::new(Rng::new(seed)));
        let (chaos2, cuts2) = (chaos.clone(), cuts.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let left = {
                    let mut rng = rng.lock().unwrap();
                    if chaos2.load(Ordering::SeqCst) && rng.chance(chance) {
                        rng.below(budget) as i64
                    } else {
                        i64::MAX
                    }
                };
                let left = Arc::new(AtomicI64::new(left));
                let ends = [client.try_clone().unwrap(), server.try_clone().unwrap()];
                let ends = Arc::new(ends);
                for (from, to) in [
                    (client.try_clone(), server.try_clone()),
                    (Ok(server), Ok(client)),
                ] {
                    let (Ok(from), Ok(to)) = (from, to) else {
                        continue;
                    };
                    let (left, ends, cuts) = (left.clone(), ends.clone(), cuts2.clone());
                    std::thread::spawn(move || pump(from, to, &left, &ends, &cuts));
                }
            }
        });
        Proxy { port, chaos, cuts }
    }
}

/// Copies bytes one way until either side closes or the budget is spent
/// (then both sockets are shut: the connection is cut).
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    left: &AtomicI64,
    ends: &[TcpStream; 2],
    cuts: &AtomicU64,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if left.fetch_sub(n as i64, Ordering::SeqCst) < n as i64 {
            if left.swap(i64::MIN / 2, Ordering::SeqCst) > i64::MIN / 2 {
                cuts.fetch_add(1, Ordering::SeqCst);
            }
            break;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    for end in ends {
        let _ = end.shutdown(Shutdown::Both);
    }
}

/// One store of the run, with the shared records it wrote.
struct Machine {
    store: TestStore,
    origin: String,
    /// Its shared records: id → (text, vector as base64 f32le).
    shared: BTreeMap<String, (String, String)>,
    /// Its unshared records' ids.
    private: Vec<String>,
}

/// `n` shared records (namespace `team`) and `private` unshared ones, as
/// export lines with vectors (random unit vectors: what matters is that
/// every store ends with the very vector written).
fn make_machine(
    i: usize,
    n: usize,
    private: usize,
    rng: &mut Rng,
    url: &str,
    batch: u64,
) -> Machine {
    let origin = format!("m{i}@faults");
    let store = TestStore::new();
    store.set_config(&[
        ("url", &format!("\"{url}\"")),
        ("origin", &format!("\"{origin}\"")),
        ("share", "[\"team\"]"),
        ("batch", &batch.to_string()),
    ]);
    let mut shared = BTreeMap::new();
    let mut private_ids = Vec::new();
    let mut lines = Vec::new();
    for k in 0..n + private {
        let is_private = k >= n;
        let id = if is_private {
            format!("m{i}-private-{k}")
        } else {
            format!("m{i}-{k}")
        };
        let text = if is_private {
            format!("PRIVATE-{i}-{k}: notes this machine keeps to itself")
        } else {
            format!(
                "machine {i} record {k}: the build cache of step {} depends on the lockfile",
                rng.below(1000)
            )
        };
        let namespace = if is_private { "private" } else { "team" };
        let (line, vector) = export_line(&id, namespace, &text, rng);
        if is_private {
            private_ids.push(id);
        } else {
            shared.insert(id, (text, vector));
        }
        lines.push(line.to_string());
    }
    let file = store.write("records.jsonl", lines.join("\n").as_bytes());
    store.cmd().arg("add").arg(file).assert().success();
    Machine {
        store,
        origin,
        shared,
        private: private_ids,
    }
}

/// An export line (what `add` restores with its vector) and its vector.
fn export_line(id: &str, namespace: &str, text: &str, rng: &mut Rng) -> (Value, String) {
    use knowledge_db::embed::text::{embedding_text, text_hash};
    let record = knowledge_db::record::parse_record(
        json!({"id": id, "namespace": namespace, "text": text}),
        &knowledge_db::error::Origin::file("faults"),
        &knowledge_db::record::ParseOptions {
            added_at: "2026-12-01T10:00:00Z".into(),
            ..Default::default()
        },
    )
    .unwrap();
    let mut vector: Vec<f32> = (0..knowledge_db::embed::DIM)
        .map(|_| (rng.below(20_001) as f32 - 10_000.0) / 10_000.0)
        .collect();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
    vector.iter_mut().for_each(|x| *x /= norm);
    let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut line = knowledge_db::export::line(&record);
    line["vector"] = json!({
        "model": knowledge_db::embed::MODEL_ID,
        "text_hash": format!("{:016x}", text_hash(&embedding_text(&record))),
        "f32le": encoded,
    });
    (line, encoded)
}

/// A running sync.
struct Running {
    child: Child,
    started: Instant,
    kill_after: Option<Duration>,
}

/// The binary that syncs: this build's, or `KDB_FAULT_BIN` (a release
/// build, for a larger run by hand).
fn sync_binary() -> PathBuf {
    std::env::var_os("KDB_FAULT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| assert_cmd::cargo::cargo_bin("knowledge-db"))
}

fn spawn_sync(store: &TestStore, args: &[&str]) -> Child {
    Command::new(sync_binary())
        .arg("--store")
        .arg(store.path())
        .arg("sync")
        .args(args)
        .arg("--json")
        .env("KNOWLEDGE_DB_UPKEEP", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// What one phase of faults did.
#[derive(Default, Debug, Clone, serde::Serialize)]
struct Faults {
    pg_kills_mid_push: u64,
    pg_kills_mid_pull: u64,
    pg_kills_mixed: u64,
    sync_kills: u64,
    failed_syncs: u64,
    syncs: u64,
}

/// Which moment a phase kills the server at.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Push,
    Pull,
    Mixed,
}

struct Run {
    server: Server,
    proxy: Proxy,
    machines: Vec<Machine>,
    rng: Rng,
    faults: Faults,
    admin: Option<postgres::Client>,
    db: String,
}

impl Run {
    /// A count on the server, through a direct connection (none on failure:
    /// the server is down, or coming back).
    fn count(&mut self, sql: &str) -> Option<i64> {
        if self.admin.is_none() {
            self.admin =
                postgres::Client::connect(&self.server.url(&self.db), postgres::NoTls).ok();
        }
        let result = self.admin.as_mut()?.query_one(sql, &[]);
        match result {
            Ok(row) => Some(row.get(0)),
            Err(_) => {
                self.admin = None;
                None
            }
        }
    }

    fn cursor(&self, i: usize) -> i64 {
        std::fs::read(self.machines[i].store.path().join("sync/state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["cursor"].as_i64())
            .unwrap_or(0)
    }

    /// Runs `sync ARGS` on every store at once until each has succeeded
    /// once, with `pg_kills` server kills at moments `phase` chooses, and
    /// (when `chaos`) SIGKILLs of sync processes at random.
    fn phase(&mut self, phase: Phase, args: &[&str], pg_kills: u64, chaos: bool) {
        let n = self.machines.len();
        let mut pending = vec![true; n];
        let mut running: Vec<Option<Running>> = (0..n).map(|_| None).collect();
        let started = Instant::now();
        let start_rows = self.count("SELECT count(*) FROM kdb_records").unwrap_or(0);
        // Each kill waits for progress since the one before: rows merged, a
        // cursor moved, or a random while.
        let mut kill_cursors: Vec<i64> = (0..n).map(|i| self.cursor(i)).collect();
        let mut kills_left = pg_kills;
        let mut last_kill_rows = start_rows;
        let mut next_mixed = Instant::now() + Duration::from_millis(300 + self.rng.below(2000));
        while pending.iter().any(|p| *p) {
            assert!(
                started.elapsed() < Duration::from_secs(3600),
                "a phase ran for an hour"
            );
            for i in 0..n {
                if pending[i] && running[i].is_none() {
                    let kill_after = (chaos && self.rng.chance(0.3))
                        .then(|| Duration::from_millis(50 + self.rng.below(2500)));
                    running[i] = Some(Running {
                        child: spawn_sync(&self.machines[i].store, args),
                        started: Instant::now(),
                        kill_after,
                    });
                    self.faults.syncs += 1;
                }
                let Some(run) = running[i].as_mut() else {
                    continue;
                };
                let exited = run.child.try_wait().unwrap();
                let overdue = run
                    .kill_after
                    .is_some_and(|after| run.started.elapsed() >= after);
                if let Some(status) = exited {
                    let run = running[i].take().unwrap();
                    let out = run.child.wait_with_output().unwrap();
                    if status.success() {
                        pending[i] = false;
                    } else {
                        self.faults.failed_syncs += 1;
                        let err = String::from_utf8_lossy(&out.stderr);
                        assert!(
                            !err.contains("panicked"),
                            "store {i}'s sync panicked: {err}"
                        );
                    }
                } else if overdue {
                    let mut run = running[i].take().unwrap();
                    let _ = run.child.kill();
                    let _ = run.child.wait();
                    self.faults.sync_kills += 1;
                }
            }
            let busy = running.iter().any(Option::is_some);
            if kills_left > 0 && busy {
                let kill = match phase {
                    // Mid-push: the server's rows have moved since the last kill.
                    Phase::Push => self
                        .count("SELECT count(*) FROM kdb_records")
                        .is_some_and(|rows| rows > last_kill_rows),
                    // Mid-pull: a store still pulling has moved its cursor.
                    Phase::Pull => (0..n).any(|i| {
                        running[i].is_some() && pending[i] && self.cursor(i) > kill_cursors[i]
                    }),
                    Phase::Mixed => Instant::now() >= next_mixed,
                };
                if kill {
                    self.server.kill9();
                    match phase {
                        Phase::Push => self.faults.pg_kills_mid_push += 1,
                        Phase::Pull => self.faults.pg_kills_mid_pull += 1,
                        Phase::Mixed => self.faults.pg_kills_mixed += 1,
                    }
                    self.admin = None;
                    self.server.start();
                    last_kill_rows = self
                        .count("SELECT count(*) FROM kdb_records")
                        .unwrap_or(last_kill_rows);
                    kill_cursors = (0..n).map(|i| self.cursor(i)).collect();
                    next_mixed = Instant::now() + Duration::from_millis(300 + self.rng.below(2000));
                    kills_left -= 1;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Full syncs on every store, no faults, until a round moves nothing.
    fn converge(&mut self) -> usize {
        for round in 1..=20 {
            let children: Vec<Child> = self
                .machines
                .iter()
                .map(|m| spawn_sync(&m.store, &[]))
                .collect();
            let mut moved = false;
            for (i, child) in children.into_iter().enumerate() {
                let out = child.wait_with_output().unwrap();
                if !out.status.success() {
                    panic!(
                        "store {i} failed without faults: {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
                let r: Value = serde_json::from_slice(&out.stdout).unwrap();
                let sum: u64 = [
                    "pushed",
                    "pushed_tombstones",
                    "pulled",
                    "pulled_deletes",
                    "push_conflicts_lost",
                ]
                .iter()
                .map(|k| r[k].as_u64().unwrap_or(0))
                .sum();
                moved |= sum > 0;
            }
            if !moved {
                return round;
            }
        }
        panic!("twenty rounds without faults did not converge");
    }
}

/// Every record a store holds, from its export: id → list of (namespace,
/// text, vector) (a list, to count duplicates).
fn held(store: &TestStore) -> BTreeMap<String, Vec<(String, String, Option<String>)>> {
    let out = store.cmd().arg("export").output().unwrap();
    assert!(out.status.success());
    let mut map: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        map.entry(v["id"].as_str().unwrap().to_string())
            .or_default()
            .push((
                v["namespace"].as_str().unwrap_or_default().to_string(),
                v["source"]["text"].as_str().unwrap_or_default().to_string(),
                v["vector"]["f32le"].as_str().map(str::to_string),
            ));
    }
    map
}

#[test]
fn stores_converge_through_server_kills_cut_connections_and_killed_syncs() {
    let Ok(bin) = std::env::var("KDB_PG_BIN") else {
        eprintln!(
            "skipped: KDB_PG_BIN is not set (run `eval \"$(scripts/pg-test-server.sh start)\"`)"
        );
        return;
    };
    let stores = env_or("KDB_FAULT_STORES", 4) as usize;
    let records = env_or("KDB_FAULT_RECORDS", 250) as usize;
    let pg_kills = env_or("KDB_FAULT_PG_KILLS", 3);
    let batch = env_or("KDB_FAULT_BATCH", 40);
    let seed = env_or("KDB_FAULT_SEED", 0x005e_ed54);
    let private = 10;
    let clock = Instant::now();

    let server = Server::new(Path::new(&bin));
    let db = "kdb_faults";
    postgres::Client::connect(&server.url("postgres"), postgres::NoTls)
        .unwrap()
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .unwrap();
    // A batch of `batch` records with vectors is about 2.5 KB a record: a
    // budget below a few batches cuts pushes and pulls in their middle.
    let proxy = Proxy::start(server.port, seed ^ 0xc0ffee, 0.3, batch * 2500 * 4);
    let url = format!("postgres://postgres@127.0.0.1:{}/{db}", proxy.port);
    let mut rng = Rng::new(seed);
    let machines: Vec<Machine> = (0..stores)
        .map(|i| make_machine(i, records, private, &mut rng, &url, batch))
        .collect();
    let setup_seconds = clock.elapsed().as_secs_f64();
    let mut run = Run {
        server,
        proxy,
        machines,
        rng,
        faults: Faults::default(),
        admin: None,
        db: db.to_string(),
    };

    // The faults: pushes, then pulls, then both with new records and deletes.
    let faulted = Instant::now();
    let per_phase = pg_kills.div_ceil(3);
    run.phase(Phase::Push, &["--no-pull"], per_phase, true);
    run.phase(Phase::Pull, &["--no-push"], per_phase, true);
    let mut deleted = BTreeSet::new();
    for i in 0..stores {
        let m = &mut run.machines[i];
        let extra = (records / 10).max(3);
        let mut lines = Vec::new();
        for k in 0..extra {
            let id = format!("m{i}-late-{k}");
            let text = format!("machine {i} late record {k}: written between syncs");
            let (line, vector) = export_line(&id, "team", &text, &mut run.rng);
            m.shared.insert(id, (text, vector));
            lines.push(line.to_string());
        }
        let file = m.store.write("late.jsonl", lines.join("\n").as_bytes());
        m.store.cmd().arg("add").arg(file).assert().success();
        let gone = format!("m{i}-0");
        m.store.cmd().args(["delete", &gone]).assert().success();
        m.shared.remove(&gone);
        deleted.insert(gone);
    }
    run.phase(
        Phase::Mixed,
        &[],
        pg_kills.saturating_sub(2 * per_phase),
        true,
    );
    run.proxy.chaos.store(false, Ordering::SeqCst);
    let rounds = run.converge();
    let converge_seconds = faulted.elapsed().as_secs_f64();

    // Every store holds every shared record once, as written.
    let expected: BTreeMap<String, (String, String)> =
        run.machines.iter().flat_map(|m| m.shared.clone()).collect();
    let mut lost = 0usize;
    let mut duplicates = 0usize;
    let mut wrong = 0usize;
    let mut leaked = 0usize;
    for (i, m) in run.machines.iter().enumerate() {
        let held = held(&m.store);
        for (id, (text, vector)) in &expected {
            match held.get(id).map(Vec::as_slice) {
                None => lost += 1,
                Some([(_, t, v)]) => {
                    if t != text || v.as_deref() != Some(vector.as_str()) {
                        wrong += 1;
                    }
                }
                Some(_) => duplicates += 1,
            }
        }
        for id in &deleted {
            assert!(!held.contains_key(id), "store {i} still holds deleted {id}");
        }
        for (j, other) in run.machines.iter().enumerate() {
            for id in &other.private {
                if (i == j) != held.contains_key(id) {
                    leaked += 1;
                }
            }
        }
        let team = held.iter().filter(|(_, v)| v[0].0 == "team").count();
        assert_eq!(team, expected.len(), "store {i}: team records");
        let stats = m.store.json(&["stats"]);
        assert_eq!(
            stats["records"].as_u64(),
            Some((expected.len() + private) as u64),
            "store {i}: one index entry per record: {stats}"
        );
    }
    let live = run
        .count("SELECT count(*) FROM kdb_records WHERE NOT deleted")
        .unwrap();
    let unshared_on_server = run
        .count(
            "SELECT count(*) FROM kdb_records WHERE namespace <> 'team' \
             OR record::text LIKE '%PRIVATE-%'",
        )
        .unwrap();

    // A push killed in its middle re-sends, resumed, only what the server lacks.
    let m0 = &run.machines[0];
    let mut lines = Vec::new();
    let resume_n = (batch * 8) as usize;
    for k in 0..resume_n {
        let id = format!("m0-resume-{k}");
        let text = format!("machine 0 resume record {k}");
        let (line, _) = export_line(&id, "team", &text, &mut run.rng);
        lines.push(line.to_string());
    }
    let file = m0.store.write("resume.jsonl", lines.join("\n").as_bytes());
    m0.store.cmd().arg("add").arg(file).assert().success();
    let origin = m0.origin.clone();
    let taken_sql = format!(
        "SELECT count(*) FROM kdb_records WHERE origin = '{origin}' AND id LIKE 'm0-resume-%'"
    );
    let mut child = spawn_sync(&run.machines[0].store, &["--no-pull"]);
    let started = Instant::now();
    while run.count(&taken_sql).unwrap_or(0) == 0 && child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(300));
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let taken = run.count(&taken_sql).unwrap() as u64;
    let resumed = run.machines[0].store.json(&["sync", "--no-pull"]);
    let push_sent = resumed["push_sent"].as_u64().unwrap();
    assert_eq!(
        resumed["pushed"].as_u64().unwrap(),
        resume_n as u64 - taken,
        "{resumed}"
    );
    assert!(
        push_sent <= resume_n as u64 - taken + batch,
        "a resumed push re-sent more than it lacked: {taken} of {resume_n} were taken, \
         {push_sent} sent: {resumed}"
    );

    // A pull killed in its middle fetches, resumed, only what it lacks.
    let puller = 1.min(stores - 1);
    let before = run.cursor(puller);
    let mut child = spawn_sync(&run.machines[puller].store, &["--no-push"]);
    let started = Instant::now();
    while run.cursor(puller) == before && child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(300));
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let cursor = run.cursor(puller);
    let lacking = run
        .count(&format!(
            "SELECT count(*) FROM kdb_records WHERE seq > {cursor}"
        ))
        .unwrap() as u64;
    let resumed_pull = run.machines[puller].store.json(&["sync", "--no-push"]);
    let received = resumed_pull["pull_received"].as_u64().unwrap();
    assert!(
        received <= lacking + batch,
        "a resumed pull fetched {received} rows; {lacking} were past its cursor: {resumed_pull}"
    );

    let summary = json!({
        "stores": stores,
        "shared_records_per_store": records,
        "shared_records": expected.len(),
        "batch": batch,
        "seed": seed,
        "faults": run.faults,
        "proxy_cuts": run.proxy.cuts.load(Ordering::SeqCst),
        "setup_seconds": setup_seconds,
        "seconds_to_converge": converge_seconds,
        "rounds_without_faults_to_converge": rounds,
        "lost": lost,
        "duplicates": duplicates,
        "wrong_text_or_vector": wrong,
        "unshared_leaked_to_stores": leaked,
        "unshared_on_server": unshared_on_server,
        "server_live_records": live,
        "resumed_push": {"records": resume_n, "taken_before_kill": taken, "sent": push_sent},
        "resumed_pull": {"lacking": lacking, "received": received},
    });
    eprintln!("{summary}");
    if let Ok(path) = std::env::var("KDB_FAULT_REPORT") {
        std::fs::write(path, serde_json::to_vec_pretty(&summary).unwrap()).unwrap();
    }
    assert_eq!((lost, duplicates, wrong, leaked), (0, 0, 0, 0), "{summary}");
    assert_eq!(unshared_on_server, 0, "{summary}");
    assert_eq!(live as usize, expected.len(), "{summary}");
    let after_resume = run
        .count("SELECT count(*) FROM kdb_records WHERE NOT deleted")
        .unwrap();
    assert_eq!(after_resume as usize, expected.len() + resume_n);
    let f = &run.faults;
    assert!(
        f.pg_kills_mid_push >= 1 && f.pg_kills_mid_pull >= 1,
        "the server was not killed mid-push and mid-pull: {summary}"
    );
    assert!(
        f.sync_kills >= 1 && run.proxy.cuts.load(Ordering::SeqCst) >= 1,
        "{summary}"
    );
}
