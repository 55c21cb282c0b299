//! The store's TLS columns: kept per row, absent from rows written before them.

use std::time::Duration;

use super::tests::{record, store_in};
use super::*;
use crate::record::TlsHandshake;

/// A row keeps the TLS handshake of the connection it opened; a database written before
/// migration 13 (no `tls_handshake_us`, `tls_resumed`) is migrated when opened and its
/// rows read as having opened no TLS connection.
#[test]
fn tls_handshakes_are_kept_and_rows_before_them_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = record(1, 20, 3);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    let tls = store.request_rows("run1").unwrap()[0].tls;
    assert_eq!(
        tls,
        Some(TlsHandshake {
            took: Duration::from_micros(1_900),
            resumed: true
        })
    );
    store
        .conn
        .execute_batch(&format!(
            "{} ALTER TABLE requests DROP COLUMN tls_handshake_us; \
                 ALTER TABLE requests DROP COLUMN tls_resumed; PRAGMA user_version = 12;",
            super::tests::UNDO_12
        ))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[0].tls), (1, None));
    assert_eq!(rows[0].connect, Some(Duration::from_micros(2_500)));
}
