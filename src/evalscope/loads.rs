//! EvalScope's load parameters → the `load` axis: `--parallel` and `--number` paired
//! position by position (closed loop), `--rate` with `--open-loop` (open loop), a rate
//! in a closed loop as an open loop bounded by `max_in_flight`, `--warmup-num` as each
//! tier's count, and `--sla-auto-tune` as one search per SLA criterion.

use serde_json::{json, Map, Value};

use super::args::Parsed;
use super::convert::seconds;
use super::ImportError;

fn mismatch(what: &str, a: &[String], b: &[String]) -> ImportError {
    ImportError::Mismatch(format!(
        "{what} must have as many values as each other (EvalScope pairs them position by position): {} vs {}",
        a.join(" "),
        b.join(" ")
    ))
}

/// A tier's warmup count: a count, or max(1, ⌊ratio × requests⌋) as EvalScope computes it.
fn warmup(ratio_or_count: f64, requests: u32) -> u32 {
    if ratio_or_count <= 0.0 {
        0
    } else if ratio_or_count >= 1.0 {
        ratio_or_count as u32
    } else {
        ((ratio_or_count * f64::from(requests)) as u32).max(1)
    }
}

/// The `load` axis of a command line.
pub(super) fn loads(p: &Parsed, notes: &mut Vec<String>) -> Result<Vec<Value>, ImportError> {
    if p.flag("--sla-auto-tune") == Some(true) {
        return searches(p, notes);
    }
    if p.one("--dataset") == Some("workload_trace") {
        return trace_loads(p, notes);
    }
    let number = match p.nums::<u32>("--number")? {
        n if n.is_empty() => vec![1000],
        n => n,
    };
    let parallel = match p.nums::<u32>("--parallel")? {
        n if n.is_empty() => vec![1],
        n => n,
    };
    let rate: Vec<f64> = p.nums("--rate")?;
    let warm = p.num::<f64>("--warmup-num")?.unwrap_or(0.0);
    let duration = seconds("--duration", p)?;
    let open = p.flag("--open-loop") == Some(true);
    let mut out = Vec::new();
    if open {
        if rate.len() != number.len() {
            return Err(mismatch(
                "--rate and --number",
                p.list("--rate"),
                p.list("--number"),
            ));
        }
        if let Some(bad) = rate.iter().find(|r| **r <= 0.0) {
            return Err(ImportError::Value {
                flag: "--rate".into(),
                value: bad.to_string(),
                expected: "rates above 0 with --open-loop",
            });
        }
        for (r, n) in rate.iter().zip(&number) {
            out.push(tier(
                json!({"rate": r, "requests": n}),
                warmup(warm, *n),
                &duration,
            ));
        }
        return Ok(out);
    }
    if parallel.len() != number.len() {
        return Err(mismatch(
            "--parallel and --number",
            p.list("--parallel"),
            p.list("--number"),
        ));
    }
    let paced = rate.first().copied().filter(|r| *r > 0.0);
    for (c, n) in parallel.iter().zip(&number) {
        let base = match paced {
            Some(r) => json!({"rate": r, "requests": n, "max_in_flight": c}),
            None => json!({"concurrency": c, "requests": n}),
        };
        out.push(tier(base, warmup(warm, *n), &duration));
    }
    if paced.is_some() {
        notes.push("`--rate` without `--open-loop`: Poisson arrivals at that rate with at most `--parallel` requests in flight, which is perfplan's open loop with `max_in_flight`".into());
    }
    Ok(out)
}

/// A trace replay's loads: the records at their recorded times, every one of them, or the
/// first `--number` (EvalScope truncates the trace so). Pacing flags do not apply: the
/// trace sets the send times.
fn trace_loads(p: &Parsed, notes: &mut Vec<String>) -> Result<Vec<Value>, ImportError> {
    let ignored: Vec<&str> = ["--parallel", "--rate", "--warmup-num", "--duration"]
        .into_iter()
        .filter(|f| p.has(f))
        .collect();
    if !ignored.is_empty() {
        notes.push(format!(
            "a trace replay sends each record at its recorded time: {} left out",
            ignored
                .iter()
                .map(|f| format!("`{f}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(p.nums::<u32>("--number")?
        .into_iter()
        .map(|n| json!({ "requests": n }))
        .collect())
}

fn tier(mut load: Value, warmup: u32, duration: &Option<String>) -> Value {
    if let Value::Object(map) = &mut load {
        if warmup > 0 {
            map.insert("warmup".into(), warmup.into());
        }
        if let Some(d) = duration {
            map.insert("duration".into(), d.clone().into());
        }
    }
    load
}

/// EvalScope's SLA metric names → perfplan's, and whether their values are seconds.
fn metric(name: &str) -> Option<(&'static str, bool)> {
    Some(match name {
        "avg_latency" => ("latency_mean", true),
        "p99_latency" => ("latency_p99", true),
        "avg_ttft" => ("ttft_mean", true),
        "p99_ttft" => ("ttft_p99", true),
        "avg_tpot" => ("tpot_mean", true),
        "p99_tpot" => ("tpot_p99", true),
        "rps" => ("rps", false),
        "tps" => ("output_tps", false),
        _ => return None,
    })
}

/// One SLA criterion (`"<=2"`, `"max"`) in perfplan's words.
fn condition(name: &str, text: &str) -> Result<(String, String), ImportError> {
    let bad = |why: &str| ImportError::Unsupported {
        flag: "--sla-params".into(),
        value: format!("{name}: {text}"),
        why: why.into(),
    };
    let (metric, seconds) = metric(name).ok_or_else(|| {
        bad("EvalScope's SLA metrics are avg_/p99_ latency, ttft, tpot, and rps, tps")
    })?;
    let t = text.trim();
    if t == "max" || t == "min" {
        return Ok((metric.into(), t.into()));
    }
    let op = ["<=", ">=", "<", ">"]
        .into_iter()
        .find(|op| t.starts_with(op))
        .ok_or_else(|| bad("a condition starts with <=, <, >=, > (or is max / min)"))?;
    let value: f64 = t[op.len()..]
        .trim()
        .parse()
        .map_err(|_| bad("the limit is not a number"))?;
    let unit = if seconds { "s" } else { "" };
    Ok((metric.into(), format!("{op} {value}{unit}")))
}

/// A note for each load flag of the command that an SLA search does not read (the search
/// sets the tuned variable and each probe's request count itself).
fn ignored_by_search(p: &Parsed, variable: &str, notes: &mut Vec<String>) {
    let why = |flag: &str| -> Option<&'static str> {
        Some(match flag {
            "--parallel" if variable == "concurrency" => "the search sets each probe's concurrency",
            "--parallel" => "a rate search's in-flight bound is `--sla-fixed-parallel`",
            "--rate" if variable == "rate" => "the search sets each probe's rate",
            "--rate" => "a concurrency search sends as fast as its concurrency allows",
            "--number" => "each probe sends `--sla-number-multiplier` × the tuned value requests",
            "--open-loop" => "the search's probes follow `--sla-variable`",
            "--warmup-num" => "the search's probes have no warmup requests",
            "--duration" => "each probe sends its request count, whatever it takes",
            "--sla-fixed-parallel" if variable == "concurrency" => {
                "it applies to `--sla-variable rate` only"
            }
            _ => return None,
        })
    };
    for flag in [
        "--parallel",
        "--rate",
        "--number",
        "--open-loop",
        "--warmup-num",
        "--duration",
        "--sla-fixed-parallel",
    ] {
        if let (true, Some(why)) = (p.has(flag), why(flag)) {
            notes.push(format!(
                "`--sla-auto-tune`: `{flag}` is left out, because {why}"
            ));
        }
    }
}

fn searches(p: &Parsed, notes: &mut Vec<String>) -> Result<Vec<Value>, ImportError> {
    let text = p.one("--sla-params").ok_or(ImportError::MissingValue {
        flag: "--sla-params (needed by --sla-auto-tune)".into(),
    })?;
    let parsed: Value = serde_json::from_str(text).map_err(|source| ImportError::Json {
        flag: "--sla-params".into(),
        source,
    })?;
    let groups = match parsed {
        Value::Array(items) => items,
        one @ Value::Object(_) => vec![one],
        _ => {
            return Err(ImportError::Value {
                flag: "--sla-params".into(),
                value: text.into(),
                expected: "a JSON object or a list of them",
            })
        }
    };
    let variable = match p.one("--sla-variable").unwrap_or("parallel") {
        "parallel" => "concurrency",
        "rate" => "rate",
        other => {
            return Err(ImportError::Value {
                flag: "--sla-variable".into(),
                value: other.into(),
                expected: "parallel or rate",
            })
        }
    };
    ignored_by_search(p, variable, notes);
    let mut base = Map::new();
    base.insert("search".into(), variable.into());
    if let Some(v) = p.num::<f64>("--sla-lower-bound")? {
        base.insert("min".into(), json!(v));
    }
    if let Some(v) = p.num::<f64>("--sla-upper-bound")? {
        base.insert("max".into(), json!(v));
    }
    base.insert(
        "trials".into(),
        p.num::<u32>("--sla-num-runs")?.unwrap_or(3).into(),
    );
    let mult = p.num::<f64>("--sla-number-multiplier")?.unwrap_or(2.0);
    base.insert("requests_per_step".into(), format!("{mult}x").into());
    if let Some(c) = p
        .num::<u32>("--sla-fixed-parallel")?
        .filter(|_| variable == "rate")
    {
        base.insert("max_in_flight".into(), c.into());
    }
    let mut out = Vec::new();
    for group in groups {
        let Value::Object(criteria) = group else {
            continue;
        };
        for (name, value) in criteria {
            let text = value
                .as_str()
                .map(String::from)
                .unwrap_or_else(|| value.to_string());
            let (metric, cond) = condition(&name, &text)?;
            let mut slo = Map::new();
            slo.insert(metric, cond.into());
            slo.insert("success_ratio".into(), ">= 1".into());
            let mut search = base.clone();
            search.insert("slo".into(), Value::Object(slo));
            out.push(Value::Object(search));
        }
    }
    if out.is_empty() {
        return Err(ImportError::Value {
            flag: "--sla-params".into(),
            value: text.into(),
            expected: "at least one criterion",
        });
    }
    notes.push("`--sla-auto-tune`: one search per criterion, each requiring every request to succeed, as EvalScope tunes them; perfplan doubles from `min` then bisects".into());
    Ok(out)
}
