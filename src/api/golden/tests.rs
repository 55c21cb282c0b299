use serde_json::json;

use super::*;
use crate::record::ToolCall;

fn answer(text: &str) -> RequestRecord {
    RequestRecord {
        output_text: text.into(),
        ..RequestRecord::default()
    }
}

#[test]
fn builtin_cases_pass_their_right_answers_and_fail_wrong_ones() {
    let set = builtin(false);
    assert_eq!(set.len(), 4);
    assert_eq!(
        set[0].expected.judge(&answer(" 42\n"), None),
        AnswerCheck::Ok
    );
    assert_eq!(
        set[0].expected.judge(&answer("The answer is 42."), None),
        AnswerCheck::Ok
    );
    assert_eq!(
        set[0].expected.judge(&answer("420"), None),
        AnswerCheck::Wrong
    );
    assert_eq!(
        set[0].expected.judge(&answer("  "), None),
        AnswerCheck::Unparsed
    );
    let json_case = &set[3].expected;
    let right = "```json\n{\"name\": \"Ada Lovelace\", \"age\": 36}\n```";
    assert_eq!(json_case.judge(&answer(right), None), AnswerCheck::Ok);
    let wrong = "{\"name\": \"Ada Lovelace\", \"age\": \"36\"}";
    assert_eq!(json_case.judge(&answer(wrong), None), AnswerCheck::Wrong);
    assert_eq!(
        json_case.judge(&answer("Ada, 36"), None),
        AnswerCheck::Unparsed
    );
}

#[test]
fn a_failed_request_is_failed_not_wrong() {
    let mut rec = answer("42");
    rec.outcome = Outcome::Http;
    assert_eq!(
        builtin(false)[0].expected.judge(&rec, None),
        AnswerCheck::Failed
    );
}

#[test]
fn tool_call_cases_use_the_tool_calls_parse_check() {
    let set = builtin(true);
    let case = &set[4];
    let tools = case.tools.as_deref();
    let call = |name: &str, args: &str| RequestRecord {
        tool_calls: vec![ToolCall {
            name: name.into(),
            arguments: args.into(),
            ..ToolCall::default()
        }],
        ..RequestRecord::default()
    };
    let judge = |r: &RequestRecord| case.expected.judge(r, tools);
    assert_eq!(
        judge(&call("get_weather", r#"{"city": "Paris"}"#)),
        AnswerCheck::Ok
    );
    assert_eq!(
        judge(&call("get_weather", r#"{"town": "Paris"}"#)),
        AnswerCheck::Wrong
    );
    assert_eq!(
        judge(&call("search", r#"{"query": "Paris"}"#)),
        AnswerCheck::Wrong
    );
    assert_eq!(
        judge(&call("get_weather", r#"{"city": "Par"#)),
        AnswerCheck::Unparsed
    );
    assert_eq!(judge(&answer("It is sunny.")), AnswerCheck::Unparsed);
}

#[test]
fn user_lines_are_read_with_their_errors_said() {
    let ok = GoldenCase::from_json(&json!({"prompt": "Say hi.", "expected": {"exact": " hi "}}));
    assert_eq!(ok.unwrap().expected, Expected::Exact("hi".into()));
    let messages = json!({"messages": [{"role": "user", "content": "2+2?"}],
        "expected": {"regex": "\\b4\\b"}});
    assert!(GoldenCase::from_json(&messages).is_ok());
    let err = |v| GoldenCase::from_json(&v).unwrap_err();
    assert_eq!(
        err(json!({"promt": "x", "expected": {"exact": "y"}})),
        "unknown key `promt` (did you mean `prompt`?)"
    );
    assert!(
        err(json!({"prompt": "x", "expected": {"regx": "y"}})).contains("did you mean `regex`?")
    );
    assert!(
        err(json!({"prompt": "x", "expected": {"regex": "("}})).starts_with("`expected.regex`:")
    );
    assert_eq!(err(json!({"prompt": "x"})), "missing `expected`");
    assert!(
        err(json!({"prompt": "x", "expected": {"tool_call": "fly"}})).contains("no tool `fly`")
    );
}
