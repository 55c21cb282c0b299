//! Command-line interface (clap): one file per subcommand; maps errors to exit codes.

pub mod exit;
pub mod sim;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// perfplan: declarative benchmarks for OpenAI-compatible inference servers.
#[derive(Debug, Parser)]
#[command(name = "perfplan", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Sim(sim::SimArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Sim(args) => sim::run(args),
    };
    ExitCode::from(code)
}
