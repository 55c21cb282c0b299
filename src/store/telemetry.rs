//! The `telemetry` table: the server's series scraped during a run (migration 9). One
//! row per series and scrape; `t_ms` counts from the run's start (the origin of its
//! requests' `*_us` instants), `le` is a histogram bucket's upper bound (NULL otherwise).
//! Knows rows, not Prometheus or the names' meaning.

use rusqlite::params;

use super::{SqlContext, Store, StoreError};

/// One stored value of one scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryRow {
    pub name: String,
    /// A histogram bucket's upper bound (`f64::INFINITY` for `+Inf`); `None` otherwise.
    pub le: Option<f64>,
    pub value: f64,
}

/// One series of a run: its name and `(seconds from the run's start, value)` in time order.
pub type TelemetrySeries = (String, Vec<(f64, f64)>);

impl Store {
    /// Appends one scrape of `url` taken `t_ms` after the run's start (one transaction).
    pub(crate) fn write_telemetry(
        &mut self,
        run_id: &str,
        url: &str,
        t_ms: i64,
        rows: &[TelemetryRow],
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("writing telemetry")?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO telemetry (run_id, url, t_ms, name, le, value)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .doing("writing telemetry")?;
            for r in rows {
                stmt.execute(params![run_id, url, t_ms, r.name, r.le, r.value])
                    .doing("writing telemetry")?;
            }
        }
        tx.commit().doing("writing telemetry")
    }

    /// Moves every scrape time of a run by `delta_ms` (the sampler counts from its own
    /// start; the run's clock starts a little later).
    pub(crate) fn shift_telemetry(
        &mut self,
        run_id: &str,
        delta_ms: i64,
    ) -> Result<(), StoreError> {
        if delta_ms == 0 {
            return Ok(());
        }
        self.conn
            .execute(
                "UPDATE telemetry SET t_ms = t_ms + ?2 WHERE run_id = ?1",
                params![run_id, delta_ms],
            )
            .doing("shifting telemetry times")?;
        Ok(())
    }

    /// The gauges and counters of a run (histogram buckets left out), by name, each as
    /// `(seconds from the run's start, value)` in time order; several URLs holding one name
    /// are summed per instant. Empty for runs without telemetry (and databases before 9).
    pub fn telemetry_series(&self, run_id: &str) -> Result<Vec<TelemetrySeries>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT name, t_ms, SUM(value) FROM telemetry
                 WHERE run_id = ?1 AND le IS NULL GROUP BY name, t_ms ORDER BY name, t_ms",
            )
            .doing("reading telemetry")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, f64>(2)?,
                ))
            })
            .doing("reading telemetry")?;
        let mut out: Vec<TelemetrySeries> = Vec::new();
        for row in rows {
            let (name, t_ms, value) = row.doing("reading telemetry")?;
            let point = (t_ms as f64 / 1000.0, value);
            match out.last_mut() {
                Some((last, points)) if *last == name => points.push(point),
                _ => out.push((name, vec![point])),
            }
        }
        Ok(out)
    }

    /// Every stored row of a run as `(url, t_ms, row)`, in scrape order.
    pub fn telemetry_rows(
        &self,
        run_id: &str,
    ) -> Result<Vec<(String, i64, TelemetryRow)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT url, t_ms, name, le, value FROM telemetry WHERE run_id = ?1
                 ORDER BY t_ms, url, rowid",
            )
            .doing("reading telemetry")?;
        let rows = stmt
            .query_map([run_id], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    TelemetryRow {
                        name: r.get(2)?,
                        le: r.get(3)?,
                        value: r.get(4)?,
                    },
                ))
            })
            .doing("reading telemetry")?;
        rows.collect::<Result<_, _>>().doing("reading telemetry")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SuiteInfo;

    #[test]
    fn rows_round_trip_and_series_are_gauges_in_time_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::create(dir.path(), &SuiteInfo::new("p", "")).unwrap();
        let row = |name: &str, le: Option<f64>, value: f64| TelemetryRow {
            name: name.into(),
            le,
            value,
        };
        store
            .write_telemetry(
                "r",
                "http://a/metrics",
                1000,
                &[
                    row("waiting", None, 3.0),
                    row("server_ttft_seconds_bucket", Some(f64::INFINITY), 9.0),
                ],
            )
            .unwrap();
        store
            .write_telemetry("r", "http://a/metrics", -5, &[row("waiting", None, 1.0)])
            .unwrap();
        store
            .write_telemetry("r", "http://b/metrics", 1000, &[row("waiting", None, 2.0)])
            .unwrap();
        store.shift_telemetry("r", 5).unwrap();
        let series = store.telemetry_series("r").unwrap();
        assert_eq!(
            series,
            vec![("waiting".to_string(), vec![(0.0, 1.0), (1.005, 5.0)])]
        );
        let rows = store.telemetry_rows("r").unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].1, 0);
        assert!(rows.iter().any(|(_, _, r)| r.le == Some(f64::INFINITY)));
        assert!(store.telemetry_series("other").unwrap().is_empty());
    }
}
