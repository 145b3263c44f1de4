//! Cold material: finished work nobody talks about any more, and its summary.
//!
//! A **cold task** was completed more than `cold_after_turns` assistant turns ago
//! and its subject is not mentioned in the last `recent_turns` turns. A **cold
//! segment** (for sessions that use no task tools) is a closed stretch of
//! conversation on one topic, with at least `min_segment_messages` messages,
//! that ended `cold_after_turns` or more turns ago and whose key terms the last
//! turns do not mention. Each becomes a rule-based summary record (files
//! modified, commands run, outcomes and decisions, errors met, turn range) with
//! a deterministic id and content, so writing it again changes nothing.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::session::{cut, Activity, SegmentState, SessionState, TaskState};
use super::terms::{mentions, terms};
use super::HookSettings;
use crate::context::tokens::estimate;

/// What the hooks write in a record's `source` field: a rule-based summary, to
/// be replaced by the agent's own segment.
pub const HOOK_SOURCE: &str = "knowledge-db hook post-tool-use";

/// A cold item found in a session: its record, and a one-line description.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdItem {
    /// The store id of the record (`session:task_id` or the segment id).
    pub id: String,
    /// `task` or `segment`.
    pub kind: &'static str,
    /// Subject or topic.
    pub title: String,
    /// The assistant turn the item starts at.
    pub start_turn: u64,
    /// The assistant turn the item ends at.
    pub end_turn: u64,
    /// Messages in the item.
    pub message_count: u64,
    /// Estimated tokens of its messages.
    pub tokens: u64,
    /// The rule-based summary record (JSON, as `add` reads it), stored under `id`.
    pub record: Value,
}

/// Whether any of the recent turns mentions `key_terms`.
fn mentioned_recently(state: &SessionState, key_terms: &[String], recent_turns: usize) -> bool {
    state.recent.iter().rev().take(recent_turns).any(|turn| {
        let set: BTreeSet<&str> = turn.terms.iter().map(String::as_str).collect();
        mentions(&set, key_terms)
    })
}

/// Completed tasks that went cold and have no summary yet.
pub fn cold_tasks<'a>(state: &'a SessionState, settings: &HookSettings) -> Vec<&'a TaskState> {
    let now = state.turn();
    state
        .tasks
        .iter()
        .filter(|t| !t.summarized && t.status == "completed")
        .filter(|t| {
            t.completed_assistant_turn
                .is_some_and(|done| now.saturating_sub(done) > settings.cold_after_turns)
        })
        .filter(|t| {
            let key = terms(&t.subject, 12);
            !mentioned_recently(state, &key, settings.recent_turns)
        })
        .collect()
}

/// Closed topic segments that went cold (sessions without task tools only).
pub fn cold_segments<'a>(
    state: &'a SessionState,
    settings: &HookSettings,
) -> Vec<&'a SegmentState> {
    if state.uses_task_tools {
        return Vec::new();
    }
    let now = state.turn();
    state
        .closed_segments
        .iter()
        .filter(|s| s.activity.messages >= settings.min_segment_messages)
        .filter(|s| now.saturating_sub(s.activity.end_assistant_turn) >= settings.cold_after_turns)
        .filter(|s| !s.key_terms.is_empty())
        .filter(|s| !mentioned_recently(state, &s.key_terms, settings.recent_turns))
        .collect()
}

/// The id of a segment's record: session and assistant-turn range, stable.
pub fn segment_id(session_id: &str, segment: &SegmentState) -> String {
    format!(
        "{session_id}:segment:{}-{}",
        segment.activity.start_assistant_turn, segment.activity.end_assistant_turn
    )
}

/// How much of what a reader keeps an item holds, 0..1: a finished item starts
/// at 0.2; the files it changed add up to 0.3 (three or more files), its
/// decisions up to 0.2 (two or more), the errors it met and got past 0.15, a
/// reported outcome 0.15. Two decimals. Higher means more worth recalling.
pub fn relevance_score(a: &Activity) -> f64 {
    let share = |n: usize, full: usize| (n as f64 / full as f64).min(1.0);
    let score = 0.2
        + 0.3 * share(a.files_modified.len(), 3)
        + 0.2 * share(a.decisions.len(), 2)
        + 0.15 * share(a.errors.len(), 1)
        + 0.15 * share(a.outcomes.len(), 1);
    (score * 100.0).round() / 100.0
}

/// The cold task's summary record (kind `task`). Its turns are assistant turns,
/// from when it was marked in progress to when it was marked completed.
pub fn task_item(state: &SessionState, task: &TaskState, namespace: &str) -> ColdItem {
    let a = &task.activity;
    let start = task
        .started_assistant_turn
        .unwrap_or(a.start_assistant_turn);
    let end = task
        .completed_assistant_turn
        .unwrap_or(a.end_assistant_turn)
        .max(start);
    let record = json!({
        "kind": "task",
        "namespace": namespace,
        "session_id": state.session_id,
        "task_id": task.id,
        "subject": task.subject,
        "description": task.description,
        "status": "completed",
        "start_turn": start,
        "end_turn": end,
        "prompt_turns": [a.start_turn, a.end_turn.max(a.start_turn)],
        "compressed_at": task.completed_at.clone().or_else(|| a.last_timestamp.clone()),
        "files_modified": a.files_modified,
        "commands_run": a.commands,
        "key_outcomes": a.outcomes,
        "key_decisions": a.decisions,
        "errors_resolved": a.errors,
        "message_count": a.messages,
        "original_tokens": a.tokens,
        "relevance_score": relevance_score(a),
        "task_source": task.source,
        "source": HOOK_SOURCE,
    });
    ColdItem {
        id: format!("{}:{}", state.session_id, task.id),
        kind: "task",
        title: task.subject.clone(),
        start_turn: start,
        end_turn: end,
        message_count: a.messages,
        tokens: a.tokens,
        record,
    }
}

/// The cold segment's summary record (kind `segment`), turns in assistant turns.
pub fn segment_item(state: &SessionState, segment: &SegmentState, namespace: &str) -> ColdItem {
    let a = &segment.activity;
    let topic = if segment.first_prompt.trim().is_empty() {
        segment.key_terms.join(", ")
    } else {
        segment.first_prompt.clone()
    };
    let (start, end) = (
        a.start_assistant_turn,
        a.end_assistant_turn.max(a.start_assistant_turn),
    );
    let content = summary_text(&topic, a, &segment.key_terms);
    let compressed_tokens = estimate(&content) as u64;
    let id = segment_id(&state.session_id, segment);
    let record = json!({
        "kind": "segment",
        "namespace": namespace,
        "segment_id": id,
        "topic": topic,
        "session_id": state.session_id,
        "start_turn": start,
        "end_turn": end,
        "prompt_turns": [a.start_turn, a.end_turn.max(a.start_turn)],
        "original_tokens": a.tokens,
        "compressed_tokens": compressed_tokens,
        "compression_ratio": ratio(a.tokens, compressed_tokens),
        "compressed_at": a.last_timestamp,
        "relevance_score": relevance_score(a),
        "message_count": a.messages,
        "compressed_content": content,
        "key_decisions": a.decisions,
        "key_files": a.files_modified,
        "key_outcomes": a.outcomes,
        "commands_run": a.commands,
        "errors_resolved": a.errors,
        "key_terms": segment.key_terms,
        "metadata": {
            "contains_code": !a.files_modified.is_empty(),
            "contains_errors": !a.errors.is_empty(),
            "task_completed": false,
        },
        "source": HOOK_SOURCE,
    });
    ColdItem {
        id,
        kind: "segment",
        title: topic,
        start_turn: start,
        end_turn: end,
        message_count: a.messages,
        tokens: a.tokens,
        record,
    }
}

/// `original / compressed`, one decimal; 0 when nothing was compressed.
pub fn ratio(original: u64, compressed: u64) -> f64 {
    if compressed == 0 {
        0.0
    } else {
        (original as f64 / compressed as f64 * 10.0).round() / 10.0
    }
}

/// The rule-based summary of a stretch of work, as prose for search and for the model.
fn summary_text(topic: &str, a: &Activity, key_terms: &[String]) -> String {
    let mut parts = vec![format!(
        "{} (turns {}-{}, {} messages).",
        topic.trim_end_matches('.'),
        a.start_assistant_turn,
        a.end_assistant_turn.max(a.start_assistant_turn),
        a.messages
    )];
    if !a.files_modified.is_empty() {
        parts.push(format!("Modified: {}.", a.files_modified.join(", ")));
    }
    if !a.commands.is_empty() {
        let commands: Vec<String> = a.commands.iter().take(8).map(|c| cut(c, 120)).collect();
        parts.push(format!("Ran: {}.", commands.join("; ")));
    }
    if !a.errors.is_empty() {
        parts.push(format!("Errors met: {}.", a.errors.join("; ")));
    }
    if !a.decisions.is_empty() {
        parts.push(format!("Decisions: {}", a.decisions.join(" ")));
    }
    if !a.outcomes.is_empty() {
        parts.push(format!("Outcome: {}", a.outcomes.join(" ")));
    }
    if !key_terms.is_empty() {
        parts.push(format!("Key terms: {}.", key_terms.join(", ")));
    }
    parts.join(" ")
}

/// Every cold item of the session, tasks first.
pub fn find(state: &SessionState, settings: &HookSettings, namespace: &str) -> Vec<ColdItem> {
    let mut items: Vec<ColdItem> = cold_tasks(state, settings)
        .into_iter()
        .map(|t| task_item(state, t, namespace))
        .collect();
    items.extend(
        cold_segments(state, settings)
            .into_iter()
            .map(|s| segment_item(state, s, namespace)),
    );
    // A summary belongs to its session's project, as its messages do.
    if let Some(cwd) = &state.cwd {
        let project = crate::record::project::project_of(std::path::Path::new(cwd));
        for item in &mut items {
            item.record["project"] = json!(project);
        }
    }
    items
}

/// The summary of every completed task and every segment of the session, cold or
/// not (the open segment is closed first): what the summaries would say if the
/// session ended now. The quality test scores these against labels.
pub fn all_items(state: &mut SessionState, namespace: &str) -> Vec<ColdItem> {
    state.close_segment();
    let mut items: Vec<ColdItem> = state
        .tasks
        .iter()
        .filter(|t| t.status == "completed")
        .map(|t| task_item(state, t, namespace))
        .collect();
    items.extend(
        state
            .closed_segments
            .iter()
            .map(|s| segment_item(state, s, namespace)),
    );
    items
}

/// Marks items as summarized in the state (after they were stored): tasks are
/// flagged and their details dropped, segments removed.
pub fn mark_summarized(state: &mut SessionState, items: &[ColdItem]) {
    let session = state.session_id.clone();
    for task in &mut state.tasks {
        if items
            .iter()
            .any(|i| i.kind == "task" && i.id == format!("{session}:{}", task.id))
        {
            task.summarized = true;
            task.activity = Activity {
                start_turn: task.activity.start_turn,
                end_turn: task.activity.end_turn,
                ..Activity::default()
            };
        }
    }
    state.closed_segments.retain(|s| {
        !items
            .iter()
            .any(|i| i.kind == "segment" && i.id == segment_id(&session, s))
    });
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::transcript::{read_slice, Format, ReadFrom};

    fn settings() -> HookSettings {
        HookSettings::default()
    }

    /// A Claude Code transcript: lines built from a compact script.
    struct Script {
        lines: Vec<String>,
        n: usize,
    }

    impl Script {
        fn new() -> Script {
            Script {
                lines: Vec::new(),
                n: 0,
            }
        }

        fn next(&mut self) -> usize {
            self.n += 1;
            self.n
        }

        fn prompt(&mut self, text: &str) -> &mut Self {
            let n = self.next();
            self.lines.push(json!({"type":"user","sessionId":"s1","uuid":format!("u{n}"),"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":text}}).to_string());
            self
        }

        fn say(&mut self, text: &str) -> &mut Self {
            let n = self.next();
            self.lines.push(json!({"type":"assistant","sessionId":"s1","uuid":format!("a{n}"),"requestId":format!("r{n}"),"timestamp":"2026-01-01T00:00:00Z","message":{"id":format!("m{n}"),"role":"assistant","content":[{"type":"text","text":text}],"usage":{"input_tokens":10,"cache_read_input_tokens":1000,"output_tokens":5}}}).to_string());
            self
        }

        fn tool(
            &mut self,
            name: &str,
            input: Value,
            result: &str,
            tool_use_result: Value,
        ) -> &mut Self {
            let n = self.next();
            let id = format!("toolu_{n}");
            self.lines.push(json!({"type":"assistant","sessionId":"s1","uuid":format!("a{n}"),"requestId":format!("r{n}"),"message":{"id":format!("m{n}"),"role":"assistant","content":[{"type":"tool_use","id":id,"name":name,"input":input}]}}).to_string());
            self.lines.push(json!({"type":"user","sessionId":"s1","uuid":format!("t{n}"),"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":result}]},"toolUseResult":tool_use_result}).to_string());
            self
        }

        fn state(&self) -> SessionState {
            self.state_in(None)
        }

        /// The state of a session run in the project folder `cwd`.
        fn state_in(&self, cwd: Option<&str>) -> SessionState {
            let text = self.lines.join("\n") + "\n";
            let t = read_slice(
                Path::new("s1.jsonl"),
                text.as_bytes(),
                Some(Format::ClaudeCode),
                ReadFrom::default(),
            )
            .expect("parse");
            let mut state = SessionState::new("s1", "s1.jsonl".into());
            state.cwd = cwd.map(str::to_string);
            state.observe(&t.messages, 20);
            state
        }
    }

    fn create(s: &mut Script, id: &str, subject: &str) {
        s.tool(
            "TaskCreate",
            json!({"subject": subject, "description": "d"}),
            &format!("Task #{id} created successfully: {subject}"),
            json!({"task":{"id":id,"subject":subject}}),
        );
    }

    fn update(s: &mut Script, id: &str, status: &str) {
        s.tool(
            "TaskUpdate",
            json!({"taskId": id, "status": status}),
            "Updated",
            json!({}),
        );
    }

    fn filler(s: &mut Script, n: usize) {
        for i in 0..n {
            s.say(&format!("Working on the parser module, step {i}."));
        }
    }

    #[test]
    fn completed_task_goes_cold_after_twenty_quiet_turns() {
        let mut s = Script::new();
        s.prompt("Add retry with backoff to the HTTP client");
        create(&mut s, "1", "Add retry with exponential backoff");
        update(&mut s, "1", "in_progress");
        s.tool(
            "Edit",
            json!({"file_path": "src/client.rs", "old_string": "a", "new_string": "b"}),
            "ok",
            json!({}),
        );
        s.tool(
            "Bash",
            json!({"command": "cargo test client"}),
            "error[E0502]: cannot borrow",
            json!({}),
        );
        s.say("Decided to use a jittered backoff instead of a fixed delay. Tests pass now.");
        update(&mut s, "1", "completed");
        filler(&mut s, 15);
        let state = s.state();
        assert_eq!(state.tasks.len(), 1);
        assert_eq!(state.tasks[0].status, "completed");
        assert!(
            cold_tasks(&state, &settings()).is_empty(),
            "only 15 turns since completion"
        );

        filler(&mut s, 10);
        let state = s.state();
        let cold = cold_tasks(&state, &settings());
        assert_eq!(cold.len(), 1);
        let item = task_item(&state, cold[0], "default");
        assert_eq!(item.id, "s1:1");
        assert_eq!(item.record["files_modified"], json!(["src/client.rs"]));
        assert_eq!(item.record["commands_run"], json!(["cargo test client"]));
        assert!(item.record["key_decisions"][0]
            .as_str()
            .unwrap()
            .contains("jittered backoff"));
        // Segments are not looked for in a session that uses task tools.
        assert!(cold_segments(&state, &settings()).is_empty());
    }

    #[test]
    fn a_task_still_mentioned_is_not_cold() {
        let mut s = Script::new();
        s.prompt("Add retry with backoff");
        create(&mut s, "1", "Add retry with exponential backoff");
        update(&mut s, "1", "in_progress");
        update(&mut s, "1", "completed");
        filler(&mut s, 25);
        s.say("The exponential backoff retry from before needs a cap.");
        let state = s.state();
        assert!(cold_tasks(&state, &settings()).is_empty());
    }

    #[test]
    fn failed_updates_and_unfinished_tasks_are_ignored() {
        let mut s = Script::new();
        s.prompt("work");
        create(&mut s, "1", "Write the migration");
        // An update whose result is an error does not complete the task.
        let n = s.next();
        s.lines.push(json!({"type":"assistant","sessionId":"s1","uuid":format!("a{n}"),"message":{"id":format!("m{n}"),"role":"assistant","content":[{"type":"tool_use","id":"tx","name":"TaskUpdate","input":{"id":"1","status":"completed"}}]}}).to_string());
        s.lines.push(json!({"type":"user","sessionId":"s1","uuid":"tr","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tx","content":"Error: task 9 not found","is_error":true}]}}).to_string());
        filler(&mut s, 30);
        let state = s.state();
        assert_eq!(state.tasks[0].status, "pending");
        assert!(cold_tasks(&state, &settings()).is_empty());
    }

    #[test]
    fn todowrite_items_are_tasks() {
        let mut s = Script::new();
        s.prompt("work");
        s.tool("TodoWrite", json!({"todos":[{"content":"Rename the config loader","status":"in_progress","activeForm":"x"},{"content":"Write docs","status":"pending","activeForm":"y"}]}), "ok", json!({}));
        s.tool(
            "Write",
            json!({"file_path": "src/loader.rs", "content": "fn main() {}"}),
            "ok",
            json!({}),
        );
        s.tool("TodoWrite", json!({"todos":[{"content":"Rename the config loader","status":"completed","activeForm":"x"},{"content":"Write docs","status":"in_progress","activeForm":"y"}]}), "ok", json!({}));
        filler(&mut s, 22);
        let state = s.state();
        let cold = cold_tasks(&state, &settings());
        assert_eq!(cold.len(), 1);
        assert_eq!(cold[0].subject, "Rename the config loader");
        assert_eq!(cold[0].activity.files_modified, ["src/loader.rs"]);
        assert_eq!(state.active_tasks().count(), 1);
    }

    #[test]
    fn a_finished_topic_becomes_a_cold_segment() {
        let mut s = Script::new();
        s.prompt("The OAuth token refresh fails after one hour in oauth2.py");
        for i in 0..6 {
            s.say(&format!(
                "Looking at the oauth2.py refresh token expiry, attempt {i}."
            ));
        }
        s.tool(
            "Edit",
            json!({"file_path": "src/auth/oauth2.py", "old_string": "a", "new_string": "b"}),
            "ok",
            json!({}),
        );
        s.prompt("Now let us speed up the database migrations with batched inserts");
        filler(&mut s, 10);
        let state = s.state();
        assert_eq!(state.closed_segments.len(), 1);
        assert!(
            cold_segments(&state, &settings()).is_empty(),
            "ended 11 turns ago"
        );
        filler(&mut s, 12);
        let state = s.state();
        let cold = cold_segments(&state, &settings());
        assert_eq!(cold.len(), 1, "{:?}", state.closed_segments);
        let item = segment_item(&state, cold[0], "default");
        assert_eq!(item.record["key_files"], json!(["src/auth/oauth2.py"]));
        assert!(item.record["topic"].as_str().unwrap().contains("OAuth"));
        assert!(item.record["key_terms"]
            .as_array()
            .unwrap()
            .contains(&json!("oauth2.py")));
        assert_eq!(item.id, segment_id("s1", cold[0]));
    }

    #[test]
    fn split_responses_count_as_one_turn() {
        let line = |part: &str| {
            json!({"type":"assistant","sessionId":"s1","uuid":part,"requestId":"r1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":part}]}}).to_string()
        };
        let first = line("first half") + "\n";
        let second = line("second half") + "\n";
        let mut state = SessionState::new("s1", "x".into());
        for chunk in [&first, &second] {
            let t = read_slice(
                Path::new("x"),
                chunk.as_bytes(),
                Some(Format::ClaudeCode),
                ReadFrom::default(),
            )
            .unwrap();
            state.observe(&t.messages, 20);
        }
        assert_eq!(state.turn(), 1);
    }

    #[test]
    fn tasks_of_one_prompt_get_assistant_turn_ranges() {
        // One prompt, several tasks: in conversation turns every task is 0-0,
        // which says nothing; the records count assistant turns.
        let mut s = Script::new();
        s.prompt("Implement the plan");
        create(&mut s, "1", "Add the parser");
        create(&mut s, "2", "Add the printer");
        update(&mut s, "1", "in_progress");
        filler(&mut s, 3);
        update(&mut s, "1", "completed");
        update(&mut s, "2", "in_progress");
        filler(&mut s, 4);
        update(&mut s, "2", "completed");
        let mut state = s.state();
        let items: Vec<ColdItem> = all_items(&mut state, "default")
            .into_iter()
            .filter(|i| i.kind == "task")
            .collect();
        let turns: Vec<(u64, u64)> = items.iter().map(|i| (i.start_turn, i.end_turn)).collect();
        assert_eq!(turns, [(3, 7), (8, 13)]);
        assert_eq!(items[0].record["start_turn"], 3);
        assert_eq!(items[0].record["prompt_turns"], json!([0, 0]));
        assert_eq!(state.turn_lines.len() as u64, state.turn());
    }

    #[test]
    fn a_task_without_a_stated_outcome_does_not_restate_its_subject() {
        let mut s = Script::new();
        s.prompt("work");
        create(&mut s, "1", "Add retry with exponential backoff");
        update(&mut s, "1", "in_progress");
        s.say("Now let me look at the client.");
        update(&mut s, "1", "completed");
        let mut state = s.state();
        let item = &all_items(&mut state, "default")[0];
        assert_eq!(item.record["key_outcomes"], json!([]));
        assert!(!item.record.to_string().contains("Completed: Add retry"));
    }

    #[test]
    fn a_task_completed_without_being_started_gets_the_work_since_the_last_change() {
        let mut s = Script::new();
        s.prompt("work");
        s.tool("TodoWrite", json!({"todos":[{"content":"Parse the config","status":"pending","activeForm":"x"},{"content":"Write docs","status":"pending","activeForm":"y"}]}), "ok", json!({}));
        filler(&mut s, 2);
        s.tool(
            "Edit",
            json!({"file_path": "src/config.rs", "old_string": "a", "new_string": "b"}),
            "ok",
            json!({}),
        );
        s.tool("TodoWrite", json!({"todos":[{"content":"Parse the config","status":"completed","activeForm":"x"},{"content":"Write docs","status":"pending","activeForm":"y"}]}), "ok", json!({}));
        let mut state = s.state();
        let item = &all_items(&mut state, "default")[0];
        assert_eq!(item.record["files_modified"], json!(["src/config.rs"]));
        assert_eq!((item.start_turn, item.end_turn), (1, 5));
    }

    #[test]
    fn a_renamed_todo_keeps_its_work_and_a_dropped_one_goes() {
        let mut s = Script::new();
        s.prompt("work");
        s.tool("TodoWrite", json!({"todos":[{"content":"Update paths to validate","status":"in_progress","activeForm":"x"},{"content":"Drop me","status":"pending","activeForm":"y"}]}), "ok", json!({}));
        s.tool(
            "Edit",
            json!({"file_path": "src/paths.rs", "old_string": "a", "new_string": "b"}),
            "ok",
            json!({}),
        );
        s.tool("TodoWrite", json!({"todos":[{"content":"Update paths to use MustCheckpointID","status":"in_progress","activeForm":"x"}]}), "ok", json!({}));
        s.tool("TodoWrite", json!({"todos":[{"content":"Update paths to use MustCheckpointID","status":"completed","activeForm":"x"}]}), "ok", json!({}));
        let state = s.state();
        assert_eq!(state.tasks.len(), 1, "{:?}", state.tasks);
        assert_eq!(
            state.tasks[0].subject,
            "Update paths to use MustCheckpointID"
        );
        assert_eq!(state.tasks[0].activity.files_modified, ["src/paths.rs"]);
        assert_eq!(state.tasks[0].started_assistant_turn, Some(1));
    }

    #[test]
    fn a_long_editing_topic_goes_cold_with_its_files_despite_the_project_path() {
        // Every path holds the project folder's words (`soph`, `devenv`, `cli`);
        // as key terms they would make every topic look alive.
        let root = "/Users/soph/Work/entire/devenv/cli";
        let mut s = Script::new();
        s.prompt("Fix the stale session state file lookup in session_state.go");
        for i in 0..20 {
            s.tool(
                "Edit",
                json!({"file_path": format!("{root}/cmd/entire/cli/strategy/session_state.go"), "old_string": "a", "new_string": format!("b{i}")}),
                "ok",
                json!({}),
            );
            s.say("Updated the session_state lookup to reuse the stable state file.");
        }
        s.prompt("Now rename the hook handlers in hooks_claudecode_handlers.go for consistency");
        for i in 0..25 {
            s.tool(
                "Edit",
                json!({"file_path": format!("{root}/cmd/entire/cli/hooks_claudecode_handlers.go"), "old_string": "a", "new_string": format!("c{i}")}),
                "ok",
                json!({}),
            );
        }
        let state = s.state_in(Some(root));
        let cold = cold_segments(&state, &settings());
        assert_eq!(cold.len(), 1, "{:?}", state.closed_segments);
        assert!(!cold[0]
            .key_terms
            .iter()
            .any(|t| t == "soph" || t == "devenv"));
        let item = segment_item(&state, cold[0], "default");
        assert_eq!(
            item.record["key_files"],
            json!(["cmd/entire/cli/strategy/session_state.go"])
        );
        assert_eq!((item.start_turn, item.end_turn), (1, 40));
        assert_eq!(item.record["message_count"], 61);
        let score = item.record["relevance_score"].as_f64().unwrap();
        assert!((0.2..=1.0).contains(&score), "{score}");
    }

    #[test]
    fn relevance_grows_with_what_a_reader_keeps() {
        let empty = Activity::default();
        assert_eq!(relevance_score(&empty), 0.2);
        let full = Activity {
            files_modified: vec!["a".into(), "b".into(), "c".into()],
            decisions: vec!["d1".into(), "d2".into()],
            errors: vec!["e".into()],
            outcomes: vec!["o".into()],
            ..Activity::default()
        };
        assert_eq!(relevance_score(&full), 1.0);
    }
}
