//! `perfplan check`'s telemetry rows: whether each page the runs will scrape answers,
//! and which known families it holds (the perfplan names they map to).

use super::{advise, row, CheckRow, Verdict};
use crate::control::chain;
use crate::engine::Target;
use crate::planner::RunSpec;
use crate::telemetry::{self, families, frame};

/// One row per telemetry URL of the run's endpoint (one row when telemetry is off).
pub(super) async fn rows(run: &RunSpec, target: &Target) -> Vec<CheckRow> {
    let spec = &run.settings.endpoint.spec;
    let r = |v, d| row(run, "server", "telemetry", v, d);
    let plan = match telemetry::plan(
        target.control_spec(),
        spec.telemetry.as_ref(),
        spec.metrics.as_ref(),
    ) {
        Ok(Some(plan)) => plan,
        Ok(None) => return vec![r(Verdict::Pass, "off (telemetry.enabled = false)".into())],
        Err(e) => {
            let fail = r(Verdict::Fail, chain(&e));
            return vec![advise(fail, "fix `telemetry.urls` of the endpoint")];
        }
    };
    let mut out = Vec::new();
    for t in &plan.targets {
        let page = telemetry::fetch(&t.client, t.url.clone(), plan.scrape_timeout()).await;
        out.push(match page {
            Ok(text) => {
                let f = frame::frame(&text);
                let detail = if f.known.is_empty() {
                    format!(
                        "{} answers, no known family ({} raw series)",
                        t.url,
                        f.rows.len()
                    )
                } else {
                    // Server names are long (`vllm:time_to_first_token_seconds`): their
                    // prefix once, then the perfplan names they map to.
                    let prefix = f.known[0].split([':', '_']).next().unwrap_or_default();
                    let known: Vec<&families::Family> = f
                        .known
                        .iter()
                        .filter_map(|s| families::FAMILIES.iter().find(|x| x.source == *s))
                        .collect();
                    let of = |kind| {
                        let names: Vec<&str> = known
                            .iter()
                            .filter(|x| x.kind == kind)
                            .map(|x| x.name.trim_end_matches("_seconds"))
                            .collect();
                        names.join(", ")
                    };
                    format!(
                        "{} answers ({prefix}): gauges {}; histograms {}; counters {}",
                        t.url,
                        of(families::Kind::Gauge),
                        of(families::Kind::Histogram),
                        of(families::Kind::Counter)
                    )
                };
                r(Verdict::Pass, detail)
            }
            Err(e) => {
                let advice = if t.implicit {
                    "no server telemetry for its runs; name the page in `telemetry.urls` or \
                     `metrics.path`, or set `telemetry = { enabled = false }`"
                } else {
                    "each run will warn that its scrapes failed; check the URL"
                };
                advise(r(Verdict::Warn, format!("{}: {e}", t.url)), advice)
            }
        });
    }
    out
}
