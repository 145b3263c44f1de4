//! Leads: the earlier sessions recall names when a prompt is plainly about
//! past work but no one memory is a sure answer.
//!
//! Recall tells a memory unasked only when it is confident of it (see
//! `confident` in [`super`]). A question in other words ("why did the tool take
//! so long to give the prompt back after each command?") is often plainly
//! about the store's work while no memory clears that bar: MiniLM's best
//! cosine over the store tells such a question from an unrelated prompt far
//! better than it tells the right session from a wrong one (on the dev sets,
//! the best cosine of a reworded question beat that of an off-topic prompt in
//! nearly every pair, while the session it came from was the answer for a
//! quarter of them). So the two questions get two signals:
//!
//! - **is the prompt about past work?** Its best cosine over the candidates
//!   is [`RecallSettings::lead_margin`] above what chance gives the best of
//!   the records searched ([`crate::search::relevance::chance_cosine`]: an
//!   unrelated prompt reaches 0.22 over 4 records, 0.44 over 15,000);
//! - **which work?** Not sure, so not told as a memory: recall names at most
//!   [`RecallSettings::max_leads`] candidate sessions instead, one short line
//!   each (date, id, what the session was about), ranked by their best three
//!   hits (the best, half the second, a quarter of the third: a session whose
//!   answer is spread over several messages, each worded only partly like the
//!   question, outranks one with a single lucky match).
//!
//! The agent opens a lead if it wants (`show --session`, MCP `memory_search`
//! with `session`), as claude-mem's index invites it to. A lead costs about a
//! hundred characters; a wrong one is a line the agent skips. A session named
//! once in a conversation is not named again (the hooks keep the list).

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;

use super::RecallSettings;
use crate::error::Result;
use crate::search::{Hit, SearchEngine};

/// One earlier session named as a lead.
#[derive(Debug, Clone, Serialize)]
pub struct Lead {
    /// The session's id.
    pub session_id: String,
    /// What it was about: its first prompt, else its best hit's title.
    pub title: String,
    /// Its best hit's date (YYYY-MM-DD), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// Its best hit's id: `memory_get` reads it whole.
    pub best_id: String,
    /// The session's score: its best three hits', halving.
    pub score: f32,
}

/// Longest title of one lead, in characters.
const TITLE_CHARS: usize = 64;

/// Whether the candidates say the prompt is about the store's work: one of
/// them is closer in meaning than chance gives the best of the records
/// searched (`chance`), by [`RecallSettings::lead_margin`].
pub(super) fn about_past_work(
    hits: &[Hit],
    settings: &RecallSettings,
    chance: Option<f32>,
) -> bool {
    match (best_cosine(hits), chance) {
        (Some(best), Some(chance)) => best >= chance + settings.lead_margin,
        _ => false,
    }
}

/// The best cosine similarity among `hits`.
pub(super) fn best_cosine(hits: &[Hit]) -> Option<f32> {
    hits.iter()
        .filter_map(|h| h.scores.cosine)
        .fold(None, |best: Option<f32>, c| {
            Some(best.map_or(c, |b| b.max(c)))
        })
}

/// At most `settings.max_leads` sessions of `hits`, best first, leaving out
/// those in `named` (named before in this conversation).
pub(super) fn leads(
    engine: &SearchEngine,
    hits: &[Hit],
    named: &BTreeSet<String>,
    settings: &RecallSettings,
) -> Result<Vec<Lead>> {
    let mut sessions: Vec<(&str, Vec<&Hit>)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for hit in hits {
        let Some(session) = hit.session_id.as_deref() else {
            continue;
        };
        if named.contains(session) {
            continue;
        }
        let i = *at.entry(session).or_insert_with(|| {
            sessions.push((session, Vec::new()));
            sessions.len() - 1
        });
        sessions[i].1.push(hit);
    }
    let mut ranked: Vec<(f32, &str, &Hit)> = sessions
        .iter()
        .map(|(session, hits)| (session_score(hits), *session, hits[0]))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    ranked
        .into_iter()
        .take(settings.max_leads)
        .map(|(score, session, best)| {
            let title = engine
                .first_prompt(session)?
                .map(|prompt| prompt.fields.content)
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| best.title.clone());
            Ok(Lead {
                session_id: session.to_string(),
                title: one_line(&title, TITLE_CHARS),
                when: best
                    .timestamp
                    .as_ref()
                    .map(|t| t.chars().take(10).collect()),
                best_id: best.id.clone(),
                score,
            })
        })
        .collect()
}

/// A session's score from its hits (best first): the best, half the second,
/// a quarter of the third.
fn session_score(hits: &[&Hit]) -> f32 {
    hits.iter()
        .take(3)
        .zip([1.0, 0.5, 0.25])
        .map(|(hit, weight)| hit.score * weight)
        .sum()
}

/// The block that names the leads.
pub(super) fn block(leads: &[Lead], command_prefix: Option<&str>) -> String {
    let how = match command_prefix {
        Some(prefix) => format!("`{prefix} show --session ID`"),
        None => "MCP memory_search {\"session\": ID}".to_string(),
    };
    let mut text = format!(
        "knowledge-db: no memory is a sure match for this prompt; these earlier sessions may be about it (read one: {how}):\n"
    );
    for lead in leads {
        let when = lead.when.as_deref().unwrap_or("undated");
        text.push_str(&format!(
            "- {when} session {}: \"{}\"\n",
            lead.session_id, lead.title
        ));
    }
    text
}

/// The first non-empty line of `text`, whitespace folded, cut to `max`
/// characters at a word.
fn one_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max).collect();
    let at = cut.rfind(' ').filter(|&i| i > max / 2).unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::ScoreParts;

    fn hit(session: &str, score: f32, cosine: f32) -> Hit {
        Hit {
            scores: ScoreParts {
                bm25: None,
                bm25_rank: None,
                vector: Some(cosine),
                vector_rank: Some(1),
                fused: score,
                cosine: Some(cosine),
                coverage: Some(0.1),
            },
            title: "assistant".into(),
            session_id: Some(session.into()),
            start_turn: Some(3),
            end_turn: Some(3),
            timestamp: Some("2026-11-20T10:00:00Z".into()),
            ..crate::search::test_hit(&format!("{session}:{score}"), score)
        }
    }

    #[test]
    fn a_prompt_is_about_past_work_when_a_candidate_is_close_enough_in_meaning() {
        let settings = RecallSettings::default();
        let chance = crate::search::relevance::chance_cosine(30_000);
        let bar = chance + settings.lead_margin;
        let close = [hit("a", 0.2, bar + 0.01), hit("b", 0.3, 0.1)];
        let far = [hit("a", 0.2, bar - 0.01)];
        assert!(about_past_work(&close, &settings, Some(chance)));
        assert!(!about_past_work(&far, &settings, Some(chance)));
        assert!(!about_past_work(&[], &settings, Some(chance)));
        // Without vectors there is no chance to compare with.
        assert!(!about_past_work(&close, &settings, None));
        // The same cosine says more on a small store.
        let small = crate::search::relevance::chance_cosine(10);
        assert!(about_past_work(&far, &settings, Some(small)));
    }

    #[test]
    fn a_session_spread_over_several_hits_outranks_one_lucky_match() {
        let spread = [hit("s", 0.3, 0.5), hit("s", 0.3, 0.5), hit("s", 0.3, 0.5)];
        let lucky = [hit("l", 0.45, 0.5)];
        let spread: Vec<&Hit> = spread.iter().collect();
        let lucky: Vec<&Hit> = lucky.iter().collect();
        assert!(session_score(&spread) > session_score(&lucky));
        // Only the best three count.
        let many: Vec<Hit> = (0..10).map(|_| hit("m", 0.3, 0.5)).collect();
        let many: Vec<&Hit> = many.iter().collect();
        assert!((session_score(&many) - session_score(&spread)).abs() < 1e-6);
    }

    #[test]
    fn the_block_names_each_lead_on_one_short_line() {
        let leads: Vec<Lead> = (1..=3)
            .map(|n| Lead {
                session_id: format!("4f1c9a2e-0f5b-4c8e-9a61-2f5c0d8e1b4{n}"),
                title: one_line(
                    &format!("why did the push to the checkpoint branch fail with 409 and what did we change (try {n})\nsecond line"),
                    TITLE_CHARS,
                ),
                when: Some("2026-11-20".into()),
                best_id: format!("s{n}:m"),
                score: 0.3,
            })
            .collect();
        let text = block(&leads, Some("knowledge-db"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(
            lines[0].contains("`knowledge-db show --session ID`"),
            "{text}"
        );
        for line in &lines[1..] {
            assert!(line.starts_with("- 2026-11-20 session 4f1c9a2e-"), "{line}");
            assert!(line.chars().count() <= 130, "{line}");
            assert!(!line.contains("second line"), "{line}");
        }
        assert!(
            lines[1..]
                .iter()
                .map(|l| l.chars().count() + 1)
                .sum::<usize>()
                <= 390
        );
    }

    #[test]
    fn a_title_is_one_line_cut_at_a_word() {
        assert_eq!(one_line("  fix   the\tbuild \n more", 70), "fix the build");
        let long = "word ".repeat(30);
        let cut = one_line(&long, 20);
        assert!(cut.ends_with('…') && cut.chars().count() <= 21, "{cut}");
        assert_eq!(one_line("", 10), "");
    }
}
