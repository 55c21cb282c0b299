//! Requests built as they are sent, so a run's memory does not grow with its request
//! count: every run whose list nothing needs first (`prepare::Needs`), and every load
//! bounded only by its duration (no count, so no list could be built). A producer thread turns the dataset's
//! `PromptStream` into requests with the same `BodyBuilder` a pre-built list uses (item
//! `i` is the same request, with the same `x-request-id`), a window at a time and a few
//! windows ahead of the engine, which takes them in order through `BuiltSource`. Each
//! pass of a run (a warm run's priming pass, the measured pass) has its own producer.
//! The source serves any load: it is used where a list cannot be built first.

use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::prepare::{missed_target_warning, BodyBuilder, Targets};
use super::RequestLog;
use super::WorkloadError;
use crate::dataset::{DatasetContext, DatasetStats, PromptStream};
use crate::engine::{Next, PreparedRequest, RequestSource};
use crate::planner::RunSpec;
use crate::record::Phase;

/// Requests built per window.
const WINDOW: usize = 256;
/// Windows built ahead of the engine (at most `WINDOW × AHEAD` requests waiting).
const AHEAD: usize = 4;

/// Which pass of a run a source feeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// Warmup requests (items before `warmup`), then measured ones.
    Measured,
    /// A warm run's unmeasured pass: the measured items (from `warmup` on), in order.
    Priming,
}

/// How a run's requests are produced as they are sent; its first window is built by
/// `start`, so a dataset that cannot be built fails the run before it begins.
pub struct Production {
    run: RunSpec,
    /// Items of the measured pass (warmup included); `None` when the duration ends it.
    limit: Option<usize>,
    base_dir: PathBuf,
    ctx: DatasetContext,
    targets: Arc<Targets>,
    warnings: Vec<String>,
    /// The measured pass's first window, with the stream and builder after it.
    head: Option<Head>,
}

struct Head {
    window: Vec<PreparedRequest>,
    stream: PromptStream,
    builder: BodyBuilder,
}

impl std::fmt::Debug for Production {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Production")
            .field("run", &self.run.id)
            .field("warnings", &self.warnings)
            .finish_non_exhaustive()
    }
}

impl Production {
    /// Builds the first window of the run's requests.
    pub fn start(
        run: &RunSpec,
        ctx: DatasetContext,
        builder: BodyBuilder,
    ) -> Result<Production, WorkloadError> {
        let mut production = Production {
            run: run.clone(),
            limit: (ctx.count != usize::MAX).then_some(ctx.count),
            base_dir: ctx.base_dir.clone(),
            targets: Arc::new(Targets::pending()),
            warnings: Vec::new(),
            head: None,
            ctx,
        };
        let mut stream = PromptStream::new(&production.run.dataset, &production.ctx);
        let mut builder = builder;
        let window = build_window(
            &mut stream,
            &mut builder,
            &production.targets,
            (&production.run, production.limit),
        )?;
        if window.is_empty() {
            return Err(WorkloadError::Dataset {
                dataset: production.run.settings.dataset.name.clone(),
                source: crate::dataset::DatasetError::Invalid("it gives no prompt".into()),
            });
        }
        production.warnings = stream.take_warnings();
        production.head = Some(Head {
            window,
            stream,
            builder,
        });
        Ok(production)
    }

    /// Warnings of the first window (shown before the run).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Requests the run sends (both passes), when a count and not the duration ends it.
    pub fn planned(&self) -> Option<u64> {
        let limit = self.limit?;
        let warm = self.run.settings.cache_state == crate::plan::CacheState::Warm;
        let warmup = self.run.load.warmup as usize;
        let priming = if warm {
            limit.saturating_sub(warmup)
        } else {
            0
        };
        Some((limit + priming) as u64)
    }

    /// Target lengths by item, filled as requests are built.
    pub fn targets(&self) -> Arc<Targets> {
        self.targets.clone()
    }

    /// The source of one pass, its producer started. With `--debug` every body built is
    /// logged as it is built.
    pub fn source(
        &mut self,
        pass: Pass,
        log: Option<Arc<dyn RequestLog>>,
    ) -> Result<BuiltSource, WorkloadError> {
        let (first, stream, builder) = match (pass, self.head.take()) {
            (Pass::Measured, Some(h)) => (h.window, h.stream, h.builder),
            (_, head) => {
                self.head = head;
                let mut stream = PromptStream::new(&self.run.dataset, &self.ctx);
                stream.reported(&self.warnings);
                let builder = BodyBuilder::new(&self.run, &self.base_dir)?;
                (Vec::new(), stream, builder)
            }
        };
        let skip = match pass {
            Pass::Measured => 0,
            Pass::Priming => builder.warmup,
        };
        let (tx, rx) = sync_channel(AHEAD);
        let left = self.limit.map(|l| l.saturating_sub(skip));
        let producer = Producer {
            stream,
            builder,
            skip,
            pass,
            limit: self.limit,
            targets: self.targets.clone(),
            run: self.run.clone(),
            log: log.filter(|l| l.debug()),
        };
        if let Some(log) = &producer.log {
            log.requests(&self.run.id, &first);
        }
        let thread = std::thread::Builder::new()
            .name("perfplan-requests".into())
            .spawn(move || producer.run(tx))
            .map_err(WorkloadError::Thread)?;
        Ok(BuiltSource {
            rx: Some(rx),
            left,
            buffer: with_pass(first, pass, skip).into_iter(),
            thread: Some(thread),
            error: None,
            targets: self.targets.clone(),
            sent: DatasetStats::default(),
        })
    }
}

/// The next window of requests (empty when the dataset gives no more, or the run's
/// `limit` of items is built).
fn build_window(
    stream: &mut PromptStream,
    builder: &mut BodyBuilder,
    targets: &Targets,
    (run, limit): (&RunSpec, Option<usize>),
) -> Result<Vec<PreparedRequest>, WorkloadError> {
    let first = stream.produced();
    let n = limit.map_or(WINDOW, |l| WINDOW.min(l.saturating_sub(first)));
    if n == 0 {
        return Ok(Vec::new());
    }
    let items = stream
        .next_window(n)
        .map_err(|source| WorkloadError::Dataset {
            dataset: run.settings.dataset.name.clone(),
            source,
        })?;
    targets.set(first, items.iter().map(|i| i.target_input_tokens));
    items
        .iter()
        .enumerate()
        .map(|(k, item)| builder.build((first + k) as u64, item))
        .collect()
}

/// A window as a pass sends it: the priming pass leaves out the warmup items and marks
/// the rest `priming`.
fn with_pass(window: Vec<PreparedRequest>, pass: Pass, skip: usize) -> Vec<PreparedRequest> {
    match pass {
        Pass::Measured => window,
        Pass::Priming => window
            .into_iter()
            .filter(|r| r.item as usize >= skip)
            .map(|r| PreparedRequest {
                phase: Phase::Priming,
                cancel_after: None,
                ..r
            })
            .collect(),
    }
}

/// The producer thread's state.
struct Producer {
    stream: PromptStream,
    builder: BodyBuilder,
    skip: usize,
    pass: Pass,
    limit: Option<usize>,
    targets: Arc<Targets>,
    run: RunSpec,
    log: Option<Arc<dyn RequestLog>>,
}

type Window = Result<Vec<PreparedRequest>, WorkloadError>;

impl Producer {
    /// Builds windows until the source is dropped or the dataset ends; returns the
    /// dataset warnings met after the first window.
    fn run(mut self, tx: SyncSender<Window>) -> Vec<String> {
        loop {
            let window = build_window(
                &mut self.stream,
                &mut self.builder,
                &self.targets,
                (&self.run, self.limit),
            );
            let window = match window {
                Ok(w) if w.is_empty() => break,
                Ok(w) => with_pass(w, self.pass, self.skip),
                Err(e) => {
                    let _ = tx.send(Err(e));
                    break;
                }
            };
            if let Some(log) = &self.log {
                log.requests(&self.run.id, &window);
            }
            if window.is_empty() {
                continue;
            }
            if tx.send(Ok(window)).is_err() {
                break;
            }
        }
        self.stream.take_warnings()
    }
}

/// The engine's side: requests in the order they were built; `finish` stops the
/// producer and returns what it met.
pub struct BuiltSource {
    rx: Option<Receiver<Window>>,
    /// Requests still to hand out, when a count bounds the pass.
    left: Option<usize>,
    buffer: std::vec::IntoIter<PreparedRequest>,
    thread: Option<JoinHandle<Vec<String>>>,
    error: Option<String>,
    targets: Arc<Targets>,
    /// How the prompts handed out met their targets.
    sent: DatasetStats,
}

impl RequestSource for BuiltSource {
    /// Requests still to come, when a count bounds the pass.
    fn requests_left(&self) -> Option<usize> {
        self.left
    }

    fn next(&mut self) -> Next {
        loop {
            if let Some(r) = self.buffer.next() {
                self.count_miss(&r);
                self.left = self.left.map(|n| n.saturating_sub(1));
                return Next::Request(r);
            }
            let Some(rx) = &self.rx else {
                return Next::Done;
            };
            match rx.recv() {
                Ok(Ok(window)) => self.buffer = window.into_iter(),
                Ok(Err(e)) => {
                    self.error = Some(crate::control::chain(&e));
                    self.rx = None;
                }
                Err(_) => self.rx = None,
            }
        }
    }
}

impl BuiltSource {
    fn count_miss(&mut self, r: &PreparedRequest) {
        let Some(target) = self.targets.get(r.item) else {
            return;
        };
        self.sent.targeted += 1;
        if let Some(miss) = r.client_input_tokens.map(|c| c.abs_diff(target)) {
            if miss > 0 {
                self.sent.missed_target += 1;
                self.sent.max_abs_miss = self.sent.max_abs_miss.max(miss);
            }
        }
    }

    /// Stops the producer (a window being built is finished first) and returns its
    /// warnings: a dataset error that ended the requests early, new dataset warnings,
    /// and how many prompts missed their target length.
    pub fn finish(&mut self) -> Vec<String> {
        self.rx = None;
        let mut out: Vec<String> = self
            .error
            .take()
            .map(|e| {
                format!(
                    "no more requests could be built, so the run ended before its duration: {e}"
                )
            })
            .into_iter()
            .collect();
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(warnings) => out.extend(warnings),
                Err(_) => out.push("the request-building thread panicked".into()),
            }
        }
        out.extend(missed_target_warning(&self.sent));
        out
    }
}

impl Drop for BuiltSource {
    fn drop(&mut self) {
        self.rx = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{load_plan, LoadOptions};
    use crate::tokenize::TokenizerCache;

    /// One warm run of `dataset` with 300 measured requests after 20 warmup ones (more
    /// than one window), drawn output lengths.
    fn run(dir: &std::path::Path, dataset: &str) -> (RunSpec, PathBuf) {
        let path = dir.join("p.toml");
        std::fs::write(dir.join("lines.txt"), "alpha\nbravo charlie\ndelta\n").unwrap();
        let text = format!(
            "[plan]\nname = \"t\"\n[endpoints.a]\nbase_url = \"sim://a\"\n[models.m]\n\
             tokenizer = \"{tok}\"\n[datasets.d]\n{dataset}\n\
             [defaults]\noutput_tokens = {{ min = 4, max = 40 }}\n\
             [matrix]\ncache_state = \"warm\"\n\
             load = {{ concurrency = 4, requests = 300, warmup = 20 }}\n",
            tok = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2"),
        );
        std::fs::write(&path, text).unwrap();
        let env = |_: &str| None;
        let plan = load_plan(&path, &LoadOptions::new(Vec::new(), &env)).unwrap();
        let run = crate::planner::expand(&plan).unwrap().runs.remove(0);
        (run, plan.base_dir)
    }

    fn drain(source: &mut BuiltSource, n: usize) -> Vec<PreparedRequest> {
        (0..n)
            .map(|_| match source.next() {
                Next::Request(r) => r,
                other => panic!("source ended early: {other:?}"),
            })
            .collect()
    }

    const LIST: super::super::prepare::Needs = super::super::prepare::Needs {
        list: true,
        sharded: false,
    };

    /// Built as sent, a run's requests are the pre-built list's, position by position:
    /// the same items, bodies and phases, in the measured and the priming pass.
    #[test]
    fn requests_built_as_sent_equal_the_prebuilt_list() {
        for dataset in [
            "kind = \"random\"\ninput_tokens = { min = 8, max = 24 }\nprefix_tokens = 4",
            "kind = \"lines\"\npath = \"lines.txt\"",
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (run, base) = run(dir.path(), dataset);
            let cache = TokenizerCache::default();
            let prepared = super::super::prepare::prepare(&run, &base, &cache, LIST).unwrap();
            let listed = prepared.requests.listed().unwrap();
            assert_eq!(listed.requests.len(), 320);
            let tok = super::super::prepare::tokenizer(&run, &base, &cache).unwrap();
            let ctx = DatasetContext {
                base_dir: base.clone(),
                ..super::super::prepare::dataset_context(&run, &base, tok.clone(), usize::MAX)
            };
            let builder = BodyBuilder::new(&run, &base).unwrap();
            let mut production = Production::start(&run, ctx, builder).unwrap();
            let mut priming = production.source(Pass::Priming, None).unwrap();
            assert_eq!(drain(&mut priming, 300), listed.priming, "{dataset}");
            // Only what was handed out counts, not what was built ahead.
            let left = priming.finish().join("\n");
            assert!(
                left.is_empty() || left.contains(" of 300 prompts missed"),
                "{left}"
            );
            let mut measured = production.source(Pass::Measured, None).unwrap();
            assert_eq!(drain(&mut measured, 320), listed.requests, "{dataset}");
            // It goes on past the count a pre-built list stops at.
            assert_eq!(drain(&mut measured, 300).last().unwrap().item, 619);
            for item in [0, 100, 319, 400] {
                let prebuilt = prepared.targets.get(item);
                if item < 320 {
                    assert_eq!(production.targets().get(item), prebuilt, "{dataset}");
                }
            }
            // With the run's count, each pass ends where the list does.
            let ctx = super::super::prepare::dataset_context(&run, &base, tok, 320);
            let builder = BodyBuilder::new(&run, &base).unwrap();
            let mut counted = Production::start(&run, ctx, builder).unwrap();
            assert_eq!(counted.planned(), Some(620));
            let mut measured = counted.source(Pass::Measured, None).unwrap();
            assert_eq!(measured.requests_left(), Some(320));
            assert_eq!(drain(&mut measured, 320), listed.requests, "{dataset}");
            assert!(matches!(measured.next(), Next::Done), "{dataset}");
            let mut priming = counted.source(Pass::Priming, None).unwrap();
            assert_eq!(drain(&mut priming, 300), listed.priming, "{dataset}");
            assert!(matches!(priming.next(), Next::Done), "{dataset}");
        }
    }
}
