//! The `knowledge-db` command: parse arguments, run, map errors to exit codes.
//!
//! The binary owns what only the command line needs: the flags and their
//! handlers (`cli/`), BEIR evaluation (`eval/`) and the benchmark corpora and
//! timings (`bench/`). They reach the store through the library's public API
//! (`knowledge_db`), so Cargo itself keeps the library from depending on them.

mod bench;
mod cli;
mod eval;

/// mimalloc instead of the system allocator: indexing allocates and frees
/// millions of small tokens and postings buffers (see the README's benchmarks).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
