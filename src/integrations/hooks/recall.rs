//! `hook user-prompt-submit`: memories recalled for a prompt, unasked.
//!
//! Claude Code runs it when the user submits a prompt, before the model sees
//! it; what it prints as `additionalContext` goes in with the prompt. It
//! calls [`crate::flows::recall`] scoped to the session's project, leaving out
//! the session's live context (its turns since the last compaction, as the
//! session's hook state knows it; the whole session when it knows of none)
//! and what it recalled earlier in the session (`<store>/hooks/<session>.recall.json`).
//! When nothing is confident it prints nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::session::SessionState;
use super::{read_json, HookFiles, HookInput};
use crate::embed::{Embedder, OnnxEmbedder, Workload};
use crate::error::{Error, Result};
use crate::flows::recall::{recall, RecallAnswer, RecallRequest, RecallSettings};
use crate::search::{LiveContext, SearchEngine};
use crate::store::Store;

/// What the recall hook did.
#[derive(Debug, Clone, Serialize)]
pub struct RecallHookReport {
    /// The session the hook ran for.
    pub session_id: String,
    /// The project searched (`None`: every project).
    pub project: Option<String>,
    /// The first live turn left out (`None` when the whole session is live).
    pub live_from_turn: Option<u64>,
    /// What recall found; `None` when recall is off or there is no store.
    pub answer: Option<RecallAnswer>,
    /// Why recall did not run, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Where the time went, in milliseconds: `store` (open), `model` (load),
    /// `engine` (the searcher and vector files), `recall` (search and reads).
    pub timings_ms: std::collections::BTreeMap<&'static str, f64>,
}

/// The ids recalled in one session so far, and the sessions named as leads.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Recalled {
    ids: BTreeSet<String>,
    #[serde(default)]
    leads: BTreeSet<String>,
}

fn recalled_path(files: &HookFiles, session_id: &str) -> PathBuf {
    files
        .dir
        .join(format!("{}.recall.json", HookFiles::stem(session_id)))
}

/// `hook user-prompt-submit`: the memories to add to the prompt's context.
/// The report's `answer.text` is what to print (empty: print nothing).
pub fn user_prompt_submit(store_root: &Path, input: &HookInput) -> Result<RecallHookReport> {
    let started = Instant::now();
    let settings = RecallSettings::from_store(store_root)?;
    let mut report = RecallHookReport {
        session_id: input.session_id.clone(),
        project: None,
        live_from_turn: None,
        answer: None,
        skipped: None,
        seconds: 0.0,
        timings_ms: Default::default(),
    };
    let mut lap = Instant::now();
    let mut phase = |report: &mut RecallHookReport, name: &'static str| {
        report
            .timings_ms
            .insert(name, lap.elapsed().as_secs_f64() * 1000.0);
        lap = Instant::now();
    };
    let prompt = input.prompt.as_deref().unwrap_or_default();
    let skip = if !settings.prompt {
        Some("recall of prompts is off ([recall] prompt, or KNOWLEDGE_DB_RECALL)")
    } else if prompt.trim().is_empty() {
        Some("the prompt is empty")
    } else if prompt.trim_start().starts_with('/') {
        Some("a slash command is not a question")
    } else {
        None
    };
    if let Some(why) = skip {
        report.skipped = Some(why.to_string());
        report.seconds = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    let store = match Store::open(store_root) {
        Ok(store) => store,
        Err(Error::NoStore { .. }) => {
            report.skipped = Some("no store yet".into());
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    phase(&mut report, "store");
    let files = HookFiles::new(store_root);
    let state: Option<SessionState> = read_json(&files.state(&input.session_id)).unwrap_or(None);
    report.project = if settings.all_projects {
        None
    } else {
        project_of_session(input, state.as_ref())
    };
    let live_from = state.as_ref().and_then(|s| s.compacted_turn);
    report.live_from_turn = live_from;
    let embedder = OnnxEmbedder::load_default(Workload::Queries);
    phase(&mut report, "model");
    let engine = match embedder {
        Ok(embedder) => {
            SearchEngine::with_embedder(&store, Ok(Box::new(embedder) as Box<dyn Embedder>))?
                .with_missing_vectors(settings.embed_missing)
        }
        Err(e) => {
            // Without the model the scores are not calibrated: say nothing
            // rather than guess (`hook doctor` names the fix).
            report.skipped = Some(format!("recall needs the embedding model: {e}"));
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
    };
    phase(&mut report, "engine");
    let path = recalled_path(&files, &input.session_id);
    let mut recalled: Recalled = read_json(&path).unwrap_or(None).unwrap_or_default();
    let request = RecallRequest {
        prompt: prompt.to_string(),
        project: report.project.clone(),
        namespace: None,
        origin: None,
        live: Some(LiveContext {
            session: input.session_id.clone(),
            from_turn: live_from.unwrap_or(0),
        }),
        already: recalled.ids.clone(),
        named: recalled.leads.clone(),
        command_prefix: Some(super::reminder::command_prefix(store_root)),
    };
    let answer = recall(&engine, &request, &settings)?;
    phase(&mut report, "recall");
    if !answer.memories.is_empty() || !answer.leads.is_empty() {
        recalled
            .ids
            .extend(answer.memories.iter().map(|m| m.id.clone()));
        // A session named once (as a lead, or by a memory told from it) is
        // not named again as a lead in this conversation.
        recalled.leads.extend(
            answer
                .leads
                .iter()
                .map(|l| l.session_id.clone())
                .chain(answer.memories.iter().filter_map(|m| m.session_id.clone())),
        );
        super::write_json_atomically(&path, &recalled)?;
    }
    report.answer = Some(answer);
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The session's project: from the hook's `cwd`, else the cwd its state
/// read from the transcript.
pub fn project_of_session(input: &HookInput, state: Option<&SessionState>) -> Option<String> {
    let cwd = input
        .cwd
        .clone()
        .filter(|c| !c.as_os_str().is_empty())
        .or_else(|| state.and_then(|s| s.cwd.as_ref().map(PathBuf::from)))?;
    Some(crate::record::project::project_of(&cwd))
}
