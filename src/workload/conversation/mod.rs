//! Multi-turn runs: a `RequestSource` that keeps up to `max_active` conversations going
//! (closed loop: `concurrency` counts conversations in flight, each with at most one turn
//! in flight) and builds each next turn from the conversation so far plus the server's
//! real answer to the previous turn: its content (and tool-call text) only, as OpenAI
//! clients append it, or with its reasoning in `reasoning_content` too when the plan says
//! `echo_reasoning = true`. `requests` counts turns (warmup turns first). A turn
//! that fails ends its conversation. Think time: a conversation waits that long after an
//! answer before its next turn; when nothing else is in flight the source waits for it
//! (the driver has nothing to do meanwhile).

use std::collections::HashMap;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};

use super::turn_inputs::TurnPrompt;
use crate::api::{self, BodyInput, Prompt};
use crate::dataset::multi_turn::{Conversations, Script};
use crate::dataset::PromptCounter;
use crate::engine::{Next, PreparedRequest, RequestSource};
use crate::record::{Outcome, Phase, RequestRecord};
use crate::request::template::{self, TemplateInput};
use crate::request::RequestPlan;

/// How every turn's body is built.
#[derive(Debug, Clone)]
pub struct TurnTemplate {
    /// The run's resolved requests (API, model, fields, streaming, output length).
    pub request: RequestPlan,
    pub reject_fields: Vec<String>,
    pub seed: u64,
    /// The plan's seed: each conversation's session id derives from it (`session`).
    pub session_seed: u64,
    /// The compiled `body_template`, when the plan sets one: every turn's body.
    pub body_template: Option<Arc<minijinja::Environment<'static>>>,
}

/// Everything a multi-turn run needs, made by `prepare`.
#[derive(Debug, Clone)]
pub struct ConversationPlan {
    pub conversations: Conversations,
    pub template: TurnTemplate,
    /// Turns sent unmeasured first.
    pub warmup: usize,
    /// Turns in all (warmup included).
    pub total: usize,
    /// Conversations in flight at once.
    pub max_active: usize,
    pub think_time: Duration,
    /// Send each answer's reasoning back in its message's `reasoning_content`.
    pub echo_reasoning: bool,
    /// Every turn is a priming turn (the unmeasured pass of a warm run).
    pub priming: bool,
    /// The run's `duration`: no conversation starts after it, and those already started
    /// play their remaining turns (as EvalScope's multi-turn soft stop).
    pub stop_new_after: Option<Duration>,
    /// Counts each turn's prompt as the server sees it (the model's tokenizer).
    pub counter: Option<PromptCounter>,
    /// Where each turn's messages go as it is sent, to be counted off the timing path
    /// (see `turn_inputs`).
    pub prompt_sink: Option<Sender<TurnPrompt>>,
    /// A tool-calling run's tools and how their calls are answered (`kind = "tool_calls"`).
    pub tools: Option<ToolPlan>,
}

impl ConversationPlan {
    /// The same conversations as the warm run's unmeasured priming pass: every turn
    /// (warmup ones too), no think time.
    pub fn priming(&self) -> ConversationPlan {
        ConversationPlan {
            warmup: 0,
            think_time: Duration::ZERO,
            priming: true,
            ..self.clone()
        }
    }
}

struct Active {
    script: Script,
    messages: Vec<Value>,
    next_turn: usize,
    /// Tool rounds of the current turn so far (0: its user message is next or in flight).
    round: u32,
    /// `None` while a turn is in flight.
    ready_at: Option<Instant>,
}

impl Active {
    /// Turns still to hand out (the one in flight, if any, already handed).
    fn remaining(&self) -> usize {
        let in_flight = usize::from(self.ready_at.is_none());
        self.script
            .turns
            .len()
            .saturating_sub(self.next_turn + in_flight)
    }
}

/// The multi-turn source.
pub(crate) struct ConversationSource {
    plan: ConversationPlan,
    rng: ChaCha8Rng,
    active: Vec<Active>,
    next_script: usize,
    handed: usize,
    in_flight: usize,
    /// item → index in `active` is unstable, so items map to a conversation id.
    by_item: HashMap<u64, usize>,
    ids: Vec<usize>,
    next_id: usize,
    /// Turn index (0 = first) of every item handed out.
    turn_of_item: Vec<u32>,
    /// Problems building a body (reported after the run).
    pub errors: Vec<String>,
    /// When the first measured turn was handed out (the `duration` clock's start).
    started: Option<Instant>,
}

impl ConversationSource {
    pub fn new(plan: ConversationPlan) -> ConversationSource {
        let rng = ChaCha8Rng::seed_from_u64(plan.template.seed ^ 0x7475_726e);
        ConversationSource {
            plan,
            rng,
            active: Vec::new(),
            next_script: 0,
            handed: 0,
            in_flight: 0,
            by_item: HashMap::new(),
            ids: Vec::new(),
            next_id: 0,
            turn_of_item: Vec::new(),
            errors: Vec::new(),
            started: None,
        }
    }

    /// Whether a new conversation may start at `now` (before the run's `duration`).
    fn may_start(&self, now: Instant) -> bool {
        match (self.plan.stop_new_after, self.started) {
            (Some(limit), Some(at)) => now < at + limit,
            _ => true,
        }
    }

    /// Whether the turn budget (`requests`, in turns) leaves a turn for the conversation
    /// at `slot` (`active.len()`: a new one) once every older conversation has the turns
    /// it still needs: the older a conversation, the earlier its claim, so a run of N
    /// whole conversations' turns sends N whole conversations, whatever order the
    /// answers come back in, and a new one starts only on turns no other needs.
    fn budget_allows(&self, slot: usize) -> bool {
        let claimed: usize = self.active[..slot.min(self.active.len())]
            .iter()
            .map(Active::remaining)
            .sum();
        self.handed.saturating_add(claimed) < self.plan.total
    }

    /// The turn index of every item sent, by item.
    pub fn turn_of_item(&self) -> &[u32] {
        &self.turn_of_item
    }

    fn start_conversation(&mut self) -> bool {
        match self.plan.conversations.script(self.next_script) {
            Ok(script) => {
                self.next_script += 1;
                let mut messages = Vec::new();
                if let Some(s) = &script.system {
                    messages.push(json!({"role": "system", "content": s}));
                }
                self.active.push(Active {
                    script,
                    messages,
                    next_turn: 0,
                    round: 0,
                    ready_at: Some(Instant::now()),
                });
                self.ids.push(self.next_id);
                self.next_id += 1;
                true
            }
            Err(e) => {
                self.errors.push(crate::control::chain(&e));
                false
            }
        }
    }

    /// Builds the next turn of conversation `slot`.
    fn turn(&mut self, slot: usize) -> Option<PreparedRequest> {
        let item = self.handed as u64;
        let t = &self.plan.template;
        let conv = &mut self.active[slot];
        let turn = &conv.script.turns[conv.next_turn];
        if conv.round == 0 {
            conv.messages
                .push(json!({"role": "user", "content": turn.user}));
        }
        let limit = turn
            .max_tokens
            .or_else(|| t.request.output.draw(None, &mut self.rng));
        let mut f: Map<String, Value> = t.request.fields_with(limit);
        let tools = self.plan.tools.as_ref().map(|p| {
            f.insert("tools".into(), p.set.body_field(t.request.api));
            crate::api::tools::ToolTurn {
                round: u16::try_from(conv.round).unwrap_or(u16::MAX),
                set: p.set.clone(),
            }
        });
        let prompt = Prompt::Messages(conv.messages.clone());
        let built = build_turn_body(t, &prompt, &f);
        let (path, body) = match built {
            Ok(x) => x,
            Err(e) => {
                self.errors.push(e);
                return None;
            }
        };
        conv.ready_at = None;
        self.turn_of_item.push(conv.next_turn as u32);
        self.by_item.insert(item, self.ids[slot]);
        self.handed += 1;
        self.in_flight += 1;
        let phase = if self.plan.priming {
            Phase::Priming
        } else if (item as usize) < self.plan.warmup {
            Phase::Warmup
        } else {
            Phase::Measured
        };
        // The duration counts from the first turn that is not warmup: a priming pass
        // stops starting conversations after the same duration as the measured one.
        if phase != Phase::Warmup {
            self.started.get_or_insert_with(Instant::now);
        }
        let (max_output_tokens, running_usage) = api::body_reads(&body);
        self.hand_over(item, prompt);
        Some(PreparedRequest {
            item,
            phase,
            kind: t.request.api,
            path: path.into(),
            body,
            stream: t.request.stream,
            client_input_tokens: None,
            max_output_tokens,
            running_usage,
            headers: Vec::new(),
            session: Some(super::session::session_key(
                t.session_seed,
                self.ids[slot] as u64,
            )),
            class: None,
            cancel_after: None,
            tools,
            check: None,
        })
    }

    /// Gives the turn's messages to the counter of its input (see `turn_inputs`).
    fn hand_over(&self, item: u64, prompt: Prompt) {
        if let (Some(tx), Prompt::Messages(messages)) = (&self.plan.prompt_sink, prompt) {
            let _ = tx.send(TurnPrompt {
                priming: self.plan.priming,
                item,
                messages: tools::as_chat(messages),
            });
        }
    }

    fn ready_slot(&self, now: Instant) -> Option<usize> {
        (0..self.active.len()).find(|&slot| {
            self.active[slot].ready_at.is_some_and(|r| r <= now) && self.budget_allows(slot)
        })
    }
}

impl ConversationSource {
    /// Whether every turn the plan allows was handed out (a sharded duration-only run's
    /// limit, rather than its duration, ended it).
    pub(crate) fn used_all_turns(&self) -> bool {
        self.handed >= self.plan.total
    }
}

impl RequestSource for ConversationSource {
    fn next(&mut self) -> Next {
        if self.handed >= self.plan.total || !self.errors.is_empty() {
            return Next::Done;
        }
        let now = Instant::now();
        if let Some(slot) = self.ready_slot(now) {
            return self.turn(slot).map_or(Next::Done, Next::Request);
        }
        if self.active.len() < self.plan.max_active
            && self.may_start(now)
            && self.budget_allows(self.active.len())
            && self.start_conversation()
        {
            let slot = self.active.len() - 1;
            return self.turn(slot).map_or(Next::Done, Next::Request);
        }
        if self.in_flight > 0 {
            return Next::Pending;
        }
        // Only thinking conversations: ask again when the first is ready (the driver
        // waits without blocking its thread, so Ctrl-C and the duration are heard).
        // (Those the budget allows: the oldest always is while turns are left.)
        let waits = (0..self.active.len()).filter(|&slot| self.budget_allows(slot));
        match waits.filter_map(|slot| self.active[slot].ready_at).min() {
            Some(at) => Next::Wait(at),
            None => Next::Done,
        }
    }

    fn requests_left(&self) -> Option<usize> {
        Some(self.plan.total.saturating_sub(self.handed))
    }

    fn completed(&mut self, record: &RequestRecord) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let Some(id) = self.by_item.remove(&record.item) else {
            return;
        };
        let Some(slot) = self.ids.iter().position(|&i| i == id) else {
            return;
        };
        if record.outcome != Outcome::Ok {
            self.active.remove(slot);
            self.ids.remove(slot);
            return;
        }
        let calls = match &self.plan.tools {
            Some(tools) if !record.tool_calls.is_empty() => {
                Some(self.answer_tools(slot, tools.clone(), id, record))
            }
            _ => None,
        };
        let conv = &mut self.active[slot];
        if let Some(Ok(max_rounds)) = calls {
            if conv.round < max_rounds {
                conv.round += 1;
                conv.ready_at = Some(Instant::now());
                return;
            }
        }
        conv.round = 0;
        conv.next_turn += 1;
        if matches!(calls, Some(Err(()))) || conv.next_turn >= conv.script.turns.len() {
            self.active.remove(slot);
            self.ids.remove(slot);
            return;
        }
        if calls.is_none() {
            conv.messages
                .push(answer_message(record, self.plan.echo_reasoning));
        }
        conv.ready_at = Some(Instant::now() + self.plan.think_time);
    }
}

/// The body of one turn: the API's own rule, or the plan's `body_template`.
fn build_turn_body(
    t: &TurnTemplate,
    prompt: &Prompt,
    fields: &Map<String, Value>,
) -> Result<(&'static str, bytes::Bytes), String> {
    let input = BodyInput {
        model: &t.request.model,
        prompt,
        fields,
        stream: t.request.stream,
        include_usage: t.request.stream,
        continuous_usage: t.request.continuous_usage,
        reject_fields: &t.reject_fields,
    };
    match &t.body_template {
        None => api::build_body(t.request.api, &input).map_err(|e| crate::control::chain(&e)),
        Some(env) => {
            let t_input = TemplateInput {
                model: input.model,
                prompt: input.prompt,
                fields: input.fields,
                stream: input.stream,
                reject_fields: input.reject_fields,
            };
            template::render(env, &t_input)
                .map(|body| (t.request.api.path(), body))
                .map_err(|e| crate::control::chain(&e))
        }
    }
}

/// The assistant message a conversation appends after a turn: the answer's text, and
/// its reasoning too when `echo` (and there was some).
fn answer_message(record: &RequestRecord, echo: bool) -> Value {
    let mut message = json!({"role": "assistant", "content": record.output_text});
    if echo && !record.reasoning_text.is_empty() {
        message["reasoning_content"] = json!(record.reasoning_text);
    }
    message
}

/// Turns a multi-turn run plays in its priming pass (every turn of the measured pass).
pub(crate) fn conversation_turns(run: &crate::planner::RunSpec, turns: usize) -> usize {
    match run.settings.cache_state {
        crate::plan::CacheState::Warm => turns,
        crate::plan::CacheState::Cold => 0,
    }
}

mod tools;

pub use tools::ToolPlan;

#[cfg(test)]
mod tests;
