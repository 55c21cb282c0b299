//! SLA searches in the database: a search's result (`searches`), each step's verdict
//! with the statistics pooled over its trials (`search_steps`), and the link from each
//! probe run to its search, step, value and trial (`search_probes`). Probe runs are rows
//! of `runs` like any other, but `Store::runs` leaves them out: they belong to their
//! search, which reports them.

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::{SqlContext, Store, StoreError};

/// One probe run's place in its search.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLink {
    /// The probe's own run id.
    pub run_id: String,
    /// The search run's id.
    pub search_id: String,
    /// 0-based step of the search.
    pub step: u32,
    pub value: f64,
    /// 0-based trial at this value.
    pub trial: u32,
}

/// One step of a search: the value probed and its verdict over the pooled trials.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchStepRow {
    pub search_id: String,
    pub step: u32,
    pub value: f64,
    pub passed: bool,
    pub failed_metric: Option<String>,
    /// Metrics of the pooled trials (every name of the vocabulary).
    pub metrics: BTreeMap<String, Option<f64>>,
}

/// The result of one search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRow {
    /// The search run's id.
    pub run_id: String,
    /// `concurrency` or `rate`.
    pub variable: String,
    /// `found`, `min_fails` or `max_passes`; `optimum` for a search with an objective.
    pub outcome: String,
    /// The highest passing value; for a search with an objective, the best one.
    pub best_pass: Option<f64>,
    pub first_fail: Option<f64>,
    pub failed_metric: Option<String>,
    /// The search's SLO: metric → condition.
    pub slo: BTreeMap<String, String>,
    /// One sentence for people.
    pub message: String,
}

fn verdict_text(passed: bool) -> &'static str {
    if passed {
        "pass"
    } else {
        "fail"
    }
}

fn json_err(what: &'static str) -> impl Fn(serde_json::Error) -> StoreError {
    move |source| StoreError::Json { what, source }
}

impl Store {
    /// Forgets a search's steps and result (not its probe runs), before it is rerun.
    pub(crate) fn clear_search(&mut self, search_id: &str) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("clearing a search")?;
        tx.execute("DELETE FROM searches WHERE run_id = ?1", [search_id])
            .doing("clearing a search")?;
        tx.execute("DELETE FROM search_steps WHERE search_id = ?1", [search_id])
            .doing("clearing a search")?;
        tx.commit().doing("clearing a search")
    }

    /// Links a probe run (already registered in `runs`) to its search.
    pub(crate) fn link_probe(&mut self, link: &ProbeLink) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO search_probes (run_id, search_id, step, value, trial)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(run_id) DO UPDATE SET search_id = excluded.search_id,
                   step = excluded.step, value = excluded.value, trial = excluded.trial",
                params![
                    link.run_id,
                    link.search_id,
                    link.step,
                    link.value,
                    link.trial
                ],
            )
            .doing("linking a probe to its search")?;
        Ok(())
    }

    /// Stores a step's verdict (and marks its probes with it).
    pub(crate) fn write_search_step(&mut self, row: &SearchStepRow) -> Result<(), StoreError> {
        let metrics = serde_json::to_string(&row.metrics).map_err(json_err("step metrics"))?;
        let tx = self.conn.transaction().doing("writing a search step")?;
        tx.execute(
            "INSERT OR REPLACE INTO search_steps (search_id, step, value, verdict, failed_metric,
             metrics_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                row.search_id,
                row.step,
                row.value,
                verdict_text(row.passed),
                row.failed_metric,
                metrics
            ],
        )
        .doing("writing a search step")?;
        tx.execute(
            "UPDATE search_probes SET verdict = ?3 WHERE search_id = ?1 AND step = ?2",
            params![row.search_id, row.step, verdict_text(row.passed)],
        )
        .doing("writing a search step")?;
        tx.commit().doing("writing a search step")
    }

    /// Stores a search's result (replacing an earlier one).
    pub(crate) fn write_search(&mut self, row: &SearchRow) -> Result<(), StoreError> {
        let slo = serde_json::to_string(&row.slo).map_err(json_err("search slo"))?;
        self.conn
            .execute(
                "INSERT OR REPLACE INTO searches (run_id, variable, outcome, best_pass, first_fail,
                 failed_metric, slo_json, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    row.run_id,
                    row.variable,
                    row.outcome,
                    row.best_pass,
                    row.first_fail,
                    row.failed_metric,
                    slo,
                    row.message
                ],
            )
            .doing("writing a search result")?;
        Ok(())
    }

    /// Every stored search result.
    pub fn searches(&self) -> Result<Vec<SearchRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, variable, outcome, best_pass, first_fail, failed_metric, slo_json,
                 message FROM searches ORDER BY run_id",
            )
            .doing("reading searches")?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    SearchRow {
                        run_id: r.get(0)?,
                        variable: r.get(1)?,
                        outcome: r.get(2)?,
                        best_pass: r.get(3)?,
                        first_fail: r.get(4)?,
                        failed_metric: r.get(5)?,
                        slo: BTreeMap::new(),
                        message: r.get(7)?,
                    },
                    r.get::<_, String>(6)?,
                ))
            })
            .doing("reading searches")?
            .collect::<Result<Vec<_>, _>>()
            .doing("reading searches")?;
        rows.into_iter()
            .map(|(mut row, slo)| {
                row.slo = serde_json::from_str(&slo).map_err(|e| StoreError::Corrupt {
                    what: format!("searches.slo_json of run {}: {e}", row.run_id),
                })?;
                Ok(row)
            })
            .collect()
    }

    /// The steps of a search, in order.
    pub fn search_steps(&self, search_id: &str) -> Result<Vec<SearchStepRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT step, value, verdict, failed_metric, metrics_json FROM search_steps
                 WHERE search_id = ?1 ORDER BY step",
            )
            .doing("reading search steps")?;
        let raw = stmt
            .query_map([search_id], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, String>(4)?,
                ))
            })
            .doing("reading search steps")?
            .collect::<Result<Vec<_>, _>>()
            .doing("reading search steps")?;
        raw.into_iter()
            .map(|(step, value, verdict, failed_metric, metrics)| {
                let metrics: BTreeMap<String, Option<f64>> = serde_json::from_str(&metrics)
                    .map_err(|e| StoreError::Corrupt {
                        what: format!("search_steps.metrics_json of {search_id} step {step}: {e}"),
                    })?;
                Ok(SearchStepRow {
                    search_id: search_id.to_string(),
                    step,
                    value,
                    passed: verdict == "pass",
                    failed_metric,
                    metrics,
                })
            })
            .collect()
    }

    /// The probe runs of a search, by step and trial.
    pub fn probes(&self, search_id: &str) -> Result<Vec<ProbeLink>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, step, value, trial FROM search_probes WHERE search_id = ?1
                 ORDER BY step, trial",
            )
            .doing("reading search probes")?;
        let rows = stmt
            .query_map([search_id], |r| {
                Ok(ProbeLink {
                    run_id: r.get(0)?,
                    search_id: search_id.to_string(),
                    step: r.get(1)?,
                    value: r.get(2)?,
                    trial: r.get(3)?,
                })
            })
            .doing("reading search probes")?;
        rows.collect::<Result<_, _>>()
            .doing("reading search probes")
    }

    /// The verdict stored with a probe run, when its step is decided.
    pub fn probe_verdict(&self, run_id: &str) -> Result<Option<bool>, StoreError> {
        let v: Option<Option<String>> = self
            .conn
            .query_row(
                "SELECT verdict FROM search_probes WHERE run_id = ?1",
                [run_id],
                |r| r.get(0),
            )
            .optional()
            .doing("reading a probe's verdict")?;
        Ok(v.flatten().map(|t| t == "pass"))
    }
}
