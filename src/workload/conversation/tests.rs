use super::*;
use crate::metrics::turns::{turn_metrics_of, TurnSample};
use crate::plan::spec::TokenRange;

fn plan(total: usize, max_active: usize, think_ms: u64) -> ConversationPlan {
    ConversationPlan {
        conversations: Conversations::Random {
            seed: 1,
            turns: TokenRange::Fixed(3),
            user: TokenRange::Fixed(4),
            assistant: Some(TokenRange::Fixed(5)),
            system: None,
            tokenizer: None,
        },
        template: TurnTemplate {
            request: RequestPlan::resolve(
                &crate::plan::RequestSpec {
                    stream: Some(false),
                    ..Default::default()
                },
                crate::plan::ApiSpec::Chat,
                "m",
            ),
            reject_fields: Vec::new(),
            seed: 1,
            body_template: None,
            session_seed: 0,
        },
        warmup: 1,
        total,
        max_active,
        think_time: Duration::from_millis(think_ms),
        echo_reasoning: false,
        priming: false,
        stop_new_after: None,
        counter: None,
        prompt_sink: None,
        tools: None,
    }
}

fn take(s: &mut ConversationSource) -> PreparedRequest {
    match s.next() {
        Next::Request(r) => r,
        other => panic!("expected a request, got {other:?}"),
    }
}

fn answer(req: &PreparedRequest, text: &str) -> RequestRecord {
    RequestRecord {
        item: req.item,
        output_text: text.into(),
        ..Default::default()
    }
}

#[test]
fn after_the_duration_started_conversations_finish_and_none_starts() {
    let mut p = plan(100, 2, 0);
    p.stop_new_after = Some(Duration::from_millis(20));
    let mut s = ConversationSource::new(p);
    let (mut a, mut b) = (take(&mut s), take(&mut s));
    std::thread::sleep(Duration::from_millis(30));
    // Both conversations play their remaining two turns each.
    for _ in 0..2 {
        s.completed(&answer(&a, "x"));
        a = take(&mut s);
        s.completed(&answer(&b, "y"));
        b = take(&mut s);
    }
    s.completed(&answer(&a, "x"));
    assert!(matches!(s.next(), Next::Pending), "b is still in flight");
    s.completed(&answer(&b, "y"));
    assert!(
        matches!(s.next(), Next::Done),
        "no conversation starts late"
    );
    assert_eq!(s.turn_of_item(), [0, 0, 1, 1, 2, 2]);
}

#[test]
fn conversations_in_flight_are_bounded_and_answers_carry_over() {
    let mut s = ConversationSource::new(plan(7, 2, 0));
    let a1 = take(&mut s);
    let b1 = take(&mut s);
    assert!(
        matches!(s.next(), Next::Pending),
        "two conversations in flight"
    );
    assert_eq!(a1.phase, Phase::Warmup);
    assert_eq!(b1.phase, Phase::Measured);
    s.completed(&answer(&a1, "ANSWER-A"));
    let a2 = take(&mut s);
    let body: Value = serde_json::from_slice(&a2.body).unwrap();
    let msgs = body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1], json!({"role": "assistant", "content": "ANSWER-A"}));
    assert_eq!(body["max_tokens"], json!(5));
    s.completed(&answer(&a2, "x"));
    let a3 = take(&mut s);
    s.completed(&answer(&a3, "x"));
    // Conversation A is over: a new one starts, at its first turn.
    let c1 = take(&mut s);
    assert_eq!(s.turn_of_item(), [0, 0, 1, 2, 0]);
    s.completed(&answer(&b1, "y"));
    s.completed(&answer(&c1, "z"));
    let b2 = take(&mut s);
    // B, the older, has first claim on the 2 turns left: C waits although it is ready.
    assert!(matches!(s.next(), Next::Pending), "C's turn is B's");
    s.completed(&answer(&b2, "y"));
    take(&mut s);
    assert!(matches!(s.next(), Next::Done), "7 turns in all");
    assert_eq!(s.turn_of_item(), [0, 0, 1, 2, 0, 1, 2]);
}

/// A conversation that answers slowly is not cut short by a new one started on the
/// turns it still needs: `requests` of whole conversations sends whole conversations,
/// whatever order the answers come back in (a new conversation used to take the last
/// turns while an older one waited for its answer, so the run's conversations depended
/// on timing).
#[test]
fn older_conversations_keep_the_turns_they_still_need() {
    let mut s = ConversationSource::new(plan(6, 2, 0));
    let a1 = take(&mut s);
    let mut b = take(&mut s);
    for _ in 0..2 {
        s.completed(&answer(&b, "y"));
        b = take(&mut s);
    }
    s.completed(&answer(&b, "y"));
    // B is over while A's first turn is still in flight: A needs the 2 turns left.
    assert!(matches!(s.next(), Next::Pending), "no third conversation");
    s.completed(&answer(&a1, "x"));
    let a2 = take(&mut s);
    s.completed(&answer(&a2, "x"));
    take(&mut s);
    assert!(matches!(s.next(), Next::Done));
    assert_eq!(s.turn_of_item(), [0, 0, 1, 2, 1, 2]);
}

#[test]
fn a_failed_turn_ends_its_conversation_and_think_time_is_waited() {
    let mut s = ConversationSource::new(plan(10, 1, 30));
    let a1 = take(&mut s);
    s.completed(&RequestRecord {
        item: a1.item,
        outcome: Outcome::Http,
        ..Default::default()
    });
    let b1 = take(&mut s);
    assert_eq!(s.turn_of_item(), [0, 0]);
    s.completed(&answer(&b1, "ok"));
    // The next turn waits for its think time: the source says until when, without
    // blocking (the driver sleeps, hearing Ctrl-C meanwhile).
    let Next::Wait(at) = s.next() else {
        panic!("expected a wait for the think time")
    };
    let waits = at.saturating_duration_since(Instant::now());
    assert!(waits > Duration::from_millis(20) && waits <= Duration::from_millis(30));
    std::thread::sleep(waits);
    let b2 = take(&mut s);
    assert_eq!(s.turn_of_item()[b2.item as usize], 1);
}

#[test]
fn turn_metrics_split_first_and_later_turns() {
    let rec = |item: u64, ttft_ms: u64, prompt: u32, cached: u32| RequestRecord {
        item,
        content_times: vec![Duration::from_millis(ttft_ms)],
        usage: crate::record::Usage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(1),
            cached_tokens: Some(cached),
            reasoning_tokens: None,
        },
        ..Default::default()
    };
    let records = [rec(0, 10, 100, 0), rec(1, 4, 200, 96), rec(2, 6, 300, 208)];
    let m = turn_metrics(&records, &[0, 1, 2]);
    assert_eq!(m[0], ("ttft_first_turn_mean", Some(10.0)));
    assert_eq!(m[1], ("ttft_later_turns_mean", Some(5.0)));
    assert_eq!(m[2], ("cache_hit_ratio_later_turns", Some(304.0 / 500.0)));
}

/// TTFT of first turns vs later turns (mean, ms) and the cached share of later turns'
/// prompts, from `records` and the turn of each item.
fn turn_metrics(
    records: &[RequestRecord],
    turn_of_item: &[u32],
) -> Vec<(&'static str, Option<f64>)> {
    let samples: Vec<TurnSample> = records.iter().filter_map(TurnSample::of).collect();
    turn_metrics_of(&samples, turn_of_item)
}

/// An answer's reasoning is left out of the conversation, as OpenAI clients append the
/// message's content only; `echo_reasoning` sends it back in `reasoning_content`.
#[test]
fn reasoning_is_sent_back_only_when_echoed() {
    for echo in [false, true] {
        let mut p = plan(4, 1, 0);
        p.echo_reasoning = echo;
        let mut s = ConversationSource::new(p);
        let first = take(&mut s);
        let mut reply = answer(&first, "Paris");
        reply.reasoning_text = "the capital".into();
        s.completed(&reply);
        let second = take(&mut s);
        let body: Value = serde_json::from_slice(&second.body).unwrap();
        let sent = &body["messages"][1];
        let want = match echo {
            false => json!({"role": "assistant", "content": "Paris"}),
            true => json!({"role": "assistant", "content": "Paris",
                           "reasoning_content": "the capital"}),
        };
        assert_eq!(sent, &want, "echo_reasoning = {echo}");
    }
}
