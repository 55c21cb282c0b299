//! The server-counter rules: the server counted more requests (or held more in flight)
//! than this client sent, so another client was loading it (`server_not_alone`); and the
//! run's usage totals against the server's own token counters (`tokens_not_conserved`),
//! held only when the server was alone.

use super::code::Code;
use super::judge::{Counts, RunFacts};
use super::thresholds::Thresholds;
use super::warning::RunWarning;

/// Requests the server saw beyond this client's, if it saw more than the threshold allows.
fn foreign(f: &RunFacts<'_>, t: &Thresholds) -> Option<String> {
    let s = f.server.as_ref()?;
    if let (Some(server), Some(client)) = (s.server.requests, s.client.requests) {
        if server > client + t.foreign_requests {
            return Some(format!(
                "the server finished {server} requests during the run, this client sent {client}"
            ));
        }
    }
    if let (Some(server), Some(client)) = (s.server_in_flight_max, s.client_in_flight_max) {
        if server > client + t.foreign_requests as f64 {
            return Some(format!(
                "the server held up to {server:.0} requests (running + waiting), this client \
                 at most {client:.0}"
            ));
        }
    }
    None
}

pub(super) fn not_alone(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    let seen = foreign(f, t)?;
    Some(RunWarning::new(
        Code::ServerNotAlone,
        format!(
            "{seen}: another client was loading it, so every latency and rate is shared \
             with someone else's load; run on a server nobody else uses (or raise [trust] \
             foreign_requests = {} if the extra requests are known probes)",
            t.foreign_requests
        ),
    ))
}

fn differs(
    name: &str,
    client: Option<u64>,
    server: Option<u64>,
    t: &Thresholds,
    n: u64,
) -> Option<String> {
    let (c, s) = (client?, server?);
    (!t.tokens_agree(c, s, n)).then(|| format!("{name}: usage sums to {c}, the server counted {s}"))
}

pub(super) fn counters(f: &RunFacts<'_>, t: &Thresholds) -> Option<RunWarning> {
    if foreign(f, t).is_some() {
        return None;
    }
    let s = f.server.as_ref()?;
    let (c, v): (&Counts, &Counts) = (&s.client, &s.server);
    // The client's sums cover only requests with usage: compare only when all had it.
    if c.requests_with_usage.is_some() && c.requests_with_usage != c.requests {
        return None;
    }
    let n = c.requests.unwrap_or(1);
    let seen: Vec<String> = [
        differs("prompt tokens", c.prompt_tokens, v.prompt_tokens, t, n),
        differs(
            "output tokens",
            c.completion_tokens,
            v.completion_tokens,
            t,
            n,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if seen.is_empty() {
        return None;
    }
    Some(RunWarning::new(
        Code::TokensNotConserved,
        format!(
            "the run's usage disagrees with the server's own counters ({}): the server's \
             usage is not what it computed; check a proxy between perfplan and the server, \
             or the server's accounting",
            seen.join("; ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::judge::ServerCounts;

    fn facts(server: Counts, client: Counts) -> ServerCounts {
        ServerCounts {
            server,
            client,
            ..ServerCounts::default()
        }
    }

    fn counts(requests: u64, prompt: u64, output: u64) -> Counts {
        Counts {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(output),
            requests: Some(requests),
            requests_with_usage: Some(requests),
            ..Counts::default()
        }
    }

    fn judged(s: ServerCounts) -> Vec<Code> {
        let f = RunFacts {
            server: Some(s),
            ..RunFacts::default()
        };
        let t = Thresholds::default();
        not_alone(&f, &t)
            .into_iter()
            .chain(counters(&f, &t))
            .map(|w| w.code)
            .collect()
    }

    #[test]
    fn another_client_and_unconserved_tokens_are_named() {
        assert!(judged(facts(counts(10, 1000, 320), counts(10, 1000, 320))).is_empty());
        assert_eq!(
            judged(facts(counts(14, 1400, 448), counts(10, 1000, 320))),
            [Code::ServerNotAlone]
        );
        assert_eq!(
            judged(facts(counts(10, 1000, 3200), counts(10, 1000, 320))),
            [Code::TokensNotConserved]
        );
        let mut crowded = facts(counts(10, 1000, 320), counts(10, 1000, 320));
        crowded.server_in_flight_max = Some(9.0);
        crowded.client_in_flight_max = Some(4.0);
        assert_eq!(judged(crowded), [Code::ServerNotAlone]);
    }
}
