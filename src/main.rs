//! The `knowledge-db` command: parse arguments, run, map errors to exit codes.
//! All logic lives in the library (`knowledge_db::cli`).

/// mimalloc instead of the system allocator: indexing allocates and frees
/// millions of small tokens and postings buffers (see the README's benchmarks).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    knowledge_db::cli::main()
}
