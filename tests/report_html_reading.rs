//! The HTML report leads with what matters and its charts read at a glance (issue
//! "the first hour", reports): a suite run against the simulator over real HTTP (two
//! identical endpoints, one that fails every request, tiers 1/4/16, thin slices), and
//! the page checked as generated: its order, its header, a failed run's error in place
//! of empty charts, text size, ticks at the tiers, the steady window as a band, rates
//! over windows when slices hold few completions, series told apart by dash, the
//! server's TTFT with its caveat, and a "how to read" under every chart.
//! With `PERFPLAN_DEMO_DIR` set, the suite and page are kept there (to screenshot).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn plan(tokenizer: &Path) -> String {
    let sim = "ttft_base = \"4ms\"\nitl_base = \"1ms\"\nmax_num_seqs = 8\n";
    format!(
        r#"[plan]
name = "html-reading"
seed = 3

[endpoints.good]
base_url = "sim://html-good"
[endpoints.good.sim]
{sim}
[endpoints.twin]
base_url = "sim://html-twin"
[endpoints.twin.sim]
{sim}
[endpoints.broken]
base_url = "sim://html-broken"
[endpoints.broken.sim]
fault_http_500 = 1.0

[models.m]
served_name = "sim-model"
tokenizer = "{tok}"

[datasets.r]
kind = "random"
input_tokens = 64

[defaults]
output_tokens = 12
ignore_eos = true

[matrix]
endpoint = ["good", "twin", "broken"]
load = [{{ concurrency = 1, requests = 24, warmup = 1 }}, {{ concurrency = 4, requests = 32, warmup = 4 }}, {{ concurrency = 16, requests = 64, warmup = 16 }}]

[report]
slice = "40ms"
"#,
        tok = tokenizer.display()
    )
}

/// The page of a fresh suite.
fn page() -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir =
        std::env::var_os("PERFPLAN_DEMO_DIR").map_or_else(|| tmp.path().to_path_buf(), Into::into);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let plan_path = dir.join("plan.toml");
    std::fs::write(&plan_path, plan(&root.join("tests/fixtures/smollm2"))).unwrap();
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(["run", plan_path.to_str().unwrap(), "--out"])
        .arg(&out)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    // The broken endpoint's runs fail: the suite says so with its exit code.
    assert_ne!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    std::fs::read_to_string(out.join("report.html")).unwrap()
}

/// Each `<svg>…</svg>` of the page with its title.
fn svgs(html: &str) -> Vec<(String, &str)> {
    html.match_indices("<svg")
        .map(|(i, _)| {
            let end = html[i..].find("</svg>").unwrap() + i;
            let svg = &html[i..end];
            let t = svg.find("<title>").unwrap() + 7;
            let title = svg[t..t + svg[t..].find("</title>").unwrap()].to_string();
            (title, svg)
        })
        .collect()
}

/// The value of attribute `name` in each element of `svg` that has it.
fn attrs<'a>(svg: &'a str, element: &str, name: &str) -> Vec<&'a str> {
    svg.split(&format!("<{element} "))
        .skip(1)
        .map(|e| {
            let e = &e[..e.find('>').unwrap_or(e.len())];
            let key = format!(" {name}=\"");
            e.find(&key).map_or("", |i| {
                let v = &e[i + key.len()..];
                &v[..v.find('"').unwrap()]
            })
        })
        .collect()
}

#[test]
fn the_page_leads_with_what_matters_and_its_charts_read() {
    let html = page();
    let at = |needle: &str| {
        html.find(needle)
            .unwrap_or_else(|| panic!("missing {needle}"))
    };

    // Header, verdicts, results, runs (errors and warnings), then charts.
    let order = [
        "<p class=\"header\">",
        "<section class=\"verdicts",
        "<h2>Results</h2>",
        "<h2>Runs</h2>",
        "<h2>Plots</h2>",
        "<h2>Runs over time</h2>",
    ];
    for pair in order.windows(2) {
        assert!(at(pair[0]) < at(pair[1]), "{} before {}", pair[0], pair[1]);
    }
    let header = &html[at("<p class=\"header\">")..];
    let header = &header[..header.find("</p>").unwrap()];
    for needle in [
        "good (sim://html-good)",
        "broken (sim://html-broken)",
        "<b>model</b> sim-model",
        "<b>dataset</b> r",
        "<b>tokens per request</b> input ",
        "output 12",
        "<b>date</b> 20",
        "<b>perfplan</b> ",
    ] {
        assert!(header.contains(needle), "header lacks {needle}: {header}");
    }

    // A failed run shows its error where its charts would be, and no per-slice chart.
    let charts = svgs(&html);
    assert!(html.contains(
        "(no successful request)</summary><p class=\"error\">This run measured no successful request"
    ));
    assert!(html.contains("simulated HTTP 500"));
    for (title, _) in &charts {
        assert!(
            !(title.contains("broken") && title.contains("per slice")),
            "a failed run draws {title}"
        );
    }

    // Text at 12 px or more at the chart's natural width, which the page does not shrink.
    for (title, svg) in &charts {
        for size in
            attrs(svg, "text", "font-size")
                .into_iter()
                .chain(attrs(svg, "svg", "font-size"))
        {
            if !size.is_empty() {
                assert!(
                    size.parse::<f64>().unwrap() >= 12.0,
                    "{title}: font-size {size}"
                );
            }
        }
        assert!(svg.contains("viewBox=\"0 0 1000 ") && svg.contains("width=\"1000\""));
    }
    assert!(html.contains(".charts{display:grid;grid-template-columns:minmax(0,1000px)"));

    // Ticks at the tiers run, on a log scale (1 … 16).
    let (_, sweep) = charts
        .iter()
        .find(|(t, _)| t == "TTFT p50 vs concurrency")
        .expect("the sweep chart");
    let ticks: BTreeSet<String> = sweep
        .split("text-anchor=\"middle\">")
        .skip(1)
        .map(|t| t[..t.find('<').unwrap()].to_string())
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    let tiers: BTreeSet<String> = ["1", "4", "16"].map(String::from).into();
    assert_eq!(ticks, tiers, "x ticks of the sweep");
    assert!(sweep.contains("concurrency (log scale)"));
    // The server's own TTFT beside the client's, its caveat said.
    assert!(
        sweep.contains("good · server's histogram"),
        "no server TTFT line"
    );
    assert!(html.contains("estimated from its histogram's buckets on its own clock"));

    // The steady window is a shaded band, not a line among the data.
    let per_slice: Vec<&(String, &str)> = charts
        .iter()
        .filter(|(t, _)| t.contains("throughput per slice"))
        .collect();
    assert!(!per_slice.is_empty());
    assert!(!html.contains("<g><title>steady-state window</title><polyline"));
    assert!(
        per_slice
            .iter()
            .any(|(_, svg)| svg.contains("<rect class=\"band\"")),
        "no run has a shaded steady window"
    );

    // With a few completions a slice (c=1, 40 ms slices), rates are over windows, said.
    let (_, c1) = per_slice
        .iter()
        .find(|(t, _)| t.contains("good · concurrency=1"))
        .expect("the c=1 run's throughput");
    assert!(c1.contains("-slice windows)"), "c=1 rates drawn per slice");

    // Series told apart by dash as well as colour: two identical endpoints stay visible.
    for (title, svg) in &charts {
        let dashes: Vec<&str> = svg
            .split("<polyline ")
            .skip(1)
            .map(|p| {
                let p = &p[..p.find("/>").unwrap()];
                p.find("stroke-dasharray=\"").map_or("", |i| {
                    let v = &p[i + 18..];
                    &v[..v.find('"').unwrap()]
                })
            })
            .collect();
        if (2..=4).contains(&dashes.len()) {
            let distinct: BTreeSet<&str> = dashes.iter().copied().collect();
            assert_eq!(distinct.len(), dashes.len(), "{title}: dashes {dashes:?}");
        }
    }

    // A "how to read" under every chart.
    let figures = html.matches("<figure>").count();
    assert_eq!(figures, charts.len());
    assert_eq!(
        html.matches("<figcaption>How to read: ").count(),
        figures,
        "a chart without its how-to-read line"
    );
}
