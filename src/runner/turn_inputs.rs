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
use crate::engine::{Phase, RequestRecord};

/// One turn's prompt as sent.
#[derive(Debug, Clone)]
pub struct TurnPrompt {
    /// Sent by a warm run's priming pass (its items repeat the measured pass's).
    pub priming: bool,
    pub item: u64,
    pub messages: Vec<Value>,
}

/// Counts turns' prompts as their records reach the writer.
pub struct TurnInputs {
    counter: PromptCounter,
    state: Mutex<State>,
}

struct State {
    prompts: Receiver<TurnPrompt>,
    /// Prompts of turns whose records have not arrived yet.
    waiting: HashMap<(bool, u64), Vec<Value>>,
    /// The counts of the measured pass's turns (warmup included), by item.
    counted: HashMap<u64, u32>,
}

/// For a multi-turn run whose model has a tokenizer: the source's prompt channel is
/// connected, and the counter returned for the writer.
pub fn connect(prepared: &mut PreparedRun) -> Option<Arc<TurnInputs>> {
    let plan = prepared.conversation.as_mut()?;
    let counter = plan.counter.clone()?;
    let (tx, rx): (Sender<TurnPrompt>, _) = mpsc::channel();
    plan.prompt_sink = Some(tx);
    Some(Arc::new(TurnInputs {
        counter,
        state: Mutex::new(State {
            prompts: rx,
            waiting: HashMap::new(),
            counted: HashMap::new(),
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
        if let (false, Some(n)) = (priming, record.client_input_tokens) {
            state.counted.insert(record.item, n);
        }
    }

    /// Gives the engine's own copies of the measured pass's records their counts.
    pub fn apply(&self, records: &mut [RequestRecord]) {
        let Ok(state) = self.state.lock() else {
            return;
        };
        for r in records.iter_mut().filter(|r| r.phase != Phase::Priming) {
            if r.client_input_tokens.is_none() {
                r.client_input_tokens = state.counted.get(&r.item).copied();
            }
        }
    }
}
