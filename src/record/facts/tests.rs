use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::*;

/// The facts of an executed run as the suite stores them: counts, time with a steady
/// window, a lean client's pool, evidence.
fn live_run() -> RunFacts {
    RunFacts {
        requests: Some(40),
        stored_rows: Some(42),
        failures: Some(BTreeMap::from([("http".to_string(), 2)])),
        http_statuses: Some(BTreeMap::from([("503".to_string(), 2)])),
        estimated_input: Some(0),
        estimated_output: Some(1),
        unknown_output: Some(0),
        truncated: Some(0),
        no_output: Some(0),
        client_bound: Some(None),
        metric_definitions: Some("perfplan".into()),
        itl_bounded: Some(false),
        connections: Some(ConnectionFacts::default()),
        input_lengths: Some(InputLengthFacts {
            server_minus_target: None,
            client_minus_target: Some(LengthDiff {
                mean: 0.5,
                max_abs: 2,
                requests: 40,
            }),
            server_minus_client: None,
        }),
        time: Some(TimeFacts {
            slice_s: Some(1.0),
            steady: Some(Some(SteadyWindow {
                start_s: 2.0,
                end_s: 9.5,
            })),
            ..TimeFacts::default()
        }),
        preconnect: Some(PreconnectFacts {
            wanted: 8,
            opened: 8,
            slowest_ms: 1.5,
            wall_ms: 3.0,
            ..PreconnectFacts::default()
        }),
        measured_start_unix_us: Some(1_796_118_213_325_638),
        evidence: Some(Evidence {
            output_checked: 38,
            ..Evidence::default()
        }),
        ..RunFacts::default()
    }
}

/// Every section set (a merged mix ramp of a shard that met a barrier, with traffic and
/// a saturation stop: no real run has all, the stored shape of each is what is held).
fn every_section() -> RunFacts {
    let stop = SaturationStopFacts {
        reason: SaturationStopFacts::SATURATED.into(),
        at_s: 12.0,
        in_flight: [Some(4.0), Some(19.0)],
        ttft_p50_ms: [Some(20.0), Some(95.5)],
        completions_per_s: [Some(10.0), Some(10.5)],
        arrivals_per_s: Some(12.0),
        cancelled: 3,
    };
    let step = StepFacts {
        rate: Some(5.0),
        concurrency: None,
        start_s: 0.0,
        end_s: 1.0,
        metrics: Map::from_iter([
            ("requests_ok".to_string(), json!(5)),
            ("ttft_p50".to_string(), json!(9.5)),
        ]),
        rest: Map::new(),
    };
    let mut facts = live_run();
    let time = facts.time_mut();
    time.steady = Some(None);
    time.steady_missing = Some("the run never settled".into());
    time.steps = Some(vec![step]);
    time.explore = Some(ExploreFacts {
        saturation_concurrency: Some(Some(8)),
        saturation_rps: None,
        reason: "queue grew".into(),
    });
    time.stopped = Some(stop);
    facts.cancel_settle = Some(SettleFacts {
        before: Gauges {
            running: Some(0.0),
            kv_usage: None,
        },
        after: Gauges::default(),
        waited_ms: 40,
        settled: true,
    });
    facts.preconnect = Some(PreconnectFacts {
        tls_handshakes: Some(8),
        tls_resumed: Some(0),
        tls_handshake_mean_ms: Some(1.25),
        tls_handshake_max_ms: Some(2.0),
        error: Some("refused".into()),
        ..facts.preconnect.clone().unwrap_or_default()
    });
    facts.server_counts = Some(ServerCounts {
        window: "warmup+measured".into(),
        ..ServerCounts::default()
    });
    facts.turn_of_item = Some(vec![0, 1, 0, 1]);
    facts.conversation_errors = Some(vec!["conversation 3 ended".into()]);
    facts.trace_request_ids = Some(vec![Some("a".into()), None]);
    facts.replicas = Some(vec![
        "http://127.0.0.1:1".into(),
        "http://127.0.0.1:2".into(),
    ]);
    add_shard_sections(&mut facts);
    facts
}

/// The sections of a shard, a mix, a merge, a search and a skipped tier.
fn add_shard_sections(facts: &mut RunFacts) {
    facts.shard = Some(Some("2/2".into()));
    facts.shard_share = Some(0);
    facts.barrier = Some(BarrierFacts {
        role: "follower".into(),
        leader: Some("127.0.0.1:7000".into()),
        shards_ready: None,
        rtt_us: 80,
        clock_offset_us: -12,
        waited_ms: 4.5,
        delay_ms: 250.0,
    });
    facts.shard_lead_us = Some(1500);
    facts.mix = Some(vec![MixClassFacts {
        name: "chat".into(),
        dataset: "random".into(),
        model: None,
        weight: 3.0,
        planned_share: 0.75,
        requests: 30,
    }]);
    facts.shards = Some(vec!["1/2".into(), "2/2".into()]);
    facts.client_by_shard = Some(vec![ShardClientFacts {
        shard: "1/2".into(),
        client_cpu_ratio: Some(0.31),
        lateness_p99: None,
        client_bound: None,
    }]);
    facts.client_cpu_ratio_shard = Some(Some("1/2".into()));
    facts.shard_starts = Some(ShardStarts {
        start_spread_ms: Some(0.5),
        first_measured_spread_ms: None,
        by_shard: BTreeMap::from([(
            "1/2".to_string(),
            ShardStartFacts {
                start_ms: 0.0,
                first_measured_ms: Some(1.0),
            },
        )]),
    });
    facts.search = Some(SearchFacts {
        variable: "rate".into(),
        outcome: "found".into(),
        objective: Some(SearchObjective {
            metric: "goodput".into(),
            goal: "max".into(),
        }),
        best: Some(Some(8.0)),
        best_score: Some(None),
        best_pass: None,
        first_fail: Some(16.0),
        failed_metric: None,
        steps: vec![SearchStepFacts {
            value: 8.0,
            passed: true,
        }],
        message: "best at 8".into(),
    });
    facts.skipped = Some(SkippedFacts {
        reason: "saturated".into(),
        by: "abc".into(),
    });
    facts
        .rest
        .insert("from_a_later_version".into(), json!([1, 2]));
}

fn stored(facts: &RunFacts) -> String {
    serde_json::to_string_pretty(&facts.to_value()).unwrap_or_default()
}

#[test]
fn a_live_runs_stored_shape_is_held() {
    insta::assert_snapshot!("live_run", stored(&live_run()));
}

#[test]
fn every_sections_stored_shape_is_held() {
    insta::assert_snapshot!("every_section", stored(&every_section()));
}

#[test]
fn stored_facts_read_back_as_they_were_written() {
    for facts in [RunFacts::default(), live_run(), every_section()] {
        let text = facts.to_value().to_string();
        assert_eq!(RunFacts::from_json_text(&text).unwrap(), facts, "{text}");
    }
}

/// A run stored by an earlier version (schema 3: no `itl_bounded`, no `connections`, no
/// `time`) reads typed, and writes back the text it was read from.
#[test]
fn an_older_runs_facts_read_typed_and_write_back_unchanged() {
    let text = r#"{"requests":4,"stored_rows":5,"failures":{},"http_statuses":{},"estimated_input":0,"estimated_output":0,"unknown_output":0,"truncated":0,"client_bound":null,"metric_definitions":"perfplan","input_lengths":{"server_minus_target":{"mean":0.0,"max_abs":0,"requests":4},"client_minus_target":null,"server_minus_client":{"mean":0.5,"max_abs":1,"requests":4}},"measured_start_unix_us":1796118213325638}"#;
    let facts = RunFacts::from_json_text(text).unwrap();
    assert_eq!(facts.requests, Some(4));
    assert_eq!(facts.failures, Some(BTreeMap::new()));
    assert_eq!(facts.client_bound, Some(None));
    assert_eq!(facts.client_bound(), None);
    assert_eq!((facts.time.as_ref(), facts.connections), (None, None));
    assert!(facts.rest.is_empty(), "{:?}", facts.rest);
    assert_eq!(facts.to_value().to_string(), text);
}

/// A damaged section does not fail the run: it reads as absent, the rest reads, and it
/// is kept as stored when the run is written again (a merge).
#[test]
fn a_section_that_does_not_parse_is_kept_unread() {
    let stored = json!({
        "requests": 12,
        "client_bound": false,
        "mix": "not a list",
        "time": {"slice_s": 1.0, "steady": {"start_s": 1.0, "end_s": 2.0}},
        "a_later_key": {"x": 1},
    });
    let facts = RunFacts::from_value(stored.clone());
    assert_eq!(facts.requests, Some(12));
    assert_eq!(
        (facts.client_bound.as_ref(), facts.mix.as_ref()),
        (None, None)
    );
    let steady = facts.time.as_ref().and_then(TimeFacts::steady);
    assert_eq!(steady.map(|w| w.end_s), Some(2.0));
    let kept: Vec<&str> = facts.rest.keys().map(String::as_str).collect();
    assert_eq!(kept, ["a_later_key", "client_bound", "mix"]);
    let again = facts.to_value();
    assert_eq!(
        again.as_object().map(Map::len),
        stored.as_object().map(Map::len)
    );
    for (key, value) in stored.as_object().into_iter().flatten() {
        assert_eq!(&again[key], value, "{key}");
    }
}

#[test]
fn a_run_stored_without_facts_has_none() {
    for stored in [Value::Null, json!({}), json!([1]), json!("text")] {
        assert_eq!(RunFacts::from_value(stored), RunFacts::default());
    }
    assert!(RunFacts::from_json_text("{not json").is_err());
}
