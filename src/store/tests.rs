use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::record::{Outcome, Phase, RequestRecord, TlsHandshake, Usage};

pub(crate) fn record(index: u64, ttft_ms: u64, chunks: u64) -> RequestRecord {
    let sent = Duration::from_millis(index * 10);
    let content_times: Vec<Duration> = (0..chunks)
        .map(|k| sent + Duration::from_millis(ttft_ms + 5 * k))
        .collect();
    RequestRecord {
        index,
        item: index,
        phase: if index == 0 {
            Phase::Warmup
        } else {
            Phase::Measured
        },
        intended: sent,
        sent,
        connect: (index == 1).then(|| Duration::from_micros(2_500)),
        tls: (index == 1).then_some(TlsHandshake {
            took: Duration::from_micros(1_900),
            resumed: true,
        }),
        first_chunk: content_times.first().copied(),
        first_answer: content_times.first().copied(),
        end: content_times.last().copied().unwrap_or(sent) + Duration::from_micros(300),
        content_times,
        outcome: Outcome::Ok,
        http_status: Some(200),
        error: None,
        finish_reason: Some("length".into()),
        usage: Usage {
            prompt_tokens: Some(100),
            completion_tokens: Some(chunks as u32),
            cached_tokens: Some(50),
            reasoning_tokens: (index % 2 == 1).then_some(1),
        },
        output_text: "x".repeat(chunks as usize),
        reasoning_text: String::new(),
        output_bytes: Some(chunks),
        client_output_tokens: Some(chunks as u32),
        client_reasoning_tokens: Some(0),
        // Every other row: one empty chunk before the first text (a special token).
        stream_tokens: Some(crate::record::StreamTokens {
            choice_chunks: chunks as u32 + 2,
            at_content: (1..=chunks as u32)
                .map(|k| k + (index % 2) as u32)
                .collect(),
            total: chunks as u32 + (index % 2) as u32,
            source: crate::record::TokenSource::Chunks,
        }),
        client_input_tokens: Some(101),
        last_chunk: None,
        request_bytes: 1000,
        response_bytes: 2000,
        read_clock: None,
        answer: None,
        unstreamed: false,
        raw: Vec::new(),
        replica: None,
        class: None,
        // Every other row: a tool-calling request's tally (schema 16).
        tools: (index % 2 == 1).then_some(crate::record::ToolTally {
            round: index as u16,
            calls: 2,
            parsed: 1,
        }),
        ..RequestRecord::default()
    }
}

fn runs() -> Vec<RunRow> {
    (0..3)
        .map(|i| RunRow {
            id: format!("run{i}"),
            ordinal: i,
            axes: json!({"endpoint": "a", "load": {"concurrency": i + 1}}),
            settings: json!({"seed": 1}),
        })
        .collect()
}

pub(super) fn store_in(dir: &Path) -> Store {
    let mut suite = SuiteInfo::new("demo", "[plan]\nname = \"demo\"\n");
    suite.report = json!({"rows": ["load"]});
    suite.imports = vec![("base.toml".into(), "x = 1".into())];
    let mut store = Store::create(dir, &suite).unwrap();
    store.register_runs(&runs()).unwrap();
    store
}

#[test]
fn suite_round_trips_and_create_refuses_existing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let row = store.suite().unwrap();
    assert_eq!(row.info.plan_name, "demo");
    assert_eq!(row.info.report, json!({"rows": ["load"]}));
    assert_eq!(row.plan_sha256.len(), 64);
    assert!(row.info.host.cores > 0);
    drop(store);
    let again = Store::create(dir.path(), &SuiteInfo::new("demo", ""));
    assert!(matches!(again, Err(StoreError::AlreadyExists { .. })));
    let reopened = Store::open(&dir.path().join("results.db")).unwrap();
    assert_eq!(reopened.suite().unwrap(), row);
}

#[test]
fn requests_round_trip_with_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    store.set_shard(Some("2/4"));
    let recs: Vec<RequestRecord> = (0..5).map(|i| record(i, 20 + i, 4)).collect();
    let batch: Vec<StoredRequest<'_>> = recs
        .iter()
        .map(|r| StoredRequest {
            record: r,
            target_input_tokens: Some(100),
        })
        .collect();
    store.write_requests("run1", &batch).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[2].record.ttft(), Some(Duration::from_millis(22)));
    assert_eq!(rows[2].record.latency(), Duration::from_millis(37));
    assert_eq!(rows[0].record.phase, Phase::Warmup);
    assert_eq!(rows[0].shard.as_deref(), Some("2/4"));
    assert_eq!(rows[0].target_input_tokens, Some(100));
    for (row, rec) in rows.iter().zip(&recs) {
        let mut back = row.to_record();
        back.output_text = rec.output_text.clone();
        assert_eq!(&back, rec);
    }
}

#[test]
fn the_columns_for_sql_readers_hold_perfplan_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let mut rec = record(2, 22, 4);
    rec.content_times[3] += Duration::from_millis(6);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    let row: (i64, i64, i64, i64, i64, i64) = store
        .conn
        .query_row(
            "SELECT ttft_us, latency_us, chunk_count, itl_mean_us, itl_max_us, \
             length(chunk_times) FROM requests",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            },
        )
        .unwrap();
    // Chunks at 22, 27, 32 and 43 ms after sending: gaps 5, 5 and 11 ms.
    assert_eq!(row, (22_000, 43_000, 4, 7_000, 11_000, 1 + 3 + 3 * 2));
}

#[test]
fn interrupted_run_is_rerun_from_scratch_and_done_run_never() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let recs: Vec<RequestRecord> = (0..4).map(|i| record(i, 10, 2)).collect();
    let batch: Vec<StoredRequest<'_>> = recs
        .iter()
        .map(|r| StoredRequest {
            record: r,
            target_input_tokens: None,
        })
        .collect();
    store.begin_run("run0").unwrap();
    store.write_requests("run0", &batch).unwrap();
    let metrics = BTreeMap::from([
        ("ttft_p50".to_string(), Some(10.0)),
        ("cache_hit_ratio".to_string(), None),
    ]);
    let warnings = vec![crate::trust::RunWarning::new(
        crate::trust::Code::CacheLeak,
        "w",
    )];
    let verdict = crate::trust::Verdict::judge(&warnings, &[]);
    store
        .finish_run(
            "run0",
            &RunFinish {
                status: RunStatus::Done,
                metrics: &metrics,
                facts: &crate::record::RunFacts::from_value(json!({"client_bound": false})),
                warnings: &warnings,
                error: None,
                verdict: Some(&verdict),
            },
        )
        .unwrap();
    store.begin_run("run1").unwrap();
    store.write_requests("run1", &batch[..3]).unwrap();
    drop(store); // the process "dies" with run1 running

    let mut store = Store::open_resume(dir.path()).unwrap();
    assert_eq!(store.run_status("run0").unwrap(), RunStatus::Done);
    assert_eq!(store.run_status("run1").unwrap(), RunStatus::Interrupted);
    assert_eq!(store.run_status("run2").unwrap(), RunStatus::Pending);
    store.register_runs(&runs()).unwrap();
    assert_eq!(store.run_status("run0").unwrap(), RunStatus::Done);
    assert!(matches!(
        store.begin_run("run0"),
        Err(StoreError::RunDone { .. })
    ));
    assert_eq!(store.request_count("run1").unwrap(), 3);
    store.begin_run("run1").unwrap();
    assert_eq!(store.request_count("run1").unwrap(), 0);
    assert_eq!(store.request_count("run0").unwrap(), 4);
    let all = store.runs().unwrap();
    assert_eq!(all[0].metrics, metrics);
    assert_eq!(all[0].warnings, warnings);
    assert_eq!(all[0].verdict, verdict);
    assert_eq!(all[0].verdict.status, crate::trust::Status::Invalid);
    assert_eq!(all[1].verdict.status, crate::trust::Status::NotJudged);
    assert_eq!(all[1].status, RunStatus::Running);
    assert!(matches!(
        store.run_status("nope"),
        Err(StoreError::UnknownRun { .. })
    ));
}

#[test]
fn server_metrics_and_gates_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let scrape = BTreeMap::from([("vllm:prefix_cache_hits_total".to_string(), 12.0)]);
    store
        .write_server_metrics("run0", ServerPhase::Before, &scrape)
        .unwrap();
    assert_eq!(
        store.server_metrics("run0", ServerPhase::Before).unwrap(),
        scrape
    );
    assert!(store
        .server_metrics("run0", ServerPhase::After)
        .unwrap()
        .is_empty());
    let gate = GateRecord {
        gate: "ttft_p99".into(),
        condition: "<= 2s".into(),
        run_id: "run0".into(),
        value: Some(1500.0),
        baseline: None,
        passed: true,
        message: "ok".into(),
    };
    store
        .write_gate_results("report", std::slice::from_ref(&gate))
        .unwrap();
    assert_eq!(store.gate_results().unwrap(), vec![gate]);
}

#[test]
fn secrets_in_settings_are_never_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    let run = RunRow {
        id: "s".into(),
        ordinal: 9,
        axes: json!({}),
        settings: json!({"endpoint": {"api_key_env": "KEY", "api_key": "sk-123", "Headers": {"Authorization": "Bearer x"}}}),
    };
    store.register_runs(&[run]).unwrap();
    let stored = store.runs().unwrap().pop().unwrap().settings;
    assert_eq!(
        stored,
        json!({"endpoint": {"api_key_env": "KEY", "api_key": "<redacted>", "Headers": {"Authorization": "<redacted>"}}})
    );
}

#[test]
fn open_reports_missing_database() {
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Store::open(dir.path()),
        Err(StoreError::NotFound { .. })
    ));
}

#[test]
fn rows_written_before_the_connect_column_read_back_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = record(1, 20, 2);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    assert_eq!(
        store.request_rows("run1").unwrap()[0].connect,
        Some(Duration::from_micros(2_500))
    );
    // As an earlier version wrote it: schema 4, no `connect_us` (nor what came after it).
    store
        .conn
        .execute_batch(
            "ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; ALTER TABLE requests DROP COLUMN tool_calls; ALTER TABLE requests DROP COLUMN tool_calls_parsed; ALTER TABLE requests DROP COLUMN read_clock; ALTER TABLE requests DROP COLUMN first_read_delay_us; ALTER TABLE requests DROP COLUMN end_read_delay_us; ALTER TABLE requests DROP COLUMN max_read_delay_us; ALTER TABLE suites DROP COLUMN environment_json; ALTER TABLE requests DROP COLUMN chunk_tokens; ALTER TABLE requests DROP COLUMN choice_chunks; ALTER TABLE requests DROP COLUMN client_reasoning_tokens; ALTER TABLE requests DROP COLUMN reasoning_tokens;
             ALTER TABLE requests DROP COLUMN connect_us;
             ALTER TABLE suites DROP COLUMN secrets_json; ALTER TABLE suites DROP COLUMN plan_dir;
             DROP TABLE request_bodies; DROP TABLE response_texts;
             ALTER TABLE requests DROP COLUMN first_answer_us;
             ALTER TABLE requests DROP COLUMN output_bytes;
             DROP TABLE telemetry; ALTER TABLE requests DROP COLUMN tls_handshake_us; ALTER TABLE requests DROP COLUMN tls_resumed; ALTER TABLE requests DROP COLUMN class; ALTER TABLE requests DROP COLUMN replica; ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; PRAGMA user_version = 4;",
        )
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].connect, None);
    assert_eq!(rows[0].ttft(), Some(Duration::from_millis(20)));
}

#[test]
fn newer_schema_is_refused_and_migrations_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let version: i64 = store
        .conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = store
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    store
        .conn
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(store);
    let err = Store::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::TooNew { .. }), "{err}");
    assert!(
        err.to_string().contains("newer than this perfplan"),
        "{err}"
    );
}

/// Undoes migrations 14 to 19, for tests that make a database of an earlier schema.
pub(crate) const UNDO_12: &str = "ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; \
     ALTER TABLE requests DROP COLUMN tool_calls; ALTER TABLE requests DROP COLUMN tool_calls_parsed; \
     ALTER TABLE requests DROP COLUMN read_clock; ALTER TABLE requests DROP COLUMN first_read_delay_us; \
     ALTER TABLE requests DROP COLUMN end_read_delay_us; ALTER TABLE requests DROP COLUMN max_read_delay_us; \
     ALTER TABLE suites DROP COLUMN environment_json; ALTER TABLE requests DROP COLUMN chunk_tokens; \
     ALTER TABLE requests DROP COLUMN choice_chunks; ALTER TABLE requests DROP COLUMN client_reasoning_tokens; \
     ALTER TABLE requests DROP COLUMN reasoning_tokens;";

#[test]
fn a_suite_recorded_before_plan_folders_and_secrets_reads_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut suite = SuiteInfo::new("old", "[plan]\nname = \"old\"\n");
    suite.plan_dir = Some("/plans".into());
    drop(Store::create(dir.path(), &suite).unwrap());
    // The database as the previous version wrote it: schema 5, without the two columns.
    let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
    conn.execute_batch(
        "ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; ALTER TABLE requests DROP COLUMN tool_calls; ALTER TABLE requests DROP COLUMN tool_calls_parsed; ALTER TABLE requests DROP COLUMN read_clock; ALTER TABLE requests DROP COLUMN first_read_delay_us; ALTER TABLE requests DROP COLUMN end_read_delay_us; ALTER TABLE requests DROP COLUMN max_read_delay_us; ALTER TABLE suites DROP COLUMN environment_json; ALTER TABLE requests DROP COLUMN chunk_tokens; ALTER TABLE requests DROP COLUMN choice_chunks; ALTER TABLE requests DROP COLUMN client_reasoning_tokens; ALTER TABLE requests DROP COLUMN reasoning_tokens;
         ALTER TABLE suites DROP COLUMN secrets_json; ALTER TABLE suites DROP COLUMN plan_dir;
         DROP TABLE request_bodies; DROP TABLE response_texts;
         ALTER TABLE requests DROP COLUMN first_answer_us;
         ALTER TABLE requests DROP COLUMN output_bytes;
         DROP TABLE telemetry; ALTER TABLE requests DROP COLUMN tls_handshake_us; ALTER TABLE requests DROP COLUMN tls_resumed; ALTER TABLE requests DROP COLUMN class; ALTER TABLE requests DROP COLUMN replica; ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; PRAGMA user_version = 5;",
    )
    .unwrap();
    drop(conn);
    let info = Store::open(dir.path()).unwrap().suite().unwrap().info;
    assert_eq!((info.plan_dir, info.secrets), (None, Vec::new()));
    assert_eq!(info.plan_name, "old");
}

/// A database before migration 8 (no `first_answer_us`, `output_bytes`) reads with no TTFO and an unknown output size.
#[test]
fn rows_written_before_ttfo_and_output_bytes_read_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = record(1, 20, 3);
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    let row = &store.request_rows("run1").unwrap()[0];
    assert_eq!(row.ttfo(), Some(Duration::from_millis(20)));
    assert_eq!(row.output_bytes, Some(3));
    store
        .conn
        .execute_batch(
            "ALTER TABLE requests DROP COLUMN chunk_read_delays; ALTER TABLE requests DROP COLUMN answer_check; ALTER TABLE requests DROP COLUMN answer_text; ALTER TABLE requests DROP COLUMN tool_round; ALTER TABLE requests DROP COLUMN tool_calls; ALTER TABLE requests DROP COLUMN tool_calls_parsed; ALTER TABLE requests DROP COLUMN read_clock; ALTER TABLE requests DROP COLUMN first_read_delay_us; ALTER TABLE requests DROP COLUMN end_read_delay_us; ALTER TABLE requests DROP COLUMN max_read_delay_us; ALTER TABLE suites DROP COLUMN environment_json; ALTER TABLE requests DROP COLUMN chunk_tokens; ALTER TABLE requests DROP COLUMN choice_chunks; ALTER TABLE requests DROP COLUMN client_reasoning_tokens; ALTER TABLE requests DROP COLUMN reasoning_tokens;
         ALTER TABLE requests DROP COLUMN first_answer_us;
             ALTER TABLE requests DROP COLUMN output_bytes;
             DROP TABLE telemetry; ALTER TABLE requests DROP COLUMN tls_handshake_us; ALTER TABLE requests DROP COLUMN tls_resumed; ALTER TABLE requests DROP COLUMN class; ALTER TABLE requests DROP COLUMN replica; ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; PRAGMA user_version = 7;",
        )
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!(rows[0].ttft(), Some(Duration::from_millis(20)));
    // Migrated on: the telemetry table is back, empty.
    assert!(store.telemetry_series("run1").unwrap().is_empty());
    assert_eq!((rows[0].ttfo(), rows[0].output_bytes), (None, None));
    assert!(!rows[0].no_output());
}

/// A row keeps its replica; a database written before migration 10 (no `replica`) is
/// migrated when opened and its rows read as sent to an endpoint with one URL.
#[test]
fn replicas_are_kept_and_rows_before_them_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = RequestRecord {
        replica: Some(3),
        ..record(1, 20, 3)
    };
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    assert_eq!(store.request_rows("run1").unwrap()[0].replica, Some(3));
    store
        .conn
        .execute_batch(&format!("{UNDO_12} ALTER TABLE requests DROP COLUMN tls_handshake_us; ALTER TABLE requests DROP COLUMN tls_resumed; ALTER TABLE requests DROP COLUMN class; ALTER TABLE requests DROP COLUMN replica; ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; PRAGMA user_version = 9;"))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[0].replica), (1, None));
    assert_eq!(rows[0].ttft(), Some(Duration::from_millis(20)));
}

/// A row keeps its mix class; a database written before migration 11 (no `class`) is
/// migrated when opened and its rows read as not drawn from a mix; a read-only one of
/// that schema is read unmigrated, with the same answer.
#[test]
fn classes_are_kept_and_rows_before_them_have_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = store_in(dir.path());
    store.begin_run("run1").unwrap();
    let rec = RequestRecord {
        class: Some(2),
        ..record(1, 20, 3)
    };
    let batch = [StoredRequest {
        record: &rec,
        target_input_tokens: None,
    }];
    store.write_requests("run1", &batch).unwrap();
    assert_eq!(store.request_rows("run1").unwrap()[0].class, Some(2));
    store
        .conn
        .execute_batch(&format!("{UNDO_12} ALTER TABLE requests DROP COLUMN tls_handshake_us; ALTER TABLE requests DROP COLUMN tls_resumed; ALTER TABLE requests DROP COLUMN class; ALTER TABLE runs DROP COLUMN verdict_json; ALTER TABLE suites DROP COLUMN trust_json; PRAGMA user_version = 10;"))
        .unwrap();
    drop(store);
    let db = dir.path().join("results.db");
    let mut perms = std::fs::metadata(&db).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&db, perms.clone()).unwrap();
    if let Ok(store) = Store::open(dir.path()) {
        // Read-only (unless running as root, who may write anyway): read as it is.
        let rows = store.request_rows("run1").unwrap();
        assert_eq!((rows.len(), rows[0].class), (1, None));
    }
    #[expect(
        clippy::permissions_set_readonly_false,
        reason = "the test gives write access back to its own temporary file"
    )]
    perms.set_readonly(false);
    std::fs::set_permissions(&db, perms).unwrap();
    let store = Store::open(dir.path()).unwrap();
    let rows = store.request_rows("run1").unwrap();
    assert_eq!((rows.len(), rows[0].class), (1, None));
    assert_eq!(rows[0].ttft(), Some(Duration::from_millis(20)));
}
