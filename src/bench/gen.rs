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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::turns::{read_transcripts, truncate_chars, Role, Session, TaskEvent, Turn};

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
// Randomness: a small deterministic generator (splitmix64), split into streams.

const TAG_PLAN: u64 = 1;
const TAG_PICK: u64 = 2;
const TAG_RECORD: u64 = 3;
const TAG_QUERY: u64 = 4;
const TAG_TARGETS: u64 = 5;

#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    /// A stream of its own for `seed` and a path of labels (pass, session, …).
    fn derive(seed: u64, labels: &[u64]) -> Self {
        let mut rng = Rng(seed);
        for &label in labels {
            rng.0 ^= label.wrapping_mul(0xA24B_AED4_963E_E407);
            rng.next_u64();
        }
        rng
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// A number in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// A number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Keeps exactly `wanted` of `total` items offered in order, each subset equally
/// likely (selection sampling).
struct Picker {
    wanted: usize,
    left: usize,
    rng: Rng,
}

impl Picker {
    fn new(wanted: usize, total: usize, rng: Rng) -> Self {
        Picker {
            wanted,
            left: total,
            rng,
        }
    }

    fn take(&mut self) -> bool {
        if self.wanted == 0 || self.left == 0 {
            return false;
        }
        let keep = self.rng.below(self.left) < self.wanted;
        self.left -= 1;
        if keep {
            self.wanted -= 1;
        }
        keep
    }
}

// ---------------------------------------------------------------------------
// Planning: which records a session yields in one pass.

#[derive(Debug, Clone, PartialEq)]
enum Planned {
    Message { turn: usize },
    Segment { start: usize, end: usize },
    Task(TaskPlan),
}

#[derive(Debug, Clone, PartialEq)]
struct TaskPlan {
    task_id: String,
    /// Empty for window tasks: the subject is the user's request.
    subject: String,
    start: usize,
    end: usize,
    completed: bool,
}

impl Planned {
    /// Records are written in the order an agent would evict them: by last turn.
    fn order_key(&self) -> (usize, u8) {
        match self {
            Planned::Message { turn } => (*turn, 0),
            Planned::Segment { end, .. } => (*end, 1),
            Planned::Task(t) => (t.end, 2),
        }
    }
}

/// Running totals of one pass, so that short sessions' shortfalls are made up by
/// later ones and the whole pass keeps the 60/25/15 mix.
#[derive(Default)]
struct MixTally {
    messages: usize,
    segments: usize,
    tasks: usize,
}

impl MixTally {
    fn segments_due(&self) -> usize {
        (self.messages * SEGMENTS_PER_60_MESSAGES / 60).saturating_sub(self.segments)
    }

    fn tasks_due(&self) -> usize {
        (self.messages * TASKS_PER_60_MESSAGES / 60).saturating_sub(self.tasks)
    }
}

fn plan_pass(sessions: &[Session], pass: usize, seed: u64) -> Vec<Vec<Planned>> {
    let mut tally = MixTally::default();
    sessions
        .iter()
        .enumerate()
        .map(|(i, session)| {
            let mut rng = Rng::derive(seed, &[TAG_PLAN, pass as u64, i as u64]);
            plan_session(session, &mut rng, &mut tally)
        })
        .collect()
}

fn plan_session(session: &Session, rng: &mut Rng, tally: &mut MixTally) -> Vec<Planned> {
    let turns = &session.turns;
    let mut items: Vec<Planned> = (0..turns.len())
        .filter(|&i| turns[i].has_content())
        .map(|turn| Planned::Message { turn })
        .collect();
    tally.messages += items.len();

    let segment_goal = tally.segments_due().min(turns.len());
    let segments = choose_windows(turns, segment_goal, SEGMENT_TURNS, rng);
    tally.segments += segments.len();
    items.extend(
        segments
            .into_iter()
            .map(|(start, end)| Planned::Segment { start, end }),
    );

    let explicit = tasks_from_task_tools(turns);
    tally.tasks += explicit.len();
    items.extend(explicit.into_iter().map(Planned::Task));
    let task_goal = tally.tasks_due().min(turns.len());
    let windows = choose_windows(turns, task_goal, TASK_TURNS, rng);
    tally.tasks += windows.len();
    items.extend(windows.into_iter().map(|(start, end)| {
        Planned::Task(TaskPlan {
            task_id: format!("w{start}-{end}"),
            subject: String::new(),
            start,
            end,
            completed: false,
        })
    }));

    items.sort_by_key(Planned::order_key);
    items
}

/// Up to `goal` distinct windows `(start, end)` (inclusive) spread over the session,
/// each of a random size in `sizes` and holding at least one turn with content.
fn choose_windows(
    turns: &[Turn],
    goal: usize,
    sizes: (usize, usize),
    rng: &mut Rng,
) -> Vec<(usize, usize)> {
    let count = turns.len();
    if count == 0 || goal == 0 {
        return Vec::new();
    }
    let smallest = sizes.0.min(count);
    let largest = sizes.1.min(count).max(smallest);
    let slot = (count / goal).max(1);
    let mut windows = BTreeSet::new();
    for i in 0..goal {
        let size = rng.between(smallest, largest);
        let start = (i * count / goal + rng.below(slot)).min(count - size);
        let end = start + size - 1;
        if turns[start..=end].iter().any(Turn::has_content) {
            windows.insert((start, end));
        }
    }
    windows.into_iter().collect()
}

/// Tasks named by TaskCreate/TaskUpdate and TodoWrite calls, with the turns they span.
fn tasks_from_task_tools(turns: &[Turn]) -> Vec<TaskPlan> {
    let mut tasks: Vec<TaskPlan> = Vec::new();
    let mut created = 0usize;
    let mut todo_index: HashMap<String, usize> = HashMap::new();
    for (turn_index, turn) in turns.iter().enumerate() {
        for call in &turn.calls {
            match &call.task {
                Some(TaskEvent::Create { subject }) => {
                    created += 1;
                    tasks.push(TaskPlan {
                        task_id: format!("task-{created}"),
                        subject: subject.clone(),
                        start: turn_index,
                        end: turn_index,
                        completed: false,
                    });
                }
                Some(TaskEvent::Update { task_id, status }) => {
                    let wanted = format!("task-{}", task_id.trim_start_matches('#'));
                    if let Some(task) = tasks.iter_mut().find(|t| t.task_id == wanted) {
                        task.end = task.end.max(turn_index);
                        task.completed |= status == "completed";
                    }
                }
                Some(TaskEvent::Todos(items)) => {
                    for (content, status) in items {
                        let index = *todo_index.entry(content.clone()).or_insert_with(|| {
                            tasks.push(TaskPlan {
                                task_id: format!("todo-{}", tasks.len() + 1),
                                subject: content.clone(),
                                start: turn_index,
                                end: turn_index,
                                completed: false,
                            });
                            tasks.len() - 1
                        });
                        let task = &mut tasks[index];
                        if !task.completed {
                            task.end = turn_index;
                            task.completed = status == "completed";
                        }
                    }
                }
                None => {}
            }
        }
    }
    // A task never updated spans the few turns after it was created.
    for task in &mut tasks {
        if task.end == task.start {
            task.end = (task.start + 8).min(turns.len().saturating_sub(1));
        }
    }
    tasks
}

// ---------------------------------------------------------------------------
// Building records.

/// A session as seen in one pass: its id with the pass suffix and its time shift.
struct SessionPass<'a> {
    session: &'a Session,
    pass: usize,
    id: String,
    shift: i64,
}

impl<'a> SessionPass<'a> {
    fn new(session: &'a Session, pass: usize) -> Self {
        let id = if pass == 0 {
            session.id.clone()
        } else {
            format!("{}~p{pass}", session.id)
        };
        SessionPass {
            session,
            pass,
            id,
            shift: -(pass as i64) * PASS_SHIFT_SECS,
        }
    }

    fn turns(&self) -> &'a [Turn] {
        &self.session.turns
    }

    fn time(&self, turn: usize) -> i64 {
        self.turns()[turn].timestamp + self.shift
    }

    /// The cut of tool results in messages: ~500 characters, varied in later
    /// passes so that their texts are not copies of the first pass.
    fn result_chars(&self, turn: usize) -> usize {
        if self.pass == 0 {
            RESULT_CHARS
        } else {
            let h = xxh3_64(format!("{}:{turn}", self.id).as_bytes());
            RESULT_CHARS - 150 + (h % 300) as usize
        }
    }
}

#[derive(Serialize)]
struct MessageRecord {
    kind: &'static str,
    id: String,
    session_id: String,
    turn_index: usize,
    role: &'static str,
    text: String,
    timestamp: String,
    tool_names: Vec<String>,
    files: Vec<String>,
    /// What the turn says in words (not written): where its queries come from.
    #[serde(skip)]
    prose: String,
}

#[derive(Serialize)]
struct SegmentRecord {
    kind: &'static str,
    segment_id: String,
    topic: String,
    session_id: String,
    start_turn: usize,
    end_turn: usize,
    original_tokens: usize,
    compressed_tokens: usize,
    compression_ratio: f64,
    compressed_at: String,
    last_accessed: String,
    access_count: usize,
    relevance_score: f64,
    compressed_content: String,
    key_decisions: Vec<String>,
    key_files: Vec<String>,
    metadata: SegmentMetadata,
}

#[derive(Serialize)]
struct SegmentMetadata {
    contains_code: bool,
    contains_errors: bool,
    task_completed: bool,
}

#[derive(Serialize)]
struct TaskRecord {
    kind: &'static str,
    session_id: String,
    task_id: String,
    subject: String,
    start_turn: usize,
    end_turn: usize,
    compressed_at: String,
    files_modified: Vec<String>,
    commands_run: Vec<String>,
    key_outcomes: Vec<String>,
    errors_resolved: Vec<String>,
}

enum OutRecord {
    Message(MessageRecord),
    Segment(SegmentRecord),
    Task(TaskRecord),
}

impl OutRecord {
    /// The id the store gives this record (tasks: `session_id:task_id`).
    fn id(&self) -> String {
        match self {
            OutRecord::Message(m) => m.id.clone(),
            OutRecord::Segment(s) => s.segment_id.clone(),
            OutRecord::Task(t) => format!("{}:{}", t.session_id, t.task_id),
        }
    }

    /// The prose of the record, where query words come from.
    fn prose(&self) -> String {
        match self {
            OutRecord::Message(m) => m.prose.clone(),
            OutRecord::Segment(s) => {
                let mut lines = vec![s.topic.clone()];
                lines.extend(summary_prose_lines(&s.compressed_content));
                lines.join("\n")
            }
            OutRecord::Task(t) => {
                let mut parts = vec![t.subject.clone()];
                parts.extend(t.key_outcomes.iter().cloned());
                parts.extend(t.errors_resolved.iter().cloned());
                parts.join("\n")
            }
        }
    }

    /// File paths and commands the record lists in fields of their own.
    fn listed_names(&self) -> Vec<String> {
        match self {
            OutRecord::Message(m) => m.files.clone(),
            OutRecord::Segment(s) => s.key_files.clone(),
            OutRecord::Task(t) => t
                .files_modified
                .iter()
                .chain(&t.commands_run)
                .cloned()
                .collect(),
        }
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            OutRecord::Message(m) => serde_json::to_writer(out, m),
            OutRecord::Segment(s) => serde_json::to_writer(out, s),
            OutRecord::Task(t) => serde_json::to_writer(out, t),
        }
    }
}

fn build_record(context: &SessionPass, item: &Planned, seed: u64) -> OutRecord {
    match item {
        Planned::Message { turn } => OutRecord::Message(build_message(context, *turn)),
        Planned::Segment { start, end } => {
            let id = format!("{}:seg:{start}-{end}", context.id);
            let mut rng = Rng::derive(seed, &[TAG_RECORD, xxh3_64(id.as_bytes())]);
            OutRecord::Segment(build_segment(context, id, *start, *end, &mut rng))
        }
        Planned::Task(plan) => {
            let id = format!("{}:{}", context.id, plan.task_id);
            let mut rng = Rng::derive(seed, &[TAG_RECORD, xxh3_64(id.as_bytes())]);
            OutRecord::Task(build_task(context, plan, &mut rng))
        }
    }
}

fn build_message(context: &SessionPass, turn_index: usize) -> MessageRecord {
    let turn = &context.turns()[turn_index];
    let mut tool_names = Vec::new();
    let mut files = Vec::new();
    for call in &turn.calls {
        push_unique(&mut tool_names, &call.name);
        if let Some(file) = &call.file {
            push_unique(&mut files, file);
        }
    }
    for result in &turn.results {
        push_unique(&mut tool_names, &result.tool);
        if let Some(file) = &result.file {
            push_unique(&mut files, file);
        }
    }
    MessageRecord {
        kind: "message",
        id: format!("{}:turn:{turn_index}", context.id),
        session_id: context.id.clone(),
        turn_index,
        role: turn.role.as_str(),
        text: render_turn(turn, context.result_chars(turn_index)),
        timestamp: rfc3339(context.time(turn_index)),
        tool_names,
        files,
        prose: prose_of_turn(turn, context.result_chars(turn_index)),
    }
}

/// The words of a turn without tool labels: its text, else its tool arguments and
/// outputs.
fn prose_of_turn(turn: &Turn, result_chars: usize) -> String {
    if !turn.text.trim().is_empty() {
        return turn.text.trim().to_string();
    }
    let args = turn.calls.iter().map(|c| c.arg.clone());
    let outputs = turn
        .results
        .iter()
        .map(|r| truncate_chars(r.text.trim(), result_chars));
    args.chain(outputs).collect::<Vec<_>>().join("\n")
}

/// A turn as a reader sees it: its text, then `[Tool] argument` for each call and
/// `[Tool result] output…` for each result.
fn render_turn(turn: &Turn, result_chars: usize) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !turn.text.trim().is_empty() {
        parts.push(turn.text.trim().to_string());
    }
    for call in &turn.calls {
        parts.push(
            format!("[{}] {}", call.name, call.arg)
                .trim_end()
                .to_string(),
        );
    }
    for result in turn.results.iter().filter(|r| r.is_shown()) {
        let label = if result.is_error { "error" } else { "result" };
        let text = truncate_chars(result.text.trim(), result_chars);
        parts.push(
            format!("[{} {label}] {text}", result.tool)
                .trim_end()
                .to_string(),
        );
    }
    parts.join("\n")
}

fn build_segment(
    context: &SessionPass,
    segment_id: String,
    start: usize,
    end: usize,
    rng: &mut Rng,
) -> SegmentRecord {
    let turns = context.turns();
    let window = &turns[start..=end];
    let content = summarize_window(window);
    let original_chars: usize = window.iter().map(|t| t.source_chars).sum();
    let compressed_tokens = content.chars().count().div_ceil(4).max(1);
    let original_tokens = original_chars.div_ceil(4).max(compressed_tokens);
    let compressed_at = context.time(end) + rng.between(60, 900) as i64;
    let last_accessed = compressed_at + rng.between(0, 30 * 24 * 3600) as i64;
    SegmentRecord {
        kind: "segment",
        segment_id,
        topic: topic_of(turns, start, end, 80),
        session_id: context.id.clone(),
        start_turn: start,
        end_turn: end,
        original_tokens,
        compressed_tokens,
        compression_ratio: round2(original_tokens as f64 / compressed_tokens as f64),
        compressed_at: rfc3339(compressed_at),
        last_accessed: rfc3339(last_accessed),
        access_count: rng.between(0, 12),
        relevance_score: round2(0.2 + 0.75 * rng.unit()),
        compressed_content: content,
        key_decisions: decisions_in(window, 4),
        key_files: files_in(window, false, 12),
        metadata: SegmentMetadata {
            contains_code: window.iter().any(has_code),
            contains_errors: window.iter().any(has_errors),
            task_completed: window.iter().any(completes_a_task),
        },
    }
}

fn build_task(context: &SessionPass, plan: &TaskPlan, rng: &mut Rng) -> TaskRecord {
    let turns = context.turns();
    let window = &turns[plan.start..=plan.end];
    let subject = if plan.subject.is_empty() {
        topic_of(turns, plan.start, plan.end, 100)
    } else {
        plan.subject.clone()
    };
    let mut key_outcomes = outcomes_in(window, 3);
    if plan.completed {
        key_outcomes.push("Marked completed.".to_string());
    }
    TaskRecord {
        kind: "task",
        session_id: context.id.clone(),
        task_id: plan.task_id.clone(),
        subject,
        start_turn: plan.start,
        end_turn: plan.end,
        compressed_at: rfc3339(context.time(plan.end) + rng.between(60, 900) as i64),
        files_modified: files_in(window, true, 12),
        commands_run: commands_in(window, 10),
        key_outcomes,
        errors_resolved: errors_in(window, 3),
    }
}

// ---------------------------------------------------------------------------
// Rule-based summaries of a window of turns.

/// A readable summary of a window: what was asked, what the assistant said and
/// did, what went wrong, how it ended. Roughly 300-1500 characters.
fn summarize_window(window: &[Turn]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let requests: Vec<&Turn> = window.iter().filter(|t| t.is_request()).collect();
    if let Some(first) = requests.first() {
        lines.push(format!(
            "User asked: {}",
            one_line(&truncate_chars(first.text.trim(), 280))
        ));
    }
    for later in requests.iter().skip(1).take(2) {
        lines.push(format!("Then: {}", first_sentence(&later.text, 140)));
    }
    let said: Vec<String> = window
        .iter()
        .filter(|t| t.role == Role::Assistant)
        .map(|t| first_sentence(&t.text, 160))
        .filter(|s| !s.is_empty())
        .fold(Vec::new(), |mut acc, s| {
            if !acc.contains(&s) && acc.len() < 5 {
                acc.push(s);
            }
            acc
        });
    if !said.is_empty() {
        lines.push(format!("Assistant: {}", said.join(" ")));
    }
    let actions = actions_in(window, 8);
    if !actions.is_empty() {
        lines.push(format!("Actions: {}.", actions.join("; ")));
    }
    let errors = errors_in(window, 2);
    if !errors.is_empty() {
        lines.push(format!("Errors: {}", errors.join(" | ")));
    }
    if let Some(last) = window
        .iter()
        .rev()
        .find(|t| t.role == Role::Assistant && !t.text.trim().is_empty())
    {
        let outcome = last_sentence(&last.text, 200);
        if !outcome.is_empty() && !said.iter().any(|s| s == &outcome) {
            lines.push(format!("Outcome: {outcome}"));
        }
    }
    let mut summary = lines.join("\n");
    if summary.chars().count() < MIN_SEGMENT_CHARS {
        for result in window
            .iter()
            .flat_map(|t| &t.results)
            .filter(|r| r.is_shown())
            .take(2)
        {
            let shown = one_line(&truncate_chars(result.text.trim(), 220));
            summary.push_str(&format!("\nOutput of {}: {shown}", result.tool));
        }
    }
    truncate_chars(summary.trim(), MAX_SEGMENT_CHARS)
}

/// The lines of a window summary that are prose, without their labels (the list
/// of actions and raw outputs are left out).
fn summary_prose_lines(summary: &str) -> Vec<String> {
    const LABELS: [&str; 5] = [
        "User asked: ",
        "Then: ",
        "Assistant: ",
        "Outcome: ",
        "Errors: ",
    ];
    summary
        .lines()
        .filter_map(|line| LABELS.iter().find_map(|l| line.strip_prefix(l)))
        .map(str::to_string)
        .collect()
}

/// The topic of turns `start..=end`: the first request in it, else the latest
/// request before it, else what the assistant said first.
fn topic_of(turns: &[Turn], start: usize, end: usize, max: usize) -> String {
    let request = turns[start..=end]
        .iter()
        .find(|t| t.is_request())
        .or_else(|| turns[..start].iter().rev().find(|t| t.is_request()));
    let fallback = || {
        turns[start..=end]
            .iter()
            .find(|t| !t.text.trim().is_empty())
    };
    match request.or_else(fallback) {
        Some(turn) => first_sentence(&turn.text, max),
        None => turns[start..=end]
            .iter()
            .flat_map(|t| &t.calls)
            .next()
            .map(|c| format!("{} {}", c.name, c.arg))
            .unwrap_or_else(|| "Tool output".to_string()),
    }
}

fn actions_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut actions = Vec::new();
    for call in window.iter().flat_map(|t| &t.calls) {
        let action = match (&call.command, &call.file) {
            (Some(command), _) => format!("{} `{}`", call.name, truncate_chars(command, 80)),
            (None, Some(file)) => format!("{} {}", call.name, file),
            (None, None) if !call.arg.is_empty() => {
                format!("{} {}", call.name, truncate_chars(&call.arg, 80))
            }
            (None, None) => call.name.clone(),
        };
        push_unique(&mut actions, &action);
        if actions.len() >= max {
            break;
        }
    }
    actions
}

fn files_in(window: &[Turn], edited_only: bool, max: usize) -> Vec<String> {
    let mut files = Vec::new();
    for call in window.iter().flat_map(|t| &t.calls) {
        if edited_only && !call.edits_files() {
            continue;
        }
        if let Some(file) = &call.file {
            push_unique(&mut files, file);
        }
        if files.len() >= max {
            break;
        }
    }
    files
}

fn commands_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut commands = Vec::new();
    for command in window
        .iter()
        .flat_map(|t| &t.calls)
        .filter_map(|c| c.command.as_ref())
    {
        push_unique(&mut commands, command);
        if commands.len() >= max {
            break;
        }
    }
    commands
}

/// First lines of failed tool results.
fn errors_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut errors = Vec::new();
    for result in window
        .iter()
        .flat_map(|t| &t.results)
        .filter(|r| r.is_error)
    {
        let line = result
            .text
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("failed");
        push_unique(&mut errors, &truncate_chars(line, 160));
        if errors.len() >= max {
            break;
        }
    }
    errors
}

const DECISION_CUES: &[&str] = &[
    "i'll ",
    "i will ",
    "we'll ",
    "we should ",
    "decided",
    "decision",
    "instead of",
    "rather than",
    "the fix is",
    "the approach",
    "better to",
    "going with",
    "chose ",
    "switch to",
    "should use",
    "plan is",
];

const OUTCOME_CUES: &[&str] = &[
    "fixed",
    "added",
    "updated",
    "created",
    "removed",
    "implemented",
    "passes",
    "passing",
    "passed",
    "done",
    "changed",
    "renamed",
    "refactored",
    "completed",
    "works",
    "the issue was",
    "the problem was",
    "root cause",
];

/// Openings of sentences that announce what comes next rather than report it.
const INTENT_OPENINGS: &[&str] = &[
    "let me",
    "now let me",
    "i'll",
    "i will",
    "i need",
    "first,",
    "next,",
];

/// Assistant sentences that state a decision.
fn decisions_in(window: &[Turn], max: usize) -> Vec<String> {
    assistant_sentences_with(window, DECISION_CUES, max, false)
}

/// Assistant sentences that report a result (the latest ones), or the last thing said.
fn outcomes_in(window: &[Turn], max: usize) -> Vec<String> {
    let mut found = assistant_sentences_with(window, OUTCOME_CUES, max + 4, true);
    found.retain(|s| {
        let lower = s.to_lowercase();
        !INTENT_OPENINGS.iter().any(|o| lower.starts_with(o))
    });
    found.truncate(max);
    if !found.is_empty() {
        return found;
    }
    window
        .iter()
        .rev()
        .find(|t| t.role == Role::Assistant && !t.text.trim().is_empty())
        .map(|t| vec![last_sentence(&t.text, 200)])
        .unwrap_or_default()
}

fn assistant_sentences_with(
    window: &[Turn],
    cues: &[&str],
    max: usize,
    latest_first: bool,
) -> Vec<String> {
    let texts: Vec<&str> = window
        .iter()
        .filter(|t| t.role == Role::Assistant)
        .map(|t| t.text.as_str())
        .collect();
    let mut sentences: Vec<String> = texts.iter().flat_map(|t| sentences_of(t)).collect();
    if latest_first {
        sentences.reverse();
    }
    let mut found = Vec::new();
    for sentence in sentences {
        let lower = sentence.to_lowercase();
        if sentence.len() >= 20 && cues.iter().any(|c| lower.contains(c)) {
            push_unique(&mut found, &truncate_chars(&sentence, 200));
            if found.len() >= max {
                break;
            }
        }
    }
    found
}

fn has_code(turn: &Turn) -> bool {
    turn.text.contains("```") || turn.calls.iter().any(|c| c.edits_files())
}

fn has_errors(turn: &Turn) -> bool {
    turn.results.iter().any(|r| r.is_error)
}

fn completes_a_task(turn: &Turn) -> bool {
    turn.calls.iter().any(|c| match &c.task {
        Some(TaskEvent::Update { status, .. }) => status == "completed",
        Some(TaskEvent::Todos(items)) => {
            !items.is_empty() && items.iter().all(|(_, s)| s == "completed")
        }
        _ => false,
    })
}

// ---------------------------------------------------------------------------
// Small text helpers.

/// Sentences of prose: split at `. `, `! `, `? ` and line breaks; markdown
/// markers at the start of a line are dropped.
fn sentences_of(text: &str) -> Vec<String> {
    let mut sentences = Vec::new();
    for line in text.lines() {
        let line = line
            .trim()
            .trim_start_matches(['#', '-', '*', '>', ' '])
            .trim();
        if line.is_empty() || line.starts_with("```") || line.starts_with('|') {
            continue;
        }
        let mut rest = line;
        while !rest.is_empty() {
            let cut = rest
                .match_indices(['.', '!', '?'])
                .map(|(i, _)| i + 1)
                .find(|&i| rest[i..].starts_with(' ') || i == rest.len());
            let (sentence, tail) = match cut {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let sentence = sentence.trim();
            if !sentence.is_empty() {
                sentences.push(sentence.to_string());
            }
            rest = tail.trim_start();
        }
    }
    sentences
}

/// The first sentence (with the next one when it is only a few words, like
/// "Quick question:"), cut at a word boundary to at most `max` characters.
fn first_sentence(text: &str, max: usize) -> String {
    let mut sentences = sentences_of(text).into_iter();
    let Some(mut first) = sentences.next() else {
        return String::new();
    };
    if first.chars().count() < 25 {
        if let Some(next) = sentences.next() {
            first = format!("{first} {next}");
        }
    }
    cut_at_word(&first, max)
}

fn last_sentence(text: &str, max: usize) -> String {
    sentences_of(text)
        .into_iter()
        .last()
        .map(|s| cut_at_word(&s, max))
        .unwrap_or_default()
}

fn cut_at_word(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let end = text.char_indices().nth(max).map_or(text.len(), |(i, _)| i);
    let head = &text[..end];
    let cut = head.rfind(' ').filter(|&i| i > max / 2).unwrap_or(end);
    head[..cut]
        .trim_end_matches([',', ';', ':', ' '])
        .to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn push_unique(list: &mut Vec<String>, item: &str) {
    if !item.is_empty() && !list.iter().any(|x| x == item) {
        list.push(item.to_string());
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn rfc3339(secs: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(|| "1970-01-01T00:00:00Z".to_string())
}

// ---------------------------------------------------------------------------
// Queries.

/// How many turns each term occurs in, to prefer distinctive query words.
struct DocFreq {
    counts: HashMap<u64, u32>,
    docs: u32,
}

impl DocFreq {
    fn build(sessions: &[Session]) -> Self {
        let mut counts: HashMap<u64, u32> = HashMap::new();
        let mut seen = HashSet::new();
        let mut docs = 0u32;
        for turn in sessions
            .iter()
            .flat_map(|s| &s.turns)
            .filter(|t| t.has_content())
        {
            docs += 1;
            seen.clear();
            for term in terms_of(&render_turn(turn, RESULT_CHARS)) {
                if seen.insert(term_hash(term)) {
                    *counts.entry(term_hash(term)).or_default() += 1;
                }
            }
        }
        DocFreq { counts, docs }
    }

    fn of(&self, term: &str) -> u32 {
        self.counts.get(&term_hash(term)).copied().unwrap_or(0)
    }

    /// Rare enough to point at a few records: in at most 1% of the turns.
    fn is_rare(&self, term: &str) -> bool {
        self.of(term) <= (self.docs / 100).max(3)
    }

    fn idf(&self, term: &str) -> f64 {
        ((f64::from(self.docs) + 1.0) / (f64::from(self.of(term)) + 1.0)).ln()
    }
}

fn term_hash(term: &str) -> u64 {
    xxh3_64(term.to_lowercase().as_bytes())
}

/// Terms as a code-aware index would see them: runs of letters, digits and `_.-`.
fn terms_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-'))
        .map(|t| t.trim_matches(['.', '-']))
        .filter(|t| !t.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryType {
    Span,
    Identifier,
    Paraphrase,
}

impl QueryType {
    fn as_str(self) -> &'static str {
        match self {
            QueryType::Span => "span",
            QueryType::Identifier => "identifier",
            QueryType::Paraphrase => "paraphrase",
        }
    }

    /// 50% spans, 30% identifiers, 20% paraphrases; the rest as fallbacks.
    fn draw(rng: &mut Rng) -> [QueryType; 3] {
        use QueryType::*;
        match rng.below(10) {
            0..=4 => [Span, Identifier, Paraphrase],
            5..=7 => [Identifier, Span, Paraphrase],
            _ => [Paraphrase, Span, Identifier],
        }
    }
}

#[derive(Serialize)]
struct QueryLine<'a> {
    #[serde(rename = "_id")]
    id: String,
    text: String,
    metadata: QueryMetadata<'a>,
}

#[derive(Serialize)]
struct QueryMetadata<'a> {
    target: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

/// Chooses target records up front (by position in the corpus) and makes a query
/// from each when it is written. A record that yields no usable query passes its
/// turn to the next record.
struct QueryMaker {
    targets: Vec<usize>,
    next_target: usize,
    pending: usize,
    made: usize,
    seed: u64,
}

impl QueryMaker {
    fn new(records: usize, queries: usize, seed: u64) -> Self {
        QueryMaker {
            targets: choose_targets(records, queries.min(records), seed),
            next_target: 0,
            pending: 0,
            made: 0,
            seed,
        }
    }

    fn offer(
        &mut self,
        position: usize,
        record: &OutRecord,
        df: &DocFreq,
        out: &mut Output,
    ) -> Result<(), GenError> {
        while self.targets.get(self.next_target) == Some(&position) {
            self.pending += 1;
            self.next_target += 1;
        }
        if self.pending == 0 {
            return Ok(());
        }
        let mut rng = Rng::derive(self.seed, &[TAG_QUERY, position as u64]);
        let Some((kind, text)) = make_query(record, df, &mut rng) else {
            return Ok(());
        };
        self.pending -= 1;
        self.made += 1;
        let target = record.id();
        let line = QueryLine {
            id: format!("q{}", self.made),
            text,
            metadata: QueryMetadata {
                target: &target,
                kind: kind.as_str(),
            },
        };
        out.write_query(&line, &target)
    }
}

/// `count` distinct positions in `0..records`, sorted (Floyd's sampling).
fn choose_targets(records: usize, count: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::derive(seed, &[TAG_TARGETS]);
    let mut chosen = BTreeSet::new();
    for j in records - count..records {
        let pick = rng.below(j + 1);
        if !chosen.insert(pick) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

fn make_query(record: &OutRecord, df: &DocFreq, rng: &mut Rng) -> Option<(QueryType, String)> {
    let prose = record.prose();
    QueryType::draw(rng).into_iter().find_map(|kind| {
        let text = match kind {
            QueryType::Span => span_query(&prose, df, rng),
            QueryType::Identifier => identifier_query(&prose, &record.listed_names(), df, rng),
            QueryType::Paraphrase => paraphrase_query(&prose, df, rng),
        }?;
        Some((kind, text))
    })
}

const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "but", "by", "can", "could", "did", "do", "does", "done", "for", "from", "get",
    "got", "had", "has", "have", "here", "how", "i", "if", "in", "into", "is", "it", "its", "it's",
    "just", "let", "let's", "like", "me", "more", "my", "need", "new", "no", "not", "now", "of",
    "on", "one", "only", "or", "our", "out", "should", "so", "some", "that", "the", "their",
    "them", "then", "there", "these", "they", "this", "those", "to", "too", "up", "use", "used",
    "using", "was", "we", "were", "what", "when", "where", "which", "while", "will", "with",
    "would", "you", "your", "yes", "i'll", "i'm", "don't", "see", "make", "sure", "file", "result",
    "error", "now", "check", "look", "okay", "ok", "true", "false", "null", "none",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word.to_lowercase().as_str())
}

/// A word of prose without the quotes, brackets and punctuation around it.
fn clean_word(word: &str) -> &str {
    word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'))
}

/// Words a person could type: letters, digits and `_.-/'` only, not too long.
fn is_typable(word: &str) -> bool {
    !word.is_empty()
        && word.chars().count() <= 40
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-/'".contains(c))
}

/// A word that carries meaning: not a stop word, at least 3 characters, has a letter.
fn is_content_word(word: &str) -> bool {
    word.chars().count() >= 3 && word.chars().any(char::is_alphabetic) && !is_stop_word(word)
}

/// 4-10 consecutive words of one line of the record, the most distinctive of a
/// few tries; at least one of them must be rare in the source turns.
fn span_query(prose: &str, df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let lines: Vec<Vec<&str>> = prose
        .lines()
        .map(|line| {
            line.split_whitespace()
                .map(clean_word)
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|words| words.len() >= 4)
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut best: Option<(f64, &[&str])> = None;
    for _ in 0..10 {
        let words = &lines[rng.below(lines.len())];
        let len = rng.between(4, 10).min(words.len());
        let start = rng.below(words.len() - len + 1);
        let span = &words[start..start + len];
        let content: Vec<&&str> = span.iter().filter(|w| is_content_word(w)).collect();
        let usable = content.len() >= 2
            && span.iter().all(|w| is_typable(w))
            && content.iter().any(|w| df.is_rare(w));
        if !usable {
            continue;
        }
        let score: f64 = content.iter().map(|w| df.idf(w)).sum();
        if best.is_none_or(|(b, _)| score > b) {
            best = Some((score, span));
        }
    }
    best.map(|(_, span)| span.join(" "))
}

/// A file name, identifier, error code or command of the record; one of the rarest.
fn identifier_query(prose: &str, listed: &[String], df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let mut candidates: Vec<String> = Vec::new();
    for name in listed {
        if let Some(base) = name.rsplit('/').next().filter(|b| looks_like_file_name(b)) {
            push_unique(&mut candidates, base);
        }
        if let Some(command) = command_head(name) {
            push_unique(&mut candidates, &command);
        }
    }
    for word in prose.split_whitespace().map(clean_word) {
        let word = word.rsplit('/').next().unwrap_or(word);
        if looks_like_identifier(word) && is_typable(word) {
            push_unique(&mut candidates, word);
        }
    }
    candidates.retain(|c| {
        c.chars().count() >= 3 && !is_stop_word(c) && terms_of(c).all(|t| df.is_rare(t))
    });
    if candidates.is_empty() {
        return None;
    }
    // Rarest first; the order of first appearance breaks ties.
    candidates.sort_by_key(|c| terms_of(c).map(|t| df.of(t)).max().unwrap_or(0));
    let pool = candidates.len().min(3);
    Some(candidates.swap_remove(rng.below(pool)))
}

/// The program and subcommand of a shell command (`cargo test`, `go build`).
fn command_head(command: &str) -> Option<String> {
    if looks_like_file_name(command.rsplit('/').next().unwrap_or_default()) {
        return None;
    }
    let command = command.rsplit("&& ").next().unwrap_or(command);
    let words: Vec<&str> = command
        .split_whitespace()
        .take_while(|w| w.chars().all(|c| c.is_alphanumeric() || "_-.:".contains(c)))
        .take(2)
        .collect();
    (words.len() == 2 && words.concat().len() >= 5).then(|| words.join(" "))
}

fn looks_like_file_name(word: &str) -> bool {
    let Some((stem, ext)) = word.rsplit_once('.') else {
        return false;
    };
    !stem.is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && ext.chars().any(|c| c.is_ascii_alphabetic())
        && stem.chars().any(char::is_alphabetic)
        && word
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-".contains(c))
}

/// camelCase, PascalCase with two capitals, snake_case, error codes, file names.
fn looks_like_identifier(word: &str) -> bool {
    let length = word.chars().count();
    if !(3..=60).contains(&length) {
        return false;
    }
    if looks_like_file_name(word) {
        return true;
    }
    let alnum = word.chars().all(|c| c.is_ascii_alphanumeric());
    let uppers = word.chars().filter(char::is_ascii_uppercase).count();
    let lowers = word.chars().filter(char::is_ascii_lowercase).count();
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let first = word.chars().next().unwrap_or(' ');
    let camel = alnum && first.is_ascii_lowercase() && uppers >= 1;
    let pascal = alnum && first.is_ascii_uppercase() && uppers >= 2 && lowers >= 1;
    let snake = word.contains('_')
        && !word.starts_with('_')
        && !word.ends_with('_')
        && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && lowers + uppers >= 3;
    let error_code = alnum && lowers == 0 && uppers >= 1 && digits >= 3;
    camel || pascal || snake || error_code
}

/// A few content words from one stretch of the record (the most distinctive of a
/// few tries), shuffled, with one or two of the commoner ones left out.
fn paraphrase_query(prose: &str, df: &DocFreq, rng: &mut Rng) -> Option<String> {
    let words: Vec<&str> = prose.split_whitespace().map(clean_word).collect();
    if words.len() < 6 {
        return None;
    }
    let mut best: Option<(f64, Vec<String>)> = None;
    for _ in 0..6 {
        let picked = content_words_near(&words, rng);
        let score: f64 = picked.iter().map(|w| df.idf(w)).sum();
        let usable = picked.len() >= 4 && picked.iter().any(|w| df.is_rare(w));
        if usable && best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, picked));
        }
    }
    let (_, mut picked) = best?;
    let drop = if picked.len() >= 6 { 2 } else { 1 };
    for _ in 0..drop {
        let commonest = (0..picked.len()).max_by_key(|&i| df.of(&picked[i]))?;
        picked.remove(commonest);
    }
    rng.shuffle(&mut picked);
    Some(picked.join(" "))
}

/// Up to 8 distinct plain content words (lowercased) from a random 20-word stretch.
fn content_words_near(words: &[&str], rng: &mut Rng) -> Vec<String> {
    let len = 20.min(words.len());
    let start = rng.below(words.len() - len + 1);
    let mut picked: Vec<String> = Vec::new();
    for word in &words[start..start + len] {
        let plain = word
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '\'');
        if plain && is_content_word(word) && !picked.iter().any(|p| p.eq_ignore_ascii_case(word)) {
            picked.push(word.to_lowercase());
        }
    }
    picked.truncate(8);
    picked
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;

    /// One small session with prompts, tool calls, an error, TaskCreate/TaskUpdate
    /// and TodoWrite, plus lines that must be skipped.
    const SESSION_A: &str = r#"{"type":"file-history-snapshot","messageId":"m0","snapshot":{}}
{"type":"user","uuid":"a1","sessionId":"sess-a","cwd":"/w/app","timestamp":"2026-02-01T10:00:00Z","message":{"role":"user","content":"Fix the failing parser test in src/parse.rs. It panics on empty input."}}
not json at all
{"type":"assistant","uuid":"a2","sessionId":"sess-a","timestamp":"2026-02-01T10:00:05Z","message":{"id":"msg1","role":"assistant","content":[{"type":"thinking","thinking":"secret musing"}]}}
{"type":"assistant","uuid":"a3","sessionId":"sess-a","timestamp":"2026-02-01T10:00:06Z","message":{"id":"msg1","role":"assistant","content":[{"type":"text","text":"I'll read the parser first to find where parseHeader handles empty input."},{"type":"tool_use","id":"tu1","name":"Read","input":{"file_path":"/w/app/src/parse.rs"}}]}}
{"type":"user","uuid":"a4","sessionId":"sess-a","timestamp":"2026-02-01T10:00:07Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"fn parse_header(input: &str) -> Header { let first = input.lines().next().unwrap(); }"}]}}
{"type":"progress","uuid":"p1","sessionId":"sess-a","data":{"type":"hook_progress"}}
{"type":"assistant","uuid":"a5","sessionId":"sess-a","timestamp":"2026-02-01T10:01:00Z","message":{"id":"msg2","role":"assistant","content":[{"type":"tool_use","id":"tu2","name":"TaskCreate","input":{"subject":"Handle empty input in parse_header","description":"Return an error instead of panicking"}},{"type":"tool_use","id":"tu3","name":"Bash","input":{"command":"cargo test parse_header"}}]}}
{"type":"user","uuid":"a6","sessionId":"sess-a","timestamp":"2026-02-01T10:01:30Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu3","is_error":true,"content":"error[E0308]: mismatched types in src/parse.rs\nexpected Header"}]}}
{"type":"assistant","uuid":"a7","sessionId":"sess-a","timestamp":"2026-02-01T10:02:00Z","message":{"id":"msg3","role":"assistant","content":[{"type":"text","text":"The fix is to return Result from parse_header instead of unwrapping. Rather than panicking we map the empty case to ParseError::Empty."},{"type":"tool_use","id":"tu4","name":"Edit","input":{"file_path":"/w/app/src/parse.rs","old_string":"unwrap()","new_string":"ok_or(ParseError::Empty)?"}}]}}
{"type":"user","uuid":"a8","sessionId":"sess-a","timestamp":"2026-02-01T10:02:10Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu4","content":"The file src/parse.rs has been updated."}]}}
{"type":"assistant","uuid":"a9","sessionId":"sess-a","timestamp":"2026-02-01T10:03:00Z","message":{"id":"msg4","role":"assistant","content":[{"type":"tool_use","id":"tu5","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}},{"type":"text","text":"Fixed: parse_header now returns ParseError::Empty and all parser tests pass."}]}}
{"type":"user","uuid":"a10","sessionId":"sess-a","timestamp":"2026-02-01T10:04:00Z","message":{"role":"user","content":[{"type":"text","text":"Great. Now add a changelog entry for the parser fix in CHANGELOG.md please."}]}}
{"type":"assistant","uuid":"a11","sessionId":"sess-a","timestamp":"2026-02-01T10:04:20Z","message":{"id":"msg5","role":"assistant","content":[{"type":"tool_use","id":"tu6","name":"TodoWrite","input":{"todos":[{"content":"Write changelog entry for ParseError::Empty","status":"completed"},{"content":"Bump crate version to 0.4.1","status":"pending"}]}},{"type":"tool_use","id":"tu7","name":"Write","input":{"file_path":"/w/app/CHANGELOG.md","content":"- parser: empty input returns ParseError::Empty"}}]}}
{"type":"user","uuid":"a12","message":{"role":"user","content":42}}
{"type":"summary","summary":"Parser fix","leafUuid":"a11"}
{"type":"assistant","uuid":"a13","sessionId":"sess-a","isSidechain":true,"timestamp":"2026-02-01T10:05:00Z","message":{"id":"side","role":"assistant","content":[{"type":"text","text":"SIDECHAIN TEXT must not appear"}]}}
"#;

    /// A second, plain (not gzipped) session in a subfolder.
    const SESSION_B: &str = r#"{"type":"user","uuid":"b1","sessionId":"sess-b","cwd":"/w/web","timestamp":"2026-02-03T09:00:00Z","message":{"role":"user","content":"Why does the login page render twice? Check useSessionStore in web/src/store.ts."}}
{"type":"assistant","uuid":"b2","sessionId":"sess-b","timestamp":"2026-02-03T09:00:10Z","message":{"id":"bm1","role":"assistant","content":[{"type":"text","text":"Let me look at the store and the LoginPage component."},{"type":"tool_use","id":"bt1","name":"Grep","input":{"pattern":"useSessionStore","path":"/w/web/src"}}]}}
{"type":"user","uuid":"b3","sessionId":"sess-b","timestamp":"2026-02-03T09:00:12Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"bt1","content":"src/store.ts:12: export const useSessionStore = create(...)\nsrc/LoginPage.tsx:4: const s = useSessionStore()"}]}}
{"type":"assistant","uuid":"b4","sessionId":"sess-b","timestamp":"2026-02-03T09:01:00Z","message":{"id":"bm2","role":"assistant","content":[{"type":"text","text":"The store selector returns a new object each time, so React re-renders. We should use a shallow equality selector instead of the whole store."},{"type":"tool_use","id":"bt2","name":"Edit","input":{"file_path":"/w/web/src/LoginPage.tsx","old_string":"useSessionStore()","new_string":"useSessionStore(selectUser, shallow)"}}]}}
{"type":"user","uuid":"b5","sessionId":"sess-b","timestamp":"2026-02-03T09:02:00Z","message":{"role":"user","content":"Thanks, that fixed the double render. Run npm test to confirm."}}
{"type":"assistant","uuid":"b6","sessionId":"sess-b","timestamp":"2026-02-03T09:02:30Z","message":{"id":"bm3","role":"assistant","content":[{"type":"tool_use","id":"bt3","name":"Bash","input":{"command":"npm test -- LoginPage"}}]}}
{"type":"user","uuid":"b7","sessionId":"sess-b","timestamp":"2026-02-03T09:03:00Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"bt3","content":"PASS src/LoginPage.test.tsx (3 tests)"}]}}
{"type":"assistant","uuid":"b8","sessionId":"sess-b","timestamp":"2026-02-03T09:03:10Z","message":{"id":"bm4","role":"assistant","content":[{"type":"text","text":"All three LoginPage tests pass with the shallow selector."}]}}
"#;

    fn write_gz(path: &Path, text: &str) {
        let file = File::create(path).unwrap();
        let mut encoder = GzEncoder::new(file, Compression::default());
        encoder.write_all(text.as_bytes()).unwrap();
        encoder.finish().unwrap();
    }

    fn transcripts_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        write_gz(&dir.path().join("sess-a.jsonl.gz"), SESSION_A);
        std::fs::create_dir(dir.path().join("web")).unwrap();
        std::fs::write(dir.path().join("web/sess-b.jsonl"), SESSION_B).unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a transcript").unwrap();
        dir
    }

    fn run(from: &Path, out: &Path, records: usize, queries: usize, seed: u64) -> GenSummary {
        let opts = GenOptions {
            from: from.to_path_buf(),
            records,
            queries,
            seed,
            out: out.to_path_buf(),
        };
        generate(&opts, &mut |_| {}).unwrap()
    }

    fn read_lines(path: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The id the store derives for a corpus line.
    fn store_id(record: &serde_json::Value) -> String {
        let text = |k: &str| record[k].as_str().unwrap().to_string();
        match record["kind"].as_str().unwrap() {
            "message" => text("id"),
            "segment" => text("segment_id"),
            "task" => format!("{}:{}", text("session_id"), text("task_id")),
            other => panic!("unexpected kind {other}"),
        }
    }

    fn read_all(out: &Path) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
        (
            std::fs::read(out.join("corpus.jsonl")).unwrap(),
            std::fs::read(out.join("queries.jsonl")).unwrap(),
            std::fs::read(out.join("qrels/test.tsv")).unwrap(),
        )
    }

    #[test]
    fn same_seed_gives_identical_bytes() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            out.path().join("a"),
            out.path().join("b"),
            out.path().join("c"),
        );
        run(from.path(), &a, 120, 30, 7);
        run(from.path(), &b, 120, 30, 7);
        run(from.path(), &c, 120, 30, 8);
        assert_eq!(read_all(&a), read_all(&b));
        assert_ne!(read_all(&a).0, read_all(&c).0);
    }

    #[test]
    fn the_requested_record_count_is_met_exactly() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        // Fewer than one pass gives, and many passes.
        for records in [1, 5, 17, 400] {
            let dir = out.path().join(records.to_string());
            let summary = run(from.path(), &dir, records, 10, 1);
            let corpus = read_lines(&dir.join("corpus.jsonl"));
            assert_eq!(corpus.len(), records);
            assert_eq!(summary.records, records);
            assert_eq!(summary.messages + summary.segments + summary.tasks, records);
        }
    }

    #[test]
    fn ids_are_unique_and_the_mix_holds_over_many_passes() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        let summary = run(from.path(), out.path(), 600, 50, 3);
        let corpus = read_lines(&out.path().join("corpus.jsonl"));
        let ids: HashSet<String> = corpus.iter().map(store_id).collect();
        assert_eq!(ids.len(), corpus.len());
        let lines: HashSet<String> = corpus.iter().map(|r| r.to_string()).collect();
        assert_eq!(lines.len(), corpus.len(), "no byte-identical records");
        let share = |n: usize| n as f64 / 600.0;
        assert!((0.5..0.7).contains(&share(summary.messages)), "{summary:?}");
        assert!(
            (0.15..0.35).contains(&share(summary.segments)),
            "{summary:?}"
        );
        assert!((0.07..0.25).contains(&share(summary.tasks)), "{summary:?}");
        assert!(corpus
            .iter()
            .any(|r| r["session_id"].as_str().unwrap().ends_with("~p3")));
    }

    #[test]
    fn every_query_has_one_qrel_to_a_record_in_the_corpus() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        let summary = run(from.path(), out.path(), 200, 40, 11);
        let corpus = read_lines(&out.path().join("corpus.jsonl"));
        let ids: HashSet<String> = corpus.iter().map(store_id).collect();
        let queries = read_lines(&out.path().join("queries.jsonl"));
        assert_eq!(queries.len(), 40);
        assert_eq!(summary.queries, 40);
        let qrels = std::fs::read_to_string(out.path().join("qrels/test.tsv")).unwrap();
        let mut qrel_lines = qrels.lines();
        assert_eq!(qrel_lines.next(), Some("query-id\tcorpus-id\tscore"));
        let qrel_lines: Vec<&str> = qrel_lines.collect();
        assert_eq!(qrel_lines.len(), queries.len());
        for (query, qrel) in queries.iter().zip(qrel_lines) {
            let target = query["metadata"]["target"].as_str().unwrap();
            assert!(ids.contains(target), "{target} is not in the corpus");
            assert_eq!(
                qrel,
                format!("{}\t{target}\t1", query["_id"].as_str().unwrap())
            );
            let kind = query["metadata"]["type"].as_str().unwrap();
            assert!(["span", "identifier", "paraphrase"].contains(&kind));
            assert!(query["text"].as_str().unwrap().len() >= 3);
        }
    }

    #[test]
    fn malformed_and_unknown_lines_are_skipped() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        let summary = run(from.path(), out.path(), 40, 0, 5);
        assert_eq!(summary.sessions_read, 2);
        assert_eq!(
            summary.source_lines,
            SESSION_A.lines().count() + SESSION_B.lines().count()
        );
        let corpus = std::fs::read_to_string(out.path().join("corpus.jsonl")).unwrap();
        assert!(!corpus.contains("SIDECHAIN"));
        assert!(!corpus.contains("secret musing"), "thinking is left out");
        let records = read_lines(&out.path().join("corpus.jsonl"));
        let base_session = |r: &serde_json::Value| {
            r["session_id"]
                .as_str()
                .unwrap()
                .split('~')
                .next()
                .unwrap()
                .to_string()
        };
        assert!(records
            .iter()
            .all(|r| ["sess-a", "sess-b"].contains(&base_session(r).as_str())));
    }

    #[test]
    fn records_carry_what_the_transcript_says() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        // One pass holds 15 messages; ask for everything it plans.
        run(from.path(), out.path(), 1000, 0, 2);
        let corpus = read_lines(&out.path().join("corpus.jsonl"));
        let first_pass = |r: &&serde_json::Value| !r["session_id"].as_str().unwrap().contains('~');
        let edit = corpus
            .iter()
            .filter(first_pass)
            .find(|r| {
                r["kind"] == "message"
                    && r["text"].as_str().unwrap().contains("[Edit] src/parse.rs")
            })
            .expect("the Edit call is rendered with a relative path");
        assert_eq!(edit["role"], "assistant");
        assert_eq!(edit["files"][0], "src/parse.rs");
        let task = corpus
            .iter()
            .filter(first_pass)
            .find(|r| r["kind"] == "task" && r["task_id"] == "task-1")
            .expect("TaskCreate gives a task");
        assert_eq!(task["subject"], "Handle empty input in parse_header");
        assert!(task["key_outcomes"]
            .to_string()
            .contains("Marked completed"));
        assert!(task["errors_resolved"][0]
            .as_str()
            .unwrap()
            .contains("E0308"));
        assert!(corpus.iter().any(|r| r["task_id"] == "todo-2"));
        let segment = corpus.iter().find(|r| r["kind"] == "segment").unwrap();
        assert!(segment["compressed_content"].as_str().unwrap().len() > 50);
        assert!(
            crate::bench::turns::parse_rfc3339(segment["compressed_at"].as_str().unwrap())
                .is_some()
        );
    }

    #[test]
    fn missing_or_empty_sources_are_explained() {
        let empty = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let opts = |from: &Path| GenOptions {
            from: from.to_path_buf(),
            records: 10,
            queries: 1,
            seed: 0,
            out: out.path().join("o"),
        };
        let err = generate(&opts(empty.path()), &mut |_| {}).unwrap_err();
        assert!(matches!(err, GenError::NoTranscripts(_)), "{err}");
        assert!(err.to_string().contains("no transcripts found under"));

        std::fs::write(
            empty.path().join("junk.jsonl"),
            "garbage\n{\"type\":\"system\"}\n",
        )
        .unwrap();
        let err = generate(&opts(empty.path()), &mut |_| {}).unwrap_err();
        assert!(matches!(err, GenError::NoTurns(_)), "{err}");

        let err = generate(&opts(&empty.path().join("nope")), &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("nope"), "{err}");
    }

    #[test]
    fn progress_reports_the_final_count() {
        let from = transcripts_dir();
        let out = tempfile::tempdir().unwrap();
        for (records, expected) in [
            (2100, vec![1000, 2000, 2100]),
            (2000, vec![1000, 2000]),
            (0, vec![0]),
        ] {
            let mut seen = Vec::new();
            let opts = GenOptions {
                from: from.path().to_path_buf(),
                records,
                queries: 5,
                seed: 9,
                out: out.path().to_path_buf(),
            };
            let summary = generate(&opts, &mut |n| seen.push(n)).unwrap();
            assert_eq!(seen, expected);
            assert_eq!(summary.queries, 5.min(records));
        }
    }

    #[test]
    fn picker_keeps_exactly_the_wanted_number() {
        for (wanted, total) in [(0, 10), (3, 10), (10, 10), (7, 1000)] {
            let mut picker = Picker::new(wanted, total, Rng::derive(1, &[wanted as u64]));
            assert_eq!((0..total).filter(|_| picker.take()).count(), wanted);
        }
    }

    #[test]
    fn targets_are_distinct_and_in_range() {
        let targets = choose_targets(50, 50, 4);
        assert_eq!(targets, (0..50).collect::<Vec<_>>());
        let targets = choose_targets(1000, 30, 4);
        assert_eq!(targets.len(), 30);
        assert!(targets.windows(2).all(|w| w[0] < w[1]) && targets[29] < 1000);
    }

    #[test]
    fn identifiers_are_recognised() {
        for word in [
            "parseHeader",
            "useSessionStore",
            "parse_header",
            "LoginPage",
            "E0308",
            "store.ts",
        ] {
            assert!(looks_like_identifier(word), "{word}");
        }
        for word in ["the", "Hello", "1.2.3", "_", "ok", "https"] {
            assert!(!looks_like_identifier(word), "{word}");
        }
        assert_eq!(
            command_head("cd /w && cargo test --all"),
            Some("cargo test".to_string())
        );
        assert_eq!(command_head("ls"), None);
    }

    #[test]
    fn sentences_split_on_ends_and_lines() {
        let text = "## Plan\nFirst do this. Then that! Version 1.2 stays.\n- a bullet";
        assert_eq!(
            sentences_of(text),
            vec![
                "Plan",
                "First do this.",
                "Then that!",
                "Version 1.2 stays.",
                "a bullet"
            ]
        );
        assert_eq!(
            first_sentence("A very long sentence indeed", 12),
            "A very long"
        );
        assert_eq!(
            first_sentence("Eval this:\nthe tests are slow. Why?", 80),
            "Eval this: the tests are slow."
        );
    }
}
