//! The request row codec: a `RequestRecord` (with the run's target input length and the
//! shard) ⇄ one row of `requests`. The one place that knows which column holds which
//! field, used by a run's batches and by merged runs alike. A new record field is one
//! column (a migration in `schema`, a name in `COLUMNS`), one line in `encode` and one
//! in `decode`; `decode` builds the record field by field, so it does not compile until
//! the new field is read.
//!
//! Times are integer microseconds from the run's start (the record's own resolution).
//! The arrival of every content chunk is one BLOB (`chunk_times`): the gaps from `sent`
//! to the first chunk and between chunks, as LEB128 varints behind a one-byte format tag
//! (2–3 bytes a chunk for gaps up to 16 ms / 2 s). `ttft_us`, `latency_us`,
//! `chunk_count`, `itl_mean_us` and `itl_max_us` are written for people reading the
//! database with SQL (perfplan's own definitions); they are never read back, since the
//! metrics recompute them from the exact times under any definition.
//!
//! Rows of schema 3 and older have no `chunk_times`: their content chunk times are read
//! from the old `chunks` table (JSON), and `last_chunk_us` is unknown.

use std::time::Duration;

use rusqlite::types::Value;

use super::chunk_codec::{chunk_times, chunk_times_back, read_delays, read_delays_back};
use super::requests::RequestRow;
use super::token_codec;
use crate::record::{
    excerpt, AnswerCheck, Outcome, Phase, RequestRecord, TlsHandshake, ToolTally, Usage,
};

/// The columns of a `requests` row after `run_id`, in the order of `encode`'s values.
pub(super) const COLUMNS: [&str; 48] = [
    "request_index",
    "item",
    "phase",
    "intended_us",
    "sent_us",
    "connect_us",
    "tls_handshake_us",
    "tls_resumed",
    "first_chunk_us",
    "last_chunk_us",
    "first_answer_us",
    "end_us",
    "chunk_times",
    "outcome",
    "http_status",
    "error",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "client_input_tokens",
    "client_output_tokens",
    "target_input_tokens",
    "request_bytes",
    "response_bytes",
    "output_bytes",
    "shard",
    "replica",
    "class",
    "reasoning_tokens",
    "client_reasoning_tokens",
    "choice_chunks",
    "chunk_tokens",
    "read_clock",
    "first_read_delay_us",
    "end_read_delay_us",
    "max_read_delay_us",
    "tool_round",
    "tool_calls",
    "tool_calls_parsed",
    "answer_check",
    "answer_text",
    "chunk_read_delays",
    // Derived, for SQL readers only (never decoded).
    "ttft_us",
    "latency_us",
    "chunk_count",
    "itl_mean_us",
    "itl_max_us",
];

/// What a stored row holds besides the record.
#[derive(Debug, Clone, Copy)]
pub(super) struct RowMeta<'a> {
    pub target_input_tokens: Option<u32>,
    pub shard: Option<&'a str>,
}

/// `INSERT [OR REPLACE] INTO requests (...) VALUES (...)` for `encode`'s values.
pub(super) fn insert_sql(replace: bool) -> String {
    let names = COLUMNS.join(", ");
    let marks: Vec<String> = (1..=COLUMNS.len() + 1).map(|i| format!("?{i}")).collect();
    let verb = if replace {
        "INSERT OR REPLACE"
    } else {
        "INSERT"
    };
    format!(
        "{verb} INTO requests (run_id, {names}) VALUES ({})",
        marks.join(", ")
    )
}

/// `SELECT` of every column `decode` reads, for the rows of run `?1` by index; a column
/// the table lacks (`present` says no: an older database read unmigrated) reads as NULL.
pub(super) fn select_sql(present: &dyn Fn(&str) -> bool) -> String {
    select_where(present, "ORDER BY q.request_index")
}

/// `select_sql`'s columns for the measured rows of run `?1` in order of their end (ties
/// by index): what a run's time slices read.
pub(super) fn select_measured_by_end(present: &dyn Fn(&str) -> bool) -> String {
    select_where(
        present,
        "AND q.phase = 'measured' ORDER BY q.end_us, q.request_index",
    )
}

fn select_where(present: &dyn Fn(&str) -> bool, tail: &str) -> String {
    let names: Vec<String> = COLUMNS
        .iter()
        .map(|c| match present(c) {
            true => format!("q.{c} AS {c}"),
            false => format!("NULL AS {c}"),
        })
        .collect();
    format!(
        "SELECT {}, c.times_us AS legacy_times_us FROM requests q LEFT JOIN chunks c \
         ON c.run_id = q.run_id AND c.request_index = q.request_index \
         WHERE q.run_id = ?1 {tail}",
        names.join(", ")
    )
}

fn us(d: Duration) -> Value {
    Value::Integer(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn int(v: u64) -> Value {
    Value::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

fn opt<T>(v: Option<T>, f: impl Fn(T) -> Value) -> Value {
    v.map_or(Value::Null, f)
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

/// The row's values after `run_id`, in `COLUMNS` order.
pub(super) fn encode(r: &RequestRecord, meta: RowMeta<'_>) -> Vec<Value> {
    let n32 = |v: Option<u32>| opt(v, |n| Value::Integer(i64::from(n)));
    let (itl_mean, itl_max) = itl_summary(&r.content_times);
    vec![
        int(r.index),                                                    // request_index
        int(r.item),                                                     // item
        text(r.phase.as_str()),                                          // phase
        us(r.intended),                                                  // intended_us
        us(r.sent),                                                      // sent_us
        opt(r.connect, us),                                              // connect_us
        opt(r.tls.map(|t| t.took), us),                                  // tls_handshake_us
        opt(r.tls, |t| Value::Integer(i64::from(t.resumed))),            // tls_resumed
        opt(r.first_chunk, us),                                          // first_chunk_us
        opt(r.last_chunk, us),                                           // last_chunk_us
        opt(r.first_answer, us),                                         // first_answer_us
        us(r.end),                                                       // end_us
        opt(chunk_times(r.sent, &r.content_times), Value::Blob),         // chunk_times
        text(r.outcome.as_str()),                                        // outcome
        opt(r.http_status, |s| Value::Integer(i64::from(s))),            // http_status
        opt(r.error.as_deref(), |e| Value::Text(excerpt(e.as_bytes()))), // error
        opt(r.finish_reason.as_deref(), text),                           // finish_reason
        n32(r.usage.prompt_tokens),                                      // prompt_tokens
        n32(r.usage.completion_tokens),                                  // completion_tokens
        n32(r.usage.cached_tokens),                                      // cached_tokens
        n32(r.client_input_tokens),                                      // client_input_tokens
        n32(r.client_output_tokens),                                     // client_output_tokens
        n32(meta.target_input_tokens),                                   // target_input_tokens
        int(r.request_bytes),                                            // request_bytes
        int(r.response_bytes),                                           // response_bytes
        opt(r.output_bytes, int),                                        // output_bytes
        opt(meta.shard, text),                                           // shard
        opt(r.replica, |n| Value::Integer(i64::from(n))),                // replica
        opt(r.class, |n| Value::Integer(i64::from(n))),                  // class
        n32(r.usage.reasoning_tokens),                                   // reasoning_tokens
        n32(r.client_reasoning_tokens),                                  // client_reasoning_tokens
        n32(r.stream_tokens.as_ref().map(|s| s.choice_chunks)),          // choice_chunks
        opt(
            r.stream_tokens.as_ref().map(token_codec::encode),
            Value::Blob,
        ), // chunk_tokens
        opt(r.read_clock, |c| Value::Integer(i64::from(c.kernel))),      // read_clock
        opt(r.read_clock.and_then(|c| c.first_delay), us),               // first_read_delay_us
        opt(r.read_clock.map(|c| c.end_delay), us),                      // end_read_delay_us
        opt(r.read_clock.map(|c| c.max_delay), us),                      // max_read_delay_us
        opt(r.tools, |t| Value::Integer(i64::from(t.round))),            // tool_round
        opt(r.tools, |t| Value::Integer(i64::from(t.calls))),            // tool_calls
        opt(r.tools, |t| Value::Integer(i64::from(t.parsed))),           // tool_calls_parsed
        opt(r.answer, |a| text(a.as_str())),                             // answer_check
        opt(r.answer.map(|_| r.output_text.as_str()), text),             // answer_text
        opt(read_delays(&r.content_delays), Value::Blob),                // chunk_read_delays
        opt(r.ttft(), us),                                               // ttft_us
        us(r.latency()),                                                 // latency_us
        int(r.content_times.len() as u64),                               // chunk_count
        opt(itl_mean, Value::Integer),                                   // itl_mean_us
        opt(itl_max, Value::Integer),                                    // itl_max_us
    ]
}

/// The index of `column` in `select_sql`'s result (its place in `COLUMNS`; the legacy
/// chunk times last). A name not in the list is an index past the end, which reads as
/// an error, never a panic.
fn at(column: &str) -> usize {
    match column {
        "legacy_times_us" => COLUMNS.len(),
        _ => COLUMNS
            .iter()
            .position(|c| *c == column)
            .unwrap_or(usize::MAX),
    }
}

/// Column `column` of the row (by its place, not by a lookup of the name in SQLite).
fn get<T: rusqlite::types::FromSql>(r: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<T> {
    r.get(at(column))
}

fn bad(column: &str, what: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        at(column),
        rusqlite::types::Type::Text,
        format!("{column}: {what}").into(),
    )
}

fn time(r: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<Duration> {
    Ok(Duration::from_micros(get::<i64>(r, column)?.max(0) as u64))
}

fn opt_time(r: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<Option<Duration>> {
    Ok(get::<Option<i64>>(r, column)?.map(|v| Duration::from_micros(v.max(0) as u64)))
}

fn count(r: &rusqlite::Row<'_>, column: &str) -> rusqlite::Result<u64> {
    Ok(get::<i64>(r, column)?.max(0) as u64)
}

/// The TLS handshake of the row's connection: both columns, or none (rows written before
/// schema 12, and requests that opened no TLS connection).
fn tls_handshake(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<TlsHandshake>> {
    let resumed: Option<i64> = get(r, "tls_resumed")?;
    Ok(opt_time(r, "tls_handshake_us")?
        .zip(resumed)
        .map(|(took, resumed)| TlsHandshake {
            took,
            resumed: resumed != 0,
        }))
}

/// A tool-calling request's tally: all three columns, or none (other runs, and rows
/// written before schema 16).
fn tool_tally(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<ToolTally>> {
    let round: Option<u16> = get(r, "tool_round")?;
    let calls: Option<u32> = get(r, "tool_calls")?;
    let parsed: Option<u32> = get(r, "tool_calls_parsed")?;
    Ok(match (round, calls, parsed) {
        (Some(round), Some(calls), Some(parsed)) => Some(ToolTally {
            round,
            calls,
            parsed,
        }),
        _ => None,
    })
}

fn phase(r: &rusqlite::Row<'_>) -> rusqlite::Result<Phase> {
    let t: String = get(r, "phase")?;
    Phase::ALL
        .into_iter()
        .find(|p| p.as_str() == t)
        .ok_or_else(|| bad("phase", format!("unknown phase `{t}`")))
}

fn answer_check(r: &rusqlite::Row<'_>) -> rusqlite::Result<Option<AnswerCheck>> {
    let Some(t) = get::<Option<String>>(r, "answer_check")? else {
        return Ok(None);
    };
    AnswerCheck::parse(&t)
        .map(Some)
        .ok_or_else(|| bad("answer_check", format!("unknown answer check `{t}`")))
}

fn outcome(r: &rusqlite::Row<'_>) -> rusqlite::Result<Outcome> {
    let t: String = get(r, "outcome")?;
    Outcome::parse(&t).ok_or_else(|| bad("outcome", format!("unknown outcome `{t}`")))
}

/// A row of `select_sql` back into the record the metrics read, exactly as it was
/// recorded (its response text and raw events, which rows do not keep, empty).
pub(super) fn decode(r: &rusqlite::Row<'_>) -> rusqlite::Result<RequestRow> {
    let sent = time(r, "sent_us")?;
    let content_times = content_times(r, sent)?;
    let stream_tokens = stream_tokens(r, content_times.len())?;
    let record = RequestRecord {
        index: count(r, "request_index")?,
        item: count(r, "item")?,
        phase: phase(r)?,
        intended: time(r, "intended_us")?,
        sent,
        connect: opt_time(r, "connect_us")?,
        tls: tls_handshake(r)?,
        first_chunk: opt_time(r, "first_chunk_us")?,
        content_times,
        last_chunk: opt_time(r, "last_chunk_us")?,
        first_answer: opt_time(r, "first_answer_us")?,
        end: time(r, "end_us")?,
        outcome: outcome(r)?,
        http_status: get(r, "http_status")?,
        error: get(r, "error")?,
        finish_reason: get(r, "finish_reason")?,
        usage: Usage {
            prompt_tokens: get(r, "prompt_tokens")?,
            completion_tokens: get(r, "completion_tokens")?,
            cached_tokens: get(r, "cached_tokens")?,
            reasoning_tokens: get(r, "reasoning_tokens")?,
        },
        // A golden request's answer text is kept (the consistency check reads it).
        output_text: get::<Option<String>>(r, "answer_text")?.unwrap_or_default(),
        reasoning_text: String::new(),
        client_reasoning_tokens: get(r, "client_reasoning_tokens")?,
        stream_tokens,
        output_bytes: get::<Option<i64>>(r, "output_bytes")?.map(|n| n.max(0) as u64),
        client_output_tokens: get(r, "client_output_tokens")?,
        client_input_tokens: get(r, "client_input_tokens")?,
        request_bytes: count(r, "request_bytes")?,
        response_bytes: count(r, "response_bytes")?,
        replica: get(r, "replica")?,
        class: get(r, "class")?,
        read_clock: crate::record::ReadClock::stored(
            get(r, "read_clock")?,
            opt_time(r, "first_read_delay_us")?,
            opt_time(r, "end_read_delay_us")?,
            opt_time(r, "max_read_delay_us")?,
        ),
        answer: answer_check(r)?,
        content_delays: content_delays(r)?,
        tools: tool_tally(r)?,
        tool_calls: Vec::new(),
        unstreamed: false,
        raw: Vec::new(),
    };
    Ok(RequestRow {
        record,
        target_input_tokens: get(r, "target_input_tokens")?,
        shard: get(r, "shard")?,
    })
}

/// A stream's token counts from `choice_chunks` and `chunk_tokens` (`None` in rows of
/// schema 11 and older, and for answers that did not stream).
fn stream_tokens(
    r: &rusqlite::Row<'_>,
    content_chunks: usize,
) -> rusqlite::Result<Option<crate::record::StreamTokens>> {
    let Some(blob) = get::<Option<Vec<u8>>>(r, "chunk_tokens")? else {
        return Ok(None);
    };
    let choices = get::<Option<i64>>(r, "choice_chunks")?.unwrap_or(0);
    let choices = u32::try_from(choices.max(0)).unwrap_or(u32::MAX);
    token_codec::decode(&blob, content_chunks, choices)
        .map(Some)
        .ok_or_else(|| bad("chunk_tokens", "corrupt".into()))
}

/// Per-chunk read delays from `chunk_read_delays` (none: every delay zero, or a row of
/// schema 18 and older).
fn content_delays(r: &rusqlite::Row<'_>) -> rusqlite::Result<Vec<Duration>> {
    match get::<Option<Vec<u8>>>(r, "chunk_read_delays")? {
        None => Ok(Vec::new()),
        Some(blob) => {
            read_delays_back(&blob).ok_or_else(|| bad("chunk_read_delays", "corrupt".into()))
        }
    }
}

/// Content chunk times from `chunk_times`, or from the `chunks` table of schema 3.
fn content_times(r: &rusqlite::Row<'_>, sent: Duration) -> rusqlite::Result<Vec<Duration>> {
    if let Some(blob) = get::<Option<Vec<u8>>>(r, "chunk_times")? {
        return chunk_times_back(sent, &blob).ok_or_else(|| bad("chunk_times", "corrupt".into()));
    }
    let Some(json) = get::<Option<String>>(r, "legacy_times_us")? else {
        return Ok(Vec::new());
    };
    let times: Vec<u64> = serde_json::from_str(&json).map_err(|e| {
        bad(
            "chunks.times_us",
            format!("not a JSON list of integers: {e}"),
        )
    })?;
    Ok(times.into_iter().map(Duration::from_micros).collect())
}

/// Mean and largest gap between content chunks, in µs.
fn itl_summary(times: &[Duration]) -> (Option<i64>, Option<i64>) {
    let gaps: Vec<i64> = times
        .windows(2)
        .map(|w| i64::try_from(w[1].saturating_sub(w[0]).as_micros()).unwrap_or(i64::MAX))
        .collect();
    let mean = (!gaps.is_empty()).then(|| gaps.iter().sum::<i64>() / gaps.len() as i64);
    (mean, gaps.iter().copied().max())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_has_a_value_and_the_statements_name_them_all() {
        let values = encode(
            &RequestRecord::default(),
            RowMeta {
                target_input_tokens: None,
                shard: None,
            },
        );
        assert_eq!(values.len(), COLUMNS.len());
        assert!(insert_sql(false).ends_with(&format!("?{})", COLUMNS.len() + 1)));
        assert!(select_sql(&|_| true).contains("q.itl_max_us AS itl_max_us"));
        assert_eq!(at("legacy_times_us"), COLUMNS.len());
        assert_eq!(at("no_such_column"), usize::MAX);
        let old = select_sql(&|c| c != "chunk_times");
        assert!(old.contains("NULL AS chunk_times") && old.contains("q.sent_us AS sent_us"));
    }
}
