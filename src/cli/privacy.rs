//! `knowledge-db forget`: records removed from both tiers for good (see
//! `tiers::forget`), and the hooks' files of a forgotten session.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::output;
use knowledge_db::store::Store;
use knowledge_db::tiers::forget::{self, ForgetReport, ForgetWhat};

pub const FORGET_HELP: &str = "\
Removes records from everywhere the store keeps their text: the searchable store (the
text index's segments holding them are rewritten without them, so their words leave the
disk, unlike `delete`), the archive (its files rewritten), the copies of a forgotten
prompt kept as other replies' context, the read positions of forgotten sessions'
transcripts and the Claude Code hooks' files of a forgotten session. A tombstone for each
id (or the session) stays in <store>/tombstones.json: ingesting the same transcript again,
capture, MCP memory_add and sync all leave the records out. `--undo` lifts it (the records
come back with the next ingest of their transcript). A forget that was killed is finished by
the next one.

--query forgets every record (both tiers) holding all the words of the query, whatever its
score: run it with --dry-run first to see the list; it asks before forgetting (or --yes).

Examples:
  knowledge-db forget 4f1c9a2e:u17 4f1c9a2e:a17.0
  knowledge-db forget --session 4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10
  knowledge-db forget --query \"staging database password\" --dry-run
  knowledge-db forget --query \"staging database password\" --yes
  knowledge-db forget --undo --session 4f1c9a2e-0b7d-4e55-9a51-3c2f8d1e7a10
  knowledge-db forget --list";

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Record ids to forget
    #[arg(value_name = "ID", conflicts_with_all = ["session", "query", "list"])]
    ids: Vec<String>,

    /// Forget every record of this session
    #[arg(long, value_name = "ID", conflicts_with_all = ["query", "list"])]
    session: Option<String>,

    /// Forget every record holding all these words
    #[arg(long, value_name = "WORDS", conflicts_with = "list")]
    query: Option<String>,

    /// List what would be forgotten; change nothing
    #[arg(long)]
    dry_run: bool,

    /// Forget what --query finds without asking
    #[arg(long, short = 'y')]
    yes: bool,

    /// Lift the tombstones of these ids or this session instead
    #[arg(long, conflicts_with_all = ["query", "dry_run", "list"])]
    undo: bool,

    /// List the tombstones
    #[arg(long)]
    list: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub fn forget(root: &Path, args: ForgetArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let timeout = store.lock_timeout(args.lock_timeout);
    if args.list {
        let list = forget::list(&store)?;
        if args.json {
            output::print_json(&list)?;
        } else {
            for (kind, stones) in &list {
                for (name, stone) in stones {
                    println!("{kind:<8} {name}  ({} at {})", stone.by, stone.at);
                }
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let what = match (&args.session, &args.query) {
        // A short id stands for the one stored session it starts; an
        // unknown one is tombstoned as given (it may come in later).
        (Some(session), _) => ForgetWhat::Session(knowledge_db::store::prefix::resolve_session(
            &store, session,
        )?),
        (None, Some(query)) => ForgetWhat::Query(query.clone()),
        (None, None) if !args.ids.is_empty() => ForgetWhat::Ids(args.ids.clone()),
        (None, None) => anyhow::bail!(knowledge_db::Error::Usage(
            "name what to forget: record ids, --session ID or --query WORDS (see --help)".into()
        )),
    };
    if args.undo {
        let report = forget::undo(&store, &what, timeout)?;
        if args.json {
            output::print_json(&report)?;
        } else {
            println!(
                "lifted {} tombstone{}; the records come back with the next ingest of their transcript",
                report.lifted.len(),
                if report.lifted.len() == 1 { "" } else { "s" }
            );
            if !report.not_forgotten.is_empty() {
                eprintln!("note: not forgotten: {}", report.not_forgotten.join(", "));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let ForgetWhat::Query(query) = &what {
        if !args.dry_run && !args.yes {
            let preview = forget::forget(&store, &what, true, timeout)?;
            let count = preview.l2.len() + preview.l3.len();
            if count == 0 {
                println!("no record holds every word of {query:?}: nothing to forget");
                return Ok(ExitCode::SUCCESS);
            }
            if !std::io::stdin().is_terminal() {
                anyhow::bail!(knowledge_db::Error::Usage(format!(
                    "--query {query:?} would forget {count} records; check them with --dry-run, then add --yes"
                )));
            }
            eprint!("forget {count} records holding every word of {query:?}? [y/N] ");
            let mut answer = String::new();
            std::io::stdin().read_line(&mut answer)?;
            if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
                println!("nothing forgotten");
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    let report = forget::forget(&store, &what, args.dry_run, timeout)?;
    let hook_files: usize = if args.dry_run {
        0
    } else {
        report
            .sessions
            .iter()
            .map(|s| knowledge_db::integrations::hooks::forget_session_files(root, s))
            .sum()
    };
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["hook_files_removed"] = serde_json::json!(hook_files);
        output::print_json(&value)?;
    } else {
        print_report(&report, hook_files);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_report(r: &ForgetReport, hook_files: usize) {
    let total = r.l2.len() + r.l3.len();
    if r.dry_run {
        println!(
            "would forget {total} record{} ({} live, {} archived):",
            plural(total),
            r.l2.len(),
            r.l3.len()
        );
        for id in r.l2.iter().chain(&r.l3) {
            println!("  {id}");
        }
        return;
    }
    println!(
        "forgot {total} record{} ({} live, {} archived); {} text-index segment{} and {} archive file{} rewritten without them; {} repl{} lost a forgotten prompt's text{}",
        plural(total),
        r.l2.len(),
        r.l3.len(),
        r.segments_rewritten,
        plural(r.segments_rewritten),
        r.archive_files_rewritten,
        plural(r.archive_files_rewritten),
        r.contexts_cleared,
        if r.contexts_cleared == 1 { "y" } else { "ies" },
        if hook_files > 0 {
            format!("; {hook_files} hook files removed")
        } else {
            String::new()
        }
    );
    if !r.missing.is_empty() {
        eprintln!(
            "note: not in the store (tombstoned all the same, so they never come in): {}",
            r.missing.join(", ")
        );
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

pub const SCRUB_HELP: &str = "\
Every write redacts secrets and drops <private> spans before anything reaches disk; a store
written before that (or before you added a [privacy] pattern) still holds what it was given.
`scrub` sends everything the store keeps through the same redaction and rewrites what
changed: live records (re-embedded by the upkeep, since their old vectors came from the
secret text; the text-index segments holding the old versions are rewritten so their words
leave the disk), archived records (archive files rewritten, the L3 index rebuilt for them),
and the files beside them that quote transcripts (the hooks' session state, queues and
blocks, the ingest read positions, hooks.log). It says how many values of which kinds it
replaced. Running it again finds nothing; a scrub that was killed is finished by running it
again.

Examples:
  knowledge-db scrub --dry-run        # what would be replaced, by kind; nothing written
  knowledge-db scrub
  knowledge-db scrub --json";

#[derive(Debug, Args)]
pub struct ScrubArgs {
    /// Count what would be replaced; write nothing
    #[arg(long)]
    dry_run: bool,

    /// Seconds to wait for another writer [default: from config.toml, 30]
    #[arg(long, value_name = "SECS")]
    lock_timeout: Option<f64>,

    /// Print JSON instead of text
    #[arg(long)]
    json: bool,
}

pub fn scrub(root: &Path, args: ScrubArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let timeout = store.lock_timeout(args.lock_timeout);
    let report = knowledge_db::tiers::scrub::scrub(&store, args.dry_run, timeout)?;
    if !args.dry_run && report.vectors_dropped > 0 {
        knowledge_db::upkeep::after_write(&store, Some(report.vectors_dropped as u64));
    }
    if args.json {
        output::print_json(&report)?;
        return Ok(ExitCode::SUCCESS);
    }
    let values: u64 = report.found.kinds.values().sum();
    let (verb, drop) = if report.dry_run {
        ("would replace", "drop")
    } else {
        ("replaced", "dropped")
    };
    if !report.forgotten_files.is_empty() {
        println!(
            "{} {} file{} kept for a forgotten session:",
            if report.dry_run {
                "would remove"
            } else {
                "removed"
            },
            report.forgotten_files.len(),
            plural(report.forgotten_files.len())
        );
        for file in &report.forgotten_files {
            println!("  {file}");
        }
    }
    if report.found.is_empty() {
        println!("no secret or private span found: nothing to scrub");
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{verb} {values} secret value{} and {drop} {} private span{} in {} live record{}, {} archived record{} and {} other file{}",
        plural(values as usize),
        report.found.private_spans,
        plural(report.found.private_spans as usize),
        report.l2_records,
        plural(report.l2_records),
        report.l3_records,
        plural(report.l3_records),
        report.side_files,
        plural(report.side_files),
    );
    for (kind, count) in &report.found.kinds {
        println!("  {count:>6}  {kind}");
    }
    if !report.dry_run {
        println!(
            "{} text-index segment{} and {} archive file{} rewritten; {} vector{} to embed again (the upkeep does it)",
            report.segments_rewritten,
            plural(report.segments_rewritten),
            report.archive_files_rewritten,
            plural(report.archive_files_rewritten),
            report.vectors_dropped,
            plural(report.vectors_dropped),
        );
    }
    Ok(ExitCode::SUCCESS)
}
