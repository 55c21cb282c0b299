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

/// The user clock: the fold of records moved to when the client read them gives TTFT =
/// the kernel's + the first chunk's delay, and ITL from the moved chunks.
#[test]
fn the_fold_on_the_user_clock_adds_each_chunks_read_delay() {
    let timed = |i: u64| {
        let mut r = rec(0, &[10 + i, 20 + i, 30 + i], Some(3));
        r.read_clock = Some(crate::record::ReadClock {
            kernel: true,
            first_delay: Some(d(i)),
            end_delay: d(0),
            max_delay: d(i),
        });
        // The first chunk read i ms late, the second 2 ms, the last on time.
        r.content_delays = vec![d(i), d(2), d(0)];
        r
    };
    let kernel: Vec<RequestRecord> = (0..5).map(timed).collect();
    let user: Vec<RequestRecord> = kernel
        .iter()
        .cloned()
        .map(|mut r| {
            r.move_to_user_clock();
            r
        })
        .collect();
    let opts = SummaryOptions::default();
    let (k, u) = (summarize(&kernel, &opts), summarize(&user, &opts));
    // Kernel TTFT 10..14 ms (mean 12), each + its own first delay 0..4 (mean 2).
    assert!(close(v(&k, "ttft_mean"), 12.0));
    assert!(close(v(&u, "ttft_mean"), 14.0));
    assert!(close(v(&u, "ttft_max"), 18.0));
    // The last chunk on time: latency does not move; the client delay is the same.
    assert_eq!(v(&u, "latency_p50"), v(&k, "latency_p50"));
    assert_eq!(v(&u, "client_delay_p50"), v(&k, "client_delay_p50"));
}
