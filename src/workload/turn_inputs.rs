//! The client's input count of multi-turn turns. A turn's prompt is its whole history
//! (system message, user turns, the server's answers) through the chat template, so it is
//! only known once the previous answer is in. The conversation source hands each turn's
//! messages over a channel as it sends the turn; the database writer counts them when the
//! turn's record arrives, off the engine's thread (counting a long history takes
//! milliseconds, which would delay the timestamps of every stream in flight).

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::prepare::PreparedRun;
use crate::dataset::PromptCounter;
use crate::record::{Phase, RequestRecord};

/// One turn's prompt as sent.
#[derive(Debug, Clone)]
pub struct TurnPrompt {
    /// Sent by a warm run's priming pass (its items repeat the measured pass's).
    pub priming: bool,
    pub item: u64,
    pub messages: Vec<Value>,
}

/// Counts turns' prompts as their records reach the writer.
pub(crate) struct TurnInputs {
    counter: PromptCounter,
    state: Mutex<State>,
}

struct State {
    prompts: Receiver<TurnPrompt>,
    /// Prompts of turns whose records have not arrived yet.
    waiting: HashMap<(bool, u64), Vec<Value>>,
}

/// For a multi-turn run whose model has a tokenizer: the source's prompt channel is
/// connected, and the counter returned for the writer.
pub fn connect(prepared: &mut PreparedRun) -> Option<Arc<TurnInputs>> {
    let super::requests::Requests::Conversations { plan, .. } = &mut prepared.requests else {
        return None;
    };
    let counter = plan.counter.clone()?;
    let (tx, rx): (Sender<TurnPrompt>, _) = mpsc::channel();
    plan.prompt_sink = Some(tx);
    Some(Arc::new(TurnInputs {
        counter,
        state: Mutex::new(State {
            prompts: rx,
            waiting: HashMap::new(),
        }),
    }))
}

impl TurnInputs {
    /// Sets the record's client input count from its turn's prompt (sent before the
    /// record could complete, so it is in the channel by now).
    pub fn fill(&self, record: &mut RequestRecord) {
        if record.client_input_tokens.is_some() {
            return;
        }
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let state = &mut *state;
        while let Ok(p) = state.prompts.try_recv() {
            state.waiting.insert((p.priming, p.item), p.messages);
        }
        let priming = record.phase == Phase::Priming;
        let Some(messages) = state.waiting.remove(&(priming, record.item)) else {
            return;
        };
        record.client_input_tokens = self.counter.messages(&messages);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::DatasetContext;
    use crate::tokenize::Tokenizer;
    use serde_json::json;

    fn inputs() -> (TurnInputs, Sender<TurnPrompt>, Arc<Tokenizer>) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2");
        let tok = Tokenizer::load(&dir).unwrap();
        let ctx = DatasetContext {
            tokenizer: Some(tok.clone()),
            chat: true,
            ..DatasetContext::default()
        };
        let (tx, rx) = mpsc::channel();
        let state = State {
            prompts: rx,
            waiting: HashMap::new(),
        };
        let counter = PromptCounter::new(&ctx).unwrap().unwrap();
        let inputs = TurnInputs {
            counter,
            state: Mutex::new(state),
        };
        (inputs, tx, tok)
    }

    /// Each record gets its own turn's count (priming and measured items apart), the
    /// and a count already known is kept.
    #[test]
    fn turns_are_counted_by_their_whole_history() {
        let (inputs, tx, tok) = inputs();
        let first = vec![json!({"role": "user", "content": "Hello there"})];
        let mut second = first.clone();
        second.push(json!({"role": "assistant", "content": "Hi! How can I help?"}));
        second.push(json!({"role": "user", "content": "Tell me a joke"}));
        for (priming, item, messages) in
            [(true, 0, &first), (false, 0, &first), (false, 1, &second)]
        {
            let messages = messages.clone();
            tx.send(TurnPrompt {
                priming,
                item,
                messages,
            })
            .unwrap();
        }
        let rec = |item, phase| RequestRecord {
            item,
            phase,
            ..RequestRecord::default()
        };
        let mut records = [
            rec(1, Phase::Measured),
            rec(0, Phase::Priming),
            rec(0, Phase::Warmup),
        ];
        for r in &mut records {
            inputs.fill(r);
        }
        let want = |m: &[Value]| Some(tok.count_chat(m).unwrap() as u32);
        assert_eq!(records[0].client_input_tokens, want(&second));
        assert_eq!(records[1].client_input_tokens, want(&first));
        assert_eq!(records[2].client_input_tokens, want(&first));
        assert!(want(&second) > want(&first));
        let mut known = rec(1, Phase::Measured);
        known.client_input_tokens = Some(7);
        inputs.fill(&mut known);
        assert_eq!(known.client_input_tokens, Some(7));
    }
}
