//! Failure classes as people read them: the outcome classes of a run's failed measured
//! requests with HTTP failures split by status (`http_500`), and their one-line summary.
//! Pure; knows only the counts `summarize` keeps, not records, storage or reports.

use std::collections::BTreeMap;

/// Class → count: `failures` (outcome class → count) with `http` split into
/// `http_<status>` by `http_statuses`; HTTP failures without a status stay `http`.
pub fn failure_classes(
    failures: &BTreeMap<String, u64>,
    http_statuses: &BTreeMap<u16, u64>,
) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (class, &n) in failures.iter().filter(|(_, &n)| n > 0) {
        if class == "http" {
            let mut by_status = 0;
            for (status, &m) in http_statuses.iter().filter(|(_, &m)| m > 0) {
                *out.entry(format!("http_{status}")).or_default() += m;
                by_status += m;
            }
            if n > by_status {
                *out.entry(class.clone()).or_default() += n - by_status;
            }
        } else {
            *out.entry(class.clone()).or_default() += n;
        }
    }
    out
}

/// `8 http_500, 4 stream_broken`: the most frequent class first, ties by name.
pub(crate) fn describe(classes: &BTreeMap<String, u64>) -> String {
    let mut by_count: Vec<(&String, &u64)> = classes.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    by_count
        .iter()
        .map(|(class, n)| format!("{n} {class}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_failures_split_by_status_and_sorted_by_count() {
        let failures = BTreeMap::from([
            ("http".to_string(), 9),
            ("stream_broken".to_string(), 4),
            ("timeout".to_string(), 0),
        ]);
        let statuses = BTreeMap::from([(500, 8)]);
        let classes = failure_classes(&failures, &statuses);
        assert_eq!(
            classes,
            BTreeMap::from([
                ("http".to_string(), 1),
                ("http_500".to_string(), 8),
                ("stream_broken".to_string(), 4),
            ])
        );
        assert_eq!(describe(&classes), "8 http_500, 4 stream_broken, 1 http");
    }
}
