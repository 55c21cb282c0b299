//! The exploring load's rules (the book, loads/explore.md): from each step's figures, the
//! next level to hold (users or req/s) or the end of the run ([`Explorer`]), and from the stored
//! steps, the knee and the saturation point ([`knee`]). Pure: no clock, no I/O; knows
//! nothing of plans or of the engine (the suite feeds it the records of each step).

pub use super::step_tally::StepTally;

/// The explore metrics, in registry order.
pub(crate) const EXPLORE_NAMES: [&str; 6] = [
    "knee_concurrency",
    "knee_rps",
    "knee_output_tps",
    "saturation_concurrency",
    "saturation_rps",
    "saturation_output_tps",
];

/// The names of an exploring run's knee and saturation levels: requests in flight, or
/// an open loop's arrivals per second.
pub(crate) fn level_names(by_rate: bool) -> (&'static str, &'static str) {
    if by_rate {
        ("knee_rps", "saturation_rps")
    } else {
        ("knee_concurrency", "saturation_concurrency")
    }
}

/// The exploring load's settings, resolved (defaults applied). Levels are whole units of
/// `1 / scale`: requests in flight (scale 1), or req/s in whole numbers (scale 1) or, when
/// the plan's `from` or `max` is fractional, in hundredths (scale 100); the walk grows and
/// bisects on units, so a level is always one the plan can name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The first level, in units.
    pub from: u32,
    /// The highest level ever held, in units.
    pub max: u32,
    /// Units in one request in flight or one req/s.
    pub scale: u32,
    /// Each growing step's factor (> 1).
    pub growth: f64,
    /// A step saturates when its output tok/s rose by less than this share over the
    /// reference step's, scaled by the load's own rise over one full `growth`.
    pub min_gain: f64,
    /// A step saturates when its TTFT p99 is above this multiple of the first step's.
    pub ttft_factor: f64,
    /// A step saturates when more than this share of its requests failed.
    pub max_failures: f64,
    /// Bisection probes between the last level that gained and the first that did not.
    pub probes: u32,
}

impl Rule {
    /// A level in units as requests in flight or req/s.
    pub fn value(&self, units: u32) -> f64 {
        f64::from(units) / f64::from(self.scale.max(1))
    }
}

/// What one step measured, from the requests that ended in it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepFigures {
    /// In the rule's units.
    pub level: u32,
    /// Output tok/s by Little's law ([`StepTally`]).
    pub output_tps: f64,
    /// Milliseconds; none without a successful request.
    pub ttft_p99: Option<f64>,
    /// Failed / ended; none when nothing ended.
    pub failed_share: Option<f64>,
    /// The server's waiting requests rose through the step ([`queue_rises`]).
    pub queue_rises: bool,
}

/// Readings in a step of a server's queue fewer than this say nothing of it.
pub(crate) const MIN_QUEUE_READINGS: usize = 5;

/// Whether the server's queue kept growing through a step, from its readings (seconds
/// into the step, waiting requests): at least [`MIN_QUEUE_READINGS`] of them, rising by
/// the over-saturation rule's test (`saturation::rising`).
pub(crate) fn queue_rises(readings: &[(f64, f64)]) -> bool {
    readings.len() >= MIN_QUEUE_READINGS && super::saturation::rising(readings)
}

/// Why a step counts as saturated (none: it still gained).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saturated {
    Throughput,
    Ttft,
    Failures,
    Queue,
}

impl Saturated {
    pub fn as_str(self) -> &'static str {
        match self {
            Saturated::Throughput => "throughput gained less than min_gain",
            Saturated::Ttft => "TTFT p99 above ttft_factor × the first step's",
            Saturated::Failures => "failed share above max_failures",
            Saturated::Queue => "the server's queue kept growing",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Grow,
    /// Bisecting between the last level that gained (`lo`) and the first that did not.
    Refine {
        lo: StepFigures,
        hi: u32,
        left: u32,
    },
    Done,
}

/// Where exploring ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// The highest level that still gained by the rule, in units; none when even the
    /// first step saturated.
    pub saturation: Option<u32>,
    /// Why the first saturated step was: none when `max` was reached still gaining.
    pub reason: Option<Saturated>,
}

/// The growing-then-bisecting walk of an exploring load: told each step's figures, it
/// names the next level, or ends.
#[derive(Debug, Clone)]
pub(crate) struct Explorer {
    rule: Rule,
    phase: Phase,
    first: Option<StepFigures>,
    /// The last step that gained: the reference of the next.
    reference: Option<StepFigures>,
    reason: Option<Saturated>,
}

impl Explorer {
    pub fn new(rule: Rule) -> Explorer {
        Explorer {
            rule,
            phase: Phase::Grow,
            first: None,
            reference: None,
            reason: None,
        }
    }

    /// The first level held, in units.
    pub(crate) fn first_level(&self) -> u32 {
        self.rule.from.clamp(1, self.rule.max.max(1))
    }

    /// A level in units as requests in flight or req/s.
    pub(crate) fn value(&self, units: u32) -> f64 {
        self.rule.value(units)
    }

    /// Whether `step` saturated against the reference step (and the first step's TTFT).
    pub fn judge(&self, step: &StepFigures) -> Option<Saturated> {
        if step
            .failed_share
            .is_some_and(|f| f > self.rule.max_failures)
        {
            return Some(Saturated::Failures);
        }
        if step.queue_rises {
            return Some(Saturated::Queue);
        }
        let first_ttft = self.first.and_then(|f| f.ttft_p99);
        if let (Some(now), Some(first)) = (step.ttft_p99, first_ttft) {
            if now > self.rule.ttft_factor * first {
                return Some(Saturated::Ttft);
            }
        }
        let reference = self.reference?;
        if step.level <= reference.level || reference.output_tps <= 0.0 {
            return None;
        }
        let load_rise = f64::from(step.level) / f64::from(reference.level) - 1.0;
        let wanted = self.rule.min_gain * load_rise / (self.rule.growth - 1.0).max(1e-9);
        let gain = step.output_tps / reference.output_tps - 1.0;
        (gain < wanted).then_some(Saturated::Throughput)
    }

    /// The level after `step`, or `None` to end the run.
    pub fn next(&mut self, step: StepFigures) -> Option<u32> {
        let verdict = self.judge(&step);
        // The TTFT baseline is the first step with one (a low rate's short step may end
        // no request).
        if self.first.and_then(|f| f.ttft_p99).is_none() {
            self.first = Some(step);
        }
        match self.phase {
            Phase::Done => None,
            Phase::Grow => self.grow(step, verdict),
            Phase::Refine { lo, hi, left } => {
                let (lo, hi) = match verdict {
                    Some(_) => (lo, step.level),
                    None => (step, hi),
                };
                if verdict.is_none() {
                    self.reference = Some(step);
                }
                self.refine(lo, hi, left)
            }
        }
    }

    fn grow(&mut self, step: StepFigures, verdict: Option<Saturated>) -> Option<u32> {
        if let Some(why) = verdict {
            self.reason = Some(why);
            return match self.reference {
                Some(lo) => self.refine(lo, step.level, self.rule.probes),
                None => self.end(),
            };
        }
        self.reference = Some(step);
        if step.level >= self.rule.max {
            return self.end();
        }
        let grown = (f64::from(step.level) * self.rule.growth).ceil() as u32;
        Some(grown.max(step.level + 1).min(self.rule.max))
    }

    fn refine(&mut self, lo: StepFigures, hi: u32, left: u32) -> Option<u32> {
        if left == 0 || hi <= lo.level + 1 {
            return self.end();
        }
        self.phase = Phase::Refine {
            lo,
            hi,
            left: left - 1,
        };
        Some(lo.level + (hi - lo.level) / 2)
    }

    fn end(&mut self) -> Option<u32> {
        self.phase = Phase::Done;
        None
    }

    /// Where the walk ended (call after `next` returned `None`).
    pub fn outcome(&self) -> Ending {
        Ending {
            saturation: self.reason.and(self.reference.map(|r| r.level)),
            reason: self.reason,
        }
    }
}

/// One stored step as the knee reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoredStep {
    pub level: f64,
    pub output_tps: Option<f64>,
    pub latency_p50: Option<f64>,
}

/// The knee: the step of the highest power, output tok/s ÷ median latency (Kleinrock's
/// power, whose peak is where queueing starts to cost more latency than it buys
/// throughput); the lowest level on a tie. None without a step of both figures.
pub fn knee(steps: &[StoredStep]) -> Option<StoredStep> {
    let power = |s: &StoredStep| match (s.output_tps, s.latency_p50) {
        (Some(x), Some(l)) if x > 0.0 && l > 0.0 => Some(x / l),
        _ => None,
    };
    let mut best: Option<(f64, StoredStep)> = None;
    for s in steps {
        let Some(p) = power(s) else { continue };
        let better = match best {
            None => true,
            Some((bp, b)) => p > bp || (p == bp && s.level < b.level),
        };
        if better {
            best = Some((p, *s));
        }
    }
    best.map(|b| b.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule() -> Rule {
        Rule {
            from: 1,
            max: 1024,
            scale: 1,
            growth: 2.0,
            min_gain: 0.1,
            ttft_factor: 5.0,
            max_failures: 0.05,
            probes: 3,
        }
    }

    /// A server of `slots` batch slots, each request 100 ms, 10 tokens: the figures of
    /// `level` users.
    fn server(slots: u32, level: u32) -> StepFigures {
        let busy = level.min(slots);
        let ttft = 10.0 * f64::from(level.div_ceil(slots));
        StepFigures {
            level,
            output_tps: f64::from(busy) * 100.0,
            ttft_p99: Some(ttft),
            failed_share: Some(0.0),
            queue_rises: false,
        }
    }

    fn walk(slots: u32, rule: Rule) -> (Vec<u32>, Ending) {
        let mut e = Explorer::new(rule);
        let mut level = e.first_level();
        let mut seen = vec![level];
        while let Some(next) = e.next(server(slots, level)) {
            level = next;
            seen.push(level);
            assert!(seen.len() < 64, "{seen:?}");
        }
        (seen, e.outcome())
    }

    #[test]
    fn grows_then_bisects_to_the_slots() {
        let (seen, out) = walk(8, rule());
        assert_eq!(seen, vec![1, 2, 4, 8, 16, 12, 10, 9]);
        assert_eq!(out.saturation, Some(8));
        assert_eq!(out.reason, Some(Saturated::Throughput));
        // 16 still gained over 8 (by half): the point lies between the slots and one
        // growth above them.
        let (seen, out) = walk(12, rule());
        assert_eq!(seen, vec![1, 2, 4, 8, 16, 32, 24, 20, 18]);
        assert_eq!(out.saturation, Some(16));
    }

    #[test]
    fn hundredths_of_a_req_s_walk_as_whole_units() {
        // From 0.5 req/s (50 hundredths) against a server that serves 1.5 req/s: the walk
        // has the shape of a whole one, on hundredths.
        let r = Rule {
            from: 50,
            max: 102_400,
            scale: 100,
            ..rule()
        };
        let (seen, out) = walk(150, r);
        assert_eq!(seen, vec![50, 100, 200, 400, 300, 250, 225]);
        assert_eq!(out.saturation, Some(200));
        let values: Vec<f64> = seen.iter().map(|&u| r.value(u)).collect();
        assert_eq!(values, vec![0.5, 1.0, 2.0, 4.0, 3.0, 2.5, 2.25]);
        assert_eq!(
            Rule {
                scale: 100,
                ..rule()
            }
            .value(7),
            0.07
        );
    }

    #[test]
    fn max_reached_still_gaining_names_no_saturation() {
        let r = Rule { max: 5, ..rule() };
        let (seen, out) = walk(64, r);
        assert_eq!(seen, vec![1, 2, 4, 5]);
        assert_eq!(out.saturation, None);
        assert_eq!(out.reason, None);
    }

    #[test]
    fn a_growing_queue_saturates() {
        let e = Explorer::new(rule());
        let queued = StepFigures {
            queue_rises: true,
            ..server(64, 1)
        };
        assert_eq!(e.judge(&queued), Some(Saturated::Queue));
        // A queue growing 2 a reading (with noise) rises; a flat one, or too few
        // readings, does not.
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.3, -0.2, 0.0];
        let growing: Vec<(f64, f64)> = (0..8)
            .map(|i| (0.1 * f64::from(i), 2.0 * f64::from(i) + noise[i as usize]))
            .collect();
        assert!(queue_rises(&growing));
        let flat: Vec<(f64, f64)> = (0..8)
            .map(|i| (0.1 * f64::from(i), 8.0 + noise[i as usize]))
            .collect();
        assert!(!queue_rises(&flat));
        assert!(!queue_rises(&growing[..4]));
    }

    #[test]
    fn the_ttft_baseline_is_the_first_step_with_one() {
        let mut e = Explorer::new(rule());
        let empty = StepFigures {
            output_tps: 0.0,
            ttft_p99: None,
            failed_share: None,
            ..server(64, 1)
        };
        assert_eq!(e.next(empty), Some(2));
        assert_eq!(e.next(server(64, 2)), Some(4));
        let slow = StepFigures {
            ttft_p99: Some(51.0),
            ..server(64, 4)
        };
        assert_eq!(e.judge(&slow), Some(Saturated::Ttft));
    }

    #[test]
    fn failures_and_ttft_saturate() {
        let mut e = Explorer::new(rule());
        assert_eq!(e.next(server(64, 1)), Some(2));
        let failing = StepFigures {
            failed_share: Some(0.5),
            ..server(64, 2)
        };
        assert_eq!(e.judge(&failing), Some(Saturated::Failures));
        let slow = StepFigures {
            ttft_p99: Some(51.0),
            ..server(64, 2)
        };
        assert_eq!(e.judge(&slow), Some(Saturated::Ttft));
        // The first step alone has nothing to saturate against but failures.
        let mut e = Explorer::new(rule());
        let broken = StepFigures {
            failed_share: Some(1.0),
            ..server(8, 1)
        };
        assert_eq!(e.next(broken), None);
        assert_eq!(e.outcome().saturation, None);
    }

    #[test]
    fn knee_is_the_peak_of_power() {
        let step = |level: f64, tps: f64, lat: f64| StoredStep {
            level,
            output_tps: Some(tps),
            latency_p50: Some(lat),
        };
        // Throughput flat past 8 while latency grows: the power peaks at 8.
        let steps = [
            step(1.0, 100.0, 100.0),
            step(2.0, 200.0, 100.0),
            step(4.0, 400.0, 100.0),
            step(8.0, 800.0, 100.0),
            step(16.0, 800.0, 200.0),
            step(12.0, 800.0, 150.0),
        ];
        assert_eq!(knee(&steps).map(|k| k.level), Some(8.0));
        assert_eq!(knee(&[]), None);
    }
}
