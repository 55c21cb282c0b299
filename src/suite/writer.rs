//! Stores a run's request records as they complete, off the timing path: the engine's
//! sink hands each record to a channel; a thread writes them in batches, one transaction
//! each, so a crash or `kill -9` loses at most the requests in flight and the last
//! fraction of a second. A write that fails (disk full, database locked, read-only file,
//! I/O error) stops the run at once: the writer cancels the load and `finish` returns the
//! error, so no run is reported with rows missing.
//!
//! The queue between the engine and this thread is bounded ([`QUEUE`] records) and the
//! engine never waits on it: when it is full the database could not keep up, so the
//! run is stopped and fails with the rate the database sustained and the rate the run
//! needed (the record that met the full queue is still written: no row is dropped).
//! The writer also folds each record into the run's tally (`tally::Tally`: its metrics
//! and the figures its warnings read), off the timing path, and hands the tally back at
//! `finish`; no record outlives its batch.

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::SuiteError;
use crate::engine::CancelHandle;
use crate::record::RequestRecord;
use crate::store::{Store, StoredRequest};
use crate::tokenize::Tokenizer;

/// Tests only: the writer may grow the database by at most this many pages (SQLite's
/// `max_page_count`), so a full disk can be tested without filling one.
pub(crate) const MAX_PAGES_ENV: &str = "PERFPLAN_TEST_WRITER_MAX_PAGES";

/// Most records per transaction.
const BATCH: usize = 512;
/// Longest a record waits before it is written.
const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// Most records waiting for the writer: about a second of the engine's peak rate on this
/// kind of machine (the writer commits a batch every 200 ms), and about 10 MB (the queue's
/// slots are allocated when it opens).
pub(crate) const QUEUE: usize = 1 << 15;

/// While records keep coming, the writer naps this long between drains of the queue
/// instead of waiting on it: a waiting receiver costs the engine a wake-up (a futex call
/// and a context switch) for every record it hands over, about a sixth of the client's
/// CPU at 28,000 requests/s; a nap holds at most that many records' worth of the queue
/// (56 at that rate, against its 32,768).
const NAP: Duration = Duration::from_millis(2);

/// The writer thread of one run.
pub struct Writer {
    tx: Option<mpsc::SyncSender<RequestRecord>>,
    handle: Option<JoinHandle<Result<Written, SuiteError>>>,
    run_id: String,
    behind: Arc<Behind>,
    queue: usize,
}

/// What a writer wrote, and the run's records folded (in completion order).
#[derive(Debug)]
pub(crate) struct Written {
    pub rows: u64,
    pub tally: crate::measure::tally::Tally,
}

/// The engine's side of the queue: whether it ever met the queue full, and when the
/// writer started (for the rates in the error).
#[derive(Debug)]
struct Behind {
    full: std::sync::atomic::AtomicBool,
    /// Records the engine handed over.
    sent: std::sync::atomic::AtomicU64,
    since: Instant,
}

/// What the engine's sink sends the writer.
#[derive(Clone)]
pub(crate) struct WriterSender {
    tx: mpsc::SyncSender<RequestRecord>,
    behind: Arc<Behind>,
    cancel: CancelHandle,
}

impl WriterSender {
    /// Queues `record` without waiting; a full queue stops the run (see the module doc),
    /// and the record then waits for its place, so no row is lost.
    pub fn send(&self, record: RequestRecord) {
        self.behind
            .sent
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match self.tx.try_send(record) {
            Ok(()) | Err(mpsc::TrySendError::Disconnected(_)) => {}
            Err(mpsc::TrySendError::Full(record)) => {
                if !self
                    .behind
                    .full
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    self.cancel.cancel();
                }
                let _ = self.tx.send(record);
            }
        }
    }
}

/// What the writer needs besides the records.
pub(crate) struct WriterContext {
    pub store: Arc<Mutex<Store>>,
    pub run_id: String,
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// A mix: each class's tokenizer, which counts its responses' output instead.
    pub class_tokenizers: Vec<Option<Arc<Tokenizer>>>,
    pub targets: Arc<crate::workload::prepare::Targets>,
    pub log: Arc<crate::live::log::SuiteLog>,
    /// Cancelled when a write fails, so the load stops instead of running on unstored.
    pub cancel: CancelHandle,
    /// `[plan] store.text`: keep each response's text.
    pub keep_text: bool,
    /// Counts multi-turn turns' inputs (see `turn_inputs`).
    pub turn_inputs: Option<Arc<crate::workload::turn_inputs::TurnInputs>>,
    /// How the run's records are folded.
    pub tally: crate::measure::tally::TallySettings,
}

impl Writer {
    pub fn start(ctx: WriterContext) -> Result<Writer, SuiteError> {
        Writer::start_queued(ctx, QUEUE)
    }

    /// `start` with a queue of `queue` records.
    fn start_queued(ctx: WriterContext, queue: usize) -> Result<Writer, SuiteError> {
        if let Some(pages) = std::env::var(MAX_PAGES_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
        {
            let mut store = ctx.store.lock().map_err(|_| SuiteError::Poisoned)?;
            store.limit_growth(pages)?;
        }
        let (tx, rx) = mpsc::sync_channel::<RequestRecord>(queue);
        let run_id = ctx.run_id.clone();
        let behind = Arc::new(Behind {
            full: false.into(),
            sent: 0.into(),
            since: Instant::now(),
        });
        let handle = std::thread::spawn(move || {
            let tally = crate::measure::tally::Tally::new(ctx.tally.clone());
            let result = write_loop(&ctx, &rx, tally);
            if result.is_err() {
                ctx.cancel.cancel();
            }
            result
        });
        Ok(Writer {
            tx: Some(tx),
            handle: Some(handle),
            run_id,
            behind,
            queue,
        })
    }

    /// A sender for the engine's sink.
    pub(crate) fn sender(&self, cancel: &CancelHandle) -> Option<WriterSender> {
        self.tx.clone().map(|tx| WriterSender {
            tx,
            behind: self.behind.clone(),
            cancel: cancel.clone(),
        })
    }

    /// Writes what is left and returns what was written; the first failed write's
    /// error when one failed, or the database's falling behind when the queue filled.
    pub fn finish(mut self) -> Result<Written, SuiteError> {
        self.tx.take();
        let written = match self.handle.take().map(JoinHandle::join) {
            Some(Ok(result)) => result?,
            Some(Err(_)) | None => {
                return Err(SuiteError::WriterCrashed {
                    run: self.run_id.clone(),
                })
            }
        };
        if self.behind.full.load(std::sync::atomic::Ordering::Relaxed) {
            let secs = self.behind.since.elapsed().as_secs_f64().max(1e-3);
            return Err(SuiteError::WriterBehind {
                run: self.run_id.clone(),
                queue: self.queue,
                sustained: written.rows as f64 / secs,
                needed: self.behind.sent.load(std::sync::atomic::Ordering::Relaxed) as f64 / secs,
            });
        }
        Ok(written)
    }
}

fn write_loop(
    ctx: &WriterContext,
    rx: &mpsc::Receiver<RequestRecord>,
    mut tally: crate::measure::tally::Tally,
) -> Result<Written, SuiteError> {
    let mut pending: Vec<RequestRecord> = Vec::with_capacity(BATCH);
    let mut written = 0u64;
    let mut oldest: Option<Instant> = None;
    let mut busy = false;
    loop {
        let wait = oldest.map_or(FLUSH_EVERY, |t| FLUSH_EVERY.saturating_sub(t.elapsed()));
        let closed = match next_record(rx, wait, &mut busy) {
            Ok(mut record) => {
                let class = record.class.map(usize::from);
                let tokenizer = match class.and_then(|c| ctx.class_tokenizers.get(c)) {
                    Some(own) => own.as_deref(),
                    None => ctx.tokenizer.as_deref(),
                };
                crate::measure::output_count::count_output(&mut record, tokenizer);
                if let Some(t) = &ctx.turn_inputs {
                    t.fill(&mut record);
                }
                ctx.log.record(&ctx.run_id, &record);
                tally.add(&record);
                pending.push(record);
                oldest.get_or_insert_with(Instant::now);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let due = oldest.is_some_and(|t| t.elapsed() >= FLUSH_EVERY);
        if !pending.is_empty() && (closed || due || pending.len() >= BATCH) {
            written += flush(ctx, &pending).map_err(|source| stopped(ctx, written, source))?;
            // A warm run's priming pass repeats the measured items, whose targets the
            // measured pass sets again; only its own rows let go of them. A golden
            // request's item is no dataset item (`record::CHECK_ITEM_BASE`).
            for r in pending.iter().filter(|r| {
                !matches!(
                    r.phase,
                    crate::record::Phase::Priming | crate::record::Phase::Check
                )
            }) {
                ctx.targets.forget(r.item);
            }
            pending.clear();
            oldest = None;
        }
        if closed {
            return Ok(Written {
                rows: written,
                tally,
            });
        }
    }
}

/// The next record: one already queued at once; while records keep coming (`busy`: the
/// last one was already queued when asked for), after a nap of [`NAP`], so the engine
/// hands them over without waking this thread; else waiting on the queue up to `wait`.
fn next_record(
    rx: &mpsc::Receiver<RequestRecord>,
    wait: Duration,
    busy: &mut bool,
) -> Result<RequestRecord, RecvTimeoutError> {
    let queued = |busy: &mut bool| match rx.try_recv() {
        Ok(record) => {
            *busy = true;
            Some(Ok(record))
        }
        Err(TryRecvError::Disconnected) => Some(Err(RecvTimeoutError::Disconnected)),
        Err(TryRecvError::Empty) => None,
    };
    if let Some(next) = queued(busy) {
        return next;
    }
    if std::mem::take(busy) {
        std::thread::sleep(NAP.min(wait));
        if let Some(next) = queued(busy) {
            return next;
        }
    }
    rx.recv_timeout(wait)
}

/// The error of a failed write: which database, which run, how far it got.
fn stopped(ctx: &WriterContext, stored: u64, source: SuiteError) -> SuiteError {
    match source {
        SuiteError::Store(source) => SuiteError::Rows {
            run: ctx.run_id.clone(),
            path: ctx
                .store
                .lock()
                .map(|s| s.path().to_path_buf())
                .unwrap_or_default(),
            stored,
            source: Box::new(source),
        },
        other => other,
    }
}

fn flush(ctx: &WriterContext, records: &[RequestRecord]) -> Result<u64, SuiteError> {
    // A server may echo a credential in its error body: the stored excerpt hides it.
    let records: Vec<std::borrow::Cow<'_, RequestRecord>> = records
        .iter()
        .map(|r| match r.error.as_deref().map(|e| ctx.log.redact(e)) {
            Some(std::borrow::Cow::Owned(e)) => std::borrow::Cow::Owned(RequestRecord {
                error: Some(e),
                ..r.clone()
            }),
            _ => std::borrow::Cow::Borrowed(r),
        })
        .collect();
    let rows: Vec<StoredRequest<'_>> = records
        .iter()
        .map(|r| StoredRequest {
            record: r,
            target_input_tokens: match r.phase {
                crate::record::Phase::Check => None,
                _ => ctx.targets.get(r.item),
            },
        })
        .collect();
    let mut store = ctx.store.lock().map_err(|_| SuiteError::Poisoned)?;
    store.write_requests(&ctx.run_id, &rows)?;
    if ctx.keep_text {
        let texts = records.iter().map(|r| (r.index, r.output_text.as_str()));
        store.write_texts(&ctx.run_id, texts)?;
    }
    Ok(rows.len() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RunRow, SuiteInfo};

    fn writer_on(dir: &std::path::Path, queue: usize) -> (Writer, Arc<Mutex<Store>>, CancelHandle) {
        let mut store = Store::create(dir, &SuiteInfo::new("w", "")).unwrap();
        store
            .register_runs(&[RunRow {
                id: "r".into(),
                ordinal: 1,
                axes: serde_json::json!({}),
                settings: serde_json::json!({}),
            }])
            .unwrap();
        store.begin_run("r").unwrap();
        let store = Arc::new(Mutex::new(store));
        let cancel = CancelHandle::new();
        let ctx = WriterContext {
            store: store.clone(),
            run_id: "r".into(),
            tokenizer: None,
            class_tokenizers: Vec::new(),
            targets: Arc::default(),
            log: Arc::new(crate::live::log::SuiteLog::open(dir, false, None)),
            cancel: cancel.clone(),
            keep_text: false,
            turn_inputs: None,
            tally: crate::measure::tally::TallySettings::default(),
        };
        (Writer::start_queued(ctx, queue).unwrap(), store, cancel)
    }

    fn record(index: u64) -> RequestRecord {
        RequestRecord {
            index,
            item: index,
            output_text: "kept out".into(),
            raw: vec!["data: {}".into()],
            ..RequestRecord::default()
        }
    }

    #[test]
    fn a_full_queue_stops_the_run_and_loses_no_row() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, store, cancel) = writer_on(dir.path(), 4);
        let tx = writer.sender(&cancel).unwrap();
        // The database is busy (its lock held): once the writer has a batch to flush it
        // waits for the lock, and the queue fills behind it, however fast the thread is.
        let held = store.lock().unwrap();
        let total = (BATCH + 12) as u64;
        let sender = std::thread::spawn(move || {
            for i in 0..total {
                tx.send(record(i));
            }
        });
        let since = Instant::now();
        while !cancel.is_cancelled() && since.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(cancel.is_cancelled(), "a full queue cancels the load");
        drop(held);
        sender.join().unwrap();
        let err = writer.finish().unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, SuiteError::WriterBehind { queue: 4, .. }),
            "{text}"
        );
        assert!(
            text.contains("could not keep up") && text.contains("rows/s"),
            "{text}"
        );
        assert_eq!(
            store.lock().unwrap().request_rows("r").unwrap().len() as u64,
            total
        );
    }

    #[test]
    fn records_are_folded_without_priming() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, store, cancel) = writer_on(dir.path(), 64);
        let tx = writer.sender(&cancel).unwrap();
        tx.send(RequestRecord {
            phase: crate::record::Phase::Priming,
            ..record(0)
        });
        tx.send(record(1));
        drop(tx);
        let mut written = writer.finish().unwrap();
        assert_eq!(written.rows, 2);
        let summary = written
            .tally
            .summary(&crate::metrics::SummaryOptions::default());
        assert_eq!((summary.requests, summary.unmeasured), (1, 0));
        assert!(!cancel.is_cancelled());
        assert_eq!(store.lock().unwrap().request_rows("r").unwrap().len(), 2);
    }
}
