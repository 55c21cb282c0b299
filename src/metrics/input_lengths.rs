//! Input lengths, three ways: the target the plan asked for, the client's count, and the
//! server's `usage.prompt_tokens`. The run keeps their mean and largest differences, and a
//! warning when the server counts differently from the client (a chat template or
//! tokenizer that does not match the server's).

use crate::record::facts::{InputLengthFacts, LengthDiff};
use crate::record::{Outcome, Phase, RequestRecord};

#[derive(Default, Debug)]
struct Diff {
    sum: i64,
    max_abs: u64,
    n: u64,
}

impl Diff {
    fn add(&mut self, a: Option<u32>, b: Option<u32>) {
        if let (Some(a), Some(b)) = (a, b) {
            let d = i64::from(a) - i64::from(b);
            self.sum += d;
            self.max_abs = self.max_abs.max(d.unsigned_abs());
            self.n += 1;
        }
    }

    fn facts(&self) -> Option<LengthDiff> {
        (self.n > 0).then(|| LengthDiff {
            mean: self.sum as f64 / self.n as f64,
            max_abs: self.max_abs,
            requests: self.n,
        })
    }
}

/// One request's input length as the server, the client and the plan count it.
pub struct Counts {
    pub server: Option<u32>,
    pub client: Option<u32>,
    pub target: Option<u32>,
}

/// `input_lengths` folded one request at a time.
#[derive(Default, Debug)]
pub(crate) struct Lengths {
    st: Diff,
    ct: Diff,
    sc: Diff,
}

impl Lengths {
    /// Adds `r` when it is a measured successful request.
    pub fn add(&mut self, r: &RequestRecord, target: Option<u32>) {
        if r.phase == Phase::Measured && r.outcome == Outcome::Ok {
            self.add_counts(Counts {
                server: r.usage.prompt_tokens,
                client: r.client_input_tokens,
                target,
            });
        }
    }

    pub(crate) fn add_counts(&mut self, c: Counts) {
        self.st.add(c.server, c.target);
        self.ct.add(c.client, c.target);
        self.sc.add(c.server, c.client);
    }

    /// The three differences and the warning.
    pub fn finish(&self) -> (InputLengthFacts, Option<String>) {
        let (st, ct, sc) = (&self.st, &self.ct, &self.sc);
        let warning = (sc.n > 0 && sc.max_abs > 0).then(|| {
            format!(
                "the server counted the prompts differently from the client: mean {:+.1}, up to {} tokens \
                 (check that the model's tokenizer and chat template are the server's)",
                sc.sum as f64 / sc.n as f64,
                sc.max_abs
            )
        });
        let facts = InputLengthFacts {
            server_minus_target: st.facts(),
            client_minus_target: ct.facts(),
            server_minus_client: sc.facts(),
        };
        (facts, warning)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Usage;

    /// `{"server_minus_target", "client_minus_target", "server_minus_client"}` over the measured
    /// successful requests, and a warning when server and client disagree.
    pub fn input_lengths(
        records: &[RequestRecord],
        targets: &[u32],
    ) -> (InputLengthFacts, Option<String>) {
        let mut lengths = Lengths::default();
        records
            .iter()
            .for_each(|r| lengths.add(r, targets.get(r.item as usize).copied()));
        lengths.finish()
    }

    fn rec(item: u64, server: Option<u32>, client: Option<u32>) -> RequestRecord {
        RequestRecord {
            item,
            usage: Usage {
                prompt_tokens: server,
                ..Usage::default()
            },
            client_input_tokens: client,
            ..RequestRecord::default()
        }
    }

    #[test]
    fn differences_and_warning() {
        let targets = [100, 100];
        let (v, w) = input_lengths(
            &[rec(0, Some(100), Some(100)), rec(1, Some(103), Some(101))],
            &targets,
        );
        let stored = serde_json::to_value(v).unwrap();
        assert_eq!(stored["server_minus_target"]["max_abs"], 3);
        assert_eq!(stored["client_minus_target"]["mean"], 0.5);
        assert_eq!(v.server_minus_client.map(|d| d.max_abs), Some(2));
        assert!(w.unwrap().contains("up to 2 tokens"));
        let (v, w) = input_lengths(&[rec(0, None, Some(100))], &targets);
        let stored = serde_json::to_value(v).unwrap();
        assert!(stored["server_minus_target"].is_null() && w.is_none());
    }
}
