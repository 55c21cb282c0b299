//! The ranges of a plan's numbers that several keys share. Every numeric key carries
//! its range in the schema (`minimum`/`maximum`, `exclusiveMinimum`, and for durations
//! `x-duration-minimum`/`x-duration-maximum`), and `validate` checks them there, located
//! at the value; these constants are the bounds more than one key uses, so that each
//! bound is written once. The range table of the book (plan/validation.md) lists every key's range.

/// Most tokens of any one length (prompt, prefix, output, turn, query): 10 million.
pub(crate) const MAX_TOKENS: u32 = 10_000_000;
/// Most requests in flight: closed-loop `concurrency`, `max_in_flight`, a concurrency
/// search's `max`.
pub(crate) const MAX_CONCURRENCY: u32 = 100_000;
/// Most requests of one run (`requests`, `warmup`, `requests_per_step`).
pub(crate) const MAX_REQUESTS: u32 = 10_000_000;
/// Most repeats of one fixed load.
pub(crate) const MAX_REPEAT: u32 = 1000;
/// Slowest open-loop rate, req/s (one request every 1,000 s).
pub(crate) const MIN_RATE: f64 = 0.001;
/// Fastest open-loop rate, req/s.
pub(crate) const MAX_RATE: f64 = 1_000_000.0;
/// Largest multiple of the probed value in `requests_per_step` (`"4x"`).
pub(crate) const MAX_STEP_MULTIPLE: f64 = 1000.0;
/// Smallest absolute search `precision`.
pub(crate) const MIN_PRECISION: f64 = 0.001;
/// Most steps of one load ramp (`steps`, `rates` entries).
pub(crate) const MAX_RAMP_STEPS: u32 = 1000;
/// Most shared prefixes of one `random` dataset (`prefix_groups`, `prefix_weights` entries).
pub(crate) const MAX_PREFIX_GROUPS: u32 = 4096;
/// Most tokens of all of a dataset's group prefixes together (`prefix_groups` ×
/// `prefix_tokens`): they are built before the run and held for all of it.
pub(crate) const MAX_GROUP_PREFIX_TOKENS: u64 = 4_000_000;
/// Most pixels of a generated image (`width` × `height`): 16 megapixels.
pub(crate) const MAX_IMAGE_PIXELS: u64 = 16_000_000;
