//! Printing an evaluation for people: the dataset, the corpus and the vectors
//! used, a table of ranking quality (nDCG@10, Recall@5/10/100, MRR@10) for the
//! run or for each compared run, what the minimum score costs in recall, the
//! agent-question hit rates by kind, how often queries without a relevant record
//! got nothing, and the search latency and add speed. `eval --json` prints the
//! report with `output::print_json` instead.

use crate::eval::{EvalReport, Quality};

/// Reads one metric out of a [`Quality`].
type Metric = fn(&Quality) -> f64;

pub(super) fn print_eval(r: &EvalReport) {
    let h = &r.headline;
    println!("dataset   {}", r.dataset);
    println!(
        "corpus    {} documents, {} judged queries{}",
        r.documents,
        h.quality.queries,
        r.scope_field
            .as_ref()
            .map(|f| format!(", each scoped by metadata.{f}"))
            .unwrap_or_default()
    );
    println!("vectors   {}", r.vector);
    println!();
    if r.comparison.is_empty() {
        println!("ranking   {}", h.label());
        let mut columns = vec![("all".to_string(), &h.quality)];
        columns.extend(h.groups.iter().map(|(name, q)| (name.clone(), q)));
        print_quality_table(&columns, !h.groups.is_empty());
    } else {
        let columns: Vec<(String, &Quality)> = r
            .comparison
            .iter()
            .map(|run| (run.label(), &run.quality))
            .collect();
        print_quality_table(&columns, false);
        let latencies: Vec<String> = r
            .comparison
            .iter()
            .map(|run| format!("{:>12.2}", run.latency_ms_p50))
            .collect();
        println!("| p50 ms     | {} |", latencies.join(" | "));
    }
    print_minimum_cost(r);
    print_agent_scores(r);
    if let Some(a) = &r.abstention {
        println!();
        println!(
            "abstention      {} of {} queries without a relevant record answered with nothing ({:.1}%, minimum score {:.2})",
            a.answered_nothing,
            a.queries,
            100.0 * a.share,
            a.min_score
        );
        for (kind, (n, nothing)) in &a.by_kind {
            println!("  {kind:<14} {nothing} of {n}");
        }
    }
    println!();
    println!(
        "search latency  p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({})",
        h.latency_ms_p50,
        h.latency_ms_p95,
        h.latency_ms_p99,
        h.label()
    );
    if r.add_seconds > 0.0 {
        println!(
            "add             {:.0} records/s ({:.2}s, {} texts embedded)",
            r.add_records_per_second, r.add_seconds, r.embedded
        );
    }
}

/// What the minimum score costs each run: Recall@10 without it.
fn print_minimum_cost(r: &EvalReport) {
    let runs: Vec<&crate::eval::RunReport> = if r.comparison.is_empty() {
        vec![&r.headline]
    } else {
        r.comparison.iter().collect()
    };
    for run in runs {
        if let Some(without) = &run.without_minimum {
            println!(
                "minimum score {:.2} ({}): Recall@10 {:.4}, without it {:.4}",
                run.min_score,
                run.label(),
                run.quality.recall_at_10,
                without.recall_at_10
            );
        }
    }
}

/// Agent questions: session hit@5 and evidence hit@10 by kind, per run.
fn print_agent_scores(r: &EvalReport) {
    let runs: Vec<&crate::eval::RunReport> = if r.comparison.is_empty() {
        vec![&r.headline]
    } else {
        r.comparison.iter().collect()
    };
    if runs.iter().all(|run| run.agent.is_none()) {
        return;
    }
    println!();
    println!(
        "| kind (questions) | {} |",
        runs.iter()
            .map(|run| format!("{:>22}", run.label()))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!(
        "|------------------|{}|",
        vec!["-".repeat(24); runs.len()].join("|")
    );
    let kinds: Vec<&String> = runs[0].agent_by_kind.keys().collect();
    let row =
        |name: String,
         pick: &dyn Fn(&crate::eval::RunReport) -> Option<crate::eval::AgentScores>| {
            let cells: Vec<String> = runs
                .iter()
                .map(|run| match pick(run) {
                    Some(a) => format!(
                        "{:>22}",
                        format!(
                            "session {:.3} · evidence {:.3}",
                            a.session_hit_at_5, a.evidence_hit_at_10
                        )
                    ),
                    None => format!("{:>22}", "-"),
                })
                .collect();
            println!("| {name:<16} | {} |", cells.join(" | "));
        };
    for kind in kinds {
        let n = runs[0].agent_by_kind[kind].queries;
        row(format!("{kind} ({n})"), &|run| {
            run.agent_by_kind.get(kind).cloned()
        });
    }
    let n = runs[0].agent.as_ref().map_or(0, |a| a.queries);
    row(format!("all ({n})"), &|run| run.agent.clone());
    println!("(session: an answer session among the top 5 hits; evidence: an evidence record among the top 10)");
}

fn print_quality_table(columns: &[(String, &Quality)], with_counts: bool) {
    let width = columns
        .iter()
        .map(|(n, _)| n.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let header: Vec<String> = columns
        .iter()
        .map(|(name, _)| format!("{name:>width$}"))
        .collect();
    println!("| metric     | {} |", header.join(" | "));
    println!(
        "|------------|{}|",
        vec!["-".repeat(width + 2); columns.len()].join("|")
    );
    let rows: [(&str, Metric); 5] = [
        ("nDCG@10", |q| q.ndcg_at_10),
        ("Recall@5", |q| q.recall_at_5),
        ("Recall@10", |q| q.recall_at_10),
        ("Recall@100", |q| q.recall_at_100),
        ("MRR@10", |q| q.mrr_at_10),
    ];
    for (name, metric) in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|(_, q)| format!("{:>width$.4}", metric(q)))
            .collect();
        println!("| {name:<10} | {} |", cells.join(" | "));
    }
    if with_counts {
        let counts: Vec<String> = columns
            .iter()
            .map(|(_, q)| format!("{:>width$}", q.queries))
            .collect();
        println!("| queries    | {} |", counts.join(" | "));
    }
}
