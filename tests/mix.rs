//! Workload mixes (`kind = "mix"`) against the in-process simulator with the SmolLM2
//! tokenizer: each request is drawn from one weighted class, sends that class's prompt,
//! output length and model, is stored with its class, and every class gets its own
//! metrics (and gates) beside the run's. Plus the plan errors a mix can have.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::{perfplan, query, report_json};
use perfplan::store::Store;
use serde_json::Value;

fn tokenizer() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

/// A plan with one simulator (prefill at 20,000 tokens/s), the models `base` and `lora`,
/// the datasets `chat` (64 tokens) and `rag` (1,024), then `body`.
fn write(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("plan.toml");
    let text = format!(
        "[plan]\nname = \"mix\"\nseed = 11\nstore = {{ bodies = true }}\n\
         [endpoints.sim]\nbase_url = \"sim://mix\"\n\
         [endpoints.sim.sim]\nttft_base = \"1ms\"\nitl_base = \"0ms\"\n\
         prefill_tokens_per_s = 20000\nprefix_cache = false\ntokenizer = \"{tok}\"\n\
         # The simulator answers at once (itl 0) and shares the test machine's cores.\n\
         [trust]\naccept = [\"stream_not_observed\", \"client_bound\"]\n\
         [models.base]\nserved_name = \"smollm2\"\ntokenizer = \"{tok}\"\n\
         [models.lora]\nserved_name = \"smollm2-lora\"\ntokenizer = \"{tok}\"\n\
         [datasets.chat]\nkind = \"random\"\ninput_tokens = 64\n\
         [datasets.rag]\nkind = \"random\"\ninput_tokens = 1024\n\
         [defaults]\noutput_tokens = 24\nignore_eos = true\n{body}",
        tok = tokenizer().display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

const PROD: &str = "[datasets.prod]\nkind = \"mix\"\nmix = [\n\
    { dataset = \"chat\", weight = 0.6 },\n\
    { dataset = \"rag\", weight = 0.3, output_tokens = 8 },\n\
    { dataset = \"chat\", name = \"support\", weight = 0.1, model = \"lora\" },\n]\n";

fn run_plan(plan: &Path, out: &Path) -> std::process::Output {
    perfplan(&[
        "run",
        plan.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
}

fn class_metric(classes: &Value, class: &str, metric: &str) -> f64 {
    classes[class]["metrics"][metric]
        .as_f64()
        .unwrap_or_else(|| panic!("{metric}@{class}: {}", classes[class]))
}

#[test]
fn each_class_sends_its_own_requests_and_gets_its_own_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{PROD}[matrix]\nmodel = \"base\"\ndataset = \"prod\"\n\
             load = [{{ concurrency = 4, requests = 300, warmup = 4 }}, \
             {{ concurrency = 2, duration = \"1s\", warmup = 2 }}]\n"
        ),
    );
    let out = dir.path().join("out");
    let o = run_plan(&plan, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("mix classes"), "{stdout}");
    let db = out.join("results.db");
    let runs = report_json(&db);
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let classes = &run["classes"];
        let names: Vec<&String> = classes.as_object().unwrap().keys().collect();
        assert_eq!(names, ["chat", "rag", "support"], "{classes}");
        // Each class's requests add up to the run's, in shares near their weights.
        let total: f64 = ["chat", "rag", "support"]
            .iter()
            .map(|c| classes[c]["requests"].as_f64().unwrap())
            .sum();
        assert_eq!(total, run["metrics"]["requests_ok"].as_f64().unwrap());
        if run["axes"]["load"]["requests"] == 300 {
            assert_eq!(total, 300.0);
            for (class, weight) in [("chat", 0.6), ("rag", 0.3), ("support", 0.1)] {
                let share = classes[class]["measured_share"].as_f64().unwrap();
                assert!(
                    (share - weight).abs() < 0.07,
                    "{class}: {share} vs {weight}"
                );
                let planned = classes[class]["planned_share"].as_f64().unwrap();
                assert!((planned - weight).abs() < 1e-9, "{planned}");
            }
        }
        // The class's own output length, prompt length and so its own TTFT.
        assert_eq!(class_metric(classes, "rag", "output_tokens_mean"), 8.0);
        assert_eq!(class_metric(classes, "chat", "output_tokens_mean"), 24.0);
        assert_eq!(class_metric(classes, "support", "output_tokens_mean"), 24.0);
        let (rag_in, chat_in) = (
            class_metric(classes, "rag", "input_tokens_mean"),
            class_metric(classes, "chat", "input_tokens_mean"),
        );
        assert!(rag_in > 1000.0 && chat_in < 120.0, "{rag_in} {chat_in}");
        let (rag, chat) = (
            class_metric(classes, "rag", "ttft_p50"),
            class_metric(classes, "chat", "ttft_p50"),
        );
        // 960 more prompt tokens at 20,000 tokens/s: 48 ms more before the first token.
        assert!(rag > chat + 30.0, "rag {rag} ms, chat {chat} ms");
        let run_ttft = run["metrics"]["ttft_p50"].as_f64().unwrap();
        assert!(
            chat <= run_ttft && run_ttft < rag,
            "{chat} {run_ttft} {rag}"
        );
    }
    // The page shows the classes' table and a CDF line per class.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<h2>Mix classes</h2>"), "no classes table");
    for chart in ["TTFT CDF by mix class", "latency CDF by mix class"] {
        assert!(html.contains(chart), "no {chart}");
    }
    assert!(
        html.contains("· rag") && html.contains("· support"),
        "a line per class"
    );
    // `report --by-class`: a CSV row per class of each run, any metric as its column.
    let csv = cli_support::stdout_of(&[
        "report",
        db.to_str().unwrap(),
        "--by-class",
        "--metrics",
        "ttft_p50,output_tokens_mean",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "run,class,dataset,model,weight,planned_share,measured_share,requests,ttft_p50,output_tokens_mean"
    );
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(
        lines[2].contains(",rag,rag,,0.3,") && lines[2].ends_with(",8"),
        "{csv}"
    );
    assert!(lines[3].contains(",support,chat,lora,0.1,"), "{csv}");
    // Every measured row keeps its class, and each class sent its own model.
    let store = Store::open(&out).unwrap();
    let run_id = runs[0]["id"].as_str().unwrap();
    let rows = query::<i64>(
        &db,
        &format!(
            "SELECT class, request_index, item FROM requests WHERE run_id = '{run_id}' \
             AND phase = 'measured'"
        ),
    );
    assert_eq!(rows.len(), 300);
    for row in rows {
        let class = row[0].expect("every row of a mix has its class");
        let body = store
            .stored_content(run_id, row[1].unwrap() as u64, row[2].unwrap() as u64)
            .unwrap()
            .body
            .unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        let (model, limit) = match class {
            0 => ("smollm2", 24),
            1 => ("smollm2", 8),
            2 => ("smollm2-lora", 24),
            other => panic!("class {other}"),
        };
        assert_eq!(body["model"], model, "class {class}");
        assert_eq!(body["max_tokens"], limit, "class {class}");
    }
}

#[test]
fn a_class_gate_holds_one_class_to_its_own_objective() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{PROD}[matrix]\nmodel = \"base\"\ndataset = [\"chat\", \"prod\"]\n\
             load = {{ concurrency = 2, requests = 40, warmup = 2 }}\n\
             [gates]\n\"ttft_p50@chat\" = \"<= 1s\"\n\"ttft_p50@rag\" = \"<= 5ms\"\n\
             [report]\nmetrics = [\"ttft_p50\", \"ttft_p50@rag\"]\n"
        ),
    );
    // `expand` shows each mix run's classes.
    let expanded = cli_support::stdout_of(&["expand", plan.to_str().unwrap()]);
    assert!(
        expanded.contains("chat 0.6, rag 0.3 (out 8), support 0.1 (chat, lora)"),
        "{expanded}"
    );
    let out = dir.path().join("out");
    let o = run_plan(&plan, &out);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(!o.status.success(), "the rag gate must fail: {stdout}");
    // A class's metric is a column of the pivot like any other (empty for the chat run).
    assert!(stdout.contains("ttft_p50@rag (ms)"), "{stdout}");
    // Each class gate checks the mix run only, against its class's own value.
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("ttft_p50@") && l.contains('#'))
        .collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines.iter().all(|l| l.contains("dataset=prod")), "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("ttft_p50@chat") && l.contains("pass")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("ttft_p50@rag") && l.contains("FAIL")),
        "{stdout}"
    );
}

/// `expand`'s stderr for a plan with `body`.
fn expand_errors(body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(dir.path(), body);
    let o = perfplan(&["expand", plan.to_str().unwrap()]);
    assert!(!o.status.success(), "{body}");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_mix_that_cannot_be_sent_is_a_located_error() {
    let matrix = "[matrix]\nmodel = \"base\"\ndataset = \"prod\"\nload = { concurrency = 1, requests = 4 }\n";
    let cases = [
        (
            "{ dataset = \"chta\", weight = 1 }",
            "`chta` is not a defined dataset",
            "did you mean `chat`?",
        ),
        (
            "{ dataset = \"chat\", weight = 1, model = \"lroa\" }",
            "`lroa` is not a defined model",
            "did you mean `lora`?",
        ),
        (
            "{ dataset = \"chat\", weight = 1 }, { dataset = \"chat\", weight = 2 }",
            "two classes are named `chat`",
            "mix = [",
        ),
        (
            "{ dataset = \"chat\", weight = -1 }",
            "out of range in `datasets.prod.mix[0].weight`",
            "mix = [",
        ),
        (
            "{ dataset = \"prod\", weight = 1 }",
            "cannot be a class of a mix (a mix cannot hold a mix)",
            "mix = [",
        ),
        (
            "{ dataset = \"chat\", weight = 1, name = \"a b\" }",
            "class name `a b` may hold only",
            "mix = [",
        ),
        ("{ dataset = \"chat\", wieght = 1 }", "wieght", "mix = ["),
    ];
    for (classes, message, shown) in cases {
        let body = format!("[datasets.prod]\nkind = \"mix\"\nmix = [{classes}]\n{matrix}");
        let err = expand_errors(&body);
        assert!(err.contains(message), "{classes}: {err}");
        assert!(err.contains(shown), "{classes}: {err}");
        assert!(err.contains("plan.toml:"), "not located: {err}");
    }
    // A class gate names a class some mix has.
    let err = expand_errors(&format!(
        "{PROD}{matrix}[gates]\n\"ttft_p99@ragg\" = \"<= 1s\"\n"
    ));
    assert!(
        err.contains("`ttft_p99@ragg`: no mix in [datasets] has a class `ragg`")
            && err.contains("`@rag`"),
        "{err}"
    );
    // `mix` chooses the dataset, so it is no axis.
    let err = expand_errors(&format!(
        "{PROD}[matrix]\nmodel = \"base\"\ndataset = \"prod\"\nmix = [{{ dataset = \"chat\", weight = 1 }}]\n\
         load = {{ concurrency = 1, requests = 4 }}\n"
    ));
    assert!(err.contains("unknown key `mix` in `matrix`"), "{err}");
}

#[test]
fn sharded_mix_runs_merge_into_the_same_classes() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{PROD}[matrix]\nmodel = \"base\"\ndataset = \"prod\"\n\
             load = {{ concurrency = 2, requests = 60, warmup = 2 }}\n"
        ),
    );
    let whole = dir.path().join("whole");
    assert!(run_plan(&plan, &whole).status.success());
    let mut shards = Vec::new();
    for k in 1..=2 {
        let out = dir.path().join(format!("shard{k}"));
        let o = perfplan(&[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--shard",
            &format!("{k}/2"),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        shards.push(out);
    }
    let merged = dir.path().join("merged");
    let o = perfplan(&[
        "merge",
        merged.to_str().unwrap(),
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (whole, merged) = (
        report_json(&whole.join("results.db")),
        report_json(&merged.join("results.db")),
    );
    // The shards sent the one request list between them: the same requests per class,
    // each with its class's own output length.
    for class in ["chat", "rag", "support"] {
        let (a, b) = (&whole[0]["classes"][class], &merged[0]["classes"][class]);
        assert_eq!(a["requests"], b["requests"], "{class}: {a} vs {b}");
        assert_eq!(
            a["metrics"]["output_tokens_mean"], b["metrics"]["output_tokens_mean"],
            "{class}"
        );
        assert!(b["metrics"]["ttft_p50"].as_f64().is_some(), "{class}: {b}");
    }
    // `compare` takes a class's metrics by name, judged on that class's own rows.
    let o = perfplan(&[
        "compare",
        dir.path().join("whole").to_str().unwrap(),
        dir.path().join("merged").to_str().unwrap(),
        "--metrics",
        "ttft_p50,ttft_p50@rag,ttft_p50@chat,output_tokens_mean@rag",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let cmp: Value = serde_json::from_slice(&o.stdout).unwrap();
    let deltas = &cmp["pairs"][0]["metrics"];
    let rag = &deltas["ttft_p50@rag"];
    // The class's own TTFT (48 ms of prefill more than a chat request's; held against the
    // chat class, not the run's median, which the draw of classes decides: a plan's path
    // is in its run id, so the draw differs by checkout), with a bootstrap interval from
    // the class's rows on each side.
    let chat = deltas["ttft_p50@chat"]["base"].as_f64().unwrap();
    assert!(rag["base"].as_f64().unwrap() > chat + 30.0, "{deltas}");
    assert!(deltas["ttft_p50"]["base"].as_f64().is_some(), "{deltas}");
    assert!(
        rag["ci_low"].as_f64().is_some() && rag["beyond_noise"] == false,
        "{rag}"
    );
    assert_eq!(deltas["output_tokens_mean@rag"]["delta"], 0.0);
}

/// A tokenizer of one token per character, in `dir`.
fn word_tokenizer(dir: &Path) -> PathBuf {
    let folder = dir.join("words");
    std::fs::create_dir_all(&folder).unwrap();
    let json = serde_json::json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "."}, "behavior": "Isolated", "invert": false},
        "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1}, "unk_token": "[UNK]"}
    });
    std::fs::write(folder.join("tokenizer.json"), json.to_string()).unwrap();
    folder
}

#[test]
fn a_class_of_another_model_counts_unreported_output_with_its_own_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let words = word_tokenizer(dir.path());
    let plan = write(
        dir.path(),
        &format!(
            "[models.words]\nserved_name = \"words\"\ntokenizer = \"{}\"\n\
             [datasets.hello]\nkind = \"prompt\"\ntext = \"hello\"\n\
             [datasets.two]\nkind = \"mix\"\nmix = [{{ dataset = \"chat\", weight = 1 }}, \
             {{ dataset = \"hello\", weight = 1, model = \"words\" }}]\n\
             [matrix]\nmodel = \"base\"\ndataset = \"two\"\n\
             load = {{ concurrency = 2, requests = 40, warmup = 2 }}\n",
            words.display()
        ),
    );
    // The simulator sends no usage: every output is counted by the client.
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "prefix_cache = false\n",
        "prefix_cache = false\nusage = \"never\"\n",
    );
    std::fs::write(&plan, text).unwrap();
    let out = dir.path().join("out");
    let o = run_plan(&plan, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&out.join("results.db"));
    let classes = &runs[0]["classes"];
    let chat = class_metric(classes, "chat", "output_tokens_mean");
    let hello = class_metric(classes, "hello", "output_tokens_mean");
    // The run's model counts the 24 tokens the simulator sent; the class's own model's
    // tokenizer (a token per character) counts the same kind of text as many more.
    assert_eq!(chat, 24.0);
    assert!(hello > 60.0, "hello: {hello}");
}

/// A mix of `random` classes plans its hit ratio class by class (each class's shared
/// prefix after its first request, the chat template's opening in every prompt after
/// the first of its class), and a cache-on simulator with the SmolLM2 template measures
/// it: the run's and each class's.
#[test]
fn a_mix_of_random_classes_gets_its_planned_hit_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "[datasets.sys]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = 128\n\
         [datasets.long]\nkind = \"random\"\ninput_tokens = 512\nprefix_tokens = 384\n\
         prefix_groups = 2\n\
         [datasets.both]\nkind = \"mix\"\nmix = [{ dataset = \"sys\", weight = 2 }, \
         { dataset = \"long\", weight = 1 }]\n\
         [matrix]\nmodel = \"base\"\ndataset = \"both\"\n\
         load = { concurrency = 1, requests = 48, warmup = 0 }\n",
    );
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "prefix_cache = false\n",
        "prefix_cache = true\nblock_size = 16\n",
    );
    std::fs::write(&plan, text).unwrap();
    let out = dir.path().join("out");
    let o = run_plan(&plan, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&out.join("results.db"));
    let m = &runs[0]["metrics"];
    let planned = m["planned_prefix_share"].as_f64().expect("a planned share");
    let measured = m["server_cache_hit_ratio"]
        .as_f64()
        .expect("the server's ratio");
    // The margin of tests/prefix_groups.rs (whole 16-token blocks cached; a class's
    // first request finds the opening another class's request cached, which the plan
    // does not count).
    assert!(
        (planned - measured).abs() < 0.02,
        "planned {planned}, measured {measured}"
    );
    let classes = &runs[0]["classes"];
    for c in ["sys", "long"] {
        let metric = |name: &str| classes[c]["metrics"][name].as_f64().unwrap();
        let (p, m) = (metric("planned_prefix_share"), metric("cache_hit_ratio"));
        assert!((p - m).abs() < 0.02, "{c}: planned {p}, measured {m}");
    }
    let long = classes["long"]["metrics"]["planned_prefix_share"]
        .as_f64()
        .unwrap();
    assert!(
        long > planned + 0.05,
        "the long class shares more: {long} vs {planned}"
    );
}

/// `perfplan check` asks the server's model list for every model the runs send, a mix
/// class's too: a LoRA adapter the server does not serve is named before the run.
#[test]
fn check_names_a_class_model_the_server_does_not_list() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{PROD}[matrix]\nmodel = \"base\"\ndataset = \"prod\"\n\
             load = {{ concurrency = 1, requests = 4 }}\n"
        ),
    );
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "prefix_cache = false\n",
        "prefix_cache = false\nmodels = [\"smollm2\"]\n",
    );
    std::fs::write(&plan, text).unwrap();
    let o = perfplan(&["check", plan.to_str().unwrap()]);
    // The table's words in order, its borders left out (a long detail wraps the advice).
    let out = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter(|w| !["│", "┆"].contains(w))
        .collect::<Vec<_>>()
        .join(" ");
    assert!(out.contains("`smollm2` is served"), "{out}");
    assert!(out.contains("`smollm2-lora` is not among smollm2"), "{out}");
    assert!(out.contains("served_name of model `lora`"), "{out}");
}

/// A class drawn for no measured request is said with the run: its metrics are unknown.
#[test]
fn a_class_with_no_request_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        "[datasets.thin]\nkind = \"mix\"\nmix = [{ dataset = \"chat\", weight = 1 }, \
         { dataset = \"rag\", name = \"rare\", weight = 0.0001 }]\n\
         [matrix]\nmodel = \"base\"\ndataset = \"thin\"\n\
         load = { concurrency = 1, requests = 6 }\n",
    );
    let out = dir.path().join("out");
    let o = run_plan(&plan, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs = report_json(&out.join("results.db"));
    let warnings = runs[0]["warnings"].to_string();
    assert!(
        warnings.contains(
            "mix class `rare` (weight 0.0001 of 1.0001) was drawn for none of the run's 6"
        ),
        "{warnings}"
    );
    assert_eq!(runs[0]["classes"]["rare"]["requests"], 0);
    assert!(runs[0]["classes"]["rare"]["metrics"]["ttft_p50"].is_null());
}
