//! `[plan] store = { bodies, text }` keeps each request's body and response text in
//! results.db, compressed; `perfplan show` prints one request with its timings and
//! outcome. Counts agree: one text per stored request, one body per item sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan")).args(args).output().unwrap()
}

fn plan(dir: &Path, store: &str) -> std::path::PathBuf {
    let path = dir.join("plan.toml");
    std::fs::write(
        &path,
        format!(
            r#"[plan]
name = "keep"
{store}

[endpoints.s]
base_url = "sim://s"

[models.m]
served_name = "m"

[datasets.p]
kind = "prompt"
text = "Tell me about lighthouses."

[defaults]
output_tokens = 6
ignore_eos = true

[matrix]
cache_state = "warm"
load = {{ concurrency = 2, requests = 4, warmup = 1 }}
"#
        ),
    )
    .unwrap();
    path
}

fn unpack(blob: &[u8], bytes: usize) -> Vec<u8> {
    if blob.len() == bytes {
        return blob.to_vec();
    }
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(blob).read_to_end(&mut out).unwrap();
    out
}

#[test]
fn bodies_and_texts_are_kept_compressed_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = perfplan(&["run", plan(dir.path(), "store = { bodies = true, text = true }").to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    // Warm: 4 priming + 1 warmup + 4 measured requests; 5 items (warmup 1, measured 4).
    assert_eq!(count("SELECT COUNT(*) FROM requests"), 9);
    assert_eq!(count("SELECT COUNT(*) FROM response_texts"), 9);
    assert_eq!(count("SELECT COUNT(*) FROM request_bodies"), 5);
    let (text, n): (Vec<u8>, i64) = conn
        .query_row("SELECT text, text_bytes FROM response_texts WHERE request_index = 6", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    let text = String::from_utf8(unpack(&text, n as usize)).unwrap();
    assert!(!text.is_empty());
    let (body, n, item): (Vec<u8>, i64, i64) = conn
        .query_row(
            "SELECT b.body, b.body_bytes, q.item FROM requests q JOIN request_bodies b \
             ON b.run_id = q.run_id AND b.item = q.item WHERE q.request_index = 6",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&unpack(&body, n as usize)).unwrap();
    assert_eq!(body["model"], "m");
    assert_eq!(body["max_tokens"], 6);
    let shown = perfplan(&["show", out.to_str().unwrap(), "--request", "6"]);
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains(&format!("request   6 (item {item}, measured)")), "{shown}");
    assert!(shown.contains("outcome   ok (HTTP 200, finish_reason length)"), "{shown}");
    assert!(shown.contains("Tell me about lighthouses."), "{shown}");
    assert!(shown.contains(&format!("response text\n{text}\n")), "{shown}");
    assert!(shown.contains("ttft ") && shown.contains("completion 6"), "{shown}");
    let missing = perfplan(&["show", out.to_str().unwrap(), "--request", "99"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("has no request 99; its requests are 0 to 8"));
}

#[test]
fn without_store_nothing_is_kept_and_old_databases_still_show() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = perfplan(&["run", plan(dir.path(), "").to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(run.status.success());
    let db = out.join("results.db");
    {
        // As a database of the previous version: no body tables, schema 3.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let n: i64 = conn.query_row("SELECT COUNT(*) FROM response_texts", [], |r| r.get(0)).unwrap();
        assert_eq!(n, 0);
        conn.execute_batch("DROP TABLE request_bodies; DROP TABLE response_texts; PRAGMA user_version = 3;").unwrap();
    }
    let shown = perfplan(&["show", out.to_str().unwrap()]);
    assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("(not stored: `[plan] store = { bodies = true }` keeps request bodies)"), "{shown}");
    assert!(shown.contains("(not stored: `[plan] store = { text = true }` keeps response texts)"), "{shown}");
    assert!(shown.contains("measured)"), "{shown}");
}
