//! The stream rule: a run that asked for streamed answers but could not observe them,
//! because they arrived in one burst (a buffering proxy, a gateway) or as whole bodies
//! (a server that ignores `stream`). Its TTFT, ITL and TPOT measure nothing.

use super::code::Code;
use super::judge::RunFacts;
use super::thresholds::Thresholds;
use super::warning::RunWarning;

/// The metric families a run whose stream was not observed did not measure.
pub(crate) const NOT_MEASURED: &[&str] = &["ttft", "ttfo", "itl", "tpot", "chunk_gap"];

/// Whether `metric` is one the stream rule marks not measured.
pub(crate) fn not_measured(metric: &str) -> bool {
    NOT_MEASURED.iter().any(|p| {
        metric
            .strip_prefix(p)
            .is_some_and(|rest| rest.starts_with('_'))
    })
}

pub(super) fn stream(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    if !f.streamed {
        return None;
    }
    let e = &f.evidence;
    let ok = f.requests.saturating_sub(f.failed);
    let whole = ok > 0 && e.unstreamed as f64 / ok as f64 > t.burst_share;
    let burst = e.streams_checked > 0 && e.bursts as f64 / e.streams_checked as f64 > t.burst_share;
    let seen = if whole {
        format!(
            "{} of {ok} streamed requests were answered with a whole JSON body, not a stream: \
             the server ignores `stream` (or a gateway turns streams into bodies)",
            e.unstreamed
        )
    } else if burst {
        let example = e.burst_example.as_ref().map_or(String::new(), |x| {
            format!(" (request {}: {})", x.request, x.seen)
        });
        format!(
            "{} of {} streamed answers of {} or more tokens arrived in one burst, faster than \
             a token per {} ms{example}: something between perfplan and the model buffers the \
             stream (a proxy's response buffering, e.g. nginx proxy_buffering; a gateway; a \
             server that sends everything at the end)",
            e.bursts, e.streams_checked, t.burst_min_tokens, t.burst_token_gap_ms
        )
    } else {
        return None;
    };
    Some(RunWarning::new(
        Code::StreamNotObserved,
        format!(
            "{seen}; TTFT, ITL and TPOT are not measured in this run; point perfplan at the \
             server itself or turn the buffering off"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::evidence::Evidence;

    #[test]
    fn bursts_and_whole_bodies_are_named_when_streams_were_asked() {
        let t = Thresholds::default();
        let facts = |bursts, unstreamed, streamed| RunFacts {
            requests: 10,
            streamed,
            evidence: Evidence {
                streams_checked: 10,
                bursts,
                unstreamed,
                ..Evidence::default()
            },
            ..RunFacts::default()
        };
        assert!(stream(&facts(2, 0, true), &t).is_none());
        let w = stream(&facts(9, 0, true), &t)
            .map(|w| w.text)
            .unwrap_or_default();
        assert!(w.contains("arrived in one burst"), "{w}");
        let w = stream(&facts(0, 10, true), &t)
            .map(|w| w.text)
            .unwrap_or_default();
        assert!(w.contains("whole JSON body"), "{w}");
        assert!(stream(&facts(9, 10, false), &t).is_none());
        assert!(not_measured("ttft_p99") && not_measured("itl_mean") && !not_measured("ttfx"));
        assert!(!not_measured("latency_p50") && !not_measured("output_tps"));
    }
}
