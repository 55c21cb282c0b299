//! `RunFacts`: what the store keeps of a run besides its metrics, rows and warnings (the
//! `extras_json` column): the counts behind its metrics, its time facts, its traffic, its
//! shard and barrier, its mix, a merge's view of its shards, a search's outcome. Written
//! once (each stage fills its section, the store serialises the whole), read once (the
//! store deserialises it typed; readers use fields). The stored JSON keeps the key names
//! and shapes of the `serde_json::Value` it replaces, so databases of earlier and later
//! versions read each other's runs; keys this version does not know are kept (`rest`), so
//! a run read and written again (a merge) loses nothing. A section that does not parse
//! (an older or damaged row) is kept as it was, unread: the rest of the run still reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

mod judged;
mod sections;
#[cfg(test)]
mod tests;

pub use judged::{ClientSide, Evidence, Example, PassCounts, ServerCounts, ServerSide};
pub use sections::{
    BarrierFacts, ConnectionFacts, ExploreFacts, Gauges, InputLengthFacts, LengthDiff,
    MixClassFacts, PreconnectFacts, SaturationStopFacts, SearchFacts, SearchObjective,
    SearchStepFacts, SettleFacts, ShardClientFacts, ShardStartFacts, ShardStarts, SkippedFacts,
    SteadyWindow, StepFacts, TimeFacts,
};

/// The facts stored with one run. Every section is optional: a run keeps only what its
/// stages found (a search keeps `search`, a shard's empty share `shard` and
/// `shard_share`, an executed run its counts and time, a merged run its shards).
/// Fields are in the order a live run writes them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunFacts {
    // The counts behind the run's metrics (`RunSummary`).
    /// Measured requests (warmup and priming excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// The run's request rows in the database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_rows: Option<u64>,
    /// Failed measured requests by outcome (`"http"`, `"timeout"`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<BTreeMap<String, u64>>,
    /// Failed measured requests by HTTP status (the status as text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_statuses: Option<BTreeMap<String, u64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_input: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_output: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_output: Option<u64>,
    /// Why the client limited the run: `Some(None)` is a run stored with `null` (its
    /// client kept up), `None` one without the key (a search, a database before it).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_bound: Option<Option<String>>,
    /// Which definitions the metrics were computed by (`MetricDefinitions::as_str`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric_definitions: Option<String>,
    /// The ITL percentiles come from the bounded histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_bounded: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<ConnectionFacts>,
    /// How the prompts' lengths differed between server, client and target
    /// (`metrics::input_lengths`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_lengths: Option<InputLengthFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preconnect: Option<PreconnectFacts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_settle: Option<SettleFacts>,
    /// The server's and client's counts over the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_counts: Option<ServerCounts>,
    // The run's traffic.
    /// Multi-turn: the turn of every item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_of_item: Option<Vec<u32>>,
    /// Multi-turn: the conversations that ended early, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_errors: Option<Vec<String>>,
    /// A trace replay: each item's request id in the trace, where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_request_ids: Option<Vec<Option<String>>>,
    /// The URL of each replica number the rows keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<Vec<String>>,
    // The run's shard.
    /// The wall-clock start of the measured pass (record times are offsets from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured_start_unix_us: Option<u64>,
    /// The shard that ran it (`"k/n"`); `Some(None)` an empty share of an unsharded run.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub shard: Option<Option<String>>,
    /// `0`: the shard had no share of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_share: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<BarrierFacts>,
    /// How far into the run's one arrival sequence the shard's load began (open loops).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_lead_us: Option<u64>,
    /// What the records said of the run's trustworthiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// A mix's classes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mix: Option<Vec<MixClassFacts>>,
    // A merged run's shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_by_shard: Option<Vec<ShardClientFacts>>,
    /// The shard of the busiest client.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub client_cpu_ratio_shard: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_starts: Option<ShardStarts>,
    /// An SLA search's outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchFacts>,
    /// A tier skipped because an earlier one saturated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<SkippedFacts>,
    /// Keys this version does not know, and sections that did not parse, as stored.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A key stored with `null` is `Some(None)`; a key not stored is `None` (the default).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

impl RunFacts {
    /// The facts of a stored `extras_json` value. Never fails: a run stored without
    /// facts (`{}`, `null`) has none, and a section that does not parse as this version
    /// reads it is kept in `rest`, as stored, and read as absent.
    pub fn from_value(value: Value) -> RunFacts {
        let Value::Object(map) = value else {
            return RunFacts::default();
        };
        if let Ok(facts) = serde_json::from_value::<RunFacts>(Value::Object(map.clone())) {
            return facts;
        }
        let (mut good, mut bad) = (Map::new(), Map::new());
        for (key, v) in map {
            let one = Value::Object(Map::from_iter([(key.clone(), v.clone())]));
            if serde_json::from_value::<RunFacts>(one).is_ok() {
                good.insert(key, v);
            } else {
                bad.insert(key, v);
            }
        }
        let mut facts: RunFacts = serde_json::from_value(Value::Object(good)).unwrap_or_default();
        facts.rest.extend(bad);
        facts
    }

    /// The facts of stored `extras_json` text (see [`RunFacts::from_value`]); text that is
    /// not JSON is an error.
    pub fn from_json_text(text: &str) -> Result<RunFacts, serde_json::Error> {
        serde_json::from_str(text).map(RunFacts::from_value)
    }

    /// The facts as stored (`extras_json`).
    pub fn to_value(&self) -> Value {
        // Every field is a string-keyed map, a number, a string or a list: serialising
        // cannot fail.
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }

    /// The run's `client_bound` verdict, when it was client-bound.
    pub fn client_bound(&self) -> Option<&str> {
        self.client_bound.as_ref()?.as_deref()
    }

    /// The run's time facts, created when missing.
    pub fn time_mut(&mut self) -> &mut TimeFacts {
        self.time.get_or_insert_with(TimeFacts::default)
    }
}
