//! The simulator's `golden_answers`: how it answers the golden requests it can solve
//! (`[checks]`' built-in kinds: "What is A + B?", a person's JSON extraction, a call of
//! the tool a prompt names), so a test knows the exact truth of `answers_ok_ratio`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `off` (the default: golden prompts get the simulator's usual text), `correct`,
/// `wrong`, or the share answered correctly (0 to 1, drawn per request from `seed` and
/// the arrival order).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum GoldenAnswers {
    Word(GoldenWord),
    Rate(#[schemars(range(min = 0, max = 1))] f64),
}

/// The named settings of `golden_answers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoldenWord {
    Off,
    Correct,
    Wrong,
}

impl Default for GoldenAnswers {
    fn default() -> Self {
        GoldenAnswers::Word(GoldenWord::Off)
    }
}

impl GoldenAnswers {
    pub fn is_off(&self) -> bool {
        *self == GoldenAnswers::default()
    }

    /// The share of golden answers given correctly (`None`: off).
    pub fn correct_share(&self) -> Option<f64> {
        match self {
            GoldenAnswers::Word(GoldenWord::Off) => None,
            GoldenAnswers::Word(GoldenWord::Correct) => Some(1.0),
            GoldenAnswers::Word(GoldenWord::Wrong) => Some(0.0),
            GoldenAnswers::Rate(r) => Some(*r),
        }
    }
}

impl std::str::FromStr for GoldenAnswers {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(GoldenAnswers::Word(GoldenWord::Off)),
            "correct" => Ok(GoldenAnswers::Word(GoldenWord::Correct)),
            "wrong" => Ok(GoldenAnswers::Word(GoldenWord::Wrong)),
            _ => match s.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => Ok(GoldenAnswers::Rate(r)),
                _ => Err(format!(
                    "`{s}`: expected off, correct, wrong or a share from 0 to 1"
                )),
            },
        }
    }
}

impl std::fmt::Display for GoldenAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GoldenAnswers::Word(GoldenWord::Off) => f.write_str("off"),
            GoldenAnswers::Word(GoldenWord::Correct) => f.write_str("correct"),
            GoldenAnswers::Word(GoldenWord::Wrong) => f.write_str("wrong"),
            GoldenAnswers::Rate(r) => write!(f, "{r}"),
        }
    }
}
