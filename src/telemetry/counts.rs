//! The server's own counts of a run against the client's: the token and request
//! counters of its `/metrics` (vLLM's `prompt_tokens_total`, `generation_tokens_total`,
//! `prompt_tokens_cached_total`, `request_success_total`; SGLang's, TGI's and
//! llama.cpp's where `families` knows them) read before and after a run's executed pass,
//! and the sums of `usage` over exactly the requests the client sent in that window, so
//! that for a server alone with perfplan the two are equal; with the largest number of
//! requests the server had running or waiting at once (its gauges, sampled by the
//! telemetry) against the client's own most in flight. Facts only: what they mean (tokens
//! not conserved, another client on the server) is the run's verdict's to say. Stored in
//! the run's facts under `server_counts`. Pure: pages in, figures out.

use super::families::{RUNNING, WAITING};
use super::frame::Frame;
pub use crate::record::facts::{ClientSide, PassCounts, ServerCounts, ServerSide};
use crate::record::{Outcome, RequestRecord, RunFacts};

/// The perfplan names (`families`) of the counters read.
const PROMPT: &str = "prompt_tokens_total";
const GENERATION: &str = "generation_tokens_total";
const CACHED: &str = "prompt_tokens_cached_total";
const REQUESTS: &str = "requests_finished_total";
/// SGLang counts cached prompt tokens in the family perfplan names prefix-cache hits.
const SGLANG_CACHED: (&str, &str) = ("sglang:cached_tokens_total", "prefix_cache_hits_total");
/// TGI counts tokens only in histograms: their sums.
const TGI_INPUT: &str = "server_input_tokens_sum";
const TGI_GENERATED: &str = "server_generated_tokens_sum";

/// One scrape's counters, summed over series (and replicas); `None` where the server
/// has no such counter.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    pub prompt: Option<f64>,
    pub generation: Option<f64>,
    pub cached: Option<f64>,
    pub requests: Option<f64>,
}

impl Counters {
    /// The counters of one page.
    pub fn of(frame: &Frame) -> Counters {
        let cached = frame.value(CACHED).or_else(|| {
            let (source, name) = SGLANG_CACHED;
            frame.known.contains(&source).then(|| frame.value(name))?
        });
        Counters {
            prompt: frame.value(PROMPT).or(frame.value(TGI_INPUT)),
            generation: frame.value(GENERATION).or(frame.value(TGI_GENERATED)),
            cached,
            requests: frame.value(REQUESTS),
        }
    }

    /// Two replicas' counters together; a counter one of them lacks is unknown.
    pub fn plus(self, other: Counters) -> Counters {
        let both = |a: Option<f64>, b: Option<f64>| Some(a? + b?);
        Counters {
            prompt: both(self.prompt, other.prompt),
            generation: both(self.generation, other.generation),
            cached: both(self.cached, other.cached),
            requests: both(self.requests, other.requests),
        }
    }

    /// What each counter grew by since `before` (`None` for one missing, or one that
    /// went backwards: the server restarted).
    pub fn since(&self, before: &Counters) -> ServerSide {
        let delta = |a: Option<f64>, b: Option<f64>| {
            let d = a? - b?;
            (d >= 0.0).then(|| d.round() as u64)
        };
        ServerSide {
            prompt_tokens: delta(self.prompt, before.prompt),
            generation_tokens: delta(self.generation, before.generation),
            cached_tokens: delta(self.cached, before.cached),
            requests: delta(self.requests, before.requests),
        }
    }

    /// Whether the server's counters since `before` have caught up with what the
    /// client received: its finished requests when it counts them, else its generated
    /// tokens (counters are updated a moment after the last response is sent). A
    /// server with neither counter has nothing to wait for.
    pub(crate) fn caught_up(&self, before: &Counters, client: &ClientSide) -> bool {
        let d = self.since(before);
        match (d.requests, d.generation_tokens) {
            (Some(n), _) if self.requests.is_some() => n >= client.requests_ok,
            (_, Some(n)) => n >= client.completion_tokens,
            _ => self.requests.is_none() && self.generation.is_none(),
        }
    }
}

/// The cache block size a page names (`vllm:cache_config_info{block_size="128"}`).
pub fn block_size(page: &str) -> Option<u32> {
    super::expo::samples(page)
        .filter(|s| s.name == "vllm:cache_config_info")
        .find_map(|s| s.label("block_size")?.parse::<u32>().ok())
        .filter(|b| *b > 0)
}

impl ClientSide {
    /// Counts one request of the window.
    pub fn add(&mut self, r: &RequestRecord) {
        let u = &r.usage;
        self.requests += 1;
        self.requests_ok += u64::from(r.outcome == Outcome::Ok);
        let has_usage = u.prompt_tokens.is_some() || u.completion_tokens.is_some();
        self.requests_with_usage += u64::from(has_usage);
        self.prompt_tokens += u64::from(u.prompt_tokens.unwrap_or(0));
        self.completion_tokens += u64::from(u.completion_tokens.unwrap_or(0));
        self.cached_tokens += u64::from(u.cached_tokens.unwrap_or(0));
    }
}

/// The window of the measured pass.
pub(crate) const MEASURED_WINDOW: &str = "warmup+measured";

/// The longest wait for a server's counters to catch up after a pass.
pub(crate) const SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

impl ServerCounts {
    /// The counts a run's facts hold, if any.
    pub fn of_facts(facts: &RunFacts) -> Option<ServerCounts> {
        facts.server_counts.clone()
    }
}

/// The most requests running plus waiting at one scrape, over the gauges the sampler
/// kept (`UrlTally`'s `in_flight`).
pub(crate) fn in_flight_of(frame: &Frame) -> Option<f64> {
    match (frame.value(RUNNING), frame.value(WAITING)) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Usage;
    use crate::telemetry::frame::frame;

    const BEFORE: &str = "vllm:prompt_tokens_total{engine=\"0\"} 100\n\
        vllm:generation_tokens_total{engine=\"0\"} 50\n\
        vllm:prompt_tokens_cached_total{engine=\"0\"} 0\n\
        vllm:request_success_total{engine=\"0\",finished_reason=\"length\"} 2\n\
        vllm:request_success_total{engine=\"0\",finished_reason=\"stop\"} 1\n\
        vllm:cache_config_info{block_size=\"128\",engine=\"0\"} 1.0\n";

    #[test]
    fn deltas_of_vllms_counters_against_the_clients_sums() {
        let before = Counters::of(&frame(BEFORE));
        assert_eq!(before.requests, Some(3.0));
        let after = Counters::of(&frame(
            "vllm:prompt_tokens_total 340\nvllm:generation_tokens_total 114\n\
             vllm:prompt_tokens_cached_total 128\nvllm:request_success_total 5\n",
        ));
        let server = after.since(&before);
        assert_eq!(
            server,
            ServerSide {
                prompt_tokens: Some(240),
                generation_tokens: Some(64),
                cached_tokens: Some(128),
                requests: Some(2),
            }
        );
        let mut client = ClientSide::default();
        let ok = |p, c, cached| RequestRecord {
            usage: Usage {
                prompt_tokens: Some(p),
                completion_tokens: Some(c),
                cached_tokens: Some(cached),
                reasoning_tokens: None,
            },
            ..RequestRecord::default()
        };
        client.add(&ok(120, 32, 0));
        client.add(&ok(120, 32, 128));
        client.add(&RequestRecord {
            outcome: Outcome::Http,
            ..RequestRecord::default()
        });
        assert_eq!(
            (
                client.prompt_tokens,
                client.completion_tokens,
                client.cached_tokens
            ),
            (240, 64, 128)
        );
        assert_eq!(
            (
                client.requests,
                client.requests_ok,
                client.requests_with_usage
            ),
            (3, 2, 2)
        );
        assert!(after.caught_up(&before, &client));
        assert!(!before.caught_up(&before, &client), "nothing counted yet");
        assert_eq!(block_size(BEFORE), Some(128));
        assert_eq!(block_size("vllm:prompt_tokens_total 1\n"), None);
    }

    #[test]
    fn missing_counters_are_unknown_and_restarts_give_none() {
        let none = Counters::of(&frame("llamacpp:prompt_tokens_total 10\n"));
        assert_eq!((none.prompt, none.requests), (Some(10.0), None));
        let restarted = Counters::of(&frame("llamacpp:prompt_tokens_total 4\n"));
        assert_eq!(restarted.since(&none).prompt_tokens, None);
        let two = none.plus(none);
        assert_eq!((two.prompt, two.generation), (Some(20.0), None));
        // Nothing to wait for without a request or generation counter.
        assert!(none.caught_up(&none, &ClientSide::default()));
        let sglang = Counters::of(&frame(
            "sglang:cached_tokens_total{cache_source=\"device\"} 64\n",
        ));
        assert_eq!(sglang.cached, Some(64.0));
        let stored = ServerCounts {
            window: MEASURED_WINDOW.into(),
            ..ServerCounts::default()
        };
        let facts = RunFacts {
            server_counts: Some(stored.clone()),
            ..RunFacts::default()
        };
        let text = facts.to_value().to_string();
        assert!(text.starts_with(r#"{"server_counts":{"#), "{text}");
        let read = RunFacts::from_json_text(&text).unwrap();
        assert_eq!(ServerCounts::of_facts(&read), Some(stored));
        assert_eq!(
            in_flight_of(&frame(
                "vllm:num_requests_running 3\nvllm:num_requests_waiting 2\n"
            )),
            Some(5.0)
        );
    }
}
