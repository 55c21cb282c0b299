//! Paired per-request comparison (`compare --paired`): runs that differ only by endpoint
//! send byte-identical prompts (the same item ids from the same request-set seed), so each
//! item's TTFT, TPOT and latency on one side can be set against the same item's on the
//! other. The paired differences `new − base` have a far tighter interval than the
//! difference of two distributions: the prompt-to-prompt spread cancels.
//!
//! Memory: one side's measured, successful requests are read into a `Vec` indexed by item
//! (20 bytes an item, up to the largest item id; items at or above `MAX_ITEMS` are left out
//! and counted), the other side is streamed row by row, and the differences are kept (12
//! bytes a pair) for the median. The first measured request of an item is its value; a
//! later request of the same item (a duration-bounded run wrapping around) is not paired.
//! A pair whose runs differ in settings beyond the endpoint, or whose items have different
//! client-counted prompt lengths, is not paired (the prompts are not the same).
//!
//! Intervals (95%): of the mean difference, Student t over the differences; of the median
//! difference, the distribution-free order-statistic interval (binomial ranks, exact for
//! n ≤ 1000, normal approximation above).

use serde_json::{json, Value};

use super::bootstrap::definitions_of;
use super::compare::Comparison;
use super::format::{display_for, number};
use super::grid::Grid;
use super::min_effect::{pct_for, MinEffect};
use super::repeats::{repeat_of, REPEAT_AXIS};
use super::ReportError;
use crate::metrics::definitions::timing;
use crate::metrics::student::mean_interval;
use crate::record::{Outcome, Phase};
use crate::store::{RequestRow, Store, StoredRun};

/// Item ids paired at most (20 bytes each: 80 MiB).
pub(crate) const MAX_ITEMS: u64 = 1 << 22;
/// The confidence of the paired intervals.
pub(crate) const CONFIDENCE: f64 = 0.95;
/// The quantities paired, in display order.
pub(crate) const QUANTITIES: [&str; 3] = ["ttft", "tpot", "latency"];

/// One quantity's paired differences (ms).
#[derive(Debug, Clone, PartialEq)]
pub struct PairedStat {
    pub quantity: &'static str,
    pub n: usize,
    /// Mean of the base side's values over the paired items.
    pub base_mean: f64,
    pub mean: f64,
    pub mean_ci: Option<(f64, f64)>,
    pub median: f64,
    pub median_ci: Option<(f64, f64)>,
    /// The smallest change called a change, in percent of `base_mean` (the minimum
    /// effect of `{quantity}_mean`).
    pub min_effect_pct: f64,
}

impl PairedStat {
    /// Whether the mean difference's interval excludes zero and the mean difference is at
    /// least the minimum effect (`None` without an interval).
    pub fn beyond_noise(&self) -> Option<bool> {
        let (lo, hi) = self.mean_ci?;
        let large = self.base_mean != 0.0
            && (self.mean / self.base_mean).abs() * 100.0 >= self.min_effect_pct;
        Some((lo > 0.0 || hi < 0.0) && large)
    }

    /// `worse` / `better` (every quantity is a time: lower is better) or `no change`.
    pub fn verdict(&self) -> &'static str {
        match self.beyond_noise() {
            Some(true) if self.mean > 0.0 => "worse (beyond noise)",
            Some(true) => "better (beyond noise)",
            Some(false) => "no change",
            None => "—",
        }
    }
}

/// The paired comparison of two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedRuns {
    pub label: String,
    pub base_id: String,
    pub new_id: String,
    /// Why the runs were not paired, when they were not.
    pub refused: Option<String>,
    /// Items on one side only, or past `MAX_ITEMS`, or repeated within a run.
    pub unpaired: u64,
    pub stats: Vec<PairedStat>,
}

/// One item's values on the base side: ttft, tpot, latency (ms; NaN when unknown) and
/// the client-counted prompt length (`u32::MAX` when unknown).
#[derive(Clone, Copy)]
struct Slot {
    values: [f32; 3],
    input: u32,
    seen: bool,
}

const EMPTY: Slot = Slot {
    values: [f32::NAN; 3],
    input: u32::MAX,
    seen: false,
};

/// `(ttft, tpot, latency)` in ms of a measured, successful row.
fn values_of(row: &RequestRow, run: &StoredRun) -> Option<[f32; 3]> {
    let r = &row.record;
    if r.phase != Phase::Measured || r.outcome != Outcome::Ok {
        return None;
    }
    let t = timing(r, definitions_of(run));
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 1e3) as f32;
    let out = r.output_tokens().map(|(n, _)| n);
    Some([
        t.ttft.map_or(f32::NAN, ms),
        out.and_then(|n| t.tpot(n)).map_or(f32::NAN, ms),
        ms(t.latency),
    ])
}

/// Pairs every matched pair of `comparison` (repeats matched repeat by repeat).
pub fn paired(
    base: &Store,
    new: &Store,
    comparison: &Comparison,
    min_effect: &[MinEffect],
) -> Result<Vec<PairedRuns>, ReportError> {
    let (base_runs, new_runs) = (base.runs()?, new.runs()?);
    let mut out = Vec::new();
    for pair in &comparison.pairs {
        let label = pair.key_label();
        let refused = (!pair.unlike(&comparison.allow_changed).is_empty()).then(|| {
            "settings differ beyond the endpoint, so the prompts are not the same".to_string()
        });
        for (b, n) in repeat_pairs(&base_runs, &new_runs, &pair.base, &pair.new) {
            let label = match repeat_of(b) {
                Some(r) => format!("{label} · {REPEAT_AXIS}={}", r.k),
                None => label.clone(),
            };
            let mut p = match &refused {
                Some(why) => PairedRuns {
                    label: String::new(),
                    base_id: b.id.clone(),
                    new_id: n.id.clone(),
                    refused: Some(why.clone()),
                    unpaired: 0,
                    stats: Vec::new(),
                },
                None => pair_runs(base, new, b, n, min_effect)?,
            };
            p.label = label;
            out.push(p);
        }
    }
    Ok(out)
}

/// The runs of two matched groups, repeat k with repeat k (the leads alone when not
/// repeated).
fn repeat_pairs<'a>(
    base_runs: &'a [StoredRun],
    new_runs: &'a [StoredRun],
    base: &'a StoredRun,
    new: &'a StoredRun,
) -> Vec<(&'a StoredRun, &'a StoredRun)> {
    let (Some(rb), Some(rn)) = (repeat_of(base), repeat_of(new)) else {
        return vec![(base, new)];
    };
    let members = |runs: &'a [StoredRun], group: &str| -> Vec<(u32, &'a StoredRun)> {
        runs.iter()
            .filter_map(|r| repeat_of(r).filter(|x| x.group == group).map(|x| (x.k, r)))
            .collect()
    };
    let new_members = members(new_runs, &rn.group);
    members(base_runs, &rb.group)
        .into_iter()
        .filter_map(|(k, b)| {
            new_members
                .iter()
                .find(|(j, _)| *j == k)
                .map(|(_, n)| (b, *n))
        })
        .collect()
}

/// The paired differences of two runs: the base side read into slots by item, the new
/// side streamed against them.
fn pair_runs(
    base: &Store,
    new: &Store,
    b: &StoredRun,
    n: &StoredRun,
    min_effect: &[MinEffect],
) -> Result<PairedRuns, ReportError> {
    let mut slots: Vec<Slot> = Vec::new();
    let mut unpaired = 0u64;
    base.each_request_row(&b.id, |row| {
        let Some(values) = values_of(&row, b) else {
            return;
        };
        if row.item >= MAX_ITEMS {
            unpaired += 1;
            return;
        }
        let i = row.item as usize;
        if slots.len() <= i {
            slots.resize(i + 1, EMPTY);
        }
        if slots[i].seen {
            unpaired += 1;
            return;
        }
        slots[i] = Slot {
            values,
            input: row.client_input_tokens.unwrap_or(u32::MAX),
            seen: true,
        };
    })?;
    let mut diffs: [Vec<f32>; 3] = Default::default();
    let mut base_sum = [0.0f64; 3];
    let mut mismatched = 0u64;
    new.each_request_row(&n.id, |row| {
        let Some(values) = values_of(&row, n) else {
            return;
        };
        let slot = slots.get_mut(row.item as usize).filter(|s| s.seen);
        let Some(slot) = slot else {
            unpaired += 1;
            return;
        };
        slot.seen = false;
        let input = row.client_input_tokens.unwrap_or(u32::MAX);
        if input != slot.input && input != u32::MAX && slot.input != u32::MAX {
            mismatched += 1;
        }
        for q in 0..3 {
            if slot.values[q].is_finite() && values[q].is_finite() {
                diffs[q].push(values[q] - slot.values[q]);
                base_sum[q] += f64::from(slot.values[q]);
            }
        }
    })?;
    unpaired += slots.iter().filter(|s| s.seen).count() as u64;
    let refused = (mismatched > 0).then(|| {
        format!("{mismatched} item(s) have different prompt lengths on the two sides, so the prompts are not the same")
    });
    let stats = if refused.is_some() {
        Vec::new()
    } else {
        QUANTITIES
            .iter()
            .zip(diffs.iter_mut().zip(base_sum))
            .filter_map(|(q, (d, sum))| stat(q, d, sum, min_effect))
            .collect()
    };
    Ok(PairedRuns {
        label: String::new(),
        base_id: b.id.clone(),
        new_id: n.id.clone(),
        refused,
        unpaired,
        stats,
    })
}

fn stat(
    quantity: &'static str,
    diffs: &mut [f32],
    base_sum: f64,
    min_effect: &[MinEffect],
) -> Option<PairedStat> {
    if diffs.is_empty() {
        return None;
    }
    let values: Vec<f64> = diffs.iter().map(|&d| f64::from(d)).collect();
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    diffs.sort_by(f32::total_cmp);
    let median = crate::metrics::stats::quantile(
        &diffs.iter().map(|&d| f64::from(d)).collect::<Vec<_>>(),
        0.5,
    )?;
    Some(PairedStat {
        quantity,
        n,
        base_mean: base_sum / n as f64,
        mean,
        mean_ci: mean_interval(&values, CONFIDENCE).map(|iv| (iv.low, iv.high)),
        median,
        median_ci: median_ranks(n, CONFIDENCE)
            .map(|(lo, hi)| (f64::from(diffs[lo]), f64::from(diffs[hi]))),
        min_effect_pct: pct_for(&format!("{quantity}_mean"), min_effect),
    })
}

/// 0-based ranks `(lo, hi)` of the order statistics bounding the median of `n` values with
/// at least `confidence` coverage: the largest `lo` with P(Bin(n, ½) ≤ lo) ≤ (1 − c)/2, and
/// `hi = n − 1 − lo`. `None` when `n` is too small for any interval (n < 6 at 95%).
pub(crate) fn median_ranks(n: usize, confidence: f64) -> Option<(usize, usize)> {
    let tail = (1.0 - confidence) / 2.0;
    let lo = if n <= 1000 {
        // Exact: accumulate the binomial(n, ½) probabilities in logs.
        let ln_half_n = n as f64 * 0.5f64.ln();
        let mut ln_c = 0.0f64;
        let mut cdf = 0.0f64;
        let mut lo = None;
        for k in 0..n {
            if k > 0 {
                ln_c += ((n - k + 1) as f64).ln() - (k as f64).ln();
            }
            cdf += (ln_c + ln_half_n).exp();
            if cdf > tail {
                break;
            }
            lo = Some(k);
        }
        // The interval [x(lo+1), x(n−lo)] in 1-based ranks is [lo+1 .. ] 0-based.
        lo.map(|k| k + 1)?
    } else {
        let z = crate::metrics::student::t_quantile(0.5 + confidence / 2.0, 1e6)?;
        let half = z * (n as f64).sqrt() / 2.0;
        ((n as f64 / 2.0 - half).floor().max(0.0) as usize).max(1)
    };
    // 1-based rank `lo` → 0-based index lo − 1.
    let lo = lo - 1;
    let hi = n - 1 - lo;
    (lo < hi).then_some((lo, hi))
}

/// The paired comparison as a grid: one row per pair and quantity.
pub fn grid(paired: &[PairedRuns]) -> Grid {
    let header = [
        "run",
        "quantity",
        "pairs",
        "base mean",
        "mean Δ",
        "mean Δ 95% CI",
        "median Δ",
        "median Δ 95% CI",
        "noise",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let d = display_for("ttft_mean", &[]);
    let ci = |c: Option<(f64, f64)>| {
        c.map_or("—".to_string(), |(l, h)| {
            format!("[{}, {}]", number(l), number(h))
        })
    };
    for p in paired {
        if let Some(why) = &p.refused {
            notes.push(format!(
                "not paired: {} ({} → {}): {why}",
                p.label, p.base_id, p.new_id
            ));
            continue;
        }
        for (k, s) in p.stats.iter().enumerate() {
            rows.push(vec![
                if k == 0 {
                    p.label.clone()
                } else {
                    String::new()
                },
                format!("{} (ms)", s.quantity),
                s.n.to_string(),
                d.value(s.base_mean),
                d.value(s.mean),
                ci(s.mean_ci),
                d.value(s.median),
                ci(s.median_ci),
                s.verdict().to_string(),
            ]);
        }
        if p.unpaired > 0 {
            notes.push(format!(
                "{}: {} request(s) without a partner left out",
                p.label, p.unpaired
            ));
        }
    }
    notes.push("Paired per item (the same prompt on both sides), Δ = new − base in ms; mean Δ's interval is Student t, median Δ's the order-statistic (binomial) interval, both 95%; the verdict needs mean Δ's interval to exclude zero and mean Δ to be at least the minimum effect of `<quantity>_mean`.".into());
    Grid {
        header,
        rows,
        label_cols: 2,
        notes,
    }
}

/// The paired comparison as JSON: `[{label, base_id, new_id, refused, unpaired, stats:
/// {ttft|tpot|latency: {n, base_mean, mean, mean_low, mean_high, median, median_low,
/// median_high}}}]` (ms).
pub fn json(paired: &[PairedRuns]) -> Value {
    let lo = |c: Option<(f64, f64)>| c.map(|c| c.0);
    let hi = |c: Option<(f64, f64)>| c.map(|c| c.1);
    Value::Array(
        paired
            .iter()
            .map(|p| {
                let stats: serde_json::Map<String, Value> = p
                    .stats
                    .iter()
                    .map(|s| {
                        (
                            s.quantity.to_string(),
                            json!({
                                "n": s.n, "base_mean": s.base_mean, "mean": s.mean,
                                "mean_low": lo(s.mean_ci), "mean_high": hi(s.mean_ci),
                                "median": s.median, "median_low": lo(s.median_ci),
                                "median_high": hi(s.median_ci),
                                "min_effect_pct": s.min_effect_pct,
                                "beyond_noise": s.beyond_noise(),
                            }),
                        )
                    })
                    .collect();
                json!({"label": p.label, "base_id": p.base_id, "new_id": p.new_id,
                       "refused": p.refused, "unpaired": p.unpaired, "stats": stats})
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_costs_twenty_bytes() {
        // The memory bound the module and the book state.
        assert_eq!(std::mem::size_of::<Slot>(), 20);
    }

    #[test]
    fn median_ranks_match_the_tables() {
        // Classic 95% sign-test ranks (1-based): n = 6 → (1, 6), n = 10 → (2, 9),
        // n = 20 → (6, 15).
        assert_eq!(median_ranks(6, 0.95), Some((0, 5)));
        assert_eq!(median_ranks(10, 0.95), Some((1, 8)));
        assert_eq!(median_ranks(20, 0.95), Some((5, 14)));
        assert_eq!(median_ranks(5, 0.95), None);
        let (lo, hi) = median_ranks(10_000, 0.95).unwrap();
        assert!((4900..4903).contains(&lo) && hi == 9999 - lo, "{lo}");
    }
}
