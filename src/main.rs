//! The `perfplan` binary: everything lives in the library; this only hands over.

fn main() -> std::process::ExitCode {
    perfplan::cli::main()
}
