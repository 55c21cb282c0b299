//! The sampler: scrapes every telemetry URL of an endpoint at its interval while a run's
//! measured pass is sent, on its own OS thread with its own current-thread runtime and
//! HTTP clients (the engine's worker threads never run a scrape), and stores each scrape
//! as it comes (`frame`). Scrapes of one round go one after the other, each with a
//! timeout below the interval, and a round never overlaps the next (a late round skips
//! the ticks it missed). A failing URL is counted, never an error of the run: the run
//! gets one warning per URL (how many scrapes failed, the first error).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tokio::sync::oneshot;
use url::Url;

use super::families::WAITING;
use super::frame::{frame, MAX_ROWS_PER_SCRAPE};
use super::queue::QueueGauge;
use super::scalars::UrlTally;
use super::TelemetryError;
use crate::control;
use crate::store::Store;

/// One page to scrape.
#[derive(Debug, Clone)]
pub struct ScrapeTarget {
    pub url: Url,
    /// The endpoint's client on its own origin (key and headers); a bare one elsewhere.
    pub client: control::Client,
    /// The endpoint's own page by default (no `telemetry` key): a server that does not
    /// answer it is not scraped again and not warned about.
    pub implicit: bool,
}

/// What to scrape, how often, and where to store it.
#[derive(Debug, Clone)]
pub struct TelemetryPlan {
    pub targets: Vec<ScrapeTarget>,
    pub interval: Duration,
}

impl TelemetryPlan {
    /// Each scrape's timeout: three quarters of the interval, at most the scrape default.
    pub(crate) fn scrape_timeout(&self) -> Duration {
        (self.interval * 3 / 4).min(control::timeouts::SCRAPE)
    }
}

/// One URL's scrapes over a run.
#[derive(Debug, Clone, Default)]
pub struct UrlRecord {
    pub url: String,
    pub implicit: bool,
    pub scrapes: u64,
    pub failed: u64,
    pub first_error: Option<String>,
    /// Most raw series one scrape left out (the row bound).
    pub dropped: usize,
    /// Scraping stopped: an implicit page that did not answer.
    pub given_up: bool,
    pub tally: UrlTally,
}

impl UrlRecord {
    /// The run's warnings about this URL.
    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.failed > 0 && !(self.implicit && self.given_up) {
            out.push(format!(
                "telemetry: {} of {} scrapes of {} failed (first: {})",
                self.failed,
                self.scrapes,
                self.url,
                self.first_error.as_deref().unwrap_or("unknown")
            ));
        }
        if self.dropped > 0 {
            out.push(format!(
                "telemetry: {} has {} more series than the {MAX_ROWS_PER_SCRAPE} stored per \
                 scrape; the last ones on its page were left out",
                self.url, self.dropped
            ));
        }
        out
    }
}

/// What a run's sampling left: per URL its counts and tallies, and warnings.
#[derive(Debug, Default)]
pub struct SamplerOutcome {
    pub urls: Vec<UrlRecord>,
    pub warnings: Vec<String>,
}

impl SamplerOutcome {
    pub(crate) fn tallies(&self) -> Vec<UrlTally> {
        self.urls.iter().map(|u| u.tally.clone()).collect()
    }
}

/// A running sampler; `finish` stops it after one last scrape.
pub(crate) struct Sampler {
    stop: Option<oneshot::Sender<()>>,
    thread: std::thread::JoinHandle<(Vec<UrlRecord>, Option<TelemetryError>)>,
    origin: SystemTime,
    store: Arc<Mutex<Store>>,
    run_id: String,
}

impl Sampler {
    /// Starts scraping now (the first scrape at once: the run's baseline).
    pub fn start(
        plan: &TelemetryPlan,
        store: Arc<Mutex<Store>>,
        run_id: &str,
        queue: Option<QueueGauge>,
    ) -> std::io::Result<Sampler> {
        let (tx, rx) = oneshot::channel();
        // One instant on both clocks: scrape times count from `at` on the thread, and
        // `origin` moves them to the run's clock at the end (a later `Instant` taken on
        // the thread would put every scrape early by the thread's start-up).
        let (origin, at) = (SystemTime::now(), Instant::now());
        let job = Job {
            plan: plan.clone(),
            store: store.clone(),
            run_id: run_id.to_string(),
            queue,
        };
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let wait = plan.scrape_timeout() * plan.targets.len().max(1) as u32;
        let thread = std::thread::Builder::new()
            .name("perfplan-telemetry".into())
            .spawn(move || job.run(rx, at, ready_tx))?;
        // The first round is the run's baseline (a histogram's or counter's increase is
        // read from it): it must end before the first request is sent, so the caller
        // waits for it, at most one scrape timeout per URL.
        let _ = ready.recv_timeout(wait + Duration::from_millis(100));
        Ok(Sampler {
            stop: Some(tx),
            thread,
            origin,
            store,
            run_id: run_id.to_string(),
        })
    }

    /// Stops after one last scrape; moves the stored times to the run's clock (`started`:
    /// the instant its requests' times count from).
    pub fn finish(mut self, started: SystemTime) -> Result<SamplerOutcome, TelemetryError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let (urls, store_error) = self.thread.join().unwrap_or_default();
        if let Some(e) = store_error {
            return Err(e);
        }
        let delta_ms = match self.origin.duration_since(started) {
            Ok(d) => d.as_millis() as i64,
            Err(e) => -(e.duration().as_millis() as i64),
        };
        if let Ok(mut store) = self.store.lock() {
            store.shift_telemetry(&self.run_id, delta_ms)?;
        }
        let mut urls = urls;
        for u in &mut urls {
            for (t, _) in [&mut u.tally.first, &mut u.tally.last]
                .into_iter()
                .flatten()
            {
                *t += delta_ms;
            }
        }
        let warnings = urls.iter().flat_map(UrlRecord::warnings).collect();
        Ok(SamplerOutcome { urls, warnings })
    }
}

/// The sampler thread's work.
struct Job {
    plan: TelemetryPlan,
    store: Arc<Mutex<Store>>,
    run_id: String,
    /// Each scrape's waiting requests, told as read (an exploring load's queue signal).
    queue: Option<QueueGauge>,
}

impl Job {
    fn run(
        self,
        mut stop: oneshot::Receiver<()>,
        origin: Instant,
        ready: std::sync::mpsc::Sender<()>,
    ) -> (Vec<UrlRecord>, Option<TelemetryError>) {
        let mut urls: Vec<UrlRecord> = self
            .plan
            .targets
            .iter()
            .map(|t| UrlRecord {
                url: t.url.to_string(),
                implicit: t.implicit,
                ..UrlRecord::default()
            })
            .collect();
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                for u in &mut urls {
                    u.failed = 1;
                    u.scrapes = 1;
                    u.first_error = Some(format!("cannot start the sampler's runtime: {e}"));
                }
                return (urls, None);
            }
        };
        let store_error = rt.block_on(async {
            let mut next = origin;
            loop {
                let round = self.round(&mut urls, origin).await;
                let _ = ready.send(());
                if let Err(e) = round {
                    return Some(e);
                }
                let now = Instant::now();
                next += self.plan.interval;
                if next <= now {
                    next = now + self.plan.interval;
                }
                tokio::select! {
                    _ = &mut stop => break,
                    () = tokio::time::sleep_until(next.into()) => {}
                }
            }
            self.round(&mut urls, origin).await.err()
        });
        (urls, store_error)
    }

    /// One scrape of every URL, one after the other; each stored as it comes.
    async fn round(&self, urls: &mut [UrlRecord], origin: Instant) -> Result<(), TelemetryError> {
        let timeout = self.plan.scrape_timeout();
        for (target, rec) in self.plan.targets.iter().zip(urls.iter_mut()) {
            if rec.given_up {
                continue;
            }
            let t_ms = origin.elapsed().as_millis() as i64;
            rec.scrapes += 1;
            match super::fetch(&target.client, target.url.clone(), timeout).await {
                Ok(page) => {
                    let f = frame(&page);
                    if let (Some(q), Some(waiting)) = (&self.queue, f.value(WAITING)) {
                        q.push(Instant::now(), waiting);
                    }
                    rec.dropped = rec.dropped.max(f.dropped);
                    self.store
                        .lock()
                        .map_err(|_| TelemetryError::Poisoned)?
                        .write_telemetry(&self.run_id, rec.url.as_str(), t_ms, &f.rows)?;
                    rec.tally.add(t_ms, f);
                }
                Err(e) => {
                    rec.failed += 1;
                    rec.first_error.get_or_insert(e);
                    rec.given_up = rec.implicit && rec.tally.first.is_none();
                }
            }
        }
        Ok(())
    }
}
