//! The traffic kinds end to end through the binary against simulators: multi-turn
//! conversations with prefix caching, trace replay timing and rewrites, image data URLs,
//! embeddings and rerank runs with reports and `compare`, and the file kinds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

mod cli_support;

use base64::Engine as _;
use cli_support::{perfplan, query, report_json, run};
use perfplan::sim::{SimConfig, SimServer};
use serde_json::{json, Value};

fn scenario(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

#[test]
fn multi_turn_later_turns_reuse_the_cached_context() {
    let dir = tempfile::tempdir().unwrap();
    let db = run(&scenario("multi-turn.toml"), dir.path());
    let runs = report_json(&db);
    assert_eq!(runs.len(), 2);
    let on = &runs[0]["metrics"];
    let off = &runs[1]["metrics"];
    assert_eq!(runs[0]["axes"]["endpoint"], json!("cache-on"));
    for m in [on, off] {
        assert!(m["ttft_first_turn_mean"].as_f64().unwrap() > 0.0);
        assert!(m["ttft_later_turns_mean"].as_f64().unwrap() > 0.0);
        assert_eq!(m["requests_ok"], json!(24));
    }
    assert!(on["cache_hit_ratio_later_turns"].as_f64().unwrap() > 0.4);
    assert_eq!(off["cache_hit_ratio_later_turns"], json!(0.0));
    // Per request: the turn index from the run's extras, the cached tokens from usage.
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    let extras: Vec<Vec<Option<String>>> = query(
        &db,
        &format!("SELECT extras_json FROM runs WHERE id = '{run_id}'"),
    );
    let extras: Value = serde_json::from_str(extras[0][0].as_deref().unwrap()).unwrap();
    let turns: Vec<u64> = extras["turn_of_item"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(turns.len(), 28, "4 warmup + 24 measured turns");
    assert!(turns.iter().all(|&t| t < 3));
    let rows: Vec<Vec<Option<i64>>> = query(
        &db,
        &format!(
            "SELECT item, prompt_tokens, cached_tokens FROM requests WHERE run_id = '{run_id}' ORDER BY item"
        ),
    );
    let mut later = 0;
    for row in rows {
        let (item, prompt, cached) = (row[0].unwrap(), row[1].unwrap(), row[2].unwrap());
        if turns[item as usize] == 0 {
            assert_eq!(cached, 0, "a first turn is new to the server");
            assert!(prompt >= 200);
        } else {
            later += 1;
            // Everything but the new user turn (200 words), the answer (16 tokens), their
            // markers and one partial block is found in the cache.
            assert!(
                cached >= prompt - 240,
                "turn {} of item {item}: {cached} cached of {prompt}",
                turns[item as usize]
            );
            assert!(prompt > 400, "later turns carry the earlier context");
        }
    }
    assert!(later >= 12, "{later} later turns");
    // The table shows first-turn vs later-turn TTFT.
    let o = perfplan(&["report", db.to_str().unwrap()]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("ttft_first_turn_mean") && table.contains("ttft_later_turns_mean"));
}

/// A trace of `n` records spanning `span`, alternating two recorded models, one pair out of order.
fn write_trace(path: &Path, n: usize, span: Duration) -> Vec<Value> {
    let mut lines = Vec::new();
    let gap = span.as_secs_f64() / (n - 1) as f64;
    for i in 0..n {
        let model = if i % 2 == 0 { "rec-a" } else { "rec-b" };
        let mut body = json!({"model": model, "messages": [{"role": "user", "content": format!("record {i}")}],
                              "temperature": 0.5, "max_tokens": 50});
        if i % 3 == 0 {
            body["stream"] = json!(true);
        }
        // Recorded headers: a session header is replayed, the endpoint's own header wins,
        // framing and secrets are left out.
        let headers = json!({"X-Session-Id": format!("sess-{}", i % 4), "x-priority": "recorded",
                             "Authorization": "Bearer prod-secret", "Content-Length": "999"});
        lines.push(
            json!({"timestamp": 1_700_000_000.0 + i as f64 * gap, "request_id": format!("r{i}"),
                          "completion_tokens": 4 + i % 3, "body": body, "headers": headers}),
        );
    }
    lines.swap(3, 4);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    lines
}

fn trace_plan(dir: &Path, base_url: &str, speed: f64, n: usize) -> PathBuf {
    let plan = format!(
        r#"
[plan]
name = "trace"
[endpoints.s]
base_url = "{base_url}"
headers = {{ x-priority = "endpoint" }}
[models.m]
served_name = "served-a"
[datasets.t]
kind = "trace"
path = "trace.jsonl"
speed = {speed}
model_mapping = {{ rec-a = "served-a", rec-b = "served-b" }}
match_output_length = true
[matrix]
load = {{ rate = 1, requests = {n} }}
"#
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, plan).unwrap();
    path
}

/// Replays `n` records over `span` at `speed`; the median and worst send lateness must
/// stay under the limits (ms).
fn replay(n: usize, span: Duration, speed: f64, median_limit_ms: i64, max_limit_ms: i64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cfg = SimConfig {
        models: vec!["served-a".into(), "served-b".into()],
        ttft_base: perfplan::units::HumanDuration(Duration::from_millis(2)),
        itl_base: perfplan::units::HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    };
    let sim = rt.block_on(SimServer::start(cfg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recorded = write_trace(&dir.path().join("trace.jsonl"), n, span);
    let plan = trace_plan(dir.path(), &sim.base_url(), speed, n);
    let db = run(&plan, &dir.path().join("out"));
    // Timing: the last request leaves at span / speed; each leaves on time.
    let rows: Vec<Vec<Option<i64>>> = query(
        &db,
        "SELECT intended_us, sent_us, item FROM requests WHERE outcome = 'ok' ORDER BY intended_us",
    );
    assert_eq!(rows.len(), n);
    let first = rows[0][1].unwrap();
    let last = rows[n - 1][1].unwrap();
    let want = span.as_secs_f64() / speed;
    let got = (last - first) as f64 / 1e6;
    eprintln!("replay of {n} records: {got:.3} s (want {want:.3} s)");
    assert!(
        (got - want).abs() < 0.2,
        "replay took {got} s, want {want} s"
    );
    let mut late: Vec<(i64, usize)> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r[1].unwrap() - r[0].unwrap(), i))
        .collect();
    late.sort_unstable();
    eprintln!(
        "median lateness {} µs; worst (µs, position): {:?}",
        late[n / 2].0,
        &late[n.saturating_sub(4)..]
    );
    assert!(
        late[n / 2].0 < median_limit_ms * 1000,
        "median lateness {} µs",
        late[n / 2].0
    );
    assert!(
        late[n - 1].0 < max_limit_ms * 1000,
        "lateness {} µs",
        late[n - 1].0
    );
    let runs = report_json(&db);
    assert!(runs[0]["metrics"]["lateness_p99"].as_f64().is_some());
    // Bodies: the recorded ones, models mapped, max_tokens/ignore_eos from the recording.
    let mut by_text = std::collections::HashMap::new();
    for l in &recorded {
        let text = l["body"]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_string();
        by_text.insert(text, l.clone());
    }
    let received = sim.received();
    let posts: Vec<_> = received.iter().filter(|r| r.body.is_object()).collect();
    assert_eq!(posts.len(), n);
    for r in posts {
        let text = r.body["messages"][0]["content"].as_str().unwrap();
        let rec = &by_text[text];
        let mut want = rec["body"].clone();
        let mapped = if want["model"] == json!("rec-a") {
            "served-a"
        } else {
            "served-b"
        };
        want["model"] = json!(mapped);
        want["max_tokens"] = rec["completion_tokens"].clone();
        want["ignore_eos"] = json!(true);
        assert_eq!(r.body, want);
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            header("x-session-id"),
            rec["headers"]["X-Session-Id"].as_str()
        );
        assert_eq!(header("x-priority"), Some("endpoint"));
        assert_eq!(header("authorization"), None);
        assert_ne!(header("content-length"), Some("999"));
    }
    // Each record's recorded request_id is kept with the run, by item (records sorted).
    let extras: Vec<Vec<Option<String>>> = query(&db, "SELECT extras_json FROM runs");
    let extras: Value = serde_json::from_str(extras[0][0].as_deref().unwrap()).unwrap();
    let ids = extras["trace_request_ids"].as_array().unwrap();
    assert_eq!(ids.len(), n);
    assert!(ids
        .iter()
        .enumerate()
        .all(|(i, id)| *id == json!(format!("r{i}"))));
    let warnings: Vec<Vec<Option<String>>> = query(&db, "SELECT warnings_json FROM runs");
    let warnings = warnings[0][0].clone().unwrap();
    assert!(
        warnings.contains("not replayed: authorization, content-length"),
        "{warnings}"
    );
    rt.block_on(sim.shutdown());
}

#[test]
fn trace_replays_at_recorded_offsets_with_rewrites() {
    // Generous bounds: the suite runs many processes on few cores at once, and a starved
    // client thread shows up as lateness (measured, not hidden).
    replay(60, Duration::from_secs(2), 2.0, 10, 500);
}

/// The issue's figure: 200 records over 20 s at speed 2 in 10 s ± 0.2 s, lateness < 10 ms.
#[test]
#[ignore = "takes 10 s; run with --ignored"]
fn trace_of_200_records_over_20s_replays_in_10s() {
    replay(200, Duration::from_secs(20), 2.0, 10, 10);
}

#[test]
fn trace_scenario_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = run(&scenario("trace-replay.toml"), dir.path());
    let runs = report_json(&db);
    assert_eq!(runs[0]["metrics"]["requests_ok"], json!(40));
}

fn decode_data_url(url: &str) -> (String, Vec<u8>) {
    let rest = url.strip_prefix("data:").unwrap();
    let (mime, b64) = rest.split_once(";base64,").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    (mime.to_string(), bytes)
}

fn image_size(mime: &str, bytes: &[u8]) -> (u32, u32) {
    match mime {
        "image/png" => {
            let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
                .read_info()
                .unwrap();
            let mut buf = vec![0; reader.output_buffer_size()];
            let info = reader.next_frame(&mut buf).unwrap();
            (info.width, info.height)
        }
        "image/jpeg" => {
            let mut d = jpeg_decoder::Decoder::new(bytes);
            d.decode().unwrap();
            let info = d.info().unwrap();
            (u32::from(info.width), u32::from(info.height))
        }
        other => panic!("unexpected image type {other}"),
    }
}

#[test]
fn image_plans_send_decodable_data_urls_of_the_configured_size() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let cfg = SimConfig {
        image_tokens: 50,
        ttft_base: perfplan::units::HumanDuration(Duration::from_millis(1)),
        itl_base: perfplan::units::HumanDuration(Duration::from_millis(1)),
        ..SimConfig::default()
    };
    let sim = rt.block_on(SimServer::start(cfg)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = format!(
        r#"
[plan]
name = "img"
[endpoints.s]
base_url = "{}"
[models.m]
served_name = "vl"
[datasets.png]
kind = "random_images"
width = 40
height = 30
format = "png"
images_per_request = 2
text_tokens = 8
[datasets.jpeg]
kind = "random_images"
width = 33
height = 17
format = "jpeg"
[defaults]
output_tokens = 4
ignore_eos = true
[matrix]
dataset = ["png", "jpeg"]
load = {{ concurrency = 2, requests = 4, warmup = 2 }}
"#,
        sim.base_url()
    );
    std::fs::write(dir.path().join("plan.toml"), plan).unwrap();
    let db = run(&dir.path().join("plan.toml"), &dir.path().join("out"));
    let received = sim.received();
    let posts: Vec<_> = received.iter().filter(|r| r.body.is_object()).collect();
    assert_eq!(posts.len(), 12);
    let mut seen = std::collections::HashSet::new();
    for (i, r) in posts.iter().enumerate() {
        let parts = r.body["messages"][0]["content"].as_array().unwrap();
        assert_eq!(parts[0]["type"], json!("text"));
        let urls: Vec<&str> = parts[1..]
            .iter()
            .map(|p| p["image_url"]["url"].as_str().unwrap())
            .collect();
        let (want_mime, want_size, want_n) = if i < 6 {
            ("image/png", (40, 30), 2)
        } else {
            ("image/jpeg", (33, 17), 1)
        };
        assert_eq!(urls.len(), want_n);
        for url in urls {
            let (mime, bytes) = decode_data_url(url);
            assert_eq!(mime, want_mime);
            assert_eq!(image_size(&mime, &bytes), want_size);
            seen.insert(bytes);
        }
    }
    assert_eq!(seen.len(), 12 + 6, "every image differs");
    // Request sizes are recorded; the server counts 50 tokens per image.
    let rows: Vec<Vec<Option<i64>>> =
        query(&db, "SELECT request_bytes, prompt_tokens FROM requests");
    assert!(rows.iter().all(|r| r[0].unwrap() > 400));
    assert!(rows.iter().any(|r| r[1].unwrap() >= 100));
    rt.block_on(sim.shutdown());
}

#[test]
fn image_scenario_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = run(&scenario("images.toml"), dir.path());
    for r in report_json(&db) {
        assert_eq!(r["metrics"]["requests_ok"], json!(8));
        assert!(r["metrics"]["input_tokens_mean"].as_f64().unwrap() > 128.0);
    }
}

#[test]
fn embedding_and_rerank_plans_run_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let a = run(&scenario("embeddings-rerank.toml"), &dir.path().join("a"));
    let b = run(&scenario("embeddings-rerank.toml"), &dir.path().join("b"));
    let runs = report_json(&a);
    assert_eq!(runs.len(), 2);
    for r in &runs {
        let m = &r["metrics"];
        assert_eq!(m["requests_ok"], json!(16));
        assert!(m["ttft_p50"].is_null(), "no TTFT for {}", r["axes"]);
        for k in [
            "latency_p50",
            "latency_p99",
            "rps",
            "input_tps",
            "inputs_per_s",
        ] {
            assert!(m[k].as_f64().unwrap() > 0.0, "{k} of {}", r["axes"]);
        }
    }
    let ratio = |r: &Value| {
        r["metrics"]["inputs_per_s"].as_f64().unwrap() / r["metrics"]["rps"].as_f64().unwrap()
    };
    assert!(
        (ratio(&runs[0]) - 8.0).abs() < 1e-6,
        "8 inputs per embedding request"
    );
    assert!(
        (ratio(&runs[1]) - 10.0).abs() < 1e-6,
        "10 documents per rerank request"
    );
    let rows: Vec<Vec<Option<i64>>> = query(&a, "SELECT count(*) FROM requests");
    assert_eq!(
        rows[0][0],
        Some(40),
        "16 measured + 4 warmup per run, stored"
    );
    let o = perfplan(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("embed-batch8") && out.contains("rerank-10docs"),
        "{out}"
    );
}

#[test]
fn file_kinds_read_conversations_embeddings_rerank_and_images() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("conv.jsonl"),
        concat!(
            r#"{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "tell me more"}]}"#,
            "\n",
            r#"{"conversations": [{"from": "human", "value": "one"}, {"from": "gpt", "value": "x"}, {"from": "human", "value": "two"}]}"#,
            "\n"
        ),
    )
    .unwrap();
    std::fs::write(d.join("inputs.txt"), "alpha beta\ngamma delta\nepsilon\n").unwrap();
    std::fs::write(
        d.join("rerank.jsonl"),
        r#"{"query": "what is rust", "documents": ["a language", "a metal oxide", "a colour"]}"#,
    )
    .unwrap();
    std::fs::create_dir(d.join("pics")).unwrap();
    for (i, fmt) in ["png", "jpeg"].iter().enumerate() {
        let f = perfplan::dataset::image_codec::ImageFormat::parse(fmt).unwrap();
        let rgb = perfplan::dataset::image_codec::pixels(8, 6, i as u64);
        let bytes = perfplan::dataset::image_codec::encode(f, 8, 6, &rgb).unwrap();
        std::fs::write(d.join("pics").join(format!("p{i}.{fmt}")), bytes).unwrap();
    }
    let plan = r#"
[plan]
name = "files"
[endpoints.s]
base_url = "sim://files"
[endpoints.s.sim]
ttft_base = "1ms"
itl_base = "1ms"
[models.m]
served_name = "m"
[datasets.conv]
kind = "conversations"
path = "conv.jsonl"
[datasets.emb]
kind = "embedding"
path = "inputs.txt"
batch_size = 2
[datasets.rr]
kind = "rerank"
path = "rerank.jsonl"
[datasets.pics]
kind = "images"
path = "pics"
[defaults]
output_tokens = 4
[matrix]
dataset = ["conv", "emb", "rr", "pics"]
api = ["chat", "embeddings", "rerank"]
exclude = [
  { dataset = "conv", api = "embeddings" }, { dataset = "conv", api = "rerank" },
  { dataset = "emb", api = "chat" }, { dataset = "emb", api = "rerank" },
  { dataset = "rr", api = "chat" }, { dataset = "rr", api = "embeddings" },
  { dataset = "pics", api = "embeddings" }, { dataset = "pics", api = "rerank" },
]
load = { concurrency = 2, requests = 6, warmup = 2 }
"#;
    std::fs::write(d.join("plan.toml"), plan).unwrap();
    let db = run(&d.join("plan.toml"), &d.join("out"));
    let runs = report_json(&db);
    assert_eq!(runs.len(), 4);
    for r in &runs {
        assert_eq!(r["status"], json!("done"), "{}", r["axes"]);
        assert_eq!(r["metrics"]["requests_ok"], json!(6), "{}", r["axes"]);
    }
    assert!(runs[0]["metrics"]["ttft_later_turns_mean"]
        .as_f64()
        .is_some());
}
