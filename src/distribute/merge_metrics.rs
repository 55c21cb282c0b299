//! The metrics of a merged run, folded from the union of its shards' request rows by the
//! suite's own `metrics::Fold` as they are copied; plus what rows cannot give: the
//! server's cache counters over every shard's pass, per-turn metrics of multi-turn runs,
//! client CPU.

use std::collections::BTreeMap;

use crate::distribute::inputs::Input;
use crate::metrics::input_lengths::{Counts, Lengths};
use crate::metrics::steps::StepFold;
use crate::metrics::turns::{turn_metrics_of, TurnSample};
use crate::metrics::{Fold, MetricDefinitions, RunSummary, SummaryOptions};
use crate::plan::ServerMetricsSpec;
use crate::planner::ramp::stored_windows;
use crate::record::facts::{InputLengthFacts, MixClassFacts, StepFacts};
use crate::record::{Outcome, Phase};
use crate::store::{RequestRow, StoredRun};
use crate::telemetry::{first_ratio, CounterNames};

/// A merged run's metrics and the facts it keeps, folded row by row as the
/// shards' rows are copied (no merged run is held whole): the metrics by the suite's own
/// `metrics::Fold`, the three-way input lengths, multi-turn samples (items moved past the
/// earlier shards'), and each shard's first measured send.
pub(super) struct MergeFold {
    fold: Fold,
    lengths: Lengths,
    /// Multi-turn runs: every shard's `turn_of_item`, appended, and where each shard's
    /// items start in it.
    turns: Option<(Vec<u32>, BTreeMap<String, u64>)>,
    samples: Vec<TurnSample>,
    /// Each shard's first measured send (µs on the merged time base).
    pub first_of: BTreeMap<String, u64>,
    pub rows: u64,
    /// A mix: each class's name and fold, by class index (from the first shard's facts).
    classes: Vec<(String, Fold)>,
    /// A ramp: its steps' fold and the key of a step's level (`rate`, `concurrency`).
    steps: Option<(StepFold, &'static str)>,
}

impl MergeFold {
    pub fn new(inputs: &[Input], parts: &[(usize, StoredRun)], opts: &SummaryOptions) -> MergeFold {
        let mut turns: Vec<u32> = Vec::new();
        let mut first_item: BTreeMap<String, u64> = BTreeMap::new();
        for (i, run) in parts {
            let Some(list) = &run.facts.turn_of_item else {
                continue;
            };
            first_item.insert(inputs[*i].shard.to_string(), turns.len() as u64);
            turns.extend(list);
        }
        MergeFold {
            fold: Fold::new(opts.definitions, &opts.slos),
            lengths: Lengths::default(),
            turns: (!first_item.is_empty()).then_some((turns, first_item)),
            samples: Vec::new(),
            first_of: BTreeMap::new(),
            rows: 0,
            classes: class_names(parts)
                .into_iter()
                .map(|n| (n, Fold::new(opts.definitions, &opts.slos)))
                .collect(),
            steps: parts
                .first()
                .and_then(|(_, run)| stored_windows(&run.settings))
                .map(|(windows, key)| {
                    let fold = StepFold::new(&windows, opts.definitions, opts.hardware);
                    (fold, key)
                }),
        }
    }

    /// Adds one row, its times already on the merged time base.
    pub fn add(&mut self, row: &RequestRow) {
        let r = &row.record;
        self.rows += 1;
        self.fold.add(r);
        if let Some((_, fold)) = r.class.and_then(|c| self.classes.get_mut(usize::from(c))) {
            fold.add(r);
        }
        if let Some((steps, _)) = &mut self.steps {
            steps.add(r);
        }
        if r.phase == Phase::Measured && r.outcome == Outcome::Ok {
            self.lengths.add_counts(Counts {
                server: r.usage.prompt_tokens,
                client: r.client_input_tokens,
                target: row.target_input_tokens,
            });
        }
        if let (Some(shard), Phase::Measured) = (row.shard.as_deref(), r.phase) {
            let sent = r.sent.as_micros() as u64;
            let first = self.first_of.entry(shard.to_string()).or_insert(sent);
            *first = (*first).min(sent);
        }
        if let Some((_, first_item)) = &self.turns {
            if let Some(mut sample) = TurnSample::of(r) {
                let base = row.shard.as_ref().and_then(|s| first_item.get(s)).copied();
                sample.item += base.unwrap_or(0);
                self.samples.push(sample);
            }
        }
    }

    /// A ramp's steps, folded from the merged rows (the shards sent the one schedule
    /// between them, so the merged time base is the ramp's), as `time.steps` keeps them.
    pub(crate) fn take_steps(&mut self) -> Option<Vec<StepFacts>> {
        self.steps
            .take()
            .map(|(fold, key)| crate::metrics::steps::step_facts(fold, key))
    }

    /// The merged run's metrics (per-turn and a mix's per-class ones included), its
    /// input lengths, and each class's measured requests.
    pub fn finish(
        self,
        parts: &[(usize, StoredRun)],
        opts: &SummaryOptions,
    ) -> (RunSummary, InputLengthFacts, Vec<u64>) {
        let mut summary = self.fold.finish(opts);
        let class_opts = SummaryOptions {
            definitions: opts.definitions,
            slos: opts.slos.clone(),
            inputs_per_request: opts.inputs_per_request,
            ..SummaryOptions::default()
        };
        let mut class_requests = Vec::new();
        for (name, fold) in self.classes {
            let class = fold.finish(&class_opts);
            class_requests.push(class.requests);
            for (metric, value) in class.values.into_iter().filter(|(_, v)| v.is_some()) {
                let stored = crate::metrics::names::class_metric(&metric, &name);
                summary.values.insert(stored, value);
            }
        }
        if let Some((turns, _)) = &self.turns {
            for (name, value) in turn_metrics_of(&self.samples, turns) {
                summary.values.insert(name.to_string(), value);
            }
        }
        // Client CPU and lateness are each machine's own: the busiest shard's CPU figure
        // stands for the merge, and the verdict is the worst shard's (`shard_facts`), not
        // one of the union's lateness, which mixes the shards' clients.
        for name in ["client_cpu_ratio", "client_wait_ratio"] {
            summary.values.insert(name.into(), carried(parts, name));
        }
        // The server's telemetry: every shard's sampler watched the same server over its
        // own pass, so each figure is the largest of the shards' (one shard: its own).
        for name in crate::telemetry::scalars::SCALAR_NAMES {
            summary.values.insert(name.into(), carried(parts, name));
        }
        summary.client_bound = None;
        (summary, self.lengths.finish().0, class_requests)
    }
}

/// The classes of a mix run, by index, from its first shard's facts (none otherwise).
fn class_names(parts: &[(usize, StoredRun)]) -> Vec<String> {
    let mix = parts.first().and_then(|(_, run)| run.facts.mix.as_ref());
    mix.map(|list| list.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default()
}

/// A merged mix run's `mix` facts: the first shard's, each class's requests the merged.
pub(super) fn merged_mix(
    parts: &[(usize, StoredRun)],
    requests: &[u64],
) -> Option<Vec<MixClassFacts>> {
    let mut list = parts.first()?.1.facts.mix.clone()?;
    for (class, n) in list.iter_mut().zip(requests) {
        class.requests = *n;
    }
    Some(list)
}

/// The largest value of `name` among the shards' own metrics.
fn carried(parts: &[(usize, StoredRun)], name: &str) -> Option<f64> {
    parts
        .iter()
        .filter_map(|(_, r)| r.metrics.get(name).copied().flatten())
        .reduce(f64::max)
}

/// The server's cache-hit ratio over every shard's pass: counters are the server's own,
/// so the earliest `before` and the latest `after` scrape bracket all shards' requests.
pub(super) fn server_ratio(
    run: &StoredRun,
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> Option<f64> {
    let spec = run
        .settings
        .pointer("/endpoint/metrics")
        .cloned()
        .and_then(|v| serde_json::from_value::<ServerMetricsSpec>(v).ok());
    first_ratio(before, after, &CounterNames::candidates(spec.as_ref()))
}

/// The options of the merged run's metrics, as the suite set them for its shards.
pub(super) fn options(
    first: &StoredRun,
    parts: &[(usize, StoredRun)],
    slos: &[crate::metrics::Slo],
    server_cache_hit_ratio: Option<f64>,
) -> SummaryOptions {
    let definitions = MetricDefinitions::of_facts(&first.facts);
    // The run's settings as planned (the whole load, not a shard's share of it).
    let settings =
        serde_json::from_value::<crate::planner::RunSettings>(first.settings.clone()).ok();
    let per_request = settings.as_ref().and_then(|s| {
        let spec = &s.dataset.spec;
        spec.batch_size.or(spec.num_documents)
    });
    SummaryOptions {
        definitions,
        slos: slos.to_vec(),
        inputs_per_request: per_request,
        server_cache_hit_ratio,
        planned_prefix_share: carried(parts, "planned_prefix_share"),
        planned_template_share: carried(parts, "planned_template_share"),
        users: settings.as_ref().and_then(crate::planner::users_of),
        hardware: settings.as_ref().and_then(crate::planner::hardware_of),
        ..SummaryOptions::default()
    }
}
