//! Every formula against hand-worked numbers.

use std::time::Duration;

use super::*;
use crate::record::{Outcome, Phase, RequestRecord, Usage};

pub(super) fn d(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A successful streamed record: sent at `sent`, content chunks at `content`, ending at
/// the last content chunk (+1 ms), with `tokens` output tokens from usage.
pub(super) fn rec(sent: u64, content: &[u64], tokens: Option<u32>) -> RequestRecord {
    let last = content.last().copied().unwrap_or(sent);
    RequestRecord {
        index: 0,
        item: 0,
        phase: Phase::Measured,
        intended: d(sent),
        sent: d(sent),
        connect: None,
        tls: None,
        first_chunk: content.first().map(|&c| d(c)),
        content_times: content.iter().map(|&c| d(c)).collect(),
        last_chunk: Some(d(last)),
        first_answer: content.first().map(|&c| d(c)),
        end: d(last + 1),
        outcome: Outcome::Ok,
        http_status: Some(200),
        error: None,
        finish_reason: Some("length".into()),
        usage: Usage {
            prompt_tokens: Some(10),
            completion_tokens: tokens,
            cached_tokens: None,
            reasoning_tokens: None,
        },
        output_text: "x".into(),
        reasoning_text: String::new(),
        output_bytes: Some(1),
        client_output_tokens: None,
        client_reasoning_tokens: None,
        stream_tokens: None,
        client_input_tokens: None,
        request_bytes: 0,
        response_bytes: 0,
        read_clock: None,
        answer: None,
        content_delays: Vec::new(),
        unstreamed: false,
        raw: Vec::new(),
        replica: None,
        class: None,
        tools: None,
        tool_calls: Vec::new(),
    }
}

pub(super) fn v(s: &RunSummary, name: &str) -> Option<f64> {
    *s.values.get(name).expect(name)
}

pub(super) fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-5)
}

#[test]
fn every_name_is_present() {
    let s = summarize(&[], &SummaryOptions::default());
    assert_eq!(s.values.len(), names::all_names().len());
    assert!(s.values.values().all(|x| x.is_none() || s.requests == 0));
    assert_eq!(v(&s, "ttft_p50"), None);
}

#[test]
fn tpot_is_unknown_with_one_output_token() {
    let s = summarize(&[rec(100, &[120], Some(1))], &SummaryOptions::default());
    assert!(close(v(&s, "ttft_mean"), 20.0));
    assert!(close(v(&s, "latency_mean"), 20.0));
    assert_eq!(v(&s, "tpot_mean"), None);
    assert_eq!(v(&s, "itl_mean"), None);
}

#[test]
fn several_tokens_in_one_chunk_make_one_gap() {
    // 5 tokens in 2 chunks: TTFT 10, latency 30, TPOT (30-10)/(5-1) = 5, one ITL gap of 20.
    let s = summarize(&[rec(0, &[10, 30], Some(5))], &SummaryOptions::default());
    assert!(close(v(&s, "ttft_p50"), 10.0));
    assert!(close(v(&s, "latency_p50"), 30.0));
    assert!(close(v(&s, "tpot_mean"), 5.0));
    assert!(close(v(&s, "itl_max"), 20.0));
    assert!(close(v(&s, "itl_min"), 20.0));
}

fn counted(at_content: Vec<u32>, total: u32) -> Option<crate::record::StreamTokens> {
    Some(crate::record::StreamTokens {
        choice_chunks: total + 1,
        at_content,
        total,
        source: crate::record::TokenSource::Chunks,
    })
}

/// With the stream's counts, a gap that brought k tokens is k per-token samples of
/// gap / k (`itl`), while `chunk_gap` keeps the gap as observed.
#[test]
fn a_chunk_of_several_tokens_is_several_inter_token_latencies() {
    // 5 tokens in 2 chunks, 2 then 3: one gap of 30 ms carrying 3 tokens.
    let mut r = rec(0, &[10, 40], Some(5));
    r.stream_tokens = counted(vec![2, 5], 5);
    let s = summarize(&[r], &SummaryOptions::default());
    assert!(close(v(&s, "chunk_gap_mean"), 30.0));
    assert!(close(v(&s, "itl_mean"), 10.0) && close(v(&s, "itl_max"), 10.0));
    assert!(close(v(&s, "tpot_mean"), 7.5)); // (40 - 10) / (5 - 1): unchanged
    assert!(close(v(&s, "tokens_per_chunk_mean"), 2.5));
}

/// vLLM under `ignore_eos`: special tokens arrive as chunks without text; their tokens
/// count in the next text chunk's gap, so the per-token mean is the TPOT, where the
/// gaps between text chunks alone are longer.
#[test]
fn empty_chunks_make_per_token_itl_agree_with_tpot() {
    let mut r = rec(0, &[10, 20, 30, 40], Some(5));
    r.stream_tokens = counted(vec![1, 2, 4, 5], 5);
    let s = summarize(&[r.clone()], &SummaryOptions::default());
    assert!(close(v(&s, "chunk_gap_mean"), 10.0));
    assert!(close(v(&s, "itl_mean"), 7.5) && close(v(&s, "tpot_mean"), 7.5));
    assert!(close(v(&s, "itl_p50"), 7.5) && close(v(&s, "itl_min"), 5.0));
    assert!(close(v(&s, "tokens_per_chunk_mean"), 1.25));
    // One token per chunk: the two figures are the same, with or without the counts.
    let mut one = rec(0, &[10, 20, 30], Some(3));
    let before = summarize(&[one.clone()], &SummaryOptions::default());
    one.stream_tokens = counted(vec![1, 2, 3], 3);
    let after = summarize(&[one], &SummaryOptions::default());
    for stat in ["mean", "p50", "p99", "max", "stdev"] {
        let (itl, gap) = (format!("itl_{stat}"), format!("chunk_gap_{stat}"));
        assert_eq!(v(&after, &itl), v(&before, &itl), "{itl}");
        assert_eq!(v(&after, &itl), v(&after, &gap), "{gap}");
    }
    // An ITL objective reads the per-token figure: 10 ms gaps of 2 tokens meet 6 ms.
    let opts = SummaryOptions {
        slos: vec![Slo::at_most(SloQuantity::Itl, 6.0)],
        ..SummaryOptions::default()
    };
    let mut pairs = rec(0, &[10, 20, 30], Some(6));
    pairs.stream_tokens = counted(vec![2, 4, 6], 6);
    assert!(close(
        v(&summarize(&[pairs], &opts), "goodput_rps"),
        1.0 / 0.031
    ));
}

/// Reasoning and answer tokens: the server's split when it gives one, else the client's
/// count of the reasoning text; answer throughput leaves reasoning out.
#[test]
fn reasoning_and_answer_tokens() {
    let mut served = rec(0, &[10, 1000], Some(10));
    served.usage.reasoning_tokens = Some(6);
    let mut counted = rec(0, &[10, 2000], Some(8));
    counted.client_reasoning_tokens = Some(2);
    let unknown = rec(0, &[10, 20], Some(4));
    let s = summarize(&[served, counted, unknown], &SummaryOptions::default());
    assert!(close(v(&s, "reasoning_tokens_mean"), 4.0)); // 6 and 2
    assert!(close(v(&s, "answer_tokens_mean"), 5.0)); // 4 and 6
    assert!(close(v(&s, "answer_tps"), 10.0 / 2.001));
    assert!(close(v(&s, "output_tps"), 22.0 / 2.001));
}

#[test]
fn missing_usage_uses_the_client_count_and_is_flagged() {
    let mut a = rec(0, &[10, 20, 30], None);
    a.client_output_tokens = Some(3);
    a.usage.prompt_tokens = None;
    a.client_input_tokens = Some(7);
    let b = rec(0, &[10], None);
    let s = summarize(&[a, b], &SummaryOptions::default());
    assert_eq!(
        (s.estimated_output, s.estimated_input, s.unknown_output),
        (1, 1, 1)
    );
    assert!(close(v(&s, "tpot_mean"), 10.0)); // (30-10)/(3-1); b has no TPOT
    assert!(close(v(&s, "output_tokens_mean"), 3.0));
    assert!(close(v(&s, "input_tokens_mean"), 8.5)); // 7 (client) and 10 (usage)
}

/// Reasoning first: TTFT at the first reasoning chunk, TTFO at the first answer chunk;
/// without reasoning they are equal.
#[test]
fn ttfo_is_the_first_answer_after_reasoning() {
    let mut thinking = rec(0, &[10, 20, 50, 60], Some(4));
    thinking.first_answer = Some(d(50));
    let plain = rec(100, &[130], Some(1));
    let s = summarize(&[thinking, plain], &SummaryOptions::default());
    assert!(close(v(&s, "ttft_min"), 10.0) && close(v(&s, "ttft_max"), 30.0));
    assert!(close(v(&s, "ttfo_min"), 30.0) && close(v(&s, "ttfo_max"), 50.0));
    let mut only_reasoning = rec(0, &[10, 20], Some(2));
    only_reasoning.first_answer = None;
    let s = summarize(&[only_reasoning], &SummaryOptions::default());
    assert_eq!(v(&s, "ttfo_mean"), None);
    assert!(close(v(&s, "ttft_mean"), 10.0));
}

/// A success without any output is counted (and the suite warns); an API without
/// generated text (`output_bytes` unknown) is not.
#[test]
fn successes_without_output_are_counted() {
    let mut empty = rec(0, &[], Some(0));
    empty.output_bytes = Some(0);
    let mut embedding = rec(0, &[], None);
    embedding.output_bytes = None;
    let mut failed = rec(0, &[], None);
    failed.output_bytes = Some(0);
    failed.outcome = Outcome::ServerError;
    let s = summarize(
        &[empty, embedding, failed, rec(0, &[5], Some(1))],
        &SummaryOptions::default(),
    );
    assert_eq!(s.no_output, 1);
    assert_eq!(v(&s, "requests_no_output"), Some(1.0));
    assert_eq!(v(&s, "requests_ok"), Some(3.0));
    assert_eq!(s.failures.get("server_error"), Some(&1));
}

#[test]
fn failed_requests_are_counted_not_measured() {
    let ok = rec(0, &[10, 20], Some(2));
    let mut http = rec(0, &[], None);
    http.outcome = Outcome::Http;
    http.http_status = Some(503);
    http.end = d(5);
    let mut broken = rec(0, &[900], Some(1));
    broken.outcome = Outcome::StreamBroken;
    let s = summarize(&[ok, http, broken], &SummaryOptions::default());
    assert_eq!(v(&s, "requests_ok"), Some(1.0));
    assert_eq!(v(&s, "requests_failed"), Some(2.0));
    assert!(close(v(&s, "success_ratio"), 1.0 / 3.0));
    assert!(close(v(&s, "ttft_max"), 10.0));
    assert_eq!(s.failures.get("http"), Some(&1));
    assert_eq!(s.failures.get("stream_broken"), Some(&1));
    assert_eq!(s.http_statuses.get(&503), Some(&1));
}

#[test]
fn warmup_is_excluded() {
    let mut w = rec(0, &[5000], Some(1));
    w.phase = Phase::Warmup;
    let s = summarize(
        &[w, rec(6000, &[6010], Some(1))],
        &SummaryOptions::default(),
    );
    assert_eq!(s.requests, 1);
    assert_eq!(s.unmeasured, 1);
    assert!(close(v(&s, "ttft_max"), 10.0));
    assert!(close(v(&s, "duration_s"), 0.011));
}

#[test]
fn throughput_over_the_run_duration() {
    // Both sent at 0; they end at 1000 and 2000 ms: duration 2 s.
    let mut a = rec(0, &[500, 999], Some(10));
    a.end = d(1000);
    let mut b = rec(0, &[500, 1999], Some(30));
    b.end = d(2000);
    let s = summarize(&[a, b], &SummaryOptions::default());
    assert!(close(v(&s, "duration_s"), 2.0));
    assert!(close(v(&s, "rps"), 1.0));
    assert!(close(v(&s, "output_tps"), 20.0));
    assert!(close(v(&s, "input_tps"), 10.0));
    assert!(close(v(&s, "total_tps"), 30.0));
}

#[test]
fn goodput_counts_requests_meeting_every_slo() {
    let fast = rec(0, &[10, 20], Some(2));
    let slow_first = rec(0, &[50, 60], Some(2));
    let slow_decode = rec(0, &[10, 100], Some(2));
    let opts = SummaryOptions {
        slos: vec![
            Slo::at_most(SloQuantity::Ttft, 20.0),
            Slo::at_most(SloQuantity::Tpot, 50.0),
        ],
        ..SummaryOptions::default()
    };
    let s = summarize(&[fast, slow_first, slow_decode], &opts);
    // duration: 0 → 101 ms; one request of three meets both.
    assert!(close(v(&s, "goodput_rps"), 1.0 / 0.101));
    assert!(close(v(&s, "rps"), 3.0 / 0.101));
}

#[test]
fn attainment_good_tokens_and_cost_of_a_run() {
    // Four measured requests over 0 → 1001 ms: a good one (TTFT 10 ms, 3 tokens), a slow
    // one (TTFT 300 ms, 5 tokens), a good one of 7 tokens and a failed one. Each is in
    // flight for its (end − sent).
    let good = rec(0, &[10, 20, 30], Some(3));
    let slow = rec(0, &[300, 1000], Some(5));
    let mut good2 = rec(500, &[510, 600], Some(7));
    good2.end = d(700);
    let mut failed = rec(0, &[], None);
    failed.outcome = Outcome::Http;
    failed.end = d(100);
    let opts = SummaryOptions {
        slos: vec![Slo::parse("ttft", "<= 100ms").unwrap()],
        users: Some(4),
        hardware: Some(Hardware {
            accelerators: Some(2),
            cost_per_hour: Some(36.0),
        }),
        ..SummaryOptions::default()
    };
    let s = summarize(&[good, slow, good2, failed], &opts);
    assert!(close(v(&s, "duration_s"), 1.001));
    assert_eq!(v(&s, "good_requests"), Some(2.0));
    // Failed requests count against attainment: 2 of 4.
    assert_eq!(v(&s, "slo_attainment"), Some(0.5));
    assert!(close(v(&s, "goodput_tokens_per_s"), 10.0 / 1.001));
    // In flight: 31 + 1001 + 200 + 100 ms over 1.001 s.
    assert!(close(v(&s, "in_flight_mean"), 1.332 / 1.001));
    // 15 output tokens: 14.985 tok/s over 4 users and 2 accelerators.
    assert!(close(v(&s, "output_tps_per_user"), 15.0 / 1.001 / 4.0));
    assert!(close(
        v(&s, "output_tps_per_accelerator"),
        15.0 / 1.001 / 2.0
    ));
    // 36 an hour for 1.001 s = 0.01001; over 15 output, 45 total (3 × 10 input), 10 good.
    assert!(close(
        v(&s, "cost_per_million_output_tokens"),
        0.01001 / 15.0 * 1e6
    ));
    assert!(close(
        v(&s, "cost_per_million_total_tokens"),
        0.01001 / 45.0 * 1e6
    ));
    assert!(close(v(&s, "cost_per_million_good_output_tokens"), 1001.0));
    // Without SLOs every success is good; without hardware there is no cost.
    let plain = summarize(&[rec(0, &[10, 20], Some(2))], &SummaryOptions::default());
    assert_eq!(v(&plain, "slo_attainment"), v(&plain, "success_ratio"));
    assert_eq!(v(&plain, "goodput_tokens_per_s"), v(&plain, "output_tps"));
    assert_eq!(v(&plain, "cost_per_million_output_tokens"), None);
    // An open loop's users are its mean in flight: one request all along.
    assert!(close(v(&plain, "output_tps_per_user"), 2.0 / 0.021));
}

#[test]
fn vllm_and_evalscope_definitions() {
    let mut r = rec(0, &[10, 20, 30], Some(4));
    r.first_chunk = Some(d(5)); // role chunk
    r.last_chunk = Some(d(32)); // finish chunk
    r.end = d(40); // after usage and [DONE]
    let p = timing(&r, MetricDefinitions::Perfplan);
    assert_eq!((p.ttft, p.latency), (Some(d(10)), d(30)));
    assert_eq!(p.gaps, vec![d(10), d(10)]);
    let vl = timing(&r, MetricDefinitions::Vllm);
    assert_eq!((vl.ttft, vl.latency), (Some(d(5)), d(32)));
    assert_eq!(vl.gaps, vec![d(5), d(10), d(10), d(2)]);
    assert_eq!(vl.tpot(4), Some(d(9)));
    let ev = timing(&r, MetricDefinitions::Evalscope);
    assert_eq!((ev.ttft, ev.latency), (Some(d(5)), d(40)));
    let opts = SummaryOptions {
        definitions: MetricDefinitions::Evalscope,
        ..SummaryOptions::default()
    };
    assert!(close(v(&summarize(&[r], &opts), "tpot_mean"), 35.0 / 3.0));
    assert_eq!(
        MetricDefinitions::parse("vllm"),
        Some(MetricDefinitions::Vllm)
    );
}

#[test]
fn connection_setup_is_its_own_metric_and_in_vllm_and_evalscope_ttft() {
    // Sent at 10 ms on a connection it took 4 ms to open; first content at 30 ms.
    let mut opened = rec(10, &[30, 40], Some(2));
    opened.connect = Some(d(4));
    opened.intended = d(5);
    let reused = rec(0, &[20], Some(1));
    let p = timing(&opened, MetricDefinitions::Perfplan);
    assert_eq!((p.ttft, p.latency), (Some(d(20)), d(30)));
    let vl = timing(&opened, MetricDefinitions::Vllm);
    assert_eq!((vl.ttft, vl.latency), (Some(d(24)), d(34)));
    let ev = timing(&opened, MetricDefinitions::Evalscope);
    assert_eq!((ev.ttft, ev.latency), (Some(d(24)), d(35)));
    // Lateness counts from when the request began (its connect not included).
    assert_eq!(opened.started(), d(6));
    assert_eq!(opened.lateness(), d(1));
    let s = summarize(&[opened, reused], &SummaryOptions::default());
    assert!(close(v(&s, "connect_mean"), 4.0));
    assert!(close(v(&s, "connect_max"), 4.0));
    assert!(close(v(&s, "ttft_mean"), 20.0));
    let none = summarize(&[rec(0, &[20], Some(1))], &SummaryOptions::default());
    assert_eq!(v(&none, "connect_p50"), None);
}

#[test]
fn cache_hit_ratio_from_usage() {
    let mut a = rec(0, &[10], Some(1));
    a.usage.cached_tokens = Some(8);
    let mut b = rec(0, &[10], Some(1));
    b.usage.cached_tokens = Some(0);
    let c = rec(0, &[10], Some(1)); // no cached field: not in the ratio
    let s = summarize(&[a, b, c], &SummaryOptions::default());
    assert!(close(v(&s, "cache_hit_ratio"), 0.4));
    assert!(close(v(&s, "cached_tokens_mean"), 4.0));
    let none = summarize(&[rec(0, &[10], Some(1))], &SummaryOptions::default());
    assert_eq!(v(&none, "cache_hit_ratio"), None);
}

#[test]
fn truncated_streams_are_ok_but_counted() {
    let mut r = rec(0, &[10], Some(1));
    r.finish_reason = None;
    let s = summarize(&[r, rec(0, &[10], Some(1))], &SummaryOptions::default());
    assert_eq!(s.truncated, 1);
    assert_eq!(v(&s, "requests_ok"), Some(2.0));
}

#[test]
fn client_health_lateness_and_cpu() {
    let mut late = rec(20, &[30], Some(1));
    late.intended = d(0);
    let opts = SummaryOptions {
        client_cpu_s: Some(1.9),
        client_wall_s: Some(1.0),
        cpu_cores: Some(2.0),
        ..SummaryOptions::default()
    };
    let s = summarize(&[late, rec(0, &[10], Some(1))], &opts);
    assert!(close(v(&s, "lateness_max"), 20.0));
    assert!(close(v(&s, "lateness_p50"), 10.0));
    assert!(close(v(&s, "client_cpu_ratio"), 1.9));
    let reason = s.client_bound.unwrap();
    assert!(
        reason.contains("lateness") && reason.contains("CPU"),
        "{reason}"
    );
    let calm = summarize(&[rec(0, &[10], Some(1))], &SummaryOptions::default());
    assert_eq!(calm.client_bound, None);
}

#[test]
fn a_client_waiting_for_its_cpu_is_client_bound() {
    let opts = |wait: f64| SummaryOptions {
        client_cpu_s: Some(0.1),
        client_wait_s: Some(wait),
        client_wall_s: Some(2.0),
        ..SummaryOptions::default()
    };
    let starved = summarize(&[rec(0, &[10], Some(1))], &opts(1.2));
    assert!(close(v(&starved, "client_wait_ratio"), 0.6));
    let reason = starved.client_bound.unwrap();
    assert!(reason.contains("waited for a CPU 60%"), "{reason}");
    let fine = summarize(&[rec(0, &[10], Some(1))], &opts(0.2));
    assert!(close(v(&fine, "client_wait_ratio"), 0.1));
    assert_eq!(fine.client_bound, None);
}

#[test]
fn per_request_rates_are_evalscopes() {
    // 5 tokens: TTFT 10 ms, latency 30 ms → 5 / 0.030 = 166.67 tok/s output, 4 / 0.020 =
    // 200 tok/s decode; 11 tokens: TTFT 20, latency 70 → 157.14 and 10 / 0.050 = 200.
    // One token: an output rate (1 / 0.020 = 50), no decode rate.
    let recs = [
        rec(0, &[10, 30], Some(5)),
        rec(100, &[120, 170], Some(11)),
        rec(200, &[220], Some(1)),
    ];
    let s = summarize(&recs, &SummaryOptions::default());
    assert!(close(v(&s, "request_output_tps_max"), 5.0 / 0.030));
    assert!(close(v(&s, "request_output_tps_p50"), 11.0 / 0.070));
    assert!(close(v(&s, "request_output_tps_min"), 50.0));
    assert!(close(v(&s, "decode_tps_mean"), 200.0));
    assert!(close(v(&s, "decode_tps_stdev"), 0.0));
    assert_eq!(s.values["decode_tps_p50"].map(|_| ()), Some(()));
    // Their unit is tokens per second, not milliseconds.
    use condition::{unit_of, MetricUnit};
    assert_eq!(unit_of("decode_tps_p99"), Some(MetricUnit::TokensPerSec));
    assert_eq!(
        unit_of("request_output_tps_mean"),
        Some(MetricUnit::TokensPerSec)
    );
}
