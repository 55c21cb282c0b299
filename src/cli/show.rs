//! `perfplan show DIR [--run ID] [--request N]`: one stored request — its body as sent
//! and its response text (kept with `[plan] store = { bodies = true, text = true }`), its
//! timings, token counts and outcome. Without `--run`, the first run; without
//! `--request`, the run's first measured request.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::exit;
use super::failure::{Ended, Failure};
use crate::record::Phase;
use crate::store::{RequestRow, Store, StoredRun};

/// Longest string shown whole in a body (image data URLs are long); `--full` shows all.
const SHOWN_CHARS: usize = 240;

#[derive(Debug, Args)]
pub(crate) struct ShowArgs {
    /// A results database, or the output folder holding `results.db`.
    pub db: PathBuf,
    /// The run: its id (or a prefix of it), or its ordinal (`#3`; `3` when no id starts with 3).
    #[arg(long, value_name = "ID")]
    pub run: Option<String>,
    /// The request's index within the run (as in `requests.request_index`).
    #[arg(long, value_name = "N")]
    pub request: Option<u64>,
    /// Show long strings of the body (image data) whole.
    #[arg(long)]
    pub full: bool,
}

fn pick_run<'a>(runs: &'a [StoredRun], wanted: Option<&str>) -> Result<&'a StoredRun, String> {
    let Some(w) = wanted else {
        return runs
            .iter()
            .min_by_key(|r| r.ordinal)
            .ok_or_else(|| "the database holds no runs".to_string());
    };
    // `#3` is an ordinal; anything else an id prefix, or an ordinal when no id starts so.
    let ordinal = w.trim_start_matches('#').parse::<u32>().ok();
    let by_id: Vec<&StoredRun> = match w.starts_with('#') {
        true => Vec::new(),
        false => runs.iter().filter(|r| r.id.starts_with(w)).collect(),
    };
    let found = match by_id.is_empty() {
        true => runs.iter().filter(|r| Some(r.ordinal) == ordinal).collect(),
        false => by_id,
    };
    match found.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no run `{w}`; the runs are {}",
            runs.iter()
                .map(|r| format!("#{} {}", r.ordinal, r.id))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        _ => Err(format!(
            "`{w}` names {} runs: give more of the id",
            found.len()
        )),
    }
}

fn shorten(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().count() > SHOWN_CHARS => {
            let head: String = s.chars().take(80).collect();
            *s = format!("{head}… ({} chars; --full shows them)", s.chars().count());
        }
        Value::Array(items) => items.iter_mut().for_each(shorten),
        Value::Object(map) => map.values_mut().for_each(shorten),
        _ => {}
    }
}

fn body_text(body: &[u8], full: bool) -> String {
    match serde_json::from_slice::<Value>(body) {
        Ok(mut v) => {
            if !full {
                shorten(&mut v);
            }
            serde_json::to_string_pretty(&v).unwrap_or_default()
        }
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

fn ms(us: Option<u64>) -> String {
    us.map_or("-".to_string(), |v| format!("{:.1} ms", v as f64 / 1000.0))
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// The lines of one request (without body and text).
pub(crate) fn describe(run: &StoredRun, row: &RequestRow) -> String {
    let details: Vec<String> = [
        row.http_status.map(|s| format!("HTTP {s}")),
        row.finish_reason
            .as_deref()
            .map(|f| format!("finish_reason {f}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let details = match details.is_empty() {
        true => String::new(),
        false => format!(" ({})", details.join(", ")),
    };
    let mut out = format!(
        "run       #{} {} ({})\nrequest   {} (item {}, {})\noutcome   {}{details}\n",
        run.ordinal,
        run.id,
        run.status,
        row.index,
        row.item,
        row.phase.as_str(),
        row.outcome.as_str(),
    );
    if let Some(e) = &row.error {
        out.push_str(&format!("error     {e}\n"));
    }
    let us = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let gaps: Vec<u64> = row
        .content_times
        .windows(2)
        .map(|w| us(w[1].saturating_sub(w[0])))
        .collect();
    let gap_mean = (!gaps.is_empty()).then(|| gaps.iter().sum::<u64>() / gaps.len() as u64);
    out.push_str(&format!(
        "timings   sent at {}, ttft {}, latency {}, {} content chunks, chunk gap mean {} / max {}\n",
        ms(Some(us(row.sent))),
        ms(row.ttft().map(us)),
        ms(Some(us(row.latency()))),
        row.content_times.len(),
        ms(gap_mean),
        ms(gaps.iter().copied().max()),
    ));
    if let Some(s) = &row.stream_tokens {
        let from = match s.source {
            crate::record::TokenSource::Usage => "the server's per-chunk usage",
            crate::record::TokenSource::Chunks => "one per chunk",
        };
        out.push_str(&format!(
            "chunks    {} with a choice, {} tokens received ({from}), {} after the last content chunk\n",
            s.choice_chunks,
            s.total,
            s.total.saturating_sub(s.through_last_content()),
        ));
    }
    out.push_str(&format!(
        "tokens    prompt {} (client {}, target {}), completion {} (client {}), cached {}, \
         reasoning {} (client {})\n\
         bytes     {} sent, {} received\n",
        opt(row.usage.prompt_tokens),
        opt(row.client_input_tokens),
        opt(row.target_input_tokens),
        opt(row.usage.completion_tokens),
        opt(row.client_output_tokens),
        opt(row.usage.cached_tokens),
        opt(row.usage.reasoning_tokens),
        opt(row.client_reasoning_tokens),
        row.request_bytes,
        row.response_bytes,
    ));
    out
}

fn show(args: &ShowArgs) -> Result<String, Failure> {
    let db = |e: crate::store::StoreError| Failure::of(exit::DATABASE, &e);
    let store = Store::open(&args.db).map_err(db)?;
    let runs = store.runs().map_err(db)?;
    let run = pick_run(&runs, args.run.as_deref()).map_err(|m| Failure::new(exit::INVALID, m))?;
    let rows = store.request_rows(&run.id).map_err(db)?;
    let row = match args.request {
        Some(n) => rows.iter().find(|r| r.index == n),
        None => rows
            .iter()
            .find(|r| r.phase == Phase::Measured)
            .or(rows.first()),
    };
    let Some(row) = row else {
        let which = args
            .request
            .map(|n| format!("request {n}"))
            .unwrap_or("any request".into());
        let range = match (rows.first(), rows.last()) {
            (Some(a), Some(b)) => format!("; its requests are {} to {}", a.index, b.index),
            _ => String::new(),
        };
        return Err(Failure::new(
            exit::INVALID,
            format!("run #{} {} has no {which}{range}", run.ordinal, run.id),
        ));
    };
    let content = store
        .stored_content(&run.id, row.index, row.item)
        .map_err(db)?;
    let mut out = describe(run, row);
    out.push_str("\nbody\n");
    match &content.body {
        Some(b) => out.push_str(&format!("{}\n", body_text(b, args.full))),
        None => out
            .push_str("  (not stored: `[plan] store = { bodies = true }` keeps request bodies)\n"),
    }
    out.push_str("\nresponse text\n");
    match &content.text {
        Some(t) => out.push_str(&format!("{t}\n")),
        None => {
            out.push_str("  (not stored: `[plan] store = { text = true }` keeps response texts)\n")
        }
    }
    Ok(out)
}

pub fn run(args: &ShowArgs) -> Ended {
    print!("{}", show(args)?);
    Ok(exit::OK)
}
