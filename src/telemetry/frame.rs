//! One scrape's page turned into the rows stored for it: known families under perfplan
//! names (series folded by each family's rule, histogram buckets kept by `le`), unknown
//! families kept raw under their own names (summed over labels; of an unknown histogram
//! or summary only `_sum` and `_count`). At most `MAX_ROWS_PER_SCRAPE` rows: known
//! families first, then raw ones in page order; the rest are counted, not stored.

use std::collections::{BTreeMap, HashMap};

use super::expo;
use super::families::{self, Fold, Kind};
use crate::store::TelemetryRow;

/// Most rows stored per scrape of one URL (a vLLM page maps to about 120).
pub(crate) const MAX_ROWS_PER_SCRAPE: usize = 512;

/// The rows of one scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Frame {
    pub rows: Vec<TelemetryRow>,
    /// Raw series left out by the row bound.
    pub dropped: usize,
    /// The known source families used (their server names), in table order.
    pub known: Vec<&'static str>,
}

impl Frame {
    /// The value of a row without `le`.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.le.is_none() && r.name == name)
            .map(|r| r.value)
    }

    /// A histogram's cumulative buckets `(le, count)` in increasing `le`.
    pub fn buckets(&self, histogram: &str) -> Vec<(f64, f64)> {
        let name = format!("{histogram}_bucket");
        let mut out: Vec<(f64, f64)> = self
            .rows
            .iter()
            .filter(|r| r.name == name)
            .filter_map(|r| Some((r.le?, r.value)))
            .collect();
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        out
    }
}

/// A known sample's slot: source family, part, bucket bound's bits.
type Slot = (&'static str, &'static str, Option<u64>);

/// Sum and count of the series folded into one value.
#[derive(Default, Clone, Copy)]
struct Acc {
    sum: f64,
    n: u32,
}

/// The rows of one page.
pub(crate) fn frame(text: &str) -> Frame {
    let mut known: BTreeMap<Slot, Acc> = BTreeMap::new();
    let mut raw: Vec<(String, f64)> = Vec::new();
    let mut raw_at: HashMap<String, usize> = HashMap::new();
    for s in expo::samples(text) {
        if let Some((fam, part)) = families::family_of(s.name) {
            let le = if part == "_bucket" {
                match s.le() {
                    Some(le) => Some(le.to_bits()),
                    None => continue,
                }
            } else {
                None
            };
            let acc = known.entry((fam.source, part, le)).or_default();
            acc.sum += s.value;
            acc.n += 1;
            continue;
        }
        let summary_or_bucket = s.label("quantile").is_some()
            || (s.name.ends_with("_bucket") && s.label("le").is_some());
        if summary_or_bucket {
            continue;
        }
        match raw_at.get(s.name) {
            Some(&i) => raw[i].1 += s.value,
            None => {
                raw_at.insert(s.name.to_string(), raw.len());
                raw.push((s.name.to_string(), s.value));
            }
        }
    }
    let mut out = known_rows(&known);
    let room = MAX_ROWS_PER_SCRAPE.saturating_sub(out.rows.len());
    out.dropped = raw.len().saturating_sub(room);
    out.rows.extend(
        raw.into_iter()
            .take(room)
            .map(|(name, value)| TelemetryRow {
                name,
                le: None,
                value,
            }),
    );
    out
}

/// The rows of the known families: of each perfplan name its preferred source present.
fn known_rows(known: &BTreeMap<Slot, Acc>) -> Frame {
    let mut chosen: BTreeMap<&'static str, &'static families::Family> = BTreeMap::new();
    for fam in families::FAMILIES {
        let present = known.keys().any(|(source, _, _)| *source == fam.source);
        if present && !chosen.contains_key(fam.name) {
            chosen.insert(fam.name, fam);
        }
    }
    let mut out = Frame::default();
    for fam in families::FAMILIES {
        if chosen.get(fam.name).map(|c| c.source) != Some(fam.source) {
            continue;
        }
        out.known.push(fam.source);
        let of_family = known.range((fam.source, "", None)..);
        for ((_, part, le), acc) in of_family.take_while(|((s, _, _), _)| *s == fam.source) {
            let value = match (fam.kind, fam.fold) {
                (Kind::Gauge, Fold::Mean) if acc.n > 0 => acc.sum / f64::from(acc.n),
                _ => acc.sum,
            };
            out.rows.push(TelemetryRow {
                name: format!("{}{part}", fam.name),
                le: le.map(f64::from_bits),
                value,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = r#"# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0"} 3
vllm:num_requests_waiting{engine="1"} 2
vllm:kv_cache_usage_perc{engine="0"} 0.5
vllm:kv_cache_usage_perc{engine="1"} 0.25
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1"} 4
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf"} 6
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf"} 2
vllm:time_to_first_token_seconds_sum{engine="0"} 0.9
vllm:time_to_first_token_seconds_count{engine="0"} 6
vllm:time_to_first_token_seconds_count{engine="1"} 2
vllm:time_per_output_token_seconds_count 99
vllm:inter_token_latency_seconds_count 7
process_cpu_seconds_total 12.5
python_gc_objects_collected_total{generation="0"} 10
python_gc_objects_collected_total{generation="1"} 5
other_hist_bucket{le="1"} 3
other_hist_sum 2
go_gc_duration_seconds{quantile="0.5"} 0.1
"#;

    #[test]
    fn known_families_fold_and_unknown_are_raw() {
        let f = frame(PAGE);
        assert_eq!(f.value("waiting"), Some(5.0));
        assert_eq!(f.value("kv_cache_usage"), Some(0.375));
        assert_eq!(
            f.buckets("server_ttft_seconds"),
            vec![(0.1, 5.0), (f64::INFINITY, 8.0)]
        );
        assert_eq!(f.value("server_ttft_seconds_count"), Some(8.0));
        // The preferred ITL source only: the deprecated alias is not added to it.
        assert_eq!(f.value("server_itl_seconds_count"), Some(7.0));
        assert_eq!(f.value("process_cpu_seconds_total"), Some(12.5));
        assert_eq!(f.value("python_gc_objects_collected_total"), Some(15.0));
        assert_eq!(f.value("other_hist_sum"), Some(2.0));
        assert!(f.rows.iter().all(|r| r.name != "other_hist_bucket"));
        assert!(f.rows.iter().all(|r| r.name != "go_gc_duration_seconds"));
        assert!(f.known.contains(&"vllm:inter_token_latency_seconds"));
        assert!(!f.known.contains(&"vllm:time_per_output_token_seconds"));
        assert_eq!(f.dropped, 0);
    }

    #[test]
    fn rows_per_scrape_are_bounded() {
        let page: String = (0..2000).map(|i| format!("m{i} 1\n")).collect();
        let f = frame(&format!("vllm:num_requests_running 4\n{page}"));
        assert_eq!(f.rows.len(), MAX_ROWS_PER_SCRAPE);
        assert_eq!(f.value("running"), Some(4.0));
        assert_eq!(f.dropped, 2000 - (MAX_ROWS_PER_SCRAPE - 1));
    }
}
