//! The tokenizer layer against the SmolLM2 fixture folder (no network).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use perfplan::tokenize::{TokenizeError, Tokenizer, TokenizerCache};
use serde_json::json;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

#[test]
fn loads_a_folder_and_a_tokenizer_json_path() {
    let tok = Tokenizer::load(&fixture()).unwrap();
    assert_eq!(tok.vocab_size(), 49152);
    assert!(tok.has_chat_template());
    assert_eq!(tok.bos_token(), Some("<|im_start|>"));
    assert_eq!(tok.eos_token(), Some("<|im_end|>"));
    let by_file = Tokenizer::load(&fixture().join("tokenizer.json")).unwrap();
    assert!(
        by_file.has_chat_template(),
        "config beside the file is read"
    );
}

#[test]
fn encode_decode_count_round_trip() {
    let tok = Tokenizer::load(&fixture()).unwrap();
    let ids = tok.encode("Hello world, 2026!", false).unwrap();
    assert_eq!(tok.count("Hello world, 2026!", false).unwrap(), ids.len());
    assert_eq!(tok.decode(&ids).unwrap(), "Hello world, 2026!");
    // digits are split one by one by this tokenizer
    assert_eq!(tok.count("2026", false).unwrap(), 4);
}

#[test]
fn chat_counts_render_then_encode_without_special_tokens() {
    let tok = Tokenizer::load(&fixture()).unwrap();
    let messages = vec![json!({"role": "user", "content": "What is the capital of France?"})];
    let rendered = tok.render_chat(&messages, true).unwrap();
    assert!(rendered.starts_with("<|im_start|>system\nYou are a helpful AI assistant"));
    assert!(rendered.ends_with("<|im_end|>\n<|im_start|>assistant\n"));
    // the real server (llama-cpp-python, smollm2) reports prompt_tokens = 37 for this chat
    assert_eq!(tok.count_chat(&messages).unwrap(), 37);
    assert_eq!(tok.encode_chat(&messages).unwrap().len(), 37);
}

#[test]
fn a_missing_path_names_the_path_and_the_fix() {
    let err = Tokenizer::load(Path::new("/nonexistent/tokenizer-folder")).unwrap_err();
    assert!(matches!(err, TokenizeError::NotFound { .. }));
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/tokenizer-folder"), "{msg}");
    assert!(msg.contains("tokenizer.json"), "{msg}");
}

#[test]
fn a_folder_without_tokenizer_json_or_with_a_broken_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Tokenizer::load(dir.path()).unwrap_err(),
        TokenizeError::NotFound { .. }
    ));
    std::fs::write(dir.path().join("tokenizer.json"), "{not json").unwrap();
    let err = Tokenizer::load(dir.path()).unwrap_err();
    assert!(matches!(err, TokenizeError::Parse { .. }), "{err:?}");
    assert!(err.to_string().contains("tokenizer.json"));
}

#[test]
fn missing_chat_template_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    let tok = Tokenizer::load(dir.path()).unwrap();
    assert!(!tok.has_chat_template());
    let err = tok
        .count_chat(&[json!({"role": "user", "content": "hi"})])
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("no chat template"), "{msg}");
    assert!(msg.contains("chat_template = \"off\""), "{msg}");
}

#[test]
fn chat_template_jinja_file_and_added_token_objects_are_read() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tokenizer_config.json"),
        r#"{"bos_token": {"content": "<|im_start|>", "special": true}, "eos_token": "<|im_end|>",
            "chat_template": "ignored because chat_template.jinja exists"}"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}{{ eos_token }}{% endif %}",
    )
    .unwrap();
    let tok = Tokenizer::load(dir.path()).unwrap();
    let out = tok
        .render_chat(&[json!({"role": "user", "content": "abc"})], true)
        .unwrap();
    assert_eq!(out, "<|im_start|>abc<|im_end|>");
}

#[test]
fn a_template_that_does_not_compile_names_its_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("chat_template.jinja"), "{% for %}").unwrap();
    let err = Tokenizer::load(dir.path()).unwrap_err();
    assert!(matches!(err, TokenizeError::TemplateSyntax { .. }));
    assert!(err.to_string().contains("chat_template.jinja"), "{err}");
}

#[test]
fn the_cache_loads_each_path_once() {
    let cache = TokenizerCache::new();
    let a = cache.load(&fixture()).unwrap();
    let b = cache.load(&fixture().join("../smollm2")).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 1);
    let shared = cache.clone();
    let c = std::thread::spawn(move || shared.load(&fixture()).unwrap())
        .join()
        .unwrap();
    assert!(Arc::ptr_eq(&a, &c));
}

#[test]
fn word_pool_holds_only_round_tripping_whole_words() {
    let tok = Tokenizer::load(&fixture()).unwrap();
    let started = std::time::Instant::now();
    let pool = tok.word_pool();
    eprintln!("word pool: {} words in {:?}", pool.len(), started.elapsed());
    assert!(pool.word_aligned());
    assert_eq!(pool.len(), 8192);
    for i in (0..pool.len()).step_by(97) {
        let (id, text) = pool.word(i).unwrap();
        assert!(text.starts_with(' '));
        assert_eq!(tok.encode(text, false).unwrap(), vec![id]);
    }
}

/// Gemma 3's tokenizer (262k vocabulary), only when PERFPLAN_TOKENIZER points to its folder.
#[test]
fn gemma_when_available() {
    let Ok(path) = std::env::var("PERFPLAN_TOKENIZER") else {
        eprintln!("skipped: PERFPLAN_TOKENIZER not set");
        return;
    };
    let tok = Tokenizer::load(Path::new(&path)).unwrap();
    // NOTES.md f: `Hello world` with special tokens is [2, 9259, 1902] for Gemma 3
    if tok.vocab_size() > 262_000 {
        assert_eq!(
            tok.encode("Hello world", true).unwrap(),
            vec![2, 9259, 1902]
        );
        let n = tok
            .count_chat(&[json!({"role": "user", "content": "What is the capital of France?"})])
            .unwrap();
        assert_eq!(
            n, 16,
            "the real server reports 16 prompt tokens for this chat"
        );
    }
    assert!(tok.word_pool().len() > 1000);
}

#[test]
fn template_kwargs_reach_the_template() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("tokenizer.json"),
        dir.path().join("tokenizer.json"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("chat_template.jinja"),
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}\
         <|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}",
    )
    .unwrap();
    let tok = Tokenizer::load(dir.path()).unwrap();
    let messages = [json!({"role": "user", "content": "hi"})];
    let mut kwargs = serde_json::Map::new();
    kwargs.insert("enable_thinking".into(), json!(false));
    let plain = tok.count_chat(&messages).unwrap();
    let with = tok.count_chat_with(&messages, &kwargs).unwrap();
    assert!(with > plain, "{with} vs {plain}");
    assert!(tok
        .render_chat_with(&messages, true, &kwargs)
        .unwrap()
        .ends_with("<think>\n\n</think>\n\n"));
}
