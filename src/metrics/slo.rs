//! Per-request service-level objectives (the plan's `[slo]`): which per-request
//! quantities an SLO may bound and which way, the one rule that reads `ttft = "<= 2s"`,
//! and whether one request meets every objective (goodput, `slo_attainment`). Times bound
//! a request from above, rates from below. Pure; knows nothing about plans or storage.

use std::time::Duration;

use super::condition::{parse_condition, Op, Threshold};
use super::definitions::{timing, MetricDefinitions, Timing};
use crate::record::RequestRecord;

/// What an SLO bounds: one figure of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloQuantity {
    Ttft,
    /// Time to first output (answer after any reasoning).
    Ttfo,
    /// The request's TPOT (met when it has one output token).
    Tpot,
    /// Every per-token gap of the request (met when it has none).
    Itl,
    /// Every gap between the request's content chunks as observed (met when it has none).
    ChunkGap,
    Latency,
    /// The request's output tokens / its latency (met when it has no rate).
    RequestOutputTps,
    /// The request's (output tokens − 1) / (latency − TTFT) (met when it has no TPOT).
    DecodeTps,
}

/// Every quantity an SLO may bound, by its `[slo]` key: the per-request quantities of
/// the metric vocabulary whose better direction is known.
pub(crate) const SLO_QUANTITIES: [(&str, SloQuantity); 8] = [
    ("ttft", SloQuantity::Ttft),
    ("ttfo", SloQuantity::Ttfo),
    ("tpot", SloQuantity::Tpot),
    ("itl", SloQuantity::Itl),
    ("chunk_gap", SloQuantity::ChunkGap),
    ("latency", SloQuantity::Latency),
    ("request_output_tps", SloQuantity::RequestOutputTps),
    ("decode_tps", SloQuantity::DecodeTps),
];

impl SloQuantity {
    pub fn parse(text: &str) -> Option<SloQuantity> {
        SLO_QUANTITIES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, q)| *q)
    }

    pub fn as_str(self) -> &'static str {
        SLO_QUANTITIES
            .iter()
            .find(|(_, q)| *q == self)
            .map_or("", |(name, _)| name)
    }

    /// Whether the objective is a floor (a rate) rather than a ceiling (a time).
    pub(crate) fn is_rate(self) -> bool {
        matches!(self, SloQuantity::RequestOutputTps | SloQuantity::DecodeTps)
    }
}

/// One objective: `quantity op limit` (milliseconds for times, tokens/s for rates) for
/// a request to count as good.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slo {
    pub quantity: SloQuantity,
    pub op: Op,
    pub limit: f64,
}

/// Why an `[slo]` entry cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error("unknown SLO `{quantity}`")]
    Unknown { quantity: String },
    #[error("{0}")]
    Condition(#[from] super::condition::ConditionError),
    #[error("slo `{quantity} = \"{text}\"` is not {}", if *rate { "a lower bound" } else { "an upper bound" })]
    Direction {
        quantity: String,
        text: String,
        rate: bool,
    },
}

impl SloError {
    /// What to write instead.
    pub fn help(&self) -> String {
        match self {
            SloError::Unknown { .. } => format!(
                "per-request SLOs are {}, e.g. ttft = \"<= 2s\", decode_tps = \">= 20\"",
                SLO_QUANTITIES.map(|(n, _)| n).join(", ")
            ),
            SloError::Direction { quantity, rate, .. } if *rate => {
                format!("a rate SLO bounds each request from below: {quantity} = \">= 20\"")
            }
            SloError::Direction { quantity, .. } => {
                format!("an SLO bounds each request from above: {quantity} = \"<= 2s\"")
            }
            SloError::Condition(_) => "write e.g. ttft = \"<= 2s\"".to_string(),
        }
    }
}

impl Slo {
    /// A ceiling of `ms` milliseconds on a time quantity.
    pub fn at_most(quantity: SloQuantity, ms: f64) -> Slo {
        Slo {
            quantity,
            op: Op::Le,
            limit: ms,
        }
    }

    /// Reads one `[slo]` entry: a time quantity takes `<=`/`<` with a duration, a rate
    /// `>=`/`>` with tokens/s; never a relative bound.
    pub fn parse(quantity: &str, text: &str) -> Result<Slo, SloError> {
        let q = SloQuantity::parse(quantity).ok_or_else(|| SloError::Unknown {
            quantity: quantity.to_string(),
        })?;
        // Parsed as a statistic of the quantity, whose unit it shares.
        let cond = parse_condition(&format!("{quantity}_max"), text)?;
        let wrong = || SloError::Direction {
            quantity: quantity.to_string(),
            text: text.to_string(),
            rate: q.is_rate(),
        };
        let Threshold::Absolute(limit) = cond.threshold else {
            return Err(wrong());
        };
        let fits = if q.is_rate() {
            matches!(cond.op, Op::Ge | Op::Gt)
        } else {
            matches!(cond.op, Op::Le | Op::Lt)
        };
        if !fits {
            return Err(wrong());
        }
        Ok(Slo {
            quantity: q,
            op: cond.op,
            limit,
        })
    }

    fn holds(&self, value: f64) -> bool {
        self.op.holds(value, self.limit)
    }
}

/// One successful request's figures that SLOs read.
pub(super) struct RequestFigures<'a> {
    pub timing: &'a Timing,
    pub ttfo: Option<Duration>,
    pub tpot: Option<Duration>,
    pub output_tokens: Option<u32>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Whether a successful request meets every objective of `slos` (all of none: yes). A
/// figure the request does not have (a TPOT of one token, a gap of one chunk) is met; a
/// TTFT it does not have is not.
pub(super) fn meets(f: &RequestFigures<'_>, slos: &[Slo]) -> bool {
    let t = f.timing;
    slos.iter().all(|slo| match slo.quantity {
        SloQuantity::Ttft => t.ttft.is_some_and(|x| slo.holds(ms(x))),
        SloQuantity::Ttfo => f.ttfo.is_some_and(|x| slo.holds(ms(x))),
        SloQuantity::Tpot => f.tpot.is_none_or(|x| slo.holds(ms(x))),
        SloQuantity::Itl => t.per_token().all(|(x, _)| slo.holds(ms(x))),
        SloQuantity::ChunkGap => t.gaps.iter().all(|x| slo.holds(ms(*x))),
        SloQuantity::Latency => slo.holds(ms(t.latency)),
        SloQuantity::RequestOutputTps => match f.output_tokens {
            Some(n) if !t.latency.is_zero() => slo.holds(f64::from(n) / t.latency.as_secs_f64()),
            _ => true,
        },
        SloQuantity::DecodeTps => match (f.tpot, f.output_tokens) {
            (Some(tpot), Some(_)) if !tpot.is_zero() => slo.holds(1.0 / tpot.as_secs_f64()),
            _ => true,
        },
    })
}

/// Whether a successful request meets every objective of `slos`, timed under `defs`
/// (the fold's own rule, for readers of stored rows such as `compare`'s bootstrap).
pub(crate) fn request_meets(r: &RequestRecord, defs: MetricDefinitions, slos: &[Slo]) -> bool {
    if slos.is_empty() {
        return true;
    }
    let t = timing(r, defs);
    let out = r.output_tokens().map(|(n, _)| n);
    let figures = RequestFigures {
        timing: &t,
        ttfo: r.ttfo(),
        tpot: out.and_then(|n| t.tpot(n)),
        output_tokens: out,
    };
    meets(&figures, slos)
}

/// An `[slo]` table that cannot be read: the entry and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid SLO `{text}`: {reason}")]
pub struct SloTableError {
    /// `ttft = "<= 2s"`.
    pub text: String,
    /// What is wrong and what to write instead.
    pub reason: String,
}

/// Every entry of an `[slo]` table (a suite's or a search's), in the table's order.
pub(crate) fn slos_of(
    slo: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<Slo>, SloTableError> {
    slo.iter()
        .map(|(quantity, text)| {
            Slo::parse(quantity, text).map_err(|e| SloTableError {
                text: format!("{quantity} = \"{text}\""),
                reason: format!("{e}: {}", e.help()),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(ttft_ms: u64, latency_ms: u64, gaps_ms: &[u64]) -> Timing {
        Timing {
            ttft: Some(Duration::from_millis(ttft_ms)),
            latency: Duration::from_millis(latency_ms),
            gaps: gaps_ms.iter().map(|g| Duration::from_millis(*g)).collect(),
            gap_tokens: Vec::new(),
        }
    }

    #[test]
    fn times_are_ceilings_and_rates_floors() {
        let s = Slo::parse("ttft", "<= 2s").unwrap();
        assert_eq!(
            (s.quantity, s.op, s.limit),
            (SloQuantity::Ttft, Op::Le, 2000.0)
        );
        let r = Slo::parse("decode_tps", ">= 20").unwrap();
        assert_eq!((r.quantity, r.limit), (SloQuantity::DecodeTps, 20.0));
        let up = Slo::parse("decode_tps", "<= 20").unwrap_err();
        assert!(up.to_string().contains("not a lower bound"), "{up}");
        assert!(up.help().contains(">= 20"));
        let down = Slo::parse("latency", ">= 1s").unwrap_err();
        assert!(down.to_string().contains("not an upper bound"), "{down}");
        assert!(Slo::parse("ttft", "<= -5%").is_err());
        let unknown = Slo::parse("ttfb", "<= 1s").unwrap_err();
        assert!(unknown.help().contains("request_output_tps"));
    }

    #[test]
    fn a_request_meets_every_objective_or_none() {
        // TTFT 100 ms, latency 1100 ms, 11 tokens: TPOT 100 ms, decode 10 tok/s,
        // request rate 10 tok/s; gaps of 100 ms.
        let t = timing(100, 1100, &[100; 10]);
        let f = RequestFigures {
            timing: &t,
            ttfo: t.ttft,
            tpot: t.tpot(11),
            output_tokens: Some(11),
        };
        let all = |slos: &[(&str, &str)]| {
            let slos: Vec<Slo> = slos
                .iter()
                .map(|(q, c)| Slo::parse(q, c).unwrap())
                .collect();
            meets(&f, &slos)
        };
        assert!(all(&[]));
        assert!(all(&[("ttft", "<= 100ms"), ("tpot", "<= 100ms")]));
        assert!(!all(&[("ttft", "< 100ms")]));
        assert!(all(&[
            ("ttfo", "<= 100ms"),
            ("itl", "<= 100ms"),
            ("chunk_gap", "<= 0.1s")
        ]));
        assert!(all(&[
            ("decode_tps", ">= 10"),
            ("request_output_tps", ">= 9.9")
        ]));
        assert!(!all(&[("request_output_tps", ">= 10.1")]));
        assert!(!all(&[("latency", "<= 1s")]));
        // One token: no TPOT, no decode rate: those objectives hold.
        let one = RequestFigures {
            timing: &t,
            ttfo: None,
            tpot: None,
            output_tokens: Some(1),
        };
        let slos = [
            Slo::parse("decode_tps", ">= 1000").unwrap(),
            Slo::at_most(SloQuantity::Tpot, 1.0),
        ];
        assert!(meets(&one, &slos));
    }
}
