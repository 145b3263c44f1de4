//! `knowledge-db upkeep`: run the store's upkeep now, or show what the
//! background worker is doing (see `knowledge_db::upkeep`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::output;
use knowledge_db::embed::Workload;
use knowledge_db::store::Store;
use knowledge_db::upkeep::{self, RunOptions, Status};

pub(crate) const AFTER_HELP: &str = "\
Writers start the upkeep in the background when something is due (records
without a vector, the access log to fold, the retention policy, an operation a
crash interrupted); it runs at the lowest priority and exits when done. This
command runs the same work in the foreground, or shows its state.
Turn the background worker off with `[upkeep] enabled = false` in config.toml
or KNOWLEDGE_DB_UPKEEP=off.

Examples:
  knowledge-db upkeep              # do what is due now, with progress
  knowledge-db upkeep --status     # is a worker running, how far is it, did it fail";

#[derive(Debug, Args)]
pub(crate) struct UpkeepArgs {
    /// Show the worker's state (running, progress, last run, last error) and exit
    #[arg(long)]
    status: bool,

    /// Run as the detached background worker: lowest priority, no output
    #[arg(long, hide = true)]
    background: bool,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(root: &Path, args: UpkeepArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    if args.status {
        let status = upkeep::status(&store);
        let waiting = store.records_without_vector()?;
        if args.json {
            let mut value = serde_json::to_value(&status)?;
            value["vectors_waiting"] = waiting.into();
            output::print_json(&value)?;
        } else {
            println!("{}", describe(&status, waiting));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let bar = if args.background {
        indicatif::ProgressBar::hidden()
    } else {
        output::progress_bar()
    };
    let mut load = || {
        knowledge_db::embed::OnnxEmbedder::load_default(Workload::Batches)
            .map(|e| Box::new(e) as Box<dyn knowledge_db::embed::Embedder>)
            .map_err(|e| e.to_string())
    };
    let mut load_draft = || {
        knowledge_db::embed::OnnxEmbedder::load_draft(&knowledge_db::embed::ModelLocation::locate())
            .map(|e| Box::new(e) as Box<dyn knowledge_db::embed::Embedder>)
            .map_err(|e| e.to_string())
    };
    let mut progress = |step: &str, done: u64, total: u64| {
        bar.set_message(step.to_string());
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = upkeep::run(
        &store,
        RunOptions {
            background: args.background,
            load_embedder: &mut load,
            load_draft_embedder: &mut load_draft,
            progress: &mut progress,
        },
    );
    bar.finish_and_clear();
    let report = report?;
    if args.background {
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        output::print_json(&report)?;
    } else if report.another_worker {
        println!(
            "a background upkeep worker is already running; {}",
            describe(&upkeep::status(&store), store.records_without_vector()?)
        );
    } else {
        let reembedded = match report.reembedded {
            0 => String::new(),
            n => format!(" ({n} drafts or outdated vectors made again by the full model)"),
        };
        println!(
            "upkeep done in {:.1}s: {} vectors computed{reembedded}, {} access counts folded, {} archived, {} pruned{}; {} records still without a vector",
            report.seconds,
            report.embedded,
            report.access_folded,
            report.archived,
            report.pruned,
            if report.recovered { ", an interrupted operation finished" } else { "" },
            report.vectors_waiting
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The upkeep's state in one or two lines, for `upkeep --status` and `stats`.
pub(crate) fn describe(status: &Status, vectors_waiting: u64) -> String {
    let mut text = if status.running {
        format!(
            "running (pid {}, since {}): {}, {} vectors computed, {} records waiting",
            status.pid.map_or("?".into(), |p| p.to_string()),
            status.started_at.as_deref().unwrap_or("?"),
            status.step.as_deref().unwrap_or("starting"),
            status.embedded,
            vectors_waiting
        )
    } else {
        match &status.last_run {
            Some(run) => format!(
                "idle; last run finished {} ({} vectors, {} access counts folded, {} archived, {} pruned); {} records without a vector",
                run.finished_at, run.embedded, run.access_folded, run.archived, run.pruned, vectors_waiting
            ),
            None => format!("idle; no run yet; {vectors_waiting} records without a vector"),
        }
    };
    if status.running && status.vectors_outdated > 0 {
        text.push_str(&format!(
            "\n{} draft vectors (or vectors made under older embedding-text rules) wait \
             to be made again by the full model (they are used meanwhile)",
            status.vectors_outdated
        ));
    }
    if let Some(error) = &status.last_error {
        text.push_str(&format!(
            "\nlast run failed at {}: {} (`knowledge-db upkeep` retries now)",
            error.at, error.message
        ));
    }
    if let (Some(why), true) = (&status.model_unavailable, vectors_waiting > 0) {
        text.push_str(&format!("\nvectors wait for the model: {why}"));
    }
    text
}
