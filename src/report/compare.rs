//! Two suites side by side: runs matched by their axis values (never by position;
//! ignored axes left out of the match), metrics with absolute and relative deltas,
//! and a seeded bootstrap verdict on whether each delta is beyond noise and at least the
//! metric's minimum effect (`min_effect`). Repeated runs (`repeat = N`) are matched as
//! groups; where both sides have two or more repeats, the deltas are of group means and
//! the interval is Welch's t over the repeat values (the spread between runs, which one
//! run's bootstrap cannot see), again with the minimum effect. An exploring run's
//! figures depend on the levels its walk held: without repeats on both sides, its pair is
//! not judged for noise (`ONE_WALK`), never called a change. Runs on one
//! side only are listed, not dropped; a matched pair whose settings differ beyond its
//! axes says so with each setting and both values (see `changed`).

use serde_json::Value;

use super::bootstrap::{diff_interval, supports, BootstrapOptions, Interval, Sample};
use super::changed::{changed_settings, ChangedSetting};
pub(crate) use super::compare_match::{match_by_shape, match_groups, match_key, GroupMatch};
pub use super::compare_render::render;
use super::compare_trust::{exploring, ONE_WALK};
use super::min_effect::{pct_for, MinEffect};
use super::pivot::Labels;
use super::repeats::{group_members, group_value};
use super::{unknown_metric, ReportData, ReportError, DEFAULT_METRICS};
use crate::metrics::condition::relative_change;
use crate::metrics::names;
use crate::metrics::student::welch_interval;
use crate::store::{Store, StoredRun};

/// What `compare` looks at.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompareOptions {
    /// Axes left out of the matching (e.g. `endpoint` when comparing two servers).
    pub ignore: Vec<String>,
    /// Metrics compared (default: the new suite's `[report]` metrics, else the defaults).
    pub metrics: Vec<String>,
    pub bootstrap: BootstrapOptions,
    /// Settings allowed to differ between matched runs (`--allow-changed`).
    pub allow_changed: Vec<String>,
    /// `--min-effect`: a metric's smallest change called a change (else the default).
    pub min_effect: Vec<MinEffect>,
    /// `--accept`: verdict reasons accepted on both sides.
    pub accept: Vec<crate::trust::Code>,
    /// `--clock`: the clock both suites' answer times are put on (`None`: the new plan's
    /// `[report] clock`, else the kernel's).
    pub clock: Option<crate::record::Clock>,
}

/// One metric of one matched pair.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricDelta {
    pub metric: String,
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// `new − base`.
    pub delta: Option<f64>,
    /// `(new − base) / |base| × 100`.
    pub delta_pct: Option<f64>,
    /// Confidence interval of `new − base`, when the bootstrap covers the metric.
    pub interval: Option<Interval>,
    /// `Some(true)` when the interval excludes zero and the change is at least
    /// `min_effect_pct`; `None` when not judged.
    pub beyond_noise: Option<bool>,
    /// The smallest change in percent called a change (`min_effect`).
    pub min_effect_pct: f64,
    /// `(base, new)` repeat values the verdict came from, when both sides are groups of
    /// repeats: then `base` and `new` are group means and `interval` is Welch's.
    pub repeats: Option<(usize, usize)>,
    /// Why the change is not judged although it could be: a side is invalid for a
    /// reason that touches the metric (`new invalid: cache_leak`), or a side is one
    /// exploring run with no repeats to judge it by (`ONE_WALK`).
    pub untrusted: Option<String>,
}

impl MetricDelta {
    /// The interval excludes zero but the change is below the minimum effect.
    pub(crate) fn below_min_effect(&self) -> bool {
        self.interval.is_some_and(|iv| iv.excludes_zero()) && self.beyond_noise == Some(false)
    }
}

/// Two runs with the same axis values (ignored axes aside).
#[derive(Debug, Clone, PartialEq)]
pub struct PairDelta {
    /// `(axis, label)` of the matched axes, in the new run's axis order.
    pub key: Vec<(String, String)>,
    pub base: StoredRun,
    pub new: StoredRun,
    pub deltas: Vec<MetricDelta>,
    /// Settings the two runs differ in beyond their axes.
    pub changed: Vec<ChangedSetting>,
    /// How the runs were matched: by every axis value, or by their load's shape (the
    /// same concurrency or rate) when only their request counts differ.
    pub matched_by: MatchedBy,
}

/// How a pair of runs was matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchedBy {
    /// Every axis value is the same (ignored axes aside).
    Axes,
    /// Every axis value is the same but the load's request and warmup counts: the same
    /// tier run longer or shorter (`--number 64` against `--number 128`).
    LoadShape,
}

impl MatchedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchedBy::Axes => "axes",
            MatchedBy::LoadShape => "load_shape",
        }
    }
}

impl PairDelta {
    /// The changes that make this pair compare unlike runs (not endpoint settings, not
    /// allowed).
    pub fn unlike<'a>(&'a self, allow: &[String]) -> Vec<&'a ChangedSetting> {
        super::changed::judged(&self.changed, allow)
    }

    /// The matched axes' values, `a · b`: the pair's name in every rendering.
    pub(crate) fn key_label(&self) -> String {
        self.key
            .iter()
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub base_name: String,
    pub new_name: String,
    pub metrics: Vec<String>,
    pub pairs: Vec<PairDelta>,
    pub only_base: Vec<StoredRun>,
    pub only_new: Vec<StoredRun>,
    /// `--allow-changed`, as given.
    pub allow_changed: Vec<String>,
    /// Every difference between the two suites' environments, most important first
    /// (`environment::differences`).
    pub environment: Vec<String>,
    /// The clock both sides' answer times are on (`report::user_clock`).
    pub clock: crate::record::Clock,
}

/// Whether a larger value of `metric` is better (`Some(true)`), worse (`Some(false)`),
/// or neither (token counts): the registry's direction.
pub(crate) fn higher_is_better(metric: &str) -> Option<bool> {
    crate::metrics::registry::direction_of(metric)?.higher_is_better()
}

fn resolve_metrics(new: &ReportData, opts: &CompareOptions) -> Result<Vec<String>, ReportError> {
    // A preset (`--metrics evalscope`, or the plan's) stands for its metrics.
    let mut layout = super::Layout::from_args(&[], &[], &opts.metrics);
    if layout.metrics.is_empty() && layout.preset.is_none() {
        layout = new.plan_layout()?;
    }
    let mut metrics = layout.metrics;
    if let (true, Some(preset)) = (metrics.is_empty(), layout.preset) {
        metrics = preset.metrics().iter().map(|m| m.to_string()).collect();
    }
    if metrics.is_empty() {
        metrics = DEFAULT_METRICS.iter().map(|s| s.to_string()).collect();
        super::pivot::lead_with_search_results(&mut metrics, &new.runs);
    }
    // A mix class's metric (`ttft_p99@rag`) is compared like its metric.
    if let Some(bad) = metrics.iter().find(|m| !names::is_metric_or_class(m)) {
        return Err(unknown_metric(bad));
    }
    Ok(metrics)
}

/// The bootstrap interval of `metric` for one pair: over the runs' samples, or for a mix
/// class's metric over that class's rows on each side (`None` when either run lacks
/// the class).
fn pair_interval(
    stores: (&Store, &Store),
    runs: (&StoredRun, &StoredRun),
    samples: Option<&(Sample, Sample)>,
    metric: &str,
    opts: &CompareOptions,
) -> Result<Option<Interval>, ReportError> {
    let (name, class) = names::split_class(metric);
    let Some(class) = class else {
        return Ok(samples.and_then(|(bs, ns)| diff_interval(bs, ns, metric, &opts.bootstrap)));
    };
    if !supports(name) {
        return Ok(None);
    }
    let index = |run: &StoredRun| {
        super::classes::of_run(run)
            .iter()
            .position(|c| c.name == class)
            .and_then(|i| u16::try_from(i).ok())
    };
    let (Some(bi), Some(ni)) = (index(runs.0), index(runs.1)) else {
        return Ok(None);
    };
    let bs = Sample::of_class(stores.0, runs.0, bi)?;
    let ns = Sample::of_class(stores.1, runs.1, ni)?;
    Ok(diff_interval(&bs, &ns, name, &opts.bootstrap))
}

/// One metric's delta of `(base, new)` values, judged by `interval` and the minimum effect.
fn metric_delta(
    m: &str,
    (bv, nv): (Option<f64>, Option<f64>),
    interval: Option<Interval>,
    repeats: Option<(usize, usize)>,
    opts: &CompareOptions,
) -> MetricDelta {
    let delta = bv.zip(nv).map(|(b, n)| n - b);
    let delta_pct = bv.zip(nv).and_then(|(b, n)| relative_change(n, b));
    let min_effect_pct = pct_for(m, &opts.min_effect);
    let large =
        delta.is_some_and(|d| d != 0.0) && delta_pct.is_none_or(|p| p.abs() >= min_effect_pct);
    MetricDelta {
        metric: m.to_string(),
        base: bv,
        new: nv,
        delta,
        delta_pct,
        beyond_noise: interval.map(|iv| iv.excludes_zero() && large),
        interval,
        min_effect_pct,
        repeats,
        untrusted: None,
    }
}

/// Compares the suite in `new` against the one in `base`. Runs are matched by their
/// axis values; those left over on both sides are then matched by their load's shape
/// (`MatchedBy::LoadShape`) when only their request counts differ.
pub fn compare(
    base: &Store,
    new: &Store,
    opts: &CompareOptions,
) -> Result<Comparison, ReportError> {
    let mut b = ReportData::load_accepting(base, &opts.accept)?;
    let mut n = ReportData::load_accepting(new, &opts.accept)?;
    let clock = super::user_clock::chosen(opts.clock, &n.suite.info.report);
    if clock == crate::record::Clock::User {
        super::user_clock::apply(base, &mut b)?;
        super::user_clock::apply(new, &mut n)?;
    }
    let metrics = resolve_metrics(&n, opts)?;
    let GroupMatch {
        base_leads: b_leads,
        new_leads: n_leads,
        pairs,
        mut only_base,
        mut only_new,
        ignore,
    } = match_groups(&b.runs, &n.runs, &opts.ignore);
    let by_shape = match_by_shape((&b_leads, &n_leads), &mut only_base, &mut only_new, &ignore);
    let labels = Labels::new(&[b.runs.as_slice(), n.runs.as_slice()].concat());
    let matched = pairs
        .into_iter()
        .map(|p| (p, MatchedBy::Axes))
        .chain(by_shape.into_iter().map(|p| (p, MatchedBy::LoadShape)));
    let mut out = Vec::new();
    for ((i, j), matched_by) in matched {
        let ctx = PairContext {
            stores: (base, new),
            data: (&b, &n),
            metrics: &metrics,
            opts,
        };
        let mut pair = ctx.pair(&b_leads[i], &n_leads[j], &ignore)?;
        pair.matched_by = matched_by;
        pair.key = match &n_leads[j].axes {
            Value::Object(map) => map
                .iter()
                .filter(|(k, _)| !ignore.contains(k))
                .map(|(k, v)| (k.clone(), labels.value(k, Some(v))))
                .collect(),
            _ => Vec::new(),
        };
        out.push(pair);
    }
    Ok(Comparison {
        base_name: b.suite.info.plan_name.clone(),
        new_name: n.suite.info.plan_name.clone(),
        metrics,
        pairs: out,
        only_base: only_base.into_iter().map(|i| b_leads[i].clone()).collect(),
        only_new: only_new.into_iter().map(|j| n_leads[j].clone()).collect(),
        allow_changed: opts.allow_changed.clone(),
        environment: crate::environment::differences(
            b.suite.info.environment.as_ref(),
            n.suite.info.environment.as_ref(),
        ),
        clock,
    })
}

/// What every pair of a comparison is computed with.
struct PairContext<'a> {
    stores: (&'a Store, &'a Store),
    data: (&'a ReportData, &'a ReportData),
    metrics: &'a [String],
    opts: &'a CompareOptions,
}

impl PairContext<'_> {
    /// The deltas of one matched pair of group leads (its key is the caller's).
    fn pair(
        &self,
        br: &StoredRun,
        nr: &StoredRun,
        ignore: &[String],
    ) -> Result<PairDelta, ReportError> {
        let (base, new) = self.stores;
        let judged = self
            .metrics
            .iter()
            .any(|m| names::split_class(m).1.is_none() && supports(m));
        let (bg, ng) = (
            group_members(&self.data.0.runs, br),
            group_members(&self.data.1.runs, nr),
        );
        let repeated = bg.runs.len() > 1 && ng.runs.len() > 1;
        let one_walk = !repeated && (exploring(br) || exploring(nr));
        let samples = if judged && !repeated && !one_walk {
            let clock = self.data.1.clock;
            Some((
                Sample::of_run(base, br, clock)?,
                Sample::of_run(new, nr, clock)?,
            ))
        } else {
            None
        };
        let mut deltas = Vec::with_capacity(self.metrics.len());
        for m in self.metrics {
            let bv = group_value(&bg, br, m);
            let nv = group_value(&ng, nr, m);
            let (bvals, nvals) = (bg.values(m), ng.values(m));
            let interval = if repeated {
                welch_interval(&bvals, &nvals, self.opts.bootstrap.confidence)
                    .map(|(low, high)| Interval { low, high })
            } else if one_walk {
                None
            } else {
                pair_interval((base, new), (br, nr), samples.as_ref(), m, self.opts)?
            };
            let repeats = repeated.then_some((bvals.len(), nvals.len()));
            let mut d = metric_delta(m, (bv, nv), interval, repeats, self.opts);
            d.untrusted = super::compare_trust::why_not_judged(br, nr, m)
                .or_else(|| one_walk.then(|| ONE_WALK.to_string()));
            if d.untrusted.is_some() {
                d.beyond_noise = None;
            }
            deltas.push(d);
        }
        Ok(PairDelta {
            key: Vec::new(),
            changed: changed_settings(br, nr, ignore, self.data.1.clock),
            base: br.clone(),
            new: nr.clone(),
            deltas,
            matched_by: MatchedBy::Axes,
        })
    }
}
