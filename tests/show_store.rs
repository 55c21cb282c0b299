//! `[plan] store = { bodies, text }` keeps each request's body and response text in
//! results.db, compressed; `perfplan show` prints one request with its timings and
//! outcome. Counts agree: one text per stored request, one body per item sent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

fn perfplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .output()
        .unwrap()
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
    flate2::read::ZlibDecoder::new(blob)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn bodies_and_texts_are_kept_compressed_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = perfplan(&[
        "run",
        plan(dir.path(), "store = { bodies = true, text = true }")
            .to_str()
            .unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    // Warm: 4 priming + 1 warmup + 4 measured requests; 5 items (warmup 1, measured 4).
    assert_eq!(count("SELECT COUNT(*) FROM requests"), 9);
    assert_eq!(count("SELECT COUNT(*) FROM response_texts"), 9);
    assert_eq!(count("SELECT COUNT(*) FROM request_bodies"), 5);
    let (text, n): (Vec<u8>, i64) = conn
        .query_row(
            "SELECT text, text_bytes FROM response_texts WHERE request_index = 6",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
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
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains(&format!("request   6 (item {item}, measured)")),
        "{shown}"
    );
    assert!(
        shown.contains("outcome   ok (HTTP 200, finish_reason length)"),
        "{shown}"
    );
    assert!(shown.contains("Tell me about lighthouses."), "{shown}");
    assert!(
        shown.contains(&format!("response text\n{text}\n")),
        "{shown}"
    );
    assert!(
        shown.contains("ttft ") && shown.contains("completion 6"),
        "{shown}"
    );
    let by_ordinal = perfplan(&[
        "show",
        out.to_str().unwrap(),
        "--run",
        "#1",
        "--request",
        "6",
    ]);
    assert_eq!(String::from_utf8_lossy(&by_ordinal.stdout), shown);
    let unknown = perfplan(&["show", out.to_str().unwrap(), "--run", "#9"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no run `#9`; the runs are #1 "));
    let missing = perfplan(&["show", out.to_str().unwrap(), "--request", "99"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr)
        .contains("has no request 99; its requests are 0 to 8"));
}

#[test]
fn without_store_nothing_is_kept_and_old_databases_still_show() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let run = perfplan(&[
        "run",
        plan(dir.path(), "").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    let db = out.join("results.db");
    {
        // As a database of an earlier version: no body tables (nor later columns), schema 6.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let n: i64 = conn
            .query_row("SELECT COUNT(*) FROM response_texts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0);
        conn.execute_batch(
            "DROP TABLE request_bodies; DROP TABLE response_texts; \
             ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; \
             ALTER TABLE requests DROP COLUMN tool_calls; \
             ALTER TABLE requests DROP COLUMN tool_calls_parsed; \
             ALTER TABLE requests DROP COLUMN read_clock; \
             ALTER TABLE requests DROP COLUMN first_read_delay_us; \
             ALTER TABLE requests DROP COLUMN end_read_delay_us; \
             ALTER TABLE requests DROP COLUMN max_read_delay_us; \
             ALTER TABLE suites DROP COLUMN environment_json; \
             ALTER TABLE requests DROP COLUMN chunk_tokens; \
             ALTER TABLE requests DROP COLUMN choice_chunks; \
             ALTER TABLE requests DROP COLUMN client_reasoning_tokens; \
             ALTER TABLE requests DROP COLUMN reasoning_tokens; \
             ALTER TABLE requests DROP COLUMN first_answer_us; \
             ALTER TABLE requests DROP COLUMN output_bytes; DROP TABLE telemetry; \
             ALTER TABLE requests DROP COLUMN class; ALTER TABLE requests DROP COLUMN replica; \
             ALTER TABLE requests DROP COLUMN tls_handshake_us; \
             ALTER TABLE requests DROP COLUMN tls_resumed; \
             ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; \
             PRAGMA user_version = 6;",
        )
        .unwrap();
    }
    let shown = perfplan(&["show", out.to_str().unwrap()]);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("(not stored: `[plan] store = { bodies = true }` keeps request bodies)"),
        "{shown}"
    );
    assert!(
        shown.contains("(not stored: `[plan] store = { text = true }` keeps response texts)"),
        "{shown}"
    );
    assert!(shown.contains("measured)"), "{shown}");
}

/// A WebDataset shard written here: two JPEGs with captions, and a member that is neither.
fn write_shard(dir: &Path) -> Vec<Vec<u8>> {
    use perfplan::dataset::image_codec::{encode, pixels, ImageFormat};
    std::fs::create_dir_all(dir).unwrap();
    let mut b = tar::Builder::new(std::fs::File::create(dir.join("test-000000.tar")).unwrap());
    let mut images = Vec::new();
    for (i, caption) in ["A dog on a beach.", "Two birds on a wire."]
        .iter()
        .enumerate()
    {
        let jpeg = encode(ImageFormat::Jpeg, 16, 16, &pixels(16, 16, i as u64)).unwrap();
        for (name, data) in [
            (format!("k{i}.jpg"), jpeg.clone()),
            (format!("k{i}.txt"), caption.as_bytes().to_vec()),
            (format!("k{i}.json"), b"{}".to_vec()),
        ] {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, &data[..]).unwrap();
        }
        images.push(jpeg);
    }
    b.finish().unwrap();
    images
}

#[test]
fn tar_shards_send_each_image_with_its_caption() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let images = write_shard(&dir.path().join("shards"));
    for (text, captions) in [
        ("", ["A dog on a beach.", "Two birds on a wire."]),
        ("text = \"Describe the image.\"", ["Describe the image."; 2]),
    ] {
        let plan = dir.path().join("images.toml");
        std::fs::write(
            &plan,
            format!(
                "[plan]\nname = \"vlm\"\nstore = {{ bodies = true }}\n[endpoints.s]\nbase_url = \"sim://s\"\n\
                 [models.m]\nserved_name = \"vl\"\n[datasets.f]\nkind = \"images\"\npath = \"shards\"\n{text}\n\
                 [defaults]\noutput_tokens = 2\n[matrix]\nload = {{ concurrency = 1, requests = 2 }}\n"
            ),
        )
        .unwrap();
        let out = dir.path().join(format!("out{}", text.len()));
        let run = perfplan(&[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let conn = rusqlite::Connection::open(out.join("results.db")).unwrap();
        let mut stmt = conn
            .prepare("SELECT body, body_bytes FROM request_bodies ORDER BY item")
            .unwrap();
        let bodies: Vec<serde_json::Value> = stmt
            .query_map([], |r| Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .map(|(b, n)| serde_json::from_slice(&unpack(&b, n as usize)).unwrap())
            .collect();
        let sent: Vec<(String, String)> = bodies
            .iter()
            .map(|b| {
                let parts = &b["messages"][0]["content"];
                (
                    parts[0]["text"].as_str().unwrap().to_string(),
                    parts[1]["image_url"]["url"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        // The requests draw the shard's samples in a seeded order: each pairs an image with its caption.
        for (caption, url) in &sent {
            let i = images
                .iter()
                .position(|jpeg| {
                    *url == format!(
                        "data:image/jpeg;base64,{}",
                        base64::engine::general_purpose::STANDARD.encode(jpeg)
                    )
                })
                .unwrap_or_else(|| panic!("an image not in the shard: {}", &url[..40]));
            assert_eq!(caption, captions[i]);
        }
        assert_eq!(sent.len(), 2);
    }
}
