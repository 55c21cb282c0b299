//! The chunk readers against a reference: the plain serde shapes they replaced. Real
//! servers' chunks, generated variants (field order, extra fields of every JSON kind,
//! escapes, nulls) and mutations (every truncation, byte flips) must give the same result,
//! and the reader must never accept what serde refuses.

use std::borrow::Cow;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::*;
use crate::api::wire::is_error;

/// The choice a chunk is timed by: the first whose `index` is 0, or the first element
/// when it has no `index`. Every element must be a valid choice.
trait Indexed {
    fn index(&self) -> Option<u32>;
}

fn choice_zero<C: Indexed>(choices: Vec<C>) -> Option<C> {
    choices
        .into_iter()
        .enumerate()
        .find(|(n, c)| c.index().map_or(*n == 0, |i| i == 0))
        .map(|(_, c)| c)
}

/// A chunk with the choice shape `C` (chat's or completions').
#[derive(Deserialize)]
struct RefChunk<'a, C> {
    #[serde(default = "no_choices")]
    choices: Option<Vec<C>>,
    #[serde(default)]
    usage: Option<UsageWire>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
}

fn no_choices<C>() -> Option<Vec<C>> {
    None
}

#[derive(Deserialize)]
struct RefChoice<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(borrow, default)]
    delta: Option<RefMessage<'a>>,
    #[serde(borrow, default)]
    message: Option<RefMessage<'a>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RefMessage<'a> {
    #[serde(borrow, default)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<RefToolCall<'a>>>,
    #[serde(borrow, default)]
    function_call: Option<RefFunction<'a>>,
}

#[derive(Deserialize)]
struct RefToolCall<'a> {
    index: Option<u32>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<RefFunction<'a>>,
}

#[derive(Deserialize)]
struct RefFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// The reference's tool-call text (every call's name then arguments, then
/// `function_call`) and pieces (each call's index, id, name and arguments).
fn reference_tools<'a>(m: &mut RefMessage<'a>) -> (Option<Cow<'a, str>>, Vec<ToolDelta<'a>>) {
    let (mut text, mut deltas) = (ToolText::default(), Vec::new());
    let calls = m
        .tool_calls
        .take()
        .unwrap_or_default()
        .into_iter()
        .enumerate();
    let calls = calls.map(|(n, c)| (c.index.unwrap_or(n as u32), non_empty(c.id), c.function));
    for (index, id, f) in calls.chain(m.function_call.take().map(|f| (0, None, Some(f)))) {
        let (name, arguments) = f.map_or((None, None), |f| (f.name, f.arguments));
        let (name, arguments) = (non_empty(name), non_empty(arguments));
        text.push(name.clone());
        text.push(arguments.clone());
        if id.is_some() || name.is_some() || arguments.is_some() {
            deltas.push(ToolDelta {
                index,
                id,
                name,
                arguments,
            });
        }
    }
    (text.into_text(), deltas)
}

#[derive(Deserialize)]
struct RefText<'a> {
    #[serde(default)]
    index: Option<u32>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

impl Indexed for RefChoice<'_> {
    fn index(&self) -> Option<u32> {
        self.index
    }
}

impl Indexed for RefText<'_> {
    fn index(&self) -> Option<u32> {
        self.index
    }
}

/// The chunk's usage and error markers, and its choice 0.
fn reference_chunk<'a, C: Deserialize<'a> + Indexed>(
    data: &'a [u8],
    info: &mut ChunkInfo<'a>,
) -> Result<Option<C>, serde_json::Error> {
    let chunk: RefChunk<'a, C> = serde_json::from_slice(data)?;
    info.usage = chunk.usage.as_ref().map(UsageWire::to_usage);
    info.error = is_error(&chunk.error, &chunk.object);
    let choice = chunk.choices.and_then(choice_zero);
    info.has_choice = choice.is_some();
    Ok(choice)
}

fn reference(data: &[u8], shape: Shape) -> Result<ChunkInfo<'_>, serde_json::Error> {
    let mut info = ChunkInfo::default();
    match shape {
        Shape::Chat => {
            if let Some(choice) = reference_chunk::<RefChoice<'_>>(data, &mut info)? {
                info.finish_reason = non_empty(choice.finish_reason);
                if let Some(mut m) = choice.delta.or(choice.message) {
                    let slot = m.content.is_some()
                        || m.reasoning_content.is_some()
                        || m.reasoning.is_some();
                    (info.tool, info.tool_deltas) = reference_tools(&mut m);
                    info.content = non_empty(m.content);
                    info.reasoning = non_empty(m.reasoning_content).or(non_empty(m.reasoning));
                    info.token = token_slot(&info, slot, m.role.is_some());
                }
            }
        }
        Shape::Completions => {
            if let Some(choice) = reference_chunk::<RefText<'_>>(data, &mut info)? {
                info.token = choice.text.is_some();
                info.content = non_empty(choice.text);
                info.finish_reason = non_empty(choice.finish_reason);
            }
        }
    }
    Ok(info)
}

/// Chunks as vLLM, SGLang, llama.cpp, TGI and OpenAI send them, plus odd but valid ones.
const CORPUS: &[&str] = &[
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795951300,"model":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795951300,"model":"x","choices":[{"index":0,"delta":{"content":" model"},"logprobs":null,"finish_reason":null}]}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795951300,"model":"x","choices":[{"index":0,"delta":{"content":" serves"},"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1795951300,"model":"x","choices":[],"usage":{"prompt_tokens":4,"total_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":0}}}"#,
    r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi \"you\" \u00e9\ud83d\ude00\n"}}],"created":1,"id":"x","model":"m","system_fingerprint":"b1","object":"chat.completion.chunk","timings":{"prompt_n":5,"predicted_ms":1.5}}"#,
    r#"{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","content":null},"logprobs":{"content":[{"token":"a","logprob":-0.1,"bytes":[97],"top_logprobs":[]}]}}],"usage":null}"#,
    r#"{"choices":[{"delta":{"reasoning":"think"}}]}"#,
    r#"{"object":"error","message":"boom","type":"BadRequestError","code":400}"#,
    r#"{"error":{"message":"boom","code":500}}"#,
    r#"{"error":null,"choices":null,"usage":{"input_tokens":3,"output_tokens":2,"input_tokens_details":{"cached_tokens":1}}}"#,
    r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
    r#"{"choices":[{"index":0,"text":"","finish_reason":"stop"},{"index":1,"text":"second"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":null}}"#,
    r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"Paris"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#,
    "  {\n \"choices\" : [ { \"delta\" : { \"content\" : \"a\\tb\" } } ] }  ",
    r#"{"\u0063hoices":[{"delta":{"content":"escaped key"}}]}"#,
    r#"{}"#,
    // n = 2: vLLM streams each choice in chunks of its own; only choice 0's are timed.
    r#"{"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":1,"delta":{"content":" other"},"logprobs":null,"finish_reason":null}]}"#,
    r#"{"id":"cmpl-2","object":"text_completion","created":1,"model":"m","choices":[{"index":1,"text":" b","logprobs":null,"finish_reason":"length"}]}"#,
    r#"{"choices":[{"index":1,"text":"b","delta":{"content":"b"}},{"index":0,"text":"a","delta":{"content":"a"},"finish_reason":"stop"}]}"#,
    r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"one"},"finish_reason":"stop"},{"index":1,"message":{"role":"assistant","content":"two"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":9}}"#,
    r#"{"choices":[{"delta":{"content":"no index"}},{"index":0,"delta":{"content":"late zero"}}]}"#,
    r#"{"choices":[{"index":null,"delta":{"content":"null index"}}]}"#,
    // Tool calls as vLLM streams them (name first, then argument fragments) and as a
    // whole message holds them; the older `function_call`.
    r#"{"id":"chatcmpl-3","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather"}}]},"logprobs":null,"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \""}}]},"finish_reason":null}]}"#,
    r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"function":{"name":"a","arguments":"{}"}},{"index":1,"function":{"name":"b","arguments":""}}]}}]}"#,
    r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
    r#"{"choices":[{"index":0,"delta":{"function_call":{"arguments":"1}"}}}]}"#,
    r#"{"choices":[{"index":0,"delta":{"tool_calls":null,"function_call":null}}]}"#,
    // vLLM: a special token's empty text, a running per-chunk usage, reasoning tokens.
    r#"{"id":"chatcmpl-4","object":"chat.completion.chunk","created":1,"model":"x","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":null,"token_ids":null}],"usage":{"prompt_tokens":40,"total_tokens":47,"completion_tokens":7}}"#,
    r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13,"completion_tokens_details":{"reasoning_tokens":6},"prompt_tokens_details":null}}"#,
    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
];

fn assert_same(data: &[u8]) {
    for shape in [Shape::Chat, Shape::Completions] {
        let ours = parse(data, shape);
        let theirs = reference(data, shape);
        let text = String::from_utf8_lossy(data);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{shape:?} {text}"),
            (Err(_), Err(_)) => {}
            (Err(_), Ok(_)) if struct_as_array(data) => {}
            _ => panic!(
                "{shape:?}: reader {:?} but serde {:?} for {text}",
                ours.as_ref().map(|_| "ok").map_err(ToString::to_string),
                theirs.as_ref().map(|_| "ok").map_err(ToString::to_string),
            ),
        }
    }
}

/// serde's derived structs also accept a JSON array of their fields in order (`[]` is an
/// empty chunk); no server sends that and the reader refuses it: the one known difference.
fn struct_as_array(data: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else {
        return false;
    };
    let mut places = vec![
        Some(&v),
        v.get("usage"),
        v.get("usage").and_then(|u| u.get("prompt_tokens_details")),
        v.get("usage").and_then(|u| u.get("input_tokens_details")),
    ];
    let choices = v.get("choices").and_then(serde_json::Value::as_array);
    for choice in choices.into_iter().flatten() {
        places.extend([Some(choice), choice.get("delta"), choice.get("message")]);
        for m in [choice.get("delta"), choice.get("message")]
            .into_iter()
            .flatten()
        {
            places.push(m.get("function_call"));
            let calls = m.get("tool_calls").and_then(serde_json::Value::as_array);
            for call in calls.into_iter().flatten() {
                places.extend([Some(call), call.get("function")]);
            }
        }
    }
    for place in places.into_iter().flatten() {
        if place.is_array() {
            return true;
        }
    }
    false
}

#[test]
fn corpus_reads_as_serde_reads_it() {
    for chunk in CORPUS {
        assert_same(chunk.as_bytes());
    }
    let info = parse(CORPUS[4].as_bytes(), Shape::Chat).unwrap();
    assert_eq!(info.content.as_deref(), Some("Hi \"you\" é😀\n"));
}

/// With `n = 2` a chunk of choice 1 is no choice at all for timing; choice 0 is found by
/// its `index` wherever it stands in the array.
#[test]
fn only_choice_zero_is_read() {
    let other = parse(CORPUS[16].as_bytes(), Shape::Chat).unwrap();
    assert!(!other.has_choice && other.content.is_none());
    let other = parse(CORPUS[17].as_bytes(), Shape::Completions).unwrap();
    assert!(!other.has_choice && other.finish_reason.is_none());
    for shape in [Shape::Chat, Shape::Completions] {
        let late = parse(CORPUS[18].as_bytes(), shape).unwrap();
        assert_eq!(late.content.as_deref(), Some("a"));
        assert_eq!(late.finish_reason.as_deref(), Some("stop"));
    }
    let body = parse(CORPUS[19].as_bytes(), Shape::Chat).unwrap();
    assert_eq!(body.content.as_deref(), Some("one"));
    assert_eq!(body.usage.unwrap().completion_tokens, Some(9));
    let first = parse(CORPUS[20].as_bytes(), Shape::Chat).unwrap();
    assert_eq!(first.content.as_deref(), Some("no index"));
}

/// A function-calling stream is output: the name, then every argument fragment; several
/// calls in one delta are joined; a whole message's calls are its text.
#[test]
fn tool_calls_are_output_text() {
    let chat = |i: usize| parse(CORPUS[i].as_bytes(), Shape::Chat).unwrap();
    let name = chat(22);
    assert_eq!(name.tool.as_deref(), Some("get_weather"));
    assert!(name.has_output() && name.has_answer() && name.content.is_none());
    assert_eq!(chat(23).tool.as_deref(), Some("{\"city\": \""));
    assert_eq!(chat(24).tool.as_deref(), Some("a{}b"));
    let body = chat(25);
    assert_eq!(body.tool.as_deref(), Some("f{\"x\":1}"));
    assert_eq!(body.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(chat(26).tool.as_deref(), Some("1}"));
    let none = chat(27);
    assert!(none.has_choice && !none.has_output() && !none.token);
    // Reasoning is output but not an answer.
    assert!(chat(6).has_output() && !chat(6).has_answer());
}

#[test]
fn every_truncation_and_byte_flip_agrees_with_serde() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let specials = b"{}[]\":,\\ nultrfae0-.9xu\x01\xff";
    for chunk in CORPUS {
        let bytes = chunk.as_bytes();
        for cut in 0..bytes.len() {
            assert_same(&bytes[..cut]);
        }
        for _ in 0..1000 {
            let mut m = bytes.to_vec();
            for _ in 0..rng.gen_range(1..=3) {
                let at = rng.gen_range(0..m.len().max(1));
                if let Some(b) = m.get_mut(at) {
                    *b = specials[rng.gen_range(0..specials.len())];
                }
            }
            assert_same(&m);
        }
    }
}

/// A random JSON value of every kind, `depth` levels at most.
fn value(rng: &mut ChaCha8Rng, depth: u32) -> String {
    let pick = rng.gen_range(0..if depth == 0 { 5 } else { 7 });
    match pick {
        0 => "null".into(),
        1 => ["true", "false"][rng.gen_range(0..2)].into(),
        2 => ["0", "-1", "3.25", "1e-7", "-0.5E+3", "12345678901234567890"][rng.gen_range(0..6)]
            .into(),
        3 => string(rng),
        4 => format!("{}", rng.gen_range(0..100_000u32)),
        5 => {
            let items: Vec<String> = (0..rng.gen_range(0..4))
                .map(|_| value(rng, depth - 1))
                .collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let items: Vec<String> = (0..rng.gen_range(0..4))
                .map(|i| format!("\"k{i}\":{}", value(rng, depth - 1)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

fn string(rng: &mut ChaCha8Rng) -> String {
    let parts = [
        "a",
        " tok",
        "é",
        "😀",
        "\\n",
        "\\\"",
        "\\\\",
        "\\u00e9",
        "\\ud83d\\ude00",
        "\\/",
        "",
    ];
    let s: String = (0..rng.gen_range(0..5))
        .map(|_| parts[rng.gen_range(0..parts.len())])
        .collect();
    format!("\"{s}\"")
}

fn opt_string(rng: &mut ChaCha8Rng) -> String {
    let s = string(rng);
    opt(rng, s)
}

fn opt(rng: &mut ChaCha8Rng, v: String) -> String {
    if rng.gen_range(0..4) == 0 {
        "null".into()
    } else {
        v
    }
}

/// A choice of either shape; its `index` is 0, 1, 2 or left out.
fn generated_choice(rng: &mut ChaCha8Rng) -> String {
    let (name, arguments) = (opt_string(rng), opt_string(rng));
    let function = format!("{{\"name\":{name},\"arguments\":{arguments}}}");
    let call = format!("{{\"index\":0,\"function\":{}}}", opt(rng, function));
    let calls = opt(rng, format!("[{call}]"));
    let role = opt(rng, "\"assistant\"".to_string());
    let message = format!(
        "{{\"role\":{role},\"content\":{},\"reasoning_content\":{},\"tool_calls\":{},\"x\":{}}}",
        opt_string(rng),
        opt_string(rng),
        calls,
        value(rng, 2)
    );
    let mut choice = vec![
        format!("\"index\":{}", rng.gen_range(0..3)),
        format!("\"delta\":{}", opt(rng, message.clone())),
        format!("\"text\":{}", opt_string(rng)),
        format!("\"finish_reason\":{}", opt_string(rng)),
        format!("\"logprobs\":{}", value(rng, 3)),
    ];
    shuffle(rng, &mut choice);
    choice.truncate(rng.gen_range(3..=5));
    format!("{{{}}}", choice.join(","))
}

fn generated(rng: &mut ChaCha8Rng) -> String {
    // Mostly well-formed second choices (n = 2), sometimes any value (an error both ways).
    let second = if rng.gen_range(0..4) == 0 {
        value(rng, 2)
    } else {
        generated_choice(rng)
    };
    let first = generated_choice(rng);
    let cached = format!("{{\"cached_tokens\":{}}}", rng.gen_range(0..5000));
    let details = opt(rng, cached);
    let reasoning = format!("{{\"reasoning_tokens\":{}}}", rng.gen_range(0..5000));
    let out_details = opt(rng, reasoning);
    let usage = format!(
        "{{\"prompt_tokens\":{},\"completion_tokens\":{},\"prompt_tokens_details\":{},\"completion_tokens_details\":{}}}",
        rng.gen_range(0..5000),
        rng.gen_range(0..5000),
        details,
        out_details
    );
    let mut top = vec![
        format!("\"id\":{}", string(rng)),
        format!("\"choices\":[{first},{second}]"),
        format!("\"usage\":{}", opt(rng, usage)),
        format!("\"extra\":{}", value(rng, 4)),
    ];
    shuffle(rng, &mut top);
    top.truncate(rng.gen_range(1..=4));
    format!("{{{}}}", top.join(","))
}

fn shuffle(rng: &mut ChaCha8Rng, items: &mut [String]) {
    for i in (1..items.len()).rev() {
        items.swap(i, rng.gen_range(0..=i));
    }
}

#[test]
fn generated_chunks_read_as_serde_reads_them() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for _ in 0..3000 {
        let chunk = generated(&mut rng);
        assert_same(chunk.as_bytes());
        serde_json::from_str::<IgnoredAny>(&chunk).expect("the generator writes valid JSON");
    }
}

#[test]
fn duplicate_and_mistyped_fields_are_errors_as_in_serde() {
    for bad in [
        r#"{"choices":[],"choices":[]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":{}}"#,
        r#"{"choices":[5]}"#,
        r#"{"usage":{"prompt_tokens":-1}}"#,
        r#"{"usage":{"prompt_tokens":1.5}}"#,
        r#"{"object":7}"#,
        r#"{"choices":[]} {}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}},5]}"#,
        r#"{"choices":[{"index":0,"index":0}]}"#,
        r#"{"choices":[{"index":-1}]}"#,
        r#"{"choices":[{"index":"0"}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[5]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":7}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"a","name":"b"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[],"tool_calls":[]}}]}"#,
    ] {
        assert!(parse(bad.as_bytes(), Shape::Chat).is_err(), "{bad}");
        assert!(reference(bad.as_bytes(), Shape::Chat).is_err(), "{bad}");
    }
}
