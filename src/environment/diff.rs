//! Every difference between two environments, most important first: the CPU governor
//! (it moves latencies more than anything else on the client), each endpoint's
//! accelerators, then its server (engine and version, then its flags, models and launch command), then the
//! client's CPU, cores, memory, kernel and open-file limit, then the labels. Endpoints
//! are paired by name (or the one of each side with the other, when each side has one).
//! Fields that differ at every start of a server (its port, a random seed) are not
//! differences.

use std::collections::BTreeMap;

use serde_json::Value;

use super::summary::{gib, labels_text, limit};
use super::{ClientFacts, EndpointFacts, Environment};

/// Server fields that change at every start, whatever was measured.
const VOLATILE: [&str; 9] = [
    "port",
    "host",
    "random_seed",
    "pid",
    "created",
    "uptime",
    "start_time",
    "dist_init_addr",
    "nccl_port",
];

/// Ranks, most important first.
const GOVERNOR: u8 = 0;
const ACCELERATOR: u8 = 1;
const SERVER: u8 = 2;
const SERVER_DETAIL: u8 = 3;
const CPU: u8 = 4;
const MACHINE: u8 = 5;
const KERNEL: u8 = 6;
const LIMITS: u8 = 7;
const LABELS: u8 = 8;

#[derive(Default)]
struct Found(Vec<(u8, String)>);

impl Found {
    fn check(&mut self, rank: u8, what: &str, base: Option<String>, new: Option<String>) {
        if base != new {
            let show = |v: Option<String>| v.unwrap_or_else(|| "none".to_string());
            self.0
                .push((rank, format!("{what} {} → {}", show(base), show(new))));
        }
    }
}

fn client(f: &mut Found, b: &ClientFacts, n: &ClientFacts) {
    f.check(
        GOVERNOR,
        "cpu governor",
        b.cpu_governor.clone(),
        n.cpu_governor.clone(),
    );
    f.check(CPU, "cpu model", b.cpu_model.clone(), n.cpu_model.clone());
    let cores = |c: &ClientFacts| c.cores.map(|n| n.to_string());
    f.check(MACHINE, "client cores", cores(b), cores(n));
    f.check(
        MACHINE,
        "client memory",
        b.memory_bytes.map(gib),
        n.memory_bytes.map(gib),
    );
    f.check(KERNEL, "kernel", b.kernel.clone(), n.kernel.clone());
    let files = |c: &ClientFacts| {
        c.open_files
            .map(|o| format!("{}/{}", limit(o.soft), limit(o.hard)))
    };
    f.check(LIMITS, "open-file limit", files(b), files(n));
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn volatile(key: &str) -> bool {
    VOLATILE.contains(&key.rsplit('.').next().unwrap_or(key))
}

fn endpoint(f: &mut Found, name: &str, b: &EndpointFacts, n: &EndpointFacts) {
    let gpus = |e: &EndpointFacts| {
        let list: Vec<String> = e.accelerators.iter().map(ToString::to_string).collect();
        (!list.is_empty()).then(|| list.join(", "))
    };
    f.check(
        ACCELERATOR,
        &format!("{name} accelerators"),
        gpus(b),
        gpus(n),
    );
    let (bs, ns) = (
        b.server.clone().unwrap_or_default(),
        n.server.clone().unwrap_or_default(),
    );
    f.check(SERVER, &format!("{name} server"), bs.engine, ns.engine);
    f.check(
        SERVER,
        &format!("{name} server version"),
        bs.version,
        ns.version,
    );
    let keys: std::collections::BTreeSet<&String> =
        bs.fields.keys().chain(ns.fields.keys()).collect();
    for key in keys.into_iter().filter(|k| !volatile(k)) {
        let get = |m: &BTreeMap<String, Value>| m.get(key).map(text);
        f.check(
            SERVER_DETAIL,
            &format!("{name} server {key}"),
            get(&bs.fields),
            get(&ns.fields),
        );
    }
    let models = |e: &EndpointFacts| {
        let list: Vec<String> = e
            .models
            .iter()
            .map(|m| {
                let len = m.max_model_len.map(|n| format!(" max_model_len {n}"));
                let root = m.root.as_ref().map(|r| format!(" root {r}"));
                format!(
                    "{}{}{}",
                    m.id,
                    len.unwrap_or_default(),
                    root.unwrap_or_default()
                )
            })
            .collect();
        (!list.is_empty()).then(|| list.join(", "))
    };
    f.check(
        SERVER_DETAIL,
        &format!("{name} models"),
        models(b),
        models(n),
    );
    f.check(
        SERVER_DETAIL,
        &format!("{name} launch"),
        b.launch.clone(),
        n.launch.clone(),
    );
    let labels = |e: &EndpointFacts| (!e.labels.is_empty()).then(|| labels_text(&e.labels));
    f.check(LABELS, &format!("{name} labels"), labels(b), labels(n));
}

/// The endpoints of both sides, paired.
fn pairs<'a>(
    b: &'a Environment,
    n: &'a Environment,
) -> Vec<(String, &'a EndpointFacts, &'a EndpointFacts)> {
    let one = |e: &'a Environment| {
        let mut it = e.endpoints.iter();
        match (it.next(), it.next()) {
            (Some(only), None) => Some(only),
            _ => None,
        }
    };
    if let (Some((bn, be)), Some((nn, ne))) = (one(b), one(n)) {
        let name = if bn == nn {
            format!("endpoint {bn}")
        } else {
            format!("endpoint {bn} → {nn}")
        };
        return vec![(name, be, ne)];
    }
    b.endpoints
        .iter()
        .filter_map(|(name, be)| Some((format!("endpoint {name}"), be, n.endpoints.get(name)?)))
        .collect()
}

/// Every difference from `base` to `new`, most important first; a side that recorded no
/// environment (a suite of an older perfplan) is said once instead.
pub fn differences(base: Option<&Environment>, new: Option<&Environment>) -> Vec<String> {
    let (b, n) = match (base, new) {
        (Some(b), Some(n)) => (b, n),
        (None, None) => return Vec::new(),
        (None, Some(_)) => {
            return vec!["not recorded in the base suite (stored by an older perfplan)".to_string()]
        }
        (Some(_), None) => {
            return vec!["not recorded in the new suite (stored by an older perfplan)".to_string()]
        }
    };
    let mut f = Found::default();
    if let (Some(bc), Some(nc)) = (&b.client, &n.client) {
        client(&mut f, bc, nc);
    }
    for (name, be, ne) in pairs(b, n) {
        endpoint(&mut f, &name, be, ne);
    }
    let labels = |e: &Environment| (!e.labels.is_empty()).then(|| labels_text(&e.labels));
    f.check(LABELS, "labels", labels(b), labels(n));
    let mut found = f.0;
    found.sort_by_key(|(rank, _)| *rank);
    found.into_iter().map(|(_, text)| text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::ServerFacts;

    fn env(governor: &str, version: &str) -> Environment {
        let mut e = Environment {
            client: Some(ClientFacts {
                cpu_governor: Some(governor.into()),
                kernel: Some("6.1".into()),
                ..ClientFacts::default()
            }),
            ..Environment::default()
        };
        e.endpoints.insert(
            "a".into(),
            EndpointFacts {
                server: Some(ServerFacts {
                    engine: Some("vllm".into()),
                    version: Some(version.into()),
                    routes: vec!["/version".into()],
                    fields: [("port".to_string(), Value::from(1))].into(),
                }),
                ..EndpointFacts::default()
            },
        );
        e
    }

    #[test]
    fn the_governor_comes_first_and_ports_are_no_difference() {
        let b = env("performance", "0.8.4");
        let mut n = env("powersave", "0.8.5");
        n.client.as_mut().unwrap().kernel = Some("6.2".into());
        if let Some(s) = n.endpoints.get_mut("a").unwrap().server.as_mut() {
            s.fields.insert("port".into(), Value::from(2));
        }
        n.labels.insert("release".into(), "2".into());
        assert_eq!(
            differences(Some(&b), Some(&n)),
            [
                "cpu governor performance → powersave",
                "endpoint a server version 0.8.4 → 0.8.5",
                "kernel 6.1 → 6.2",
                "labels none → release=2",
            ]
        );
        assert!(differences(Some(&b), Some(&b)).is_empty());
        assert_eq!(differences(None, Some(&b)).len(), 1);
    }
}
