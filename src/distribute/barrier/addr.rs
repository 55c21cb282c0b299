//! Where shard 1's barrier listens, from the engine's own naming: under Kubernetes the
//! DNS name of the Indexed Job's pod of index 0 in its headless Service
//! (`JOB-0.SERVICE`: the pod's `HOSTNAME` is `JOB-INDEX`, the Service is
//! `PERFPLAN_SERVICE`, or the Job's name, as `perfplan k8s` writes it); under Slurm the
//! first host of the step's node list (`SLURM_STEP_NODELIST`, else the job's), where task
//! 0 runs, on a port made of the job and step ids so two steps on one node do not meet.
//! `PERFPLAN_BARRIER` (or `--barrier`) overrides either part: `HOST:PORT`, `HOST`, `:PORT`,
//! or `off`. Port 0 on shard 1 listens on any free port, which it prints.

use crate::distribute::shard::env::Engine;

/// The barrier's port where nothing else names one.
pub const DEFAULT_PORT: u16 = 7313;

/// Why the barrier's address could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    #[error(
        "cannot tell the barrier's address under Kubernetes: {why}; set PERFPLAN_BARRIER to \
         HOST:PORT of the pod of index 0 (its DNS name in the Job's headless Service)"
    )]
    Kubernetes { why: String },
    #[error(
        "cannot tell the barrier's address under Slurm: {why}; set PERFPLAN_BARRIER to \
         HOST:PORT of the node of task 0"
    )]
    Slurm { why: String },
    #[error("invalid barrier address `{text}`: {why}")]
    Bad { text: String, why: &'static str },
}

/// The barrier's `host:port`; `None` when there is none (`off`, or a shard given by
/// hand with no address). `setting` is `--barrier` or `PERFPLAN_BARRIER`.
pub fn barrier_address(
    setting: Option<&str>,
    engine: Option<Engine>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, AddrError> {
    let (host, port) = match setting.map(str::trim) {
        Some("off") => return Ok(None),
        None if engine.is_none() => return Ok(None),
        None => (None, None),
        Some(text) => split(text)?,
    };
    let host = match (host, engine) {
        (Some(h), _) => h,
        (None, Some(Engine::Kubernetes)) => kubernetes_host(&var)?,
        (None, Some(Engine::Slurm)) => slurm_host(&var)?,
        (None, None) => {
            return Err(AddrError::Bad {
                text: setting.unwrap_or_default().to_string(),
                why: "give the host of shard 1 (HOST:PORT): with --shard K/N no engine names it",
            })
        }
    };
    let port = match (port, engine) {
        (Some(p), _) => p,
        (None, Some(Engine::Slurm)) => slurm_port(&var),
        (None, _) => DEFAULT_PORT,
    };
    Ok(Some(match host.contains(':') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    }))
}

/// `HOST:PORT`, `HOST`, `:PORT`, `[V6]:PORT`.
fn split(text: &str) -> Result<(Option<String>, Option<u16>), AddrError> {
    let bad = |why| AddrError::Bad {
        text: text.to_string(),
        why,
    };
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| bad("an IPv6 host needs its `]`"))?;
        match after {
            "" => (h, None),
            p => (
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| bad("write [HOST]:PORT"))?,
                ),
            ),
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port = port
        .map(|p| p.parse::<u16>().ok())
        .map(|p| p.ok_or_else(|| bad("the port is not a number from 0 to 65535")))
        .transpose()?;
    let host = (!host.is_empty()).then(|| host.to_string());
    Ok((host, port))
}

/// `JOB-0.SERVICE` of an Indexed Job's pod named `JOB-INDEX`.
fn kubernetes_host(var: &impl Fn(&str) -> Option<String>) -> Result<String, AddrError> {
    let why = |why: String| AddrError::Kubernetes { why };
    let index = var("JOB_COMPLETION_INDEX").unwrap_or_default();
    let hostname = var("HOSTNAME").ok_or_else(|| why("HOSTNAME is not set".into()))?;
    let job = hostname
        .strip_suffix(&format!("-{index}"))
        .filter(|j| !j.is_empty())
        .ok_or_else(|| {
            why(format!(
                "HOSTNAME `{hostname}` does not end in `-{index}` (an Indexed Job's pod is named \
                 JOB-INDEX)"
            ))
        })?;
    let service = var("PERFPLAN_SERVICE").unwrap_or_else(|| job.to_string());
    Ok(format!("{job}-0.{service}"))
}

fn slurm_host(var: &impl Fn(&str) -> Option<String>) -> Result<String, AddrError> {
    let list = [
        "SLURM_STEP_NODELIST",
        "SLURM_JOB_NODELIST",
        "SLURM_NODELIST",
    ]
    .iter()
    .find_map(|v| var(v))
    .ok_or_else(|| AddrError::Slurm {
        why: "none of SLURM_STEP_NODELIST, SLURM_JOB_NODELIST, SLURM_NODELIST is set".into(),
    })?;
    first_host(&list)
        .or_else(|| scontrol_first(&list))
        .ok_or_else(|| AddrError::Slurm {
            why: format!("cannot read the node list `{list}`"),
        })
}

/// The port of one Slurm step's barrier: 20000 to 31999, from the job and step ids.
fn slurm_port(var: &impl Fn(&str) -> Option<String>) -> u16 {
    let id = |v: &str| var(v).and_then(|s| s.trim().parse::<u64>().ok());
    match id("SLURM_JOB_ID") {
        Some(job) => 20_000 + ((job * 4 + id("SLURM_STEP_ID").unwrap_or(0)) % 12_000) as u16,
        None => DEFAULT_PORT,
    }
}

/// The first host of a Slurm node list: `node[03-05,09],gpu1` → `node03`,
/// `rack[1-2]-n[7,9]` → `rack1-n7`; `None` for a form it does not know.
pub(crate) fn first_host(list: &str) -> Option<String> {
    let mut depth = 0i32;
    let end = list
        .char_indices()
        .find(|(_, c)| {
            match c {
                '[' => depth += 1,
                ']' => depth -= 1,
                _ => {}
            }
            *c == ',' && depth == 0
        })
        .map_or(list.len(), |(i, _)| i);
    let (mut out, mut rest) = (String::new(), list[..end].trim());
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let close = open + rest[open..].find(']')?;
        let first = rest[open + 1..close].split([',', '-']).next()?.trim();
        if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        out.push_str(first);
        rest = &rest[close + 1..];
    }
    if rest.contains(']') {
        return None;
    }
    out.push_str(rest);
    (!out.is_empty()).then_some(out)
}

/// `scontrol show hostnames LIST`'s first line, where scontrol is installed.
fn scontrol_first(list: &str) -> Option<String> {
    let out = std::process::Command::new("scontrol")
        .args(["show", "hostnames", list])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .next()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribute::shard::env::env;

    #[test]
    fn slurm_node_lists_give_their_first_host() {
        for (list, first) in [
            ("node07", "node07"),
            ("node[03-05,09],gpu1", "node03"),
            ("gpu1,node[03-05]", "gpu1"),
            ("rack[1-2]-n[7,9]", "rack1-n7"),
            ("n[001-100]", "n001"),
        ] {
            assert_eq!(first_host(list).as_deref(), Some(first), "{list}");
        }
        for bad in ["", "node[", "node[a-b]", "node]"] {
            assert_eq!(first_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_engine_names_shard_1_and_the_setting_overrides_it() {
        let k8s = env(&[
            ("JOB_COMPLETION_INDEX", "3"),
            ("HOSTNAME", "perfplan-run-3"),
        ]);
        let got = barrier_address(None, Some(Engine::Kubernetes), &k8s).unwrap();
        assert_eq!(got.as_deref(), Some("perfplan-run-0.perfplan-run:7313"));
        let got = barrier_address(Some(":9000"), Some(Engine::Kubernetes), &k8s).unwrap();
        assert_eq!(got.as_deref(), Some("perfplan-run-0.perfplan-run:9000"));
        let slurm = env(&[
            ("SLURM_STEP_NODELIST", "c[12-13]"),
            ("SLURM_JOB_ID", "41"),
            ("SLURM_STEP_ID", "2"),
        ]);
        let got = barrier_address(None, Some(Engine::Slurm), &slurm).unwrap();
        assert_eq!(got.as_deref(), Some("c12:20166"));
        let got = barrier_address(Some("10.0.0.5"), Some(Engine::Slurm), &slurm).unwrap();
        assert_eq!(got.as_deref(), Some("10.0.0.5:20166"));
        let got = barrier_address(Some("[::1]:80"), None, &slurm).unwrap();
        assert_eq!(got.as_deref(), Some("[::1]:80"));
        assert_eq!(
            barrier_address(Some("off"), Some(Engine::Slurm), &slurm),
            Ok(None)
        );
        assert_eq!(barrier_address(None, None, &slurm), Ok(None));
    }

    #[test]
    fn what_cannot_be_worked_out_is_named() {
        let wrong = env(&[("JOB_COMPLETION_INDEX", "1"), ("HOSTNAME", "somepod")]);
        let e = barrier_address(None, Some(Engine::Kubernetes), &wrong).unwrap_err();
        assert!(
            e.to_string().contains("`somepod` does not end in `-1`"),
            "{e}"
        );
        let e = barrier_address(None, Some(Engine::Slurm), env(&[])).unwrap_err();
        assert!(e.to_string().contains("SLURM_STEP_NODELIST"), "{e}");
        let e = barrier_address(Some(":99999"), Some(Engine::Slurm), env(&[])).unwrap_err();
        assert!(e.to_string().contains("port"), "{e}");
        let e = barrier_address(Some(":7000"), None, env(&[])).unwrap_err();
        assert!(e.to_string().contains("host of shard 1"), "{e}");
    }
}
