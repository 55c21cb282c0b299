//! Thousands of broken plans: every one is a located error or a valid plan, none a panic,
//! none takes over a second. Seeded, so a failure reproduces.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use perfplan::plan::{load_plan, LoadOptions};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const TOML_PLAN: &str = include_str!("../scenarios/quickstart.toml");
const YAML_PLAN: &str = include_str!("../scenarios/release-signoff.yaml");

fn no_env(_: &str) -> Option<String> {
    None
}

fn mutate(rng: &mut ChaCha8Rng, text: &str) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    match rng.gen_range(0..8) {
        0 => bytes.truncate(rng.gen_range(0..bytes.len())),
        1 => {
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..bytes.len());
                bytes[i] = rng.gen();
            }
        }
        2 => {
            let i = rng.gen_range(0..bytes.len());
            let junk: &[u8] = [
                &b"99999999999999999999999999"[..],
                b"[[[[[[[[",
                b"{{{{",
                b"\"",
                b"= =",
                b"\xff\xfe",
                b"-1e309",
                b"\n[plan]\n",
            ][rng.gen_range(0..8)];
            bytes.splice(i..i, junk.iter().copied());
        }
        3 => {
            let a = rng.gen_range(0..bytes.len());
            let b = rng.gen_range(a..bytes.len());
            bytes.drain(a..b);
        }
        4 => {
            bytes = format!(
                "{}{}",
                "[".repeat(rng.gen_range(1..5000)),
                "]".repeat(rng.gen_range(0..5000))
            )
            .into_bytes()
        }
        5 => {
            bytes = format!(
                "a: {}1{}",
                "[".repeat(rng.gen_range(1..5000)),
                "]".repeat(rng.gen_range(0..5000))
            )
            .into_bytes()
        }
        6 => {
            let line_count = text.lines().count();
            let skip = rng.gen_range(0..line_count);
            bytes = text
                .lines()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, l)| l)
                .collect::<Vec<_>>()
                .join("\n")
                .into_bytes();
        }
        _ => {
            let i = rng.gen_range(0..bytes.len());
            bytes.insert(i, b"=:\n\t#[]{},\"'&*!|>"[rng.gen_range(0..17)]);
        }
    }
    bytes
}

fn alias_bomb() -> String {
    let mut text = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for i in 1..10 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    text
}

fn check_one(dir: &std::path::Path, name: &str, bytes: &[u8]) {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let opts = LoadOptions::new(vec![], &no_env);
    let start = Instant::now();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_plan(&path, &opts).map(|p| perfplan::planner::expand(&p).is_ok())
    }));
    let took = start.elapsed();
    let Ok(result) = result else {
        panic!("panic on input {:?}", String::from_utf8_lossy(bytes));
    };
    assert!(
        took < Duration::from_secs(1),
        "took {took:?} on {:?}",
        String::from_utf8_lossy(bytes)
    );
    if let Err(report) = result {
        assert!(report.has_errors());
        let rendered = report.render();
        assert!(rendered.contains("error"), "{rendered}");
        // Every error names a place, except unreadable files (no place to name).
        for d in report.errors() {
            assert!(
                d.span.is_some() || d.message.contains("cannot"),
                "unlocated: {}",
                d.message
            );
        }
    }
}

#[test]
fn broken_plans_are_located_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    for i in 0..1500 {
        let (base, ext) = if i % 2 == 0 {
            (TOML_PLAN, "toml")
        } else {
            (YAML_PLAN, "yaml")
        };
        let bytes = mutate(&mut rng, base);
        check_one(dir.path(), &format!("p{i}.{ext}"), &bytes);
    }
    check_one(dir.path(), "bomb.yaml", alias_bomb().as_bytes());
    check_one(dir.path(), "empty.toml", b"");
    check_one(dir.path(), "binary.yaml", &[0u8, 159, 146, 150, 255, 0, 1]);
}
