//! An SLA search with an objective (`output_tps = "max"`): its state machine (`Best`,
//! asking `ladder::OptimumSearch` for the next value) runs in the limit
//! search's loop (`super::drive`: the same steps, trials, pools and stored steps), and
//! it stores the passing value with the best objective as `sla_best_concurrency` /
//! `sla_best_rate`, with the pooled metrics of that value as the search run's metrics
//! (`sla_max_*` stay null). A child of `search`.

use std::ops::ControlFlow;

use super::ladder::{OptimumNext, OptimumResult, OptimumSearch};
use super::{
    drive, finish_search, floor_clause, interrupted_search, metrics_of, variable_name,
    verdict_text, Machine, Step, SEARCH_DONE,
};
use crate::engine::Target;
use crate::metrics::condition::Condition;
use crate::metrics::sla::{Bounds, SearchOutcome};
use crate::metrics::sla::{Goal, Objective};
use crate::plan::SearchVariable;
use crate::planner::RunSpec;
use crate::record::facts::{SearchFacts, SearchObjective};
use crate::record::RunFacts;
use crate::report::format::display_for;
use crate::store::{RunStatus, SearchRow};
use crate::suite::driver::{run_label, Ended, Suite};
use crate::suite::SuiteError;

/// What an objective search needs besides its run.
pub(super) struct Optimum {
    pub var: SearchVariable,
    pub bounds: Bounds,
    pub objective: Objective,
    /// The limit conditions every accepted value must meet (the success floor first).
    pub conds: Vec<Condition>,
    pub floor: crate::metrics::sla::SuccessFloor,
}

/// Runs an objective search; how it ended in `Ended`.
pub(super) async fn search_optimum(
    suite: &Suite<'_>,
    run: &RunSpec,
    target: &Target,
    total: usize,
    o: Optimum,
) -> Result<Ended, SuiteError> {
    let mut conds = o.conds.clone();
    conds.push(o.objective.known_condition());
    let mut best = Best {
        search: OptimumSearch::new(o.bounds, o.objective.goal),
        metric: &o.objective.metric,
    };
    let Some((result, steps)) =
        drive(suite, (run, target, total), o.var, &conds, &mut best).await?
    else {
        return interrupted_search(suite, run);
    };
    let row = optimum_row(run, &o, &result, &steps);
    suite.say(&format!("{}: {}", run_label(run, total), row.message));
    store_optimum(suite, run, &o, (&result, &row), &steps)?;
    Ok(SEARCH_DONE)
}

/// The objective search: the passing value with the best pooled `metric`.
struct Best<'a> {
    search: OptimumSearch,
    metric: &'a str,
}

impl Machine for Best<'_> {
    type Result = OptimumResult;
    fn next(&mut self) -> ControlFlow<OptimumResult, f64> {
        match self.search.next() {
            OptimumNext::Done(result) => ControlFlow::Break(result),
            OptimumNext::Probe(value) => ControlFlow::Continue(value),
        }
    }
    fn record(&mut self, step: &Step) -> String {
        let score = step.summary.values.get(self.metric).copied().flatten();
        self.search.record(step.value, step.verdict.passed, score);
        format!(
            "{} = {}, {}",
            self.metric,
            shown(self.metric, score),
            verdict_text(&step.verdict)
        )
    }
}

/// Stores the result row, and the best value's pooled metrics with `sla_best_*` as
/// the search run's metrics.
fn store_optimum(
    suite: &Suite<'_>,
    run: &RunSpec,
    o: &Optimum,
    (result, row): (&OptimumResult, &SearchRow),
    steps: &[Step],
) -> Result<(), SuiteError> {
    let name = variable_name(o.var);
    suite.lock()?.write_search(row)?;
    let mut metrics = metrics_of(steps, result.best);
    metrics.insert(format!("sla_best_{name}"), result.best);
    metrics.insert(format!("sla_max_{name}"), None);
    let facts = RunFacts {
        search: Some(SearchFacts {
            objective: Some(SearchObjective {
                metric: o.objective.metric.clone(),
                goal: o.objective.goal.as_str().into(),
            }),
            best: Some(result.best),
            best_score: Some(result.best_score),
            ..super::search_facts(row, steps)
        }),
        ..RunFacts::default()
    };
    finish_search(suite, run, RunStatus::Done, &metrics, &facts)
}

/// A pooled metric as a person reads it, by the report's one rule (`report::format`), so
/// the sentence shows the text of the report's cell: `2310 tok/s`, `812.3 ms`, `unknown`.
fn shown(metric: &str, value: Option<f64>) -> String {
    value.map_or_else(
        || "unknown".to_string(),
        |v| display_for(metric, &[v]).with_unit(v),
    )
}

/// The stored result, with a sentence saying what was found.
fn optimum_row(run: &RunSpec, o: &Optimum, result: &OptimumResult, steps: &[Step]) -> SearchRow {
    let name = variable_name(o.var);
    let metric = &o.objective.metric;
    let failed = steps
        .iter()
        .find(|s| Some(s.value) == result.first_fail)
        .map(|s| &s.verdict);
    let failed_metric = failed.and_then(|v| v.failed_metric.clone());
    let detail = failed.and_then(|v| v.detail.clone()).unwrap_or_default();
    let probes = steps.len();
    let message = match (result.outcome, result.best, result.first_fail) {
        (SearchOutcome::Optimum, Some(best), fail) => {
            let which = match o.objective.goal {
                Goal::Max => "highest",
                Goal::Min => "lowest",
            };
            let fails = fail.map_or(String::new(), |f| format!("; {f} fails: {detail}"));
            let edge = if best >= o.bounds.max {
                format!("; that is `max`: raise it to look at higher {name}")
            } else {
                String::new()
            };
            format!(
                "{metric} is {which} at {name} {best} ({}){fails}{edge}; {probes} probe(s)",
                shown(metric, result.best_score)
            )
        }
        (_, _, Some(min)) => format!(
            "even the lowest {name} searched ({min}) fails the SLO ({detail}): no load meets it; search stopped after {probes} probe(s)"
        ),
        _ => format!("search ended after {probes} probe(s)"),
    } + &floor_clause(&o.floor);
    SearchRow {
        run_id: run.id.clone(),
        variable: name.to_string(),
        outcome: result.outcome.as_str().to_string(),
        best_pass: result.best,
        first_fail: result.first_fail,
        failed_metric,
        slo: run.load.search().map(|t| t.slo.clone()).unwrap_or_default(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn values_are_shown_as_the_reports_cells() {
        assert_eq!(shown("output_tps", Some(2310.4)), "2310 tok/s");
        assert_eq!(shown("ttft_p99", Some(812.34)), "812.3 ms");
        assert_eq!(shown("success_ratio", Some(0.5)), "50.00%");
        assert_eq!(shown("rps", None), "unknown");
        // The search's own copy kept three decimals (`0.012`, `64.000`) and
        // milliseconds past 10 s: the report's rule keeps four significant digits,
        // whole counts whole, and long times in seconds.
        assert_eq!(shown("output_tps", Some(0.012344)), "0.01234 tok/s");
        assert_eq!(shown("requests_ok", Some(64.0)), "64");
        assert_eq!(shown("ttft_p99", Some(12_345.0)), "12.35 s");
    }
}
