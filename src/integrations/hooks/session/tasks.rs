//! The session's tasks, as the agent tracks them: TaskCreate and TaskUpdate
//! calls (applied when their results arrive) and TodoWrite lists (applied at
//! once, an item renamed in place kept as the same task). A task's work is the
//! activity seen while it was in progress.

use serde_json::Value;

use super::{Activity, PendingCreate, PendingUpdate, SessionState, TaskState};
use crate::transcript::{Block, Message};

impl SessionState {
    /// TaskCreate/TaskUpdate calls wait for their results; TodoWrite applies at once.
    pub(super) fn track_tasks(&mut self, message: &Message, turn: u64, timestamp: Option<&String>) {
        for block in &message.content {
            match block {
                Block::ToolUse { id, name, input } => match name.as_str() {
                    "TaskCreate" => {
                        self.uses_task_tools = true;
                        self.pending_creates.insert(
                            id.clone(),
                            PendingCreate {
                                subject: str_field(input, "subject"),
                                description: str_field(input, "description"),
                                assistant_turn: self.assistant_turns,
                                turn,
                                timestamp: timestamp.cloned(),
                            },
                        );
                    }
                    "TaskUpdate" => {
                        self.uses_task_tools = true;
                        let task_id = ["taskId", "id", "task_id"]
                            .iter()
                            .find_map(|k| input.get(*k).and_then(id_text));
                        if let Some(task_id) = task_id {
                            self.pending_updates.insert(
                                id.clone(),
                                PendingUpdate {
                                    task_id,
                                    status: input
                                        .get("status")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    subject: input
                                        .get("subject")
                                        .and_then(Value::as_str)
                                        .map(str::to_string),
                                    assistant_turn: self.assistant_turns,
                                    timestamp: timestamp.cloned(),
                                },
                            );
                        }
                    }
                    "TodoWrite" => {
                        self.uses_task_tools = true;
                        self.apply_todos(input, turn, timestamp);
                    }
                    _ => {}
                },
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                    ..
                } => {
                    if let Some(create) = self.pending_creates.remove(tool_use_id) {
                        if !is_error {
                            let id = created_task_id(message.tool_use_result.as_ref(), content);
                            if let Some(id) = id {
                                self.create_task(id, create);
                            }
                        }
                    } else if let Some(update) = self.pending_updates.remove(tool_use_id) {
                        if !is_error {
                            self.apply_update(update);
                        }
                    }
                }
                _ => {}
            }
        }
        // Calls whose result never came (an interrupted turn) are forgotten eventually.
        let horizon = self.assistant_turns.saturating_sub(50);
        self.pending_creates
            .retain(|_, p| p.assistant_turn >= horizon);
        self.pending_updates
            .retain(|_, p| p.assistant_turn >= horizon);
    }

    fn create_task(&mut self, id: String, create: PendingCreate) {
        if self.tasks.iter().any(|t| t.id == id) {
            return;
        }
        self.tasks.push(TaskState {
            id,
            subject: create.subject,
            description: create.description,
            status: "pending".into(),
            source: "TaskCreate".into(),
            created_assistant_turn: create.assistant_turn,
            started_assistant_turn: None,
            completed_assistant_turn: None,
            completed_at: None,
            activity: Activity::starting(
                create.turn,
                create.assistant_turn,
                create.timestamp.as_ref(),
            ),
            summarized: false,
        });
        self.task_list_changed(create.timestamp.as_ref());
    }

    fn apply_update(&mut self, update: PendingUpdate) {
        if update.status.as_deref() == Some("deleted") {
            self.tasks
                .retain(|t| t.id != update.task_id || t.summarized);
            return;
        }
        let now = self.now();
        let since = self.since_task_change.clone();
        let Some(task) = self.tasks.iter_mut().find(|t| t.id == update.task_id) else {
            return;
        };
        if let Some(subject) = update.subject.filter(|s| !s.trim().is_empty()) {
            task.subject = subject;
        }
        if let Some(status) = update.status {
            if set_status(task, &status, now, update.timestamp.as_ref(), &since) {
                self.task_list_changed(update.timestamp.as_ref());
            }
        }
    }

    /// A TodoWrite call: the whole list as it is now. An item whose text changed
    /// in place (same position, old text gone) is the same task renamed; items
    /// dropped from the list before completion are gone.
    fn apply_todos(&mut self, input: &Value, _turn: u64, timestamp: Option<&String>) {
        let Some(todos) = input.get("todos").and_then(Value::as_array) else {
            return;
        };
        let list: Vec<(String, String, String)> = todos
            .iter()
            .map(|todo| (str_field(todo, "content"), str_field(todo, "status")))
            .filter(|(content, _)| !content.trim().is_empty())
            .map(|(content, status)| (todo_id(&content), content, status))
            .collect();
        let listed = |id: &str| list.iter().any(|(i, _, _)| i == id);
        let now = self.now();
        let mut changed = false;
        for (position, (id, content, status)) in list.iter().enumerate() {
            if !self.tasks.iter().any(|t| &t.id == id) {
                let renamed = self
                    .todo_order
                    .get(position)
                    .filter(|old| !listed(old))
                    .and_then(|old| {
                        self.tasks
                            .iter_mut()
                            .find(|t| &t.id == old && t.status != "completed" && !t.summarized)
                    });
                match renamed {
                    Some(task) => {
                        task.id = id.clone();
                        task.subject = content.clone();
                    }
                    None => {
                        self.tasks.push(TaskState {
                            id: id.clone(),
                            subject: content.clone(),
                            description: String::new(),
                            status: "pending".into(),
                            source: "TodoWrite".into(),
                            created_assistant_turn: now.assistant_turn,
                            started_assistant_turn: None,
                            completed_assistant_turn: None,
                            completed_at: None,
                            activity: Activity::starting(now.turn, now.assistant_turn, timestamp),
                            summarized: false,
                        });
                        changed = true;
                    }
                }
            }
            let since = self.since_task_change.clone();
            if let Some(task) = self.tasks.iter_mut().find(|t| &t.id == id) {
                changed |= set_status(task, status, now, timestamp, &since);
            }
        }
        let before = self.tasks.len();
        self.tasks.retain(|t| {
            t.source != "TodoWrite" || t.summarized || t.status == "completed" || listed(&t.id)
        });
        changed |= self.tasks.len() != before;
        self.todo_order = list.into_iter().map(|(id, _, _)| id).collect();
        if changed {
            self.task_list_changed(timestamp);
        }
    }

    /// The task list changed: work from here on belongs to what comes next.
    fn task_list_changed(&mut self, timestamp: Option<&String>) {
        let now = self.now();
        self.since_task_change = Activity::starting(now.turn, now.assistant_turn, timestamp);
    }

    /// The conversation turn and assistant turn now.
    fn now(&self) -> Now {
        Now {
            turn: self.prompts.saturating_sub(1),
            assistant_turn: self.assistant_turns,
        }
    }

    /// Tasks not yet completed.
    pub fn active_tasks(&self) -> impl Iterator<Item = &TaskState> {
        self.tasks
            .iter()
            .filter(|t| t.status == "pending" || t.status == "in_progress")
    }
}

/// A point in the session: conversation turn and assistant turn.
#[derive(Debug, Clone, Copy)]
struct Now {
    turn: u64,
    assistant_turn: u64,
}

/// Sets a task's status; returns whether it changed. A task's work starts when
/// it is first marked in progress; one completed without that gets the work
/// done since the task list last changed (`since`).
fn set_status(
    task: &mut TaskState,
    status: &str,
    now: Now,
    timestamp: Option<&String>,
    since: &Activity,
) -> bool {
    if status.is_empty() || task.status == status {
        return false;
    }
    task.status = status.to_string();
    match status {
        "in_progress" => {
            if task.started_assistant_turn.is_none() {
                task.started_assistant_turn = Some(now.assistant_turn);
                task.activity = Activity::starting(now.turn, now.assistant_turn, timestamp);
            }
            task.completed_assistant_turn = None;
        }
        "completed" => {
            if task.started_assistant_turn.is_none() {
                task.started_assistant_turn = Some(since.start_assistant_turn);
                task.activity = since.clone();
            }
            task.completed_assistant_turn = Some(now.assistant_turn);
            task.completed_at = timestamp
                .cloned()
                .or_else(|| task.activity.last_timestamp.clone());
            task.activity.end_assistant_turn =
                task.activity.end_assistant_turn.max(now.assistant_turn);
        }
        _ => task.completed_assistant_turn = None,
    }
    true
}

/// The stable id of a TodoWrite item (it has none of its own): a hash of its text.
pub fn todo_id(content: &str) -> String {
    format!(
        "todo-{:08x}",
        xxhash_rust::xxh3::xxh3_64(content.trim().as_bytes()) as u32
    )
}

/// The id TaskCreate gave: `toolUseResult.task.id`, else "Task #N" in the result text.
fn created_task_id(result: Option<&Value>, content: &str) -> Option<String> {
    if let Some(id) = result
        .and_then(|r| r.get("task"))
        .and_then(|t| t.get("id"))
        .and_then(id_text)
    {
        return Some(id);
    }
    let rest = &content[content.find("Task #")? + "Task #".len()..];
    let digits: String = rest
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    (!digits.is_empty()).then_some(digits)
}

/// An id given as a string or a number.
fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn str_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}
