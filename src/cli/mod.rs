//! Command-line interface (clap): one file per subcommand; maps errors to exit codes.

pub mod exit;

use std::process::ExitCode;

/// Entry point of the binary.
pub fn main() -> ExitCode {
    ExitCode::from(exit::OK)
}
