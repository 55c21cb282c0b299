//! The codes of a run's warnings: one stable name each (stored, printed, accepted with
//! `--accept`), the severity it carries by default, and the metrics it touches (what
//! `compare` will not judge when a side is invalid for it). The reasons of a verdict are
//! the warnings whose severity is above `Info`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How much a warning weighs on the run's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; the numbers stand.
    Info,
    /// The numbers may be off: gates pass with a note (fail under `[trust] strict`).
    Suspect,
    /// The numbers do not measure what the plan asked: gates fail, `compare` does not judge.
    Invalid,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Suspect => "suspect",
            Severity::Invalid => "invalid",
        }
    }
}

/// Which metrics a reason makes untrustworthy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Touches {
    /// Every metric.
    All,
    /// Every timing and rate (TTFT, TPOT, ITL, latency, throughput, goodput, lateness).
    Timings,
    /// Timings of the first token and of streaming (TTFT, ITL, TPOT, latency split).
    Streaming,
    /// TTFT, latency, throughput and the cache hit ratios.
    Cache,
    /// Token counts, and what is computed from them (throughput in tokens, TPOT).
    Tokens,
    /// Nothing in particular.
    Nothing,
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $severity:ident, $touches:ident; )*) => {
        /// A run warning's stable code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $( $(#[$doc])* $variant, )*
        }

        impl Code {
            /// Every code, in the order the book lists them.
            pub const ALL: &'static [Code] = &[$( Code::$variant, )*];

            pub fn as_str(self) -> &'static str {
                match self { $( Code::$variant => $name, )* }
            }

            /// The severity a warning of this code has unless its producer says otherwise.
            pub fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$severity, )* }
            }

            /// What the code makes untrustworthy.
            pub(crate) fn touches(self) -> Touches {
                match self { $( Code::$variant => Touches::$touches, )* }
            }
        }
    };
}

codes! {
    /// The server's usage disagrees with what the client received, or the run's usage
    /// totals with the server's own counters.
    TokensNotConserved = "tokens_not_conserved", Invalid, Tokens;
    /// The server counted more requests (or held more in flight) than this client sent:
    /// another client was loading it.
    ServerNotAlone = "server_not_alone", Invalid, Timings;
    /// The answer arrived in one burst, or a streamed request got a whole body.
    StreamNotObserved = "stream_not_observed", Invalid, Streaming;
    /// The client, not the server, limited the run (send lateness, CPU).
    ClientBound = "client_bound", Invalid, Timings;
    /// A cold run found a warm prefix cache.
    CacheLeak = "cache_leak", Invalid, Cache;
    /// The endpoint's `prefix_cache` label disagrees with what the server did.
    CacheSetting = "cache_setting", Invalid, Cache;
    /// A cache-on run's hit ratio fell well short of its planned share.
    CacheShortfall = "cache_shortfall", Suspect, Cache;
    /// More measured requests failed than `[trust] max_failed_share`.
    Failures = "failures", Invalid, All;
    /// Token counts of some requests are the client's estimates (no server usage).
    CountsEstimated = "counts_estimated", Suspect, Tokens;
    /// A value that cannot be (TTFT above latency, p99 below p50): an internal error.
    ImpossibleValues = "impossible_values", Invalid, All;
    /// Successful requests that carried no output at all.
    NoOutput = "no_output", Suspect, Streaming;
    /// Streams that ended without a finish reason.
    Truncated = "truncated", Suspect, Tokens;
    /// The server's cache could not be reset before a run that asked for it.
    CacheResetFailed = "cache_reset_failed", Suspect, Cache;
    /// `stop_when = "saturated"` stopped the run early: its queue kept growing while its
    /// completions stalled, so its latencies grew with its length (no steady state). On a
    /// tier skipped above it (`on_saturation = "skip_higher"`), an `info` note.
    Saturated = "saturated", Suspect, Timings;
    /// After a run whose client aborted requests (the load's `cancel`), the server's
    /// running requests or KV-cache usage did not return to their level before the run
    /// within `cancel.settle`: it may keep aborted requests' KV blocks (a leak), which
    /// the runs after it pay for.
    KvLeak = "kv_leak", Suspect, Nothing;
    /// Golden requests of `[checks]` sent at temperature 0 were answered differently in
    /// this run than in an earlier run of the suite (same model): the server's answers
    /// change with the load (a batch-dependent kernel, a wrong configuration).
    AnswersChanged = "answers_changed", Suspect, Nothing;
    /// Some measured requests failed (fewer than the threshold).
    PartialFailures = "partial_failures", Info, Nothing;
    /// Prompts missed their target input length.
    InputLengths = "input_lengths", Info, Nothing;
    /// About the dataset (short file, dropped prompts, a trace's notes).
    Dataset = "dataset", Info, Nothing;
    /// About the load (warmup below concurrency, a trace without warmup, a duration cap).
    Load = "load", Info, Nothing;
    /// About the client's connections (pre-connect, the open-file limit).
    Connections = "connections", Info, Nothing;
    /// The run started later than asked (`--start-at`, the barrier).
    LateStart = "late_start", Info, Nothing;
    /// The steady-state window could not be found.
    SteadyWindow = "steady_window", Info, Nothing;
    /// About a mix's classes.
    Mix = "mix", Info, Nothing;
    /// Telemetry could not be scraped or read.
    Telemetry = "telemetry", Info, Nothing;
    /// About shards and merging.
    Shards = "shards", Info, Nothing;
    /// Anything else (and every warning stored before codes existed).
    Note = "note", Info, Nothing;
}

impl Code {
    pub fn parse(text: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == text)
    }

    /// Codes as given to `--accept`: every one must name a code; the error names the
    /// first that does not, with the nearest code.
    pub(crate) fn parse_list(texts: &[String]) -> Result<Vec<Code>, String> {
        let mut out = Vec::new();
        for text in texts.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
            let Some(code) = Code::parse(text) else {
                let names = Code::ALL.iter().map(|c| c.as_str());
                let hint = crate::suggest::nearest(text, names)
                    .map_or(String::new(), |s| format!("; did you mean `{s}`?"));
                return Err(format!(
                    "--accept {text}: no verdict reason has this code{hint}"
                ));
            };
            if !out.contains(&code) {
                out.push(code);
            }
        }
        Ok(out)
    }

    /// Whether a reason of this code makes `metric` untrustworthy.
    pub(crate) fn touches_metric(self, metric: &str) -> bool {
        let base = metric.split('@').next().unwrap_or(metric);
        let any = |prefixes: &[&str]| prefixes.iter().any(|p| base.starts_with(p));
        const TIMINGS: &[&str] = &[
            "ttft",
            "ttfo",
            "tpot",
            "itl",
            "chunk_gap",
            "latency",
            "rps",
            "output_tps",
            "total_tps",
            "answer_tps",
            "goodput",
            "good_requests",
            "slo_attainment",
            "cost_per_million",
            "in_flight_mean",
            "decode_tps",
            "request_output_tps",
            "lateness",
            "inputs_per_s",
            "knee",
            "saturation",
        ];
        match self.touches() {
            Touches::All => true,
            Touches::Timings => any(TIMINGS),
            Touches::Streaming => any(&["ttft", "ttfo", "tpot", "itl", "chunk_gap", "decode_tps"]),
            Touches::Cache => any(&[
                "ttft",
                "ttfo",
                "latency",
                "rps",
                "output_tps",
                "total_tps",
                "goodput",
                "good_requests",
                "slo_attainment",
                "cost_per_million",
                "cache_hit_ratio",
                "server_cache_hit_ratio",
                "cached_tokens",
            ]),
            Touches::Tokens => any(&[
                "input_tokens",
                "output_tokens",
                "reasoning_tokens",
                "answer_tokens",
                "output_tps",
                "total_tps",
                "answer_tps",
                "tpot",
                "itl",
                "decode_tps",
                "request_output_tps",
                "tokens_per_chunk",
                "goodput_tokens",
                "cost_per_million",
            ]),
            Touches::Nothing => false,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    /// An unknown code (written by a newer perfplan) reads as `note`.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        let text = String::deserialize(d)?;
        Ok(Code::parse(&text).unwrap_or(Code::Note))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut names: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Code::ALL.len());
        for c in Code::ALL {
            assert_eq!(Code::parse(c.as_str()), Some(*c));
        }
    }

    #[test]
    fn reasons_touch_the_metrics_they_name() {
        assert!(Code::CacheLeak.touches_metric("ttft_p50"));
        assert!(Code::CacheLeak.touches_metric("output_tps"));
        assert!(!Code::CacheLeak.touches_metric("output_tokens_mean"));
        assert!(Code::ClientBound.touches_metric("itl_p99@rag"));
        assert!(!Code::ClientBound.touches_metric("cache_hit_ratio"));
        assert!(Code::TokensNotConserved.touches_metric("output_tokens_mean"));
        assert!(Code::Failures.touches_metric("success_ratio"));
        assert!(!Code::Dataset.touches_metric("ttft_p50"));
    }
}
