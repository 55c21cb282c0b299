//! Golden requests of `[checks]` in the store (migration 18): their check and answer
//! text round-trip, other rows have neither, a database before the migration reads with
//! none, and the suite's golden answers come back by run ordinal.
#![allow(clippy::unwrap_used)]

use super::tests::{record, store_in};
use super::*;
use crate::record::{AnswerCheck, Phase};

#[test]
fn golden_checks_round_trip_and_are_read_back_by_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    for (run, text, check) in [
        ("run2", "43", AnswerCheck::Wrong),
        ("run1", " 42 ", AnswerCheck::Ok),
    ] {
        store.begin_run(run).unwrap();
        let measured = record(0, 20, 3);
        let mut golden = record(1, 20, 1);
        golden.phase = Phase::Check;
        golden.item = 4;
        golden.output_text = text.into();
        golden.answer = Some(check);
        let mut failed = record(2, 20, 0);
        failed.phase = Phase::Check;
        failed.answer = Some(AnswerCheck::Failed);
        let rows: Vec<StoredRequest<'_>> = [&measured, &golden, &failed]
            .into_iter()
            .map(|record| StoredRequest {
                record,
                target_input_tokens: None,
            })
            .collect();
        store.write_requests(run, &rows).unwrap();
    }
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows[0].answer, None);
    assert!(rows[0].output_text.is_empty());
    assert_eq!(
        (rows[1].phase, rows[1].answer),
        (Phase::Check, Some(AnswerCheck::Ok))
    );
    assert_eq!(rows[1].output_text, " 42 ");
    assert_eq!(rows[2].answer, Some(AnswerCheck::Failed));
    // Failed golden requests have no answer to compare; runs come back by ordinal.
    let answers = store.golden_answers().unwrap();
    assert_eq!(
        answers,
        vec![
            ("run1".to_string(), 1, 4, " 42 ".to_string()),
            ("run2".to_string(), 2, 4, "43".to_string()),
        ]
    );
    store
        .conn
        .execute_batch(
            "ALTER TABLE requests DROP COLUMN chunk_read_delays; \
             ALTER TABLE requests DROP COLUMN answer_check; \
             ALTER TABLE requests DROP COLUMN answer_text; PRAGMA user_version = 17;",
        )
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[1].answer), (3, None));
}
