//! A run's verdict: `valid`, `suspect` or `invalid` (or `not_judged`, a run stored before
//! verdicts existed or not finished), with its reasons: the run's warnings above `info`,
//! each marked accepted when `[trust] accept` or `--accept` names its code. Accepted
//! reasons are kept and shown but weigh nothing. One rule, used when a run ends, when a
//! report re-reads it with more accepted codes, and by merges.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::code::{Code, Severity};
use super::warning::RunWarning;

/// The verdict's word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Stored before verdicts existed, or not finished: nothing is said.
    NotJudged,
    Valid,
    Suspect,
    Invalid,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotJudged => "not_judged",
            Status::Valid => "valid",
            Status::Suspect => "suspect",
            Status::Invalid => "invalid",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        [
            Status::NotJudged,
            Status::Valid,
            Status::Suspect,
            Status::Invalid,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What reports and gates apply of a suite's verdicts: `[trust] strict` and the codes
/// accepted (`[trust] accept`, `run --accept`). Stored with the suite.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Policy {
    pub strict: bool,
    pub accept: Vec<Code>,
}

impl Policy {
    /// The policy with more codes accepted (a report's `--accept`).
    pub(crate) fn accepting(&self, more: &[Code]) -> Policy {
        let mut accept = self.accept.clone();
        for c in more {
            if !accept.contains(c) {
                accept.push(*c);
            }
        }
        Policy {
            strict: self.strict,
            accept,
        }
    }
}

/// One reason of a verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    pub code: Code,
    pub severity: Severity,
    /// Named by `[trust] accept` or `--accept`: shown, but it does not weigh.
    #[serde(default)]
    pub accepted: bool,
    pub text: String,
}

/// A run's verdict and its reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub status: Status,
    #[serde(default)]
    pub reasons: Vec<Reason>,
}

impl Default for Verdict {
    fn default() -> Self {
        Verdict::not_judged()
    }
}

impl Verdict {
    pub(crate) fn not_judged() -> Verdict {
        Verdict {
            status: Status::NotJudged,
            reasons: Vec::new(),
        }
    }

    /// The verdict of a run with these warnings: the worst severity of the reasons not
    /// accepted (`valid` when there is none).
    pub fn judge(warnings: &[RunWarning], accepted: &[Code]) -> Verdict {
        let mut reasons: Vec<Reason> = Vec::new();
        for w in warnings.iter().filter(|w| w.is_reason()) {
            reasons.push(Reason {
                code: w.code,
                severity: w.severity,
                accepted: accepted.contains(&w.code),
                text: w.text.clone(),
            });
        }
        Verdict::of_reasons(reasons)
    }

    fn of_reasons(reasons: Vec<Reason>) -> Verdict {
        let worst = reasons
            .iter()
            .filter(|r| !r.accepted)
            .map(|r| r.severity)
            .max()
            .unwrap_or(Severity::Info);
        let status = match worst {
            Severity::Info => Status::Valid,
            Severity::Suspect => Status::Suspect,
            Severity::Invalid => Status::Invalid,
        };
        Verdict { status, reasons }
    }

    /// The same verdict with more codes accepted (a report's `--accept`); a run not
    /// judged stays so.
    pub(crate) fn accepting(&self, more: &[Code]) -> Verdict {
        if self.status == Status::NotJudged || more.is_empty() {
            return self.clone();
        }
        let reasons = self
            .reasons
            .iter()
            .map(|r| Reason {
                accepted: r.accepted || more.contains(&r.code),
                ..r.clone()
            })
            .collect();
        Verdict::of_reasons(reasons)
    }

    /// The reasons that weigh (not accepted), worst first.
    pub fn weighing(&self) -> Vec<&Reason> {
        let mut out: Vec<&Reason> = self.reasons.iter().filter(|r| !r.accepted).collect();
        out.sort_by_key(|r| std::cmp::Reverse(r.severity));
        out
    }

    /// Whether a gate on this run fails whatever its value: invalid, or suspect under
    /// `strict`.
    pub(crate) fn blocks_gates(&self, strict: bool) -> bool {
        match self.status {
            Status::Invalid => true,
            Status::Suspect => strict,
            _ => false,
        }
    }

    /// The reasons (not accepted) at or above `at_least` that make `metric` untrustworthy.
    pub fn touching(&self, metric: &str, at_least: Severity) -> Vec<&Reason> {
        self.weighing()
            .into_iter()
            .filter(|r| r.severity >= at_least && r.code.touches_metric(metric))
            .collect()
    }

    /// `invalid (cache_leak, client_bound)`, `valid`, `suspect (counts_estimated; accepted: no_output)`.
    pub fn summary(&self) -> String {
        let weighing: Vec<&str> = self.weighing().iter().map(|r| r.code.as_str()).collect();
        let accepted: Vec<&str> = self
            .reasons
            .iter()
            .filter(|r| r.accepted)
            .map(|r| r.code.as_str())
            .collect();
        let mut parts = Vec::new();
        if !weighing.is_empty() {
            parts.push(weighing.join(", "));
        }
        if !accepted.is_empty() {
            parts.push(format!("accepted: {}", accepted.join(", ")));
        }
        if parts.is_empty() {
            self.status.to_string()
        } else {
            format!("{} ({})", self.status, parts.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(code: Code) -> RunWarning {
        RunWarning::new(code, format!("{code} seen"))
    }

    #[test]
    fn the_worst_reason_not_accepted_decides() {
        assert_eq!(Verdict::judge(&[], &[]).status, Status::Valid);
        let notes = [w(Code::Dataset), w(Code::PartialFailures)];
        assert_eq!(Verdict::judge(&notes, &[]).status, Status::Valid);
        assert!(Verdict::judge(&notes, &[]).reasons.is_empty());
        let some = [
            w(Code::CountsEstimated),
            w(Code::CacheLeak),
            w(Code::Dataset),
        ];
        let v = Verdict::judge(&some, &[]);
        assert_eq!(v.status, Status::Invalid);
        assert_eq!(v.summary(), "invalid (cache_leak, counts_estimated)");
        let v = Verdict::judge(&some, &[Code::CacheLeak]);
        assert_eq!(v.status, Status::Suspect);
        assert_eq!(
            v.summary(),
            "suspect (counts_estimated; accepted: cache_leak)"
        );
        assert_eq!(v.accepting(&[Code::CountsEstimated]).status, Status::Valid);
    }

    #[test]
    fn gates_are_blocked_by_invalid_and_by_suspect_when_strict() {
        let suspect = Verdict::judge(&[w(Code::CountsEstimated)], &[]);
        assert!(!suspect.blocks_gates(false));
        assert!(suspect.blocks_gates(true));
        let invalid = Verdict::judge(&[w(Code::ClientBound)], &[]);
        assert!(invalid.blocks_gates(false));
        assert!(!Verdict::not_judged().blocks_gates(true));
        assert_eq!(invalid.touching("ttft_p99", Severity::Invalid).len(), 1);
        assert!(invalid
            .touching("cache_hit_ratio", Severity::Invalid)
            .is_empty());
    }
}
