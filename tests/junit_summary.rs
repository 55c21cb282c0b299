//! Gate verdicts where CI looks: `--junit FILE` (run, report, compare) in the common JUnit
//! shape — testsuites / testsuite / testcase / failure with the attributes Jenkins', GitLab's
//! and GitHub's reporters require, counts agreeing with the children — and the Markdown
//! report appended to `$GITHUB_STEP_SUMMARY`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// An XML element: name, attributes, children and text.
#[derive(Debug, Default)]
struct El {
    name: String,
    attrs: BTreeMap<String, String>,
    children: Vec<El>,
    text: String,
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// A strict reader of the XML subset JUnit files use (no DTD, comments or CDATA).
fn parse(xml: &str) -> El {
    let body = xml
        .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
        .expect("XML declaration")
        .trim();
    let (el, rest) = element(body);
    assert!(rest.trim().is_empty(), "text after the root: {rest}");
    el
}

fn element(s: &str) -> (El, &str) {
    let s = s.trim_start().strip_prefix('<').expect("an element");
    let end = s
        .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
        .unwrap();
    let mut el = El {
        name: s[..end].to_string(),
        ..El::default()
    };
    let mut rest = &s[end..];
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("/>") {
            return (el, r);
        }
        if let Some(r) = rest.strip_prefix('>') {
            rest = r;
            break;
        }
        let eq = rest.find('=').unwrap();
        let key = rest[..eq].trim().to_string();
        let value = rest[eq + 1..]
            .strip_prefix('"')
            .expect("a quoted attribute");
        let close = value.find('"').unwrap();
        assert!(!value[..close].contains('<'), "unescaped < in {key}");
        assert!(
            el.attrs
                .insert(key.clone(), unescape(&value[..close]))
                .is_none(),
            "{key} twice"
        );
        rest = &value[close + 1..];
    }
    let close = format!("</{}>", el.name);
    loop {
        let t = rest.trim_start();
        if let Some(r) = t.strip_prefix(&close) {
            return (el, r);
        }
        if t.starts_with('<') {
            let (child, r) = element(t);
            el.children.push(child);
            rest = r;
        } else {
            let lt = rest.find('<').expect("a closing tag");
            el.text.push_str(&unescape(&rest[..lt]));
            rest = &rest[lt..];
        }
    }
}

fn count(el: &El, name: &str) -> usize {
    usize::from(el.name == name) + el.children.iter().map(|c| count(c, name)).sum::<usize>()
}

fn attr_num(el: &El, key: &str) -> usize {
    el.attrs
        .get(key)
        .unwrap_or_else(|| panic!("<{}> lacks {key}", el.name))
        .parse()
        .unwrap()
}

/// The shape of the JUnit XML schema: element names, required attributes, counts agreeing.
fn check_junit(xml: &str) -> (usize, usize) {
    let root = parse(xml);
    assert_eq!(root.name, "testsuites");
    for key in ["name", "tests", "failures", "errors", "time"] {
        assert!(root.attrs.contains_key(key), "testsuites lacks {key}");
    }
    for suite in &root.children {
        assert_eq!(suite.name, "testsuite");
        for key in [
            "name",
            "tests",
            "failures",
            "errors",
            "skipped",
            "time",
            "timestamp",
            "hostname",
            "id",
            "package",
        ] {
            assert!(suite.attrs.contains_key(key), "testsuite lacks {key}");
        }
        assert_eq!(attr_num(suite, "tests"), suite.children.len());
        assert_eq!(attr_num(suite, "failures"), count(suite, "failure"));
        for case in &suite.children {
            assert_eq!(case.name, "testcase");
            for key in ["name", "classname", "time"] {
                assert!(case.attrs.contains_key(key), "testcase lacks {key}");
            }
            for f in &case.children {
                assert_eq!(f.name, "failure");
                assert!(f.attrs.contains_key("message") && f.attrs.contains_key("type"));
            }
        }
    }
    assert_eq!(attr_num(&root, "tests"), count(&root, "testcase"));
    assert_eq!(attr_num(&root, "failures"), count(&root, "failure"));
    (count(&root, "testcase"), count(&root, "failure"))
}

fn perfplan(args: &[&str], summary: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_perfplan"))
        .args(args)
        .env("GITHUB_STEP_SUMMARY", summary)
        .output()
        .unwrap()
}

const PLAN: &str = r#"[plan]
name = "sign & off"

[endpoints.s]
base_url = "sim://s"

[models.m]
served_name = "m"

[datasets.p]
kind = "prompt"
text = "hello"

[defaults]
output_tokens = 4

[matrix]
load = [{ concurrency = 1, requests = 4 }, { concurrency = 2, requests = 4 }]

[gates]
success_ratio = ">= 0.99"
ttft_p99 = "<= 1us"
"#;

#[test]
fn verdicts_are_junit_and_the_report_joins_the_job_summary() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let out = dir.path().join("out");
    let junit = dir.path().join("run.xml");
    let summary = dir.path().join("summary.md");
    let run = perfplan(
        &[
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
        &summary,
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(check_junit(&xml), (4, 2));
    assert!(
        xml.contains("name=\"perfplan run gates: sign &amp; off\""),
        "{xml}"
    );
    assert!(xml.contains("<failure message=\"ttft_p99 = "), "{xml}");
    assert!(xml.contains("needs &lt;= 1us\" type=\"gate\">"), "{xml}");
    assert!(
        xml.contains("<testcase name=\"success_ratio &gt;= 0.99\""),
        "{xml}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("### gates: FAIL (2 of 4 checks failed)"),
        "{md}"
    );
    assert!(md.contains("| load |") || md.contains("load"), "{md}");

    let report_xml = dir.path().join("report.xml");
    let report = perfplan(
        &[
            "report",
            out.to_str().unwrap(),
            "--gate",
            "ttft_p99=<=10s",
            "--junit",
            report_xml.to_str().unwrap(),
        ],
        &summary,
    );
    assert_eq!(
        report.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert_eq!(
        check_junit(&std::fs::read_to_string(&report_xml).unwrap()),
        (4, 0)
    );
    let compare_xml = dir.path().join("compare.xml");
    let compare = perfplan(
        &[
            "compare",
            out.to_str().unwrap(),
            out.to_str().unwrap(),
            "--gate",
            "rps=>= -50%",
            "--junit",
            compare_xml.to_str().unwrap(),
        ],
        &summary,
    );
    let compare_text = std::fs::read_to_string(&compare_xml).unwrap();
    assert_eq!(
        check_junit(&compare_text),
        (6, 2),
        "{}",
        String::from_utf8_lossy(&compare.stderr)
    );
    assert!(compare_text.contains("name=\"perfplan compare gates:"));
    let md = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(md.matches("### gates:").count(), 3, "{md}");
}
