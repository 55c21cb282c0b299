//! A comparison as a table, Markdown or JSON. A pair whose settings differ beyond its
//! axes has its noise verdicts marked and a note per setting; endpoint settings are
//! listed in a note of their own. Deltas are shown with the precision of their values.
//! Every difference between the two suites' environments is said before the deltas.

use serde_json::{json, Map, Value};

use super::changed::{allowed, describe, ChangedSetting};
use super::compare::{higher_is_better, Comparison, MatchedBy, MetricDelta, PairDelta};
use super::compare_trust::{ONE_WALK, ONE_WALK_NOTE};
use super::format::{delta_text, display_for, percent, Display};
use super::grid::{Grid, MISSING, UNKNOWN};
use super::{markdown, table, Format, ReportError, TableStyle};
use crate::store::StoredRun;

/// The noise verdict, marked when the pair compares unlike runs.
fn verdict(d: &MetricDelta, unlike: bool) -> String {
    let v = noise_verdict(d);
    match v.strip_suffix(')') {
        Some(head) if unlike && d.beyond_noise == Some(true) => format!("{head}; settings differ)"),
        _ if unlike && d.beyond_noise == Some(true) => format!("{v}; settings differ"),
        _ => v,
    }
}

fn noise_verdict(d: &MetricDelta) -> String {
    if let Some(why) = &d.untrusted {
        return format!("not judged ({why})");
    }
    match d.beyond_noise {
        Some(true) => match (higher_is_better(&d.metric), d.delta.unwrap_or(0.0) > 0.0) {
            (Some(h), up) if h == up => "better (beyond noise)".into(),
            (Some(_), _) => "worse (beyond noise)".into(),
            (None, _) => "beyond noise".into(),
        },
        Some(false) if d.below_min_effect() => {
            format!("no change (< {}%)", super::format::number(d.min_effect_pct))
        }
        Some(false) => "no change (noise)".into(),
        None => MISSING.into(),
    }
}

fn run_label(run: &StoredRun) -> String {
    super::pivot::axis_label(Some(&run.axes))
}

fn grid(c: &Comparison) -> Grid {
    let displays: Vec<Display> = c
        .metrics
        .iter()
        .map(|m| {
            let values: Vec<f64> = c
                .pairs
                .iter()
                .flat_map(|p| {
                    p.deltas
                        .iter()
                        .filter(|d| &d.metric == m)
                        .flat_map(|d| [d.base, d.new])
                })
                .flatten()
                .collect();
            display_for(m, &values)
        })
        .collect();
    let header = [
        "run", "metric", "base", "new", "Δ", "Δ%", "noise", "verdicts",
    ]
    .map(String::from)
    .to_vec();
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for pair in &c.pairs {
        let label = pair_label(pair);
        let unlike = !pair.unlike(&c.allow_changed).is_empty();
        notes.extend(shape_note(&label, pair));
        notes.extend(change_notes(&label, &pair.changed, &c.allow_changed));
        for (k, (d, disp)) in pair.deltas.iter().zip(&displays).enumerate() {
            let val = |v: Option<f64>| v.map_or_else(|| UNKNOWN.to_string(), |v| disp.value(v));
            rows.push(vec![
                if k == 0 { label.clone() } else { String::new() },
                disp.header(&d.metric),
                val(d.base),
                val(d.new),
                d.delta.map_or_else(
                    || UNKNOWN.to_string(),
                    |v| delta_text(disp, v, &[d.base, d.new]),
                ),
                d.delta_pct.map_or_else(|| UNKNOWN.to_string(), percent),
                verdict(d, unlike),
                super::compare_trust::sides(&pair.base, &pair.new),
            ]);
        }
    }
    if c.pairs
        .iter()
        .any(|p| p.deltas.iter().any(|d| d.repeats.is_some()))
    {
        notes.push("Pairs with repeats on both sides compare group means: their noise verdict is Welch's t 95% interval over the repeats' values, which must exclude zero with at least the minimum effect; other pairs use the bootstrap of each run's requests.".into());
    }
    if c.pairs.iter().any(|p| {
        p.deltas
            .iter()
            .any(|d| d.untrusted.as_deref() == Some(ONE_WALK))
    }) {
        notes.push(ONE_WALK_NOTE.into());
    }
    for (side, runs) in [("base", &c.only_base), ("new", &c.only_new)] {
        for run in runs.iter() {
            notes.push(format!(
                "only in {side}: run {} ({})",
                run.id,
                run_label(run)
            ));
        }
    }
    Grid {
        header,
        rows,
        label_cols: 2,
        notes,
    }
}

/// The note of a pair matched by its load's shape: the counts that differ.
fn shape_note(label: &str, pair: &PairDelta) -> Option<String> {
    if pair.matched_by != MatchedBy::LoadShape {
        return None;
    }
    let counts = |run: &StoredRun| {
        let load = run.axes.get("load");
        ["requests", "warmup"]
            .iter()
            .filter_map(|k| Some(format!("{k}={}", load?.get(*k)?)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "{label}: matched by its load's shape; the request counts differ (base {}, new {})",
        counts(&pair.base),
        counts(&pair.new)
    ))
}

fn pair_label(pair: &PairDelta) -> String {
    let label = pair.key_label();
    match pair.deltas.iter().find_map(|d| d.repeats) {
        Some((b, n)) => format!("{label} ({b} vs {n} repeats)"),
        None => label,
    }
}

/// Most changed settings named in one note; the rest are counted.
const NOTE_SETTINGS: usize = 6;

/// The notes of one pair's changed settings: the judged ones (or allowed ones), then the
/// endpoint ones.
fn change_notes(label: &str, changed: &[ChangedSetting], allow: &[String]) -> Vec<String> {
    let list = |items: Vec<&ChangedSetting>| -> String {
        let mut parts: Vec<String> = items
            .iter()
            .take(NOTE_SETTINGS)
            .map(|c| describe(c))
            .collect();
        if items.len() > NOTE_SETTINGS {
            parts.push(format!("and {} more", items.len() - NOTE_SETTINGS));
        }
        parts.join("; ")
    };
    let (endpoint, other): (Vec<&ChangedSetting>, Vec<&ChangedSetting>) =
        changed.iter().partition(|c| c.endpoint);
    let (allowed_ones, judged): (Vec<&ChangedSetting>, Vec<&ChangedSetting>) =
        other.into_iter().partition(|c| allowed(&c.setting, allow));
    let mut out = Vec::new();
    if !judged.is_empty() {
        let names: Vec<&str> = judged.iter().map(|c| c.setting.as_str()).collect();
        out.push(format!(
            "{label}: compares unlike runs, settings differ beyond the axes: {}; gates \
             against this baseline fail unless --allow-changed {}",
            list(judged.clone()),
            names.join(",")
        ));
    }
    if !allowed_ones.is_empty() {
        out.push(format!(
            "{label}: settings differ (allowed by --allow-changed): {}",
            list(allowed_ones)
        ));
    }
    if !endpoint.is_empty() {
        out.push(format!(
            "{label}: endpoint settings differ (listed, not judged): {}",
            list(endpoint)
        ));
    }
    out
}

fn changed_json(c: &ChangedSetting, allow: &[String]) -> Value {
    json!({
        "setting": c.setting, "base": c.base, "new": c.new, "endpoint": c.endpoint,
        "allowed": allowed(&c.setting, allow),
    })
}

fn to_json(c: &Comparison) -> Value {
    let num = |v: Option<f64>| v.filter(|v| v.is_finite()).map_or(Value::Null, Value::from);
    let pairs: Vec<Value> = c
        .pairs
        .iter()
        .map(|p| {
            let metrics: Map<String, Value> = p
                .deltas
                .iter()
                .map(|d| {
                    (d.metric.clone(), json!({
                        "base": num(d.base), "new": num(d.new), "delta": num(d.delta),
                        "delta_pct": num(d.delta_pct),
                        "ci_low": num(d.interval.map(|i| i.low)), "ci_high": num(d.interval.map(|i| i.high)),
                        "beyond_noise": d.beyond_noise,
                        "min_effect_pct": d.min_effect_pct,
                        "repeats": d.repeats.map(|(b, n)| json!({"base": b, "new": n})),
                        "not_judged_because": d.untrusted,
                    }))
                })
                .collect();
            let axes: Map<String, Value> = p.key.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect();
            let changed: Vec<Value> = p.changed.iter().map(|x| changed_json(x, &c.allow_changed)).collect();
            json!({"axes": axes, "base_id": p.base.id, "new_id": p.new.id,
                   "base_verdict": p.base.verdict, "new_verdict": p.new.verdict, "metrics": metrics,
                   "changed": changed, "unlike": !p.unlike(&c.allow_changed).is_empty(),
                   "matched_by": p.matched_by.as_str()})
        })
        .collect();
    let ids = |runs: &[StoredRun]| {
        runs.iter()
            .map(|r| json!({"id": r.id, "axes": r.axes}))
            .collect::<Vec<_>>()
    };
    json!({"environment_differences": c.environment, "clock": c.clock.as_str(), "pairs": pairs,
           "only_base": ids(&c.only_base), "only_new": ids(&c.only_new)})
}

/// The comparison in a format (`table`, `md`, `json`; CSV and HTML fall back to the table).
pub fn render(c: &Comparison, format: Format, style: TableStyle) -> Result<String, ReportError> {
    let verdicts: Vec<String> = c
        .pairs
        .iter()
        .flat_map(|p| p.deltas.iter().map(noise_verdict))
        .collect();
    let count = |word: &str| verdicts.iter().filter(|v| v.starts_with(word)).count();
    let unlike = c
        .pairs
        .iter()
        .filter(|p| !p.unlike(&c.allow_changed).is_empty())
        .count();
    let unlike_text = if unlike > 0 {
        format!(
            "; {unlike} pair(s) compare unlike runs (settings differ beyond the axes, see below)"
        )
    } else {
        String::new()
    };
    let by_shape = c
        .pairs
        .iter()
        .filter(|p| p.matched_by == MatchedBy::LoadShape)
        .count();
    let shape_text = match by_shape {
        0 => String::new(),
        n => format!(" ({n} by their load's shape: only their request counts differ)"),
    };
    let clock_text = match c.clock {
        crate::record::Clock::Kernel => "",
        crate::record::Clock::User => {
            "; both on the user clock (answer times when the client read them)"
        }
    };
    let title = format!(
        "compare: {} (base) → {} (new): {} matched runs{shape_text}, {} unmatched; beyond noise: {} worse, {} better{unlike_text}{clock_text}",
        c.base_name,
        c.new_name,
        c.pairs.len(),
        c.only_base.len() + c.only_new.len(),
        count("worse"),
        count("better"),
    );
    Ok(match format {
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&to_json(c)).map_err(ReportError::Json)?;
            s.push('\n');
            s
        }
        Format::Md => {
            let env: String = c
                .environment
                .iter()
                .map(|d| format!("- environment differs: {}\n", markdown::escape(d)))
                .collect();
            let env = if env.is_empty() {
                env
            } else {
                format!("{env}\n")
            };
            format!("## {title}\n\n{env}{}", markdown::render_grid(&grid(c)))
        }
        _ => {
            let env: String = c
                .environment
                .iter()
                .map(|d| format!("environment differs: {d}\n"))
                .collect();
            format!("{title}\n{env}{}", table::render_grid(&grid(c), style))
        }
    })
}
