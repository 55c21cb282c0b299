//! The `runs` table and its per-run results: registration, the begin/finish life
//! cycle (an interrupted run is rerun from scratch), aggregates, server scrapes, gates.

use std::collections::BTreeMap;
use std::fmt;

use rusqlite::{params, OptionalExtension};
use serde_json::Value;

use super::suite::json_column;
use super::{now_unix_ms, SqlContext, Store, StoreError};
use crate::record::RunFacts;
use crate::trust::{RunWarning, Verdict};

/// Where a run is in its life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunStatus {
    Pending,
    Running,
    Done,
    Failed,
    /// Left `running` by a process that died; rerun from scratch on `--resume`.
    Interrupted,
}

impl RunStatus {
    pub const ALL: [RunStatus; 5] = [
        RunStatus::Pending,
        RunStatus::Running,
        RunStatus::Done,
        RunStatus::Failed,
        RunStatus::Interrupted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Pending => "pending",
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(text: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One run as the planner resolved it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: String,
    pub ordinal: u32,
    /// Axis name → value, in the plan's axis order.
    pub axes: Value,
    /// The fully resolved settings (never secrets).
    pub settings: Value,
}

/// How a run ended, as `finish_run` records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFinish<'a> {
    pub status: RunStatus,
    /// The aggregates of `metrics::summarize` (null when unknown).
    pub metrics: &'a BTreeMap<String, Option<f64>>,
    /// Everything else the run's stages found (`extras_json`).
    pub facts: &'a RunFacts,
    pub warnings: &'a [RunWarning],
    /// The run's verdict (`None`: not judged, e.g. a shard's empty share).
    pub verdict: Option<&'a Verdict>,
    /// Why the run failed, when it did.
    pub error: Option<&'a str>,
}

/// A stored run with its aggregates.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    pub id: String,
    pub ordinal: u32,
    pub axes: Value,
    pub settings: Value,
    pub status: RunStatus,
    pub started_unix_ms: Option<i64>,
    pub finished_unix_ms: Option<i64>,
    pub warnings: Vec<RunWarning>,
    /// Everything else its stages found (`extras_json`), typed; never fails to read.
    pub facts: RunFacts,
    pub error: Option<String>,
    pub metrics: BTreeMap<String, Option<f64>>,
    /// `not_judged` for runs stored before verdicts, and for runs not finished.
    pub verdict: Verdict,
}

/// Which scrape of the server's `/metrics` a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    Before,
    After,
}

impl ServerPhase {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerPhase::Before => "before",
            ServerPhase::After => "after",
        }
    }
}

/// One gate verdict for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct GateRecord {
    /// The metric gated (`ttft_p99`).
    pub gate: String,
    /// The condition as written (`<= 2s`).
    pub condition: String,
    pub run_id: String,
    pub value: Option<f64>,
    pub baseline: Option<f64>,
    pub passed: bool,
    pub message: String,
}

/// Keys whose values are never stored, at any depth of a run's settings.
/// `value` with secret-looking values replaced (the one rule: `secrets::redact_settings`).
pub(crate) fn redact_secrets(value: &Value) -> Value {
    crate::secrets::redact_settings(value)
}

/// A verdict as stored (`NULL` for none).
pub(crate) fn verdict_text(verdict: Option<&Verdict>) -> Result<Option<String>, StoreError> {
    verdict
        .map(serde_json::to_string)
        .transpose()
        .map_err(|source| StoreError::Json {
            what: "run verdict",
            source,
        })
}

/// The stored verdict at `idx` (`NULL`: not judged).
pub(crate) fn verdict_column(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Verdict> {
    let text: Option<String> = row.get(idx)?;
    match text {
        None => Ok(Verdict::not_judged()),
        Some(t) => serde_json::from_str(&t).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
        }),
    }
}

fn status_of(text: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(text).ok_or_else(|| StoreError::Corrupt {
        what: format!("run status `{text}`"),
    })
}

impl Store {
    /// Registers the suite's runs. Idempotent: a run already stored keeps its status
    /// and results (its ordinal, axes and settings are refreshed).
    pub fn register_runs(&mut self, runs: &[RunRow]) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("registering runs")?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO runs (id, ordinal, axes_json, settings_json, status)
                     VALUES (?1, ?2, ?3, ?4, 'pending')
                     ON CONFLICT(id) DO UPDATE SET ordinal = excluded.ordinal,
                       axes_json = excluded.axes_json, settings_json = excluded.settings_json",
                )
                .doing("registering runs")?;
            for run in runs {
                stmt.execute(params![
                    run.id,
                    run.ordinal,
                    run.axes.to_string(),
                    redact_secrets(&run.settings).to_string()
                ])
                .doing("registering runs")?;
            }
        }
        tx.commit().doing("registering runs")
    }

    /// The stored status of a run.
    pub fn run_status(&self, id: &str) -> Result<RunStatus, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT status FROM runs WHERE id = ?1", [id], |r| r.get(0))
            .optional()
            .doing("reading a run's status")?;
        match text {
            Some(t) => status_of(&t),
            None => Err(StoreError::UnknownRun { id: id.into() }),
        }
    }

    /// A run's verdict (`not_judged` when none is stored).
    pub(crate) fn run_verdict(&self, id: &str) -> Result<Verdict, StoreError> {
        let sql = format!("SELECT {} FROM runs WHERE id = ?1", self.verdict_column()?);
        let verdict = self
            .conn
            .query_row(&sql, [id], |r| verdict_column(r, 0))
            .optional()
            .doing("reading a run's verdict")?;
        verdict.ok_or_else(|| StoreError::UnknownRun { id: id.into() })
    }

    /// One stored metric of a run (`None`: not stored, or unknown).
    pub fn run_metric(&self, id: &str, name: &str) -> Result<Option<f64>, StoreError> {
        let value: Option<Option<f64>> = self
            .conn
            .query_row(
                "SELECT value FROM run_metrics WHERE run_id = ?1 AND name = ?2",
                [id, name],
                |r| r.get(0),
            )
            .optional()
            .doing("reading a run's metric")?;
        Ok(value.flatten())
    }

    /// Marks a run `running`, first deleting every row an earlier attempt left
    /// (requests, chunks, metrics, server scrapes, telemetry). A `done` run is refused.
    pub fn begin_run(&mut self, id: &str) -> Result<(), StoreError> {
        if self.run_status(id)? == RunStatus::Done {
            return Err(StoreError::RunDone { id: id.into() });
        }
        let tx = self.conn.transaction().doing("beginning a run")?;
        for table in [
            "requests",
            "chunks",
            "run_metrics",
            "server_metrics",
            "telemetry",
            "request_bodies",
            "response_texts",
        ] {
            tx.execute(&format!("DELETE FROM {table} WHERE run_id = ?1"), [id])
                .doing("wiping an earlier attempt of a run")?;
        }
        tx.execute(
            "UPDATE runs SET status = 'running', started_unix_ms = ?2, finished_unix_ms = NULL,
             warnings_json = '[]', extras_json = '{}', error = NULL, verdict_json = NULL
             WHERE id = ?1",
            params![id, now_unix_ms()],
        )
        .doing("beginning a run")?;
        tx.commit().doing("beginning a run")
    }

    /// The facts stored with a run (none before it finished).
    pub(crate) fn run_facts(&self, id: &str) -> Result<RunFacts, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT extras_json FROM runs WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .doing("reading a run's facts")?;
        let Some(text) = text else {
            return Err(StoreError::UnknownRun { id: id.to_string() });
        };
        RunFacts::from_json_text(&text).map_err(|source| StoreError::Json {
            what: "run facts",
            source,
        })
    }

    /// Records how a run ended and its aggregates, in one transaction.
    pub fn finish_run(&mut self, id: &str, finish: &RunFinish<'_>) -> Result<(), StoreError> {
        self.run_status(id)?;
        let warnings =
            serde_json::to_string(finish.warnings).map_err(|source| StoreError::Json {
                what: "run warnings",
                source,
            })?;
        let tx = self.conn.transaction().doing("finishing a run")?;
        tx.execute("DELETE FROM run_metrics WHERE run_id = ?1", [id])
            .doing("finishing a run")?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO run_metrics (run_id, name, value) VALUES (?1, ?2, ?3)")
                .doing("writing run metrics")?;
            for (name, value) in finish.metrics {
                let value = value.filter(|v| v.is_finite());
                stmt.execute(params![id, name, value])
                    .doing("writing run metrics")?;
            }
        }
        tx.execute(
            "UPDATE runs SET status = ?2, finished_unix_ms = ?3, warnings_json = ?4,
             extras_json = ?5, error = ?6, verdict_json = ?7 WHERE id = ?1",
            params![
                id,
                finish.status.as_str(),
                now_unix_ms(),
                warnings,
                finish.facts.to_value().to_string(),
                finish.error,
                verdict_text(finish.verdict)?,
            ],
        )
        .doing("finishing a run")?;
        tx.commit().doing("finishing a run")
    }

    /// Every run, by ordinal, with its aggregates (an SLA search's probe runs are
    /// reported through their search, not here).
    pub fn runs(&self) -> Result<Vec<StoredRun>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT id, ordinal, axes_json, settings_json, status, started_unix_ms,
                     finished_unix_ms, warnings_json, extras_json, error, {} FROM runs
                     WHERE id NOT IN (SELECT run_id FROM search_probes) ORDER BY ordinal, id",
                self.verdict_column()?
            ))
            .doing("reading runs")?;
        let mut runs = stmt
            .query_map([], |r| {
                let status: String = r.get(4)?;
                Ok(StoredRun {
                    id: r.get(0)?,
                    ordinal: r.get(1)?,
                    axes: json_column(r, 2)?,
                    settings: json_column(r, 3)?,
                    status: RunStatus::parse(&status).ok_or_else(|| {
                        rusqlite::Error::FromSqlConversionFailure(
                            4,
                            rusqlite::types::Type::Text,
                            format!("unknown run status `{status}`").into(),
                        )
                    })?,
                    started_unix_ms: r.get(5)?,
                    finished_unix_ms: r.get(6)?,
                    warnings: json_column(r, 7)?,
                    facts: RunFacts::from_value(json_column(r, 8)?),
                    error: r.get(9)?,
                    metrics: BTreeMap::new(),
                    verdict: verdict_column(r, 10)?,
                })
            })
            .doing("reading runs")?
            .collect::<Result<Vec<_>, _>>()
            .doing("reading runs")?;
        let mut metrics = self.all_run_metrics()?;
        for run in &mut runs {
            run.metrics = metrics.remove(&run.id).unwrap_or_default();
            crate::metrics::backfill::backfill(&mut run.metrics);
        }
        Ok(runs)
    }

    /// `verdict_json`, or `NULL` in an older database read unmigrated (read-only).
    pub(crate) fn verdict_column(&self) -> Result<&'static str, StoreError> {
        let have = self.table_columns("runs")?;
        Ok(if have.iter().any(|c| c == "verdict_json") {
            "verdict_json"
        } else {
            "NULL"
        })
    }

    fn all_run_metrics(
        &self,
    ) -> Result<BTreeMap<String, BTreeMap<String, Option<f64>>>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT run_id, name, value FROM run_metrics")
            .doing("reading run metrics")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<f64>>(2)?,
                ))
            })
            .doing("reading run metrics")?;
        let mut out: BTreeMap<String, BTreeMap<String, Option<f64>>> = BTreeMap::new();
        for row in rows {
            let (run, name, value) = row.doing("reading run metrics")?;
            out.entry(run).or_default().insert(name, value);
        }
        Ok(out)
    }

    /// Stores one scrape of the server's `/metrics` for a run (replacing an earlier one).
    pub(crate) fn write_server_metrics(
        &mut self,
        run_id: &str,
        phase: ServerPhase,
        values: &BTreeMap<String, f64>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("writing server metrics")?;
        tx.execute(
            "DELETE FROM server_metrics WHERE run_id = ?1 AND phase = ?2",
            params![run_id, phase.as_str()],
        )
        .doing("writing server metrics")?;
        {
            let mut stmt = tx
                .prepare("INSERT INTO server_metrics (run_id, phase, name, value) VALUES (?1, ?2, ?3, ?4)")
                .doing("writing server metrics")?;
            for (name, value) in values {
                stmt.execute(params![run_id, phase.as_str(), name, value])
                    .doing("writing server metrics")?;
            }
        }
        tx.commit().doing("writing server metrics")
    }

    /// One scrape of the server's `/metrics` for a run (empty when none was stored).
    pub fn server_metrics(
        &self,
        run_id: &str,
        phase: ServerPhase,
    ) -> Result<BTreeMap<String, f64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, value FROM server_metrics WHERE run_id = ?1 AND phase = ?2")
            .doing("reading server metrics")?;
        let rows = stmt
            .query_map(params![run_id, phase.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .doing("reading server metrics")?;
        rows.collect::<Result<_, _>>()
            .doing("reading server metrics")
    }

    /// Appends gate verdicts (`source`: the command that evaluated them).
    pub(crate) fn write_gate_results(
        &mut self,
        source: &str,
        gates: &[GateRecord],
    ) -> Result<(), StoreError> {
        let now = now_unix_ms();
        let tx = self.conn.transaction().doing("writing gate results")?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO gate_results (evaluated_unix_ms, source, gate, condition, run_id,
                     value, baseline, passed, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                )
                .doing("writing gate results")?;
            for g in gates {
                stmt.execute(params![
                    now,
                    source,
                    g.gate,
                    g.condition,
                    g.run_id,
                    g.value,
                    g.baseline,
                    g.passed,
                    g.message
                ])
                .doing("writing gate results")?;
            }
        }
        tx.commit().doing("writing gate results")
    }

    /// Every gate verdict stored, oldest first.
    pub fn gate_results(&self) -> Result<Vec<GateRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT gate, condition, run_id, value, baseline, passed, message
                 FROM gate_results ORDER BY id",
            )
            .doing("reading gate results")?;
        let rows = stmt
            .query_map([], |r| {
                Ok(GateRecord {
                    gate: r.get(0)?,
                    condition: r.get(1)?,
                    run_id: r.get(2)?,
                    value: r.get(3)?,
                    baseline: r.get(4)?,
                    passed: r.get(5)?,
                    message: r.get(6)?,
                })
            })
            .doing("reading gate results")?;
        rows.collect::<Result<_, _>>().doing("reading gate results")
    }
}
