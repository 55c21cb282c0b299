//! Command-line interface (clap): one file per subcommand; maps errors to exit codes.

pub mod compare;
pub mod exit;
pub mod report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Declarative benchmark runner for LLM inference servers.
#[derive(Debug, Parser)]
#[command(name = "perfplan", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Tables from stored results.
    Report(report::ReportArgs),
    /// The same runs of two suites side by side, with deltas and gate verdicts.
    Compare(compare::CompareArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            });
        }
    };
    ExitCode::from(match cli.command {
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
    })
}
