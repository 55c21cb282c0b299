//! Client counts against a real server's own count (`usage.prompt_tokens`), only when
//! `PERFPLAN_REALSERVER_URL` names one on loopback (e.g. `http://127.0.0.1:18010`, started with
//! `MODEL=smollm2 PORT=18010 shared/tools/realserver/start.sh`). Uses the SmolLM2 fixture,
//! which is that server's tokenizer. Skipped otherwise.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod dataset_support;

use std::path::Path;
use std::sync::Arc;

use dataset_support::materialize;
use perfplan::api::Prompt;
use perfplan::dataset::DatasetContext;
use perfplan::plan::spec::{ChatTemplateMode, DatasetSpec};
use perfplan::tokenize::Tokenizer;
use serde_json::{json, Value};

fn server() -> Option<String> {
    let url = std::env::var("PERFPLAN_REALSERVER_URL").ok()?;
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "only loopback servers: {url}"
    );
    Some(url.trim_end_matches('/').to_string())
}

/// `usage.prompt_tokens` of a non-streaming request with one output token.
async fn prompt_tokens(client: &reqwest::Client, url: &str, path: &str, mut body: Value) -> u64 {
    body["max_tokens"] = json!(1);
    body["temperature"] = json!(0);
    let response = client
        .post(format!("{url}{path}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .unwrap();
    let bytes = response.bytes().await.unwrap();
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    value["usage"]["prompt_tokens"]
        .as_u64()
        .expect("usage.prompt_tokens")
}

#[test]
fn random_prompts_are_exactly_as_long_by_the_servers_count() {
    let Some(url) = server() else {
        eprintln!("skipped: PERFPLAN_REALSERVER_URL not set");
        return;
    };
    let tok =
        Tokenizer::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2"))
            .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = reqwest::Client::new();
    for (chat, target) in [(true, 64u32), (true, 512), (false, 64), (false, 512)] {
        let spec: DatasetSpec = serde_json::from_value(
            json!({"kind": "random", "input_tokens": target, "prefix_tokens": target / 4}),
        )
        .unwrap();
        let ctx = DatasetContext {
            base_dir: ".".into(),
            tokenizer: Some(Arc::clone(&tok)),
            chat,
            tokenize_prompt: false,
            chat_template: ChatTemplateMode::Auto,
            seed: 99,
            first: 0,
            count: 3,
            template_kwargs: Default::default(),
            classes: Vec::new(),
        };
        let m = materialize(&spec, &ctx).unwrap();
        for item in &m.items {
            let Prompt::Text(text) = &item.prompt else {
                panic!()
            };
            let (path, body) = if chat {
                (
                    "/v1/chat/completions",
                    json!({"model": "m", "messages": [{"role": "user", "content": text}]}),
                )
            } else {
                ("/v1/completions", json!({"model": "m", "prompt": text}))
            };
            let served = rt.block_on(prompt_tokens(&client, &url, path, body));
            eprintln!(
                "chat={chat} target={target}: client {:?}, server {served}",
                item.client_input_tokens
            );
            assert_eq!(served, u64::from(target));
            assert_eq!(item.client_input_tokens, Some(target));
        }
    }
}
