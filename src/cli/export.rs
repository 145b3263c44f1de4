//! `knowledge-db export`: every stored record as a JSON line `add` takes back.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, ValueEnum};

use super::{output, KindArg};
use knowledge_db::export::{export, ExportOptions, ExportReport, Tiers};
use knowledge_db::store::Store;

pub(crate) const AFTER_HELP: &str = "\
Each line holds one record: the JSON it was given (`source`) and what the store
keeps beside it (kind, namespace, tier, when it arrived, access counts, when it
was archived, and its embedding unless --no-vectors). `knowledge-db add` reads
such lines back as the records they were, archived ones into the archive, and
never embeds a text whose vector the line carries.

Examples:
  knowledge-db export --out backup.jsonl                       # the whole store
  knowledge-db --store new-store add backup.jsonl              # ... restored elsewhere
  knowledge-db export --tier l3 --kind segment --no-vectors | gzip > old-segments.jsonl.gz
  knowledge-db export --session 4f1c9a2e --namespace myproj";

#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// Tiers to export: l2 (the store), l3 (the archive) or all
    #[arg(long, value_enum, default_value_t = TierArg::All)]
    tier: TierArg,

    /// Only records of this kind
    #[arg(long, value_enum)]
    kind: Option<KindArg>,

    /// Only records of this session
    #[arg(long, value_name = "ID")]
    session: Option<String>,

    /// Only records of this namespace [default: every namespace]
    #[arg(long, value_name = "NS", conflicts_with = "all_namespaces")]
    namespace: Option<String>,

    /// Every namespace (the default; for symmetry with `search`)
    #[arg(long)]
    all_namespaces: bool,

    /// Leave the embeddings out: a smaller file, but loading it runs the model again
    #[arg(long)]
    no_vectors: bool,

    /// Write to this file (atomically: complete or not there) instead of stdout
    #[arg(long, short = 'o', value_name = "FILE")]
    out: Option<PathBuf>,

    /// With --out: print the summary as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TierArg {
    L2,
    L3,
    All,
}

pub(crate) fn run(root: &Path, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = Store::open(root)?;
    let options = ExportOptions {
        tiers: match args.tier {
            TierArg::L2 => Tiers::L2,
            TierArg::L3 => Tiers::L3,
            TierArg::All => Tiers::All,
        },
        kind: args.kind.map(Into::into),
        session: args.session.clone(),
        namespace: args.namespace.clone(),
        without_vectors: args.no_vectors,
    };
    let bar = output::spinner("exporting records");
    let mut progress = |n: u64| {
        if n.is_multiple_of(1024) {
            bar.set_message(format!("exported {n} records"));
        }
    };
    let report = match &args.out {
        Some(path) => export_to_file(&store, &options, path, &mut progress)?,
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let report = export(&store, &options, &mut out, &mut progress)?;
            out.flush().context("writing the export to stdout")?;
            report
        }
    };
    bar.finish_and_clear();
    let summary = format!(
        "exported {} records ({} in L2, {} archived; {} with their vector), {}",
        report.records,
        report.l2,
        report.l3,
        report.with_vector,
        knowledge_db::record::input::human_bytes(report.bytes)
    );
    match (&args.out, args.json) {
        (Some(_), true) => output::print_json(&report)?,
        (Some(path), false) => println!("{summary} to {}", path.display()),
        // stdout holds the records: the summary goes to stderr.
        (None, _) => eprintln!("{summary}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Exports into a temporary file beside `path`, synced, then renamed over it:
/// an interrupted export never leaves a partial file under the name given.
fn export_to_file(
    store: &Store,
    options: &ExportOptions,
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> anyhow::Result<ExportReport> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let temp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let mut out = std::io::BufWriter::new(temp);
    let report = export(store, options, &mut out, progress)?;
    let temp = out
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", path.display()))?;
    temp.as_file()
        .sync_all()
        .with_context(|| format!("writing {}", path.display()))?;
    temp.persist(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(report)
}
