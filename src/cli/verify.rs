//! `knowledge-db verify` and `knowledge-db repair`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::output;
use knowledge_db::tiers::verify::{repair_root, verify_root, VerifyReport};

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RepairArgs {
    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_verify(root: &Path, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let bar = output::progress_bar();
    bar.set_message("verifying records");
    let report = verify_root(root, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    // The viewer's health page shows the last answer; a store this user may
    // not write to is still verified.
    if let Err(e) = report.save_as_last(root) {
        eprintln!("note: the report was not saved for `knowledge-db ui`: {e}");
    }
    if args.json {
        output::print_json(&report)?;
    } else {
        print_checks(&report);
        if !report.ok {
            eprintln!("problems found; `knowledge-db repair` rebuilds the derived files it can");
        }
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub(crate) fn run_repair(root: &Path, args: RepairArgs) -> anyhow::Result<ExitCode> {
    // Only the config is read here: the text index may be too damaged to
    // open, and the config itself may be (repair replaces it, saying so).
    let configured = knowledge_db::store::Config::load(&root.join("config.toml"))
        .map(|c| c.limits.lock_timeout_secs)
        .unwrap_or(30.0);
    let secs = args.lock_timeout.unwrap_or(configured);
    let lock_timeout = std::time::Duration::from_secs_f64(secs.max(0.0));
    let bar = output::progress_bar();
    bar.set_message("checking and rebuilding");
    let report = repair_root(root, lock_timeout, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
    } else {
        if let Some(note) = &report.config_replaced {
            println!("{note}");
        }
        if let Some(text) = &report.text_rebuilt {
            println!(
                "text index rebuilt: {} record(s) re-indexed from {} segment document store(s); the damaged index is kept at {}",
                text.records_recovered,
                text.segments_read,
                text.damaged_index.display()
            );
            for note in &text.notes {
                println!("note: {note}");
            }
            for id in &text.kept_in_archive {
                println!("not in the text index but kept in the archive (L3): {id}");
            }
            for id in &text.duplicates_resolved {
                println!("stored twice, kept the copy added last: {id}");
            }
            for id in &text.suspect {
                println!("recovered, but its JSON does not match its stored version hash (check it): {id}");
            }
        }
        for path in &report.removed {
            println!("removed damaged {}", path.display());
        }
        println!(
            "rebuilt from the stored embeddings: {} vector file(s), {} graph(s) in place",
            report.vector_files, report.graphs
        );
        print_checks(&report.after);
        for problem in &report.unrepairable {
            eprintln!("cannot repair: {problem}");
        }
    }
    Ok(if report.unrepairable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_checks(report: &VerifyReport) {
    for check in &report.checks {
        println!(
            "{:<5} {:<22} {}",
            match (check.ok, check.warning) {
                (false, _) => "FAIL",
                (true, true) => "warn",
                (true, false) => "ok",
            },
            check.name,
            check.detail
        );
    }
    if let Some(pending) = &report.pending {
        println!("{:<5} {:<22} {pending}", "note", "pending operation");
    }
}
