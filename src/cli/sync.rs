//! `knowledge-db sync`: push this store's shared records to a team's
//! Postgres and pull what others shared (see `knowledge_db::sync`), or show
//! the sync state.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::output;
use knowledge_db::store::Store;
use knowledge_db::sync::{self, Status, SyncOptions, SyncReport};

pub(crate) const AFTER_HELP: &str = "\
Each machine keeps its own store and searches it offline. A sync pushes the
records of the shared scopes that changed since the last sync (with their
embeddings, and tombstones for records deleted here), then pulls every record
others shared, searchable at once with the vectors Postgres holds. Nothing is
pushed unless a scope is shared; conflicts go to the newer write.

The server: --url, else $KNOWLEDGE_DB_SYNC_URL, else [sync] url in config.toml
(postgres://user:password@host:5432/db?sslmode=require; TLS certificates are
always verified, add sslrootcert=FILE for a private CA). The tables are created
on first use (the role needs CREATE there, and pgvector must be installed).

config.toml:
  [sync]
  url = \"postgres://kdb@db.internal/team?sslmode=require\"
  share = [\"team\", \"project:/home/me/src/api\"]   # namespaces, projects, or \"*\"
  every = \"5m\"        # the background upkeep syncs this often
  origin = \"ana@laptop\" # the name others see on your records (default user@host)

Examples:
  knowledge-db sync --url postgres://kdb@localhost/team --share team
  KNOWLEDGE_DB_SYNC_URL=postgres://kdb@db/team knowledge-db sync
  knowledge-db sync --status --json
  knowledge-db sync --no-push        # only bring in what others shared";

#[derive(Debug, Args)]
pub(crate) struct SyncArgs {
    /// The server (libpq URL); overrides $KNOWLEDGE_DB_SYNC_URL and [sync] url
    #[arg(long, value_name = "URL")]
    url: Option<String>,

    /// Push this scope (repeatable): NAME or namespace:NAME, project:PATH, or *;
    /// replaces [sync] share for this run
    #[arg(long, value_name = "SCOPE")]
    share: Vec<String>,

    /// Only pull: push nothing this time
    #[arg(long, conflicts_with = "no_pull")]
    no_push: bool,

    /// Only push: pull nothing this time
    #[arg(long)]
    no_pull: bool,

    /// Show the sync state (last sync, pending pushes, the server's records,
    /// the last error) without reaching the server
    #[arg(long)]
    status: bool,

    /// Seconds to wait for the store's writer lock (default: the config's)
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(root: &Path, args: SyncArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    if args.status {
        let status = sync::status(&store)?;
        if args.json {
            output::print_json(&status)?;
        } else {
            println!("{}", describe(&status).join("\n"));
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = SyncOptions {
        url: args.url,
        share: (!args.share.is_empty()).then_some(args.share),
        no_push: args.no_push,
        no_pull: args.no_pull,
        lock_timeout: store.lock_timeout(args.lock_timeout),
    };
    let bar = output::progress_bar();
    let mut progress = |step: &str, done: u64, total: u64| {
        bar.set_message(step.to_string());
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = sync::sync(&store, &options, &mut progress);
    bar.finish_and_clear();
    let report = report?;
    // Pulled records without a vector are embedded in the background.
    super::after_write(&store, None);
    if args.json {
        output::print_json(&report)?;
    } else {
        println!("{}", summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// What a sync did, for people.
fn summary(r: &SyncReport) -> String {
    let mut lines = vec![format!(
        "synced with {} as {} in {:.1}s",
        r.server, r.origin, r.seconds
    )];
    if r.shared.is_empty() {
        lines.push("  push: nothing is shared (--share or [sync] share names what to push)".into());
    } else {
        lines.push(format!(
            "  push: {} record(s) and {} delete(s) from {} ({} KiB){}",
            r.pushed,
            r.pushed_tombstones,
            r.shared.join(", "),
            r.push_bytes / 1024,
            if r.push_conflicts_lost > 0 {
                format!("; {} lost to newer writes elsewhere", r.push_conflicts_lost)
            } else {
                String::new()
            }
        ));
    }
    lines.push(format!(
        "  pull: {} record(s) ({} with their vectors), {} delete(s), {} already here ({} KiB)",
        r.pulled,
        r.pulled_with_vector,
        r.pulled_deletes,
        r.pulled_unchanged,
        r.pull_bytes / 1024
    ));
    if r.pulled > r.pulled_with_vector {
        lines.push(format!(
            "  {} pulled record(s) wait for a vector; the upkeep embeds them",
            r.pulled - r.pulled_with_vector
        ));
    }
    lines.push(format!("  the server holds {} record(s)", r.remote_records));
    lines.join("\n")
}

/// The sync state, for people (also used by `stats`).
pub(crate) fn describe(s: &Status) -> Vec<String> {
    if !s.configured && s.last_sync.is_none() && s.last_error.is_none() {
        return vec![format!(
            "off (no server: --url, ${}, or [sync] url)",
            sync::URL_ENV
        )];
    }
    let mut lines = vec![format!(
        "{} (from {}) as {}",
        s.server.as_deref().unwrap_or("no server named now"),
        s.url_from,
        s.origin
    )];
    lines.push(match &s.last_sync {
        Some(at) => format!(
            "last sync {at}; the server then held {} record(s); {} pulled record(s) here",
            s.remote_records.unwrap_or(0),
            s.pulled_here
        ),
        None => "never synced".into(),
    });
    lines.push(format!(
        "{} change(s) to push; shared: {}; {}",
        s.pending_pushes,
        if s.shared.is_empty() {
            "nothing".to_string()
        } else {
            s.shared.join(", ")
        },
        match s.every_secs {
            Some(secs) => format!("the upkeep syncs every {secs}s"),
            None => "no background sync ([sync] every)".into(),
        }
    ));
    if let Some(e) = &s.last_error {
        lines.push(format!(
            "the last sync failed at {} ({} in a row): {}",
            e.at, s.failures, e.message
        ));
    }
    lines
}
