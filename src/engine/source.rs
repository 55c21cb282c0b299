//! `RequestSource`: where the engine takes its next request from, and hears how each one
//! ended (so a multi-turn conversation can build its next turn from the last answer).
//! `PreparedRequest` is a finished body: the engine never looks inside it.

use std::borrow::Cow;

use bytes::Bytes;

use crate::api::ApiKind;
use crate::record::{Phase, RequestRecord};

/// One request, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedRequest {
    /// Which item of the run's request set this is (copied to the record).
    pub item: u64,
    pub phase: Phase,
    pub kind: ApiKind,
    /// Path under the endpoint's base URL (`ApiKind::path()` for the usual APIs).
    pub path: Cow<'static, str>,
    /// The JSON body (see `api::build_body`).
    pub body: Bytes,
    /// Whether the body asks for a streamed answer.
    pub stream: bool,
    /// Input tokens counted by the client, copied to the record (used when usage is missing).
    pub client_input_tokens: Option<u32>,
    /// The output limit the body sends (`max_tokens`, `max_completion_tokens`,
    /// `max_output_tokens`): a stream far past it is cut as `overlong`.
    pub max_output_tokens: Option<u32>,
    /// The body asks for a running usage on every chunk (`stream_options.
    /// continuous_usage_stats`): the stream's token counts are read from it (see
    /// `record::TokenSource`); never trusted when not asked for.
    pub running_usage: bool,
    /// Headers of this request besides the endpoint's (a trace's recorded ones).
    pub headers: Vec<(String, String)>,
    /// The conversation's (or group's) session id: sent in the endpoint's session header,
    /// and what `balance = "session"` picks the replica by.
    pub session: Option<u64>,
    /// A mix's class of the request (copied to the record).
    pub class: Option<u16>,
    /// Abort the request this long after it was sent (the plan's `cancel`): the
    /// connection is dropped and the record ends `cancelled`, unless the response ended
    /// before.
    pub cancel_after: Option<std::time::Duration>,
    /// A tool-calling run's request: its round, and the tools its answer's calls are
    /// checked against (the record's `tools` tally).
    pub tools: Option<crate::api::tools::ToolTurn>,
    /// A golden request of the plan's `[checks]` (`Phase::Check`): what its answer is
    /// checked against (the record's `answer`).
    pub check: Option<std::sync::Arc<crate::api::golden::GoldenCase>>,
}

/// The answer of [`RequestSource::next`].
#[derive(Debug)]
pub enum Next {
    Request(PreparedRequest),
    /// Nothing now; ask again after a request in flight completes (multi-turn).
    /// With nothing in flight it means `Done`.
    Pending,
    /// Nothing before this instant (a think time); ask again then, or when a request in
    /// flight completes. The driver waits without blocking, so cancellation is heard.
    Wait(std::time::Instant),
    /// No more requests.
    Done,
}

/// Supplies a run's requests in order.
pub trait RequestSource {
    fn next(&mut self) -> Next;
    /// Called once per request, as it completes, before the next `next()`.
    fn completed(&mut self, _record: &RequestRecord) {}
    /// For `Load::Scheduled`: the intended send offset of every request, in order.
    fn offsets(&self) -> Option<Vec<std::time::Duration>> {
        None
    }
    /// Requests still to come, when known (the engine opens no more connections than that).
    fn requests_left(&self) -> Option<usize> {
        None
    }
}

/// The simple source: a list of requests sent in order (warmup ones first).
#[derive(Debug)]
pub struct VecSource {
    requests: std::vec::IntoIter<PreparedRequest>,
    /// Intended send offsets for `Load::Scheduled` (trace replay).
    offsets: Option<Vec<std::time::Duration>>,
}

impl VecSource {
    pub fn new(requests: Vec<PreparedRequest>) -> VecSource {
        VecSource {
            requests: requests.into_iter(),
            offsets: None,
        }
    }

    /// Requests to send at the given offsets (one per request, sorted) under `Load::Scheduled`.
    pub(crate) fn scheduled(
        requests: Vec<PreparedRequest>,
        offsets: Vec<std::time::Duration>,
    ) -> VecSource {
        VecSource {
            requests: requests.into_iter(),
            offsets: Some(offsets),
        }
    }

    /// Requests not handed out yet.
    pub fn remaining(&self) -> usize {
        self.requests.len()
    }
}

impl RequestSource for VecSource {
    fn next(&mut self) -> Next {
        match self.requests.next() {
            Some(r) => Next::Request(r),
            None => Next::Done,
        }
    }

    fn offsets(&self) -> Option<Vec<std::time::Duration>> {
        self.offsets.clone()
    }

    fn requests_left(&self) -> Option<usize> {
        Some(self.requests.len())
    }
}
