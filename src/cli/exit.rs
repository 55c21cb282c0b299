//! Exit codes, listed in the README. Every command returns one of these.

/// Everything went as asked.
pub const OK: u8 = 0;
/// A gate failed (the benchmark ran; the release does not pass).
pub const GATE_FAILED: u8 = 1;
/// The plan or the command line is invalid.
pub const INVALID: u8 = 2;
/// perfplan itself failed (a bug, or the output could not be written).
pub const INTERNAL: u8 = 70;
