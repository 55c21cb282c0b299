//! The one way a command ends on an error: a [`Failure`] holds the exit code (see `exit`)
//! and what to say; `cli::main` prints it once, to stderr, and exits with the code.
//! Commands return [`Ended`]: `Ok(code)` when they ran (a gate verdict is a code, not a
//! failure), `Err(failure)` when they stopped.

use std::fmt;

/// What a command ends with: the exit code of a command that ran, or why it stopped.
pub type Ended = Result<u8, Failure>;

/// A command stopped: its exit code and the text to print.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    text: String,
}

impl Failure {
    /// `error: {message}`, exiting with `code`.
    pub fn new(code: u8, message: impl fmt::Display) -> Self {
        Failure {
            code,
            text: format!("error: {message}\n"),
        }
    }

    /// `error: ` and the chain of an error's causes, exiting with `code`.
    pub fn of(code: u8, e: &(dyn std::error::Error + 'static)) -> Self {
        Failure::new(code, crate::control::chain(e))
    }

    /// Problems already rendered in their own form (a plan's located diagnostics, a
    /// dataset's file problems), exiting with `code`.
    pub fn rendered(code: u8, text: impl Into<String>) -> Self {
        let mut text = text.into();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        Failure { code, text }
    }

    /// This failure and then `other`'s text, with the first one's exit code: every
    /// problem said at once.
    pub fn and(mut self, other: Failure) -> Self {
        self.text.push_str(&other.text);
        self
    }

    /// The exit code.
    pub fn code(&self) -> u8 {
        self.code
    }

    /// Prints the text to stderr; the exit code.
    pub fn print(self) -> u8 {
        eprint!("{}", self.text);
        self.code
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_said_once_with_its_code() {
        let f = Failure::new(5, "no database at x.db");
        assert_eq!(f.code(), 5);
        assert_eq!(f.to_string(), "error: no database at x.db");
        let both = Failure::rendered(2, "error: at plan.toml:3: bad\n")
            .and(Failure::new(6, "cannot write y"));
        assert_eq!(both.code(), 2);
        assert_eq!(
            both.to_string(),
            "error: at plan.toml:3: bad\nerror: cannot write y"
        );
    }
}
