//! The results database (SQLite, WAL): one file per output folder holding the suite
//! (plan text, host facts, the environment it measured in), its runs, every request,
//! per-run metrics, server scrapes and gate verdicts. Writes are batched in transactions
//! so a crash loses at most the requests in flight. Knows nothing about plans' types,
//! HTTP or report layout; never stores secrets (there is no column for headers or keys).

mod bodies;
mod chunk_codec;
mod merge;
mod requests;
mod row_codec;
mod runs;
mod schema;
mod search;
mod suite;
mod telemetry;
mod token_codec;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags};

pub use bodies::StoredContent;
pub use requests::{RequestRow, StoredRequest};
pub use runs::{GateRecord, RunFinish, RunRow, RunStatus, ServerPhase, StoredRun};
pub use schema::SCHEMA_VERSION;
pub use search::{ProbeLink, SearchRow, SearchStepRow};
pub use suite::{GitInfo, HostFacts, StoredSecret, SuiteInfo, SuiteRow};
pub use telemetry::{TelemetryRow, TelemetrySeries};

/// The database's file name inside an output folder.
pub(crate) const DB_FILE: &str = "results.db";

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

/// Why a write to the results database failed, in terms a person can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteFailure {
    /// The disk, or the database's size limit, is full.
    DiskFull,
    /// Another connection holds the database locked (a write transaction).
    Locked,
    /// The file (or its folder) cannot be written.
    ReadOnly,
    /// The operating system reported an I/O error.
    Io,
}

impl WriteFailure {
    /// What to do about it.
    pub fn advice(self) -> &'static str {
        match self {
            WriteFailure::DiskFull => "the disk is full: free space on it",
            WriteFailure::Locked => {
                "another process holds the database locked: close it (an open `sqlite3` shell, \
                 another perfplan writing the same folder)"
            }
            WriteFailure::ReadOnly => {
                "the database file or its folder is read-only: make both writable"
            }
            WriteFailure::Io => {
                "the disk reported an I/O error: check the disk and its file system"
            }
        }
    }

    fn of(e: &rusqlite::Error) -> Option<WriteFailure> {
        use rusqlite::ErrorCode as C;
        match e.sqlite_error_code()? {
            C::DiskFull => Some(WriteFailure::DiskFull),
            C::DatabaseBusy | C::DatabaseLocked => Some(WriteFailure::Locked),
            C::ReadOnly | C::PermissionDenied => Some(WriteFailure::ReadOnly),
            C::SystemIoFailure | C::CannotOpen => Some(WriteFailure::Io),
            _ => None,
        }
    }
}

impl StoreError {
    /// Whether the error is a failed write to the database, and of which kind.
    pub(crate) fn write_failure(&self) -> Option<WriteFailure> {
        match self {
            StoreError::Sql { source, .. } | StoreError::Open { source, .. } => {
                WriteFailure::of(source)
            }
            _ => None,
        }
    }
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
    shard: Option<String>,
}

/// `DIR` → `DIR/results.db`; a path ending in `.db` (or any existing file) is taken as is.
pub(crate) fn db_path(path: &Path) -> PathBuf {
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
        if create {
            conn.pragma_update(None, "page_size", 16384)
                .map_err(open_err)?;
        }
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        match schema::migrate(&mut conn) {
            Ok(()) => {}
            Err(schema::MigrateError::TooNew(found)) => {
                return Err(StoreError::TooNew {
                    path: path.to_path_buf(),
                    found,
                })
            }
            // An older database in a read-only file is read as it is (`report`,
            // `compare`, `--baseline`: rows lacking newer columns read them as NULL);
            // a write to it fails as any write to a read-only file does.
            Err(schema::MigrateError::Sql(source))
                if !create && WriteFailure::of(&source) == Some(WriteFailure::ReadOnly) => {}
            Err(schema::MigrateError::Sql(source)) => return Err(open_err(source)),
        }
        Ok(Store {
            conn,
            path: path.to_path_buf(),
            shard: None,
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Lets the database grow by at most `pages` more pages on this connection (SQLite's
    /// `max_page_count`); writes beyond fail as on a full disk. For tests of that case.
    pub(crate) fn limit_growth(&mut self, pages: u64) -> Result<(), StoreError> {
        let count: i64 = self
            .conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .doing("limiting the database's size")?;
        let limit = count.saturating_add(i64::try_from(pages).unwrap_or(i64::MAX));
        self.conn
            .query_row(&format!("PRAGMA max_page_count = {limit}"), [], |_| Ok(()))
            .doing("limiting the database's size")
    }

    /// The shard (`K/N`) recorded on every request row written from now on.
    pub(crate) fn set_shard(&mut self, shard: Option<&str>) {
        self.shard = shard.map(str::to_string);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_clock;
#[cfg(test)]
mod tests_environment;
#[cfg(test)]
mod tests_golden;
#[cfg(test)]
mod tests_tls;
#[cfg(test)]
mod tests_tools;

impl Store {
    /// The columns `table` has: fewer than this build writes in an older database read
    /// unmigrated (read-only), whose missing columns then read as NULL.
    pub(crate) fn table_columns(&self, table: &'static str) -> Result<Vec<String>, StoreError> {
        let doing = "reading a table's columns";
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name FROM pragma_table_info(?1)")
            .doing(doing)?;
        let names = stmt
            .query_map([table], |r| r.get::<_, String>(0))
            .doing(doing)?
            .collect::<Result<Vec<_>, _>>()
            .doing(doing)?;
        Ok(names)
    }
}
