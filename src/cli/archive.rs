//! `knowledge-db archive`, `prune`, `maintain` and `restore`: the L3 tier.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;

use super::output;
use knowledge_db::error::Error;
use knowledge_db::record::input::human_bytes;
use knowledge_db::record::time::parse_duration_secs;
use knowledge_db::store::Store;
use knowledge_db::tiers::ops::{self, RestoreWhat, Selection};
use knowledge_db::tiers::policy;

fn parse_duration(text: &str) -> Result<i64, String> {
    parse_duration_secs(text)
        .ok_or_else(|| format!("`{text}` is not a duration: use e.g. 30m, 12h, 7d, 2w"))
}

#[derive(Debug, Args)]
pub(crate) struct ArchiveArgs {
    /// Records whose own time (compressed_at, timestamp…, else when added) is at least this old
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    older_than: Option<i64>,

    /// Records nobody read (search, get) or added for at least this long
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    idle_for: Option<i64>,

    /// Records of --session whose turns end before turn N
    #[arg(long, value_name = "N", requires = "session")]
    turns_before: Option<u64>,

    /// Only records of this session
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Only records of this namespace [default: every namespace]
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,

    /// List what would move and how many bytes it frees; change nothing
    #[arg(long)]
    dry_run: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_archive(root: &Path, args: ArchiveArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let selection = Selection {
        older_than: args.older_than,
        idle_for: args.idle_for,
        turns_before: args.turns_before,
        session: args.session.clone(),
        namespace: args.namespace.clone(),
    };
    if selection.is_empty() {
        bail!(Error::Usage(
            "say what to archive: --older-than, --idle-for, --session (with --turns-before), \
             or run `knowledge-db maintain` to apply the policy in config.toml"
                .into()
        ));
    }
    let spinner = output::spinner("selecting and archiving records");
    let report = ops::archive(
        &store,
        &selection,
        args.dry_run,
        store.lock_timeout(args.lock_timeout),
    )?;
    spinner.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if report.dry_run {
        "would move"
    } else {
        "moved"
    };
    println!(
        "{verb} {} record{} from L2 to the archive (frees about {} of L2{})",
        report.records,
        if report.records == 1 { "" } else { "s" },
        human_bytes(report.l2_bytes_freed),
        if report.dry_run {
            String::new()
        } else {
            format!(
                "; wrote {} of archive in {:.1}s",
                human_bytes(report.archive_bytes_written),
                report.seconds
            )
        }
    );
    for (file, count) in &report.by_file {
        println!("  archive/{file}.jsonl.zst  {count}");
    }
    if report.dry_run {
        for id in report.ids.iter().take(50) {
            println!("  {id}");
        }
        if report.ids.len() > 50 {
            println!("  … and {} more (--json lists all)", report.ids.len() - 50);
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub(crate) struct PruneArgs {
    /// Prune records archived at least this long ago [default: retention.prune_after, 30d]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    older_than: Option<i64>,

    /// List what would be pruned; change nothing
    #[arg(long)]
    dry_run: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_prune(root: &Path, args: PruneArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let older_than = match args.older_than {
        Some(secs) => secs,
        None => store
            .config()
            .retention
            .seconds()
            .map_err(anyhow::Error::msg)?[2],
    };
    let spinner = output::spinner("pruning archived records");
    let report = ops::prune(
        &store,
        older_than,
        args.dry_run,
        store.lock_timeout(args.lock_timeout),
    )?;
    spinner.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if report.dry_run {
        "would prune"
    } else {
        "pruned"
    };
    println!(
        "{verb} {} records to summaries and {} messages into {} summaries",
        report.records_pruned, report.messages_dropped, report.message_summaries
    );
    if !report.dry_run && !report.files_rewritten.is_empty() {
        println!(
            "  rewrote {} file{}: {} -> {}",
            report.files_rewritten.len(),
            if report.files_rewritten.len() == 1 {
                ""
            } else {
                "s"
            },
            human_bytes(report.bytes_before),
            human_bytes(report.bytes_after)
        );
    }
    for p in report.pruned.iter().take(20) {
        println!("  {} {}: dropped {}", p.kind, p.id, p.dropped.join(", "));
    }
    if report.pruned.len() > 20 {
        println!(
            "  … and {} more (--json lists all)",
            report.pruned.len() - 20
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub(crate) struct MaintainArgs {
    /// Run every step now, even if the schedule says nothing is due
    #[arg(long)]
    force: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_maintain(root: &Path, args: MaintainArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let report = policy::maintain(&store, args.force, store.lock_timeout(args.lock_timeout))?;
    if args.json {
        output::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    if !report.due {
        println!(
            "nothing due (next archive check {}, next prune check {})",
            report.next_archive_check,
            report.next_prune_check.as_deref().unwrap_or("none")
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!("access counts updated for {} records", report.access_folded);
    if let Some(a) = &report.archived {
        println!("archived {} records", a.records);
    }
    if let Some(p) = &report.pruned {
        println!(
            "pruned {} records and {} messages",
            p.records_pruned, p.messages_dropped
        );
    }
    println!(
        "next archive check {}, next prune check {} ({:.2}s)",
        report.next_archive_check,
        report.next_prune_check.as_deref().unwrap_or("none"),
        report.seconds
    );
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub(crate) struct RestoreArgs {
    /// Ids of archived records
    #[arg(
        value_name = "ID",
        required_unless_present = "session",
        conflicts_with = "session"
    )]
    ids: Vec<String>,

    /// Restore every archived record of this session
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run_restore(root: &Path, args: RestoreArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let what = match &args.session {
        Some(session) => RestoreWhat::Session(session.clone()),
        None => RestoreWhat::Ids(args.ids.clone()),
    };
    // The model is loaded only if a pruned record needs a new vector.
    let report = ops::restore(
        &store,
        &what,
        || super::load_embedder(knowledge_db::embed::Workload::Batches).ok(),
        store.lock_timeout(args.lock_timeout),
    )?;
    if args.json {
        output::print_json(&report)?;
    } else {
        println!(
            "restored {} record{} to L2 ({} with their vectors, {} re-embedded, {} waiting for a vector: the background upkeep computes them)",
            report.restored.len(),
            if report.restored.len() == 1 { "" } else { "s" },
            report.vectors_kept,
            report.re_embedded,
            report.without_vector
        );
    }
    super::after_write(&store, Some(report.without_vector as u64));
    if !report.missing.is_empty() {
        eprintln!(
            "error: no archived record with id {}",
            report.missing.join(", ")
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
