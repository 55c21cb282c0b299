//! Sign-off gates: the plan's `[gates]` plus `--gate METRIC=CONDITION`, checked per
//! run, absolute or relative to the matching run of a baseline suite. An unknown
//! value, a run that did not finish or a missing baseline fails its gate: a sign-off
//! never passes on what was not measured. Nor on what was measured differently: a
//! relative gate fails when its baseline run differs in a setting beyond the axes (an
//! output length, a dataset, a seed) that `--allow-changed` does not name. Repeats are
//! matched as groups, as `compare` matches them: a relative gate holds a group's mean
//! against the baseline group's mean, once per group.

use std::collections::BTreeMap;

use super::changed::{changed_settings, describe, judged};
use super::compare::match_groups;
use super::format::{display_for, percent};
use super::grid::Grid;
use super::pivot::Labels;
use super::repeats::{group_leads, group_members, group_value, Group, REPEAT_AXIS};
use super::{markdown, table, Format, ReportError, TableStyle};
use crate::metrics::condition::{parse_condition, relative_change, Condition};
use crate::record::Clock;
use crate::store::{GateRecord, RunStatus, StoredRun, SuiteRow};

/// One gate checked on one run.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOutcome {
    pub condition: Condition,
    pub run_id: String,
    /// The run's axis values, for people.
    pub run_label: String,
    pub value: Option<f64>,
    pub baseline: Option<f64>,
    pub passed: bool,
    /// What was measured against what was required.
    pub message: String,
    /// Failed because its baseline run differs in settings beyond the axes.
    pub unlike_baseline: bool,
    /// The baseline run a relative gate compared with.
    pub baseline_run: Option<String>,
    /// Failed because the run (or its baseline run) is invalid (or suspect under
    /// `[trust] strict`): its value was not signed off.
    pub invalid_run: bool,
}

/// The baseline relative gates compare with: its runs, the axes left out of the
/// matching, and the settings allowed to differ (`--allow-changed`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Baseline<'a> {
    pub runs: &'a [StoredRun],
    pub ignore: &'a [String],
    pub allow_changed: &'a [String],
    /// The clock both suites' runs are on (`report::user_clock`).
    pub clock: Clock,
}

/// How the gates of a suite ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GateVerdict {
    Passed,
    /// A gate was on a run whose verdict is invalid (or suspect under strict): named
    /// apart, the numbers themselves cannot be signed off.
    InvalidRun,
    /// A gate failed on its value.
    Failed,
    /// A relative gate compared with a baseline run whose settings differ beyond the
    /// axes: the comparison itself is unlike (named apart from `Failed`).
    UnlikeBaseline,
}

/// The suite's verdict: gates on invalid runs first, then unlike baselines (their values
/// mean nothing), then failures.
pub(crate) fn verdict_of(outcomes: &[GateOutcome]) -> GateVerdict {
    if outcomes.iter().any(|o| o.invalid_run) {
        GateVerdict::InvalidRun
    } else if outcomes.iter().any(|o| o.unlike_baseline) {
        GateVerdict::UnlikeBaseline
    } else if all_passed(outcomes) {
        GateVerdict::Passed
    } else {
        GateVerdict::Failed
    }
}

/// Splits `METRIC=CONDITION` (as given to `--gate`).
pub(crate) fn parse_gate_arg(text: &str) -> Result<(String, String), ReportError> {
    let (metric, cond) = text
        .split_once('=')
        .filter(|(m, c)| !m.trim().is_empty() && !c.trim().is_empty())
        .ok_or_else(|| ReportError::GateSyntax { text: text.into() })?;
    Ok((metric.trim().to_string(), cond.trim().to_string()))
}

/// The plan's gates (from the suite) with command-line gates added; a command-line
/// gate replaces the plan's gate on the same metric.
pub(crate) fn collect_gates(
    suite: &SuiteRow,
    cli: &[String],
) -> Result<Vec<Condition>, ReportError> {
    let mut gates: BTreeMap<String, String> = if suite.info.gates.is_null() {
        BTreeMap::new()
    } else {
        serde_json::from_value(suite.info.gates.clone()).map_err(|source| {
            ReportError::Settings {
                what: "[gates]",
                source,
            }
        })?
    };
    for arg in cli {
        let (metric, cond) = parse_gate_arg(arg)?;
        gates.insert(metric, cond);
    }
    gates
        .iter()
        .map(|(m, c)| parse_condition(m, c).map_err(ReportError::from))
        .collect()
}

/// Checks every gate on every run. `baseline` supplies the values relative gates
/// compare with, matched as `compare` matches (`compare::match_groups`): a group of
/// repeats is one relative verdict, its mean against the baseline group's mean (a run
/// not repeated is a group of one); absolute gates are checked on every repeat.
pub(crate) fn evaluate(
    runs: &[StoredRun],
    gates: &[Condition],
    baseline: Option<Baseline<'_>>,
) -> Vec<GateOutcome> {
    let matched = baseline.map(|b| match_groups(b.runs, runs, b.ignore));
    let base_of: BTreeMap<&str, &StoredRun> = matched
        .as_ref()
        .map(|m| {
            m.pairs
                .iter()
                .map(|&(i, j)| (m.new_leads[j].id.as_str(), &m.base_leads[i]))
                .collect()
        })
        .unwrap_or_default();
    let leads = group_leads(runs);
    let mut out = Vec::new();
    let labels = Labels::new(runs);
    for run in runs {
        let lead = leads.iter().any(|l| l.id == run.id);
        let group = group_members(runs, run);
        // The baseline group of the run's group (its lead is its first stored run).
        let base_lead = group
            .runs
            .first()
            .and_then(|first| base_of.get(first.id.as_str()).copied());
        let unlike = match (baseline, base_lead, &matched) {
            (Some(b), Some(base), Some(m)) => unlike_reason(base, run, &m.ignore, b),
            _ => None,
        };
        for gate in gates {
            if !applies(gate, run) || (gate.is_relative() && !lead) {
                continue;
            }
            let base = baseline.zip(base_lead).map(|(b, lead)| {
                let bg = group_members(b.runs, lead);
                Measured::of_group(&bg, lead, &gate.metric)
            });
            let mut outcome = if gate.is_relative() {
                let own = Measured::of_group(&group, run, &gate.metric);
                let label = match group.runs.len() {
                    1 => format!("#{} {}", run.ordinal, labels.run(run)),
                    n => {
                        let axes = labels.run_without(run, &[REPEAT_AXIS]);
                        let axes = if axes.is_empty() { axes } else { axes + " " };
                        format!("#{} {axes}(mean of {n} repeats)", run.ordinal)
                    }
                };
                check(run, gate, (own, base), baseline.is_some(), &label)
            } else {
                let own = Measured::of_run(run, &gate.metric);
                let label = format!("#{} {}", run.ordinal, labels.run(run));
                check(run, gate, (own, base), baseline.is_some(), &label)
            };
            outcome.baseline_run = base_lead.map(|b| b.id.clone());
            if let (true, Some(why)) = (gate.is_relative(), &unlike) {
                outcome.passed = false;
                outcome.unlike_baseline = true;
                outcome.message = why.clone();
            }
            out.push(outcome);
        }
    }
    out
}

/// What a gate reads of one side: a run's value, or a group's mean over its done repeats.
#[derive(Debug, Clone)]
struct Measured {
    value: Option<f64>,
    /// Repeats the value is the mean of (1: one run's own value).
    repeats: usize,
    /// Why nothing can be read: the run (or every repeat) did not finish.
    not_done: Option<String>,
}

impl Measured {
    fn of_run(run: &StoredRun, metric: &str) -> Measured {
        Measured {
            value: run.metrics.get(metric).copied().flatten(),
            repeats: 1,
            not_done: (run.status != RunStatus::Done).then(|| format!("run is {}", run.status)),
        }
    }

    fn of_group(group: &Group<'_>, lead: &StoredRun, metric: &str) -> Measured {
        if group.runs.len() <= 1 {
            return Measured::of_run(lead, metric);
        }
        Measured {
            value: group_value(group, lead, metric),
            repeats: group.values(metric).len(),
            not_done: (group.done() == 0).then(|| "no repeat of the group finished".to_string()),
        }
    }
}

/// Why a run's baseline run is unlike it, when its settings differ beyond the axes
/// (`ignore`: the axes the two were matched without).
fn unlike_reason(
    base: &StoredRun,
    run: &StoredRun,
    ignore: &[String],
    b: Baseline<'_>,
) -> Option<String> {
    let changes = changed_settings(base, run, ignore, b.clock);
    let judged = judged(&changes, b.allow_changed);
    if judged.is_empty() {
        return None;
    }
    let shown: Vec<String> = judged.iter().map(|c| describe(c)).collect();
    let names: Vec<&str> = judged.iter().map(|c| c.setting.as_str()).collect();
    Some(format!(
        "baseline run {} differs beyond the axes ({}): not compared; pass --allow-changed {} \
         to compare anyway",
        base.id,
        shown.join("; "),
        names.join(",")
    ))
}

/// A gate on an SLA search's result applies only to runs that search that variable:
/// `sla_max_concurrency` to limit searches, `sla_best_concurrency` to searches with an
/// objective (`output_tps = "max"`); a class's gate to runs of a mix with that class;
/// every other gate applies to every run.
fn applies(gate: &Condition, run: &StoredRun) -> bool {
    // A mix class's gate (`ttft_p99@rag`) applies to the runs whose mix has that class.
    if let (_, Some(class)) = crate::metrics::names::split_class(&gate.metric) {
        return super::classes::of_run(run).iter().any(|c| c.name == class);
    }
    let (var, objective) = match (
        gate.metric.strip_prefix("sla_max_"),
        gate.metric.strip_prefix("sla_best_"),
    ) {
        (Some(var), _) => (var, false),
        (_, Some(var)) => (var, true),
        _ => return true,
    };
    let has_objective = run
        .settings
        .pointer("/load/slo")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|slo| {
            slo.values()
                .filter_map(serde_json::Value::as_str)
                .any(|t| crate::metrics::sla::Goal::parse(t).is_some())
        });
    run.settings
        .pointer("/load/search")
        .and_then(serde_json::Value::as_str)
        == Some(var)
        && has_objective == objective
}

/// One gate's verdict on `own` (and, for a relative gate, `base`): a group's row says
/// that its values are means, and of how many repeats.
fn check(
    run: &StoredRun,
    gate: &Condition,
    (own, base): (Measured, Option<Measured>),
    has_baseline: bool,
    label: &str,
) -> GateOutcome {
    let (value, baseline) = (own.value, base.as_ref().and_then(|b| b.value));
    let disp = display_for(
        &gate.metric,
        &[value, baseline].into_iter().flatten().collect::<Vec<_>>(),
    );
    let shown = |v: f64| disp.with_unit(v);
    // An absolute gate shows the baseline as context only (its group's mean, if repeated).
    let means = match (own.repeats, base.as_ref().map_or(1, |b| b.repeats)) {
        (1, 1) => String::new(),
        _ if !gate.is_relative() => String::new(),
        (n, m) => format!(" (means: {n} repeats against {m} of the baseline)"),
    };
    let (passed, message) = if let Some(why) = own.not_done {
        (false, why)
    } else {
        match (value, gate.is_relative()) {
            (None, _) => (false, format!("{} is unknown", gate.metric)),
            (Some(_), true) if !has_baseline => (false, "relative gate needs --baseline".into()),
            (Some(_), true) if baseline.is_none() => {
                (false, "no baseline value for this run".into())
            }
            (Some(v), _) => match gate.check(v, baseline) {
                Ok(ok) => {
                    let change = baseline
                        .and_then(|b| {
                            relative_change(v, b)
                                .map(|c| format!(" ({} vs {})", percent(c), shown(b)))
                        })
                        .unwrap_or_default();
                    (
                        ok,
                        format!(
                            "{} = {}{change}, needs {}{means}",
                            gate.metric,
                            shown(v),
                            gate.text
                        ),
                    )
                }
                Err(e) => (false, e.to_string()),
            },
        }
    };
    GateOutcome {
        condition: gate.clone(),
        run_id: run.id.clone(),
        run_label: label.to_string(),
        value,
        baseline,
        passed,
        message,
        unlike_baseline: false,
        baseline_run: None,
        invalid_run: false,
    }
}

/// Whether every gate passed (true when there are none).
pub fn all_passed(outcomes: &[GateOutcome]) -> bool {
    outcomes.iter().all(|o| o.passed)
}

/// The verdicts as stored rows.
pub(crate) fn to_records(outcomes: &[GateOutcome]) -> Vec<GateRecord> {
    outcomes
        .iter()
        .map(|o| GateRecord {
            gate: o.condition.metric.clone(),
            condition: o.condition.text.clone(),
            run_id: o.run_id.clone(),
            value: o.value,
            baseline: o.baseline,
            passed: o.passed,
            message: o.message.clone(),
        })
        .collect()
}

/// The verdicts per gate and run, with a summary line (Markdown for `Format::Md`).
pub fn render(outcomes: &[GateOutcome], format: Format, style: TableStyle) -> String {
    if outcomes.is_empty() {
        return String::new();
    }
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    let summary = if failed == 0 {
        format!("gates: PASS ({} checks)", outcomes.len())
    } else {
        format!("gates: FAIL ({failed} of {} checks failed)", outcomes.len())
    };
    let mark = |ok: bool| match (ok, format == Format::Md) {
        (true, true) => "✅ pass",
        (false, true) => "❌ FAIL",
        (true, false) => "pass",
        (false, false) => "FAIL",
    };
    let grid = Grid {
        header: ["gate", "run", "verdict", "detail"]
            .map(String::from)
            .to_vec(),
        rows: outcomes
            .iter()
            .map(|o| {
                vec![
                    format!("{} {}", o.condition.metric, o.condition.text),
                    o.run_label.clone(),
                    mark(o.passed).to_string(),
                    o.message.clone(),
                ]
            })
            .collect(),
        label_cols: 4,
        notes: Vec::new(),
    };
    match format {
        Format::Md => {
            let (pass, fail): (Vec<Vec<String>>, Vec<Vec<String>>) =
                grid.rows.iter().cloned().partition(|r| r[2] == mark(true));
            let part = |rows: Vec<Vec<String>>| {
                markdown::render_grid(&Grid {
                    rows,
                    ..grid.clone()
                })
            };
            let mut out = format!("### {summary}\n\n");
            if !fail.is_empty() {
                out.push_str(&part(fail));
            }
            if !pass.is_empty() {
                let n = pass.len();
                out.push_str(&format!(
                    "\n<details><summary>{n} passed checks</summary>\n\n{}\n</details>\n",
                    part(pass)
                ));
            }
            out
        }
        _ => format!("{}{summary}\n", table::render_grid(&grid, style)),
    }
}

/// A baseline suite as the command line gives it: the database, the axes left out of
/// the matching (`--ignore`) and the settings allowed to differ (`--allow-changed`).
#[derive(Debug, Clone, Copy)]
pub struct BaselineSuite<'a> {
    pub store: &'a crate::store::Store,
    pub ignore: &'a [String],
    pub allow_changed: &'a [String],
}

impl<'a> BaselineSuite<'a> {
    /// A baseline with nothing ignored and nothing allowed to differ.
    pub fn new(store: &'a crate::store::Store) -> BaselineSuite<'a> {
        BaselineSuite {
            store,
            ignore: &[],
            allow_changed: &[],
        }
    }
}

/// Collects the plan's gates and `cli` gates and checks them on every run of `store`
/// (relative ones against `baseline`). No gates: no verdicts. The runs are judged on the
/// clock the report shows (`clock`, else the plan's `[report] clock`, else the kernel's),
/// the baseline's on the same.
pub fn evaluate_suite(
    store: &crate::store::Store,
    (cli, accept): (&[String], &[crate::trust::Code]),
    baseline: Option<BaselineSuite<'_>>,
    clock: Option<Clock>,
) -> Result<Vec<GateOutcome>, ReportError> {
    let suite = store.suite()?;
    let gates = collect_gates(&suite, cli)?;
    if gates.is_empty() {
        return Ok(Vec::new());
    }
    let clock = super::user_clock::chosen(clock, &suite.info.report);
    let mut runs = store.runs()?;
    let mut base_runs = baseline.map(|b| b.store.runs()).transpose()?;
    if clock == Clock::User {
        super::user_clock::move_runs(store, &mut runs, &suite.info.slo)?;
        if let (Some(b), Some(base)) = (baseline, base_runs.as_mut()) {
            super::user_clock::move_runs(b.store, base, &b.store.suite()?.info.slo)?;
        }
    }
    let base = baseline
        .zip(base_runs.as_deref())
        .map(|(b, runs)| Baseline {
            runs,
            ignore: b.ignore,
            allow_changed: b.allow_changed,
            clock,
        });
    let mut outcomes = evaluate(&runs, &gates, base);
    let policy = suite.info.trust.policy().accepting(accept);
    trusted::apply(&mut outcomes, &runs, base_runs.as_deref(), &policy);
    Ok(outcomes)
}

/// `evaluate_suite`, then the verdicts stored under `source` (`run`, `report`, `compare`).
pub fn check_suite(
    store: &mut crate::store::Store,
    source: &str,
    cli: (&[String], &[crate::trust::Code]),
    baseline: Option<BaselineSuite<'_>>,
) -> Result<Vec<GateOutcome>, ReportError> {
    let outcomes = evaluate_suite(store, cli, baseline, None)?;
    if !outcomes.is_empty() {
        store.write_gate_results(source, &to_records(&outcomes))?;
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests;
mod trusted;
