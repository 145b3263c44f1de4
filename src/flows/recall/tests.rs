//! Unit tests of the recall flow: what is told, what is held back, and why.

use super::*;
use crate::search::ScoreParts;

/// A hit of `session` with the signals the gate reads.
fn hit(session: &str, score: f32, cosine: f32, coverage: f32, ranks: (usize, usize)) -> Hit {
    Hit {
        scores: ScoreParts {
            bm25: Some(1.0),
            bm25_rank: Some(ranks.0),
            vector: Some(cosine),
            vector_rank: Some(ranks.1),
            fused: score,
            cosine: Some(cosine),
            coverage: Some(coverage),
        },
        title: "assistant".into(),
        session_id: Some(session.into()),
        ..crate::search::test_hit(&format!("{session}:{score}:{cosine}"), score)
    }
}

/// A hit's calibrated score, cosine, coverage and ranks (words, meaning);
/// whether it should be confident; and why.
type Case<'a> = (f32, f32, f32, (usize, usize), bool, &'a str);

/// Checks each case against [`confident`] with the default settings.
fn check(cases: &[Case<'_>], chance: Option<f32>) {
    let settings = RecallSettings::default();
    for &(score, cosine, coverage, ranks, expected, why) in cases {
        let h = hit("s", score, cosine, coverage, ranks);
        assert_eq!(confident(&h, &settings, chance), expected, "{why}");
    }
}

#[test]
fn meaning_and_words_or_both_retrievers_agreeing_make_a_memory_confident() {
    check(
        &[
            (0.9, 0.5, 0.3, (5, 9), true, "meaning and words"),
            (
                0.9,
                0.5,
                0.15,
                (2, 2),
                false,
                "meaning, few words, first in neither",
            ),
            (
                0.9,
                0.5,
                0.15,
                (2, 1),
                true,
                "first by meaning, second by words",
            ),
            (
                0.9,
                0.5,
                0.15,
                (1, 3),
                true,
                "first by words, third by meaning",
            ),
            (
                0.9,
                0.5,
                0.05,
                (1, 1),
                false,
                "agreement still needs some words",
            ),
            (
                0.9,
                0.3,
                0.15,
                (1, 1),
                false,
                "agreement still needs the cosine",
            ),
            (
                0.4,
                0.5,
                0.15,
                (1, 1),
                false,
                "agreement still needs the score",
            ),
            (0.9, 0.1, 0.85, (1, 40), true, "nearly all the words alone"),
        ],
        None,
    );
}

#[test]
fn on_a_small_store_meaning_beyond_chance_is_enough() {
    let at_chance = crate::search::relevance::chance_cosine(6);
    let margin = RecallSettings::default().meaning_margin;
    let close = at_chance + margin + 0.01;
    let near_chance = at_chance + margin - 0.01;
    check(
        &[
            (
                0.03,
                close,
                0.15,
                (2, 1),
                true,
                "a low score, closest in meaning beyond chance",
            ),
            (
                0.03,
                close,
                0.15,
                (1, 3),
                true,
                "agreed on by both retrievers",
            ),
            (
                0.03,
                close,
                0.15,
                (2, 2),
                false,
                "neither the closest nor agreed on",
            ),
            (
                0.03,
                near_chance,
                0.15,
                (1, 1),
                false,
                "within chance's reach",
            ),
            (
                0.03,
                close,
                0.05,
                (1, 1),
                false,
                "none of the prompt's words",
            ),
        ],
        Some(at_chance),
    );
    // On a store of 30,000 records the same cosine is chance.
    check(
        &[(0.03, close, 0.15, (1, 1), false, "chance at 30,000 records")],
        Some(crate::search::relevance::chance_cosine(30_000)),
    );
}

fn memory_of(n: usize, text_chars: usize) -> Memory {
    Memory {
        id: format!("session-{n}:record"),
        kind: Kind::Message,
        title: "assistant".into(),
        when: Some("2026-01-05T10:00:00Z".into()),
        session_id: Some(format!("session-{n}")),
        turns: Some((3, 3)),
        score: 0.9,
        cosine: Some(0.5),
        coverage: Some(0.4),
        by_meaning: false,
        text: "word ".repeat(text_chars / 5),
        read_command: Some(format!("knowledge-db get session-{n}:record")),
    }
}

#[test]
fn every_memory_chosen_is_told_within_the_block() {
    for max_chars in [900, 1500, 2500, 4000] {
        let mut memories: Vec<Memory> = (1..=3).map(|n| memory_of(n, 500)).collect();
        let text = block(&mut memories, max_chars);
        assert!(
            text.chars().count() <= max_chars,
            "{max_chars}: {}",
            text.chars().count()
        );
        if max_chars >= 1500 {
            assert_eq!(memories.len(), 3, "{max_chars}");
            for n in 1..=3 {
                assert!(text.contains(&format!("session-{n}:record")), "{text}");
            }
        }
        assert!(text.starts_with(&format!("knowledge-db recalled {} memor", memories.len())));
    }
    // Room for all: nothing is cut.
    let mut memories: Vec<Memory> = (1..=3).map(|n| memory_of(n, 100)).collect();
    let text = block(&mut memories, 2500);
    assert!(!text.contains('…'), "{text}");
    // Too little room for three: the last goes, the others stay whole enough.
    let mut memories: Vec<Memory> = (1..=3).map(|n| memory_of(n, 500)).collect();
    let text = block(&mut memories, 700);
    assert!(memories.len() < 3 && !memories.is_empty(), "{text}");
    assert!(text.chars().count() <= 700);
}

#[test]
fn a_session_gives_one_memory_and_others_fill_the_rest() {
    let settings = RecallSettings::default();
    let hits = [
        hit("a", 0.95, 0.6, 0.5, (1, 1)),
        hit("a", 0.94, 0.6, 0.5, (2, 2)),
        hit("b", 0.90, 0.6, 0.5, (3, 3)),
        hit("a", 0.89, 0.6, 0.5, (4, 4)),
        hit("c", 0.80, 0.6, 0.5, (5, 5)),
        hit("d", 0.70, 0.6, 0.5, (6, 6)),
    ];
    let sessions: Vec<_> = chosen(&hits, &settings, None)
        .iter()
        .map(|h| h.session_id.clone().unwrap())
        .collect();
    assert_eq!(sessions, ["a", "b", "c"]);
    let two = RecallSettings {
        per_session: 2,
        ..RecallSettings::default()
    };
    let sessions: Vec<_> = chosen(&hits, &two, None)
        .iter()
        .map(|h| h.session_id.clone().unwrap())
        .collect();
    assert_eq!(sessions, ["a", "a", "b"]);
    // Fewer confident sessions than places: the rest go to the sessions
    // already told, in rank order.
    let few = [
        hit("a", 0.95, 0.6, 0.5, (1, 1)),
        hit("a", 0.94, 0.6, 0.5, (2, 2)),
        hit("a", 0.93, 0.6, 0.5, (3, 3)),
        hit("b", 0.90, 0.6, 0.5, (4, 4)),
        hit("c", 0.30, 0.6, 0.5, (5, 5)),
    ];
    let sessions: Vec<_> = chosen(&few, &settings, None)
        .iter()
        .map(|h| h.session_id.clone().unwrap())
        .collect();
    assert_eq!(sessions, ["a", "a", "b"]);
}
