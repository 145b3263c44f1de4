//! Hostile files given as transcripts, records and markdown: a FIFO, a link
//! to `/dev/zero`, a sparse file of 2 GB, a gzip bomb, folders whose symlinks
//! form loops, a markdown file of 1 GB, invalid UTF-8 inside a message. Each
//! is made here (never committed). Every reader must refuse or bound it with
//! a message naming the file and the limit, in bounded time, and leave the
//! store as it was; the hooks must read a grown transcript only from their
//! offset. (`HOSTILE_BIN=<another build>` runs these against it.)

mod common;
mod hostile_support;

use std::time::Duration;

use common::TestStore;
use hostile_support::{dev_zero, fifo, gzip_bomb, kdb, run, sparse, symlink_loops, Ran};
use serde_json::{json, Value};

/// Long enough for a debug build on a loaded machine; a reader that blocks
/// or reads gigabytes goes past it.
const DEADLINE: Duration = Duration::from_secs(60);

fn ingest(store: &TestStore, path: &std::path::Path) -> Ran {
    let mut cmd = kdb(store);
    cmd.args(["ingest", "--embed", "later"]).arg(path);
    run(cmd, b"", DEADLINE)
}

fn add(store: &TestStore, path: &std::path::Path) -> Ran {
    let mut cmd = kdb(store);
    cmd.args(["add", "--embed", "later"]).arg(path);
    run(cmd, b"", DEADLINE)
}

fn hook(store: &TestStore, event: &str, session: &str, transcript: &std::path::Path) -> Ran {
    let mut cmd = kdb(store);
    cmd.args(["hook", event, "--json"]);
    let input =
        json!({"session_id": session, "transcript_path": transcript, "cwd": "/nonexistent"});
    run(cmd, input.to_string().as_bytes(), DEADLINE)
}

fn hooks_log(store: &TestStore) -> String {
    std::fs::read_to_string(store.path().join("hooks/hooks.log")).unwrap_or_default()
}

/// The refusal every reader gives, in time and naming the file.
fn assert_refused(ran: &Ran, what: &str, file: &std::path::Path) {
    assert!(!ran.timed_out, "{what}: still running after {DEADLINE:?}");
    let stderr = ran.stderr();
    assert_eq!(ran.code(), Some(1), "{what}: {stderr}");
    assert!(
        stderr.contains(&file.display().to_string()),
        "{what}: the file is not named: {stderr}"
    );
}

#[test]
fn a_fifo_or_dev_zero_is_refused_by_every_reader_without_blocking() {
    let store = TestStore::new();
    let dir = store.dir.path();
    let pipe = fifo(&dir.join("session.jsonl"));
    let zero = dev_zero(&dir.join("zero.jsonl"));
    let before = store.snapshot();
    for (file, kind) in [
        (&pipe, "a FIFO (named pipe), not a regular file"),
        (&zero, "a character device, not a regular file"),
    ] {
        let ran = ingest(&store, file);
        assert_refused(&ran, "ingest", file);
        assert!(ran.stderr().contains(kind), "{}", ran.stderr());
        let ran = add(&store, file);
        assert_refused(&ran, "add", file);
        assert!(ran.stderr().contains(kind), "{}", ran.stderr());
        // The hooks never fail the agent's tool call: they log and exit 0.
        for event in ["post-tool-use", "pre-compact"] {
            let ran = hook(&store, event, "s-fifo", file);
            assert!(!ran.timed_out, "hook {event} blocked on {}", file.display());
            assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
            assert!(ran.stderr().contains(kind), "{event}: {}", ran.stderr());
        }
    }
    assert!(hooks_log(&store).contains("a FIFO (named pipe)"));
    // A folder holding them: named, not followed into.
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).expect("mkdir");
    fifo(&folder.join("inner.jsonl"));
    let ran = ingest(&store, &folder);
    assert_refused(&ran, "ingest of a folder", &folder.join("inner.jsonl"));
    let mut after = store.snapshot();
    // The hooks' log and state folder are the only new files.
    after.retain(|path, _| !path.starts_with("hooks"));
    assert_eq!(before, after, "the store changed");
}

#[test]
fn a_transcript_replaced_or_grown_after_an_ingest_is_read_within_limits() {
    let store = TestStore::new();
    let line = json!({"type":"user","sessionId":"s-grow","uuid":"u1",
        "message":{"role":"user","content":"first prompt"}});
    let file = store.write("s-grow.jsonl", format!("{line}\n").as_bytes());
    let ran = ingest(&store, &file);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    // Grown by 2 GB of zeros (sparse): the new part is refused from its size.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .and_then(|f| f.set_len(f.metadata()?.len() + (2 << 30)))
        .expect("grow");
    let ran = ingest(&store, &file);
    assert_refused(&ran, "ingest of the grown part", &file);
    assert!(
        ran.stderr()
            .contains("the part added since the last read is 2.0 GiB"),
        "{}",
        ran.stderr()
    );
    // Replaced by a FIFO: refused, not waited on.
    std::fs::remove_file(&file).expect("remove");
    fifo(&file);
    let ran = ingest(&store, &file);
    assert_refused(&ran, "ingest of a FIFO with a saved position", &file);
    assert!(
        ran.stderr().contains("a FIFO (named pipe)"),
        "{}",
        ran.stderr()
    );
}

#[test]
fn a_sparse_2_gb_transcript_is_refused_from_its_size() {
    let store = TestStore::new();
    let file = sparse(&store.dir.path().join("sparse.jsonl"), 2 << 30);
    let ran = ingest(&store, &file);
    assert_refused(&ran, "ingest", &file);
    let stderr = ran.stderr();
    assert!(
        stderr.contains("the file is 2.0 GiB, over the limit of 256.0 MiB")
            && stderr.contains("limits.max_file_bytes"),
        "{stderr}"
    );
    // As a file of records (JSON lines, read line by line): its one line is
    // over the record limit, read past without being kept.
    let records = sparse(&store.dir.path().join("sparse-records.jsonl"), 64 << 20);
    let ran = add(&store, &records);
    assert_refused(&ran, "add", &records);
    assert!(
        ran.stderr()
            .contains("sparse-records.jsonl:1: record is 64.0 MiB, over the limit of 8.0 MiB"),
        "{}",
        ran.stderr()
    );
    // As one JSON document: refused from its size too.
    let document = sparse(&store.dir.path().join("sparse.json"), 2 << 30);
    let ran = add(&store, &document);
    assert_refused(&ran, "add", &document);
    assert!(
        ran.stderr().contains("the file is 2.0 GiB"),
        "{}",
        ran.stderr()
    );
}

#[test]
fn the_hook_reads_a_grown_transcript_from_its_offset_in_bounded_steps() {
    let store = TestStore::new();
    // One step of 1 MiB per call, so the test stays small.
    let config = store.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).expect("config");
    text.push_str("\n[hooks]\nmax_read_bytes = 1048576\n");
    std::fs::write(&config, text).expect("config");
    let file = store.dir.path().join("grown.jsonl");
    // 3.5 MiB of zeros (one endless line), then a real message.
    sparse(&file, 3 * (1 << 20) + (1 << 19));
    let message = json!({"type":"user","sessionId":"s-sparse","uuid":"u1",
        "message":{"role":"user","content":"after the zeros: fix the parser"}});
    let mut bytes = std::fs::read(&file).expect("read");
    bytes.push(b'\n');
    bytes.extend_from_slice(format!("{message}\n").as_bytes());
    std::fs::write(&file, &bytes).expect("write");
    let mut offsets = Vec::new();
    let mut messages = 0;
    for _ in 0..6 {
        let ran = hook(&store, "post-tool-use", "s-sparse", &file);
        assert!(!ran.timed_out);
        let report: Value = serde_json::from_str(&ran.stdout())
            .unwrap_or_else(|e| panic!("{e}: {} {}", ran.stdout(), ran.stderr()));
        let read = &report["read"];
        offsets.push(read["start_offset"].as_u64().expect("offset"));
        messages += read["messages"].as_u64().unwrap_or(0);
    }
    // Each call starts where the last stopped, at most 1 MiB further.
    assert_eq!(&offsets[..4], [0, 1 << 20, 2 << 20, 3 << 20], "{offsets:?}");
    assert_eq!(messages, 1, "the message after the long line was not read");
    assert!(hooks_log(&store).contains("longer than [hooks] max_read_bytes"));
    // Once read, a call reads nothing again: no re-reading of the file.
    let ran = hook(&store, "post-tool-use", "s-sparse", &file);
    let report: Value = serde_json::from_str(&ran.stdout()).expect("report");
    assert_eq!(report["read"]["bytes_read"], 0, "{report}");
    assert_eq!(
        report["read"]["start_offset"],
        bytes.len() as u64,
        "{report}"
    );
}

#[test]
fn a_gzip_bomb_stops_at_the_limit_while_decompressing() {
    let store = TestStore::new();
    store.set_config(&[("max_file_bytes", "16777216")]);
    // 8 MiB of zeros, 64 times: 512 MiB decompressed from about 500 KB.
    let bomb = gzip_bomb(&store.dir.path().join("bomb.jsonl.gz"), 8, 64);
    assert!(std::fs::metadata(&bomb).expect("bomb").len() < 1 << 20);
    let before = store.snapshot();
    let ran = ingest(&store, &bomb);
    assert_refused(&ran, "ingest", &bomb);
    assert!(
        ran.stderr()
            .contains("it decompresses to more than 16.0 MiB"),
        "{}",
        ran.stderr()
    );
    assert_eq!(before, store.snapshot(), "the store changed");
}

#[test]
fn folders_whose_symlinks_form_loops_are_walked_once() {
    let store = TestStore::new();
    let records = symlink_loops(&store.dir.path().join("records"));
    std::fs::write(
        records.join("b/notes.jsonl"),
        "{\"id\": \"loop-note\", \"text\": \"a note in a looping folder\"}\n",
    )
    .expect("write");
    let ran = add(&store, &records);
    assert!(!ran.timed_out, "add went round the loop");
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    // Reached as a/b and as a/again: read once, one record.
    let mut cmd = kdb(&store);
    cmd.args(["stats", "--json"]);
    let stats: Value = serde_json::from_str(&run(cmd, b"", DEADLINE).stdout()).expect("stats");
    assert_eq!(stats["records"], 1, "{stats}");
    let transcripts = symlink_loops(&store.dir.path().join("transcripts"));
    std::fs::write(
        transcripts.join("b/t.jsonl"),
        "{\"role\": \"user\", \"content\": \"hello from a loop\"}\n",
    )
    .expect("write");
    let ran = ingest(&store, &transcripts);
    assert!(!ran.timed_out, "ingest went round the loop");
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    assert!(
        ran.stdout().contains("read 1 transcript "),
        "{}",
        ran.stdout()
    );
}

#[test]
fn qmd_update_skips_a_1_gb_file_and_indexes_the_others() {
    let store = TestStore::new();
    let notes = store.dir.path().join("notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    sparse(&notes.join("huge.md"), 1 << 30);
    std::fs::write(
        notes.join("small.md"),
        "# Router\nthe mesh router keeps its state\n",
    )
    .expect("write");
    let mut cmd = kdb(&store);
    cmd.env("QMD_CONFIG_DIR", store.dir.path().join("qmd"));
    cmd.args(["qmd", "collection", "add"])
        .arg(&notes)
        .args(["--name", "notes"]);
    let ran = run(cmd, b"", DEADLINE);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let mut cmd = kdb(&store);
    cmd.env("QMD_CONFIG_DIR", store.dir.path().join("qmd"));
    cmd.args(["qmd", "update", "--json"]);
    let ran = run(cmd, b"", DEADLINE);
    assert!(!ran.timed_out);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let report: Value = serde_json::from_str(&ran.stdout()).expect("report");
    assert_eq!(report[0]["files"], 1, "{report}");
    assert!(report[0]["chunks"].as_u64() >= Some(1), "{report}");
    assert_eq!(report[0]["skipped"][0]["path"], "huge.md", "{report}");
    let why = report[0]["skipped"][0]["why"].as_str().unwrap_or_default();
    assert!(why.contains("limits.max_markdown_bytes"), "{why}");
    assert!(ran.stderr().contains("skipped huge.md"), "{}", ran.stderr());
}

#[test]
fn invalid_utf8_inside_a_message_is_replaced_and_counted() {
    let store = TestStore::new();
    let mut bytes = b"{\"role\": \"user\", \"content\": \"zeppelin migration caf".to_vec();
    bytes.extend_from_slice(b"\xe9 plan\"}\n{\"role\": \"assistant\", \"content\": \"ok\"}\n");
    let file = store.write("latin1.jsonl", &bytes);
    let ran = ingest(&store, &file);
    assert_eq!(ran.code(), Some(0), "{}", ran.stderr());
    let stdout = ran.stdout();
    assert!(stdout.contains(": 2 messages"), "{stdout}");
    assert!(stdout.contains("0 not JSON"), "{stdout}");
    assert!(
        stdout.contains("1 byte of invalid UTF-8 replaced by U+FFFD"),
        "{stdout}"
    );
    let found = store.search_ids(&["zeppelin"]);
    assert_eq!(
        found.first().map(String::as_str),
        Some("latin1:line:1"),
        "{found:?}"
    );
}
