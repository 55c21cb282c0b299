//! Gates respect the runs' verdicts: a gate on an invalid run (or, for a relative gate,
//! against an invalid baseline run) fails whatever its value, and the suite exits with
//! its own code; a suspect run passes with a note, and fails too under `[trust] strict`.
//! A run stored before verdicts (not judged) is gated on its value alone.

use super::GateOutcome;
use crate::store::StoredRun;
use crate::trust::{Policy, Status, Verdict};

fn verdict_of<'a>(runs: &'a [StoredRun], id: &str) -> Option<&'a Verdict> {
    runs.iter().find(|r| r.id == id).map(|r| &r.verdict)
}

/// Applies the verdicts of `runs` (and of `base`, the baseline's runs) to `outcomes`.
pub fn apply(
    outcomes: &mut [GateOutcome],
    runs: &[StoredRun],
    base: Option<&[StoredRun]>,
    policy: &Policy,
) {
    for o in outcomes.iter_mut() {
        let own = verdict_of(runs, &o.run_id).map(|v| ("run", v.accepting(&policy.accept)));
        let theirs = o
            .baseline_run
            .as_deref()
            .zip(base)
            .and_then(|(id, b)| verdict_of(b, id))
            .filter(|_| o.condition.is_relative())
            .map(|v| ("baseline run", v.accepting(&policy.accept)));
        for (side, verdict) in own.into_iter().chain(theirs) {
            if verdict.blocks_gates(policy.strict) {
                o.passed = false;
                o.invalid_run = true;
                let strict = if verdict.status == Status::Suspect {
                    " ([trust] strict = true)"
                } else {
                    ""
                };
                o.message = format!(
                    "{side} is {}{strict}: not signed off whatever its value ({})",
                    verdict.summary(),
                    o.message
                );
            } else if verdict.status == Status::Suspect {
                o.message = format!("{} — note: {side} is {}", o.message, verdict.summary());
            }
        }
    }
}
