//! The client's own delay (`client_delay_*`, `kernel_clock_ratio`) and the verdict it
//! feeds (`client_bound`).

use super::tests::{close, d, rec, v};
use super::*;
use crate::record::RequestRecord;

#[test]
fn answers_read_late_are_client_delay_and_client_bound() {
    let timed = |first_ms: u64, kernel: bool| {
        let mut r = rec(0, &[10, 20], Some(2));
        r.read_clock = Some(crate::record::ReadClock {
            kernel,
            first_delay: Some(d(first_ms)),
            end_delay: d(1),
            max_delay: d(first_ms),
        });
        r
    };
    let late: Vec<RequestRecord> = (0..10).map(|i| timed(i * 2, true)).collect();
    let s = summarize(&late, &SummaryOptions::default());
    assert!(close(v(&s, "client_delay_max"), 18.0));
    assert!(close(v(&s, "client_delay_p50"), 9.0));
    assert_eq!(v(&s, "kernel_clock_ratio"), Some(1.0));
    let reason = s.client_bound.unwrap();
    assert!(reason.contains("read answers p99"), "{reason}");
    // Timed by the client's reads: no delay is known, the ratio says so.
    let user: Vec<RequestRecord> = (0..4).map(|_| timed(0, false)).collect();
    let s = summarize(&user, &SummaryOptions::default());
    assert_eq!(v(&s, "client_delay_p50"), None);
    assert_eq!(v(&s, "kernel_clock_ratio"), Some(0.0));
    assert_eq!(s.client_bound, None);
    // Rows written before the clock was kept: no ratio.
    let s = summarize(&[rec(0, &[10], Some(1))], &SummaryOptions::default());
    assert_eq!(v(&s, "kernel_clock_ratio"), None);
}
