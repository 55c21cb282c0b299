//! A suite's history: many databases of one plan, ordered by a label of their
//! environment record (`release`) or by when they were created, their runs matched by
//! axis values exactly as `compare` matches two suites, and each metric of each matched
//! run followed over the releases. Each point carries its interval (Student's t over its
//! repeats, else the seeded bootstrap of its requests); each step from one release to
//! the next is judged by `compare` itself, so a step involving a run whose verdict
//! touches the metric is `not judged`, as there. Renders live in `history_render` and
//! `history_html`; gates against the history in `history_gate`.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::PathBuf;

use super::bootstrap::{interval, BootstrapOptions, Interval, Sample};
use super::compare::{self, higher_is_better, match_key, CompareOptions, MetricDelta};
use super::pivot::{varying_axes, Labels};
use super::repeats::{group_leads, group_members, group_value, REPEAT_AXIS};
use super::{ReportData, ReportError};
use crate::metrics::names;
use crate::metrics::student::mean_interval;
use crate::store::{Store, StoredRun};

/// Metrics followed when `--metrics` is not given.
pub(crate) const DEFAULT_METRICS: [&str; 3] = ["ttft_p99", "tpot_mean", "output_tps"];

/// How the suites are put in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrderBy {
    /// A label of the environment record (`[plan] labels`), compared as a version:
    /// digit runs by number, the rest as text (`1.9` before `1.10`).
    Label(String),
    /// The suite's creation time.
    Time,
}

/// What `history` looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryOptions {
    pub by: OrderBy,
    /// Only suites of this plan (default: the plan most of the suites ran).
    pub plan: Option<String>,
    pub compare: CompareOptions,
}

/// One suite of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// The database or folder as given.
    pub source: String,
    /// Its place's name: the label's value, or the creation time.
    pub label: String,
    pub created_unix_ms: i64,
    /// The plan repository's revision, when stored.
    pub commit: Option<String>,
}

/// One metric of one matched run in one release.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub value: Option<f64>,
    pub interval: Option<Interval>,
    /// Done repeats the value is the mean of (1 for a run not repeated).
    pub repeats: usize,
    /// The run's verdict (`valid`, `suspect`, `invalid`).
    pub verdict: String,
}

/// How a step from one release to the next is judged, by `compare`'s rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Judgement {
    Worse,
    Better,
    /// Beyond noise for a metric with no better direction.
    Changed,
    NoChange,
    /// A side is invalid for a reason touching the metric, or no interval covers it.
    NotJudged(String),
}

impl Judgement {
    /// `worse`, `better`, `changed`, `no change`, `not judged`.
    pub fn word(&self) -> &'static str {
        match self {
            Judgement::Worse => "worse",
            Judgement::Better => "better",
            Judgement::Changed => "changed",
            Judgement::NoChange => "no change",
            Judgement::NotJudged(_) => "not judged",
        }
    }

    fn of(d: &MetricDelta) -> Judgement {
        if let Some(why) = &d.untrusted {
            return Judgement::NotJudged(why.clone());
        }
        match d.beyond_noise {
            Some(true) => match (higher_is_better(&d.metric), d.delta.unwrap_or(0.0) > 0.0) {
                (Some(h), up) if h == up => Judgement::Better,
                (Some(_), _) => Judgement::Worse,
                (None, _) => Judgement::Changed,
            },
            Some(false) => Judgement::NoChange,
            None => Judgement::NotJudged("no interval covers the metric".into()),
        }
    }
}

/// The step into a release from the one before it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub delta_pct: Option<f64>,
    pub judgement: Judgement,
}

/// One metric of one matched run over the releases.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The run's axis values, `a · b`.
    pub run: String,
    pub metric: String,
    /// One per release (`None` where the release has no such run).
    pub points: Vec<Option<Point>>,
    /// One per release: the step into it (`None` for the first, or where either side
    /// lacks the run).
    pub steps: Vec<Option<Step>>,
}

/// The whole history.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub plan: String,
    pub by: OrderBy,
    pub releases: Vec<Release>,
    /// `(source, why)` of every suite left out.
    pub skipped: Vec<(String, String)>,
    pub metrics: Vec<String>,
    pub lines: Vec<Line>,
    /// The clock every release's answer times are on (`user_clock`).
    pub clock: crate::record::Clock,
}

/// Text compared as a version: runs of digits by number, the rest as text.
pub(crate) fn version_cmp(a: &str, b: &str) -> Ordering {
    fn parts(s: &str) -> Vec<(bool, String)> {
        let mut out: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match out.last_mut() {
                Some((d, text)) if *d == digit => text.push(c),
                _ => out.push((digit, c.to_string())),
            }
        }
        out
    }
    let (pa, pb) = (parts(a), parts(b));
    for (x, y) in pa.iter().zip(&pb) {
        let o = match (x.0, y.0) {
            (true, true) => {
                let (tx, ty) = (x.1.trim_start_matches('0'), y.1.trim_start_matches('0'));
                tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
            }
            _ => x.1.cmp(&y.1),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    pa.len().cmp(&pb.len())
}

/// A suite read for the history.
struct Loaded {
    release: Release,
    store: Store,
    data: ReportData,
}

/// The suites kept in order, the ones left out with why, and the plan followed.
type Sorted = (Vec<Loaded>, Vec<(String, String)>, String);

/// The suites of `sources` of one plan, in order; the others with why they were left out.
fn load_all(sources: &[PathBuf], opts: &HistoryOptions) -> Result<Sorted, ReportError> {
    let mut loaded = Vec::new();
    for source in sources {
        let store = Store::open(source)?;
        let data = ReportData::load_accepting(&store, &opts.compare.accept)?;
        let info = &data.suite.info;
        let release = Release {
            source: source.display().to_string(),
            label: super::html::utc(data.suite.created_unix_ms),
            created_unix_ms: data.suite.created_unix_ms,
            commit: info.git.as_ref().map(|g| g.revision.clone()),
        };
        loaded.push(Loaded {
            release,
            store,
            data,
        });
    }
    let plan = opts
        .plan
        .clone()
        .unwrap_or_else(|| most_common_plan(&loaded));
    let mut skipped = Vec::new();
    let mut kept = Vec::new();
    for mut l in loaded {
        let info = &l.data.suite.info;
        if info.plan_name != plan {
            let why = format!("plan `{}`, not `{plan}`", info.plan_name);
            skipped.push((l.release.source.clone(), why));
            continue;
        }
        if let OrderBy::Label(key) = &opts.by {
            let value = info.environment.as_ref().and_then(|e| e.labels.get(key));
            match value {
                Some(v) => l.release.label = v.clone(),
                None => {
                    let why = format!("no label `{key}` in its environment record");
                    skipped.push((l.release.source.clone(), why));
                    continue;
                }
            }
        }
        kept.push(l);
    }
    match &opts.by {
        OrderBy::Label(_) => kept.sort_by(|a, b| {
            version_cmp(&a.release.label, &b.release.label)
                .then(a.release.created_unix_ms.cmp(&b.release.created_unix_ms))
        }),
        OrderBy::Time => kept.sort_by_key(|l| l.release.created_unix_ms),
    }
    // One clock for every release: `--clock`, else the newest one's `[report] clock`.
    let newest = kept.last().map(|l| &l.data.suite.info.report);
    let clock = super::user_clock::chosen(
        opts.compare.clock,
        newest.unwrap_or(&serde_json::Value::Null),
    );
    if clock == crate::record::Clock::User {
        for l in &mut kept {
            super::user_clock::apply(&l.store, &mut l.data)?;
        }
    }
    Ok((kept, skipped, plan))
}

/// The plan most of the suites ran (the first given among equals).
fn most_common_plan(loaded: &[Loaded]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for l in loaded {
        let name = &l.data.suite.info.plan_name;
        match counts.iter_mut().find(|(n, _)| n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name.clone(), 1)),
        }
    }
    let best = counts.iter().map(|(_, c)| *c).max().unwrap_or(0);
    counts
        .into_iter()
        .find(|(_, c)| *c == best)
        .map(|(n, _)| n)
        .unwrap_or_default()
}

/// The point of `metric` for the group `lead` leads in `l`.
fn point(
    l: &Loaded,
    lead: &StoredRun,
    metric: &str,
    sample: &mut Option<Option<Sample>>,
    boot: &BootstrapOptions,
) -> Result<Point, ReportError> {
    let group = group_members(&l.data.runs, lead);
    let values = group.values(metric);
    let repeated = group.runs.len() > 1;
    let interval = if repeated {
        mean_interval(&values, boot.confidence).map(|m| Interval {
            low: m.low,
            high: m.high,
        })
    } else {
        if sample.is_none() {
            let s = match super::bootstrap::supports(metric) {
                true => Some(Sample::of_run(&l.store, lead, l.data.clock)?),
                false => None,
            };
            *sample = Some(s);
        }
        sample
            .as_ref()
            .and_then(Option::as_ref)
            .and_then(|s| interval(s, metric, boot))
    };
    Ok(Point {
        value: group_value(&group, lead, metric),
        interval,
        repeats: if repeated { values.len() } else { 1 },
        verdict: lead.verdict.status.to_string(),
    })
}

/// The history of the suites in `sources`.
pub fn history(sources: &[PathBuf], opts: &HistoryOptions) -> Result<History, ReportError> {
    let (suites, skipped, plan) = load_all(sources, opts)?;
    let mut ignore = opts.compare.ignore.clone();
    ignore.push(REPEAT_AXIS.to_string());
    let metrics = if opts.compare.metrics.is_empty() {
        DEFAULT_METRICS.iter().map(|m| m.to_string()).collect()
    } else {
        opts.compare.metrics.clone()
    };
    // Metrics by name only (a preset such as `evalscope` is no line).
    if let Some(bad) = metrics.iter().find(|m| !names::is_metric_or_class(m)) {
        return Err(super::unknown_metric(bad));
    }
    // Each step judged on the clock every release was put on (`load_all`).
    let clock = suites.first().map(|l| l.data.clock);
    let copts = CompareOptions {
        metrics: metrics.clone(),
        clock,
        ..opts.compare.clone()
    };
    let leads: Vec<Vec<StoredRun>> = suites.iter().map(|l| group_leads(&l.data.runs)).collect();
    // Lines by match key, in the order runs first appear.
    let all: Vec<StoredRun> = leads.iter().flatten().cloned().collect();
    let labels = Labels::new(&all);
    let shown: Vec<String> = varying_axes(&all)
        .into_iter()
        .filter(|a| !ignore.contains(a))
        .collect();
    let mut keys: Vec<String> = Vec::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for run in &all {
        let key = match_key(run, &ignore);
        if let std::collections::btree_map::Entry::Vacant(slot) = names.entry(key.clone()) {
            keys.push(key);
            slot.insert(run_label(&labels, run, &shown, &ignore));
        }
    }
    let mut lines: BTreeMap<(String, String), Line> = BTreeMap::new();
    let n = suites.len();
    for (i, (l, runs)) in suites.iter().zip(&leads).enumerate() {
        for lead in runs {
            let key = match_key(lead, &ignore);
            let mut sample = None;
            for m in &metrics {
                let p = point(l, lead, m, &mut sample, &copts.bootstrap)?;
                let line = lines
                    .entry((key.clone(), m.clone()))
                    .or_insert_with(|| Line {
                        run: names.get(&key).cloned().unwrap_or_default(),
                        metric: m.clone(),
                        points: vec![None; n],
                        steps: vec![None; n],
                    });
                line.points[i].get_or_insert(p);
            }
        }
    }
    judge_steps(&suites, &mut lines, &copts, &ignore)?;
    let mut ordered = Vec::new();
    for key in &keys {
        for m in &metrics {
            if let Some(line) = lines.remove(&(key.clone(), m.clone())) {
                ordered.push(line);
            }
        }
    }
    Ok(History {
        plan,
        by: opts.by.clone(),
        releases: suites.into_iter().map(|l| l.release).collect(),
        skipped,
        metrics,
        lines: ordered,
        clock: clock.unwrap_or_default(),
    })
}

/// Each step between neighbouring releases judged by `compare` itself.
fn judge_steps(
    suites: &[Loaded],
    lines: &mut BTreeMap<(String, String), Line>,
    copts: &CompareOptions,
    ignore: &[String],
) -> Result<(), ReportError> {
    for i in 1..suites.len() {
        let c = compare::compare(&suites[i - 1].store, &suites[i].store, copts)?;
        for pair in &c.pairs {
            let key = match_key(&pair.new, ignore);
            // A step needs a value on both sides.
            for d in pair.deltas.iter().filter(|d| d.delta.is_some()) {
                if let Some(line) = lines.get_mut(&(key.clone(), d.metric.clone())) {
                    line.steps[i] = Some(Step {
                        delta_pct: d.delta_pct,
                        judgement: Judgement::of(d),
                    });
                }
            }
        }
    }
    Ok(())
}

/// A run's name in the history: its values of the axes that vary (all its axes when
/// none does), ignored ones aside.
fn run_label(labels: &Labels, run: &StoredRun, shown: &[String], ignore: &[String]) -> String {
    let serde_json::Value::Object(map) = &run.axes else {
        return run.id.clone();
    };
    let parts: Vec<String> = map
        .iter()
        .filter(|(k, _)| !ignore.contains(k) && (shown.is_empty() || shown.contains(k)))
        .map(|(k, v)| labels.value(k, Some(v)))
        .collect();
    parts.join(" · ")
}

impl History {
    /// The steps judged worse or better, as `(line index, release index)`.
    pub fn marked(&self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (li, line) in self.lines.iter().enumerate() {
            for (ri, step) in line.steps.iter().enumerate() {
                if let Some(s) = step {
                    if matches!(s.judgement, Judgement::Worse | Judgement::Better) {
                        out.push((li, ri));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_with_an_invalid_side_is_not_judged() {
        let mut d = MetricDelta {
            metric: "ttft_p99".into(),
            base: Some(10.0),
            new: Some(30.0),
            delta: Some(20.0),
            delta_pct: Some(200.0),
            interval: Some(Interval {
                low: 15.0,
                high: 25.0,
            }),
            beyond_noise: Some(true),
            min_effect_pct: 20.0,
            repeats: None,
            untrusted: None,
        };
        assert_eq!(Judgement::of(&d), Judgement::Worse);
        d.metric = "output_tps".into();
        assert_eq!(Judgement::of(&d), Judgement::Better);
        d.untrusted = Some("new invalid: cache_leak".into());
        d.beyond_noise = None;
        assert_eq!(
            Judgement::of(&d),
            Judgement::NotJudged("new invalid: cache_leak".into())
        );
    }

    #[test]
    fn versions_order_by_number() {
        let mut v = vec!["1.10", "1.9", "1.9-rc1", "2", "1.09.1", "10", "9"];
        v.sort_by(|a, b| version_cmp(a, b));
        assert_eq!(v, ["1.9", "1.9-rc1", "1.09.1", "1.10", "2", "9", "10"]);
    }
}
