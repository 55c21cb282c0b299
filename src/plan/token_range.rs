//! `TokenRange`: a token count as a plan writes it, fixed or `{min, max}`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A token count: fixed, or uniform in `{min, max}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
pub enum TokenRange {
    Fixed(u32),
    Range { min: u32, max: u32 },
}

impl TokenRange {
    pub fn max(self) -> u32 {
        match self {
            TokenRange::Fixed(n) => n,
            TokenRange::Range { max, .. } => max,
        }
    }
    pub fn min(self) -> u32 {
        match self {
            TokenRange::Fixed(n) => n,
            TokenRange::Range { min, .. } => min,
        }
    }
}
