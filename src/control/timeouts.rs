//! Every timeout default of perfplan that a plan can change or a user waits on, each set
//! once here and documented once, in the book's "Timeouts" table (`docs/src/plan/limits.md`;
//! a test holds the two together). A request's own timeouts serve both the plan's `timeouts` defaults
//! (`plan::TimeoutsSpec`) and the engine's `Timeouts::default()`; the control plane's
//! bound readiness, the connection test, `check`, cache resets and scrapes.

use std::time::Duration;

/// `timeouts.connect`: longest wait to open a connection, for every request to an
/// endpoint (load and control plane).
pub(crate) const CONNECT: Duration = Duration::from_secs(10);

/// `timeouts.read`: longest wait for the next bytes of a response (or its headers).
pub(crate) const READ: Duration = Duration::from_secs(120);

/// `timeouts.total`: longest time from sending a request to the end of its response.
pub(crate) const TOTAL: Duration = Duration::from_secs(30 * 60);

/// `ready_timeout` of an endpoint perfplan launches: how long `ready` is polled.
pub(crate) const READY_LAUNCHED: Duration = Duration::from_secs(120);

/// Longest wait for the answer to one readiness poll of a launched server.
pub(crate) const READY_POLL: Duration = Duration::from_secs(5);

/// `ready_timeout` of an endpoint perfplan does not launch: how long the connection
/// test retries a refused connection (the server may still be starting).
pub(crate) const CONNECTION_TEST: Duration = Duration::from_secs(30);

/// Longest wait for one request of the connection test (`timeouts.read` if shorter).
pub(crate) const CONNECTION_TEST_REQUEST: Duration = Duration::from_secs(60);

/// Longest wait for one control request of `perfplan check` (`timeouts.read` if
/// shorter); its load probes keep the endpoint's own `timeouts`.
pub(crate) const CHECK_REQUEST: Duration = Duration::from_secs(120);

/// Longest wait for the HTTP answer of a prefix-cache reset (`reset_cache`).
pub(crate) const RESET: Duration = Duration::from_secs(30);

/// Longest wait for one Prometheus scrape of a server's `metrics`.
pub(crate) const SCRAPE: Duration = Duration::from_secs(5);

/// Longest wait for one self-description request (`/version`, `/info`, …) at an
/// endpoint's first use (`timeouts.read` if shorter); no answer leaves it out.
pub(crate) const SELF_DESCRIPTION: Duration = Duration::from_secs(2);

/// Time between SIGTERM and SIGKILL when perfplan stops a server it launched.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    /// The book's "Timeouts" table (`docs/src/plan/limits.md`): (first cell, default cell)
    /// of each row.
    fn book_rows() -> Vec<(String, String)> {
        let page = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/plan/limits.md");
        let text = std::fs::read_to_string(page).unwrap();
        let table = text.split("\n## Timeouts\n").nth(1).unwrap();
        table
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                (cells[1].to_string(), cells[2].trim_matches('`').to_string())
            })
            .collect()
    }

    #[test]
    fn the_book_table_holds_every_default_as_set_here() {
        let rows = book_rows();
        for (name, value) in [
            ("`timeouts.connect`", CONNECT),
            ("`timeouts.read`", READ),
            ("`timeouts.total`", TOTAL),
            ("ready, launched", READY_LAUNCHED),
            ("ready, not launched", CONNECTION_TEST),
            ("readiness poll", READY_POLL),
            ("connection test request", CONNECTION_TEST_REQUEST),
            ("`check` request", CHECK_REQUEST),
            ("cache reset", RESET),
            ("scrape", SCRAPE),
            ("self-description request", SELF_DESCRIPTION),
            ("stop grace", STOP_GRACE),
        ] {
            let found: Vec<&(String, String)> = rows.iter().filter(|r| r.0 == name).collect();
            assert_eq!(found.len(), 1, "{name}: one row, found {rows:?}");
            let documented = crate::units::parse_duration(&found[0].1).unwrap();
            assert_eq!(documented, value, "{name}");
        }
    }
}
