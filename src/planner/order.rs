//! The order a suite's runs execute in, and when a server's prefix cache is reset between
//! them (`reset_cache_before`).

use crate::plan::ResetCacheBefore;

use super::RunSpec;

/// The execution order: the matrix order, except that when any endpoint has a `launch`
/// command, runs are grouped by endpoint (in the order endpoints first appear, keeping the
/// matrix order within each), so each server is launched once for all its runs.
pub(crate) fn execution_order(runs: &[RunSpec]) -> Vec<RunSpec> {
    if !runs
        .iter()
        .any(|r| r.settings.endpoint.spec.launch.is_some())
    {
        return runs.to_vec();
    }
    let mut endpoints: Vec<&str> = Vec::new();
    for r in runs {
        if !endpoints.contains(&r.settings.endpoint.name.as_str()) {
            endpoints.push(&r.settings.endpoint.name);
        }
    }
    endpoints
        .iter()
        .flat_map(|e| runs.iter().filter(move |r| r.settings.endpoint.name == *e))
        .cloned()
        .collect()
}

/// Whether the endpoint's cache is reset before `run`; `previous` is the last run executed
/// on the same endpoint in this suite.
pub(crate) fn wants_reset(run: &RunSpec, previous: Option<&RunSpec>) -> bool {
    match run.settings.endpoint.spec.reset_cache_before {
        ResetCacheBefore::Never => false,
        ResetCacheBefore::EachRun => true,
        ResetCacheBefore::EachCacheState => {
            previous.is_none_or(|p| p.settings.cache_state != run.settings.cache_state)
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::plan::{load_plan, CacheState, LoadOptions};

    /// The runs of a small plan of two endpoints (`a` gets `extra`), cold and warm, for
    /// the tests of stages that take planned runs.
    pub(crate) fn runs(extra: &str) -> Vec<RunSpec> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        let text = format!(
            "[plan]\nname = \"t\"\n[endpoints.a]\nbase_url = \"sim://a\"\n{extra}\n\
             [endpoints.b]\nbase_url = \"sim://b\"\n[models.m]\ntokenizer = \"{tok}\"\n\
             [datasets.d]\nkind = \"random\"\ninput_tokens = 1000\nprefix_tokens = 250\n\
             [matrix]\ncache_state = [\"cold\", \"warm\"]\nendpoint = [\"a\", \"b\"]\n\
             load = [{{ concurrency = 2, requests = 4 }}]\n",
            tok = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/smollm2"),
        );
        std::fs::write(&path, text).unwrap();
        let env = |_: &str| None;
        let opts = LoadOptions::new(Vec::new(), &env);
        let plan = load_plan(&path, &opts).unwrap();
        crate::planner::expand(&plan).unwrap().runs
    }

    #[test]
    fn launched_endpoints_group_their_runs() {
        let plain = runs("");
        let names = |rs: &[RunSpec]| -> Vec<String> {
            rs.iter()
                .map(|r| r.settings.endpoint.name.clone())
                .collect()
        };
        assert_eq!(names(&execution_order(&plain)), ["a", "b", "a", "b"]);
        let launched = runs("launch = \"true\"");
        let ordered = execution_order(&launched);
        assert_eq!(names(&ordered), ["a", "a", "b", "b"]);
        assert_eq!(ordered[0].settings.cache_state, CacheState::Cold);
        assert_eq!(ordered[1].settings.cache_state, CacheState::Warm);
    }

    #[test]
    fn reset_rules() {
        let each = runs("reset_cache_before = \"each_cache_state\"");
        let order = execution_order(&each);
        assert!(wants_reset(&order[0], None));
        assert!(!wants_reset(&order[0], Some(&order[0])));
        assert!(wants_reset(&order[2], Some(&order[0])));
        let run = runs("reset_cache_before = \"each_run\"");
        assert!(wants_reset(&run[0], Some(&run[0])));
        assert!(!wants_reset(&runs("")[0], None));
    }
}
