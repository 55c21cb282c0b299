//! The suite's output folder and results database: where the folder goes (a UTC
//! timestamp by default, or the `--resume` folder), what the suite row records about the
//! plan and the host, and the runs registered before the first one starts. Knows nothing
//! of running.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::RunOptions;
use crate::distribute::shard::env::{resume_folder, shard_folder};
use crate::distribute::shard::Shard;
use crate::environment::Environment;
use crate::plan::LoadedPlan;
use crate::planner::RunSpec;
use crate::store::{GitInfo, HostFacts, RunRow, Store, StoredSecret, SuiteInfo};
use crate::suite::SuiteError;
use crate::units::UtcTime;

/// `YYYYMMDDTHHMMSSZ` in UTC (before 1970: the epoch).
pub(crate) fn utc_stamp(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let t = UtcTime::of_unix_secs(i64::try_from(secs).unwrap_or(i64::MAX / 2));
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// The plan's name, main text and imports, as the suite row stores them.
fn plan_texts(plan: &LoadedPlan) -> SuiteInfo {
    let texts = plan.file_texts();
    let (main, imports) = texts
        .split_first()
        .map_or((String::new(), Vec::new()), |(m, rest)| {
            (m.1.clone(), rest.to_vec())
        });
    let mut info = SuiteInfo::new(plan.spec.plan.name.clone(), main);
    info.imports = imports;
    info
}

/// What every shard of one suite shares, hashed: the plan's text and imports, its
/// `--set` overrides and its seed (the start barrier admits only shards of this one).
pub fn fingerprint(plan: &LoadedPlan) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(plan_texts(plan).plan_sha256().as_bytes());
    for set in plan.stored_sets() {
        h.update([0u8]);
        h.update(set.as_bytes());
    }
    h.update(plan.spec.plan.seed.to_le_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The suite's environment as it starts: this machine, the plan's labels and the labels
/// of each endpoint its runs use (what endpoints say of themselves is added as they are
/// read).
pub(super) fn environment_of(plan: &LoadedPlan, runs: &[RunSpec]) -> Environment {
    let mut env = Environment::collect(plan.spec.plan.labels.clone());
    for run in runs {
        let ep = &run.settings.endpoint;
        if !ep.spec.labels.is_empty() {
            env.endpoints.entry(ep.name.clone()).or_default().labels = ep.spec.labels.clone();
        }
    }
    env
}

fn suite_info(plan: &LoadedPlan, opts: &RunOptions) -> SuiteInfo {
    let mut info = plan_texts(plan);
    info.plan_path = Some(plan.path.display().to_string());
    info.set_overrides = plan.stored_sets();
    info.plan_dir = plan_dir(plan);
    info.secrets = plan
        .secrets
        .literal
        .iter()
        .map(|s| StoredSecret {
            endpoint: s.endpoint.clone(),
            header: s.header.clone(),
            variable: s.variable.clone(),
        })
        .collect();
    info.seed = plan.spec.plan.seed;
    info.git = GitInfo::detect(if plan.base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &plan.base_dir
    });
    info.host = HostFacts::detect();
    info.report = serde_json::to_value(&plan.spec.report).unwrap_or(Value::Null);
    info.gates = serde_json::to_value(&plan.spec.gates).unwrap_or(Value::Null);
    info.slo = serde_json::to_value(&plan.spec.slo).unwrap_or(Value::Null);
    info.trust = super::trust_of(plan, opts);
    info
}

/// The plan file's folder as an absolute path (`rerun` resolves relative paths from it).
fn plan_dir(plan: &LoadedPlan) -> Option<String> {
    let dir = if plan.base_dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        &plan.base_dir
    };
    std::fs::canonicalize(dir)
        .ok()
        .map(|p| p.display().to_string())
}

/// Opens the suite's database: `--resume DIR` (its `shard-K-of-N` folder when the
/// shard's suite is there), or a new one in `--out DIR` (the default folder when none),
/// inside `DIR/shard-K-of-N` for a shard, so every shard of one suite can share one `--out`.
pub(super) fn open_store(
    plan: &LoadedPlan,
    opts: &RunOptions,
    shard: Option<Shard>,
    environment: Environment,
) -> Result<(Store, PathBuf), SuiteError> {
    let failed_write = |dir: &Path| {
        let path = crate::store::db_path(dir);
        move |e| SuiteError::from(e).at_database(&path)
    };
    if let Some(dir) = &opts.resume {
        let dir = resume_folder(dir, shard);
        let store = Store::open_resume(&dir).map_err(failed_write(&dir))?;
        return Ok((store, dir));
    }
    let dir = opts.out.clone().unwrap_or_else(|| {
        Path::new("outputs")
            .join(&plan.spec.plan.name)
            .join(utc_stamp(SystemTime::now()))
    });
    let dir = match shard {
        Some(s) => shard_folder(&dir, s),
        None => dir,
    };
    std::fs::create_dir_all(&dir).map_err(|source| SuiteError::Output {
        path: dir.clone(),
        source,
    })?;
    let mut info = suite_info(plan, opts);
    info.environment = Some(environment);
    let store = Store::create(&dir, &info).map_err(failed_write(&dir))?;
    Ok((store, dir))
}

pub(super) fn register(
    mut store: Store,
    runs: &[RunSpec],
) -> Result<Arc<Mutex<Store>>, SuiteError> {
    let rows: Vec<RunRow> = runs
        .iter()
        .map(|r| RunRow {
            id: r.id.clone(),
            ordinal: r.ordinal as u32,
            axes: Value::Object(r.axes.clone()),
            settings: r.redacted_settings(),
        })
        .collect();
    store.register_runs(&rows)?;
    Ok(Arc::new(Mutex::new(store)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn utc_stamp_formats_civil_time() {
        assert_eq!(utc_stamp(UNIX_EPOCH), "19700101T000000Z");
        assert_eq!(
            utc_stamp(UNIX_EPOCH + Duration::from_secs(1_795_938_471)),
            "20261129T074751Z"
        );
    }
}
