//! Exit codes, listed in the README. Every command returns one of these.

/// Everything went as asked.
pub const OK: u8 = 0;
/// A gate failed (the benchmark ran; the release does not pass).
pub const GATE_FAILED: u8 = 1;
/// The plan or the command line is invalid.
pub const INVALID: u8 = 2;
/// A results database is missing, unreadable or from a newer perfplan.
pub const NO_RESULTS: u8 = 3;
/// An output file could not be written.
pub const IO_ERROR: u8 = 4;
