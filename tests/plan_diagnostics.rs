//! What `perfplan validate`, `expand` and `run` print for invalid plans, snapshotted: every
//! error located at the value or key it is about, with the range or the names it could
//! have been. Run in the plan's folder so the snapshots hold no temporary paths.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

const PLAN: &str = r#"[plan]
name = "d"

[endpoints.on]
base_url = "sim://on"

[endpoints.off]
base_url = "sim://off"

[models.m]

[datasets.d]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4

[matrix]
endpoint = ["on", "off"]
cache_state = ["cold", "warm"]
load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]
"#;

fn perfplan(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run perfplan")
}

/// Writes `plan` as `p.toml` and returns what `perfplan ARGS p.toml [EXTRA]` printed on
/// stderr, checking it exits with 2 (invalid).
fn invalid(command: &str, plan: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), plan).unwrap();
    let mut args = vec![command, "p.toml"];
    args.extend_from_slice(extra);
    let out = perfplan(dir.path(), &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

#[test]
fn numbers_out_of_range_name_the_range_at_the_value() {
    let plan = PLAN
        .replace(
            "name = \"d\"",
            "name = \"d\"\npause_between_runs = \"25h\"",
        )
        .replace(
            "base_url = \"sim://on\"",
            "base_url = \"sim://on\"\ntimeouts = { connect = \"0s\" }\nsim = { block_size = 0, fault_drop = 1.5 }",
        )
        .replace("output_tokens = 4", "output_tokens = 0\ntop_p = 0\ntemperature = nan")
        .replace(
            "load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]",
            "load = [{ rate = 1e-30, requests = 3 }, { rate = 5, duration = \"0s\", max_in_flight = 0 }, { search = \"rate\", min = 1e-20, slo = { ttft_p99 = \"<= 2s\" } }]\ntop_k = [-2, 5]\nthink_time = \"-1s\"",
        );
    insta::assert_snapshot!("ranges", invalid("validate", &plan, &[]));
}

#[test]
fn a_time_slice_out_of_range_is_located_at_its_value() {
    let plan = format!("{PLAN}\n[report]\nslice = \"5ms\"\n");
    insta::assert_snapshot!("report_slice", invalid("validate", &plan, &[]));
    let plan = format!("{PLAN}\n[report]\nslice = \"soon\"\n");
    let text = invalid("validate", &plan, &[]);
    assert!(
        text.contains("slice") && text.contains("invalid duration"),
        "{text}"
    );
}

#[test]
fn a_misspelt_report_clock_is_located_with_the_clocks_there_are() {
    let plan = format!("{PLAN}\n[report]\nclock = \"usr\"\n");
    let text = invalid("validate", &plan, &[]);
    assert!(
        text.contains("`report.clock`")
            && text.contains("expected one of `kernel`, `user`")
            && text.contains("p.toml:")
            && text.contains("did you mean `user`?"),
        "{text}"
    );
}

#[test]
fn token_ranges_are_checked_at_min_and_max() {
    let plan = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"random_multi_turn\"\nturns = { min = 0, max = 2000 }",
    );
    insta::assert_snapshot!("token_ranges", invalid("validate", &plan, &[]));
    let plan = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"random_multi_turn\"\nturns = 2\nuser_tokens = { min = 9, max = 3 }",
    );
    insta::assert_snapshot!("token_range_order", invalid("validate", &plan, &[]));
}

#[test]
fn settings_checked_with_their_neighbours() {
    let plan = PLAN.replace(
        "output_tokens = 4",
        "output_tokens = { min = 8, max = 4 }\nmin_tokens = 16",
    );
    insta::assert_snapshot!("output_and_min_tokens", invalid("validate", &plan, &[]));
    let plan = PLAN.replace(
        "[models.m]",
        "[endpoints.on.sim]\nfault_drop = 0.6\nfault_stall = 0.6\n\n[models.m]",
    );
    insta::assert_snapshot!("sim_faults", invalid("validate", &plan, &[]));
    let plan = PLAN.replace(
        "[models.m]",
        "[endpoints.on.sim]\nreplicas = 2\nroute = \"random\"\n\n[models.m]",
    );
    insta::assert_snapshot!("sim_route_alone", invalid("validate", &plan, &[]));
    let plan = PLAN.replace(
        "[models.m]",
        "[endpoints.on.sim]\nworkers = 4\nsession_header = \"x session\"\n\n[models.m]",
    );
    insta::assert_snapshot!("sim_session_header", invalid("validate", &plan, &[]));
    let plan = PLAN
        .replace(
            "[models.m]",
            "[endpoints.on.sim]\nworkers = 2\n\n[models.m]",
        )
        .replace(
            "base_url = \"sim://on\"",
            "base_url = \"sim://on\"\nsession_header = \"x-conversation\"",
        );
    insta::assert_snapshot!(
        "sim_routes_by_another_header",
        invalid("validate", &plan, &[])
    );
    let plan = PLAN.replace(
        "load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]",
        "load = [{ search = \"concurrency\", max = 200000, slo = { ttft_p99 = \"<= 2s\" }, requests_per_step = \"5000x\", precision = \"0%\" }, { concurrency = 1, requests = 2, warmup = \"2000%\" }]",
    );
    insta::assert_snapshot!("search_forms", invalid("validate", &plan, &[]));
}

#[test]
fn images_larger_than_16_megapixels_are_refused_before_running() {
    let plan = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"random_images\"\nwidth = 16384\nheight = 16384",
    );
    insta::assert_snapshot!("image_size", invalid("validate", &plan, &[]));
}

#[test]
fn exclude_and_include_entries_are_checked_at_the_key() {
    let plan = format!(
        "{PLAN}exclude = [{{ endpont = \"off\", cache_state = \"warm\" }}]\ninclude = [{{ endpoint = \"on\", load = {{ concurency = 3, requests = 2 }} }}]\n"
    );
    insta::assert_snapshot!("entries", invalid("validate", &plan, &[]));
    let plan = format!("{PLAN}exclude = [{{ temperature = 0.5 }}]\n");
    insta::assert_snapshot!("exclude_not_an_axis", invalid("validate", &plan, &[]));
    let plan =
        format!("{PLAN}exclude = [{{ endpoint = \"off\", load = {{ concurrency = 16 }} }}]\n");
    insta::assert_snapshot!("exclude_matches_nothing", invalid("validate", &plan, &[]));
}

#[test]
fn set_paths_must_be_keys_of_tables_the_plan_has() {
    let set = |arg: &str| invalid("validate", PLAN, &["--set", arg]);
    insta::assert_snapshot!("set_unknown_key", set("defaults.temprature=0.5"));
    insta::assert_snapshot!("set_unknown_dataset", set("datasets.dd.text=hi"));
    insta::assert_snapshot!("set_unknown_endpoint", set("endpoints.of.base_url=sim://x"));
}

#[test]
fn keys_that_would_have_no_effect_are_errors() {
    let images = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"images\"\npath = \".\"\nformat = \"jpeg\"",
    );
    insta::assert_snapshot!("format_on_images", invalid("validate", &images, &[]));
    let lines = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        "kind = \"prompt\"\ntext = \"hello\"\nprefix_role = \"user\"\ninput_len_mode = \"cap\"",
    );
    insta::assert_snapshot!("file_rules_alone", invalid("validate", &lines, &[]));
    let endpoint = PLAN.replace(
        "base_url = \"sim://off\"",
        "base_url = \"sim://off\"\nready = \"/health\"\nstop = \"kill it\"",
    );
    insta::assert_snapshot!("launch_keys_alone", invalid("validate", &endpoint, &[]));
    let open = PLAN.replace(
        "load = [{ concurrency = 1, requests = 2, warmup = 1 }, { concurrency = 2, requests = 2, warmup = 2 }]",
        "load = [{ rate = 5, requests = 2, burstiness = 0.5 }]",
    );
    insta::assert_snapshot!("burstiness_without_gamma", invalid("validate", &open, &[]));
}

#[test]
fn a_dataset_axis_that_fits_no_dataset_is_an_error() {
    let plan = format!("{PLAN}input_tokens = [8, 16]\n");
    insta::assert_snapshot!("axis_fits_no_dataset", invalid("validate", &plan, &[]));
}

#[test]
fn two_points_that_are_one_run_are_an_error_naming_both() {
    let plan = PLAN.replace(
        "{ concurrency = 2, requests = 2, warmup = 2 }",
        "{ concurrency = 1, requests = 2, warmup = 1 }",
    );
    insta::assert_snapshot!("repeated_load", invalid("validate", &plan, &[]));
    let plan = format!("{PLAN}temperature = [0, 0.0]\n");
    insta::assert_snapshot!("same_value_twice", invalid("validate", &plan, &[]));
}

#[test]
fn only_filters_that_match_nothing_say_what_exists() {
    let plan = format!("{PLAN}exclude = [{{ endpoint = \"off\", cache_state = \"warm\" }}]\n");
    let only = |filter: &str| invalid("expand", &plan, &["--only", filter]);
    insta::assert_snapshot!("only_unknown_value", only("endpoint=of"));
    insta::assert_snapshot!("only_unknown_axis", only("endpont=on"));
    insta::assert_snapshot!("only_no_combination", only("endpoint=off,cache_state=warm"));
    insta::assert_snapshot!(
        "only_run_unknown_value",
        invalid("run", &plan, &["--only", "endpoint=typo"])
    );
}

#[test]
fn an_exclude_emptied_by_set_is_a_warning_and_a_trace_mapping_under_an_override_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let plan = format!("{PLAN}exclude = [{{ endpoint = \"off\", cache_state = \"warm\" }}]\n");
    std::fs::write(dir.path().join("p.toml"), plan).unwrap();
    let out = perfplan(
        dir.path(),
        &["validate", "p.toml", "--set", "matrix.cache_state=cold"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    insta::assert_snapshot!("exclude_emptied_by_set", stderr);
    let recorded = std::fs::canonicalize("tests/fixtures/trace-sample.jsonl").unwrap();
    let trace = PLAN.replace(
        "kind = \"prompt\"\ntext = \"hello\"",
        &format!(
            "kind = \"trace\"\npath = \"{}\"\nmodel_override = \"m\"\nmodel_mapping = {{ a = \"b\" }}",
            recorded.display()
        ),
    );
    insta::assert_snapshot!("mapping_under_override", invalid("validate", &trace, &[]));
}

#[test]
fn replica_and_session_keys_are_checked_where_they_are_written() {
    let plan = PLAN
        .replace(
            "base_url = \"sim://on\"",
            "base_url = \"http://127.0.0.1:1\"\nurls = [\"http://127.0.0.1:2\", \"sim://x\", \"http://127.0.0.1:2\"]\nsession_header = \"x request\"",
        )
        .replace(
            "base_url = \"sim://off\"",
            "base_url = \"sim://off\"\nbalance = \"session\"\nsim = { replicas = 1 }",
        )
        .replace("[models.m]", "[endpoints.none]\nprefix_cache = \"on\"\n\n[models.m]");
    insta::assert_snapshot!("replicas", invalid("validate", &plan, &[]));
}
