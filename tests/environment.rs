//! The environment a suite measured in, end to end: the client machine read under
//! `PERFPLAN_SYSFS_ROOT`, the simulator's `/version` and model list, the plan's labels,
//! shown in every report's header; `compare` of two suites that differ only in the CPU
//! governor says so before its deltas; a launched server's command is recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn perfplan(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_perfplan"));
    cmd.args(args).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("perfplan runs")
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A machine under `dir` whose CPU governor is `governor` (every other fact fixed).
fn machine(dir: &Path, governor: &str) -> PathBuf {
    let root = dir.join(format!("machine-{governor}"));
    let put = |path: &str, text: &str| {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(
        "proc/cpuinfo",
        "processor\t: 0\nmodel name\t: Test CPU 9000\n",
    );
    put("proc/meminfo", "MemTotal:       8388608 kB\n");
    put("proc/sys/kernel/osrelease", "6.1.0-test\n");
    put(
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        &format!("{governor}\n"),
    );
    put(
        "proc/self/limits",
        "Max open files            4096                 65536                files\n",
    );
    root
}

const PLAN: &str = r#"[plan]
name = "env"
seed = 1
labels = { release = "1.8.0-rc2" }

[endpoints.sim]
base_url = "sim://sim"
labels = { gpu = "none" }
[endpoints.sim.sim]
models = ["m"]
ttft_base = "1ms"
itl_base = "1ms"

[models.m]

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4

[matrix]
load = { concurrency = 1, requests = 4, warmup = 1 }
"#;

fn run(plan: &Path, out: &Path, root: &Path) {
    let o = perfplan(
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &[("PERFPLAN_SYSFS_ROOT", root.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
}

fn report(out: &Path, format: &str) -> String {
    let o = perfplan(
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            format,
            "--out",
            "-",
        ],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Every report's header names the client, the server and the labels.
fn assert_reports_show(out: &Path) {
    let json: Value = serde_json::from_str(&report(out, "json")).unwrap();
    let env = &json[0]["environment"];
    assert_eq!(env["client"]["cpu_model"], "Test CPU 9000", "{env}");
    assert_eq!(env["client"]["cpu_governor"], "performance", "{env}");
    assert_eq!(env["client"]["memory_bytes"], 8_589_934_592u64, "{env}");
    assert_eq!(env["client"]["open_files"]["hard"], 65536, "{env}");
    assert_eq!(env["labels"]["release"], "1.8.0-rc2", "{env}");
    let endpoint = &env["endpoint"];
    assert_eq!(endpoint["labels"]["gpu"], "none", "{env}");
    assert_eq!(endpoint["server"]["engine"], "perfplan-sim", "{env}");
    assert_eq!(
        endpoint["server"]["version"],
        env!("CARGO_PKG_VERSION"),
        "{env}"
    );
    assert_eq!(endpoint["models"][0]["id"], "m", "{env}");
    for format in ["table", "md", "html"] {
        let page = report(out, format);
        for needle in [
            "Test CPU 9000",
            "governor performance",
            "release=1.8.0-rc2",
            "perfplan-sim",
        ] {
            assert!(page.contains(needle), "{format}: no {needle}:\n{page}");
        }
    }
    assert!(report(out, "table").contains("\nenvironment:\n"));
}

#[test]
fn compare_says_a_changed_governor_before_its_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    run(&plan, &base, &machine(dir.path(), "performance"));
    run(&plan, &new, &machine(dir.path(), "powersave"));
    assert_reports_show(&base);

    let o = perfplan(
        &["compare", base.to_str().unwrap(), new.to_str().unwrap()],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("compare: "), "{stdout}");
    assert_eq!(
        lines[1], "environment differs: cpu governor performance → powersave",
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("environment differs").count(),
        1,
        "the governor is the only difference:\n{stdout}"
    );
    assert!(lines[2].contains("metric"), "deltas after it:\n{stdout}");

    let o = perfplan(
        &[
            "compare",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--format",
            "json",
        ],
        &[],
    );
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        json["environment_differences"],
        serde_json::json!(["cpu governor performance → powersave"])
    );
}

#[test]
fn a_launched_servers_command_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN
        .replace(
            "base_url = \"sim://sim\"",
            "base_url = \"http://127.0.0.1:{port}\"\nlaunch = \"perfplan sim --port {port} --model m\"",
        )
        .replace("[endpoints.sim.sim]\nmodels = [\"m\"]\nttft_base = \"1ms\"\nitl_base = \"1ms\"\n", "");
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    run(&path, &out, &machine(dir.path(), "performance"));
    let json: Value = serde_json::from_str(&report(&out, "json")).unwrap();
    let endpoint = &json[0]["environment"]["endpoint"];
    let launch = endpoint["launch"].as_str().unwrap();
    // As written: a port chosen anew by each suite is no difference between two.
    assert_eq!(launch, "perfplan sim --port {port} --model m", "{endpoint}");
    assert_eq!(endpoint["server"]["engine"], "perfplan-sim", "{endpoint}");
    assert_eq!(endpoint["models"][0]["id"], "m", "{endpoint}");
}

/// A server that answers its model list and SGLang's `/get_server_info`, echoing the
/// credentials it was sent (as a careless server might) and holding a secret of its own,
/// and a DCGM exporter's page at `/dcgm` naming two GPUs.
async fn echoing_server() -> String {
    use axum::http::HeaderMap;
    use axum::routing::get;
    let list = serde_json::json!({"object": "list", "data": [{"id": "m", "owned_by": "me"}]});
    let dcgm = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100 80GB HBM3\"} 50\n\
                DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-b\",modelName=\"NVIDIA H100 80GB HBM3\"} 60\n";
    let app = axum::Router::new()
        .route("/dcgm", get(move || async move { dcgm }))
        .route(
            "/v1/models",
            get(move || async move { axum::Json(list.clone()) }),
        )
        .route(
            "/get_server_info",
            get(|headers: HeaderMap| async move {
                let h = |n: &str| {
                    headers
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string()
                };
                axum::Json(serde_json::json!({
                    "version": "0.4.6", "tp_size": 1,
                    "api_key": h("authorization"), "seen": h("authorization"),
                    "echo": h("x-api-key"), "hub": {"hf_token": "CANARY-hf-77aa11"},
                }))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn secrets_never_enter_the_environment() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let url = rt.block_on(echoing_server());
    let dir = tempfile::tempdir().unwrap();
    let plan = PLAN
        .replace(
            "base_url = \"sim://sim\"",
            &format!(
                "base_url = \"{url}\"\napi_key_env = \"PLAN_KEY_VAR\"\n\
                 headers = {{ X-Api-Key = \"${{PLAN_HEADER_VAR}}\" }}\n\
                 telemetry = {{ urls = [\"/dcgm\"] }}"
            ),
        )
        .replace(
            "[endpoints.sim.sim]\nmodels = [\"m\"]\nttft_base = \"1ms\"\nitl_base = \"1ms\"\n",
            "",
        );
    let path = dir.path().join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    let out = dir.path().join("out");
    let env = [
        ("PLAN_KEY_VAR", "CANARY-key-5e6f7a8b"),
        ("PLAN_HEADER_VAR", "CANARY-header-1c2d3e4f"),
        ("PERFPLAN_UNRELATED", "CANARY-env-9a8b7c6d"),
    ];
    let o = perfplan(
        &[
            "run",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &env,
    );
    let mut printed = text(&o);
    for format in ["table", "md", "json", "csv", "html"] {
        let file = out.join(format!("again.{format}"));
        let args = ["report", out.to_str().unwrap(), "--format", format];
        let o = perfplan(
            &[&args[..], &["--out", file.to_str().unwrap()]].concat(),
            &env,
        );
        printed.push_str(&text(&o));
    }
    let o = perfplan(
        &["compare", out.to_str().unwrap(), out.to_str().unwrap()],
        &env,
    );
    printed.push_str(&text(&o));
    assert!(!printed.contains("CANARY"), "{printed}");
    for file in files_under(&out) {
        let bytes = std::fs::read(&file).unwrap();
        if let Some(at) = bytes.windows(6).position(|w| w == b"CANARY") {
            let around = &bytes[at.saturating_sub(120)..(at + 60).min(bytes.len())];
            panic!(
                "{} holds a secret: …{}…",
                file.display(),
                String::from_utf8_lossy(around)
            );
        }
    }
    // The server was read: its version and flags are there, its secrets are not.
    let json: Value = serde_json::from_str(&report(&out, "json")).unwrap();
    let server = &json[0]["environment"]["endpoint"]["server"];
    assert_eq!(server["version"], "0.4.6", "{server}");
    assert_eq!(server["engine"], "sglang", "{server}");
    assert_eq!(server["fields"]["tp_size"], 1, "{server}");
    assert!(server["fields"].get("api_key").is_none(), "{server}");
    let endpoint = &json[0]["environment"]["endpoint"];
    assert_eq!(
        endpoint["accelerators"],
        serde_json::json!([{"model": "NVIDIA H100 80GB HBM3", "count": 2}]),
        "{endpoint}"
    );
    assert!(report(&out, "md").contains("2 × NVIDIA H100 80GB HBM3"));
    for echoed in ["seen", "echo"] {
        let v = server["fields"][echoed].as_str().unwrap();
        assert!(v.contains("<redacted>"), "{server}");
    }
}
