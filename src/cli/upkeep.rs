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
            value["off"] = upkeep::disabled_by(&store).into();
            output::print_json(&value)?;
        } else {
            println!(
                "{}",
                describe(&status, waiting, upkeep::disabled_by(&store).as_deref())
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut bar = if args.background {
        super::progress::Progress::hidden("upkeep")
    } else {
        super::progress::Progress::new("upkeep")
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
        bar.phase(step, "records", total);
        bar.set(done, total, "");
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
    bar.finish();
    let report = report?;
    if args.background {
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        output::print_json(&report)?;
    } else if report.another_worker {
        println!(
            "a background upkeep worker is already running; {}",
            describe(
                &upkeep::status(&store),
                store.records_without_vector()?,
                None
            )
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

/// The upkeep's state in one or two lines, for `upkeep --status` and
/// `stats`: whether it is off (and why), what a running worker does, how
/// fast and how long it has left.
pub(crate) fn describe(status: &Status, vectors_waiting: u64, off: Option<&str>) -> String {
    let mut text = if status.running {
        let pace = pace(status, vectors_waiting)
            .map(|p| format!(", {p}"))
            .unwrap_or_default();
        format!(
            "running (pid {}, since {}): {}, {} vectors computed, {} records waiting{pace}",
            status.pid.map_or("?".into(), |p| p.to_string()),
            status.started_at.as_deref().unwrap_or("?"),
            status.step.as_deref().unwrap_or("starting"),
            status.embedded,
            vectors_waiting
        )
    } else {
        let state = match off {
            Some(why) => format!(
                "off ({why}): nothing runs in the background; `knowledge-db upkeep` runs it now"
            ),
            None => "idle".to_string(),
        };
        match &status.last_run {
            Some(run) => format!(
                "{state}; last run finished {} ({} vectors, {} access counts folded, {} archived, {} pruned); {} records without a vector",
                run.finished_at, run.embedded, run.access_folded, run.archived, run.pruned, vectors_waiting
            ),
            None => format!("{state}; no run yet; {vectors_waiting} records without a vector"),
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

/// A running worker's rate and the time its vectors have left, at the
/// average rate since it started: `410 vectors/s, about 1m 20s left`.
fn pace(status: &Status, waiting: u64) -> Option<String> {
    let started = knowledge_db::record::parse::parse_time(status.started_at.as_deref()?)?;
    let now = knowledge_db::record::parse::parse_time(&knowledge_db::now_rfc3339())?;
    let elapsed = std::time::Duration::from_secs(now.saturating_sub(started).max(0) as u64);
    if status.embedded == 0 || elapsed.as_secs() == 0 {
        return None;
    }
    // Drafts wait first; then the drafts the full model makes again.
    let waiting = if waiting > 0 {
        waiting
    } else {
        status.vectors_outdated
    };
    let per_second = status.embedded as f64 / elapsed.as_secs_f64();
    let mut text = format!("{per_second:.0} vectors/s");
    match super::progress::time_left(status.embedded, status.embedded + waiting, elapsed) {
        Some(left) => text.push_str(&format!(", about {} left", super::progress::duration(left))),
        None if waiting > 0 => text.push_str(", time left not known yet"),
        None => {}
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(seconds_ago: i64, embedded: u64) -> Status {
        let now =
            knowledge_db::record::parse::parse_time(&knowledge_db::now_rfc3339()).expect("now");
        Status {
            running: true,
            pid: Some(4242),
            started_at: Some(knowledge_db::record::parse::format_time(now - seconds_ago)),
            step: Some("vectors".into()),
            embedded,
            ..Status::default()
        }
    }

    #[test]
    fn a_running_worker_says_its_rate_and_the_time_left() {
        let line = describe(&running(100, 1000), 1000, None);
        assert!(line.contains("10 vectors/s, about 1m 40s left"), "{line}");
    }

    #[test]
    fn an_upkeep_turned_off_says_so_and_why() {
        let line = describe(
            &Status::default(),
            3,
            Some("KNOWLEDGE_DB_UPKEEP=off is set in the environment"),
        );
        assert!(
            line.starts_with("off (KNOWLEDGE_DB_UPKEEP=off is set in the environment)"),
            "{line}"
        );
        assert!(describe(&Status::default(), 3, None).starts_with("idle"));
    }
}
