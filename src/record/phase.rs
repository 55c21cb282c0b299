//! Which part of a run a request belongs to (`Phase`), and the check of a golden
//! request's answer (`Phase::Check`, the plan's `[checks]`) as the engine judged it: the
//! values the record, its row and the metrics keep.

use serde::{Deserialize, Serialize};

/// Which part of a run a request belongs to. Only `Measured` requests count in metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Sent before the measured requests to fill the slots (closed loop) or warm the path.
    Warmup,
    /// The unmeasured pass that sends a warm run's request set once before measuring it.
    Priming,
    /// Counted in every metric.
    Measured,
    /// A golden request of the plan's `[checks]`, mixed into the measured traffic: its
    /// answer is checked (`answer`), its timings are kept out of every metric.
    Check,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::Priming => "priming",
            Phase::Measured => "measured",
            Phase::Check => "check",
        }
    }

    /// Every phase, in the order a run sends them.
    pub const ALL: [Phase; 4] = [Phase::Warmup, Phase::Priming, Phase::Measured, Phase::Check];
}

/// The `item` of golden case 0 (`Phase::Check`): case `k` is `CHECK_ITEM_BASE + k`, far
/// above any dataset item, so that a golden request never shares an item's target
/// length or stored body with a request of the dataset.
pub const CHECK_ITEM_BASE: u64 = 1 << 48;

/// How a golden request's answer (`Phase::Check`) compared with its expected answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerCheck {
    /// The answer is the expected one (exact, regex, schema-valid JSON, a parsed tool call).
    Ok,
    /// The answer could be read but is not the expected one.
    Wrong,
    /// The answer could not be read for the check: empty, not JSON, no tool call.
    Unparsed,
    /// The request failed: no answer to check.
    Failed,
}

impl AnswerCheck {
    pub const ALL: [AnswerCheck; 4] = [
        AnswerCheck::Ok,
        AnswerCheck::Wrong,
        AnswerCheck::Unparsed,
        AnswerCheck::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AnswerCheck::Ok => "ok",
            AnswerCheck::Wrong => "wrong",
            AnswerCheck::Unparsed => "unparsed",
            AnswerCheck::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<AnswerCheck> {
        AnswerCheck::ALL.into_iter().find(|a| a.as_str() == text)
    }
}
