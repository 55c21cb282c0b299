//! A suite's metrics as an OTLP/HTTP JSON body (`ExportMetricsServiceRequest`), for
//! `report --export otlp=URL`: one gauge per exposed metric, one data point per run, named
//! and labelled by the Prometheus exposition's one rule (`prometheus::gauges`: the
//! same name, `perfplan_ttft_p99_seconds`, and the same labels, as attributes), with the
//! unit in UCUM (`s`, `1`, `{token}/s`). The resource carries the suite: `service.name`
//! `perfplan`, the plan's name, perfplan's version, the plan's git revision, every
//! label of the environment record (`perfplan.label.release`), the client machine
//! (`host.cpu.model.name`, `host.cpu.cores`, `os.kernel`, `host.cpu.governor`) and per
//! endpoint its labels and its server's engine and version
//! (`perfplan.endpoint.NAME.version`). Builds the body only;
//! sending it is the command line's.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::prometheus::gauges;
use super::ReportData;

/// The UCUM unit of a base-unit suffix.
fn ucum(suffix: &str) -> &'static str {
    match suffix {
        "seconds" => "s",
        "ratio" => "1",
        "tokens" => "{token}",
        "tokens_per_second" => "{token}/s",
        "requests_per_second" => "{request}/s",
        "watts" => "W",
        "joules_per_token" => "J/{token}",
        "tokens_per_joule" => "{token}/J",
        _ => "1",
    }
}

fn attribute(key: &str, value: &str) -> Value {
    json!({"key": key, "value": {"stringValue": value}})
}

/// The resource's attributes: what the suite is.
fn resource(data: &ReportData) -> Vec<Value> {
    let info = &data.suite.info;
    let mut attrs = vec![
        attribute("service.name", "perfplan"),
        attribute("service.version", &info.perfplan_version),
        attribute("perfplan.suite", &info.plan_name),
    ];
    if let Some(git) = &info.git {
        attrs.push(attribute("perfplan.plan.revision", &git.revision));
    }
    let Some(env) = &info.environment else {
        return attrs;
    };
    for (k, v) in &env.labels {
        attrs.push(attribute(&format!("perfplan.label.{k}"), v));
    }
    if let Some(c) = &env.client {
        let facts = [
            ("host.cpu.model.name", c.cpu_model.clone()),
            ("host.cpu.cores", c.cores.map(|n| n.to_string())),
            ("os.kernel", c.kernel.clone()),
            ("host.cpu.governor", c.cpu_governor.clone()),
        ];
        for (k, v) in facts {
            if let Some(v) = v {
                attrs.push(attribute(k, &v));
            }
        }
    }
    // Per endpoint: its labels and what its server said it is.
    for (name, ep) in &env.endpoints {
        for (k, v) in &ep.labels {
            attrs.push(attribute(&format!("perfplan.endpoint.{name}.label.{k}"), v));
        }
        if let Some(server) = &ep.server {
            let facts = [("engine", &server.engine), ("version", &server.version)];
            for (k, v) in facts {
                if let Some(v) = v {
                    attrs.push(attribute(&format!("perfplan.endpoint.{name}.{k}"), v));
                }
            }
        }
    }
    attrs
}

/// The request body: every run's metrics, stamped with the suite's creation time.
pub fn body(data: &ReportData) -> Value {
    let time = (data.suite.created_unix_ms.max(0) as u128 * 1_000_000).to_string();
    let mut metrics: BTreeMap<String, (String, &'static str, Vec<Value>)> = BTreeMap::new();
    for g in gauges(data) {
        let point = json!({
            "attributes": g.labels.iter().map(|(k, v)| attribute(k, v)).collect::<Vec<_>>(),
            "timeUnixNano": time,
            "asDouble": g.value,
        });
        metrics
            .entry(g.name)
            .or_insert_with(|| (g.help, ucum(g.unit), Vec::new()))
            .2
            .push(point);
    }
    let metrics: Vec<Value> = metrics
        .into_iter()
        .map(|(name, (help, unit, points))| {
            json!({"name": name, "description": help, "unit": unit, "gauge": {"dataPoints": points}})
        })
        .collect();
    json!({"resourceMetrics": [{
        "resource": {"attributes": resource(data)},
        "scopeMetrics": [{
            "scope": {"name": "perfplan", "version": data.suite.info.perfplan_version},
            "metrics": metrics,
        }],
    }]})
}
