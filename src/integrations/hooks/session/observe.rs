//! How one message of the transcript folds into a [`SessionState`]: the
//! context it uses, the turns it starts, and what it did (files changed,
//! commands run, errors, outcomes, decisions), credited to every stretch of
//! work it belongs to: the tasks in progress, the open topic segment, and the
//! work since the task list last changed. Every list is capped.

use std::collections::BTreeMap;

use serde_json::Value;

use super::segments::trim_counts;
use super::{
    cut, push_capped, push_latest, Activity, OpenCall, SegmentState, SessionState, TurnTerms,
};
use crate::context::tokens::estimate;
use crate::integrations::hooks::extract::{self, project_path, SNIPPET_CHARS};
use crate::integrations::hooks::terms::{terms, MAX_TERMS_PER_TURN};
use crate::transcript::{Block, Message, Role};

/// Tools whose `file_path` is a file the agent changed.
const EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];
/// Caps of the running lists.
const MAX_FILES: usize = 30;
const MAX_COMMANDS: usize = 15;
const MAX_ERRORS: usize = 10;
const MAX_OUTCOMES: usize = 3;
const MAX_DECISIONS: usize = 8;
/// Tool calls remembered until their result arrives.
const MAX_OPEN_CALLS: usize = 64;

impl SessionState {
    pub(super) fn observe_one(&mut self, message: &Message, recent_turns: usize) {
        // The rest of an API response whose first lines an earlier call read: it
        // is the same message, with the time the response started (as a whole read
        // of the file would give it).
        let continues = message.role == Role::Assistant
            && message.response_id.is_some()
            && message.response_id == self.last_response_id;
        let timestamp = if continues {
            self.response_timestamp.clone()
        } else {
            message.timestamp.clone()
        };
        if timestamp.is_some() {
            self.last_timestamp.clone_from(&timestamp);
        }
        if message.is_compact_boundary {
            self.compacted_turn = Some(message.turn_index);
            // Context starts over: usage resets, and a topic cannot span the cut.
            self.usage_tokens = None;
            self.estimated_tokens = 0;
            self.close_segment();
            return;
        }
        let text = message.text();
        let overhead = if continues {
            0
        } else {
            crate::context::tokens::MESSAGE_OVERHEAD as u64
        };
        let tokens = estimate(&text) as u64 + overhead;
        self.estimated_tokens += tokens;
        if message.is_compact_summary {
            return;
        }
        if message.is_prompt() {
            self.prompts += 1;
            self.note_turn_start(self.assistant_turns + 1, message.line);
            self.on_prompt(message, &text);
        }
        if message.role == Role::Assistant {
            self.on_assistant(message, recent_turns);
            self.note_turn_start(self.assistant_turns, message.line);
        }
        let turn = message.turn_index;
        let assistant_turn = self.assistant_turns;
        let cwd = self.cwd.clone();
        // Who receives this message's activity: the tasks in progress, the open
        // segment, and the work since the task list last changed.
        let mut targets: Vec<&mut Activity> = self
            .tasks
            .iter_mut()
            .filter(|t| t.status == "in_progress")
            .map(|t| &mut t.activity)
            .collect();
        if let Some(segment) = self.open_segment.as_mut() {
            targets.push(&mut segment.activity);
        }
        targets.push(&mut self.since_task_change);
        for activity in targets.iter_mut() {
            activity.messages += u64::from(!continues);
            activity.tokens += tokens;
            activity.end_turn = activity.end_turn.max(turn);
            activity.end_assistant_turn = activity.end_assistant_turn.max(assistant_turn);
            if timestamp.is_some() {
                activity.last_timestamp.clone_from(&timestamp);
            }
        }
        let mut turn_terms: Vec<String> = Vec::new();
        let mut files: Vec<String> = Vec::new();
        let mut errors: Vec<String> = Vec::new();
        let mut decisions: Vec<String> = Vec::new();
        for block in &message.content {
            match block {
                Block::Text { text } if message.role == Role::Assistant => {
                    turn_terms.extend(terms(text, MAX_TERMS_PER_TURN));
                    let outcomes = extract::outcomes(text);
                    decisions.extend(extract::decisions(text));
                    for activity in targets.iter_mut() {
                        for o in &outcomes {
                            push_latest(&mut activity.outcomes, o, MAX_OUTCOMES);
                        }
                    }
                }
                Block::Text { text } => turn_terms.extend(terms(text, MAX_TERMS_PER_TURN)),
                Block::ToolUse { id, name, input } => {
                    turn_terms.extend(terms(&tool_input_words(input), MAX_TERMS_PER_TURN));
                    let command = input
                        .get("command")
                        .and_then(Value::as_str)
                        .map(|c| c.trim().to_string());
                    if let Some(command) = &command {
                        let shown = cut(command, SNIPPET_CHARS);
                        for activity in targets.iter_mut() {
                            push_capped(&mut activity.commands, &shown, MAX_COMMANDS);
                        }
                        if is_test_command(&shown) {
                            push_latest(&mut self.test_commands, &shown, 10);
                        }
                    }
                    let file = EDIT_TOOLS
                        .contains(&name.as_str())
                        .then(|| file_path(input))
                        .flatten()
                        .map(|p| project_path(&p, cwd.as_deref()));
                    self.open_calls.push_back(OpenCall {
                        id: id.clone(),
                        name: name.clone(),
                        file,
                        command: command.filter(|_| name == "Bash"),
                    });
                    while self.open_calls.len() > MAX_OPEN_CALLS {
                        self.open_calls.pop_front();
                    }
                }
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    let call = self
                        .open_calls
                        .iter()
                        .position(|c| &c.id == tool_use_id)
                        .and_then(|i| self.open_calls.remove(i));
                    let shell = call.as_ref().and_then(|c| c.command.as_deref());
                    errors.extend(extract::errors(content, *is_error, shell.is_some()));
                    // An edit counts once it succeeded; a command's writes unless it
                    // never ran (rejected, interrupted).
                    if let Some(file) = call.as_ref().and_then(|c| c.file.clone()) {
                        if !is_error {
                            files.push(file);
                        }
                    }
                    if let Some(command) = shell {
                        if !extract::never_ran(content) {
                            files.extend(
                                extract::shell_written_files(command)
                                    .iter()
                                    .map(|f| project_path(f, cwd.as_deref())),
                            );
                        }
                    }
                }
                _ => {}
            }
        }
        for activity in targets.iter_mut() {
            for file in &files {
                push_latest(&mut activity.files_modified, file, MAX_FILES);
            }
            for error in &errors {
                push_capped(&mut activity.errors, error, MAX_ERRORS);
            }
            for d in &decisions {
                push_capped(&mut activity.decisions, d, MAX_DECISIONS);
            }
        }
        drop(targets);
        for file in &files {
            push_latest(&mut self.modified_files, file, MAX_FILES);
        }
        for error in &errors {
            push_latest(&mut self.errors, error, MAX_ERRORS);
        }
        for d in &decisions {
            push_latest(&mut self.decisions, d, MAX_DECISIONS);
        }
        if let Some(segment) = self.open_segment.as_mut() {
            for term in &turn_terms {
                *segment.term_counts.entry(term.clone()).or_default() += 1;
            }
            trim_counts(&mut segment.term_counts);
        }
        self.add_recent_terms(turn_terms);
        self.track_tasks(message, turn, timestamp.as_ref());
    }

    /// Notes where turn `turn` starts, the first time a message of it is seen.
    fn note_turn_start(&mut self, turn: u64, line: usize) {
        if turn >= 1 && (self.turn_lines.len() as u64) < turn {
            self.turn_lines.push(line as u64);
        }
    }

    fn on_assistant(&mut self, message: &Message, recent_turns: usize) {
        let continues =
            message.response_id.is_some() && message.response_id == self.last_response_id;
        if !continues {
            self.assistant_turns += 1;
            self.recent.push_back(TurnTerms {
                assistant_turn: self.assistant_turns,
                terms: Vec::new(),
            });
            while self.recent.len() > recent_turns {
                self.recent.pop_front();
            }
            if self.open_segment.is_none() {
                self.open_segment = Some(SegmentState {
                    first_prompt: String::new(),
                    activity: Activity::starting(
                        message.turn_index,
                        self.assistant_turns,
                        message.timestamp.as_ref(),
                    ),
                    term_counts: BTreeMap::new(),
                    key_terms: Vec::new(),
                });
            }
        }
        if !continues {
            self.response_timestamp.clone_from(&message.timestamp);
        }
        self.last_response_id.clone_from(&message.response_id);
        if message.model.is_some() {
            self.model.clone_from(&message.model);
        }
        if let Some(usage) = message.usage {
            let tokens = usage.context_tokens() + usage.output_tokens;
            if tokens > 0 {
                self.usage_tokens = Some(tokens);
            }
        }
    }

    fn add_recent_terms(&mut self, new_terms: Vec<String>) {
        if new_terms.is_empty() {
            return;
        }
        if self.recent.is_empty() {
            self.recent.push_back(TurnTerms {
                assistant_turn: self.assistant_turns,
                terms: Vec::new(),
            });
        }
        if let Some(turn) = self.recent.back_mut() {
            for term in new_terms {
                if turn.terms.len() >= MAX_TERMS_PER_TURN {
                    break;
                }
                if !turn.terms.contains(&term) {
                    turn.terms.push(term);
                }
            }
        }
    }
}

fn file_path(input: &Value) -> Option<String> {
    ["file_path", "notebook_path", "path"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty() && p.len() < 1024)
}

/// The words of a tool call that say what it is about: paths, commands,
/// patterns, descriptions; not file contents or edit strings.
fn tool_input_words(input: &Value) -> String {
    let Value::Object(map) = input else {
        return String::new();
    };
    let mut out = String::new();
    for (key, value) in map {
        if matches!(
            key.as_str(),
            "content" | "new_string" | "old_string" | "edits" | "new_source" | "todos"
        ) {
            continue;
        }
        if let Value::String(s) = value {
            out.push_str(&cut(s, 600));
            out.push(' ');
        }
    }
    out
}

pub(super) fn is_test_command(command: &str) -> bool {
    const TESTS: &[&str] = &[
        "cargo test",
        "cargo nextest",
        "pytest",
        "npm test",
        "npm run test",
        "yarn test",
        "pnpm test",
        "bun test",
        "go test",
        "jest",
        "vitest",
        "mvn test",
        "gradle test",
        "make test",
        "rspec",
        "phpunit",
        "ctest",
        "tox",
        "mix test",
        "dotnet test",
    ];
    TESTS.iter().any(|t| command.contains(t))
}
