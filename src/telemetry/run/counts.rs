//! A run's counts against its server's (`telemetry::counts`): the server scraped before a
//! warm run's priming pass, between it and the measured pass, and after the measured pass
//! (each closing scrape waiting, within a bound, for the counters to catch up); the
//! client's sums of usage over the requests sent in each window, added as the engine
//! hands its records over; the cache block size the server names, for the planned hit
//! ratio.

use std::sync::Mutex;

use super::RunTelemetry;
use crate::record::{Phase, RequestRecord};
use crate::store::ServerPhase;
use crate::telemetry::counts::{
    ClientSide, PassCounts, ServerCounts, MEASURED_WINDOW, SETTLE_LIMIT,
};
use crate::telemetry::Scraped;
use crate::telemetry::TelemetryError;

/// The client's sums of the run's windows, added record by record as they are sent on.
#[derive(Debug, Default)]
pub struct Window {
    priming: Mutex<ClientSide>,
    measured: Mutex<ClientSide>,
}

impl Window {
    /// Counts a record in its pass's window.
    pub fn add(&self, r: &RequestRecord) {
        let side = match r.phase {
            Phase::Priming => &self.priming,
            Phase::Warmup | Phase::Measured | Phase::Check => &self.measured,
        };
        if let Ok(mut side) = side.lock() {
            side.add(r);
        }
    }

    fn priming(&self) -> ClientSide {
        self.priming.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn measured(&self) -> ClientSide {
        self.measured.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// The scrape before the run's first request (`None` without a server to scrape).
pub async fn opening(ctx: &RunTelemetry) -> Option<Scraped> {
    Some(ctx.server.as_ref()?.scrape_all().await)
}

/// The scrape that opens the measured pass (stored as `before`), after a priming pass of
/// `primed` requests that began at `opening`; with the priming pass's own counts.
pub(crate) async fn before_measured(
    ctx: &RunTelemetry,
    run_id: &str,
    opening: Option<&Scraped>,
    (primed, window): (u64, &Window),
) -> Result<(Option<Scraped>, Option<PassCounts>), TelemetryError> {
    let Some(server) = &ctx.server else {
        return Ok((None, None));
    };
    let keep = Some((&ctx.store, run_id, ServerPhase::Before));
    let Some(opening) = opening.filter(|_| primed > 0) else {
        return Ok((
            Some(server.take(&ctx.store, run_id, ServerPhase::Before).await?),
            None,
        ));
    };
    let client = window.priming();
    let (before, _) = server.settled(opening, &client, SETTLE_LIMIT, keep).await?;
    let pass = PassCounts {
        server: counters_since(&before, opening),
        client,
    };
    Ok((Some(before), Some(pass)))
}

/// What the measured pass's closing scrape gives the run.
pub(crate) struct Closing {
    /// The server's prefix-cache hit ratio over the pass.
    pub ratio: Option<f64>,
    pub counts: Option<ServerCounts>,
}

impl Closing {
    /// The run's counts: the measured pass's, with the priming pass's and the server's
    /// peak in flight (the telemetry's).
    pub(crate) fn counts_with(
        self,
        priming: Option<PassCounts>,
        telemetry: &super::watch::Observed,
    ) -> Option<ServerCounts> {
        self.counts.map(|mut c| {
            c.priming = priming;
            c.server_in_flight_max = telemetry.server_in_flight_max();
            c
        })
    }
}

/// The scrape that closes the measured pass (stored as `after`), once the server's
/// counters have caught up with what the client received; the counts of the window.
pub(crate) async fn after_measured(
    ctx: &RunTelemetry,
    run_id: &str,
    before: Option<&Scraped>,
    window: &Window,
    client_in_flight_max: u64,
) -> Result<Closing, TelemetryError> {
    let (Some(server), Some(before)) = (&ctx.server, before) else {
        return Ok(Closing {
            ratio: None,
            counts: None,
        });
    };
    let client = window.measured();
    let keep = Some((&ctx.store, run_id, ServerPhase::After));
    let (after, waited) = server.settled(before, &client, SETTLE_LIMIT, keep).await?;
    let counts = ServerCounts {
        server: counters_since(&after, before),
        client,
        window: MEASURED_WINDOW.into(),
        server_in_flight_max: None,
        client_in_flight_max: Some(client_in_flight_max),
        settle_ms: u64::try_from(waited.as_millis()).unwrap_or(u64::MAX),
        priming: None,
    };
    Ok(Closing {
        ratio: server.ratio(before, &after),
        counts: Some(counts),
    })
}

fn counters_since(after: &Scraped, before: &Scraped) -> crate::telemetry::counts::ServerSide {
    match (&after.counters, &before.counters) {
        (Some(a), Some(b)) => a.since(b),
        _ => Default::default(),
    }
}

/// After a run whose client aborted requests: the server's running requests and
/// KV-cache usage polled until back at their level in `before` (the scrape opening the
/// measured pass), within `limit`; `None` without a limit (a run without `cancel`), a
/// server scrape or either gauge.
pub(crate) async fn settle_gauges(
    ctx: &RunTelemetry,
    before: Option<&Scraped>,
    limit: Option<std::time::Duration>,
) -> Option<crate::telemetry::settle::Settle> {
    let limit = limit?;
    let server = ctx.server.as_ref()?;
    let gauges = before?.gauges?;
    server.gauges_settled(gauges, limit).await
}
