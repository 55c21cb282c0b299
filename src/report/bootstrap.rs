//! Is a difference between two runs beyond noise? A seeded percentile bootstrap of
//! the difference of a statistic, from the per-request values of both runs (TTFT,
//! TPOT, latency) or, for throughput, from resampled requests.
//!
//! Throughput from a resample uses Little's law: the run's mean in-flight count
//! (Σ latency / duration) times Σ tokens / Σ latency of the resample, which equals
//! the measured throughput on the original requests.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::metrics::slo::request_meets;
use crate::metrics::{stats, timing, MetricDefinitions, Slo};
use crate::record::{Clock, Outcome, Phase};
use crate::store::{RequestRow, Store, StoreError, StoredRun};

/// How the bootstrap runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapOptions {
    pub seed: u64,
    pub resamples: u32,
    /// Two-sided confidence level, e.g. 0.95.
    pub confidence: f64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            seed: 0x5eed,
            resamples: 1000,
            confidence: 0.95,
        }
    }
}

/// A confidence interval of `new − base`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Zero lies outside the interval.
    pub(crate) fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// The per-request values of one run's successful measured requests (times in ms).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub ttft: Vec<f64>,
    pub tpot: Vec<f64>,
    pub latency: Vec<f64>,
    /// Per request: (latency s, output tokens, input + output tokens).
    pub requests: Vec<(f64, f64, f64)>,
    /// Per request of `requests`: whether it met every SLO of its suite (all when absent).
    pub good: Vec<bool>,
    /// Failed measured requests (none of them good).
    pub failed: usize,
    /// The run's capacity metrics as factors of the throughput they scale
    /// (`bootstrap_capacity::SCALED`), from its stored metrics.
    pub factors: Vec<(&'static str, f64)>,
    /// First measured request sent → last measured response ended, in seconds.
    pub duration_s: f64,
    /// Mean input length per request: (target, client-counted, server-reported).
    pub input_means: (Option<f64>, Option<f64>, Option<f64>),
}

/// A running mean of optional counts.
#[derive(Debug, Default, Clone, Copy)]
struct MeanOf {
    sum: f64,
    n: u64,
}

impl MeanOf {
    fn add(&mut self, v: Option<u32>) {
        if let Some(v) = v {
            self.sum += f64::from(v);
            self.n += 1;
        }
    }

    fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }
}

/// The mean input lengths of successful measured rows: (target, client, server).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InputMeans([MeanOf; 3]);

impl InputMeans {
    pub fn add(&mut self, row: &RequestRow) {
        self.0[0].add(row.target_input_tokens);
        self.0[1].add(row.record.client_input_tokens);
        self.0[2].add(row.record.usage.prompt_tokens);
    }

    pub fn get(&self) -> (Option<f64>, Option<f64>, Option<f64>) {
        (self.0[0].get(), self.0[1].get(), self.0[2].get())
    }
}

/// A run's own metric definitions (`metric_definitions` in its facts).
pub(crate) fn definitions_of(run: &StoredRun) -> MetricDefinitions {
    MetricDefinitions::of_facts(&run.facts)
}

/// A `Sample` built one stored row at a time (rows are read as a stream, never all at once).
#[derive(Debug, Default)]
pub(crate) struct SampleBuilder {
    sample: Sample,
    defs: MetricDefinitions,
    slos: Vec<Slo>,
    span: Option<(Duration, Duration)>,
    means: InputMeans,
    /// The clock of the answer times (`User`: each row moved to when it was read).
    clock: Clock,
}

impl SampleBuilder {
    pub fn new(defs: MetricDefinitions) -> SampleBuilder {
        SampleBuilder {
            defs,
            ..SampleBuilder::default()
        }
    }

    /// Adds one stored row (unmeasured and failed ones count only toward the duration
    /// when measured).
    pub fn add(&mut self, row: &RequestRow) {
        let moved;
        let r = match self.clock {
            Clock::Kernel => &row.record,
            Clock::User => {
                let mut record = row.record.clone();
                record.move_to_user_clock();
                moved = record;
                &moved
            }
        };
        if r.phase != Phase::Measured {
            return;
        }
        self.span = Some(match self.span {
            None => (r.sent, r.end),
            Some((a, b)) => (a.min(r.sent), b.max(r.end)),
        });
        if r.outcome != Outcome::Ok {
            self.sample.failed += 1;
            return;
        }
        self.sample
            .good
            .push(request_meets(r, self.defs, &self.slos));
        self.means.add(row);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let s = &mut self.sample;
        let t = timing(r, self.defs);
        let out = r.output_tokens().map(|(n, _)| n);
        s.ttft.extend(t.ttft.map(ms));
        s.tpot.extend(out.and_then(|n| t.tpot(n)).map(ms));
        s.latency.push(ms(t.latency));
        let out = f64::from(out.unwrap_or(0));
        let input = f64::from(r.input_tokens().map_or(0, |(n, _)| n));
        s.requests.push((t.latency.as_secs_f64(), out, out + input));
    }

    pub fn finish(mut self) -> Sample {
        self.sample.duration_s = self
            .span
            .map_or(0.0, |(a, b)| b.saturating_sub(a).as_secs_f64());
        self.sample.input_means = self.means.get();
        self.sample
    }
}

impl Sample {
    /// The sample of a run's stored rows, its timings under the run's own metric
    /// definitions (`metric_definitions` in its facts), as its metrics were computed.
    /// The rows are read one at a time.
    /// `clock` is the clock of its answer times (`report::user_clock`).
    pub(crate) fn of_run(
        store: &Store,
        run: &StoredRun,
        clock: Clock,
    ) -> Result<Sample, StoreError> {
        let mut builder = SampleBuilder::new(definitions_of(run));
        builder.clock = clock;
        builder.slos = super::bootstrap_capacity::slos_of(&store.suite()?.info.slo);
        store.each_request_row(&run.id, |row| builder.add(&row))?;
        let mut sample = builder.finish();
        sample.factors = super::bootstrap_capacity::factors(run);
        Ok(sample)
    }

    /// The sample of one class of a mix run (its index in the run's mix): the rows drawn
    /// from that class, as the class's own metrics were folded.
    pub(crate) fn of_class(
        store: &Store,
        run: &StoredRun,
        class: u16,
    ) -> Result<Sample, StoreError> {
        let mut builder = SampleBuilder::new(definitions_of(run));
        store.each_request_row(&run.id, |row| {
            if row.record.class == Some(class) {
                builder.add(&row);
            }
        })?;
        Ok(builder.finish())
    }

    /// The sample of `rows`, timed by the metrics' own `timing` under `defs`.
    pub fn from_rows(rows: &[RequestRow], defs: MetricDefinitions) -> Sample {
        let mut builder = SampleBuilder::new(defs);
        rows.iter().for_each(|r| builder.add(r));
        builder.finish()
    }
}

/// A statistic of the vocabulary (`mean`, `stdev`, `min`, `max`, `p1` … `p999`) of
/// `values`, by the metrics' own rule (`metrics::stats`), so that a resample is judged
/// as the run's metric was computed. Sorts `values` when the statistic needs the order.
fn statistic(values: &mut [f64], stat: &str) -> Option<f64> {
    if !matches!(stat, "mean" | "stdev") {
        values.sort_by(f64::total_cmp);
    }
    stats::statistic(values, stat)
}

/// The per-resample estimate of `metric` on `sample`, or `None` if the bootstrap does not cover it.
/// One bootstrap estimate of a metric from a resample of a run.
pub(super) type Estimator = Box<dyn Fn(&Sample, &mut ChaCha8Rng) -> Option<f64>>;

/// What a throughput counts of a request `i` of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counted {
    Requests,
    OutputTokens,
    TotalTokens,
    GoodRequests,
    GoodOutputTokens,
}

impl Counted {
    fn of(self, s: &Sample, i: usize) -> f64 {
        let r = s.requests[i];
        let good = s.good.get(i).copied().unwrap_or(true);
        match self {
            Counted::Requests => 1.0,
            Counted::OutputTokens => r.1,
            Counted::TotalTokens => r.2,
            Counted::GoodRequests => f64::from(u8::from(good)),
            Counted::GoodOutputTokens => r.1 * f64::from(u8::from(good)),
        }
    }
}

/// A throughput of one resample by Little's law: the run's mean in flight × what the
/// resampled requests count / their summed latency.
pub(super) fn throughput(s: &Sample, rng: &mut ChaCha8Rng, counted: Counted) -> Option<f64> {
    let n = s.requests.len();
    if n < 2 || s.duration_s <= 0.0 {
        return None;
    }
    let total_latency: f64 = s.requests.iter().map(|r| r.0).sum();
    let in_flight = total_latency / s.duration_s;
    let (mut lat, mut w) = (0.0, 0.0);
    for _ in 0..n {
        let i = rng.gen_range(0..n);
        lat += s.requests[i].0;
        w += counted.of(s, i);
    }
    (lat > 0.0).then(|| in_flight * w / lat)
}

fn estimator(metric: &str) -> Option<Estimator> {
    if let Some(counted) = match metric {
        "output_tps" => Some(Counted::OutputTokens),
        "total_tps" => Some(Counted::TotalTokens),
        "rps" => Some(Counted::Requests),
        "goodput_rps" => Some(Counted::GoodRequests),
        "goodput_tokens_per_s" => Some(Counted::GoodOutputTokens),
        _ => None,
    } {
        return Some(Box::new(move |s: &Sample, rng: &mut ChaCha8Rng| {
            throughput(s, rng, counted)
        }));
    }
    if let Some(e) = super::bootstrap_capacity::estimator(metric) {
        return Some(e);
    }
    let (quantity, stat) = metric.rsplit_once('_')?;
    let field: fn(&Sample) -> &Vec<f64> = match quantity {
        "ttft" => |s| &s.ttft,
        "tpot" => |s| &s.tpot,
        "latency" => |s| &s.latency,
        _ => return None,
    };
    let stat = stat.to_string();
    statistic(&mut [1.0], &stat)?;
    Some(Box::new(move |s: &Sample, rng: &mut ChaCha8Rng| {
        let values = field(s);
        let n = values.len();
        if n < 2 {
            return None;
        }
        let mut draw: Vec<f64> = (0..n).map(|_| values[rng.gen_range(0..n)]).collect();
        statistic(&mut draw, &stat)
    }))
}

/// Whether the bootstrap can judge `metric`.
pub(crate) fn supports(metric: &str) -> bool {
    estimator(metric).is_some()
}

fn metric_seed(seed: u64, metric: &str) -> u64 {
    metric.bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// The confidence interval of `new − base` for `metric`, or `None` when the metric is
/// not covered or either run has fewer than two values.
pub(crate) fn diff_interval(
    base: &Sample,
    new: &Sample,
    metric: &str,
    opts: &BootstrapOptions,
) -> Option<Interval> {
    let est = estimator(metric)?;
    let mut rng = ChaCha8Rng::seed_from_u64(metric_seed(opts.seed, metric));
    let mut diffs = Vec::with_capacity(opts.resamples as usize);
    for _ in 0..opts.resamples.max(1) {
        let b = est(base, &mut rng)?;
        let n = est(new, &mut rng)?;
        diffs.push(n - b);
    }
    diffs.sort_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence.clamp(0.0, 1.0)) / 2.0;
    Some(Interval {
        low: stats::quantile(&diffs, tail)?,
        high: stats::quantile(&diffs, 1.0 - tail)?,
    })
}

/// The confidence interval of `metric` itself on one run (a percentile bootstrap of the
/// same estimator `diff_interval` uses), or `None` when the metric is not covered or the
/// run has fewer than two values: the whisker of one point of a history.
pub fn interval(sample: &Sample, metric: &str, opts: &BootstrapOptions) -> Option<Interval> {
    let est = estimator(metric)?;
    let mut rng = ChaCha8Rng::seed_from_u64(metric_seed(opts.seed, metric));
    let mut draws = Vec::with_capacity(opts.resamples as usize);
    for _ in 0..opts.resamples.max(1) {
        draws.push(est(sample, &mut rng)?);
    }
    draws.sort_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence.clamp(0.0, 1.0)) / 2.0;
    Some(Interval {
        low: stats::quantile(&draws, tail)?,
        high: stats::quantile(&draws, 1.0 - tail)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(scale: f64, n: usize, jitter_seed: u64) -> Sample {
        let mut rng = ChaCha8Rng::seed_from_u64(jitter_seed);
        let mut s = Sample {
            duration_s: 10.0 * scale,
            ..Sample::default()
        };
        for _ in 0..n {
            let j: f64 = rng.gen_range(0.9..1.1);
            s.ttft.push(100.0 * scale * j);
            s.tpot.push(10.0 * scale * j);
            s.latency.push(1000.0 * scale * j);
            s.requests.push((1.0 * scale * j, 100.0, 200.0));
        }
        s
    }

    #[test]
    fn statistics_are_the_metrics_own() {
        assert_eq!(statistic(&mut [3.0, 1.0, 2.0], "p50"), Some(2.0));
        assert_eq!(statistic(&mut [3.0, 1.0, 2.0], "min"), Some(1.0));
        assert_eq!(statistic(&mut [1.0, 3.0], "mean"), Some(2.0));
        assert_eq!(statistic(&mut [1.0, 3.0], "stdev"), Some(1.0));
        assert_eq!(statistic(&mut [1.0], "p98x"), None);
    }

    #[test]
    fn stdev_is_judged_like_every_other_statistic() {
        // One stdev rule (0 for one value, as numpy): the bootstrap covers `*_stdev`,
        // which its own copy (unknown for one value) had left out of every comparison.
        assert!(supports("ttft_stdev") && supports("latency_stdev"));
        let opts = BootstrapOptions {
            resamples: 200,
            ..BootstrapOptions::default()
        };
        let (base, same) = (sample(1.0, 100, 1), sample(1.0, 100, 2));
        let wide = Sample {
            ttft: base
                .ttft
                .iter()
                .map(|v| 100.0 + (v - 100.0) * 4.0)
                .collect(),
            ..base.clone()
        };
        let spread = diff_interval(&base, &wide, "ttft_stdev", &opts).unwrap();
        assert!(spread.excludes_zero() && spread.low > 0.0, "{spread:?}");
        let noise = diff_interval(&base, &same, "ttft_stdev", &opts).unwrap();
        assert!(!noise.excludes_zero(), "{noise:?}");
    }

    #[test]
    fn seeded_bootstrap_is_repeatable_and_flags_a_real_shift() {
        let opts = BootstrapOptions {
            resamples: 200,
            ..BootstrapOptions::default()
        };
        let base = sample(1.0, 100, 1);
        let same = sample(1.0, 100, 2);
        let slow = sample(1.2, 100, 3);
        for metric in ["ttft_p50", "tpot_mean", "latency_p99", "output_tps"] {
            let a = diff_interval(&base, &slow, metric, &opts).unwrap();
            assert_eq!(
                Some(a),
                diff_interval(&base, &slow, metric, &opts),
                "{metric}"
            );
            assert!(a.excludes_zero(), "{metric}: {a:?}");
            let b = diff_interval(&base, &same, metric, &opts).unwrap();
            assert!(!b.excludes_zero(), "{metric}: {b:?}");
            let c = diff_interval(&base, &base, metric, &opts).unwrap();
            assert!(!c.excludes_zero(), "{metric}: {c:?}");
        }
        assert!(diff_interval(&base, &slow, "cache_hit_ratio", &opts).is_none());
        let one = interval(&base, "ttft_p50", &opts).unwrap();
        assert!(one.low < 100.0 && 100.0 < one.high, "{one:?}");
        assert!(supports("rps") && !supports("itl_p50"));
    }
}
