//! The metric registry: for every metric name of the vocabulary (DESIGN.md "Metric
//! names"), its kind, unit, direction (whether a larger value is better) and a one-line
//! definition. Everything that asks what a metric *is* asks here: the unit a gate's
//! duration converts to and a report's column is shown in (`unit_of`), `compare`'s
//! better/worse (`direction_of`), `perfplan metrics`, and the book's metric table,
//! generated from `markdown_table` and checked for drift by a test. The entries
//! themselves are data in `registry_defs`; the vocabulary's lists (`names`) are read
//! from them, so a new metric is one entry. Knows nothing about runs or output formats.

use super::registry_defs::{QUANTITY_DEFS, SCALAR_DEFS, SERVER_DEFS, STATISTIC_DEFS};

/// The unit a metric is stored and reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricUnit {
    Millis,
    Seconds,
    /// A share in 0..=1.
    Ratio,
    Tokens,
    TokensPerSec,
    RequestsPerSec,
    Count,
    Watts,
    /// Energy per output token.
    JoulesPerToken,
    /// Output tokens per joule of GPU energy.
    TokensPerJoule,
    /// Money per million tokens, in the currency of the endpoint's `hardware.cost_per_hour`.
    CostPerMillionTokens,
}

impl MetricUnit {
    /// The unit as `perfplan metrics` and the book name it.
    pub fn label(self) -> &'static str {
        match self {
            MetricUnit::Millis => "ms",
            MetricUnit::Seconds => "s",
            MetricUnit::Ratio => "ratio 0..1",
            MetricUnit::Tokens => "tokens",
            MetricUnit::TokensPerSec => "tok/s",
            MetricUnit::RequestsPerSec => "req/s",
            MetricUnit::Count => "count",
            MetricUnit::Watts => "W",
            MetricUnit::JoulesPerToken => "J/token",
            MetricUnit::TokensPerJoule => "tokens/J",
            MetricUnit::CostPerMillionTokens => "cost/Mtok",
        }
    }
}

/// Whether a larger value of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Higher,
    Lower,
    /// Neither (token counts, gauges that describe the load rather than judge it).
    Neither,
}

impl Direction {
    pub fn label(self) -> &'static str {
        match self {
            Direction::Higher => "higher is better",
            Direction::Lower => "lower is better",
            Direction::Neither => "neither",
        }
    }

    /// `Some(true)` for higher, `Some(false)` for lower, `None` for neither.
    pub(crate) fn higher_is_better(self) -> Option<bool> {
        match self {
            Direction::Higher => Some(true),
            Direction::Lower => Some(false),
            Direction::Neither => None,
        }
    }
}

/// What a metric is: a statistic of a per-request distribution, a scalar the client
/// measures, or a scalar of the server's telemetry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Distribution,
    Scalar,
    Server,
}

impl Kind {
    pub fn label(self) -> &'static str {
        match self {
            Kind::Distribution => "distribution",
            Kind::Scalar => "scalar",
            Kind::Server => "server",
        }
    }
}

/// One entry: a scalar, or the quantity of a `<quantity>_<statistic>` family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MetricDef {
    pub name: &'static str,
    pub unit: MetricUnit,
    pub direction: Direction,
    pub definition: &'static str,
}

/// One statistic of the distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatisticDef {
    pub name: &'static str,
    pub definition: &'static str,
}

/// A metric name resolved against the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metric {
    pub name: String,
    pub kind: Kind,
    pub unit: MetricUnit,
    pub direction: Direction,
    pub definition: String,
}

/// The names of a list of entries, in order (for the vocabulary's constant lists).
pub(crate) const fn names_of<const N: usize>(defs: &[MetricDef; N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = defs[i].name;
        i += 1;
    }
    out
}

/// The statistics' names, in order.
pub(crate) const fn statistic_names() -> [&'static str; STATISTIC_DEFS.len()] {
    let mut out = [""; STATISTIC_DEFS.len()];
    let mut i = 0;
    while i < STATISTIC_DEFS.len() {
        out[i] = STATISTIC_DEFS[i].name;
        i += 1;
    }
    out
}

/// Every scalar entry with its kind, client scalars first.
fn scalar_entries() -> impl Iterator<Item = (Kind, &'static MetricDef)> {
    SCALAR_DEFS
        .iter()
        .map(|d| (Kind::Scalar, d))
        .chain(SERVER_DEFS.iter().map(|d| (Kind::Server, d)))
}

/// The entry of a vocabulary name (`ttft_p99`, `rps`); `NAME@CLASS` is a class's value
/// of `NAME` (see `names::class_metric`) and resolves as `NAME` does.
pub fn lookup(name: &str) -> Option<Metric> {
    let base = match super::names::split_class(name) {
        (base, Some(class)) if super::names::valid_class_name(class) => base,
        (_, Some(_)) => return None,
        (base, None) => base,
    };
    if let Some((kind, d)) = scalar_entries().find(|(_, d)| d.name == base) {
        return Some(Metric {
            name: name.to_string(),
            kind,
            unit: d.unit,
            direction: d.direction,
            definition: d.definition.to_string(),
        });
    }
    let (q, s) = QUANTITY_DEFS.iter().find_map(|q| {
        let stat = base.strip_prefix(q.name)?.strip_prefix('_')?;
        STATISTIC_DEFS
            .iter()
            .find(|s| s.name == stat)
            .map(|s| (q, s))
    })?;
    Some(Metric {
        name: name.to_string(),
        kind: Kind::Distribution,
        unit: q.unit,
        direction: q.direction,
        definition: format!("{} of {}", s.definition, q.definition),
    })
}

/// The unit of a metric, or `None` for a name outside the vocabulary.
pub fn unit_of(name: &str) -> Option<MetricUnit> {
    lookup(name).map(|m| m.unit)
}

/// Whether a larger value of `name` is better, or `None` for a name outside the vocabulary.
pub(crate) fn direction_of(name: &str) -> Option<Direction> {
    lookup(name).map(|m| m.direction)
}

/// A row of the metric reference: a scalar, or a family written `<quantity>_<statistic>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub kind: Kind,
    pub unit: MetricUnit,
    pub direction: Direction,
    pub definition: String,
}

/// The reference, in vocabulary order: one row per family, then every scalar.
pub fn rows() -> Vec<Row> {
    let families = QUANTITY_DEFS.iter().map(|q| Row {
        name: format!("{}_<statistic>", q.name),
        kind: Kind::Distribution,
        unit: q.unit,
        direction: q.direction,
        definition: q.definition.to_string(),
    });
    let scalars = scalar_entries().map(|(kind, d)| Row {
        name: d.name.to_string(),
        kind,
        unit: d.unit,
        direction: d.direction,
        definition: d.definition.to_string(),
    });
    families.chain(scalars).collect()
}

/// Every statistic with its definition, in column order.
pub fn statistics() -> &'static [StatisticDef] {
    &STATISTIC_DEFS
}

/// The metric reference as a Markdown table (the book's, `docs/src/metrics/names.md`, between its markers), with
/// the statistics after it.
pub fn markdown_table() -> String {
    let mut out = String::from("| metric | kind | unit | direction | definition |\n");
    out.push_str("|---|---|---|---|---|\n");
    for r in rows() {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            r.name,
            r.kind.label(),
            r.unit.label(),
            r.direction.label(),
            r.definition
        ));
    }
    out.push_str("\n`<statistic>` is one of: ");
    let stats: Vec<String> = STATISTIC_DEFS
        .iter()
        .map(|s| format!("`{}` ({})", s.name, s.definition))
        .collect();
    out.push_str(&stats.join(", "));
    out.push_str(".\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::names;

    #[test]
    fn every_name_of_the_vocabulary_has_an_entry() {
        for name in names::all_names() {
            let m = lookup(&name).unwrap_or_else(|| panic!("{name} has no entry"));
            assert!(!m.definition.is_empty(), "{name}");
        }
        assert!(lookup("ttft_p98").is_none());
        assert!(lookup("ttft_first_turn_mean").is_some_and(|m| m.kind == Kind::Scalar));
        assert_eq!(unit_of("ttft_p99@rag"), Some(MetricUnit::Millis));
        assert_eq!(unit_of("ttft_p99@bad class"), None);
        assert_eq!(
            direction_of("requests_failed@rag"),
            Some(Direction::Lower),
            "a class's metric reads as its metric"
        );
    }

    #[test]
    fn units_and_directions_are_those_reports_and_gates_read() {
        let cases = [
            ("ttft_p50", MetricUnit::Millis, Direction::Lower),
            ("output_tokens_mean", MetricUnit::Tokens, Direction::Neither),
            (
                "decode_tps_p50",
                MetricUnit::TokensPerSec,
                Direction::Higher,
            ),
            ("duration_s", MetricUnit::Seconds, Direction::Lower),
            ("steady_s", MetricUnit::Seconds, Direction::Higher),
            ("success_ratio", MetricUnit::Ratio, Direction::Higher),
            ("kv_cache_usage_max", MetricUnit::Ratio, Direction::Neither),
            ("queue_depth_max", MetricUnit::Count, Direction::Lower),
            (
                "sla_max_rate",
                MetricUnit::RequestsPerSec,
                Direction::Higher,
            ),
            ("requests_no_output", MetricUnit::Count, Direction::Lower),
            (
                "energy_j_per_output_token",
                MetricUnit::JoulesPerToken,
                Direction::Lower,
            ),
        ];
        for (name, unit, direction) in cases {
            assert_eq!(
                (unit_of(name), direction_of(name)),
                (Some(unit), Some(direction)),
                "{name}"
            );
        }
    }

    #[test]
    fn the_reference_has_a_row_per_family_and_scalar() {
        let rows = rows();
        assert_eq!(
            rows.len(),
            names::QUANTITIES.len() + names::SCALARS.len() + names::SERVER_SCALARS.len()
        );
        assert_eq!(rows[0].name, "ttft_<statistic>");
        assert!(markdown_table().contains("| `rps` | scalar | req/s | higher is better |"));
    }
}
