//! Stores a run's request records as they complete, off the timing path: the engine's
//! sink hands each record to a channel; a thread writes them in batches, one transaction
//! each, so a crash or `kill -9` loses at most the requests in flight and the last
//! fraction of a second.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::RunnerError;
use crate::engine::RequestRecord;
use crate::store::{Store, StoredRequest};
use crate::tokenize::Tokenizer;

/// Most records per transaction.
const BATCH: usize = 512;
/// Longest a record waits before it is written.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// The writer thread of one run.
pub struct Writer {
    tx: Option<mpsc::Sender<RequestRecord>>,
    handle: Option<JoinHandle<Result<u64, RunnerError>>>,
}

/// What the writer needs besides the records.
pub struct WriterContext {
    pub store: Arc<Mutex<Store>>,
    pub run_id: String,
    pub tokenizer: Option<Arc<Tokenizer>>,
    pub targets: Arc<Vec<Option<u32>>>,
    pub log: Arc<super::log::SuiteLog>,
    /// `[plan] store.text`: keep each response's text.
    pub keep_text: bool,
}

impl Writer {
    pub fn start(ctx: WriterContext) -> Writer {
        let (tx, rx) = mpsc::channel::<RequestRecord>();
        let handle = std::thread::spawn(move || write_loop(&ctx, &rx));
        Writer {
            tx: Some(tx),
            handle: Some(handle),
        }
    }

    /// A sender for the engine's sink.
    pub fn sender(&self) -> Option<mpsc::Sender<RequestRecord>> {
        self.tx.clone()
    }

    /// Writes what is left and returns the number of rows written.
    pub fn finish(mut self) -> Result<u64, RunnerError> {
        self.tx.take();
        match self.handle.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            _ => Ok(0),
        }
    }
}

/// The client's output token count, used when the server sent no usage.
pub fn count_output(record: &mut RequestRecord, tokenizer: Option<&Tokenizer>) {
    if record.usage.completion_tokens.is_some() || record.output_text.is_empty() {
        return;
    }
    if let Some(t) = tokenizer {
        record.client_output_tokens = t.count(&record.output_text, false).ok().map(|n| n as u32);
    }
}

fn write_loop(ctx: &WriterContext, rx: &mpsc::Receiver<RequestRecord>) -> Result<u64, RunnerError> {
    let mut pending: Vec<RequestRecord> = Vec::with_capacity(BATCH);
    let mut written = 0u64;
    let mut oldest: Option<Instant> = None;
    loop {
        let wait = oldest.map_or(FLUSH_EVERY, |t| FLUSH_EVERY.saturating_sub(t.elapsed()));
        let closed = match rx.recv_timeout(wait) {
            Ok(mut record) => {
                count_output(&mut record, ctx.tokenizer.as_deref());
                ctx.log.record(&ctx.run_id, &record);
                pending.push(record);
                oldest.get_or_insert_with(Instant::now);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let due = oldest.is_some_and(|t| t.elapsed() >= FLUSH_EVERY);
        if !pending.is_empty() && (closed || due || pending.len() >= BATCH) {
            written += flush(ctx, &pending)?;
            pending.clear();
            oldest = None;
        }
        if closed {
            return Ok(written);
        }
    }
}

fn flush(ctx: &WriterContext, records: &[RequestRecord]) -> Result<u64, RunnerError> {
    let rows: Vec<StoredRequest<'_>> = records
        .iter()
        .map(|r| StoredRequest {
            record: r,
            target_input_tokens: ctx.targets.get(r.item as usize).copied().flatten(),
            client_input_tokens: r.client_input_tokens,
        })
        .collect();
    let mut store = ctx.store.lock().map_err(|_| RunnerError::Poisoned)?;
    store.write_requests(&ctx.run_id, &rows)?;
    if ctx.keep_text {
        let texts = records.iter().map(|r| (r.index, r.output_text.as_str()));
        store.write_texts(&ctx.run_id, texts)?;
    }
    Ok(rows.len() as u64)
}
