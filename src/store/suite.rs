//! The `suites` row: what was run (plan text, imports, overrides, seed), by which
//! perfplan, from which plan revision, on which host, with which report and gate settings.

use std::path::Path;
use std::process::Command;

use rusqlite::{params, OptionalExtension};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{now_unix_ms, SqlContext, Store, StoreError};

/// The plan repository's revision when the suite started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitInfo {
    pub revision: String,
    /// Uncommitted changes in the work tree.
    pub dirty: bool,
}

impl GitInfo {
    /// The revision of the git work tree holding `dir`, or `None` outside git (or without git).
    pub(crate) fn detect(dir: &Path) -> Option<GitInfo> {
        let run = |args: &[&str]| {
            Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        let revision = run(&["rev-parse", "HEAD"])?;
        let dirty =
            run(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
        Some(GitInfo { revision, dirty })
    }
}

/// Facts about the client machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    pub os: String,
    pub cpu_model: String,
    pub cores: u32,
    pub hostname: String,
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

impl HostFacts {
    /// Reads the facts of this machine (best effort; unknown parts say `unknown`).
    pub(crate) fn detect() -> HostFacts {
        let pretty = std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                    .map(|v| v.trim_matches('"').to_string())
            });
        let kernel = read_trimmed("/proc/sys/kernel/osrelease");
        let mut os = std::env::consts::OS.to_string();
        for part in [pretty, kernel].into_iter().flatten() {
            os.push_str(" / ");
            os.push_str(&part);
        }
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| crate::environment::client::cpu_model_of(&t))
            .unwrap_or_else(|| format!("unknown ({})", std::env::consts::ARCH));
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get() as u32);
        let hostname = read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| read_trimmed("/etc/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into());
        HostFacts {
            os,
            cpu_model,
            cores,
            hostname,
        }
    }
}

/// A literal secret header of the suite's plan, stored as the variable `rerun` reads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StoredSecret {
    pub endpoint: String,
    pub header: String,
    pub variable: String,
}

/// What the suite records about itself when it creates the database.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteInfo {
    pub plan_name: String,
    /// The plan file as given on the command line.
    pub plan_path: Option<String>,
    pub plan_text: String,
    /// `(path, text)` of every imported file, in import order.
    pub imports: Vec<(String, String)>,
    /// `--set key=value` overrides, as typed.
    pub set_overrides: Vec<String>,
    pub seed: u64,
    pub perfplan_version: String,
    pub git: Option<GitInfo>,
    pub host: HostFacts,
    /// The plan's `[report]` (`{"rows": [..], "columns": [..], "metrics": [..]}`).
    pub report: Value,
    /// The plan's `[gates]` (`{"metric": "condition"}`).
    pub gates: Value,
    /// The plan's `[slo]` (`{"metric": "condition"}`).
    pub slo: Value,
    /// The plan file's folder, absolute: its relative paths start here (`None` for
    /// suites recorded before it was stored).
    pub plan_dir: Option<String>,
    /// Literal secrets of the plan, held in the stored texts as `${variable}`.
    pub secrets: Vec<StoredSecret>,
    /// The verdict thresholds the suite was judged by (`[trust]`, with `run --accept`);
    /// reports and gates apply its `strict` and `accept`, merges judge with it. The
    /// defaults for suites stored before verdicts.
    pub trust: crate::trust::Thresholds,
    /// What the suite measured on (`None` in suites stored before it was recorded).
    pub environment: Option<crate::environment::Environment>,
}

impl SuiteInfo {
    /// A suite of this perfplan on this host, with empty report/gate/SLO settings.
    pub fn new(plan_name: impl Into<String>, plan_text: impl Into<String>) -> SuiteInfo {
        SuiteInfo {
            plan_name: plan_name.into(),
            plan_path: None,
            plan_text: plan_text.into(),
            imports: Vec::new(),
            set_overrides: Vec::new(),
            seed: 0,
            perfplan_version: env!("CARGO_PKG_VERSION").to_string(),
            git: None,
            host: HostFacts::detect(),
            report: Value::Object(Default::default()),
            gates: Value::Object(Default::default()),
            slo: Value::Object(Default::default()),
            plan_dir: None,
            secrets: Vec::new(),
            trust: crate::trust::Thresholds::default(),
            environment: None,
        }
    }

    /// sha256 (hex) of the plan text followed by every import's path and text.
    pub fn plan_sha256(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.plan_text.as_bytes());
        for (path, text) in &self.imports {
            h.update([0u8]);
            h.update(path.as_bytes());
            h.update([0u8]);
            h.update(text.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The stored suite.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteRow {
    pub info: SuiteInfo,
    pub plan_sha256: String,
    pub created_unix_ms: i64,
}

fn to_json<T: serde::Serialize>(what: &'static str, v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|source| StoreError::Json { what, source })
}

/// A JSON text column decoded, as a conversion error naming the column when it is not valid.
pub(crate) fn json_column<T: serde::de::DeserializeOwned>(
    row: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let text: String = row.get(idx)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// A nullable JSON text column decoded (`None` for NULL).
pub(crate) fn optional_json_column<T: serde::de::DeserializeOwned>(
    row: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<Option<T>> {
    let text: Option<String> = row.get(idx)?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
        })
    })
    .transpose()
}

impl Store {
    /// Records what was read from `endpoint` (its server's self-description, models,
    /// launch command) in the suite's environment; a suite with no environment gets one.
    pub(crate) fn record_endpoint(
        &mut self,
        endpoint: &str,
        read: crate::environment::EndpointFacts,
    ) -> Result<(), StoreError> {
        let mut env = self.suite()?.info.environment.unwrap_or_default();
        env.set_read(endpoint, read);
        self.conn
            .execute(
                "UPDATE suites SET environment_json = ?1 WHERE id = 1",
                [to_json("environment", &env)?],
            )
            .doing("recording an endpoint's environment")?;
        Ok(())
    }

    pub(crate) fn insert_suite(&mut self, s: &SuiteInfo) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO suites (id, plan_name, plan_path, plan_text, imports_json, plan_sha256,
                 set_overrides_json, seed, perfplan_version, git_revision, git_dirty, host_os,
                 host_cpu_model, host_cores, host_name, report_json, gates_json, slo_json,
                 created_unix_ms, plan_dir, secrets_json, trust_json, environment_json)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
                 ?19, ?20, ?21, ?22)",
                params![
                    s.plan_name,
                    s.plan_path,
                    s.plan_text,
                    to_json("imports", &s.imports)?,
                    s.plan_sha256(),
                    to_json("--set overrides", &s.set_overrides)?,
                    s.seed as i64,
                    s.perfplan_version,
                    s.git.as_ref().map(|g| g.revision.clone()),
                    s.git.as_ref().map(|g| g.dirty),
                    s.host.os,
                    s.host.cpu_model,
                    s.host.cores,
                    s.host.hostname,
                    to_json("report settings", &s.report)?,
                    to_json("gates", &s.gates)?,
                    to_json("slo", &s.slo)?,
                    now_unix_ms(),
                    s.plan_dir,
                    to_json("secrets", &s.secrets)?,
                    to_json("trust", &s.trust)?,
                    s.environment
                        .as_ref()
                        .map(|e| to_json("environment", e))
                        .transpose()?,
                ],
            )
            .doing("writing the suite")?;
        Ok(())
    }

    /// The suite columns added by later migrations, or their defaults when an older
    /// database is read unmigrated (read-only).
    fn newer_suite_columns(&self) -> Result<String, StoreError> {
        let have = self.table_columns("suites")?;
        let has = |c: &str| have.iter().any(|h| h == c);
        let dir = if has("plan_dir") { "plan_dir" } else { "NULL" };
        let secrets = if has("secrets_json") {
            "secrets_json"
        } else {
            "'[]'"
        };
        let trust = if has("trust_json") {
            "trust_json"
        } else {
            "'{}'"
        };
        let environment = if has("environment_json") {
            "environment_json"
        } else {
            "NULL"
        };
        Ok(format!("{dir}, {secrets}, {trust}, {environment}"))
    }

    /// The suite this database holds.
    pub fn suite(&self) -> Result<SuiteRow, StoreError> {
        let row = self
            .conn
            .query_row(
                &format!(
                    "SELECT plan_name, plan_path, plan_text, imports_json, plan_sha256,
                     set_overrides_json, seed, perfplan_version, git_revision, git_dirty,
                     host_os, host_cpu_model, host_cores, host_name, report_json, gates_json,
                     slo_json, created_unix_ms, {} FROM suites WHERE id = 1",
                    self.newer_suite_columns()?
                ),
                [],
                |r| {
                    let revision: Option<String> = r.get(8)?;
                    let dirty: Option<bool> = r.get(9)?;
                    let info = SuiteInfo {
                        plan_name: r.get(0)?,
                        plan_path: r.get(1)?,
                        plan_text: r.get(2)?,
                        imports: json_column(r, 3)?,
                        set_overrides: json_column(r, 5)?,
                        seed: r.get::<_, i64>(6)? as u64,
                        perfplan_version: r.get(7)?,
                        git: revision.map(|revision| GitInfo {
                            revision,
                            dirty: dirty.unwrap_or(false),
                        }),
                        host: HostFacts {
                            os: r.get(10)?,
                            cpu_model: r.get(11)?,
                            cores: r.get(12)?,
                            hostname: r.get(13)?,
                        },
                        report: json_column(r, 14)?,
                        gates: json_column(r, 15)?,
                        slo: json_column(r, 16)?,
                        plan_dir: r.get(18)?,
                        secrets: json_column(r, 19)?,
                        trust: json_column(r, 20)?,
                        environment: optional_json_column(r, 21)?,
                    };
                    Ok(SuiteRow {
                        info,
                        plan_sha256: r.get(4)?,
                        created_unix_ms: r.get(17)?,
                    })
                },
            )
            .optional()
            .doing("reading the suite")?;
        row.ok_or_else(|| StoreError::NoSuite {
            path: self.path.clone(),
        })
    }
}
