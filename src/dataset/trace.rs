//! `trace`: recorded requests replayed at their recorded offsets. Reads JSONL records
//! `{body, timestamp, headers?, request_id?, completion_tokens?}` (timestamps as epoch
//! seconds, milliseconds or microseconds, or ISO-8601 text), sorts out-of-order records
//! (with a warning), divides offsets by `speed`, and applies the configured rewrites:
//! `model_override`, `model_mapping`, `match_output_length`. Every record keeps its own
//! model unless a rewrite says otherwise. Knows nothing about HTTP or the engine.

use std::time::Duration;

use serde_json::{Map, Value};

use super::source::{json_line, numbered_lines, read_text, resolve, LineError};
use super::{DatasetContext, DatasetError};
use crate::plan::TracePlan;

/// One request of a trace, ready to send at `offset` after the replay's start.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRequest {
    /// Scaled by `speed`; the first record is at zero.
    pub offset: Duration,
    /// The recorded body after the rewrites.
    pub body: Map<String, Value>,
    pub request_id: Option<String>,
    /// The recorded answer length.
    pub completion_tokens: Option<u32>,
    /// Recorded headers sent again (see `trace_headers` for what is left out).
    pub headers: Vec<(String, String)>,
}

/// A trace, ordered by time and cut to the requests the run needs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    pub requests: Vec<TraceRequest>,
    pub warnings: Vec<String>,
    /// Records in the file.
    pub records: usize,
}

struct Raw {
    at_us: i128,
    line: usize,
    body: Map<String, Value>,
    request_id: Option<String>,
    completion_tokens: Option<u32>,
    headers: Vec<(String, String)>,
}

/// Reads and rewrites the trace for `ctx.count` requests (all records if there are fewer).
pub fn read(plan: &TracePlan, ctx: &DatasetContext) -> Result<Trace, DatasetError> {
    let path = resolve(ctx, &plan.path);
    let text = read_text(&path)?;
    let mut raws: Vec<Raw> = Vec::new();
    let mut left_out = std::collections::BTreeSet::new();
    for (line, raw) in numbered_lines(&text) {
        let (record, skipped) = parse_record(raw, line).map_err(|e| e.at(&path, line))?;
        left_out.extend(skipped);
        raws.push(record);
    }
    let warnings = order_and_note(&path, &mut raws, left_out);
    let records = raws.len();
    let times: Vec<i128> = raws.iter().map(|r| r.at_us).collect();
    let (keep, offsets) = window(&times, plan, ctx.count)?;
    let requests = raws
        .drain(keep)
        .zip(offsets)
        .map(|(r, offset)| TraceRequest {
            offset,
            body: rewrite(plan, r.body, r.completion_tokens),
            request_id: r.request_id,
            completion_tokens: r.completion_tokens,
            headers: r.headers,
        })
        .collect();
    Ok(Trace {
        requests,
        warnings,
        records,
    })
}

/// Of records at `times` (µs, in order): the ones the run replays (within `from`..`to`
/// of the first record, the first `count` of them) and their send offsets (from the first
/// kept, divided by `speed`). Every trace format's one rule.
pub(crate) fn window(
    times: &[i128],
    plan: &TracePlan,
    count: usize,
) -> Result<(std::ops::Range<usize>, Vec<Duration>), DatasetError> {
    let speed = plan.speed;
    if !(speed.is_finite() && speed > 0.0) {
        return Err(DatasetError::Invalid(
            "speed must be a positive number".into(),
        ));
    }
    let start = times.first().copied().unwrap_or(0);
    let since = |t: i128| Duration::from_micros(u64::try_from(t - start).unwrap_or(0));
    let first = times.partition_point(|t| since(*t) < plan.from);
    let end = plan
        .to
        .map_or(times.len(), |to| times.partition_point(|t| since(*t) < to));
    let end = end.max(first).min(first.saturating_add(count));
    if first == end && !times.is_empty() {
        return Err(DatasetError::Invalid(format!(
            "no record of the trace is within its window (from {} to {}; the trace spans {})",
            crate::units::format_duration(plan.from),
            plan.to
                .map_or("its end".into(), crate::units::format_duration),
            crate::units::format_duration(since(times[times.len() - 1]))
        )));
    }
    let zero = times.get(first).copied().unwrap_or(start);
    let offsets = times[first..end]
        .iter()
        .map(|t| crate::units::duration_from_secs((t - zero) as f64 / 1e6 / speed))
        .collect();
    Ok((first..end, offsets))
}

/// One record of a trace, and the recorded headers it does not replay.
fn parse_record(
    raw: &str,
    line: usize,
) -> Result<(Raw, std::collections::BTreeSet<String>), LineError> {
    let v = json_line(raw)?;
    let Some(body) = v.get("body").and_then(Value::as_object).cloned() else {
        return Err("`body` must be a JSON object".into());
    };
    let at_us = timestamp_us(v.get("timestamp").ok_or("no `timestamp`")?)?;
    let (headers, skipped) = super::trace_headers::replayable(v.get("headers"))?;
    let record = Raw {
        at_us,
        line,
        body,
        request_id: v
            .get("request_id")
            .and_then(Value::as_str)
            .map(String::from),
        completion_tokens: v
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .map(|n| n.min(u64::from(u32::MAX)) as u32),
        headers,
    };
    Ok((record, skipped))
}

/// One record of a trace checked as `read` reads it: its body (for the prompt checks).
pub(crate) fn check_record(raw: &str) -> Result<Map<String, Value>, LineError> {
    parse_record(raw, 0).map(|(r, _)| r.body)
}

/// Sorts records out of time order (with a warning), and names the recorded headers that
/// are not replayed.
fn order_and_note(
    path: &std::path::Path,
    raws: &mut [Raw],
    left_out: std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    if raws.windows(2).any(|w| w[1].at_us < w[0].at_us) {
        warnings.push(format!(
            "{}: records are not in time order; they are replayed sorted by timestamp",
            path.display()
        ));
        raws.sort_by_key(|r| (r.at_us, r.line));
    }
    if !left_out.is_empty() {
        let names: Vec<String> = left_out.into_iter().collect();
        warnings.push(format!(
            "recorded headers not replayed: {} (perfplan writes framing, encoding and \
             request-id headers itself; secrets are never replayed, the endpoint's key is sent)",
            names.join(", ")
        ));
    }
    warnings
}

/// The configured rewrites of one recorded body.
pub(crate) fn rewrite(
    plan: &TracePlan,
    mut body: Map<String, Value>,
    completion_tokens: Option<u32>,
) -> Map<String, Value> {
    let model = body.get("model").and_then(Value::as_str).map(String::from);
    let new_model = match (&plan.model_override, model) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(m)) => plan.model_mapping.get(&m).cloned(),
        (None, None) => None,
    };
    if let Some(m) = new_model {
        body.insert("model".into(), Value::from(m));
    }
    if let (true, Some(n)) = (plan.match_output_length, completion_tokens) {
        let field = ["max_completion_tokens", "max_output_tokens"]
            .into_iter()
            .find(|f| body.contains_key(*f))
            .unwrap_or("max_tokens");
        body.insert(field.into(), Value::from(n));
        // A constrained answer ends where its grammar does: ignoring EOS there would make
        // the server generate past a finished structure (or refuse the request).
        if !constrained(&body) {
            body.insert("ignore_eos".into(), Value::Bool(true));
        }
    }
    body
}

/// Whether the body asks for constrained decoding: a JSON `response_format`, vLLM's
/// `guided_*` or `structured_outputs`, SGLang's `regex` / `json_schema` / `ebnf`, or a
/// required tool call.
fn constrained(body: &Map<String, Value>) -> bool {
    const FIELDS: [&str; 9] = [
        "guided_json",
        "guided_regex",
        "guided_choice",
        "guided_grammar",
        "structured_outputs",
        "regex",
        "json_schema",
        "ebnf",
        "grammar",
    ];
    let format = body
        .get("response_format")
        .and_then(|f| f.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t != "text");
    let text_format = body
        .get("text")
        .and_then(|t| t.pointer("/format/type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t != "text");
    let tool = match body.get("tool_choice") {
        Some(Value::String(c)) => c == "required",
        Some(Value::Object(_)) => true,
        _ => false,
    };
    format
        || text_format
        || tool
        || FIELDS
            .iter()
            .any(|f| body.get(*f).is_some_and(|v| !v.is_null()))
}

/// The last instant a trace's timestamp may name: the end of year 9999, in µs.
const LAST_US: i128 = 253_402_300_799_999_999;

/// Microseconds since the epoch of a number (seconds, or ms/µs when that large) or an
/// ISO-8601 text (`2025-01-02T03:04:05.678Z`, an offset, or no zone meaning UTC). A
/// time at or before 1970-01-01 (a zero or negative epoch number) or after year 9999 is
/// no recorded time: an error naming it.
pub(crate) fn timestamp_us(v: &Value) -> Result<i128, String> {
    let us = timestamp_any_us(v)?;
    if us <= 0 {
        return Err(format!(
            "`timestamp` {v} is not after 1970-01-01T00:00:00Z: a trace records when each \
             request was sent, as epoch seconds (or ms, µs) or an ISO-8601 time"
        ));
    }
    if us > LAST_US {
        return Err(format!(
            "`timestamp` {v} is after the year 9999: write epoch seconds, ms or µs, or an \
             ISO-8601 time"
        ));
    }
    Ok(us)
}

fn timestamp_any_us(v: &Value) -> Result<i128, String> {
    match v {
        Value::Number(n) => {
            let x = n.as_f64().ok_or("`timestamp` is not a number")?;
            let abs = x.abs();
            let us = if abs >= 1e14 {
                x
            } else if abs >= 1e11 {
                x * 1e3
            } else {
                x * 1e6
            };
            Ok(us.round() as i128)
        }
        Value::String(s) => iso8601_us(s.trim())
            .ok_or_else(|| format!("`timestamp` {s:?} is not ISO-8601 or an epoch number")),
        _ => Err("`timestamp` must be a number or an ISO-8601 string".into()),
    }
}

fn iso8601_us(s: &str) -> Option<i128> {
    if let Ok(x) = s.parse::<f64>() {
        return timestamp_any_us(&Value::from(x)).ok();
    }
    crate::units::parse_utc_us(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{DatasetPlan, DatasetSpec};
    use serde_json::json;

    /// The trace settings of a dataset table written as JSON.
    fn trace(v: Value) -> TracePlan {
        let spec: DatasetSpec = serde_json::from_value(v).unwrap();
        match DatasetPlan::from_spec(&spec).unwrap() {
            DatasetPlan::Trace(t) => t,
            other => panic!("not a trace: {other:?}"),
        }
    }

    #[test]
    fn timestamps_in_every_form() {
        assert_eq!(timestamp_us(&json!(1.5)).unwrap(), 1_500_000);
        assert_eq!(
            timestamp_us(&json!(1_700_000_000_123i64)).unwrap(),
            1_700_000_000_123_000
        );
        assert_eq!(
            timestamp_us(&json!("1970-01-02T00:00:01.25Z")).unwrap(),
            86_401_250_000
        );
        assert_eq!(
            timestamp_us(&json!("2026-11-29T07:47:51Z")).unwrap(),
            1_795_938_471_000_000
        );
        assert_eq!(
            timestamp_us(&json!("1970-01-01T01:00:01+01:00")).unwrap(),
            1_000_000
        );
        // An instant at or before the epoch, or past the year 9999, is no recorded time.
        for bad in [
            json!(0),
            json!(-5.0),
            json!("1970-01-01T01:00:00+01:00"),
            json!(1e30),
        ] {
            assert!(timestamp_us(&bad).is_err(), "{bad}");
        }
        assert!(timestamp_us(&json!("yesterday")).is_err());
    }

    #[test]
    fn records_are_sorted_scaled_and_cut_to_the_request_count() {
        let dir = tempfile::tempdir().unwrap();
        let lines = [
            r#"{"timestamp": 10.0, "body": {"model": "a", "prompt": "x"}}"#,
            r#"{"timestamp": 12.0, "body": {"model": "a", "prompt": "z"}, "headers": {"x": "1", "Authorization": "Bearer p"}}"#,
            r#"{"timestamp": "1970-01-01T00:00:11Z", "body": {"model": "a", "prompt": "y"}}"#,
        ];
        std::fs::write(dir.path().join("t.jsonl"), lines.join("\n")).unwrap();
        let mut spec = trace(json!({"kind": "trace", "path": "t.jsonl", "speed": 4.0}));
        let ctx = DatasetContext {
            base_dir: dir.path().to_path_buf(),
            tokenizer: None,
            chat: false,
            tokenize_prompt: false,
            chat_template: crate::plan::spec::ChatTemplateMode::Auto,
            seed: 0,
            count: 2,
            ..Default::default()
        };
        let t = read(&spec, &ctx).unwrap();
        assert_eq!(t.records, 3);
        assert_eq!(t.requests.len(), 2);
        assert_eq!(t.requests[1].body["prompt"], json!("y"));
        assert_eq!(t.requests[1].offset, Duration::from_millis(250));
        assert_eq!(t.warnings.len(), 2, "{:?}", t.warnings);
        assert!(
            t.warnings[1].contains("not replayed: authorization"),
            "{:?}",
            t.warnings
        );
        spec.speed = 0.0;
        assert!(read(&spec, &ctx).is_err());
    }

    #[test]
    fn a_window_keeps_its_records_from_its_first_one() {
        let mut spec = trace(json!({"kind": "trace", "path": "t", "from": "1s", "to": "3s"}));
        spec.speed = 2.0;
        let s = 1_000_000;
        let times = [5 * s, 6 * s, 7 * s, 8 * s];
        let (keep, offsets) = window(&times, &spec, 10).unwrap();
        assert_eq!(keep, 1..3);
        assert_eq!(offsets, [Duration::ZERO, Duration::from_millis(500)]);
        // `requests` cuts the window.
        assert_eq!(window(&times, &spec, 1).unwrap().0, 1..2);
        spec.from = Duration::from_secs(9);
        spec.to = None;
        let e = window(&times, &spec, 10).unwrap_err().to_string();
        assert!(
            e.contains("no record of the trace is within its window"),
            "{e}"
        );
    }

    #[test]
    fn rewrites_map_models_and_match_lengths() {
        let mut spec = trace(json!({"kind": "trace", "path": "t"}));
        spec.model_mapping.insert("a".into(), "A".into());
        spec.match_output_length = true;
        let body = json!({"model": "a", "messages": [], "max_tokens": 3})
            .as_object()
            .cloned()
            .unwrap();
        let out = rewrite(&spec, body, Some(42));
        assert_eq!(
            Value::Object(out),
            json!({"model": "A", "messages": [], "max_tokens": 42, "ignore_eos": true})
        );
        let other = json!({"model": "b"}).as_object().cloned().unwrap();
        assert_eq!(rewrite(&spec, other.clone(), None), other);
        spec.model_override = Some("X".into());
        assert_eq!(rewrite(&spec, other, None)["model"], json!("X"));
    }

    #[test]
    fn constrained_requests_get_the_length_but_not_ignore_eos() {
        let mut spec = trace(json!({"kind": "trace", "path": "t"}));
        spec.match_output_length = true;
        for extra in [
            json!({"response_format": {"type": "json_object"}}),
            json!({"response_format": {"type": "json_schema", "json_schema": {}}}),
            json!({"guided_regex": "a+"}),
            json!({"structured_outputs": {"choice": ["a", "b"]}}),
            json!({"regex": "[0-9]+"}),
            json!({"tool_choice": "required"}),
            json!({"tool_choice": {"type": "function", "function": {"name": "f"}}}),
            json!({"text": {"format": {"type": "json_schema"}}}),
        ] {
            let mut body = json!({"model": "a"}).as_object().cloned().unwrap();
            body.extend(extra.as_object().cloned().unwrap());
            let out = rewrite(&spec, body, Some(9));
            assert_eq!(out["max_tokens"], json!(9), "{extra}");
            assert!(!out.contains_key("ignore_eos"), "{extra}");
        }
        for free in [
            json!({"response_format": {"type": "text"}}),
            json!({"tool_choice": "auto"}),
            json!({"guided_json": null}),
        ] {
            let mut body = json!({"model": "a"}).as_object().cloned().unwrap();
            body.extend(free.as_object().cloned().unwrap());
            assert_eq!(
                rewrite(&spec, body, Some(9))["ignore_eos"],
                json!(true),
                "{free}"
            );
        }
    }
}
