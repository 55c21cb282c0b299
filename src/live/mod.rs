//! The live stage: what a suite says while it runs. The log (`benchmark.log`, `--debug`
//! bodies and answers, `--progress-json` events, secrets hidden) and the progress lines
//! (counts, rates and a TTFT sketch every interval), and the sinks told of each run as it
//! is stored (`run --export`). Fed by the suite; nothing here changes what is measured.
//! Must not know: the store, plans, the run loop (it is told what to say).

pub mod log;
pub mod progress;
pub mod sink;

pub use progress::parse_every as parse_progress_every;
