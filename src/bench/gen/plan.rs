//! Planning: which records a session yields in one pass.
//!
//! One message per turn with content, segment windows and task spans (from the
//! task tools, else windows headed by the user's request), in the 60/25/15 mix
//! kept over the whole pass, ordered as an agent would evict them.

use std::collections::{BTreeSet, HashMap};

use super::rng::{Rng, TAG_PLAN};
use super::{SEGMENTS_PER_60_MESSAGES, SEGMENT_TURNS, TASKS_PER_60_MESSAGES, TASK_TURNS};
use crate::bench::turns::{Session, TaskEvent, Turn};

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Planned {
    Message { turn: usize },
    Segment { start: usize, end: usize },
    Task(TaskPlan),
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct TaskPlan {
    pub(super) task_id: String,
    /// Empty for window tasks: the subject is the user's request.
    pub(super) subject: String,
    pub(super) start: usize,
    pub(super) end: usize,
    pub(super) completed: bool,
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

pub(super) fn plan_pass(sessions: &[Session], pass: usize, seed: u64) -> Vec<Vec<Planned>> {
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
