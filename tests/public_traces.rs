//! The public traces (`trace` with `format = "mooncake" | "burstgpt" | "azure"`) over real
//! HTTP against the in-process simulator with the SmolLM2 tokenizer and chat template:
//! every prompt is exactly the record's input length as the server counts it, every
//! answer its output length, records leave at their recorded offsets, Mooncake's
//! `hash_ids` give the planned hit ratio the cache-on simulator measures, and a bad line
//! is located before any request.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use perfplan::store::{Store, StoredRun};

/// How close the measured hit ratio comes to the planned one (the brief's bound).
const MARGIN: f64 = 0.02;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    root()
        .join("tests/fixtures/traces")
        .join(name)
        .display()
        .to_string()
}

/// A plan replaying `dataset` (its keys) on a cache-on simulator with 16-token blocks.
fn write(dir: &Path, dataset: &str) -> PathBuf {
    write_with(dir, "", dataset)
}

/// `write` with more `[defaults]` keys.
fn write_with(dir: &Path, defaults: &str, dataset: &str) -> PathBuf {
    let tok = root().join("tests/fixtures/smollm2");
    let text = format!(
        "[plan]\nname = \"public\"\nseed = 7\n\
         [endpoints.sim]\nbase_url = \"sim://public\"\nprefix_cache = \"on\"\n\
         [endpoints.sim.sim]\nttft_base = \"1ms\"\nitl_base = \"0ms\"\n\
         prefill_tokens_per_s = 10000000\nprefix_cache = true\nblock_size = 16\n\
         cache_blocks = 100000\ntokenizer = \"{tok}\"\nmodels = [\"smollm2\", \"gpt4\"]\n\
         [models.smollm2]\ntokenizer = \"{tok}\"\n\
         [defaults]\ntemperature = 0.0\n{defaults}\
         [datasets.trace]\nkind = \"trace\"\n{dataset}\n\
         [matrix]\nload = {{ requests = 100 }}\n",
        tok = tok.display()
    );
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn one_run(plan: &Path, out: &Path) -> (StoredRun, Vec<perfplan::record::RequestRecord>) {
    let db = cli_support::run(plan, out);
    let store = Store::open(&db).unwrap();
    let mut runs = store.runs().unwrap();
    assert_eq!(runs.len(), 1);
    let run = runs.remove(0);
    let mut records = store.request_records(&run.id).unwrap();
    records.sort_by_key(|r| r.item);
    (run, records)
}

fn metric(run: &StoredRun, name: &str) -> f64 {
    run.metrics
        .get(name)
        .copied()
        .flatten()
        .unwrap_or_else(|| panic!("{name} of {}: {:?}", run.id, run.metrics))
}

/// The (input, output) lengths of a fixture's records, in file order.
fn lengths(rows: &[(u32, u32)], records: &[perfplan::record::RequestRecord]) {
    assert_eq!(records.len(), rows.len());
    for (r, (input, output)) in records.iter().zip(rows) {
        assert_eq!(r.outcome, perfplan::record::Outcome::Ok, "{r:?}");
        assert_eq!(r.usage.prompt_tokens, Some(*input), "item {}", r.item);
        assert_eq!(r.client_input_tokens, Some(*input), "item {}", r.item);
        assert_eq!(r.usage.completion_tokens, Some(*output), "item {}", r.item);
    }
}

fn mooncake_rows() -> Vec<(u32, u32, u64)> {
    std::fs::read_to_string(fixture("mooncake.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let n = |k: &str| v[k].as_u64().unwrap();
            (
                n("input_length") as u32,
                n("output_length") as u32,
                n("timestamp"),
            )
        })
        .collect()
}

#[test]
fn a_mooncake_excerpt_is_token_exact_on_time_and_hits_the_planned_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "path = \"{}\"\nformat = \"mooncake\"\nspeed = 4.0\n",
            fixture("mooncake.jsonl")
        ),
    );
    let (run, records) = one_run(&plan, &dir.path().join("out"));
    let rows = mooncake_rows();
    let io: Vec<(u32, u32)> = rows.iter().map(|(i, o, _)| (*i, *o)).collect();
    lengths(&io, &records);
    // Due at the recorded offsets divided by the speed (8.3 s of trace in about 2.1 s),
    // and sent then.
    for (r, (_, _, ms)) in records.iter().zip(&rows) {
        let due = *ms as f64 / 4.0;
        let intended = r.intended.as_secs_f64() * 1e3 - records[0].intended.as_secs_f64() * 1e3;
        assert!(
            (intended - due).abs() < 1.0,
            "item {} due at {intended} ms, not {due}",
            r.item
        );
        assert!(
            r.lateness().as_millis() < 50,
            "item {} late by {:?}",
            r.item,
            r.lateness()
        );
    }
    let lateness = metric(&run, "lateness_p99");
    eprintln!("mooncake: lateness p99 {lateness} ms");
    assert!(lateness < 20.0, "lateness p99 {lateness} ms");
    let (planned, measured) = (
        metric(&run, "planned_prefix_share"),
        metric(&run, "cache_hit_ratio"),
    );
    eprintln!("mooncake: planned {planned:.4}, measured {measured:.4}");
    assert!(planned > 0.3, "the excerpt's ids share a lot: {planned}");
    assert!(
        (planned - measured).abs() < MARGIN,
        "planned {planned} measured {measured}"
    );
    let names: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    assert!(!names.iter().any(|w| w.starts_with("cache_")), "{names:?}");
}

/// The trace's planned ratio joins the cache verdicts: a simulator whose cache holds
/// 32 blocks (512 tokens) finds far less than the trace shares, and the run says so.
#[test]
fn a_cache_too_small_for_the_trace_is_a_shortfall() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "path = \"{}\"\nformat = \"mooncake\"\nspeed = 8.0\n",
            fixture("mooncake.jsonl")
        ),
    );
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(
        &plan,
        text.replace("cache_blocks = 100000", "cache_blocks = 32"),
    )
    .unwrap();
    let (run, _) = one_run(&plan, &dir.path().join("out"));
    let (planned, measured) = (
        metric(&run, "planned_prefix_share"),
        metric(&run, "cache_hit_ratio"),
    );
    assert!(
        measured < planned - 0.1,
        "planned {planned} measured {measured}"
    );
    let names: Vec<String> = run.warnings.iter().map(ToString::to_string).collect();
    assert!(
        names.iter().any(|w| w.starts_with("cache_shortfall")),
        "{names:?}"
    );
}

#[test]
fn burstgpt_and_azure_rows_are_token_exact_with_their_models_mapped() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "path = \"{}\"\nformat = \"burstgpt\"\nspeed = 10.0\nmodel_mapping = {{ GPT-4 = \"gpt4\" }}\n",
            fixture("burstgpt.csv")
        ),
    );
    let (_, records) = one_run(&plan, &dir.path().join("out"));
    // A recorded answer of 0 tokens (a failed request) asks for one.
    let rows = [
        (472, 18),
        (1087, 40),
        (215, 32),
        (36, 12),
        (640, 1),
        (318, 25),
        (901, 16),
        (122, 48),
        (77, 9),
        (560, 30),
    ];
    lengths(&rows, &records);
    // The simulator serves `smollm2` and `gpt4` only: GPT-4's rows went to `gpt4`
    // (mapped), ChatGPT's to the run's model (unmapped), or they would have failed.

    // Azure: the window keeps records 2 s to 3.5 s after the first (items 3 to 5).
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "path = \"{}\"\nformat = \"azure\"\nspeed = 2.0\nfrom = \"1s\"\nto = \"3s\"\n",
            fixture("azure-conv.csv")
        ),
    );
    let (_, records) = one_run(&plan, &dir.path().join("out"));
    lengths(&[(879, 45), (91, 23), (1143, 12), (268, 77)], &records);

    // `match_output_length = false`: the plan's own output length instead.
    let dir = tempfile::tempdir().unwrap();
    let plan = write_with(
        dir.path(),
        "output_tokens = 3\nignore_eos = true\n",
        &format!(
            "path = \"{}\"\nformat = \"azure\"\nspeed = 8.0\nmatch_output_length = false\n",
            fixture("azure-conv.csv")
        ),
    );
    let (_, records) = one_run(&plan, &dir.path().join("out"));
    let inputs = [374, 396, 879, 91, 1143, 268, 552, 1429];
    lengths(&inputs.map(|i| (i, 3)), &records);
}

#[test]
fn bad_lines_and_keys_are_located_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
         0,ChatGPT,12,3,15,Conversation log\n1,ChatGPT,many,3,3,Conversation log\n",
    )
    .unwrap();
    let plan = write(
        dir.path(),
        &format!("path = \"{}\"\nformat = \"burstgpt\"\n", bad.display()),
    );
    let out = cli_support::perfplan(&["validate", plan.to_str().unwrap()]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("bad.csv:3"), "{text}");
    assert!(text.contains("`Request tokens` \"many\""), "{text}");

    for (keys, says) in [
        ("format = \"moon_cake\"\n", "did you mean `mooncake`?"),
        (
            "format = \"mooncake\"\nblock_size = 0\n",
            "must be from 1 to 65536",
        ),
        (
            "format = \"azure\"\nblock_size = 16\n",
            "applies to `format = \"mooncake\"` only",
        ),
        (
            "format = \"azure\"\nfrom = \"2s\"\nto = \"1s\"\n",
            "the window is empty",
        ),
    ] {
        let plan = write(
            dir.path(),
            &format!("path = \"{}\"\n{keys}", fixture("mooncake.jsonl")),
        );
        let out = cli_support::perfplan(&["validate", plan.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stderr).to_string()
            + &String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{text}");
        assert!(text.contains(says), "{keys}: {text}");
        assert!(text.contains("plan.toml:"), "located: {text}");
    }
    // Prompts are synthesised with the model's tokenizer: a model without one is refused.
    let plan = write(
        dir.path(),
        &format!(
            "path = \"{}\"\nformat = \"azure\"\n",
            fixture("azure-conv.csv")
        ),
    );
    let text = std::fs::read_to_string(&plan).unwrap();
    let cut = text.replacen(
        &format!(
            "[models.smollm2]\ntokenizer = \"{}\"",
            root().join("tests/fixtures/smollm2").display()
        ),
        "[models.smollm2]\nserved_name = \"smollm2\"",
        1,
    );
    assert_ne!(cut, text);
    std::fs::write(&plan, cut).unwrap();
    let out = cli_support::perfplan(&["validate", plan.to_str().unwrap()]);
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("a trace of `format"), "{text}");
}
