//! The `requests` table (one row per request, warmup included and marked; times in
//! integer microseconds from the run start) and the optional `chunks` table (every
//! content chunk's arrival, so ITL can be recomputed exactly).

use std::time::Duration;

use rusqlite::params;

use super::{SqlContext, Store, StoreError};
use crate::engine::{Outcome, Phase, RequestRecord, Usage};

/// Longest error excerpt kept, in bytes.
const ERROR_EXCERPT: usize = 500;

/// A request to store, with the token counts only the runner knows.
#[derive(Debug, Clone, Copy)]
pub struct StoredRequest<'a> {
    pub record: &'a RequestRecord,
    /// The input length the dataset aimed at.
    pub target_input_tokens: Option<u32>,
    /// The input length the client's tokenizer counted (chat template included).
    pub client_input_tokens: Option<u32>,
}

/// One stored request, as reports read it back.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    pub index: u64,
    pub item: u64,
    pub phase: Phase,
    pub intended_us: u64,
    pub sent_us: u64,
    pub first_chunk_us: Option<u64>,
    pub ttft_us: Option<u64>,
    pub latency_us: u64,
    pub end_us: u64,
    pub chunk_count: u32,
    pub itl_mean_us: Option<u64>,
    pub itl_max_us: Option<u64>,
    pub usage: Usage,
    pub client_input_tokens: Option<u32>,
    pub client_output_tokens: Option<u32>,
    pub target_input_tokens: Option<u32>,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    pub finish_reason: Option<String>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Every content chunk's arrival (µs from the run start), when chunks were kept.
    pub content_times_us: Option<Vec<u64>>,
    /// The shard (`K/N`) that sent the request, when the run was split.
    pub shard: Option<String>,
    /// Connection setup (µs) when the request opened its connection (`RequestRecord::connect`).
    pub connect_us: Option<u64>,
}

impl RequestRow {
    /// Output tokens: the server's figure, else the client's count.
    pub fn output_tokens(&self) -> Option<u32> {
        self.usage.completion_tokens.or(self.client_output_tokens)
    }

    /// TPOT in microseconds: (latency − TTFT) / (output tokens − 1), when defined.
    pub fn tpot_us(&self) -> Option<f64> {
        let ttft = self.ttft_us?;
        let out = self.output_tokens()?;
        (out > 1).then(|| self.latency_us.saturating_sub(ttft) as f64 / f64::from(out - 1))
    }

    /// The record back, as far as it was stored (no output text; content chunk times
    /// only when chunks were kept, else the first and last).
    pub fn to_record(&self) -> RequestRecord {
        let us = Duration::from_micros;
        let content_times = match &self.content_times_us {
            Some(times) => times.iter().copied().map(us).collect(),
            None => match self.ttft_us {
                Some(t) => {
                    let first = self.sent_us + t;
                    let last = self.sent_us + self.latency_us;
                    if last > first {
                        vec![us(first), us(last)]
                    } else {
                        vec![us(first)]
                    }
                }
                None => Vec::new(),
            },
        };
        RequestRecord {
            index: self.index,
            item: self.item,
            phase: self.phase,
            intended: us(self.intended_us),
            sent: us(self.sent_us),
            connect: self.connect_us.map(us),
            first_chunk: self.first_chunk_us.map(us),
            content_times,
            last_chunk: None,
            end: us(self.end_us),
            outcome: self.outcome,
            http_status: self.http_status,
            error: self.error.clone(),
            finish_reason: self.finish_reason.clone(),
            usage: self.usage,
            output_text: String::new(),
            client_output_tokens: self.client_output_tokens,
            client_input_tokens: self.client_input_tokens,
            request_bytes: self.request_bytes,
            response_bytes: self.response_bytes,
            raw: Vec::new(),
        }
    }
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn excerpt(text: &str) -> &str {
    if text.len() <= ERROR_EXCERPT {
        return text;
    }
    let mut end = ERROR_EXCERPT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Mean and largest gap between content chunks, in µs.
fn itl_summary(times: &[Duration]) -> (Option<i64>, Option<i64>) {
    if times.len() < 2 {
        return (None, None);
    }
    let gaps: Vec<i64> = times
        .windows(2)
        .map(|w| micros(w[1].saturating_sub(w[0])))
        .collect();
    let mean = gaps.iter().sum::<i64>() / gaps.len() as i64;
    (Some(mean), gaps.iter().copied().max())
}

fn bad_text(idx: usize, what: &str, text: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        idx,
        rusqlite::types::Type::Text,
        format!("unknown {what} `{text}`").into(),
    )
}

fn phase_of(text: &str) -> rusqlite::Result<Phase> {
    match text {
        "warmup" => Ok(Phase::Warmup),
        "priming" => Ok(Phase::Priming),
        "measured" => Ok(Phase::Measured),
        _ => Err(bad_text(2, "phase", text)),
    }
}

/// One `requests` row (the statement is the prepared INSERT of `write_requests`).
fn insert_request(
    stmt: &mut rusqlite::CachedStatement<'_>,
    run_id: &str,
    s: &StoredRequest<'_>,
    shard: Option<&str>,
) -> Result<(), StoreError> {
    let r = s.record;
    let (itl_mean, itl_max) = itl_summary(&r.content_times);
    stmt.execute(params![
        run_id,
        r.index as i64,
        r.item as i64,
        r.phase.as_str(),
        micros(r.intended),
        micros(r.sent),
        r.first_chunk.map(micros),
        r.ttft().map(micros),
        micros(r.latency()),
        micros(r.end),
        r.content_times.len() as i64,
        itl_mean,
        itl_max,
        r.usage.prompt_tokens,
        r.usage.completion_tokens,
        r.usage.cached_tokens,
        s.client_input_tokens,
        r.client_output_tokens,
        s.target_input_tokens,
        r.outcome.as_str(),
        r.http_status,
        r.error.as_deref().map(excerpt),
        r.finish_reason,
        r.request_bytes as i64,
        r.response_bytes as i64,
        shard,
        r.connect.map(micros),
    ])
    .doing("writing requests")?;
    Ok(())
}

/// A `requests` row joined with its `chunks` text (see `request_rows`).
fn request_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(RequestRow, Option<String>)> {
    let outcome: String = r.get(18)?;
    let row = RequestRow {
        index: r.get::<_, i64>(0)? as u64,
        item: r.get::<_, i64>(1)? as u64,
        phase: phase_of(&r.get::<_, String>(2)?)?,
        intended_us: r.get::<_, i64>(3)? as u64,
        sent_us: r.get::<_, i64>(4)? as u64,
        first_chunk_us: r.get::<_, Option<i64>>(5)?.map(|v| v as u64),
        ttft_us: r.get::<_, Option<i64>>(6)?.map(|v| v as u64),
        latency_us: r.get::<_, i64>(7)? as u64,
        end_us: r.get::<_, i64>(8)? as u64,
        chunk_count: r.get(9)?,
        itl_mean_us: r.get::<_, Option<i64>>(10)?.map(|v| v as u64),
        itl_max_us: r.get::<_, Option<i64>>(11)?.map(|v| v as u64),
        usage: Usage {
            prompt_tokens: r.get(12)?,
            completion_tokens: r.get(13)?,
            cached_tokens: r.get(14)?,
        },
        client_input_tokens: r.get(15)?,
        client_output_tokens: r.get(16)?,
        target_input_tokens: r.get(17)?,
        outcome: Outcome::parse(&outcome).ok_or_else(|| bad_text(18, "outcome", &outcome))?,
        http_status: r.get(19)?,
        error: r.get(20)?,
        finish_reason: r.get(21)?,
        request_bytes: r.get::<_, i64>(22)? as u64,
        response_bytes: r.get::<_, i64>(23)? as u64,
        content_times_us: None,
        shard: r.get(25)?,
        connect_us: r.get::<_, Option<i64>>(26)?.map(|v| v as u64),
    };
    Ok((row, r.get::<_, Option<String>>(24)?))
}

/// The requests table's columns and their parameters, after `INSERT [OR REPLACE] INTO`
/// (a run's batches and merged runs write the same row).
pub(super) const REQUEST_INSERT: &str = "requests (run_id, request_index, item, phase, \
    intended_us, sent_us, first_chunk_us, ttft_us, latency_us, end_us, chunk_count, \
    itl_mean_us, itl_max_us, prompt_tokens, completion_tokens, cached_tokens, \
    client_input_tokens, client_output_tokens, target_input_tokens, outcome, http_status, \
    error, finish_reason, request_bytes, response_bytes, shard, connect_us) VALUES (?1, ?2, \
    ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, \
    ?22, ?23, ?24, ?25, ?26, ?27)";

impl Store {
    /// Writes a batch of a run's requests in one transaction (rewriting any row with
    /// the same index).
    pub fn write_requests(
        &mut self,
        run_id: &str,
        batch: &[StoredRequest<'_>],
    ) -> Result<(), StoreError> {
        let keep_chunks = self.keep_chunks;
        let shard = self.shard.clone();
        let tx = self.conn.transaction().doing("writing requests")?;
        {
            let mut stmt = tx
                .prepare_cached(&format!("INSERT OR REPLACE INTO {REQUEST_INSERT}"))
                .doing("writing requests")?;
            let mut chunks = tx
                .prepare_cached("INSERT OR REPLACE INTO chunks (run_id, request_index, times_us) VALUES (?1, ?2, ?3)")
                .doing("writing chunks")?;
            for s in batch {
                let r = s.record;
                insert_request(&mut stmt, run_id, s, shard.as_deref())?;
                if keep_chunks && !r.content_times.is_empty() {
                    let times: Vec<i64> = r.content_times.iter().copied().map(micros).collect();
                    let json = serde_json::Value::from(times).to_string();
                    chunks
                        .execute(params![run_id, r.index as i64, json])
                        .doing("writing chunks")?;
                }
            }
        }
        tx.commit().doing("writing requests")
    }

    /// How many requests of a run are stored.
    pub fn request_count(&self, run_id: &str) -> Result<u64, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM requests WHERE run_id = ?1",
                [run_id],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n as u64)
            .doing("counting requests")
    }

    /// Every stored request of a run, by index (warmup included; see `phase`).
    pub fn request_rows(&self, run_id: &str) -> Result<Vec<RequestRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT q.request_index, q.item, q.phase, q.intended_us, q.sent_us, q.first_chunk_us,
                 q.ttft_us, q.latency_us, q.end_us, q.chunk_count, q.itl_mean_us, q.itl_max_us,
                 q.prompt_tokens, q.completion_tokens, q.cached_tokens, q.client_input_tokens,
                 q.client_output_tokens, q.target_input_tokens, q.outcome, q.http_status, q.error,
                 q.finish_reason, q.request_bytes, q.response_bytes, c.times_us, q.shard,
                 q.connect_us
                 FROM requests q LEFT JOIN chunks c
                   ON c.run_id = q.run_id AND c.request_index = q.request_index
                 WHERE q.run_id = ?1 ORDER BY q.request_index",
            )
            .doing("reading requests")?;
        let raw = stmt
            .query_map([run_id], request_row)
            .doing("reading requests")?
            .collect::<Result<Vec<_>, _>>()
            .doing("reading requests")?;
        raw.into_iter()
            .map(|(mut row, times)| {
                if let Some(t) = times {
                    let times = serde_json::from_str(&t).map_err(|e| StoreError::Corrupt {
                        what: format!("chunks.times_us of request {}: {e}", row.index),
                    })?;
                    row.content_times_us = Some(times);
                }
                Ok(row)
            })
            .collect()
    }
}
