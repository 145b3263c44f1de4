//! Rolling eviction of a transcript: count, truncate tool outputs, evict the
//! oldest messages until the prompt fits, and store in full what left.
//!
//! The order is the contract: whatever leaves the context or is shortened is
//! written to the store (one commit) before the caller gets the kept messages,
//! so nothing the agent stops seeing is lost. Without a store (a dry run)
//! nothing is written.

use std::path::Path;
use std::time::Instant;

use crate::context::budget::{reported_prompt, ReportedPrompt};
use crate::context::evict::{EvictError, EvictOptions};
use crate::context::live::live_context;
use crate::context::roll::{roll_context, Rolled};
use crate::context::tokens::Tokenizer;
use crate::context::truncate::TruncateOptions;
use crate::error::Error;
use crate::store::{AddReport, Store};
use crate::transcript::ingest::{message_id, not_stored_yet, transcript_records, Via};
use crate::transcript::{Message, Transcript};

/// Why an eviction failed.
#[derive(Debug, thiserror::Error)]
pub enum EvictFailure {
    /// The budget or options: no eviction fits (`EvictError::Overflow`), or
    /// the options are wrong (`EvictError::Options`).
    #[error(transparent)]
    Budget(#[from] EvictError),
    /// Writing what left to the store.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Where evicted messages are stored. The store is opened only when there is
/// something to store.
pub struct Destination<'a> {
    /// The store's folder.
    pub root: &'a Path,
    /// Namespace the evicted messages are stored in.
    pub namespace: &'a str,
    /// Seconds to wait for another writer; `None`: the store's config.
    pub lock_timeout: Option<f64>,
}

/// What to evict from, into what budget.
pub struct EvictRequest<'a> {
    /// The transcript whose live context is evicted from.
    pub transcript: &'a Transcript,
    /// Model whose tokenizer counts; `None`: the transcript's own model, else
    /// an estimate.
    pub model: Option<&'a str>,
    /// The model's context window, in tokens.
    pub context_window: usize,
    /// Tokens of the window kept free for the model's reply.
    pub reserved_output: usize,
    /// Fraction of (window - reserved output) to get down to.
    pub target: f64,
    /// Recent messages always kept.
    pub min_keep: usize,
    /// Tokens the prompt takes besides the messages; `None`: measured from the
    /// transcript's usage figures, else 0.
    pub overhead: Option<usize>,
    /// Truncate tool outputs to placeholders before evicting.
    pub truncate: Option<TruncateOptions>,
    /// `None`: a dry run, nothing written.
    pub destination: Option<Destination<'a>>,
}

/// What an eviction did.
pub struct Evicted {
    /// How tokens were counted (for `model`, else the estimate).
    pub tokenizer: Tokenizer,
    /// The model whose tokenizer counted, if known.
    pub model: Option<String>,
    /// Messages before the last compaction (not in the live context, skipped).
    pub compacted: usize,
    /// What the transcript's usage figures say about its prompt.
    pub reported: Option<ReportedPrompt>,
    /// The truncation and eviction themselves: what was kept, dropped and
    /// stored, and the token counts before and after.
    pub rolled: Rolled,
    /// Store ids of the evicted messages, in order.
    pub evicted_ids: Vec<String>,
    /// The write of the full versions (`None` on a dry run or when nothing left).
    pub stored: Option<AddReport>,
    /// Seconds the eviction itself took (not the write).
    pub evict_seconds: f64,
    /// Why the background upkeep could not be started after the write, if so.
    pub upkeep_warning: Option<String>,
}

/// The tokenizer for `model`, else the transcript's own model, else the estimate.
pub fn tokenizer_for(model: Option<&str>, t: &Transcript) -> (Tokenizer, Option<String>) {
    let model = model
        .map(str::to_string)
        .or_else(|| t.messages.iter().rev().find_map(|m| m.model.clone()));
    let tokenizer = model
        .as_deref()
        .map(Tokenizer::for_model)
        .unwrap_or(Tokenizer::Estimate);
    (tokenizer, model)
}

/// The store id of a message of `t`.
pub fn record_id_in(t: &Transcript) -> impl Fn(&Message) -> String + '_ {
    move |m: &Message| message_id(m.session_id.as_deref().unwrap_or(&t.session_id), m)
}

/// Evicts from `request.transcript`'s live context, stores what left, and
/// says what it did.
pub fn evict(request: EvictRequest<'_>) -> Result<Evicted, EvictFailure> {
    let t = request.transcript;
    let (tokenizer, model) = tokenizer_for(request.model, t);
    let live = live_context(t.messages.clone());
    let cost = |m: &Message| tokenizer.message(m);
    let reported = reported_prompt(&t.messages, &cost);
    let options = EvictOptions {
        context_window: request.context_window,
        reserved_output: request.reserved_output,
        target: request.target,
        min_keep: request.min_keep,
        overhead: request
            .overhead
            .or(reported.map(|r| r.overhead_tokens))
            .unwrap_or(0),
    };
    let record_id = record_id_in(t);
    let started = Instant::now();
    let rolled = roll_context(
        live.messages,
        &options,
        request.truncate.as_ref(),
        &cost,
        &record_id,
    )?;
    let evict_seconds = started.elapsed().as_secs_f64();
    let (stored, upkeep_warning) = match &request.destination {
        Some(destination) => store_full(destination, t, &rolled.to_store, Via::Evict)?,
        None => (None, None),
    };
    let evicted_ids = rolled.eviction.evicted.iter().map(&record_id).collect();
    Ok(Evicted {
        tokenizer,
        model,
        compacted: live.compacted,
        reported,
        rolled,
        evicted_ids,
        stored,
        evict_seconds,
        upkeep_warning,
    })
}

/// Writes the full versions of dropped and truncated messages of `t` (one
/// commit), skipping those already stored, and nudges the upkeep; the write's
/// report (`None` when there was nothing) and why the upkeep could not be
/// started, if so.
pub fn store_full(
    destination: &Destination<'_>,
    t: &Transcript,
    to_store: &[(String, Message)],
    via: Via,
) -> Result<(Option<AddReport>, Option<String>), Error> {
    if to_store.is_empty() {
        return Ok((None, None));
    }
    let view = Transcript {
        messages: to_store.iter().map(|(_, m)| m.clone()).collect(),
        ..t.clone()
    };
    let store = Store::open(destination.root)?;
    let records = transcript_records(
        &view,
        destination.namespace,
        &crate::now_rfc3339(),
        via,
        None,
        store.redactor(),
    )?;
    let records = not_stored_yet(&store, records)?;
    let report = store.add(records, None, store.lock_timeout(destination.lock_timeout))?;
    let warning = crate::upkeep::after_write(&store, Some(report.without_vector as u64));
    Ok((Some(report), warning))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{read_file, ReadFrom};

    fn sample() -> Transcript {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("data-samples/transcripts/uncompacted-session.jsonl.gz");
        read_file(&path, None, ReadFrom::default()).expect("sample transcript")
    }

    fn request<'a>(t: &'a Transcript, destination: Option<Destination<'a>>) -> EvictRequest<'a> {
        let budget = |context_window, target| EvictRequest {
            transcript: t,
            model: None,
            context_window,
            reserved_output: 0,
            target,
            min_keep: 4,
            overhead: Some(0),
            truncate: None,
            destination: None,
        };
        // Half of what the sample's live context costs.
        let whole = evict(budget(usize::MAX / 4, 1.0)).expect("no budget");
        EvictRequest {
            destination,
            ..budget(whole.rolled.eviction.tokens_before / 2, 0.8)
        }
    }

    #[test]
    fn what_leaves_is_stored_in_full_and_a_dry_run_writes_nothing() {
        let t = sample();
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("s");
        // A dry run needs no store at all.
        let dry = evict(request(&t, None)).expect("dry run");
        assert!(dry.stored.is_none());
        assert!(!dry.evicted_ids.is_empty(), "the sample is over budget");
        assert!(dry.rolled.eviction.tokens_after < dry.rolled.eviction.tokens_before / 2);

        Store::init(&root).expect("init");
        let destination = Destination {
            root: &root,
            namespace: "default",
            lock_timeout: Some(5.0),
        };
        let done = evict(request(&t, Some(destination))).expect("evict");
        assert_eq!(done.evicted_ids, dry.evicted_ids);
        let stored = done.stored.expect("stored");
        assert_eq!(stored.added, done.rolled.to_store.len());
        let store = Store::open(&root).expect("open");
        for id in &done.evicted_ids {
            assert!(store.get(id).expect("get").is_some(), "{id} stored");
        }
    }

    #[test]
    fn an_impossible_budget_is_a_budget_failure_and_writes_nothing() {
        let t = sample();
        let dir = tempfile::tempdir().expect("tmp");
        let root = dir.path().join("s");
        Store::init(&root).expect("init");
        let mut tight = request(
            &t,
            Some(Destination {
                root: &root,
                namespace: "default",
                lock_timeout: Some(5.0),
            }),
        );
        tight.context_window = 10;
        let failed = evict(tight);
        assert!(matches!(failed, Err(EvictFailure::Budget(_))));
        let store = Store::open(&root).expect("open");
        assert_eq!(store.l2_stats().expect("stats").records, 0);
    }
}
