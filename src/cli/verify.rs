//! `knowledge-db verify` and `knowledge-db repair`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::output;
use crate::store::verify::{repair, verify, VerifyReport};
use crate::store::Store;

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
    let store = Store::open(root)?;
    let bar = output::progress_bar();
    bar.set_message("verifying records");
    let report = verify(&store, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
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
    let store = Store::open(root)?;
    let bar = output::progress_bar();
    bar.set_message("checking and rebuilding");
    let report = repair(
        &store,
        store.lock_timeout(args.lock_timeout),
        &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        },
    )?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
    } else {
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
            if check.ok { "ok" } else { "FAIL" },
            check.name,
            check.detail
        );
    }
}
