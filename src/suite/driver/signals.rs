//! Ctrl-C and SIGTERM during a suite: the first stops sending and lets the requests in
//! flight finish, and says at once the exact command that continues the suite (`perfplan
//! run … --resume DIR`, every other flag as given); a second exits at once (launched
//! servers killed). The command is said again when the suite has stopped.

use std::path::Path;
use std::sync::Arc;

use super::SuiteLog;
use crate::engine::CancelHandle;
use crate::servers;

/// A word of a command line as a POSIX shell reads it back (quoted when it must be).
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The command that continues the suite in `dir`: `args` (the command line that started
/// it, without an output folder) with `--resume DIR`.
pub fn resume_command(args: &[String], dir: &Path) -> String {
    let mut words: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
    words.push("--resume".into());
    words.push(shell_word(&dir.display().to_string()));
    words.join(" ")
}

/// What one signal is called in the lines said about it.
async fn next_signal() -> Option<&'static str> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            return tokio::signal::ctrl_c().await.ok().map(|_| "Ctrl-C");
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.ok().map(|_| "Ctrl-C"),
            r = term.recv() => r.map(|_| "SIGTERM"),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.ok().map(|_| "Ctrl-C")
    }
}

/// First signal: stop sending, let requests in flight finish, say how to continue.
/// Second: exit at once.
pub(super) async fn watch(
    cancel: CancelHandle,
    log: Arc<SuiteLog>,
    launched: servers::Registry,
    resume: Option<String>,
) {
    let Some(what) = next_signal().await else {
        return;
    };
    log.say(&format!(
        "\nperfplan: {what}: interrupted; letting requests in flight finish ({what} again to abort)"
    ));
    if let Some(cmd) = &resume {
        log.say(&format!(
            "perfplan: finished runs are stored; continue the suite with:\n  {cmd}"
        ));
    }
    cancel.cancel();
    if next_signal().await.is_some() {
        servers::kill_registered(&launched);
        std::process::exit(130);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resume_command_reads_back_in_a_shell() {
        let args: Vec<String> = [
            "perfplan",
            "run",
            "p.toml",
            "--set",
            "defaults.stop=a b",
            "--only",
            "concurrency=8",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            resume_command(&args, Path::new("outputs/x/20260101T000000Z")),
            "perfplan run p.toml --set 'defaults.stop=a b' --only concurrency=8 --resume outputs/x/20260101T000000Z"
        );
        assert_eq!(shell_word("it's"), "'it'\\''s'");
    }
}
