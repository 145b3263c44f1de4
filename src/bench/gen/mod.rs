//! The corpus generator: transcripts in, a BEIR folder of records and queries out.
//!
//! The work happens in **passes** over the sessions. Each pass plans, for every
//! session, which records to make (one message per turn with text, segment windows,
//! task spans), then builds and writes them one at a time. When the requested count
//! is smaller than a pass, a uniform random subset of the planned records is kept;
//! when it is larger, further passes follow with their own window offsets and sizes,
//! a `~pN` suffix on the session ids and timestamps moved `N × 29` days back.
//! Queries are made from the very records they target, right after a target is
//! written, so nothing but the source turns is ever held in memory.
//!
//! Each step is a room of its own: `rng.rs` (the deterministic random streams),
//! `plan.rs` (which records a session yields in one pass), `build.rs` (the
//! records themselves), `summary.rs` (rule-based summaries of a window of turns),
//! `queries.rs` (queries cut from the records they target). This file holds the
//! options, the run over the passes and the output files.

mod build;
mod plan;
mod queries;
mod rng;
mod summary;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::turns::{read_transcripts, Session, Turn};
use build::{build_record, OutRecord, SessionPass};
use plan::plan_pass;
use queries::{DocFreq, QueryLine, QueryMaker};
use rng::{Picker, Rng, TAG_PICK};

/// What to generate, from where, and where to put it.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// A folder of Claude Code transcripts (`*.jsonl`, `*.jsonl.gz`), searched recursively.
    pub from: PathBuf,
    /// Exactly this many corpus records are written.
    pub records: usize,
    /// Number of queries (at most one per record, so capped at `records`).
    pub queries: usize,
    pub seed: u64,
    /// The BEIR folder to write: `corpus.jsonl`, `queries.jsonl`, `qrels/test.tsv`.
    pub out: PathBuf,
}

/// What a run read and wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GenSummary {
    /// Sessions with at least one turn.
    pub sessions_read: usize,
    /// Lines read from all transcript files.
    pub source_lines: usize,
    pub records: usize,
    pub segments: usize,
    pub tasks: usize,
    pub messages: usize,
    pub queries: usize,
    /// Bytes of all three output files.
    pub bytes_written: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum GenError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no transcripts found under {} (looked for *.jsonl, *.jsonl.gz and *.json files)", .0.display())]
    NoTranscripts(PathBuf),
    #[error("the transcripts under {} hold no user or assistant turns with text", .0.display())]
    NoTurns(PathBuf),
    #[error("cannot encode a record as JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Transcript(#[from] knowledge_db::error::Error),
}

impl GenError {
    fn write(path: &Path, source: std::io::Error) -> Self {
        GenError::Write {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Share of each kind, in sixtieths: 36 messages : 15 segments : 9 tasks = 60 : 25 : 15.
const SEGMENTS_PER_60_MESSAGES: usize = 25;
const TASKS_PER_60_MESSAGES: usize = 15;
/// Segment windows span this many turns.
const SEGMENT_TURNS: (usize, usize) = (6, 20);
/// Task windows (when a session has no task tools) span this many turns.
const TASK_TURNS: (usize, usize) = (4, 16);
/// How far each pass moves timestamps back.
const PASS_SHIFT_SECS: i64 = 29 * 24 * 3600;
/// How often the progress callback is called.
const PROGRESS_EVERY: usize = 1000;
/// Tool results in messages are cut to about this many characters.
const RESULT_CHARS: usize = 500;
const MAX_SEGMENT_CHARS: usize = 1500;
const MIN_SEGMENT_CHARS: usize = 300;

/// Generates the corpus, queries and qrels described by `opts`.
///
/// `progress` is called with the number of records written so far: every
/// thousand records, and with the final count at the end.
pub fn generate(
    opts: &GenOptions,
    progress: &mut dyn FnMut(usize),
) -> Result<GenSummary, GenError> {
    let transcripts = read_transcripts(&opts.from)?;
    let sessions: Vec<Session> = transcripts
        .sessions
        .into_iter()
        .filter(|s| s.turns.iter().any(Turn::has_content))
        .collect();
    if sessions.is_empty() {
        return Err(GenError::NoTurns(opts.from.clone()));
    }
    let mut summary = GenSummary {
        sessions_read: sessions.len(),
        source_lines: transcripts.lines,
        ..GenSummary::default()
    };
    let doc_freq = DocFreq::build(&sessions);
    let mut output = Output::create(&opts.out)?;
    let mut queries = QueryMaker::new(opts.records, opts.queries, opts.seed);

    let mut pass = 0;
    while summary.records < opts.records {
        let plan = plan_pass(&sessions, pass, opts.seed);
        let planned: usize = plan.iter().map(Vec::len).sum();
        if planned == 0 {
            return Err(GenError::NoTurns(opts.from.clone()));
        }
        let wanted = (opts.records - summary.records).min(planned);
        let mut picker = Picker::new(
            wanted,
            planned,
            Rng::derive(opts.seed, &[TAG_PICK, pass as u64]),
        );
        for (session_index, items) in plan.iter().enumerate() {
            let context = SessionPass::new(&sessions[session_index], pass);
            for item in items {
                if !picker.take() {
                    continue;
                }
                let record = build_record(&context, item, opts.seed);
                output.write_record(&record)?;
                count_kind(&mut summary, &record);
                queries.offer(summary.records, &record, &doc_freq, &mut output)?;
                summary.records += 1;
                if summary.records.is_multiple_of(PROGRESS_EVERY) {
                    progress(summary.records);
                }
            }
        }
        pass += 1;
    }
    if summary.records == 0 || !summary.records.is_multiple_of(PROGRESS_EVERY) {
        progress(summary.records);
    }
    summary.queries = queries.made;
    summary.bytes_written = output.finish()?;
    Ok(summary)
}

fn count_kind(summary: &mut GenSummary, record: &OutRecord) {
    match record {
        OutRecord::Message(_) => summary.messages += 1,
        OutRecord::Segment(_) => summary.segments += 1,
        OutRecord::Task(_) => summary.tasks += 1,
    }
}

// ---------------------------------------------------------------------------
// Output files.

// ---------------------------------------------------------------------------
// Output files.

struct Sink {
    path: PathBuf,
    writer: BufWriter<File>,
    bytes: u64,
}

impl Sink {
    fn create(path: PathBuf) -> Result<Self, GenError> {
        let file = File::create(&path).map_err(|e| GenError::write(&path, e))?;
        Ok(Sink {
            writer: BufWriter::with_capacity(1 << 20, file),
            path,
            bytes: 0,
        })
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), GenError> {
        self.writer
            .write_all(line)
            .and_then(|_| self.writer.write_all(b"\n"))
            .map_err(|e| GenError::write(&self.path, e))?;
        self.bytes += line.len() as u64 + 1;
        Ok(())
    }

    fn finish(mut self) -> Result<u64, GenError> {
        self.writer
            .flush()
            .map_err(|e| GenError::write(&self.path, e))?;
        Ok(self.bytes)
    }
}

/// The BEIR folder being written.
struct Output {
    corpus: Sink,
    queries: Sink,
    qrels: Sink,
    buffer: Vec<u8>,
}

impl Output {
    fn create(dir: &Path) -> Result<Self, GenError> {
        let qrels_dir = dir.join("qrels");
        std::fs::create_dir_all(&qrels_dir).map_err(|e| GenError::write(&qrels_dir, e))?;
        let mut qrels = Sink::create(qrels_dir.join("test.tsv"))?;
        qrels.write_line(b"query-id\tcorpus-id\tscore")?;
        Ok(Output {
            corpus: Sink::create(dir.join("corpus.jsonl"))?,
            queries: Sink::create(dir.join("queries.jsonl"))?,
            qrels,
            buffer: Vec::with_capacity(1 << 14),
        })
    }

    fn write_record(&mut self, record: &OutRecord) -> Result<(), GenError> {
        self.buffer.clear();
        record.write_json(&mut self.buffer)?;
        self.corpus.write_line(&self.buffer)
    }

    fn write_query(&mut self, query: &QueryLine, target: &str) -> Result<(), GenError> {
        self.buffer.clear();
        serde_json::to_writer(&mut self.buffer, query)?;
        self.queries.write_line(&self.buffer)?;
        let qrel = format!("{}\t{}\t1", query.id, target);
        self.qrels.write_line(qrel.as_bytes())
    }

    fn finish(self) -> Result<u64, GenError> {
        Ok(self.corpus.finish()? + self.queries.finish()? + self.qrels.finish()?)
    }
}
