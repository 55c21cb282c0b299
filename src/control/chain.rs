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

/// The root cause of `e` in a few words, for a line a person reads while waiting: the
/// innermost error's text, its `(os error N)` left out, in lower case at its start
/// (`connection refused`, `dns error: failed to lookup address information: …`).
pub fn cause(e: &(dyn Error + 'static)) -> String {
    let mut inner: &(dyn Error + 'static) = e;
    while let Some(s) = inner.source() {
        inner = s;
    }
    let text = inner.to_string();
    let text = match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => chain(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_is_the_innermost_error_in_words() {
        let io = std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "Connection refused (os error 111)",
        );
        assert_eq!(cause(&E::Outer(io)), "connection refused");
    }

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
