//! The results database (SQLite, WAL): one file per output folder holding the suite
//! (plan text, host facts), its runs, every request, per-run metrics, server scrapes
//! and gate verdicts. Writes are batched in transactions so a crash loses at most the
//! requests in flight. Knows nothing about plans' types, HTTP or report layout; never
//! stores secrets (there is no column for headers or keys).

mod bodies;
mod merge;
mod requests;
mod runs;
mod schema;
mod search;
mod suite;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags};

pub use bodies::StoredContent;
pub use requests::{RequestRow, StoredRequest};
pub use runs::{GateRecord, RunFinish, RunRow, RunStatus, ServerPhase, StoredRun};
pub use schema::SCHEMA_VERSION;
pub use search::{ProbeLink, SearchRow, SearchStepRow};
pub use suite::{GitInfo, HostFacts, SuiteInfo, SuiteRow};

/// The database's file name inside an output folder.
pub const DB_FILE: &str = "results.db";

/// Why the results database could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("results database not found at {}", path.display())]
    NotFound { path: PathBuf },
    #[error("results database {} already exists (use --resume to continue it)", path.display())]
    AlreadyExists { path: PathBuf },
    #[error("cannot create output folder {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot open results database {}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("results database {} has schema version {found}, newer than this perfplan's {SCHEMA_VERSION}", path.display())]
    TooNew { path: PathBuf, found: i64 },
    #[error("results database {} holds no suite", path.display())]
    NoSuite { path: PathBuf },
    #[error("run `{id}` is not registered in the results database")]
    UnknownRun { id: String },
    #[error("run `{id}` is already done; a finished run is never rerun")]
    RunDone { id: String },
    #[error("corrupt value in results database: {what}")]
    Corrupt { what: String },
    #[error("cannot encode {what} as JSON")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("sqlite error while {doing}")]
    Sql {
        doing: &'static str,
        #[source]
        source: rusqlite::Error,
    },
}

/// Attaches what was being done to a rusqlite error.
pub(crate) trait SqlContext<T> {
    fn doing(self, doing: &'static str) -> Result<T, StoreError>;
}

impl<T> SqlContext<T> for Result<T, rusqlite::Error> {
    fn doing(self, doing: &'static str) -> Result<T, StoreError> {
        self.map_err(|source| StoreError::Sql { doing, source })
    }
}

/// An open results database.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    keep_chunks: bool,
    shard: Option<String>,
}

/// `DIR` → `DIR/results.db`; a path ending in `.db` (or any existing file) is taken as is.
pub fn db_path(path: &Path) -> PathBuf {
    if path.is_dir() || (!path.exists() && path.extension().is_none_or(|e| e != "db")) {
        path.join(DB_FILE)
    } else {
        path.to_path_buf()
    }
}

pub(crate) fn now_unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Store {
    /// Creates `dir/results.db` (and `dir`) for a new suite. Fails if it already exists.
    pub fn create(dir: &Path, suite: &SuiteInfo) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
            path: dir.to_path_buf(),
            source,
        })?;
        let path = dir.join(DB_FILE);
        if path.exists() {
            return Err(StoreError::AlreadyExists { path });
        }
        let mut store = Store::connect(&path, true)?;
        store.insert_suite(suite)?;
        Ok(store)
    }

    /// Opens an existing database (a folder holding `results.db`, or the file itself)
    /// for reading and writing reports, verdicts and runs. Changes no run's status.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let path = db_path(path);
        if !path.is_file() {
            return Err(StoreError::NotFound { path });
        }
        let store = Store::connect(&path, false)?;
        store.suite()?;
        Ok(store)
    }

    /// Opens a database to continue its suite (`--resume`): every run left `running`
    /// by a process that died is marked `interrupted`, to be rerun from scratch.
    pub fn open_resume(path: &Path) -> Result<Store, StoreError> {
        let store = Store::open(path)?;
        store
            .conn
            .execute(
                "UPDATE runs SET status = 'interrupted' WHERE status = 'running'",
                [],
            )
            .doing("marking interrupted runs")?;
        Ok(store)
    }

    fn connect(path: &Path, create: bool) -> Result<Store, StoreError> {
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut conn = Connection::open_with_flags(path, flags).map_err(open_err)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(open_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        schema::migrate(&mut conn).map_err(|e| match e {
            schema::MigrateError::TooNew(found) => StoreError::TooNew {
                path: path.to_path_buf(),
                found,
            },
            schema::MigrateError::Sql(source) => open_err(source),
        })?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            keep_chunks: true,
            shard: None,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether `write_requests` keeps every content chunk's arrival time (default: yes;
    /// needed to recompute ITL exactly).
    pub fn set_keep_chunks(&mut self, keep: bool) {
        self.keep_chunks = keep;
    }

    /// The shard (`K/N`) recorded on every request row written from now on.
    pub fn set_shard(&mut self, shard: Option<&str>) {
        self.shard = shard.map(str::to_string);
    }
}

#[cfg(test)]
mod tests;
