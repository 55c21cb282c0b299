//! The keys of kind `trace` beyond the schema: `format` names a known format (with a
//! "did you mean"), `block_size` goes with `format = "mooncake"` only, and a time window
//! (`from`, `to`) is not empty.

use super::dataset_plan::TraceFormat;
use super::spec::{DatasetKind, DatasetSpec};

/// Problems of a `trace` dataset's format and window: `(key, message)`.
pub fn problems(ds: &DatasetSpec) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if ds.kind != DatasetKind::Trace {
        return out;
    }
    let format = ds
        .format
        .as_deref()
        .map(|name| (name, TraceFormat::parse(name)));
    if let Some((name, None)) = format {
        let hint = crate::suggest::nearest(name, TraceFormat::NAMES)
            .map(|s| format!("; did you mean `{s}`?"))
            .unwrap_or_default();
        out.push((
            "format".into(),
            format!(
                "unknown trace format `{name}` (one of: {}){hint}",
                TraceFormat::NAMES.join(", ")
            ),
        ));
    }
    let mooncake = matches!(format, Some((_, Some(TraceFormat::Mooncake))));
    if ds.block_size.is_some() && !mooncake {
        out.push((
            "block_size".into(),
            "`block_size` applies to `format = \"mooncake\"` only (the size of each \
             `hash_ids` block)"
                .into(),
        ));
    }
    if let (Some(from), Some(to)) = (ds.from, ds.to) {
        if to.0 <= from.0 {
            out.push((
                "to".into(),
                format!(
                    "the window is empty: `to` ({}) must be after `from` ({})",
                    crate::units::format_duration(to.0),
                    crate::units::format_duration(from.0)
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems_of(v: serde_json::Value) -> Vec<(String, String)> {
        problems(&serde_json::from_value(v).unwrap())
    }

    #[test]
    fn formats_block_sizes_and_windows_are_checked() {
        let p = problems_of(json!({"kind": "trace", "path": "t", "format": "moncake"}));
        assert_eq!(p.len(), 1);
        assert!(p[0].1.contains("did you mean `mooncake`?"), "{p:?}");
        let p = problems_of(json!({"kind": "trace", "path": "t", "block_size": 16}));
        assert_eq!(p[0].0, "block_size");
        let p = problems_of(json!({"kind": "trace", "path": "t", "from": "2s", "to": "1s"}));
        assert_eq!(p[0].0, "to");
        let ok = json!({"kind": "trace", "path": "t", "format": "mooncake", "block_size": 16,
                        "from": "1s", "to": "2s"});
        assert!(problems_of(ok).is_empty());
    }
}
