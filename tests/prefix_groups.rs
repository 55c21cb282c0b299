//! Prefix groups and the planned hit ratio against the in-process simulator with the
//! SmolLM2 tokenizer and chat template (so the simulator sees the prompts exactly as the
//! client counted them): N groups give the planned hit ratio, the template's fixed opening
//! is counted as shared, and the endpoint's `prefix_cache` label is held against the hits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cli_support;

use std::path::{Path, PathBuf};

use perfplan::store::{Store, StoredRun};

/// How close the measured hit ratio of a cache-on simulator comes to the planned one here:
/// the plan counts shared tokens in the simulator's 16-token blocks (its
/// `vllm:cache_config_info`), as it caches them: the 24-token template opening as one
/// block (16 of 24), a group prefix whole (128 tokens, 8 blocks). One request at a time,
/// so the two are the same figure but for a chance: random prompts that happen to share a
/// block beyond their prefix (one block of one request: 16 / 16,384 = 0.001 here).
const MARGIN: f64 = 0.002;

fn tokenizer() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/smollm2")
}

fn write(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("plan.toml");
    let text = format!(
        "[plan]\nname = \"groups\"\nseed = 7\n[models.smollm2]\ntokenizer = \"{tok}\"\n\
         [defaults]\noutput_tokens = 2\nignore_eos = true\n{body}",
        tok = tokenizer().display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// A simulated endpoint `name` labelled `label`, whose server caches when `caches` (with
/// `cache_blocks` blocks of 16 tokens) and counts with the SmolLM2 tokenizer.
fn endpoint(name: &str, label: &str, caches: bool, cache_blocks: u32) -> String {
    format!(
        "[endpoints.{name}]\nbase_url = \"sim://{name}\"\nprefix_cache = \"{label}\"\n\
         [endpoints.{name}.sim]\nttft_base = \"1ms\"\nitl_base = \"0ms\"\n\
         prefill_tokens_per_s = 10000000\nprefix_cache = {caches}\nblock_size = 16\n\
         cache_blocks = {cache_blocks}\ntokenizer = \"{tok}\"\n",
        tok = tokenizer().display()
    )
}

fn runs(plan: &Path, out: &Path) -> Vec<StoredRun> {
    cli_support::run(plan, out);
    Store::open(out).unwrap().runs().unwrap()
}

fn metric(run: &StoredRun, name: &str) -> f64 {
    run.metrics
        .get(name)
        .copied()
        .flatten()
        .unwrap_or_else(|| panic!("{name} of {}: {:?}", run.id, run.metrics))
}

fn warned(run: &StoredRun, kind: &str) -> Vec<String> {
    run.warnings
        .iter()
        .map(ToString::to_string)
        .filter(|w| w.starts_with(kind))
        .collect()
}

#[test]
fn prefix_groups_give_the_planned_hit_ratio_on_a_cache_on_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{}[datasets.even]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = 128\n\
             prefix_groups = 4\n\
             [datasets.weighted]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = 128\n\
             prefix_groups = 4\nprefix_weights = [5, 1, 1, 1]\n\
             [datasets.one]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = 128\n\
             [matrix]\ndataset = [\"even\", \"weighted\", \"one\"]\n\
             load = [{{ concurrency = 1, requests = 64, warmup = 0 }}]\n",
            endpoint("sim", "on", true, 100_000)
        ),
    );
    let expand = cli_support::perfplan(&["expand", "--json", plan.to_str().unwrap()]);
    let shown: serde_json::Value = serde_json::from_slice(&expand.stdout).unwrap();
    assert_eq!(shown[0]["settings"]["dataset"]["prefix_groups"], 4);
    assert_eq!(
        shown[1]["settings"]["dataset"]["prefix_weights"],
        serde_json::json!([5.0, 1.0, 1.0, 1.0])
    );
    let all = runs(&plan, &dir.path().join("out"));
    assert_eq!(all.len(), 3);
    let mut planned = Vec::new();
    for run in &all {
        let (p, m) = (
            metric(run, "planned_prefix_share"),
            metric(run, "cache_hit_ratio"),
        );
        assert!(
            (p - m).abs() < MARGIN,
            "{}: planned {p} measured {m}",
            run.id
        );
        // The runs follow each other without a cache reset: none finds another's prefixes.
        assert!(warned(run, "cache_leak").is_empty(), "{:?}", run.warnings);
        assert!(
            warned(run, "cache_shortfall").is_empty(),
            "{:?}",
            run.warnings
        );
        planned.push(p);
    }
    // Four even groups: requests 1-3 open a group (sharing the template's opening only,
    // one 16-token block of its 24 tokens), the 60 after them share a whole 128-token
    // prefix (its opening whole inside it); one group: 63 share it.
    let template = metric(&all[0], "planned_template_share");
    assert_eq!(template, (3.0 * 16.0 + 60.0 * 24.0) / (64.0 * 256.0));
    let even = (3.0 * 16.0 + 60.0 * 128.0) / (64.0 * 256.0);
    assert!((planned[0] - even).abs() < 1e-9, "{} vs {even}", planned[0]);
    assert!((planned[2] - 63.0 * 128.0 / (64.0 * 256.0)).abs() < 1e-9);
    // Weighted draws (5:1:1:1) take every group within 64 requests too: three first uses
    // after request 0 wherever they fall, so the same share as round robin, on a measured
    // ratio that follows the draws.
    assert_eq!(planned[1], planned[0]);
}

#[test]
fn the_chat_templates_opening_is_counted_as_shared_by_a_cold_run() {
    // As against the real llama.cpp server: SmolLM2's template puts a fixed system prompt
    // before every user text, so prompts with no prefix of their own still share it.
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{}[datasets.plain]\nkind = \"random\"\ninput_tokens = 64\n\
             [matrix]\nload = [{{ concurrency = 1, requests = 16, warmup = 0 }}]\n",
            endpoint("sim", "on", true, 100_000)
        ),
    );
    let all = runs(&plan, &dir.path().join("out"));
    let run = &all[0];
    let (prefix, template) = (
        metric(run, "planned_prefix_share"),
        metric(run, "planned_template_share"),
    );
    assert_eq!(prefix, template, "no prefix_tokens: the opening is all");
    let lead = template * 16.0 * 64.0 / 15.0;
    assert!((lead - lead.round()).abs() < 1e-9 && lead >= 16.0, "{lead}");
    // 16-token blocks: the simulator caches one block of the opening for requests 1-15.
    let measured = metric(run, "cache_hit_ratio");
    assert!(
        (measured - 15.0 * 16.0 / (16.0 * 64.0)).abs() < 1e-9,
        "{measured}"
    );
    // What the template shares is planned, so it is no sign of a leak.
    assert!(warned(run, "cache_leak").is_empty(), "{:?}", run.warnings);
}

#[test]
fn the_prefix_cache_label_and_the_planned_share_are_held_against_the_hits() {
    let dir = tempfile::tempdir().unwrap();
    let plan = write(
        dir.path(),
        &format!(
            "{}{}{}[datasets.g]\nkind = \"random\"\ninput_tokens = 256\nprefix_tokens = 128\n\
             prefix_groups = 4\n\
             [matrix]\nendpoint = [\"off_but_caches\", \"on_but_not\", \"on_but_tiny\"]\n\
             cache_state = [\"cold\", \"warm\"]\n\
             load = [{{ concurrency = 1, requests = 24, warmup = 0 }}]\n",
            endpoint("off_but_caches", "off", true, 100_000),
            endpoint("on_but_not", "on", false, 100_000),
            // Room for 4 blocks: every 128-token prefix (8 blocks) is evicted before reuse.
            endpoint("on_but_tiny", "on", true, 4),
        ),
    );
    let all = runs(&plan, &dir.path().join("out"));
    let find = |endpoint: &str, state: &str| {
        all.iter()
            .find(|r| r.axes["endpoint"] == endpoint && r.axes["cache_state"] == state)
            .unwrap()
    };
    for state in ["cold", "warm"] {
        let run = find("off_but_caches", state);
        let w = warned(run, "cache_setting");
        assert_eq!(w.len(), 1, "{:?}", run.warnings);
        let figure = format!(
            "cache_hit_ratio (usage) {:.2}",
            metric(run, "cache_hit_ratio")
        );
        assert!(w[0].contains("labelled prefix_cache = \"off\""), "{}", w[0]);
        assert!(w[0].contains(&figure), "{}", w[0]);
        let planned = format!("planned share {:.2}", metric(run, "planned_prefix_share"));
        assert!(w[0].contains(&planned), "{}", w[0]);
    }
    let warm_off = find("on_but_not", "warm");
    let w = warned(warm_off, "cache_setting");
    assert_eq!(w.len(), 1, "{:?}", warm_off.warnings);
    assert!(w[0].contains("warm run found no cached tokens"), "{}", w[0]);
    // Planned: every prompt sent before, in whole 16-token blocks of its 255 but the last.
    assert!(w[0].contains("cache_hit_ratio (usage) 0.00, planned share 0.94"));
    // The cold run of the non-caching server falls short of its plan: told so, naming both.
    let cold_off = find("on_but_not", "cold");
    assert_eq!(
        warned(cold_off, "cache_shortfall").len(),
        1,
        "{:?}",
        cold_off.warnings
    );
    // A cache too small for the run's prefixes: the cold run falls short of its plan; the
    // warm one (every block evicted before the measured pass) finds nothing at all.
    let warm_tiny = find("on_but_tiny", "warm");
    let w = warned(warm_tiny, "cache_setting");
    assert!(w.len() == 1 && w[0].contains("too little"), "{w:?}");
    {
        let run = find("on_but_tiny", "cold");
        let w = warned(run, "cache_shortfall");
        assert_eq!(w.len(), 1, "{:?}", run.warnings);
        let figure = format!(
            "({} {:.2}) is more than 10 points below the planned share {:.2}",
            "cache_hit_ratio (usage)",
            metric(run, "cache_hit_ratio"),
            metric(run, "planned_prefix_share")
        );
        assert!(w[0].contains(&figure), "{}", w[0]);
        assert!(
            warned(run, "cache_setting").is_empty(),
            "{:?}",
            run.warnings
        );
    }
}
