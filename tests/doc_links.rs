//! Every relative link of `README.md` and of the book (`docs/src/**/*.md`) resolves: its
//! file exists, and its `#anchor` is a heading of that file by mdBook's id rule (the text
//! lowercased, whitespace to `-`, every other character but letters, digits, `-` and `_`
//! dropped; a repeated id gets `-1`, `-2`, …). A book page may not link out of
//! `docs/src/`: mdBook copies only that folder, so such a link would break in the book.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

const BOOK_SRC: &str = "docs/src";

/// The id mdBook gives a heading's text.
fn heading_id(text: &str) -> String {
    let mut id = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            id.push(c);
        } else if c.is_whitespace() {
            id.push('-');
        }
    }
    id
}

/// The text a heading's Markdown shows: links by their label, code without its backticks.
fn plain(markdown: &str) -> String {
    let mut out = String::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match (after.find("]("), after.find(')')) {
            (Some(close), Some(end)) if close < end => {
                out.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push('[');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out.replace('`', "")
}

/// A file's lines outside fenced code blocks, with their line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = !fence;
        } else if !fence {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The ids of a Markdown file's headings, repeats numbered as mdBook numbers them.
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let id = heading_id(plain(line[hashes..].trim()).as_str());
        let seen = counts.entry(id.clone()).or_insert(0);
        ids.insert(if *seen == 0 {
            id
        } else {
            format!("{id}-{seen}")
        });
        *seen += 1;
    }
    ids
}

/// The targets of a line's inline links and images, inline code left out.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for (k, part) in line.split('`').enumerate() {
        if k % 2 == 1 {
            continue; // inside an inline code span
        }
        let mut rest = part;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            let target = after[..end].split_whitespace().next().unwrap_or("");
            targets.push(target.to_string());
            rest = &after[end + 1..];
        }
    }
    targets
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of one file (`path` relative to the repository's root), as
/// `file:line: target: why`.
fn broken_links(path: &Path, text: &str) -> Vec<String> {
    let in_book = path.starts_with(BOOK_SRC);
    let mut broken = Vec::new();
    for (n, line) in prose_lines(text) {
        for target in link_targets(line) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if file.is_empty() {
                path.to_path_buf()
            } else {
                normalize(&path.parent().unwrap().join(file))
            };
            let why = if in_book && !resolved.starts_with(BOOK_SRC) {
                Some("a book page links out of docs/src (mdBook would not copy it)".to_string())
            } else if !resolved.exists() {
                Some(format!("no file {}", resolved.display()))
            } else if !anchor.is_empty() {
                let ids = if file.is_empty() {
                    heading_ids(text)
                } else {
                    heading_ids(&std::fs::read_to_string(&resolved).unwrap_or_default())
                };
                (!ids.contains(anchor))
                    .then(|| format!("no heading #{anchor} in {}", resolved.display()))
            } else {
                None
            };
            if let Some(why) = why {
                broken.push(format!("{}:{n}: {target}: {why}", path.display()));
            }
        }
    }
    broken
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn every_relative_link_of_the_readme_and_the_book_resolves() {
    let mut files = vec![PathBuf::from("README.md")];
    markdown_files(Path::new(BOOK_SRC), &mut files);
    files.sort();
    assert!(files.len() > 10, "the book has its pages: {files:?}");
    let mut broken = Vec::new();
    let mut links = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        links += prose_lines(&text)
            .iter()
            .map(|(_, l)| link_targets(l).len())
            .sum::<usize>();
        broken.extend(broken_links(path, &text));
    }
    assert!(links > 20, "the pages link to each other ({links} links)");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn heading_ids_follow_mdbook() {
    let ids = heading_ids(
        "# Trust: the verdict of every run\n## What `report.html` draws\n```sh\n# not a heading\n```\n\
         ## Time\n### Time\n## EvalScope's summary\n## From [EvalScope](x.md): two commands\n",
    );
    let want = [
        "trust-the-verdict-of-every-run",
        "what-reporthtml-draws",
        "time",
        "time-1",
        "evalscopes-summary",
        "from-evalscope-two-commands",
    ];
    assert_eq!(ids, want.iter().map(|s| s.to_string()).collect());
}

#[test]
fn a_broken_link_is_found() {
    let page = Path::new(BOOK_SRC).join("introduction.md");
    let text = "# Intro\n\nSee [time](metrics/time.md#time), [nothing](metrics/time.md#no-such), \
                [gone](no-such-page.md), [self](#intro), [out](../../Cargo.toml) and \
                `[code](not-a-link.md)`.\n";
    let broken = broken_links(&page, text);
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].contains("#no-such"));
    assert!(broken[1].contains("no-such-page.md"));
    assert!(broken[2].contains("links out of docs/src"));
}

/// The README is a front page, not the manual: a screen or two that gets a new user to the
/// quickstart and to their own server, and links into the book for the rest.
#[test]
fn the_readme_is_a_front_page() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: the manual belongs in the book"
    );
    for needle in [
        "## Install",
        "cargo install --locked --path .",
        "perfplan run scenarios/quickstart.toml",
        "perfplan run --url",
        "## From EvalScope",
        "perfplan import evalscope",
        "cargo test",
        "docs/src/SUMMARY.md",
    ] {
        assert!(readme.contains(needle), "README.md lacks `{needle}`");
    }
    // The quickstart's table is shown as it prints.
    let quick = readme
        .find("perfplan run scenarios/quickstart.toml")
        .unwrap();
    let url = readme.find("perfplan run --url").unwrap();
    assert!(
        readme[quick..url].contains("ttft_p50 (ms)"),
        "no quickstart table before --url"
    );
}
