//! The record commands: init, add, get, delete, stats, embed.

use std::process::ExitCode;

use super::*;
use knowledge_db::embed::{Embedder, OnnxEmbedder, Workload};
use knowledge_db::record::{Kind, ParseOptions};
use knowledge_db::store::Store;

pub(super) fn init(root: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let store = Store::init(root)?;
    let retention = &store.config().retention;
    if json {
        output::print_json(&serde_json::json!({
            "store": store.root(),
            "format_version": store.config().format_version,
            "retention": retention,
        }))?;
    } else {
        let config = store.root().join("config.toml");
        println!(
            "created an empty store at {} (owner-only)\n\
             \n\
             Retention ([retention] in {}):\n  \
             records older than {} that nobody has read for {} move to the archive (still searchable with --tier all);\n  \
             {} after archiving, archived raw messages are pruned to one summary per session (segment and task summaries stay).\n  \
             Edit those durations to change it, or set maintain_on_write = false to archive only when you run `knowledge-db maintain`.\n\
             \n\
             Next: knowledge-db ingest ~/.claude/projects   # your Claude Code history\n      \
             knowledge-db hook install                # store and recall every new session",
            store.root().display(),
            config.display(),
            retention.archive_older_than,
            retention.archive_idle_for,
            retention.prune_after,
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn add(root: &std::path::Path, args: AddArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let options = ParseOptions {
        kind: match args.format {
            Format::Auto => None,
            Format::Segment => Some(Kind::Segment),
            Format::Task => Some(Kind::Task),
            Format::Message => Some(Kind::Message),
            Format::Note | Format::Beir => Some(Kind::Note),
        },
        namespace: args.namespace.clone(),
        namespace_field: args.namespace_field.clone(),
        added_at: knowledge_db::now_rfc3339(),
    };
    let spinner = output::spinner("reading and indexing records");
    let mut stdin = std::io::stdin().lock();
    if args.dry_run {
        let batch = knowledge_db::load::read_records(&store, &args.paths, &mut stdin, &options)?;
        spinner.finish_and_clear();
        if args.json {
            output::print_json(&serde_json::json!({
                "dry_run": true,
                "valid_records": batch.len(),
                "export_lines": batch.imported.len(),
                "bytes_read": batch.bytes,
            }))?;
        } else {
            println!(
                "{} valid records ({}); nothing written (--dry-run)",
                batch.len(),
                knowledge_db::record::input::human_bytes(batch.bytes)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let when = args.embed.unwrap_or(match store.config().embedding.on_add {
        knowledge_db::store::config::EmbedOnAdd::Now => EmbedWhen::Now,
        knowledge_db::store::config::EmbedOnAdd::Later => EmbedWhen::Later,
    });
    let mut embedder = match when {
        EmbedWhen::Now => match load_embedder(Workload::Batches) {
            Ok(embedder) => Some(embedder),
            Err(why) => {
                eprintln!("note: {why}; adding for BM25 search only (run `knowledge-db embed` once the model is installed)");
                None
            }
        },
        EmbedWhen::Later => None,
    };
    // A segment a queue waits for moves its queue entry (see hooks::queue).
    let started = std::time::Instant::now();
    let batch = knowledge_db::load::read_records(&store, &args.paths, &mut stdin, &options)?;
    let outcome = knowledge_db::integrations::hooks::queue::add_and_settle(
        &store,
        batch,
        embedder.as_mut().map(|e| e.as_mut() as &mut dyn Embedder),
        store.lock_timeout(args.lock_timeout),
        started,
    )?;
    let summary = &outcome.summary;
    spinner.finish_and_clear();
    if args.json {
        let mut value = serde_json::to_value(summary)?;
        value["compressed"] = serde_json::to_value(&outcome.compressed)?;
        output::print_json(&value)?;
    } else {
        output::print_add_summary(summary);
        for line in knowledge_db::integrations::hooks::queue::arrival_lines(&outcome.compressed) {
            println!("{line}");
        }
    }
    if let Some(why) = &outcome.queue_error {
        eprintln!("warning: the records were added, but the compression queue was not updated: {why} (the next hook call settles it)");
    }
    after_write(&store, None);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn get(root: &std::path::Path, args: GetArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in &args.ids {
        match knowledge_db::tiers::find(&store, id)? {
            Some(record) => found.push(record),
            None => missing.push(id.clone()),
        }
    }
    // One id prints the record itself; several print them together with the misses.
    if args.ids.len() == 1 {
        if let Some(record) = found.first() {
            output::print_json(&output::found_json(record))?;
        }
    } else {
        let records: Vec<_> = found.iter().map(output::found_json).collect();
        output::print_json(&serde_json::json!({"records": records, "missing": missing}))?;
    }
    if !missing.is_empty() {
        eprintln!("error: no record with id {}", missing.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn delete(root: &std::path::Path, args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let report = store.delete(&args.ids, store.lock_timeout(args.lock_timeout))?;
    if args.json {
        output::print_json(&report)?;
    } else {
        println!(
            "deleted {} record{}",
            report.deleted.len(),
            if report.deleted.len() == 1 { "" } else { "s" }
        );
    }
    if !report.deleted.is_empty() {
        // True to what is on disk: a delete marks documents deleted; their
        // bytes stay in the segment files until tantivy merges them away.
        eprintln!(
            "note: searches no longer find {}, but the text stays in the index's segment files \
             until they are merged; `knowledge-db forget` purges it from disk",
            if report.deleted.len() == 1 {
                "it"
            } else {
                "them"
            }
        );
    }
    if !report.missing.is_empty() {
        eprintln!("error: no record with id {}", report.missing.join(", "));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn stats(root: &std::path::Path, json: bool) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let stats = knowledge_db::tiers::stats(&store)?;
    let status = knowledge_db::upkeep::status(&store);
    // A bad [sync] section must not hide the rest of the stats.
    let sync_status = knowledge_db::sync::status(&store).map_err(|e| e.to_string());
    if json {
        let mut value = serde_json::to_value(&stats)?;
        value["upkeep"] = serde_json::to_value(&status)?;
        value["sync"] = match &sync_status {
            Ok(status) => serde_json::to_value(status)?,
            Err(e) => serde_json::json!({ "error": e }),
        };
        output::print_json(&value)?;
    } else {
        output::print_stats(&stats);
        let described = upkeep::describe(
            &status,
            stats.vectors.without_vector,
            knowledge_db::upkeep::disabled_by(&store).as_deref(),
        );
        println!(
            "upkeep          {}",
            described.replace('\n', "\n                ")
        );
        let lines = match &sync_status {
            Ok(status) => super::sync::describe(status),
            Err(e) => vec![format!("cannot be read: {e}")],
        };
        println!("sync            {}", lines.join("\n                "));
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn embed(root: &std::path::Path, args: EmbedArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let mut embedder = if args.draft {
        OnnxEmbedder::load_draft(&knowledge_db::embed::ModelLocation::locate())
            .map(|e| Box::new(e) as Box<dyn Embedder>)
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e} (the draft model comes with `{}`)",
                    knowledge_db::embed::SETUP_COMMAND
                )
            })?
    } else {
        load_embedder(Workload::Batches).map_err(anyhow::Error::msg)?
    };
    let mut bar = super::progress::Progress::new("embed");
    let phase = if args.draft { "Drafting" } else { "Embedding" };
    bar.phase(phase, "records", 0);
    let started = std::time::Instant::now();
    let done = store.embed_missing(
        embedder.as_mut(),
        args.batch,
        store.lock_timeout(args.lock_timeout),
        &mut |done, total| bar.set(done as u64, total as u64, ""),
    )?;
    bar.finish();
    let seconds = started.elapsed().as_secs_f64();
    if args.json {
        output::print_json(
            &serde_json::json!({"embedded": done, "drafts": args.draft, "seconds": seconds}),
        )?;
    } else if args.draft {
        println!(
            "drafted {done} vectors in {seconds:.1}s; the upkeep replaces them with the full model's"
        );
    } else {
        println!("embedded {done} records in {seconds:.1}s");
    }
    Ok(ExitCode::SUCCESS)
}
