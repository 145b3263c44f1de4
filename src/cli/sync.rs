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
others shared (or, with [sync] pull, those of the projects this machine works
on), searchable at once with the vectors Postgres holds. Nothing is pushed
unless a scope is shared; conflicts go to the newer write.

The server: --url, else $KNOWLEDGE_DB_SYNC_URL, else [sync] url in config.toml
(postgres://user@host:5432/db?sslmode=require, or service=NAME from
pg_service.conf; TLS certificates are always verified, add sslrootcert=FILE
for a private CA). The password comes from the URL, PGPASSWORD, the service
file, or ~/.pgpass (PGPASSFILE), as with psql. The tables are created on first
use (the role needs CREATE there, and pgvector must be installed).

config.toml:
  [sync]
  url = \"postgres://kdb@db.internal/team?sslmode=require\"
  share = [\"team\", \"project:/home/me/src/api\"]   # namespaces, projects, or \"*\"
  pull = [\"handbook\"]  # the projects worked on here, plus these (default [\"*\"]: all)
  every = \"5m\"        # the background upkeep syncs this often
  origin = \"ana@laptop\" # the name others see on your records (default user@host)

Examples:
  knowledge-db sync --url postgres://kdb@localhost/team --share team
  KNOWLEDGE_DB_SYNC_URL=postgres://kdb@db/team knowledge-db sync
  knowledge-db sync --status --json
  knowledge-db sync --no-push        # only bring in what others shared
  knowledge-db sync --pull project:/home/me/src/web   # also pull that project";

#[derive(Debug, Args)]
pub(crate) struct SyncArgs {
    /// The server (libpq URL); overrides $KNOWLEDGE_DB_SYNC_URL and [sync] url
    #[arg(long, value_name = "URL")]
    url: Option<String>,

    /// Push this scope (repeatable): NAME or namespace:NAME, project:PATH, or *;
    /// replaces [sync] share for this run
    #[arg(long, value_name = "SCOPE")]
    share: Vec<String>,

    /// Pull this scope (repeatable): * for everything, or project:PATH and
    /// NAME (namespace) on top of the projects worked on here; replaces
    /// [sync] pull for this run
    #[arg(long, value_name = "SCOPE")]
    pull: Vec<String>,

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
        pull: (!args.pull.is_empty()).then_some(args.pull),
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
    if let Some(from) = report.migrated_from {
        eprintln!(
            "knowledge-db sync: upgraded the server's sync tables from version {from} to {}; \
             machines on an older knowledge-db stop syncing (with a message) until they upgrade",
            sync::remote::SCHEMA_VERSION
        );
    }
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
    if !r.pulled_scope.is_empty() && r.pulled_scope != ["*"] {
        lines.push(format!(
            "  pulls {}; {} record(s) on the server left remote{}",
            r.pulled_scope.join(", "),
            r.left_remote,
            if r.backfilled > 0 {
                format!(
                    "; {} earlier record(s) pulled for what the scope added",
                    r.backfilled
                )
            } else {
                String::new()
            }
        ));
    }
    if r.caught_up {
        lines.push(format!(
            "  the server had compacted deletes this store had not pulled: every id synced here \
             was checked against it, {} record(s) deleted here",
            r.compacted_deletes_here
        ));
    }
    if r.compacted > 0 {
        lines.push(format!(
            "  {} tombstone(s) compacted on the server (every machine had them)",
            r.compacted
        ));
    }
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
    lines.push(describe_pull(s));
    if let Some(e) = &s.last_error {
        lines.push(format!(
            "the last sync failed at {} ({} in a row): {}",
            e.at, s.failures, e.message
        ));
    }
    lines
}

/// What the store pulls and what it leaves on the server.
fn describe_pull(s: &Status) -> String {
    let list = |scopes: &[(String, u64)]| -> String {
        const SHOWN: usize = 5;
        let mut parts: Vec<String> = scopes
            .iter()
            .take(SHOWN)
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        if scopes.len() > SHOWN {
            parts.push(format!("and {} more", scopes.len() - SHOWN));
        }
        parts.join(", ")
    };
    if s.pull == ["*"] {
        return "pulls everything the server holds ([sync] pull = [\"*\"])".to_string();
    }
    let mut line = format!(
        "pulls {} ({} worked on here)",
        if s.pull.is_empty() {
            "nothing yet (no project worked on, none named in [sync] pull)".to_string()
        } else {
            s.pull.join(", ")
        },
        s.worked_on.len()
    );
    match (&s.pulled_scopes, &s.remote_scopes) {
        (Some(pulled), Some(remote)) => {
            let total = |v: &[(String, u64)]| v.iter().map(|(_, n)| n).sum::<u64>();
            line.push_str(&format!(
                "; at the last sync: {} record(s) pulled",
                total(pulled)
            ));
            if remote.is_empty() {
                line.push_str(", none left remote");
            } else {
                line.push_str(&format!(
                    ", {} record(s) in {} scope(s) left remote: {}",
                    total(remote),
                    remote.len(),
                    list(remote)
                ));
            }
        }
        _ => line.push_str("; what the server holds is counted at the next sync"),
    }
    line
}
