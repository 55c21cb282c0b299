//! The prefix-cache hit ratio of a launched server that reports it only in its log:
//! llama-cpp-python's server (`Llama.generate: N prefix-match hit, remaining M prompt
//! tokens to eval`, printed only when N > 0) with llama.cpp's per-request timing line
//! (`prompt eval time = … / M tokens`, printed for every request). Over the span of the
//! log a run wrote (its byte offsets before and after the measured pass): hits are the
//! summed N, prompt tokens the summed N plus the evaluated M of every request. Pure text
//! and file offsets: knows no HTTP.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Most log bytes read for one run: a longer span gives no ratio.
pub(crate) const MAX_SPAN_BYTES: u64 = 64 << 20;

/// Token counts found in a log span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// Prompt tokens found in the cache (`N prefix-match hit`).
    pub hits: u64,
    /// Prompt tokens evaluated (`prompt eval time = … / M tokens`).
    pub evaluated: u64,
    /// Requests timed (`prompt eval time` lines).
    pub requests: u64,
}

impl LogCounts {
    /// Hits over prompt tokens; `None` when no request was timed.
    pub(crate) fn hit_ratio(&self) -> Option<f64> {
        let total = self.hits + self.evaluated;
        (self.requests > 0 && total > 0).then(|| self.hits as f64 / total as f64)
    }
}

/// The counts of a log text.
pub fn count(text: &str) -> LogCounts {
    let mut c = LogCounts::default();
    for line in text.lines() {
        if let Some(rest) = line.split("Llama.generate: ").nth(1) {
            let n = rest.split_once(" prefix-match hit").map(|(n, _)| n.trim());
            if let Some(n) = n.and_then(|n| n.parse::<u64>().ok()) {
                c.hits += n;
            }
        } else if line.contains("prompt eval time =") {
            let tokens = line
                .rsplit_once('/')
                .and_then(|(_, r)| r.split_whitespace().next()?.parse::<u64>().ok());
            if let Some(m) = tokens {
                c.evaluated += m;
                c.requests += 1;
            }
        }
    }
    c
}

/// A launched server's log, from the byte offset it had when a run's pass began.
#[derive(Debug, Clone)]
pub(crate) struct LogSpan {
    path: PathBuf,
    start: u64,
}

impl LogSpan {
    /// Marks the log's current end (`None` when there is no log).
    pub fn begin(path: &Path) -> Option<LogSpan> {
        let start = std::fs::metadata(path).ok()?.len();
        Some(LogSpan {
            path: path.to_path_buf(),
            start,
        })
    }

    /// The counts of what the server wrote since `begin` (`None`: unreadable, or more
    /// than `MAX_SPAN_BYTES`).
    pub fn counts(&self) -> Option<LogCounts> {
        let mut f = std::fs::File::open(&self.path).ok()?;
        let end = f.metadata().ok()?.len();
        // A log that was truncated (a server restarted with a fresh file) is read whole.
        let start = if end < self.start { 0 } else { self.start };
        if end - start > MAX_SPAN_BYTES {
            return None;
        }
        f.seek(SeekFrom::Start(start)).ok()?;
        let mut bytes = Vec::new();
        f.take(end - start).read_to_end(&mut bytes).ok()?;
        Some(count(&String::from_utf8_lossy(&bytes)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As llama-cpp-python 0.3.36's server logs two requests of one 17-token prompt.
    const LOG: &str = "\
INFO:     127.0.0.1:49772 - \"POST /v1/completions HTTP/1.1\" 200 OK
llama_perf_context_print: prompt eval time =     790.56 ms /    17 tokens (   46.50 ms per token,    21.50 tokens per second)
llama_perf_context_print:        eval time =     239.54 ms /     3 runs   (   79.85 ms per token,    12.52 tokens per second)
Llama.generate: 16 prefix-match hit, remaining 1 prompt tokens to eval
llama_perf_context_print: prompt eval time =       0.00 ms /     1 tokens (    0.00 ms per token,      inf tokens per second)
llama_perf_context_print:       total time =      55.69 ms /     5 tokens
";

    #[test]
    fn hits_over_prompt_tokens() {
        let c = count(LOG);
        assert_eq!(
            c,
            LogCounts {
                hits: 16,
                evaluated: 18,
                requests: 2
            }
        );
        assert_eq!(c.hit_ratio(), Some(16.0 / 34.0));
        assert_eq!(count("INFO: nothing here\n").hit_ratio(), None);
    }

    #[test]
    fn a_span_reads_only_what_came_after_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        std::fs::write(&path, LOG).unwrap();
        let span = LogSpan::begin(&path).unwrap();
        assert_eq!(span.counts().unwrap(), LogCounts::default());
        let mut text = LOG.to_string();
        text.push_str("Llama.generate: 8 prefix-match hit, remaining 2 prompt tokens to eval\n");
        text.push_str("llama_perf_context_print: prompt eval time = 1.0 ms /  2 tokens\n");
        std::fs::write(&path, text).unwrap();
        assert_eq!(span.counts().unwrap().hit_ratio(), Some(0.8));
        assert!(LogSpan::begin(&dir.path().join("none.log")).is_none());
    }
}
