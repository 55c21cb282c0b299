//! The record's own rules: excerpts, moving and truncating its times.

use super::*;

#[test]
fn excerpt_cuts_on_char_boundary() {
    let text = "é".repeat(600);
    let e = excerpt(text.as_bytes());
    assert!(e.len() <= ERROR_EXCERPT_BYTES);
    assert!(e.chars().all(|c| c == 'é'));
    assert_eq!(excerpt(b"short"), "short");
}

#[test]
fn map_times_moves_every_instant_and_no_duration() {
    let ms = Duration::from_millis;
    let r = RequestRecord {
        intended: ms(10),
        sent: ms(12),
        first_chunk: Some(ms(18)),
        content_times: vec![ms(20), ms(42)],
        last_chunk: Some(ms(43)),
        end: ms(44),
        ..RequestRecord::default()
    };
    let mut moved = r.clone();
    moved.map_times(|t| t + ms(1000));
    assert_eq!(
        (moved.intended, moved.sent, moved.end),
        (ms(1010), ms(1012), ms(1044))
    );
    assert_eq!(
        (moved.first_chunk, moved.last_chunk),
        (Some(ms(1018)), Some(ms(1043)))
    );
    assert_eq!(moved.content_times, vec![ms(1020), ms(1042)]);
    assert_eq!((moved.ttft(), moved.latency()), (r.ttft(), r.latency()));
}

#[test]
fn truncation_keeps_whole_microseconds() {
    let mut r = RequestRecord {
        sent: Duration::from_nanos(1_999),
        content_times: vec![Duration::from_nanos(5_000), Duration::from_nanos(5_001)],
        end: Duration::from_nanos(u64::MAX),
        ..RequestRecord::default()
    };
    r.truncate_to_resolution();
    assert_eq!(r.sent, Duration::from_micros(1));
    assert_eq!(r.content_times, vec![Duration::from_micros(5); 2]);
    assert_eq!(r.end, Duration::from_micros(u64::MAX / 1_000));
}
