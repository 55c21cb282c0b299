//! `perfplan check` over an endpoint's other replicas (its `urls` after the first): each is
//! asked for the model list, and when it answers, the same cache-counter, telemetry and
//! API probes as the first. A replica's rows that agree with the first replica's (same
//! mode, check and verdict) are counted in one `replica K probes` row; those that do not
//! are shown, named `replica K …`, so a healthy fleet costs a line per replica and a broken
//! replica shows what is broken.

use super::probe::probe;
use super::{counters, row, telemetry_rows, CheckRow, Ctx, Verdict};
use crate::control::chain;
use crate::engine::{PreparedRequest, Target};
use crate::planner::RunSpec;

/// One API probe: the run it stands for, its mode as shown, the request sent.
pub(super) struct Probe<'r> {
    pub run: &'r RunSpec,
    pub mode: String,
    pub req: PreparedRequest,
}

/// The rows of every replica after the first; `first` holds the first replica's rows of
/// the same checks.
pub(super) async fn rows(
    ctx: &Ctx<'_>,
    run: &RunSpec,
    target: &Target,
    probes: &[Probe<'_>],
    first: &[CheckRow],
) -> Vec<CheckRow> {
    let mut rows = Vec::new();
    for (k, url) in target.replicas.iter().enumerate().skip(1) {
        let one = Target {
            base_url: url.clone(),
            ..target.clone()
        };
        let timeout = one
            .timeouts
            .read
            .min(crate::control::timeouts::CHECK_REQUEST);
        let client = one.control(timeout);
        let mut listed = match &client {
            Ok(c) => ctx.models(run, c).await.0,
            Err(e) => row(run, "server", "", Verdict::Fail, chain(e)),
        };
        listed.check = format!("replica {k} model listed");
        if !listed.detail.contains(url.as_str()) {
            listed.detail = format!("{url}: {}", listed.detail);
        }
        let answers = listed.verdict != Verdict::Fail;
        rows.push(listed);
        let Some(client) = client.ok().filter(|_| answers) else {
            continue;
        };
        let mut mine = vec![counters(run, &client).await];
        mine.extend(telemetry_rows::rows(run, &one).await);
        for p in probes {
            mine.extend(probe(p.run, &p.mode, &client, p.req.clone()).await);
        }
        rows.extend(compared(run, (k, url), mine, first));
    }
    rows
}

/// A replica's rows against the first replica's: one row counting those that agree, then
/// those that do not.
fn compared(
    run: &RunSpec,
    (k, url): (usize, &str),
    mine: Vec<CheckRow>,
    first: &[CheckRow],
) -> Vec<CheckRow> {
    let total = mine.len();
    let agrees = |r: &CheckRow| {
        first
            .iter()
            .any(|f| f.mode == r.mode && f.check == r.check && f.verdict == r.verdict)
    };
    let (same, differ): (Vec<CheckRow>, Vec<CheckRow>) = mine.into_iter().partition(agrees);
    let mut out = vec![row(
        run,
        "server",
        &format!("replica {k} probes"),
        Verdict::Pass,
        format!(
            "{url}: {} of {total} checks as replica 0{}",
            same.len(),
            if differ.is_empty() {
                ""
            } else {
                "; the others below"
            }
        ),
    )];
    out.extend(differ.into_iter().map(|mut r| {
        r.check = format!("replica {k} {}", r.check);
        r
    }));
    out
}
