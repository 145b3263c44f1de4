//! Building records: a planned message, segment or task made into the record the
//! store would hold, as seen in one pass (its ids suffixed, its times moved back).

use serde::Serialize;
use xxhash_rust::xxh3::xxh3_64;

use super::plan::{Planned, TaskPlan};
use super::rng::{Rng, TAG_RECORD};
use super::summary::{
    commands_in, completes_a_task, decisions_in, errors_in, files_in, has_code, has_errors,
    outcomes_in, push_unique, summarize_window, summary_prose_lines, topic_of,
};
use super::{PASS_SHIFT_SECS, RESULT_CHARS};
use crate::bench::turns::{truncate_chars, Session, Turn};

/// A session as seen in one pass: its id with the pass suffix and its time shift.
pub(super) struct SessionPass<'a> {
    session: &'a Session,
    pass: usize,
    id: String,
    shift: i64,
}

impl<'a> SessionPass<'a> {
    pub(super) fn new(session: &'a Session, pass: usize) -> Self {
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
pub(super) struct MessageRecord {
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
pub(super) struct SegmentRecord {
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
pub(super) struct TaskRecord {
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

pub(super) enum OutRecord {
    Message(MessageRecord),
    Segment(SegmentRecord),
    Task(TaskRecord),
}

impl OutRecord {
    /// The id the store gives this record (tasks: `session_id:task_id`).
    pub(super) fn id(&self) -> String {
        match self {
            OutRecord::Message(m) => m.id.clone(),
            OutRecord::Segment(s) => s.segment_id.clone(),
            OutRecord::Task(t) => format!("{}:{}", t.session_id, t.task_id),
        }
    }

    /// The prose of the record, where query words come from.
    pub(super) fn prose(&self) -> String {
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
    pub(super) fn listed_names(&self) -> Vec<String> {
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

    pub(super) fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            OutRecord::Message(m) => serde_json::to_writer(out, m),
            OutRecord::Segment(s) => serde_json::to_writer(out, s),
            OutRecord::Task(t) => serde_json::to_writer(out, t),
        }
    }
}

pub(super) fn build_record(context: &SessionPass, item: &Planned, seed: u64) -> OutRecord {
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
pub(super) fn render_turn(turn: &Turn, result_chars: usize) -> String {
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
