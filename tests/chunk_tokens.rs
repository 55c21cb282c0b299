//! Chunks are not tokens, against the in-process simulator where the truth is known: a
//! special token's chunk without text (`empty_chunks`, as vLLM streams them under
//! `ignore_eos`) and several tokens in one chunk (`tokens_per_chunk`), read one token per
//! chunk or from the server's per-chunk usage (`continuous_usage`); reasoning apart from
//! the answer (`reasoning_tokens`). The per-token `itl_*` against `chunk_gap_*` and TPOT,
//! and the client's own count of what it received against the server's usage.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::Path;

use perfplan::record::TokenSource;
use perfplan::store::Store;
use serde_json::Value;

/// A plan of one simulated endpoint with `sim` settings, a fixed prompt, `output` tokens
/// under `ignore_eos`, and `rest` (defaults and matrix).
fn plan(dir: &Path, sim: &str, output: u32, rest: &str) -> std::path::PathBuf {
    let text = format!(
        "[plan]\nname = \"chunks\"\nseed = 5\n\
         [endpoints.sim]\nbase_url = \"sim://chunks\"\n\
         [endpoints.sim.sim]\nttft_base = \"5ms\"\nitl_base = \"4ms\"\n{sim}\n\
         [models.m]\n\
         [datasets.p]\nkind = \"prompt\"\ntext = \"tell me about chunks and tokens\"\n\
         [defaults]\noutput_tokens = {output}\nignore_eos = true\n{rest}"
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn metric(run: &Value, name: &str) -> f64 {
    run["metrics"][name]
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: {}", run["metrics"]))
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// Every 4th token a special token: 31 tokens arrive in 24 text chunks. Each gap between
/// text chunks brings its tokens, so the per-token ITL is the TPOT exactly (every token
/// after the first is in a gap), where the gaps between text chunks alone are 30/23 of
/// it; the client counts every chunk that brought a token, which is the server's usage.
#[test]
fn empty_chunks_are_tokens_and_itl_is_per_token() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = "[matrix]\napi = [\"chat\", \"completions\"]\n\
                  load = { concurrency = 2, requests = 12, warmup = 2 }\n";
    let path = plan(dir.path(), "empty_chunks = 4", 31, matrix);
    let db = cli_support::run(&path, &dir.path().join("out"));
    let runs = cli_support::report_json(&db);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let (itl, tpot, gap) = (
            metric(run, "itl_mean"),
            metric(run, "tpot_mean"),
            metric(run, "chunk_gap_mean"),
        );
        assert!(close(itl, tpot, 1e-6), "itl {itl} vs tpot {tpot}");
        assert!(
            close(gap, itl * 30.0 / 23.0, 1e-6),
            "gap {gap} vs itl {itl}"
        );
        // A per-request ratio, held to the micro-unit like every rate.
        assert!(close(
            metric(run, "tokens_per_chunk_mean"),
            31.0 / 24.0,
            1e-6
        ));
        assert_eq!(metric(run, "output_tokens_mean"), 31.0);
    }
    let store = Store::open(&db).unwrap();
    for run in store.runs().unwrap() {
        let chat = run.axes["api"] == "chat";
        for r in store.request_records(&run.id).unwrap() {
            let s = r.stream_tokens.as_ref().expect("a stream's counts");
            assert_eq!(s.source, TokenSource::Chunks);
            // Chat opens with a role chunk that carries no token.
            assert_eq!(s.choice_chunks, if chat { 32 } else { 31 });
            assert_eq!((r.content_times.len(), s.total), (24, 31));
            assert_eq!(r.received_output_tokens(), r.usage.completion_tokens);
        }
    }
}

/// Four tokens a chunk: read one token per chunk, the client sees 8 "tokens" and the
/// gaps as they are; with the server's per-chunk usage (`continuous_usage`) it knows
/// each chunk's 4 and spreads each gap over them: ITL = gap / 4, and its own count of
/// tokens received is the server's. `reject_fields` still keeps `stream_options` out.
#[test]
fn packed_chunks_are_counted_from_per_chunk_usage() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = "[matrix]\ncontinuous_usage = [false, true]\n\
                  api = [\"chat\", \"completions\"]\n\
                  load = { concurrency = 2, requests = 8, warmup = 1 }\n";
    let path = plan(dir.path(), "tokens_per_chunk = 4", 32, matrix);
    let db = cli_support::run(&path, &dir.path().join("out"));
    let runs = cli_support::report_json(&db);
    assert_eq!(runs.len(), 4);
    for run in &runs {
        let running = run["axes"]["continuous_usage"] == true;
        let (itl, gap) = (metric(run, "itl_mean"), metric(run, "chunk_gap_mean"));
        let per_chunk = if running { 4.0 } else { 1.0 };
        assert!(
            close(itl, gap / per_chunk, 1e-6),
            "{running}: itl {itl} gap {gap}"
        );
        assert!(close(gap, 16.0, 0.25), "four 4 ms tokens a chunk: {gap}");
        assert_eq!(metric(run, "tokens_per_chunk_mean"), 4.0);
    }
    let store = Store::open(&db).unwrap();
    for run in store.runs().unwrap() {
        let running = run.axes["continuous_usage"] == true;
        for r in store.request_records(&run.id).unwrap() {
            let s = r.stream_tokens.clone().unwrap();
            let want: Vec<u32> = match running {
                true => (1..=8).map(|k| 4 * k).collect(),
                false => (1..=8).collect(),
            };
            assert_eq!(s.at_content, want, "continuous_usage = {running}");
            let received = if running { 32 } else { 8 };
            assert_eq!(r.received_output_tokens(), Some(received));
            let source = [TokenSource::Chunks, TokenSource::Usage][usize::from(running)];
            assert_eq!(s.source, source);
        }
    }
    // A server that refuses `stream_options`: never sent, so counted from chunks.
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "[endpoints.sim.sim]",
        "reject_fields = [\"stream_options\"]\n[endpoints.sim.sim]",
    );
    std::fs::write(&path, text).unwrap();
    let db = cli_support::run(&path, &dir.path().join("rejected"));
    let store = Store::open(&db).unwrap();
    for run in store.runs().unwrap() {
        for r in store.request_records(&run.id).unwrap() {
            assert_eq!(r.stream_tokens.unwrap().source, TokenSource::Chunks);
            assert_eq!(r.usage.completion_tokens, None, "no usage asked for");
        }
    }
}

/// A reasoning answer: the server's `completion_tokens_details.reasoning_tokens` split
/// the output; the answer's throughput leaves the reasoning out; TTFO comes after it.
#[test]
fn reasoning_and_answer_tokens_are_counted_apart() {
    let dir = tempfile::tempdir().unwrap();
    let matrix = "[matrix]\nstream = [true, false]\n\
                  load = { concurrency = 2, requests = 8, warmup = 1 }\n";
    let path = plan(dir.path(), "reasoning_tokens = 8", 24, matrix);
    let db = cli_support::run(&path, &dir.path().join("out"));
    for run in cli_support::report_json(&db) {
        assert_eq!(metric(&run, "reasoning_tokens_mean"), 8.0);
        assert_eq!(metric(&run, "answer_tokens_mean"), 16.0);
        let (answer, output) = (metric(&run, "answer_tps"), metric(&run, "output_tps"));
        assert!(
            close(answer, output * 16.0 / 24.0, 1e-9),
            "{answer} {output}"
        );
        if run["axes"]["stream"] == true {
            let (ttft, ttfo) = (metric(&run, "ttft_mean"), metric(&run, "ttfo_mean"));
            assert!(
                ttfo >= ttft + 8.0 * 4.0 - 2.0,
                "8 reasoning tokens of 4 ms: {ttft} {ttfo}"
            );
        }
    }
    let store = Store::open(&db).unwrap();
    for run in store.runs().unwrap() {
        for r in store.request_records(&run.id).unwrap() {
            assert_eq!(r.usage.reasoning_tokens, Some(8));
            assert_eq!(r.answer_tokens(), Some(16));
        }
    }
}
