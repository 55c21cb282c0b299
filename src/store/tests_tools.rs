//! Migration 17: a tool-calling request's tally round-trips, and rows written before
//! read without one.

use super::tests::{record, store_in};
use super::*;

/// Undoes migrations 17 (the tool tallies), 18 (the golden checks) and 19 (the chunks' read delays).
pub(crate) const UNDO_17: &str = "ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; \
     ALTER TABLE requests DROP COLUMN tool_calls; \
     ALTER TABLE requests DROP COLUMN tool_calls_parsed;";

/// A request's tool tally is kept; rows of a database written before migration 17 read
/// with none, and the database is migrated when opened.
#[test]
fn tool_tallies_are_kept_and_rows_before_them_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = record(1, 20, 3);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    let tally = store.request_rows("run1").unwrap()[0].tools;
    assert_eq!(tally, rec.tools);
    assert!(tally.is_some());
    store
        .conn
        .execute_batch(&format!("{UNDO_17} PRAGMA user_version = 16;"))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[0].tools), (1, None));
}
