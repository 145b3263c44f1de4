//! The `knowledge-db` command: parse arguments, run, map errors to exit codes.
//! All logic lives in the library (`knowledge_db::cli`).

fn main() -> std::process::ExitCode {
    knowledge_db::cli::main()
}
