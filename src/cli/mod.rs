//! Command-line interface (clap): one file per subcommand; maps errors to exit codes.
//! Every command returns `failure::Ended`; a failure is printed here, once.
//! Human tables go to stdout; progress, warnings and errors to stderr.

mod check;
pub mod compare;
pub mod exit;
mod expand;
pub mod export;
mod failure;
mod files;
mod format_arg;
pub mod history;
mod import;
mod init;
mod k8s;
pub mod merge;
mod metrics;
mod plan_args;
mod quick;
pub mod report;
mod rerun;
mod resume_check;
pub mod run;
mod schema;
mod shard;
mod show;
mod signoff;
pub mod sim;
mod validate;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// perfplan: declarative benchmarks for LLM inference servers (OpenAI HTTP API).
#[derive(Debug, Parser)]
#[command(name = "perfplan", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a plan and report every problem, located.
    Validate(validate::ValidateArgs),
    /// Print the ordered runs of a plan without sending anything.
    Expand(expand::ExpandArgs),
    /// One small request per endpoint × API × prompt mode: is the server usable as planned?
    Check(check::CheckArgs),
    /// Expand a plan, execute its runs, store every request, print the report.
    Run(Box<run::RunArgs>),
    /// Tables from stored results (a database or an output folder).
    Report(report::ReportArgs),
    /// The same runs of two suites side by side, with deltas and verdicts.
    Compare(compare::CompareArgs),
    /// Many suites of one plan release over release: each run's metrics as a line with
    /// intervals, each step judged by `compare`'s noise rule; a table and an HTML page.
    History(history::HistoryArgs),
    /// Unite the databases of `run --shard K/N` into one suite; metrics recomputed from every row.
    Merge(merge::MergeArgs),
    /// Print the Kubernetes manifests (plan ConfigMap, Indexed Job, headless Service,
    /// results volume) of a suite sharded over N pods, for `kubectl apply -f -`.
    K8s(k8s::K8sArgs),
    /// Execute again exactly the plan a suite stored, into a new folder.
    Rerun(rerun::RerunArgs),
    /// Print the plan's JSON Schema.
    Schema,
    /// Start the built-in OpenAI-compatible simulator.
    Sim(sim::SimArgs),
    /// Write a commented starting plan (`--list` names the templates).
    Init(init::InitArgs),
    /// Turn another tool's command lines into a plan (`import evalscope`).
    Import(import::ImportArgs),
    /// One stored request: its body, the response text, timings and outcome.
    Show(show::ShowArgs),
    /// Every metric name with its unit, direction and definition.
    Metrics(metrics::MetricsArgs),
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::INVALID
            } else {
                exit::OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // Many concurrent streams need many descriptors: use the hard limit, not the soft one.
    crate::engine::limits::raise_fd_limit();
    // A panic is a bug: say so plainly and exit with INTERNAL, never a bare backtrace.
    // The one exception is `print!` to a pipe its reader closed (`| head`): no message,
    // exit CLOSED_OUTPUT.
    std::panic::set_hook(Box::new(|info| {
        if closed_stdout(&info.to_string()) {
            CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
            return;
        }
        eprintln!("perfplan: internal error (a bug, please report it with the command): {info}");
    }));
    match std::panic::catch_unwind(|| dispatch(cli.command)) {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(failure)) => ExitCode::from(failure.print()),
        Err(_) if CLOSED.load(std::sync::atomic::Ordering::SeqCst) => {
            ExitCode::from(exit::CLOSED_OUTPUT)
        }
        Err(_) => ExitCode::from(exit::INTERNAL),
    }
}

/// Set when the panic was standard output's reader going away.
static CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a panic's message is std's `print!` failing on a closed pipe.
fn closed_stdout(message: &str) -> bool {
    message.contains("failed printing to stdout") && message.contains("Broken pipe")
}

fn dispatch(command: Command) -> failure::Ended {
    match command {
        Command::Validate(args) => validate::run(&args),
        Command::Expand(args) => expand::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::History(args) => history::run(args),
        Command::Merge(args) => merge::run(&args),
        Command::K8s(args) => k8s::run(&args),
        Command::Rerun(args) => rerun::run(&args),
        Command::Schema => schema::run(),
        Command::Sim(args) => sim::run(args),
        Command::Init(args) => init::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Show(args) => show::run(&args),
        Command::Metrics(args) => metrics::run(&args),
    }
}
