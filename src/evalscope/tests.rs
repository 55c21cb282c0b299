//! Every parameter of the reference's `evalscope perf` parameter list: known to the
//! table, and either changing the plan or named in a note. Plus the conversions whose
//! details matter: paired lists, SLA criteria, `--query-template`, several commands.

use serde_json::{json, Map, Value};

use super::{import, params, Imported};

/// The reference's parameter list, section by section, with a sample use (and the
/// flags it needs beside it).
const REFERENCE: &[(&str, &str)] = &[
    ("--model", "--model other/Model-X"),
    ("--url", "--url http://10.0.0.1:9000/v1/completions"),
    ("--name", "--name my-run"),
    ("--api", "--api openai_embedding --dataset random_embedding"),
    ("--port", "--api local_vllm --port 8801"),
    ("--attn-implementation", "--attn-implementation sdpa"),
    ("--api-key", "--api-key sk-123"),
    ("--debug", "--debug"),
    ("--total-timeout", "--total-timeout 21600"),
    ("--connect-timeout", "--connect-timeout 120"),
    ("--read-timeout", "--read-timeout 120"),
    ("--headers", "--headers X-Tag=exp Authorization=abc"),
    ("--no-test-connection", "--no-test-connection"),
    ("--parallel", "--parallel 2 --number 1000"),
    ("--number", "--number 20"),
    ("--rate", "--rate 5"),
    ("--log-every-n-query", "--log-every-n-query 10"),
    ("--stream", "--no-stream"),
    ("--sleep-interval", "--sleep-interval 5"),
    ("--open-loop", "--open-loop --rate 5 10 --number 50 100"),
    ("--warmup-num", "--warmup-num 0.1"),
    ("--duration", "--duration 60"),
    ("--sla-auto-tune", "--sla-auto-tune --sla-params [{\"p99_latency\":\"<=2\"}]"),
    ("--sla-variable", "--sla-auto-tune --sla-variable rate --sla-params {\"avg_ttft\":\"<=1\"}"),
    ("--sla-params", "--sla-auto-tune --sla-params [{\"tps\":\"max\"}]"),
    ("--sla-upper-bound", "--sla-auto-tune --sla-params {\"rps\":\">=1\"} --sla-upper-bound 64"),
    ("--sla-lower-bound", "--sla-auto-tune --sla-params {\"rps\":\">=1\"} --sla-lower-bound 2"),
    ("--sla-fixed-parallel", "--sla-auto-tune --sla-variable rate --sla-params {\"rps\":\">=1\"} --sla-fixed-parallel 16"),
    ("--sla-num-runs", "--sla-auto-tune --sla-params {\"rps\":\">=1\"} --sla-num-runs 1"),
    ("--sla-number-multiplier", "--sla-auto-tune --sla-params {\"rps\":\">=1\"} --sla-number-multiplier 4"),
    ("--dataset", "--dataset line_by_line --dataset-path prompts.txt"),
    ("--dataset-path", "--dataset-path questions.jsonl"),
    ("--data-source", "--data-source huggingface"),
    ("--dataset-args", "--dataset-path q.jsonl --dataset-args {\"target_input_len\":2048,\"input_len_mode\":\"drop\"}"),
    ("--max-prompt-length", "--max-prompt-length 4096"),
    ("--min-prompt-length", "--min-prompt-length 128"),
    ("--prefix-length", "--dataset random --tokenizer-path tok --prefix-length 64 --min-prompt-length 100 --max-prompt-length 200"),
    ("--image-width", "--dataset random_vl --image-width 512"),
    ("--image-height", "--dataset random_vl --image-height 512"),
    ("--image-format", "--dataset random_vl --image-format jpeg"),
    ("--image-num", "--dataset random_vl --image-num 2"),
    ("--image-patch-size", "--image-patch-size 14"),
    ("--prompt", "--prompt @prompt.txt"),
    ("--query-template", "--query-template {\"model\":\"%m\",\"messages\":[],\"skip_special_tokens\":false}"),
    ("--apply-chat-template", "--apply-chat-template false"),
    ("--tokenize-prompt", "--tokenize-prompt --tokenizer-path tok"),
    ("--multi-turn", "--multi-turn --dataset random --max-turns 4"),
    ("--min-turns", "--dataset random_multi_turn --max-turns 4 --min-turns 2"),
    ("--max-turns", "--dataset random_multi_turn --max-turns 6"),
    ("--num-workers", "--num-workers 4"),
    ("--tokenizer-path", "--tokenizer-path /models/tok"),
    ("--frequency-penalty", "--frequency-penalty 0.5"),
    ("--logprobs", "--logprobs"),
    ("--max-tokens", "--max-tokens 512 2048"),
    ("--min-tokens", "--min-tokens 128"),
    ("--n-choices", "--n-choices 2"),
    ("--seed", "--seed 7"),
    ("--stop", "--stop <|im_end|>"),
    ("--stop-token-ids", "--stop-token-ids 151645 151643"),
    ("--temperature", "--temperature 0.7"),
    ("--top-p", "--top-p 0.9"),
    ("--top-k", "--top-k 20"),
    ("--extra-args", "--extra-args {\"ignore_eos\":true,\"priority\":3}"),
    ("--visualizer", "--visualizer wandb"),
    ("--enable-progress-tracker", "--enable-progress-tracker"),
    ("--wandb-api-key", "--wandb-api-key k"),
    ("--swanlab-api-key", "--swanlab-api-key k"),
    ("--outputs-dir", "--outputs-dir out"),
    ("--no-timestamp", "--no-timestamp"),
    ("--db-commit-interval", "--db-commit-interval 100"),
    ("--queue-size-multiplier", "--queue-size-multiplier 5"),
    ("--in-flight-task-multiplier", "--in-flight-task-multiplier 2"),
    ("--multi-turn-args", "--dataset random_multi_turn --max-turns 3 --multi-turn-args {\"first_turn_length\":100}"),
];

fn argv(text: &str) -> Vec<String> {
    let mut out = vec!["--model".to_string(), "org/Base-Model".into()];
    out.extend(text.split_whitespace().map(String::from));
    out
}

fn convert(text: &str) -> Imported {
    import(&[argv(text)]).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn at<'a>(plan: &'a Map<String, Value>, path: &str) -> &'a Value {
    path.split('.')
        .try_fold(&Value::Null, |v, k| match (v, k) {
            (Value::Null, _) => plan.get(k),
            (v, k) => v
                .get(k)
                .or_else(|| k.parse::<usize>().ok().and_then(|i| v.get(i))),
        })
        .unwrap_or(&Value::Null)
}

#[test]
fn every_reference_parameter_maps_to_a_key_or_says_why_not() {
    let base = convert("");
    for (flag, sample) in REFERENCE {
        let p = params::find(flag).unwrap_or_else(|| panic!("{flag} is not in the table"));
        let got = convert(sample);
        let noted = got.notes.iter().any(|n| n.contains(flag));
        match p.mapping {
            params::Mapping::None(why) => {
                assert!(!why.is_empty());
                assert!(noted, "{flag}: no note in {:?}", got.notes);
            }
            params::Mapping::Key(_) => assert!(
                got.plan != base.plan || noted,
                "{flag}: `{sample}` changed nothing"
            ),
        }
    }
}

#[test]
fn paired_lists_become_the_same_tiers_and_a_length_mismatch_is_refused() {
    let got = convert("--parallel 1 4 8 --number 64 128 256 --warmup-num 0.1");
    assert_eq!(
        at(&got.plan, "matrix.load"),
        &json!([
            {"concurrency": 1, "requests": 64, "warmup": 6},
            {"concurrency": 4, "requests": 128, "warmup": 12},
            {"concurrency": 8, "requests": 256, "warmup": 25},
        ])
    );
    let err = import(&[argv("--parallel 1 4 --number 64")])
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("--parallel and --number must have as many values")));
    let open = convert("--open-loop --rate 5 10 --number 50 100");
    assert_eq!(
        at(&open.plan, "matrix.load"),
        &json!([{"rate": 5.0, "requests": 50}, {"rate": 10.0, "requests": 100}])
    );
    let paced = convert("--rate 5 --parallel 4 --number 40");
    assert_eq!(
        at(&paced.plan, "matrix.load"),
        &json!([{"rate": 5.0, "requests": 40, "max_in_flight": 4}])
    );
}

#[test]
fn evalscope_defaults_are_written_out() {
    let got = convert("");
    assert_eq!(
        at(&got.plan, "defaults"),
        &json!({"output_tokens": 2048, "temperature": 0.0})
    );
    assert_eq!(
        at(&got.plan, "matrix.load"),
        &json!([{"concurrency": 1, "requests": 1000}])
    );
    assert_eq!(at(&got.plan, "datasets.openqa.kind"), "jsonl");
    assert_eq!(at(&got.plan, "datasets.openqa.field"), "question");
    assert_eq!(at(&got.plan, "datasets.openqa.path"), "${OPENQA_PATH}");
    assert_eq!(
        at(&got.plan, "endpoints.server.base_url"),
        "http://127.0.0.1:8877"
    );
}

#[test]
fn sla_criteria_become_one_search_each_in_perfplan_units() {
    let got = convert(
        "--sla-auto-tune --sla-params [{\"p99_latency\":\"<=2\",\"avg_tpot\":\"<0.05\"},{\"tps\":\"max\"}]",
    );
    let loads = at(&got.plan, "matrix.load")
        .as_array()
        .cloned()
        .unwrap_or_default();
    let slos: Vec<Value> = loads.iter().map(|l| l["slo"].clone()).collect();
    assert_eq!(
        slos,
        vec![
            json!({"latency_p99": "<= 2s", "success_ratio": ">= 1"}),
            json!({"tpot_mean": "< 0.05s", "success_ratio": ">= 1"}),
            json!({"output_tps": "max", "success_ratio": ">= 1"}),
        ]
    );
    assert_eq!(loads[0]["search"], "concurrency");
    assert_eq!(loads[0]["trials"], 3);
    assert_eq!(loads[0]["requests_per_step"], "2x");
}

#[test]
fn urls_secrets_and_literal_text_are_written_safely() {
    let got = convert(
        "--url https://dashscope.aliyuncs.com/compatible-api/v1/reranks --api openai_rerank \
         --dataset random_rerank --headers Authorization=Bearer-x --prompt ${HOME}",
    );
    let ep = at(&got.plan, "endpoints.server");
    assert_eq!(
        ep["base_url"],
        "https://dashscope.aliyuncs.com/compatible-api"
    );
    assert_eq!(ep["api"], "rerank");
    assert_eq!(ep["paths"], json!({"rerank": "/compatible-api/v1/reranks"}));
    assert_eq!(
        ep["headers"],
        json!({"Authorization": "${PERFPLAN_HEADER_AUTHORIZATION}"})
    );
    assert!(!serde_json::to_string(&got.plan)
        .unwrap_or_default()
        .contains("Bearer-x"));
    let prompt = convert("--prompt ${HOME}");
    assert_eq!(at(&prompt.plan, "datasets.prompt.text"), "$${HOME}");
}

#[test]
fn a_query_template_renders_what_evalscope_composes() {
    let got = convert(
        "--query-template {\"model\":\"%m\",\"messages\":[{\"role\":\"user\",\"content\":\"%p\"}],\"stream\":true,\"skip_special_tokens\":false,\"temperature\":0.7,\"max_tokens\":1024}",
    );
    let tmpl = at(&got.plan, "defaults.body_template")
        .as_str()
        .unwrap_or_default();
    let env = crate::request::template::compile(tmpl).unwrap_or_else(|e| panic!("{e}"));
    let mut fields = Map::new();
    fields.insert("max_tokens".into(), json!(2048));
    fields.insert("temperature".into(), json!(0.0));
    let prompt = crate::api::Prompt::Text("say \"hi\"".into());
    let input = crate::request::template::TemplateInput {
        model: "qwen2.5",
        prompt: &prompt,
        fields: &fields,
        stream: true,
        reject_fields: &[],
    };
    let body = crate::request::template::render(&env, &input).unwrap_or_else(|e| panic!("{e}"));
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    // The command line's fields win over the template's, as EvalScope composes them.
    assert_eq!(
        body,
        json!({
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": "say \"hi\""}],
            "skip_special_tokens": false,
            "temperature": 0.0,
            "max_tokens": 2048,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[test]
fn several_commands_become_a_dataset_axis_with_their_own_settings() {
    let got = import(&[
        argv("--dataset random --tokenizer-path tests/fixtures/smollm2 --min-prompt-length 100 --max-prompt-length 100 --parallel 1 --number 8"),
        argv("--dataset random --tokenizer-path tests/fixtures/smollm2 --min-prompt-length 900 --max-prompt-length 900 --parallel 1 4 --number 8 16 --max-tokens 64"),
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let m = at(&got.plan, "matrix");
    assert_eq!(m["dataset"], json!(["random", "random-2"]));
    assert_eq!(
        m["exclude"],
        json!([{"dataset": "random", "load": {"concurrency": 4, "requests": 16}}])
    );
    assert_eq!(m["include"][1]["output_tokens"], 64);
    assert_eq!(at(&got.plan, "datasets.random-2.input_tokens"), 900);
    // The plan expands to each command's own runs: 1 + 2, with their settings.
    let text = crate::plan::emit::to_toml(&got.plan, &[]);
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plan.toml");
    let mut files = std::collections::BTreeMap::new();
    files.insert(path.display().to_string(), text);
    let env = |_: &str| None;
    let opts = crate::plan::LoadOptions {
        files: Some(&files),
        ..crate::plan::LoadOptions::new(Vec::new(), &env)
    };
    let plan = crate::plan::load_plan(&path, &opts);
    let plan = plan.unwrap_or_else(|r| panic!("{}", r.render()));
    let runs = crate::planner::expand(&plan)
        .map(|e| e.runs)
        .unwrap_or_default();
    let shape: Vec<(String, Option<u32>, Option<u32>)> = runs
        .iter()
        .map(|r| {
            let out = r.settings.request.output_tokens.map(|t| t.max());
            (r.settings.dataset.name.clone(), r.load.mode.users(), out)
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            ("random".into(), Some(1), Some(2048)),
            ("random-2".into(), Some(1), Some(64)),
            ("random-2".into(), Some(4), Some(64)),
        ]
    );
}

#[test]
fn the_book_table_lists_every_parameter() {
    let readme = include_str!("../../docs/src/guide/evalscope.md");
    for p in params::PARAMS {
        let why = match p.mapping {
            params::Mapping::Key(k) => k.to_string(),
            params::Mapping::None(w) => format!("no equivalent, because {w}"),
        };
        let row = format!("| `{}` | {} |", p.flag, why);
        assert!(
            readme.contains(&row),
            "docs/src/guide/evalscope.md lacks the row {row}"
        );
    }
}
