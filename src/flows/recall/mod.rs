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
//! When nothing is confident but the prompt is plainly about past work,
//! recall names a few candidate sessions instead, as leads the agent may
//! open ([`leads`]).
//!
//! The Claude Code `UserPromptSubmit` hook, the MCP tool `memory_recall` (and
//! through it the OpenClaw context engine's `assemble`) all call [`recall`].

pub mod leads;

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
    /// prompt of identifiers and error codes, whose embedding means little)…
    pub words_alone_coverage: f32,
    /// …or both retrievers agree on it: first in one's list and within this
    /// many of the first in the other's (with the cosine above and at least
    /// `agreement_coverage` of the prompt's weight). Ranks mean the same on
    /// a store of one session and of a million records, where a share of
    /// the prompt's words does not: a prompt in other words holds few of
    /// a record's, however well it names what the record is about.
    pub agreement_rank: usize,
    /// The share of the prompt's IDF weight an agreed-on memory needs.
    pub agreement_coverage: f32,
    /// Most memories recalled from one session: the rest of a session is a
    /// `memory_get` away, and another session may be the one meant.
    pub per_session: usize,
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
    /// When no memory is confident but the prompt is about past work, name
    /// candidate sessions as leads (see [`leads`]).
    pub leads: bool,
    /// How far above chance (see [`crate::search::relevance::chance_cosine`])
    /// the best cosine similarity over the candidates must be for a prompt to
    /// count as about past work (see [`leads`]).
    pub lead_margin: f32,
    /// How far above chance a memory's cosine similarity must be to be told
    /// on its meaning alone, whatever its calibrated score, when it is the
    /// closest in meaning or both retrievers agree on it: on a store of a
    /// few sessions a cosine that chance never gives there is the evidence
    /// the calibrated score, fitted on stores of thousands, does not see.
    pub meaning_margin: f32,
    /// Most sessions named as leads.
    pub max_leads: usize,
    /// Candidates without a vector yet (a history still being vectored in
    /// the background) that the prompt hook embeds itself, best by words
    /// first; 0 ranks them by words alone.
    pub embed_missing: usize,
}

/// The recall threshold's default; see [`RecallSettings::min_score`].
pub const DEFAULT_MIN_SCORE: f32 = 0.5;

/// [`RecallSettings::lead_margin`]'s default: see docs/memory-loop.md, "Leads".
pub const DEFAULT_LEAD_MARGIN: f32 = 0.02;

/// [`RecallSettings::meaning_margin`]'s default: see docs/memory-loop.md, "Chance".
pub const DEFAULT_MEANING_MARGIN: f32 = 0.05;

impl Default for RecallSettings {
    fn default() -> Self {
        RecallSettings {
            prompt: true,
            brief: true,
            min_score: DEFAULT_MIN_SCORE,
            min_cosine: 0.35,
            min_coverage: 0.2,
            words_alone_coverage: 0.8,
            agreement_rank: 3,
            agreement_coverage: 0.1,
            per_session: 1,
            max_memories: 3,
            memory_chars: 500,
            max_chars: 2500,
            brief_chars: 1500,
            all_projects: false,
            leads: true,
            lead_margin: DEFAULT_LEAD_MARGIN,
            meaning_margin: DEFAULT_MEANING_MARGIN,
            max_leads: 3,
            embed_missing: 8,
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
    /// Sessions already named as leads in this session: not named again.
    pub named: BTreeSet<String>,
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
    /// Told for its meaning beyond chance on a store this size, under the
    /// calibrated score's threshold (see [`RecallSettings::meaning_margin`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_meaning: bool,
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
    /// Sessions named as leads when no memory was confident but the prompt
    /// was about past work; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leads: Vec<leads::Lead>,
    /// The block to add to the agent's context (the memories, else the
    /// leads); empty when there is nothing to say.
    pub text: String,
    /// The best score seen, recalled or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_score: Option<f32>,
    /// The best cosine similarity of a candidate to the prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_cosine: Option<f32>,
    /// Why nothing was recalled, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

/// Longest part of a prompt searched with: a prompt that pastes a log or a
/// file is about its first lines.
const MAX_QUERY_CHARS: usize = 2000;

/// Candidates looked at: more than are recalled, since some were recalled
/// before and a session gives at most `per_session` of them.
const CANDIDATES: usize = 24;

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
    let best_cosine = leads::best_cosine(&response.results);
    let chance = response.chance_cosine;
    let memories: Vec<Memory> = chosen(&response.results, settings, chance)
        .into_iter()
        .map(|hit| {
            let mut m = memory(engine, hit, request, settings)?;
            m.by_meaning = !confident(hit, settings, None);
            Ok(m)
        })
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
        let mut answer = nothing(best_score, &why);
        answer.best_cosine = best_cosine;
        if settings.leads && leads::about_past_work(&response.results, settings, chance) {
            answer.leads = leads::leads(engine, &response.results, &request.named, settings)?;
            if !answer.leads.is_empty() {
                answer.text = leads::block(&answer.leads, request.command_prefix.as_deref());
            }
        }
        return Ok(answer);
    }
    let mut memories = memories;
    let text = block(&mut memories, settings.max_chars);
    Ok(RecallAnswer {
        memories,
        leads: Vec::new(),
        text,
        best_score,
        best_cosine,
        why_not: None,
    })
}

/// Whether a hit is worth telling the agent about unasked: relevant by the
/// calibrated score, and agreeing with the prompt both in meaning (cosine)
/// and in words (coverage), or in nearly all of its words, or first by one
/// retriever and near the first by the other (see
/// [`RecallSettings::agreement_rank`]). Either agreement alone is how
/// unrelated memories reach a high score: a long message that shares a
/// prompt's common words, or a vaguely similar one that shares none of its
/// specific ones. Or, whatever its score, close in meaning beyond what
/// chance gives on a store this size (`chance`, see
/// [`RecallSettings::meaning_margin`]) while holding some of the prompt's
/// words and being the closest in meaning or agreed on by both retrievers.
fn confident(hit: &Hit, settings: &RecallSettings, chance: Option<f32>) -> bool {
    let cosine = hit.scores.cosine.unwrap_or(0.0);
    let coverage = hit.scores.coverage.unwrap_or(0.0);
    let near = |rank: Option<usize>| rank.is_some_and(|r| r <= settings.agreement_rank);
    let first = |rank: Option<usize>| rank == Some(1);
    let (bm25, vector) = (hit.scores.bm25_rank, hit.scores.vector_rank);
    let ranks_agree = (first(vector) && near(bm25)) || (first(bm25) && near(vector));
    let agreed =
        ranks_agree && cosine >= settings.min_cosine && coverage >= settings.agreement_coverage;
    let beyond_chance = chance.is_some_and(|c| cosine >= c + settings.meaning_margin)
        && (first(vector) || ranks_agree)
        && coverage >= settings.agreement_coverage;
    (hit.score >= settings.min_score
        && ((cosine >= settings.min_cosine && coverage >= settings.min_coverage)
            || coverage >= settings.words_alone_coverage
            || agreed))
        || beyond_chance
}

/// The confident hits, best first, at most `max_memories`: first at most
/// `per_session` of one session, so that other sessions get a place; then,
/// when fewer sessions than places were confident, the rest of the places
/// go to the next hits of the sessions already told.
fn chosen<'a>(hits: &'a [Hit], settings: &RecallSettings, chance: Option<f32>) -> Vec<&'a Hit> {
    let confident: Vec<(usize, &Hit)> = hits
        .iter()
        .enumerate()
        .filter(|(_, hit)| confident(hit, settings, chance))
        .collect();
    let mut per_session: std::collections::HashMap<&str, usize> = Default::default();
    let mut taken: Vec<usize> = Vec::new();
    for &(i, hit) in &confident {
        if taken.len() >= settings.max_memories {
            break;
        }
        let fits = match hit.session_id.as_deref() {
            Some(session) => {
                let told = per_session.entry(session).or_default();
                *told += 1;
                *told <= settings.per_session.max(1)
            }
            None => true,
        };
        if fits {
            taken.push(i);
        }
    }
    for &(i, _) in &confident {
        if taken.len() >= settings.max_memories {
            break;
        }
        if !taken.contains(&i) {
            taken.push(i);
        }
    }
    taken.sort_unstable();
    taken.into_iter().map(|i| &hits[i]).collect()
}

fn nothing(best_score: Option<f32>, why: &str) -> RecallAnswer {
    RecallAnswer {
        memories: Vec::new(),
        leads: Vec::new(),
        text: String::new(),
        best_score,
        best_cosine: None,
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
        by_meaning: false,
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

/// The recall block: a line that says what it is, then each memory. When
/// the memories do not fit in `max_chars`, their texts share the room left
/// after each one's header and id line, so every memory chosen is told (a
/// memory whose share would be under a line is left out, the last first:
/// `memories` keeps those given).
fn block(memories: &mut Vec<Memory>, max_chars: usize) -> String {
    let head = |n: usize| {
        format!(
            "knowledge-db recalled {n} memor{} of earlier work that may bear on this prompt \
             (stored by knowledge-db; check them before relying on them):\n",
            if n == 1 { "y" } else { "ies" }
        )
    };
    const LEAST_TEXT: usize = 80;
    while !memories.is_empty() {
        let n = memories.len();
        let overhead: usize = memories
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let bare = Memory {
                    text: String::new(),
                    ..m.clone()
                };
                entry(i + 1, &bare).chars().count()
            })
            .sum();
        let room = max_chars.saturating_sub(head(n).chars().count() + overhead);
        let texts: usize = memories.iter().map(|m| m.text.chars().count()).sum();
        if texts <= room {
            break;
        }
        let share = room / n;
        if share < LEAST_TEXT && n > 1 {
            memories.pop();
            continue;
        }
        // Texts shorter than the share keep their length; the longer ones
        // split what they leave.
        let short: Vec<bool> = memories
            .iter()
            .map(|m| m.text.chars().count() <= share)
            .collect();
        let spare: usize = memories
            .iter()
            .zip(&short)
            .filter(|(_, &s)| s)
            .map(|(m, _)| share - m.text.chars().count())
            .sum();
        let long = short.iter().filter(|&&s| !s).count().max(1);
        let mut keep = share + spare / long;
        let whole: Vec<String> = memories.iter().map(|m| m.text.clone()).collect();
        // Each line of a text is indented when told, and a cut adds " …":
        // cut again by what is still over, until the block fits.
        loop {
            for ((m, &s), text) in memories.iter_mut().zip(&short).zip(&whole) {
                if !s {
                    m.text = clip_words(text, keep.max(1));
                }
            }
            let told = head(n).chars().count()
                + memories
                    .iter()
                    .enumerate()
                    .map(|(i, m)| entry(i + 1, m).chars().count())
                    .sum::<usize>();
            let over = told.saturating_sub(max_chars);
            if over == 0 || keep <= 1 {
                break;
            }
            keep = keep.saturating_sub(over.div_ceil(long));
        }
        break;
    }
    let entries: Vec<String> = memories
        .iter()
        .enumerate()
        .map(|(i, m)| entry(i + 1, m))
        .collect();
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
    let basis = if m.by_meaning {
        format!(
            "close in meaning for a store this size; score {:.2}",
            m.score
        )
    } else {
        format!("score {:.2}", m.score)
    };
    let mut text = format!(
        "{n}. [{}{}]{title} {} ({basis})\n",
        m.kind,
        match m.kind {
            Kind::Message => format!(", {}", m.title),
            _ => String::new(),
        },
        where_from.join(", "),
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

#[cfg(test)]
mod tests;
