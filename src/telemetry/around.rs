//! `ServerScrape`: one server's `/metrics` read around a run's passes, every replica's
//! page summed: the prefix-cache counters (the server-side hit ratio, each scrape stored
//! with the run as `server_metrics` `before`/`after`), the token and request counters of
//! `counts`, and the cache block size the page names. After a pass the server's counters
//! may lag its last response by a moment, so the closing scrape is repeated, within
//! `counts::SETTLE_LIMIT`, until they have caught up with what the client received.
//! Knows nothing about the engine.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::counts::{block_size, ClientSide, Counters};
use super::{find, first_ratio, frame::frame, page, parse, CounterNames, TelemetryError};
use crate::control;
use crate::store::{ServerPhase, Store};

/// How often the closing scrape is repeated while the counters catch up.
const SETTLE_EVERY: Duration = Duration::from_millis(20);

/// What one scrape of every replica read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scraped {
    /// The first candidate's two cache counters, every replica's summed; `None` when a
    /// replica has none (a sum that misses a replica would be a wrong ratio).
    pub cache: Option<BTreeMap<String, f64>>,
    /// The token and request counters, every replica's summed.
    pub counters: Option<Counters>,
    /// The cache block size the (first) page names.
    pub block_size: Option<u32>,
    /// The running requests and KV-cache usage, every replica's summed.
    pub gauges: Option<super::settle::Gauges>,
}

/// One server's counters, scraped around a run's passes; with replicas, every
/// replica's, summed.
#[derive(Debug, Clone)]
pub struct ServerScrape {
    pub candidates: Vec<CounterNames>,
    client: control::Client,
    others: Vec<control::Client>,
}

/// One replica's page: its cache pair, counters and block size.
async fn scrape_one(client: &control::Client, candidates: &[CounterNames]) -> Scraped {
    let mut paths: Vec<&str> = Vec::new();
    for c in candidates {
        if !paths.contains(&c.path.as_str()) {
            paths.push(&c.path);
        }
    }
    let mut out = Scraped::default();
    for path in paths {
        let Ok(url) = client.urls().server(path) else {
            continue;
        };
        let Some(text) = page(client, url).await else {
            continue;
        };
        if out.counters.is_none() {
            let frame = frame(&text);
            out.counters = Some(Counters::of(&frame));
            out.gauges = Some(super::settle::Gauges::of(&frame));
            out.block_size = block_size(&text);
        }
        let found = find(&parse(&text), candidates.iter().filter(|c| c.path == path));
        if let Some((_, values)) = found {
            out.cache = Some(values);
            break;
        }
    }
    out
}

impl ServerScrape {
    /// Scrapes the server `target` names (its URLs, TLS, key and headers).
    pub fn new(
        server: control::ClientSpec<'_>,
        candidates: Vec<CounterNames>,
    ) -> Result<ServerScrape, control::ControlError> {
        let client = control::Client::new(&control::ClientSpec {
            timeout: control::timeouts::SCRAPE,
            ..server
        })?;
        Ok(ServerScrape {
            candidates,
            client,
            others: Vec::new(),
        })
    }

    /// Scrapes `server` too (another replica), and adds its counters to the first's.
    pub(crate) fn with_replica(
        mut self,
        server: control::ClientSpec<'_>,
    ) -> Result<ServerScrape, control::ControlError> {
        self.others.push(control::Client::new(&control::ClientSpec {
            timeout: control::timeouts::SCRAPE,
            ..server
        })?);
        Ok(self)
    }

    /// Every replica's page, summed.
    pub(crate) async fn scrape_all(&self) -> Scraped {
        let mut all = scrape_one(&self.client, &self.candidates).await;
        for other in &self.others {
            let more = scrape_one(other, &self.candidates).await;
            all.cache = all.cache.zip(more.cache).map(|(mut values, more)| {
                for (name, v) in more {
                    *values.entry(name).or_insert(0.0) += v;
                }
                values
            });
            all.counters = all.counters.zip(more.counters).map(|(a, b)| a.plus(b));
            all.gauges = all.gauges.zip(more.gauges).map(|(a, b)| a.plus(b));
        }
        all
    }

    /// Scrapes, and stores the cache counters under `phase` when the server has them.
    pub async fn take(
        &self,
        store: &Arc<Mutex<Store>>,
        run_id: &str,
        phase: ServerPhase,
    ) -> Result<Scraped, TelemetryError> {
        let scraped = self.scrape_all().await;
        self.keep(store, run_id, phase, &scraped)?;
        Ok(scraped)
    }

    fn keep(
        &self,
        store: &Arc<Mutex<Store>>,
        run_id: &str,
        phase: ServerPhase,
        scraped: &Scraped,
    ) -> Result<(), TelemetryError> {
        if let Some(values) = &scraped.cache {
            store
                .lock()
                .map_err(|_| TelemetryError::Poisoned)?
                .write_server_metrics(run_id, phase, values)?;
        }
        Ok(())
    }

    /// The closing scrape of a pass that began at `before`, in which the client sent
    /// `client`: repeated until the server's counters have caught up with it (or
    /// `limit` passed), then stored under `phase` when given. How long it waited too.
    pub async fn settled(
        &self,
        before: &Scraped,
        client: &ClientSide,
        limit: Duration,
        keep: Option<(&Arc<Mutex<Store>>, &str, ServerPhase)>,
    ) -> Result<(Scraped, Duration), TelemetryError> {
        let start = Instant::now();
        let mut after = self.scrape_all().await;
        while let (Some(a), Some(b)) = (&after.counters, &before.counters) {
            if a.caught_up(b, client) || start.elapsed() >= limit {
                break;
            }
            tokio::time::sleep(SETTLE_EVERY).await;
            after = self.scrape_all().await;
        }
        if let Some((store, run_id, phase)) = keep {
            self.keep(store, run_id, phase, &after)?;
        }
        Ok((after, start.elapsed()))
    }

    /// The hit ratio between two scrapes (see `hit_ratio`).
    pub fn ratio(&self, before: &Scraped, after: &Scraped) -> Option<f64> {
        first_ratio(
            before.cache.as_ref()?,
            after.cache.as_ref()?,
            &self.candidates,
        )
    }
}
