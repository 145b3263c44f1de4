//! Search and measurement: search, eval, bench gen.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Context};

use super::*;
use crate::eval::{evaluate, EvalOptions};
use knowledge_db::embed::Workload;
use knowledge_db::error::Error;
use knowledge_db::record::Kind;
use knowledge_db::search::batch::{read_queries, run_batch};
use knowledge_db::search::{Filters, Mode, RankOptions, SearchEngine, TierFilter};
use knowledge_db::store::Store;

/// Most results one search returns (`search -k`, `qmd search -n`): a larger
/// number would only reserve memory for results no store gives (`-k 1e8`
/// reserved 7.2 GB before this limit, `-k 18446744073709551615` overflowed).
/// The MCP server's `maxResults` stops at 100.
pub(super) const MAX_RESULTS: usize = 1000;

/// `asked` within [`MAX_RESULTS`], saying so on stderr when it was cut.
pub(super) fn clamp_results(asked: usize, flag: &str) -> usize {
    if asked > MAX_RESULTS {
        eprintln!(
            "note: {flag} {asked} is more than the {MAX_RESULTS} results a search returns; returning at most {MAX_RESULTS}"
        );
        MAX_RESULTS
    } else {
        asked
    }
}

pub(super) fn search(root: &std::path::Path, args: SearchArgs) -> anyhow::Result<ExitCode> {
    let k = clamp_results(args.k, "-k");
    let store = Store::open(root)?;
    let mut filters = Filters {
        namespace: (!args.all_namespaces).then(|| args.namespace.clone()),
        origin: args.origin.clone(),
        session: args
            .session
            .as_deref()
            .map(|s| knowledge_db::store::prefix::resolve_session(&store, s))
            .transpose()?,
        kind: args.kind.map(Kind::from),
        since: args.since,
        until: args.until,
        file: args.file.clone(),
        tier: args.tier,
        min_score: if args.all { Some(0.0) } else { args.min_score },
        ..Filters::default()
    };
    let rank = args.rank.options();
    // Tier searches rank by BM25 alone: no model to load.
    let engine = if args.tier == TierFilter::L2 {
        // A queries file is a long run: a session that loads slower, embeds faster.
        let workload = match args.queries {
            Some(_) => Workload::Batches,
            None => Workload::Queries,
        };
        engine_for(&store, &rank, workload)?
    } else {
        SearchEngine::new(&store)?
    };
    filters.project = match (&args.project, args.all_projects) {
        (_, true) => None,
        (Some(dir), false) => Some(knowledge_db::record::project::project_of(dir)),
        (None, false) => engine.default_project(
            knowledge_db::record::project::current(),
            filters.namespace.as_deref(),
        )?,
    };
    if let Some(path) = &args.queries {
        let queries = read_queries(path)?;
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        run_batch(
            &engine,
            &queries,
            k,
            &filters,
            &rank,
            args.scope_field.as_deref(),
            |result| {
                serde_json::to_writer(&mut out, &result)
                    .map_err(|e| Error::io("stdout", e.into()))?;
                out.write_all(b"\n").map_err(|e| Error::io("stdout", e))
            },
        )?;
        out.flush().context("writing results")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut phrasings = vec![args.query.clone().unwrap_or_default()];
    phrasings.extend(args.or.iter().cloned());
    let response = engine.search_phrasings(&phrasings, k, &filters, &rank)?;
    if args.format == SearchFormat::Openclaw {
        // The search logged these reads already: read the sources without `get`.
        let searcher = store.reader()?.searcher();
        let sources = response
            .results
            .iter()
            .map(|hit| {
                let record = knowledge_db::store::get_record(&searcher, store.fields(), &hit.id)?;
                Ok(record.map(|r| r.source))
            })
            .collect::<knowledge_db::Result<Vec<_>>>()?;
        output::print_json(&knowledge_db::integrations::openclaw::search_payload(
            &response, &sources,
        ))?;
    } else if args.json || args.format == SearchFormat::Json {
        output::print_json(&response)?;
    } else {
        output::print_search(&response, args.color.on(), args.explain);
    }
    knowledge_db::upkeep::after_read(&store, response.records_without_vector);
    Ok(ExitCode::SUCCESS)
}

pub(super) fn eval(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let has = |file: &str| args.corpus.join(file).is_file();
    if !has("queries.jsonl") || !(has("corpus.jsonl") || has("transcripts.txt")) {
        bail!(Error::Usage(format!(
            "{} is not an evaluation folder; --corpus takes a BEIR folder (corpus.jsonl, \
             queries.jsonl, qrels/*.tsv) or an agent-questions folder (transcripts.txt, \
             queries.jsonl, qrels/records.tsv, qrels/sessions.tsv)",
            args.corpus.display()
        )));
    }
    let options = EvalOptions {
        corpus_dir: args.corpus.clone(),
        scope_field: args.scope_field.clone(),
        no_scope: args.no_scope,
        store_dir: args.keep_store.clone(),
        group_by: args.group_by.clone(),
        runs: if args.compare {
            crate::eval::comparison_runs()
        } else {
            vec![args.rank.options()]
        },
        dump_candidates: args.dump_candidates.clone(),
        negatives: args.negatives.clone(),
        min_score: args.min_score,
    };
    let needs_vectors = options.runs.iter().any(|r| r.mode != Mode::Bm25);
    let embedder = if needs_vectors {
        load_embedder(Workload::Batches)
    } else {
        Err("not used in --mode bm25".to_string())
    };
    let bar = output::progress_bar();
    let report = evaluate(&options, embedder, &mut |phase, done, total| {
        bar.set_message(phase.to_string());
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&report)?;
    } else {
        eval_output::print_eval(&report);
    }
    Ok(ExitCode::SUCCESS)
}

/// A search engine for `rank`: BM25 alone needs no model; otherwise the model is
/// loaded only if the store has vectors to compare with, set up for one query
/// (fast to load) or for many (`workload`).
pub(super) fn engine_for(
    store: &Store,
    rank: &RankOptions,
    workload: Workload,
) -> anyhow::Result<SearchEngine> {
    if rank.mode == Mode::Bm25 {
        return Ok(SearchEngine::new(store)?);
    }
    let searcher = store.reader()?.searcher();
    let coverage = knowledge_db::vectors::coverage(&searcher)?;
    let embedder = if coverage.with_vector == 0 && coverage.without_vector > 0 {
        Err("no record in the store has a vector yet (run `knowledge-db embed`)".to_string())
    } else {
        load_embedder(workload)
    };
    Ok(SearchEngine::with_embedder(store, embedder)?)
}

pub(super) fn bench_gen(args: GenArgs) -> anyhow::Result<ExitCode> {
    let options = crate::bench::gen::GenOptions {
        from: args.corpus.from.clone(),
        records: args.corpus.records,
        queries: args.corpus.queries,
        seed: args.corpus.seed,
        out: args.out.clone(),
    };
    let bar = output::progress_bar();
    bar.set_length(args.corpus.records as u64);
    bar.set_message("generating records");
    let summary = crate::bench::gen::generate(&options, &mut |n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    if args.json {
        output::print_json(&serde_json::json!({
            "out": args.out,
            "sessions_read": summary.sessions_read,
            "source_lines": summary.source_lines,
            "records": summary.records,
            "segments": summary.segments,
            "tasks": summary.tasks,
            "messages": summary.messages,
            "queries": summary.queries,
            "bytes_written": summary.bytes_written,
        }))?;
    } else {
        println!(
            "wrote {} records ({} segments, {} tasks, {} messages) and {} queries from {} sessions to {}",
            summary.records,
            summary.segments,
            summary.tasks,
            summary.messages,
            summary.queries,
            summary.sessions_read,
            args.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
