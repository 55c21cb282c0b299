//! How an answer was timed (`ReadClock`, schema 16): kept with every row, and rows of
//! older databases read without it.

use std::time::Duration;

use super::tests::{record, store_in};
use super::*;
use crate::record::ReadClock;

/// Undoes migration 16 (the read clock's columns), after `tests_tools::UNDO_17`.
pub(crate) const UNDO_16: &str = "ALTER TABLE requests DROP COLUMN read_clock; \
     ALTER TABLE requests DROP COLUMN first_read_delay_us; \
     ALTER TABLE requests DROP COLUMN end_read_delay_us; \
     ALTER TABLE requests DROP COLUMN max_read_delay_us;";

#[test]
fn the_read_clock_is_kept_and_rows_before_it_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let clock = ReadClock {
        kernel: true,
        first_delay: Some(Duration::from_micros(1_250)),
        end_delay: Duration::from_micros(40),
        max_delay: Duration::from_micros(3_000),
    };
    let mut rec = record(1, 20, 3);
    rec.read_clock = Some(clock);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    assert_eq!(
        store.request_rows("run1").unwrap()[0].read_clock,
        Some(clock)
    );
    store
        .conn
        .execute_batch(&format!(
            "{} {UNDO_16} PRAGMA user_version = 15;",
            super::tests_tools::UNDO_17
        ))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[0].read_clock), (1, None));
}

/// Undoes migration 19 (the per-chunk read delays) and the no-op 18.
pub(crate) const UNDO_19: &str = "ALTER TABLE requests DROP COLUMN chunk_read_delays;";

#[test]
fn every_chunk_read_delay_is_kept_and_rows_before_them_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let mut rec = record(1, 20, 3);
    rec.content_delays = [0, 1_250, 90].map(Duration::from_micros).to_vec();
    let zeros = record(2, 20, 3); // every delay zero: kept as none
    let batch = [&rec, &zeros].map(|record| StoredRequest {
        record,
        target_input_tokens: None,
    });
    store.write_requests("run1", &batch).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows[0].content_delays, rec.content_delays);
    assert!(rows[1].content_delays.is_empty());
    let blob: Option<Vec<u8>> = store
        .conn
        .query_row(
            "SELECT chunk_read_delays FROM requests WHERE request_index = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(blob, None);
    store
        .conn
        .execute_batch(&format!("{UNDO_19} PRAGMA user_version = 18;"))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows[0].content_delays.is_empty());
    assert_eq!(rows[0].content_times, rec.content_times);
}
