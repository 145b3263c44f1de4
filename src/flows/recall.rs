//! Recall: the few memories worth telling an agent without being asked.
//!
//! A search answers a question someone chose to ask; recall runs on every
//! prompt a user types, so most of the time it must say nothing. It searches
//! with the prompt (scoped to the project, leaving out what the agent still
//! holds in its live context and what it was already told this session) and
//! keeps only the hits whose calibrated relevance clears a confident
//! threshold, stricter than search's minimum: a memory that is injected costs
//! tokens on every later turn and is read as true, so a wrong one does more
//! harm than a missing one. What it keeps is written as a short block that
//! says, for each memory, what it is, when, from which session, its id and
//! the command (or MCP call) that reads it whole.
//!
//! The Claude Code `UserPromptSubmit` hook, the MCP tool `memory_recall` (and
//! through it the OpenClaw context engine's `assemble`) all call [`recall`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::record::{Kind, Record};
use crate::search::{Filters, Hit, LiveContext, RankOptions, SearchEngine};

/// `[recall]` of `config.toml`: what is recalled unasked, and how sure it
/// must be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecallSettings {
    /// Recall memories for each prompt (`UserPromptSubmit`, the OpenClaw
    /// engine's `assemble`).
    pub prompt: bool,
    /// A brief of the project's recent work when a session starts or resumes.
    pub brief: bool,
    /// The calibrated score a memory needs (0..1): see the README for how it
    /// was chosen.
    pub min_score: f32,
    /// The cosine similarity to the prompt a memory needs: it must mean
    /// something like what was asked, not only share its words…
    pub min_cosine: f32,
    /// …and hold at least this share of the prompt's IDF weight: it must
    /// share its words, not only a vague meaning…
    pub min_coverage: f32,
    /// …unless it holds this share of the prompt's IDF weight or more (a
    /// prompt of identifiers and error codes, whose embedding means little).
    pub words_alone_coverage: f32,
    /// Most memories recalled for one prompt.
    pub max_memories: usize,
    /// Longest text of one memory, in characters.
    pub memory_chars: usize,
    /// Longest recall block, in characters (Claude Code spills hook output
    /// over 10,000 characters to a file).
    pub max_chars: usize,
    /// Longest session-start brief, in characters.
    pub brief_chars: usize,
    /// Recall from every project, not only the prompt's.
    pub all_projects: bool,
}

/// The recall threshold's default; see [`RecallSettings::min_score`].
pub const DEFAULT_MIN_SCORE: f32 = 0.5;

impl Default for RecallSettings {
    fn default() -> Self {
        RecallSettings {
            prompt: true,
            brief: true,
            min_score: DEFAULT_MIN_SCORE,
            min_cosine: 0.35,
            min_coverage: 0.2,
            words_alone_coverage: 0.8,
            max_memories: 3,
            memory_chars: 500,
            max_chars: 2500,
            brief_chars: 1500,
            all_projects: false,
        }
    }
}

/// The environment switch: `off` turns recall off, `no-prompt` or
/// `no-brief` one part of it.
pub const RECALL_ENV: &str = "KNOWLEDGE_DB_RECALL";

impl RecallSettings {
    /// The `[recall]` table of the store's `config.toml` (defaults when the
    /// file or the table is missing), with the environment's switch applied.
    pub fn from_store(root: &std::path::Path) -> Result<RecallSettings> {
        let settings: RecallSettings = crate::store::config::read_section(root, "recall")?;
        Ok(settings.with_env())
    }

    /// These settings with the environment's switch applied
    /// (`KNOWLEDGE_DB_RECALL=off|no-prompt|no-brief`, several separated by
    /// commas).
    pub fn with_env(mut self) -> RecallSettings {
        let value = std::env::var(RECALL_ENV).unwrap_or_default();
        for word in value.split(',').map(|w| w.trim().to_ascii_lowercase()) {
            match word.as_str() {
                "off" | "0" | "false" | "no" => {
                    self.prompt = false;
                    self.brief = false;
                }
                "no-prompt" => self.prompt = false,
                "no-brief" => self.brief = false,
                _ => {}
            }
        }
        self
    }
}

/// What to recall for.
#[derive(Debug, Clone, Default)]
pub struct RecallRequest {
    /// The user's prompt.
    pub prompt: String,
    /// The project of the session (`None`: every project).
    pub project: Option<String>,
    /// The namespace searched (`None`: every namespace).
    pub namespace: Option<String>,
    /// Only records of this origin (`local`, or a machine sync pulled
    /// from); `None`: any.
    pub origin: Option<String>,
    /// What the agent still holds: never recalled.
    pub live: Option<LiveContext>,
    /// Record ids already recalled in this session, or still in the
    /// agent's context: never recalled.
    pub already: BTreeSet<String>,
    /// How to read a record whole from a shell: the command prefix
    /// (`knowledge-db --store …`); `None` names only the MCP call.
    pub command_prefix: Option<String>,
}

/// One memory recalled.
#[derive(Debug, Clone, Serialize)]
pub struct Memory {
    /// The record's id.
    pub id: String,
    /// Its kind.
    pub kind: Kind,
    /// Its title (a segment's topic, a task's subject, a message's role).
    pub title: String,
    /// Its own time (RFC 3339), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Its session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turns it covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<(u64, u64)>,
    /// Its calibrated relevance to the prompt.
    pub score: f32,
    /// The cosine similarity of the prompt and the record (none without a vector).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f32>,
    /// The share of the prompt's IDF weight the record holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f32>,
    /// What it says, cut to [`RecallSettings::memory_chars`].
    pub text: String,
    /// The command that reads it whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_command: Option<String>,
}

/// What recall found.
#[derive(Debug, Clone, Serialize)]
pub struct RecallAnswer {
    /// The memories to give the agent, best first; empty most of the time.
    pub memories: Vec<Memory>,
    /// The block to add to the agent's context; empty when there is nothing
    /// confident to say.
    pub text: String,
    /// The best score seen, recalled or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_score: Option<f32>,
    /// Why nothing was recalled, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// Longest part of a prompt searched with: a prompt that pastes a log or a
/// file is about its first lines.
const MAX_QUERY_CHARS: usize = 2000;

/// Candidates looked at: more than are recalled, since some were recalled
/// before.
const CANDIDATES: usize = 12;

/// The memories of `engine`'s store worth telling the agent about
/// `request.prompt`, under `settings`.
pub fn recall(
    engine: &SearchEngine,
    request: &RecallRequest,
    settings: &RecallSettings,
) -> Result<RecallAnswer> {
    let query = clip(&request.prompt, MAX_QUERY_CHARS);
    if engine.query_terms(query).len() < 2 {
        return Ok(nothing(
            None,
            "the prompt has fewer than two searchable words",
        ));
    }
    let filters = Filters {
        namespace: request.namespace.clone(),
        project: request.project.clone(),
        origin: request.origin.clone(),
        live: request.live.clone(),
        exclude_ids: request.already.iter().cloned().collect(),
        min_score: Some(0.0),
        ..Filters::default()
    };
    let response = engine.search(query, CANDIDATES, &filters, &RankOptions::default())?;
    let best_score = response
        .results
        .first()
        .map(|hit| hit.score)
        .or(response.best_score);
    let memories: Vec<Memory> = response
        .results
        .iter()
        .filter(|hit| confident(hit, settings))
        .take(settings.max_memories)
        .map(|hit| memory(engine, hit, request, settings))
        .collect::<Result<_>>()?;
    if memories.is_empty() {
        let why = match best_score {
            Some(best) if best < settings.min_score => format!(
                "nothing confident: the best score was {best:.2}, under {:.2}",
                settings.min_score
            ),
            Some(best) => format!(
                "nothing confident: the best-scoring memories ({best:.2}) agree with the prompt \
                 in words or in meaning, not both (cosine {:.2} and {:.0}% of its words needed)",
                settings.min_cosine,
                settings.min_coverage * 100.0
            ),
            None => response
                .explanation
                .clone()
                .unwrap_or_else(|| "nothing matched".into()),
        };
        return Ok(nothing(best_score, &why));
    }
    let mut memories = memories;
    let text = block(&mut memories, settings.max_chars);
    Ok(RecallAnswer {
        memories,
        text,
        best_score,
        why_not: None,
    })
}

/// Whether a hit is worth telling the agent about unasked: relevant by the
/// calibrated score, and agreeing with the prompt both in meaning (cosine)
/// and in words (coverage), or in nearly all of its words. Either agreement
/// alone is how unrelated memories reach a high score: a long message that
/// shares a prompt's common words, or a vaguely similar one that shares none
/// of its specific ones.
fn confident(hit: &Hit, settings: &RecallSettings) -> bool {
    let cosine = hit.scores.cosine.unwrap_or(0.0);
    let coverage = hit.scores.coverage.unwrap_or(0.0);
    hit.score >= settings.min_score
        && ((cosine >= settings.min_cosine && coverage >= settings.min_coverage)
            || coverage >= settings.words_alone_coverage)
}

fn nothing(best_score: Option<f32>, why: &str) -> RecallAnswer {
    RecallAnswer {
        memories: Vec::new(),
        text: String::new(),
        best_score,
        why_not: Some(why.to_string()),
    }
}

fn memory(
    engine: &SearchEngine,
    hit: &Hit,
    request: &RecallRequest,
    settings: &RecallSettings,
) -> Result<Memory> {
    let turns = match (hit.start_turn, hit.end_turn) {
        (Some(a), Some(b)) => Some((a, b)),
        (Some(a), None) | (None, Some(a)) => Some((a, a)),
        _ => None,
    };
    let text = match engine.record(&hit.id)? {
        Some(record) => memory_text(&record),
        None => hit.snippet.clone(),
    };
    Ok(Memory {
        id: hit.id.clone(),
        kind: hit.kind,
        title: hit.title.clone(),
        when: hit.timestamp.clone(),
        session_id: hit.session_id.clone(),
        turns,
        score: hit.score,
        cosine: hit.scores.cosine,
        coverage: hit.scores.coverage,
        text: clip_words(&text, settings.memory_chars),
        read_command: request
            .command_prefix
            .as_ref()
            .map(|prefix| format!("{prefix} get {}", crate::shell::shell_quote(&hit.id))),
    })
}

/// What a memory says: a summary's content and decisions, a message's or
/// note's text.
fn memory_text(record: &Record) -> String {
    let f = &record.fields;
    let mut text = f.content.trim().to_string();
    for decision in &f.decisions {
        text.push_str("\n- ");
        text.push_str(decision.trim());
    }
    if text.trim().is_empty() {
        text = record.display_text();
    }
    text
}

/// `text` cut to about `max` characters at a word boundary, marked when cut.
fn clip_words(text: &str, max: usize) -> String {
    let cut = clip(text, max);
    if cut.len() == text.len() {
        return cut.to_string();
    }
    let at = cut
        .rfind(char::is_whitespace)
        .filter(|&i| i > max / 2)
        .unwrap_or(cut.len());
    format!("{} …", cut[..at].trim_end())
}

/// The recall block: a line that says what it is, then each memory; a
/// memory that would pass `max_chars` has its text cut to fit (or, with
/// less than a line left, is left out: `memories` keeps those given).
fn block(memories: &mut Vec<Memory>, max_chars: usize) -> String {
    let head = |n: usize| {
        format!(
            "knowledge-db recalled {n} memor{} of earlier work that may bear on this prompt \
             (stored by knowledge-db; check them before relying on them):\n",
            if n == 1 { "y" } else { "ies" }
        )
    };
    let mut used = head(memories.len()).chars().count();
    let mut entries = Vec::new();
    for (i, m) in memories.iter_mut().enumerate() {
        let room = max_chars.saturating_sub(used);
        let mut text = entry(i + 1, m);
        let over = text.chars().count().saturating_sub(room);
        if over > 0 {
            let keep = m.text.chars().count().saturating_sub(over + 2);
            if keep < 80 {
                break;
            }
            m.text = clip_words(&m.text, keep);
            text = entry(i + 1, m);
        }
        used += text.chars().count();
        entries.push(text);
    }
    memories.truncate(entries.len());
    head(entries.len()) + &entries.concat()
}

/// One memory as the agent reads it.
fn entry(n: usize, m: &Memory) -> String {
    let mut where_from = Vec::new();
    if let Some(session) = &m.session_id {
        where_from.push(format!("session {session}"));
    }
    match m.turns {
        Some((a, b)) if a != b => where_from.push(format!("turns {a}-{b}")),
        Some((a, _)) => where_from.push(format!("turn {a}")),
        None => {}
    }
    if let Some(when) = &m.when {
        where_from.push(when.chars().take(10).collect());
    }
    let title = if m.title.is_empty() || m.kind == Kind::Message {
        String::new()
    } else {
        format!(" \"{}\"", m.title)
    };
    let mut text = format!(
        "{n}. [{}{}]{title} {} (score {:.2})\n",
        m.kind,
        match m.kind {
            Kind::Message => format!(", {}", m.title),
            _ => String::new(),
        },
        where_from.join(", "),
        m.score
    );
    for line in m.text.lines().filter(|l| !l.trim().is_empty()) {
        text.push_str("   ");
        text.push_str(line.trim_end());
        text.push('\n');
    }
    text.push_str(&format!("   id {}; read it whole: ", m.id));
    if let Some(command) = &m.read_command {
        text.push_str(&format!("`{command}` or "));
    }
    text.push_str(&format!(
        "MCP memory_get {{\"id\": {}}}\n",
        serde_json::Value::String(m.id.clone())
    ));
    text
}

/// `text` cut to at most `max` characters, at a character boundary.
fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}
