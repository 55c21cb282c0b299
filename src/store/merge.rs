//! What `run --shard` and `perfplan merge` need from the database: the suite's shard
//! (`K/N`, migration 3), a new database at an exact path, and writing a merged run with
//! its raw request rows and metrics as they are (no recomputation here: the store knows
//! no metric formulas).

use std::collections::BTreeMap;
use std::path::Path;

use rusqlite::params;

use super::requests::{insert_rows, RequestRow};
use super::row_codec::{self, RowMeta};
use super::runs::StoredRun;
use super::{SqlContext, Store, StoreError, SuiteInfo};

impl Store {
    /// Creates a database at exactly `path` (its folder must exist) for a new suite.
    pub(crate) fn create_file(path: &Path, suite: &SuiteInfo) -> Result<Store, StoreError> {
        if path.exists() {
            return Err(StoreError::AlreadyExists {
                path: path.to_path_buf(),
            });
        }
        let mut store = Store::connect(path, true)?;
        store.insert_suite(suite)?;
        Ok(store)
    }

    /// Records `shard` (`K/N`) on the suite and on every request row written from now on.
    pub fn mark_shard(&mut self, shard: &str) -> Result<(), StoreError> {
        self.conn
            .execute("UPDATE suites SET shard = ?1 WHERE id = 1", [shard])
            .doing("recording the suite's shard")?;
        self.set_shard(Some(shard));
        Ok(())
    }

    /// The suite's shard (`K/N`), when it was run with `--shard`.
    pub fn suite_shard(&self) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row("SELECT shard FROM suites WHERE id = 1", [], |r| r.get(0))
            .doing("reading the suite's shard")
    }

    /// Starts writing a merged run: its row with what identifies it (id, ordinal, axes,
    /// settings) and its status; `finish_merged_run` writes the rest, known only after its
    /// requests. The run must be new.
    pub(crate) fn begin_merged_run(&mut self, run: &StoredRun) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO runs (id, ordinal, axes_json, settings_json, status)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    run.id,
                    run.ordinal,
                    run.axes.to_string(),
                    super::runs::redact_secrets(&run.settings).to_string(),
                    run.status.as_str(),
                ],
            )
            .doing("writing a merged run")?;
        Ok(())
    }

    /// Writes a batch of a merged run's request rows, as they are, in one transaction.
    pub(crate) fn insert_merged_rows(
        &mut self,
        run_id: &str,
        rows: &[RequestRow],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("writing merged requests")?;
        {
            let mut stmt = tx
                .prepare_cached(&row_codec::insert_sql(false))
                .doing("writing merged requests")?;
            let rows = rows.iter().map(|r| {
                let meta = RowMeta {
                    target_input_tokens: r.target_input_tokens,
                    shard: r.shard.as_deref(),
                };
                (&r.record, meta)
            });
            insert_rows(&mut stmt, run_id, rows).map_err(|source| match source {
                rusqlite::Error::SqliteFailure(e, _)
                    if e.code == rusqlite::ErrorCode::ConstraintViolation =>
                {
                    StoreError::Corrupt {
                        what: format!(
                            "a request of run `{run_id}` appears in two databases (merged twice?)"
                        ),
                    }
                }
                source => StoreError::Sql {
                    doing: "writing merged requests",
                    source,
                },
            })?;
        }
        tx.commit().doing("writing merged requests")
    }

    /// Finishes a merged run begun by `begin_merged_run`: its status, times, warnings,
    /// facts, error and metrics as given.
    pub(crate) fn finish_merged_run(&mut self, run: &StoredRun) -> Result<(), StoreError> {
        let warnings = serde_json::to_string(&run.warnings).map_err(|source| StoreError::Json {
            what: "run warnings",
            source,
        })?;
        let tx = self.conn.transaction().doing("writing a merged run")?;
        tx.execute(
            "UPDATE runs SET status = ?2, started_unix_ms = ?3, finished_unix_ms = ?4,
             warnings_json = ?5, extras_json = ?6, error = ?7, verdict_json = ?8 WHERE id = ?1",
            params![
                run.id,
                run.status.as_str(),
                run.started_unix_ms,
                run.finished_unix_ms,
                warnings,
                run.facts.to_value().to_string(),
                run.error,
                super::runs::verdict_text(
                    Some(&run.verdict).filter(|v| v.status != crate::trust::Status::NotJudged)
                )?,
            ],
        )
        .doing("writing a merged run")?;
        write_metrics(&tx, &run.id, &run.metrics)?;
        tx.commit().doing("writing a merged run")
    }
}

fn write_metrics(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
    metrics: &BTreeMap<String, Option<f64>>,
) -> Result<(), StoreError> {
    let mut stmt = tx
        .prepare("INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)")
        .doing("writing run metrics")?;
    for (name, value) in metrics {
        stmt.execute(params![id, name, value.filter(|v| v.is_finite())])
            .doing("writing run metrics")?;
    }
    Ok(())
}
