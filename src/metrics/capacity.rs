//! Capacity and cost of a run: output tokens per second per user and per accelerator,
//! and the cost of a million tokens from the endpoint's `hardware` (its accelerators and
//! cost per hour). Cost is the wall time of the measured window (`duration_s`: first
//! measured request sent → last measured response finished) at the endpoint's hourly
//! cost, over the tokens of that window. Pure arithmetic; knows nothing about plans.

/// What an endpoint runs on, as the metrics read it (the plan's `hardware` table).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Hardware {
    /// Accelerators (GPUs, TPUs, …) serving the endpoint together.
    pub accelerators: Option<u32>,
    /// What the whole endpoint costs per hour (all its accelerators), in any currency.
    pub cost_per_hour: Option<f64>,
}

/// The run's figures that capacity and cost are made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Throughput {
    /// The measured window, seconds.
    pub duration_s: Option<f64>,
    /// Output tokens of successful requests in the window.
    pub output_tokens: Option<f64>,
    /// Input plus output tokens of successful requests.
    pub total_tokens: Option<f64>,
    /// Output tokens of requests meeting every SLO.
    pub good_output_tokens: Option<f64>,
    /// Measured requests in flight, time-weighted mean over the window.
    pub in_flight_mean: Option<f64>,
}

/// The capacity metrics, in registry order.
pub const CAPACITY_NAMES: [&str; 5] = [
    "output_tps_per_user",
    "output_tps_per_accelerator",
    "cost_per_million_output_tokens",
    "cost_per_million_total_tokens",
    "cost_per_million_good_output_tokens",
];

/// The cost of a million tokens: `cost_per_hour × duration_s / 3600 / tokens × 10⁶`;
/// none without tokens or time.
pub(crate) fn cost_per_million(cost_per_hour: f64, duration_s: f64, tokens: f64) -> Option<f64> {
    (tokens > 0.0 && duration_s > 0.0).then(|| cost_per_hour * duration_s / 3600.0 / tokens * 1e6)
}

/// The capacity metrics of a run, or of one step of a ramped or exploring run: per user
/// (over `users`, a closed loop's concurrency or a step's level, else the mean in
/// flight), per accelerator and cost (with `hardware`).
pub fn capacity(
    t: &Throughput,
    users: Option<f64>,
    hardware: Option<&Hardware>,
) -> [(&'static str, Option<f64>); 5] {
    let d = t.duration_s.filter(|d| *d > 0.0);
    let output_tps = d.zip(t.output_tokens).map(|(d, n)| n / d);
    let users = users.or(t.in_flight_mean).filter(|u| *u > 0.0);
    let accelerators = hardware
        .and_then(|h| h.accelerators)
        .filter(|a| *a > 0)
        .map(f64::from);
    let cost = |tokens: Option<f64>| {
        let per_hour = hardware.and_then(|h| h.cost_per_hour)?;
        cost_per_million(per_hour, d?, tokens?)
    };
    [
        (
            "output_tps_per_user",
            output_tps.zip(users).map(|(x, u)| x / u),
        ),
        (
            "output_tps_per_accelerator",
            output_tps.zip(accelerators).map(|(x, a)| x / a),
        ),
        ("cost_per_million_output_tokens", cost(t.output_tokens)),
        ("cost_per_million_total_tokens", cost(t.total_tokens)),
        (
            "cost_per_million_good_output_tokens",
            cost(t.good_output_tokens),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Option<f64>, b: f64) {
        let a = a.unwrap();
        assert!((a - b).abs() < 1e-9 * b.abs().max(1.0), "{a} != {b}");
    }

    fn by_name(values: &[(&'static str, Option<f64>)], name: &str) -> Option<f64> {
        values
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| *v)
    }

    #[test]
    fn eight_h200s_at_25_an_hour() {
        // 60 s window, 90,000 output tokens (1,500 tok/s), 150,000 in all, 72,000 good;
        // concurrency 16. The window costs 25 × 60 / 3600 = 0.41666… .
        let t = Throughput {
            duration_s: Some(60.0),
            output_tokens: Some(90_000.0),
            total_tokens: Some(150_000.0),
            good_output_tokens: Some(72_000.0),
            in_flight_mean: Some(15.2),
        };
        let hw = Hardware {
            accelerators: Some(8),
            cost_per_hour: Some(25.0),
        };
        let v = capacity(&t, Some(16.0), Some(&hw));
        assert_eq!(v.map(|(n, _)| n), CAPACITY_NAMES);
        close(by_name(&v, "output_tps_per_user"), 1500.0 / 16.0);
        close(by_name(&v, "output_tps_per_accelerator"), 187.5);
        // 0.416666… / 90,000 × 10⁶ = 4.6296…
        close(
            by_name(&v, "cost_per_million_output_tokens"),
            25.0 / 3600.0 / 1500.0 * 1e6,
        );
        close(
            by_name(&v, "cost_per_million_output_tokens"),
            4.629_629_629_629_63,
        );
        close(
            by_name(&v, "cost_per_million_total_tokens"),
            2.777_777_777_777_778,
        );
        close(
            by_name(&v, "cost_per_million_good_output_tokens"),
            5.787_037_037_037_037,
        );
    }

    #[test]
    fn an_open_loop_is_per_mean_in_flight_and_nothing_without_hardware() {
        let t = Throughput {
            duration_s: Some(10.0),
            output_tokens: Some(1000.0),
            total_tokens: Some(3000.0),
            good_output_tokens: Some(0.0),
            in_flight_mean: Some(2.5),
        };
        let v = capacity(&t, None, None);
        close(by_name(&v, "output_tps_per_user"), 40.0);
        assert!(v[1..].iter().all(|(_, x)| x.is_none()));
        // Cost without accelerators; no good tokens: no cost of a good token.
        let hw = Hardware {
            accelerators: None,
            cost_per_hour: Some(3.6),
        };
        let v = capacity(&t, None, Some(&hw));
        assert_eq!(by_name(&v, "output_tps_per_accelerator"), None);
        // 3.6 an hour for 10 s is 0.01, over 1,000 tokens: 10 a million.
        close(by_name(&v, "cost_per_million_output_tokens"), 10.0);
        assert_eq!(by_name(&v, "cost_per_million_good_output_tokens"), None);
        // A free endpoint costs nothing; an empty window gives nothing.
        assert_eq!(cost_per_million(0.0, 10.0, 1000.0), Some(0.0));
        assert_eq!(cost_per_million(1.0, 0.0, 1000.0), None);
    }
}
