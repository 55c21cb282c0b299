//! The results database's schema: numbered migrations applied in order, the number
//! kept in `PRAGMA user_version`. A change to a stored format is a new migration,
//! never an edit of an old one.

use rusqlite::{Connection, TransactionBehavior};

/// Migration `i` brings the database from `user_version = i` to `i + 1`.
const MIGRATIONS: [&str; 19] = [
    r#"
CREATE TABLE suites (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    plan_name TEXT NOT NULL,
    plan_path TEXT,
    plan_text TEXT NOT NULL,
    imports_json TEXT NOT NULL,
    plan_sha256 TEXT NOT NULL,
    set_overrides_json TEXT NOT NULL,
    seed INTEGER NOT NULL,
    perfplan_version TEXT NOT NULL,
    git_revision TEXT,
    git_dirty INTEGER,
    host_os TEXT NOT NULL,
    host_cpu_model TEXT NOT NULL,
    host_cores INTEGER NOT NULL,
    host_name TEXT NOT NULL,
    report_json TEXT NOT NULL,
    gates_json TEXT NOT NULL,
    slo_json TEXT NOT NULL,
    created_unix_ms INTEGER NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    ordinal INTEGER NOT NULL,
    axes_json TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    status TEXT NOT NULL,
    started_unix_ms INTEGER,
    finished_unix_ms INTEGER,
    warnings_json TEXT NOT NULL DEFAULT '[]',
    extras_json TEXT NOT NULL DEFAULT '{}',
    error TEXT
);
CREATE TABLE requests (
    run_id TEXT NOT NULL,
    request_index INTEGER NOT NULL,
    item INTEGER NOT NULL,
    phase TEXT NOT NULL,
    intended_us INTEGER NOT NULL,
    sent_us INTEGER NOT NULL,
    first_chunk_us INTEGER,
    ttft_us INTEGER,
    latency_us INTEGER NOT NULL,
    end_us INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    itl_mean_us INTEGER,
    itl_max_us INTEGER,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cached_tokens INTEGER,
    client_input_tokens INTEGER,
    client_output_tokens INTEGER,
    target_input_tokens INTEGER,
    outcome TEXT NOT NULL,
    http_status INTEGER,
    error TEXT,
    finish_reason TEXT,
    request_bytes INTEGER NOT NULL,
    response_bytes INTEGER NOT NULL,
    shard TEXT,
    PRIMARY KEY (run_id, request_index)
) WITHOUT ROWID;
CREATE TABLE chunks (
    run_id TEXT NOT NULL,
    request_index INTEGER NOT NULL,
    times_us TEXT NOT NULL,
    PRIMARY KEY (run_id, request_index)
) WITHOUT ROWID;
CREATE TABLE run_metrics (
    run_id TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (run_id, name)
) WITHOUT ROWID;
CREATE TABLE server_metrics (
    run_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (run_id, phase, name)
) WITHOUT ROWID;
CREATE TABLE gate_results (
    id INTEGER PRIMARY KEY,
    evaluated_unix_ms INTEGER NOT NULL,
    source TEXT NOT NULL,
    gate TEXT NOT NULL,
    condition TEXT NOT NULL,
    run_id TEXT NOT NULL,
    value REAL,
    baseline REAL,
    passed INTEGER NOT NULL,
    message TEXT NOT NULL
);
"#,
    // 2: SLA searches. A probe is a run of its own (in `runs`), linked here to its
    // search run and step; `runs` lists neither table's rows twice.
    r#"
CREATE TABLE searches (
    run_id TEXT PRIMARY KEY,
    variable TEXT NOT NULL,
    outcome TEXT NOT NULL,
    best_pass REAL,
    first_fail REAL,
    failed_metric TEXT,
    slo_json TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE search_probes (
    run_id TEXT PRIMARY KEY,
    search_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    value REAL NOT NULL,
    trial INTEGER NOT NULL,
    verdict TEXT
);
CREATE TABLE search_steps (
    search_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    value REAL NOT NULL,
    verdict TEXT NOT NULL,
    failed_metric TEXT,
    metrics_json TEXT NOT NULL,
    PRIMARY KEY (search_id, step)
) WITHOUT ROWID;
"#,
    // 3: `run --shard K/N` records its shard on the suite, so `merge` can tell shards apart.
    r#"
ALTER TABLE suites ADD COLUMN shard TEXT;
"#,
    // 4: a request row holds every field the metrics read: the last choice chunk (vLLM's
    // latency end) and every content chunk's arrival as a compact BLOB (see
    // `row_codec`). Rows of earlier versions keep their chunk times in `chunks` (JSON),
    // which is read as before and no longer written.
    r#"
ALTER TABLE requests ADD COLUMN last_chunk_us INTEGER;
ALTER TABLE requests ADD COLUMN chunk_times BLOB;
"#,
    // 5: a request's connection setup time, when it opened a connection (NULL when it was
    // sent on an open one, and in rows written before: their `sent_us` included it).
    r#"
ALTER TABLE requests ADD COLUMN connect_us INTEGER;
"#,
    // 6: `rerun` from any folder: the plan's own folder (absolute), against which its
    // relative paths were resolved, and the literal secrets its stored texts hold as
    // `${VAR}` (endpoint, header, variable), so `rerun` can name what it needs. Suites
    // written before have neither: they rerun as before (paths from the current folder).
    r#"
ALTER TABLE suites ADD COLUMN plan_dir TEXT;
ALTER TABLE suites ADD COLUMN secrets_json TEXT NOT NULL DEFAULT '[]';
"#,
    // 7: `[plan] store = { bodies, text }`: request bodies (by item) and response texts
    // (by request), zlib-compressed as SQLite's sqlar keeps files: the blob is the raw
    // bytes when compressing would not make it smaller (length(blob) = *_bytes), so the
    // sqlite3 shell reads either with sqlar_uncompress(blob, *_bytes).
    r#"
CREATE TABLE request_bodies (
    run_id TEXT NOT NULL,
    item INTEGER NOT NULL,
    body_bytes INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (run_id, item)
) WITHOUT ROWID;
CREATE TABLE response_texts (
    run_id TEXT NOT NULL,
    request_index INTEGER NOT NULL,
    text_bytes INTEGER NOT NULL,
    text BLOB NOT NULL,
    PRIMARY KEY (run_id, request_index)
) WITHOUT ROWID;
"#,
    // 8: the first answer chunk after any reasoning (`ttfo`'s end, µs from the run's start
    // like every instant) and the bytes of generated text (0 on a success: no output at
    // all; NULL for APIs that generate none, and in rows written before).
    r#"
ALTER TABLE requests ADD COLUMN first_answer_us INTEGER;
ALTER TABLE requests ADD COLUMN output_bytes INTEGER;
"#,
    // 9: server telemetry scraped during a run's measured pass: one row per series and
    // scrape, `t_ms` from the run's start (the instant its `*_us` times count from;
    // negative for the scrape just before the first request), `le` a histogram bucket's
    // upper bound (NULL for gauges, counters, `_sum` and `_count`).
    r#"
CREATE TABLE telemetry (
    run_id TEXT NOT NULL,
    url TEXT NOT NULL,
    t_ms INTEGER NOT NULL,
    name TEXT NOT NULL,
    le REAL,
    value REAL NOT NULL
);
CREATE INDEX telemetry_by_run ON telemetry (run_id, name, t_ms);
"#,
    // 10: which replica (`urls` of the endpoint, from 0) a request went to; NULL for an
    // endpoint with one URL and in rows written before.
    r#"
ALTER TABLE requests ADD COLUMN replica INTEGER;
"#,
    // 11: which class of a mix (`kind = "mix"`, its index in the mix) a request was drawn
    // from; NULL for a run that is not a mix and in rows written before.
    r#"
ALTER TABLE requests ADD COLUMN class INTEGER;
"#,
    // 12: the run verdict (`{"status", "reasons"}`; NULL: not judged, as every run stored
    // before), and the suite's `[trust]` thresholds (`strict`, `accept` and the rest) that
    // reports, gates and merges apply. Warnings are now stored as `{"code", "severity", "text"}` objects in
    // the same column; bare strings of earlier runs still read (with the code their
    // prefix names).
    r#"
ALTER TABLE runs ADD COLUMN verdict_json TEXT;
ALTER TABLE suites ADD COLUMN trust_json TEXT NOT NULL DEFAULT '{}';
"#,
    // 13: the TLS handshake of the connection a request opened (the lean client's https://
    // connections): its time (a part of `connect_us`) and whether the server resumed an
    // earlier session (1) or did a full handshake (0); NULL for requests that opened no
    // TLS connection, on the reqwest path, and in rows written before.
    r#"
ALTER TABLE requests ADD COLUMN tls_handshake_us INTEGER;
ALTER TABLE requests ADD COLUMN tls_resumed INTEGER;
"#,
    // 14: reasoning and chunks that are not tokens: the server's
    // `completion_tokens_details.reasoning_tokens` and the client's count of the reasoning
    // text; a stream's chunks that carried a choice (empty ones included) and its token
    // counts per content chunk (`token_codec`). NULL in rows written before: they read
    // with one token per content chunk, as their metrics were computed.
    r#"
ALTER TABLE requests ADD COLUMN reasoning_tokens INTEGER;
ALTER TABLE requests ADD COLUMN client_reasoning_tokens INTEGER;
ALTER TABLE requests ADD COLUMN choice_chunks INTEGER;
ALTER TABLE requests ADD COLUMN chunk_tokens BLOB;
"#,
    // 15: the environment the suite measured in (`environment::Environment` as JSON: the
    // client machine, each endpoint's self-description and model metadata, the plan's
    // labels); NULL in suites stored before, which read with no environment.
    r#"
ALTER TABLE suites ADD COLUMN environment_json TEXT;
"#,
    // 16: how the answer's bytes were timed (`record::ReadClock`): `read_clock` 1 for the
    // kernel's receive stamps, 0 for the client's reads; how long after their arrival the
    // first content chunk, the last byte and the slowest read were read (the client's own
    // delay). NULL in rows written before, which read as timed by the client's reads.
    r#"
ALTER TABLE requests ADD COLUMN read_clock INTEGER;
ALTER TABLE requests ADD COLUMN first_read_delay_us INTEGER;
ALTER TABLE requests ADD COLUMN end_read_delay_us INTEGER;
ALTER TABLE requests ADD COLUMN max_read_delay_us INTEGER;
"#,
    // 17: a tool-calling run's request (`kind = "tool_calls"`): its round in the turn (0:
    // the user's message, 1..: after tool results), its answer's tool calls and how many
    // of them parsed (known tool, JSON arguments valid for the schema); NULL for every
    // other run and in rows written before.
    r#"
ALTER TABLE requests ADD COLUMN tool_round INTEGER;
ALTER TABLE requests ADD COLUMN tool_calls INTEGER;
ALTER TABLE requests ADD COLUMN tool_calls_parsed INTEGER;
"#,
    // 18: a golden request of the plan's `[checks]` (phase `check`): how its answer
    // compared with the expected one (`ok`, `wrong`, `unparsed`, `failed`) and the
    // answer's text (at most the endpoint's `limits.max_text`), which the suite's
    // `temperature = 0` consistency check compares across runs; NULL for every other
    // request and in rows written before.
    r#"
ALTER TABLE requests ADD COLUMN answer_check TEXT;
ALTER TABLE requests ADD COLUMN answer_text TEXT;
"#,
    // 19: how long after its arrival each content chunk was read (`chunk_codec`'s
    // `chunk_read_delays`: a varint of microseconds per chunk); NULL when every delay is
    // zero and in rows written before, which read with no per-chunk delays.
    r#"
ALTER TABLE requests ADD COLUMN chunk_read_delays BLOB;
"#,
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// Applies every migration the database has not seen yet, each in its own transaction.
/// Fails with `TooNew` for a database written by a newer perfplan.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), MigrateError> {
    loop {
        // IMMEDIATE takes the write lock first, so two processes opening a new
        // database at once cannot both apply the same migration.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if current > SCHEMA_VERSION {
            return Err(MigrateError::TooNew(current));
        }
        let Some(sql) = MIGRATIONS.get(current as usize) else {
            return Ok(());
        };
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", current + 1)?;
        tx.commit()?;
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum MigrateError {
    #[error("schema version {0} is newer than this perfplan understands")]
    TooNew(i64),
    #[error(transparent)]
    Sql(#[from] rusqlite::Error),
}
