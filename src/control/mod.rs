//! The control plane's one HTTP helper, used by every request perfplan sends: the URL
//! rule (`urls`: `base_url` with its path kept, a trailing `/v1` accepted once, joined with
//! each API's path or the endpoint's `paths` override), TLS settings and failures told in
//! words (`tls`), the one rustls configuration of every client (`tls_config`), every
//! timeout default (`timeouts`), the shared reqwest settings and the client of the
//! connection test, `check`, readiness, scrapes and cache resets (`client`), and the one
//! error-chain format (`chain`). The engine builds its load clients from the same rule
//! and settings.
//!
//! It must not know plans, runs, the engine, the store or the simulator: callers hand it
//! plain values (a base URL, path overrides, a CA file, a key, headers).

pub mod chain;
pub mod client;
pub mod timeouts;
pub mod tls;
pub mod tls_config;
pub mod urls;

pub use chain::{cause, chain, explain};
pub use client::{Client, ClientSpec, ControlError};
pub use tls::{tls_problem, Tls, TlsError};
pub use urls::{request_target, Route, UrlError, Urls};

#[cfg(test)]
mod tests {
    /// `control` is a leaf of the house: it must not use the stages that use it.
    #[test]
    fn knows_no_plans_runs_or_engine() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/control");
        let forbidden = [
            "crate::plan",
            "crate::planner",
            "crate::suite",
            "crate::engine",
            "crate::store",
            "crate::sim",
            "crate::cli",
        ];
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for f in forbidden {
                let found = text
                    .lines()
                    .filter(|l| !l.trim_start().starts_with("//"))
                    .any(|l| l.contains(&format!("{f}::")) || l.contains(&format!("{f};")));
                assert!(!found, "{} uses {f}", path.display());
            }
        }
    }
}
