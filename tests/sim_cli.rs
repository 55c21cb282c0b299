//! `perfplan sim`: every setting documented in `--help`; the server prints its address first
//! and answers on it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

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
