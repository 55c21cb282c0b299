//! `perfplan sim`: every setting documented in `--help`; the server prints its address first
//! and answers on it.

mod cli_support;

use cli_support::SimProcess;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_perfplan");

#[test]
fn help_documents_every_setting() {
    let out = Command::new(BIN).args(["sim", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let schema = schemars::schema_for!(perfplan::sim::SimConfig);
    let props = schema.as_value()["properties"].as_object().unwrap().clone();
    assert!(props.len() >= 25);
    for (name, prop) in &props {
        let flag = match name.as_str() {
            "models" => "--model".to_string(),
            "reject_fields" => "--reject-field".to_string(),
            n => format!("--{}", n.replace('_', "-")),
        };
        assert!(
            help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
            "{flag} missing from --help"
        );
        assert!(
            prop.get("description").is_some(),
            "{name} has no doc comment"
        );
    }
    for flag in ["--host", "--port", "tokens_per_chunk", "GET /sim/truth"] {
        assert!(help.contains(flag), "{flag}");
    }
}

#[test]
fn serves_on_an_ephemeral_port() {
    let sim = SimProcess::start(&[
        "--ttft-base",
        "1ms",
        "--fault-http-503",
        "0",
        "--threads",
        "1",
    ]);
    let url = sim.url.clone();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async {
        reqwest::get(format!("{url}/health"))
            .await
            .map(|r| r.status().as_u16())
    });
    drop(sim);
    assert_eq!(status.unwrap(), 200);
}

#[test]
fn bad_setting_is_an_error() {
    let out = Command::new(BIN)
        .args(["sim", "--port", "0", "--fault-drop", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("fault_drop"), "{err}");
    let out = Command::new(BIN)
        .args(["sim", "--port", "0", "--threads", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("--threads"), "{err}");
}

#[test]
fn replicas_listen_on_their_own_ports_with_their_own_cache() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(BIN)
        .args(["sim", "--port", "0", "--replicas", "2", "--threads", "1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let urls: Vec<String> = (0..2)
        .map(|_| {
            let line = lines.next().unwrap().unwrap();
            line.strip_prefix("listening on ").unwrap().to_string()
        })
        .collect();
    assert_ne!(urls[0], urls[1]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cached = rt.block_on(async {
        let client = reqwest::Client::new();
        let body = serde_json::json!({"model": "m", "prompt": "a shared prompt ".repeat(40), "max_tokens": 1});
        let mut cached = Vec::new();
        // The same prompt twice on replica 0, then once on replica 1.
        for url in [&urls[0], &urls[0], &urls[1]] {
            let bytes = client
                .post(format!("{url}/v1/completions"))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            let r: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            cached.push(r["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64().unwrap_or(0));
        }
        cached
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(cached[0], 0);
    assert!(cached[1] > 0, "replica 0 caches its own prompt: {cached:?}");
    assert_eq!(cached[2], 0, "replica 1 has its own cache: {cached:?}");
}
