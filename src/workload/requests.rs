//! A run's requests as `prepare` made them: one of four kinds, each holding only what it
//! needs, so that the run's source, its priming pass and its shard's share each `match`
//! on the kind instead of testing which optional parts are set.

use std::time::Duration;

use super::conversation::ConversationPlan;
use super::produce::Production;
use crate::engine::PreparedRequest;

/// A run's requests, by how they are made.
#[derive(Debug)]
pub enum Requests {
    /// Built before the run (a load with a request count). `cap`: the list's length
    /// when a sharded load bounded only by its duration was cut to one (named when a
    /// shard runs out of it).
    List { list: Listed, cap: Option<usize> },
    /// Built as they are sent (a load bounded only by its duration, or a long one).
    AsSent(Box<Production>),
    /// A trace replay: its records as requests, sent at their recorded offsets
    /// (`list.schedule`), with each record's recorded `request_id` by item (empty for a
    /// public trace).
    Trace {
        list: Listed,
        ids: Vec<Option<String>>,
    },
    /// Multi-turn: the turns are built during the run from the answers. `cap` as a
    /// list's, in requests of the whole run.
    Conversations {
        plan: Box<ConversationPlan>,
        cap: Option<usize>,
    },
}

/// Requests built before the run.
#[derive(Debug, Default)]
pub struct Listed {
    /// Warmup requests, then measured ones.
    pub requests: Vec<PreparedRequest>,
    /// The warm-run priming pass (empty for cold runs).
    pub priming: Vec<PreparedRequest>,
    /// When each request is due, from the run's start: a trace's recorded offsets, a
    /// Poisson load's balanced schedule or a ramp's, a shard's arrivals of an open loop
    /// (`Load::Scheduled`); `None` for a list the load's own clock sends.
    pub schedule: Option<Vec<Duration>>,
}

impl Requests {
    /// The requests built before the run (a list's or a trace's).
    pub(crate) fn listed(&self) -> Option<&Listed> {
        match self {
            Requests::List { list, .. } | Requests::Trace { list, .. } => Some(list),
            Requests::AsSent(_) | Requests::Conversations { .. } => None,
        }
    }

    /// The limit a sharded duration-only load was prepared with, named when it is hit.
    pub(crate) fn cap(&self) -> Option<usize> {
        match self {
            Requests::List { cap, .. } | Requests::Conversations { cap, .. } => *cap,
            Requests::AsSent(_) | Requests::Trace { .. } => None,
        }
    }

    /// Whether the requests are conversations' turns.
    pub(crate) fn is_conversations(&self) -> bool {
        matches!(self, Requests::Conversations { .. })
    }

    /// When each listed request is due, if a schedule sends them.
    pub(crate) fn schedule(&self) -> Option<&[Duration]> {
        self.listed()?.schedule.as_deref()
    }
}
