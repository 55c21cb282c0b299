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

use super::requests::RequestRow;
use super::token_codec;
use crate::record::{excerpt, Outcome, Phase, RequestRecord, TlsHandshake, Usage};

/// The columns of a `requests` row after `run_id`, in the order of `encode`'s values.
pub(super) const COLUMNS: [&str; 42] = [
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
    // Derived, for SQL readers only (never decoded).
    "ttft_us",
    "latency_us",
    "chunk_count",
    "itl_mean_us",
    "itl_max_us",
];

/// `chunk_times` tags: gaps that never go backwards (every real stream), or signed ones.
const GAPS: u8 = 1;
const SIGNED_GAPS: u8 = 2;

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

fn phase(r: &rusqlite::Row<'_>) -> rusqlite::Result<Phase> {
    let t: String = get(r, "phase")?;
    [Phase::Warmup, Phase::Priming, Phase::Measured]
        .into_iter()
        .find(|p| p.as_str() == t)
        .ok_or_else(|| bad("phase", format!("unknown phase `{t}`")))
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
        output_text: String::new(),
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

fn micros(d: Duration) -> i128 {
    i128::try_from(d.as_micros()).unwrap_or(i128::MAX)
}

pub(super) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn read_varint(bytes: &mut std::slice::Iter<'_, u8>) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.next()?;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The `chunk_times` blob of `times` (µs), relative to `sent`; `None` when there are none.
pub(super) fn chunk_times(sent: Duration, times: &[Duration]) -> Option<Vec<u8>> {
    if times.is_empty() {
        return None;
    }
    let mut prev = micros(sent);
    let gaps: Vec<i128> = times
        .iter()
        .map(|t| {
            let t = micros(*t);
            let gap = t - prev;
            prev = t;
            gap
        })
        .collect();
    let signed = gaps.iter().any(|g| *g < 0);
    let mut out = Vec::with_capacity(1 + 3 * gaps.len());
    out.push(if signed { SIGNED_GAPS } else { GAPS });
    for g in gaps {
        let g = i64::try_from(g).unwrap_or(if g < 0 { i64::MIN } else { i64::MAX });
        // Zigzag: 0, -1, 1, -2, … → 0, 1, 2, 3, …
        let v = if signed {
            ((g << 1) ^ (g >> 63)) as u64
        } else {
            g as u64
        };
        push_varint(&mut out, v);
    }
    Some(out)
}

/// `chunk_times` back into the times it was made of; `None` for a corrupt blob.
pub(super) fn chunk_times_back(sent: Duration, blob: &[u8]) -> Option<Vec<Duration>> {
    let (&tag, rest) = blob.split_first()?;
    let signed = match tag {
        GAPS => false,
        SIGNED_GAPS => true,
        _ => return None,
    };
    let mut bytes = rest.iter();
    let mut at = micros(sent);
    let mut out = Vec::with_capacity(rest.len() / 2);
    while bytes.len() > 0 {
        let v = read_varint(&mut bytes)?;
        let gap = if signed {
            i128::from(((v >> 1) as i64) ^ -((v & 1) as i64))
        } else {
            i128::from(v)
        };
        at += gap;
        out.push(Duration::from_micros(u64::try_from(at).ok()?));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().copied().map(Duration::from_micros).collect()
    }

    #[test]
    fn chunk_times_round_trip_in_two_or_three_bytes_a_chunk() {
        let sent = Duration::from_micros(1_000_000);
        let times = us(&[1_020_000, 1_020_000, 1_030_000, 1_031_000, 3_031_000]);
        let blob = chunk_times(sent, &times).unwrap();
        // tag + 20000 (3 bytes) + 0 + 10000 (2) + 1000 (2) + 2000000 (3)
        assert_eq!(blob.len(), 1 + 3 + 1 + 2 + 2 + 3);
        assert_eq!(blob[0], GAPS);
        assert_eq!(chunk_times_back(sent, &blob).unwrap(), times);
        assert_eq!(chunk_times(sent, &[]), None);
    }

    #[test]
    fn times_that_go_backwards_still_round_trip() {
        let sent = Duration::from_micros(500);
        let times = us(&[400, 900, 800, 0, u64::from(u32::MAX) * 4]);
        let blob = chunk_times(sent, &times).unwrap();
        assert_eq!(blob[0], SIGNED_GAPS);
        assert_eq!(chunk_times_back(sent, &blob).unwrap(), times);
    }

    #[test]
    fn corrupt_blobs_are_refused_not_misread() {
        let sent = Duration::ZERO;
        assert_eq!(chunk_times_back(sent, &[]), None);
        assert_eq!(chunk_times_back(sent, &[9, 1]), None);
        assert_eq!(chunk_times_back(sent, &[GAPS, 0x80]), None, "a cut varint");
        assert_eq!(
            chunk_times_back(sent, &[GAPS]).unwrap(),
            Vec::<Duration>::new()
        );
    }

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
