//! Every route of the hostile server, one request through each HTTP client (the lean
//! HTTP/1.1 client and reqwest): both must reach the route's outcome with the same
//! error text, output and usage. Token counts by the client's tokenizer, multi-turn
//! inputs and run warnings are checked through the CLI in `hostile_suite.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod hostile_support;

mod kept_support;
use kept_support::run_kept;
use std::time::Duration;

use bytes::Bytes;
use hostile_support::{Expect, HostileServer, Route, Tokens};
use perfplan::api::ApiKind;
use perfplan::engine::{
    CancelHandle, Endpoint, Load, PreparedRequest, RunConfig, Target, Timeouts, VecSource,
};
use perfplan::plan::limits::LimitsSpec;
use perfplan::record::{Outcome, Phase, RequestRecord};

/// The route's endpoint keys a request needs: its API, whether `max_tokens` is sent, limits.
fn endpoint_of(route: &Route) -> (ApiKind, bool, LimitsSpec) {
    let table: toml::Table = toml::from_str(route.endpoint).unwrap();
    let kind = match table.get("api").and_then(|v| v.as_str()) {
        Some("responses") => ApiKind::Responses,
        _ => ApiKind::Chat,
    };
    let rejects_limit = table.contains_key("reject_fields");
    let limits = table
        .get("limits")
        .map(|l| l.clone().try_into().unwrap())
        .unwrap_or_default();
    (kind, !rejects_limit, limits)
}

async fn one(server: &HostileServer, route: &Route, force_reqwest: bool) -> RequestRecord {
    let (kind, with_limit, limits) = endpoint_of(route);
    let stream = !route.run.contains("stream = false");
    let target = Target {
        base_url: server.url(route.name),
        force_reqwest,
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            read: Duration::from_secs(5),
            total: Some(Duration::from_secs(20)),
        },
        limits: perfplan::suite::response_limits(&limits),
        ..Target::default()
    };
    let ep = Endpoint::new(&target, 1).unwrap();
    let limit = if with_limit {
        r#","max_tokens":16"#
    } else {
        ""
    };
    let body = match kind {
        ApiKind::Responses => format!(r#"{{"model":"m","input":"hi","stream":{stream}{limit}}}"#),
        _ => format!(
            r#"{{"model":"m","messages":[{{"role":"user","content":"hi"}}],"stream":{stream}{limit}}}"#
        ),
    };
    let req = PreparedRequest {
        item: 0,
        phase: Phase::Measured,
        kind,
        path: kind.path().into(),
        max_output_tokens: perfplan::api::output_limit(body.as_bytes()),
        running_usage: perfplan::api::body_reads(body.as_bytes()).1,
        body: Bytes::from(body),
        stream,
        client_input_tokens: None,
        headers: Vec::new(),
        session: None,
        class: None,
        cancel_after: None,
        tools: None,
        check: None,
    };
    let cfg = RunConfig {
        load: Load::Closed { concurrency: 1 },
        duration: None,
        grace: Duration::from_secs(1),
    };
    let out = run_kept(
        &ep,
        &mut VecSource::new(vec![req]),
        &cfg,
        &CancelHandle::new(),
        |_: &RequestRecord| {},
    )
    .await
    .unwrap();
    out.records.into_iter().next().unwrap()
}

/// The failure class as reports name it.
fn class(r: &RequestRecord) -> String {
    match (r.outcome, r.http_status) {
        (Outcome::Http, Some(status)) => format!("http_{status}"),
        (outcome, _) => outcome.as_str().to_string(),
    }
}

fn check(route: &Route, r: &RequestRecord) {
    let name = route.name;
    match route.expect {
        Expect::Ok(tokens) => {
            assert_eq!(r.outcome, Outcome::Ok, "{name}: {:?}", r.error);
            if let Tokens::Usage(n) = tokens {
                assert_eq!(r.usage.completion_tokens, Some(n), "{name}");
            }
            let empty = matches!(tokens, Tokens::Usage(0));
            assert_eq!(r.no_output(), empty, "{name}: output {:?}", r.output_bytes);
            if r.content_times.is_empty() && route.run.is_empty() && !empty {
                panic!("{name}: a streamed success without an output chunk (no TTFT)");
            }
        }
        Expect::Fails { class: want, error } => {
            assert_eq!(class(r), want, "{name}: {:?}", r.error);
            let text = r.error.as_deref().unwrap_or("");
            assert!(
                text.contains(error),
                "{name}: error {text:?} lacks {error:?}"
            );
        }
    }
}

#[tokio::test]
async fn every_route_ends_in_its_outcome_through_both_clients() {
    let server = HostileServer::start();
    for route in hostile_support::routes() {
        let lean = one(&server, &route, false).await;
        check(&route, &lean);
        let other = one(&server, &route, true).await;
        check(&route, &other);
        assert_eq!(
            (
                &lean.error,
                &lean.output_text,
                lean.output_bytes,
                lean.usage
            ),
            (
                &other.error,
                &other.output_text,
                other.output_bytes,
                other.usage
            ),
            "{}: the two clients disagree",
            route.name
        );
        assert_eq!(
            (lean.content_times.len(), lean.first_answer.is_some()),
            (other.content_times.len(), other.first_answer.is_some()),
            "{}",
            route.name
        );
    }
}

/// Output chunks of a reasoning model: TTFT at the first reasoning delta, TTFO at the
/// first answer delta, at least the server's three 30 ms pauses later.
#[tokio::test]
async fn reasoning_then_answer_times_both_points() {
    let server = HostileServer::start();
    let route = hostile_support::routes()
        .into_iter()
        .find(|r| r.name == "reasoning_content")
        .unwrap();
    for force_reqwest in [false, true] {
        let r = one(&server, &route, force_reqwest).await;
        let (ttft, ttfo) = (r.ttft().unwrap(), r.ttfo().unwrap());
        assert!(
            ttfo >= ttft + Duration::from_millis(85),
            "{ttft:?} {ttfo:?}"
        );
        assert_eq!(r.content_times.len(), 5);
        // The answer and the reasoning are kept apart (a conversation appends the answer).
        assert_eq!(
            (r.reasoning_text.as_str(), r.output_text.as_str()),
            ("Let me think", "Yes")
        );
    }
}

/// A function call is output: it has a TTFT, its text is the name and the arguments.
#[tokio::test]
async fn a_function_call_stream_is_timed_and_kept() {
    let server = HostileServer::start();
    for name in ["tool_calls", "responses_tool"] {
        let route = hostile_support::routes()
            .into_iter()
            .find(|r| r.name == name)
            .unwrap();
        let r = one(&server, &route, false).await;
        assert!(r.ttft().is_some() && r.ttfo() == r.ttft(), "{name}");
        assert!(
            r.output_text.contains(r#"{"city": "Paris"#),
            "{name}: {}",
            r.output_text
        );
    }
}
