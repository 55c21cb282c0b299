//! The suite's environment: stored and read back, each endpoint's record added as it is
//! read, and a suite stored before it was kept read with none.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use crate::environment::{EndpointFacts, Environment, ServerFacts};

fn labelled() -> Environment {
    let mut env = Environment::collect([("release".to_string(), "1.8".to_string())].into());
    env.endpoints.entry("a".into()).or_default().labels = [("gpu".into(), "x".into())].into();
    env
}

#[test]
fn the_environment_round_trips_and_endpoints_keep_their_labels() {
    let dir = tempfile::tempdir().unwrap();
    let mut info = SuiteInfo::new("demo", "");
    info.environment = Some(labelled());
    let mut store = Store::create(dir.path(), &info).unwrap();
    assert_eq!(store.suite().unwrap().info.environment, Some(labelled()));
    let read = EndpointFacts {
        server: Some(ServerFacts {
            version: Some("0.8.5".into()),
            ..ServerFacts::default()
        }),
        ..EndpointFacts::default()
    };
    store.record_endpoint("a", read).unwrap();
    store
        .record_endpoint("b", EndpointFacts::default())
        .unwrap();
    let env = store.suite().unwrap().info.environment.unwrap();
    let a = &env.endpoints["a"];
    assert_eq!(a.labels["gpu"], "x");
    assert_eq!(a.server.as_ref().unwrap().version.as_deref(), Some("0.8.5"));
    assert!(env.endpoints.contains_key("b"));
    assert_eq!(env.labels["release"], "1.8");
}

#[test]
fn a_suite_stored_before_the_environment_reads_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut info = SuiteInfo::new("demo", "");
    info.environment = Some(labelled());
    let store = Store::create(dir.path(), &info).unwrap();
    store
        .conn
        .execute_batch(&format!(
            "{} {} ALTER TABLE suites DROP COLUMN environment_json; PRAGMA user_version = 14;",
            super::tests_tools::UNDO_17,
            super::tests_clock::UNDO_16
        ))
        .unwrap();
    drop(store);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.suite().unwrap().info.environment, None);
}
