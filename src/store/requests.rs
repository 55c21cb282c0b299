//! The `requests` table: one row per request of a run (warmup and priming included and
//! marked), holding every field the metrics read, so that metrics recomputed from rows
//! (`merge`, SLA-search pools, `compare`) equal the live run's under every definition.
//! What goes in which column is `row_codec`'s; this file writes batches and reads runs.

use rusqlite::params_from_iter;

use super::row_codec::{self, RowMeta};
use super::{SqlContext, Store, StoreError};
use crate::record::{Phase, RequestRecord};

/// A request to store, with the input length only the suite knows.
#[derive(Debug, Clone, Copy)]
pub struct StoredRequest<'a> {
    pub record: &'a RequestRecord,
    /// The input length the dataset aimed at.
    pub target_input_tokens: Option<u32>,
}

/// One stored request, as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// The request exactly as recorded, every field the metrics read included (its
    /// response text and raw events are not stored and come back empty).
    pub record: RequestRecord,
    /// The input length the dataset aimed at.
    pub target_input_tokens: Option<u32>,
    /// The shard (`K/N`) that sent the request, when the run was split.
    pub shard: Option<String>,
}

/// A row reads as its record (`row.outcome`, `row.usage`, `row.ttft()`): the row is the
/// record plus where it was stored.
impl std::ops::Deref for RequestRow {
    type Target = RequestRecord;

    fn deref(&self) -> &RequestRecord {
        &self.record
    }
}

impl RequestRow {
    /// The record the metrics read (the one way back from a row; see `row_codec`).
    pub(crate) fn to_record(&self) -> RequestRecord {
        self.record.clone()
    }

    /// The record the metrics read, without a copy.
    pub(crate) fn into_record(self) -> RequestRecord {
        self.record
    }
}

/// Writes `rows` of run `run_id` with the prepared statement of `row_codec::insert_sql`.
pub(super) fn insert_rows<'a>(
    stmt: &mut rusqlite::CachedStatement<'_>,
    run_id: &str,
    rows: impl Iterator<Item = (&'a RequestRecord, RowMeta<'a>)>,
) -> Result<(), rusqlite::Error> {
    for (record, meta) in rows {
        let values = row_codec::encode(record, meta);
        let run = rusqlite::types::Value::Text(run_id.to_string());
        stmt.execute(params_from_iter(std::iter::once(run).chain(values)))?;
    }
    Ok(())
}

/// A `SELECT` of `row_codec`'s, given which columns the table has.
type Select = fn(&dyn Fn(&str) -> bool) -> String;

impl Store {
    /// Writes a batch of a run's requests in one transaction (rewriting any row with
    /// the same index).
    pub fn write_requests(
        &mut self,
        run_id: &str,
        batch: &[StoredRequest<'_>],
    ) -> Result<(), StoreError> {
        let shard = self.shard.clone();
        let tx = self.conn.transaction().doing("writing requests")?;
        {
            let mut stmt = tx
                .prepare_cached(&row_codec::insert_sql(true))
                .doing("writing requests")?;
            let rows = batch.iter().map(|s| {
                let meta = RowMeta {
                    target_input_tokens: s.target_input_tokens,
                    shard: shard.as_deref(),
                };
                (s.record, meta)
            });
            insert_rows(&mut stmt, run_id, rows).doing("writing requests")?;
        }
        tx.commit().doing("writing requests")
    }

    /// How many requests of a run are stored.
    pub fn request_count(&self, run_id: &str) -> Result<u64, StoreError> {
        Ok(self.request_counts(run_id)?.0)
    }

    /// How many requests of a run are stored: all of them, and the measured ones.
    pub(crate) fn request_counts(&self, run_id: &str) -> Result<(u64, u64), StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*), COALESCE(SUM(phase = ?2), 0) FROM requests WHERE run_id = ?1",
                [run_id, Phase::Measured.as_str()],
                |r| Ok((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u64)),
            )
            .doing("counting requests")
    }

    /// The answers of the suite's golden requests (phase `check`) that got one, each
    /// `(run id, run ordinal, case, answer text)`, by run ordinal then request index.
    pub fn golden_answers(&self) -> Result<Vec<(String, u32, u64, String)>, StoreError> {
        let sql = "SELECT q.run_id, r.ordinal, q.item, q.answer_text FROM requests q \
                   JOIN runs r ON r.id = q.run_id WHERE q.phase = 'check' \
                   AND q.answer_check IS NOT NULL AND q.answer_check != 'failed' \
                   AND q.answer_text IS NOT NULL ORDER BY r.ordinal, q.request_index";
        let read = || -> rusqlite::Result<Vec<(String, u32, u64, String)>> {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, i64>(2)?.max(0) as u64,
                    r.get(3)?,
                ))
            })?;
            rows.collect()
        };
        read().doing("reading golden answers")
    }

    /// Every stored request of a run, by index (warmup included; see `phase`).
    pub fn request_rows(&self, run_id: &str) -> Result<Vec<RequestRow>, StoreError> {
        let mut rows = Vec::new();
        self.each_request_row(run_id, |row| rows.push(row))?;
        Ok(rows)
    }

    /// Calls `f` with every stored request of a run, by index, one row at a time (a
    /// run of millions of rows is never held whole).
    pub(crate) fn each_request_row(
        &self,
        run_id: &str,
        f: impl FnMut(RequestRow),
    ) -> Result<(), StoreError> {
        self.each_row(run_id, row_codec::select_sql, f)
    }

    /// Calls `f` with every row `select` (given the table's columns) reads of a run.
    fn each_row(
        &self,
        run_id: &str,
        select: Select,
        mut f: impl FnMut(RequestRow),
    ) -> Result<(), StoreError> {
        let columns = self.request_columns()?;
        let select = select(&|c| columns.iter().any(|have| have == c));
        let mut stmt = self
            .conn
            .prepare_cached(&select)
            .doing("reading requests")?;
        let rows = stmt
            .query_map([run_id], row_codec::decode)
            .doing("reading requests")?;
        for row in rows {
            f(row.map_err(|e| read_error(run_id, e))?);
        }
        Ok(())
    }

    /// Calls `f` with every measured request of a run in order of its end (ties by
    /// index), one row at a time: the order a run's time slices are folded in.
    pub(crate) fn each_measured_row_by_end(
        &self,
        run_id: &str,
        f: impl FnMut(RequestRow),
    ) -> Result<(), StoreError> {
        self.each_row(run_id, row_codec::select_measured_by_end, f)
    }

    /// The first send and the last end of a run's measured requests (`None` without
    /// any), on their time base.
    pub(crate) fn measured_span(
        &self,
        run_id: &str,
    ) -> Result<Option<(std::time::Duration, std::time::Duration)>, StoreError> {
        let span: (Option<i64>, Option<i64>) = self
            .conn
            .query_row(
                "SELECT MIN(sent_us), MAX(end_us) FROM requests WHERE run_id = ?1 AND phase = ?2",
                [run_id, Phase::Measured.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .doing("reading a run's span")?;
        let us = |v: i64| std::time::Duration::from_micros(v.max(0) as u64);
        Ok(match span {
            (Some(a), Some(b)) => Some((us(a), us(b.max(a)))),
            _ => None,
        })
    }

    /// The columns the `requests` table has (fewer in an older database read unmigrated).
    fn request_columns(&self) -> Result<Vec<String>, StoreError> {
        self.table_columns("requests")
    }

    /// The records of every stored request of a run, by index, as the metrics read them.
    pub fn request_records(&self, run_id: &str) -> Result<Vec<RequestRecord>, StoreError> {
        Ok(self
            .request_rows(run_id)?
            .into_iter()
            .map(RequestRow::into_record)
            .collect())
    }
}

/// The error of a request row that could not be read.
fn read_error(run_id: &str, e: rusqlite::Error) -> StoreError {
    match e {
        rusqlite::Error::FromSqlConversionFailure(_, _, what) => StoreError::Corrupt {
            what: format!("a request row of run `{run_id}`: {what}"),
        },
        source => StoreError::Sql {
            doing: "reading requests",
            source,
        },
    }
}
