//! The one error-chain format: an error and every cause under it on one line, `a: b: c`.
//! Every error perfplan prints or stores goes through `chain` (or `explain`, which adds
//! what a TLS failure means in words).

use std::error::Error;

/// The error and all its causes, joined by `: `. A cause whose text the previous one
/// already ends with (some libraries repeat their source in their own message) is not
/// repeated.
pub fn chain(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// `chain`, after what went wrong in words when a cause is a TLS failure.
pub fn explain(e: &(dyn Error + 'static)) -> String {
    let text = chain(e);
    match super::tls::tls_problem(e) {
        Some(words) => format!("{words}; cause: {text}"),
        None => text,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum E {
        #[error("endpoint `a`")]
        Outer(#[source] std::io::Error),
        #[error("cannot read x: {0}")]
        Repeats(#[source] std::io::Error),
    }

    #[test]
    fn every_cause_once() {
        let io = || std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        assert_eq!(chain(&E::Outer(io())), "endpoint `a`: no such file");
        assert_eq!(chain(&E::Repeats(io())), "cannot read x: no such file");
        assert_eq!(explain(&E::Outer(io())), "endpoint `a`: no such file");
    }
}
