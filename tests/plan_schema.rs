//! The checked-in JSON Schema is current, and every scenario loads and expands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use perfplan::plan::{load_plan, plan_schema, LoadOptions};

#[test]
fn checked_in_schema_is_current() {
    let current = serde_json::to_string_pretty(&plan_schema()).unwrap() + "\n";
    let stored = std::fs::read_to_string("schemas/plan.schema.json").unwrap_or_default();
    assert!(
        current == stored,
        "schemas/plan.schema.json is stale: regenerate it with `cargo run -- schema > schemas/plan.schema.json`"
    );
}

fn test_env(name: &str) -> Option<String> {
    (name == "TOKENIZER_PATH").then(|| "../tests/fixtures/smollm2".to_string())
}

#[test]
fn every_scenario_validates_and_expands() {
    let mut count = 0;
    for entry in std::fs::read_dir("scenarios").unwrap() {
        let path = entry.unwrap().path();
        let opts = LoadOptions::new(Vec::new(), &test_env);
        let plan = load_plan(&path, &opts)
            .unwrap_or_else(|r| panic!("{}:\n{}", path.display(), r.render()));
        let runs = perfplan::planner::expand(&plan)
            .unwrap_or_else(|d| panic!("{}: {d:?}", path.display()));
        assert!(!runs.runs.is_empty(), "{}", path.display());
        assert!(
            plan.spec.plan.description.is_some() || has_comment_block(&path),
            "{} needs a comment block",
            path.display()
        );
        count += 1;
    }
    assert!(count >= 5);
}

fn has_comment_block(path: &Path) -> bool {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('#'))
        .count()
        >= 3
}

/// The annotated plan of the book (`docs/src/plan/annotated.md`) is a valid plan.
#[test]
fn annotated_plan_is_valid() {
    let page = std::fs::read_to_string("docs/src/plan/annotated.md").unwrap();
    let section = page.split("# A plan, annotated").nth(1).unwrap();
    let block = section
        .split("```toml\n")
        .nth(1)
        .unwrap()
        .split("\n```")
        .next()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("readme.toml");
    std::fs::write(&path, block).unwrap();
    let tok = std::fs::canonicalize("tests/fixtures/smollm2")
        .unwrap()
        .display()
        .to_string();
    let env = move |name: &str| (name == "TOKENIZER_PATH").then(|| tok.clone());
    let plan = load_plan(&path, &LoadOptions::new(Vec::new(), &env))
        .unwrap_or_else(|r| panic!("{}", r.render()));
    let runs = perfplan::planner::expand(&plan).unwrap_or_else(|d| panic!("{d:?}"));
    assert!(runs.runs.len() > 10);
}
