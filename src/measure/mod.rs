//! The measure stage: what a run measured, judged against what it planned. The run fold
//! (`tally`: the metrics, a mix's classes, the leak check's first wave, the planned hit
//! ratio, the steady-state window, input lengths, first errors, per-turn samples, the
//! verdict's evidence), folded record by record as the suite's writer stores them; and at
//! the run's end the passes that read the stored rows back (steady-state and per-step
//! metrics) and the warnings and reasons that hold the result against the plan (cache
//! honesty, partial failures, the verdict's rules). The formulas are `metrics`'s, the
//! verdict's rules `trust`'s.
//! Must not know: HTTP, the engine, the run loop (the suite calls it).

pub mod answers;
pub mod cache;
pub mod connections;
pub mod explore;
pub mod failures;
pub mod judge;
pub mod kv_leak;
pub mod output_count;
pub mod planned;
pub mod saturation;
pub mod steady;
pub mod steps;
pub mod tally;
