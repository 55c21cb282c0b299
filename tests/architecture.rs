//! The house holds (DESIGN.md "Architecture", STYLE.md "Layout" and "Habits"): this test
//! reads `src/` and fails, naming the file, the line and the rule, on
//!
//! - an import DESIGN's "Never" list forbids, or one a stage's `//!` rules out (the
//!   `FORBIDDEN` and `ONLY` tables below), and any circle between top-level modules;
//! - a `#[path]` attribute, in `src/` or `tests/`;
//! - a file of `src/` over 500 lines, or a function over 80 lines (from the line of its
//!   `fn` to its closing brace).
//!
//! An import is every path into another top-level module in code: `use crate::x::…`, each
//! item of a `use crate::{a, b::c}` group, a fully qualified `crate::x::f()` in an
//! expression or a type, and a `super::` chain that climbs to the crate's root. Comments
//! and string literals are skipped. Test code counts like any other: a test module of
//! `engine` that imports the store is still `engine → store`, and a test longer than 80
//! lines is as hard to read as any function (split it into a helper and its cases).
//!
//! `cargo test --test architecture -- --ignored --nocapture` prints the number of
//! references per (from, to) pair of modules (the before/after figures of a change to
//! the house).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Most lines in a file of `src/`.
const MAX_FILE_LINES: usize = 500;
/// Most lines in a function, its signature and closing brace included.
const MAX_FN_LINES: usize = 80;

/// `(from, to, why)`: `from` must not import `to`.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    // DESIGN.md, "Never".
    (
        "engine",
        &["plan", "planner", "store", "report"],
        "DESIGN's Never: engine → plan|planner|store|report",
    ),
    ("api", &["engine"], "DESIGN's Never: api → engine"),
    ("report", &["engine"], "DESIGN's Never: report → engine"),
    ("planner", &["engine"], "DESIGN's Never: planner → engine"),
    (
        "plan",
        &["store", "sim"],
        "DESIGN's Never: plan → store|sim",
    ),
    // The modules' "must not know" (DESIGN's table, each module's `//!`).
    (
        "store",
        &["engine", "plan", "planner"],
        "store must not know the engine or plans' syntax",
    ),
    ("metrics", &["store"], "metrics must not know SQLite"),
    (
        "dataset",
        &["store", "engine"],
        "dataset must not know HTTP or the store",
    ),
    ("servers", &["engine"], "servers must not know the engine"),
    (
        "telemetry",
        &["engine"],
        "telemetry must not know the engine",
    ),
    ("preflight", &["store"], "preflight must not know the store"),
    (
        "measure",
        &["engine", "api", "suite", "distribute"],
        "measure judges what a run's records say against its plan: no HTTP, no engine, no run loop",
    ),
    (
        "live",
        &["engine", "store", "plan", "planner", "suite"],
        "live says what a suite is doing: it is told, it knows no plan, store or engine",
    ),
    (
        "probe",
        &["store", "suite"],
        "probe asks an endpoint about itself before its first run: no store, no run loop",
    ),
    (
        "workload",
        &["store", "suite", "report"],
        "workload makes a run's requests: it knows neither the store nor the run loop",
    ),
    (
        "distribute",
        &["suite"],
        "distribute owns how loads split and reads stored rows: the run loop is the suite's, and the suite asks distribute (one way)",
    ),
    (
        "sim",
        &[
            "engine",
            "suite",
            "servers",
            "preflight",
            "telemetry",
            "search",
            "distribute",
            "planner",
            "store",
            "report",
        ],
        "sim must not know perfplan's client code",
    ),
];

/// `(module, allowed, why)`: `module` imports nothing of the crate but `allowed`.
const ONLY: &[(&str, &[&str], &str)] = &[
    (
        "record",
        &["units"],
        "record is a leaf: it imports nothing of the crate",
    ),
    (
        "suggest",
        &[],
        "suggest is a leaf: the one did-you-mean rule imports nothing of the crate",
    ),
    (
        "either_io",
        &[],
        "either_io is a leaf: the plain-or-TLS stream imports nothing of the crate",
    ),
    (
        "rx_stamp",
        &[],
        "rx_stamp is a leaf: the kernel's receive stamps import nothing of the crate",
    ),
    (
        "text",
        &[],
        "text is a leaf: the one rule for reading a text file imports nothing of the crate",
    ),
    (
        "environment",
        &["api"],
        "environment is the record's shape and pure readings: no HTTP, SQLite or plans (it names the model list's entry of `api`)",
    ),
    (
        "control",
        &["api", "units", "secrets"],
        "control imports no stage (it knows APIs' paths, nothing else)",
    ),
];

/// `(module, lines, why)`: the files of `module` hold at most `lines` lines together.
const MODULE_LINES: &[(&str, usize, &str)] = &[(
    "suite",
    3000,
    "the suite is the run loop (driver, execute, writer, counts, priming); what it calls lives in its own stage",
)];

/// `(code, owners, why)`: `code` appears in code (not comments or strings) only inside
/// `owners`.
const READ_ONLY_IN: &[(&str, &[&str], &str)] = &[
    (
        "settings.load",
        &["planner", "plan"],
        "a run's load is read through the planner's typed run (`RunSpec::load`, `requests`, `duration`, …), never from its load table",
    ),
    (
        "LoadSpec",
        &["planner", "plan"],
        "the load table as written is the planner's input: later stages read the typed run",
    ),
];

/// `(suffix, owner, why)`: a `struct` or `enum` whose name ends in `suffix` is declared
/// only inside `owner` (the one place a kind of machinery lives).
const DEFINED_ONLY_IN: &[(&str, &str, &str)] = &[(
    "Search",
    "search",
    "the SLA search state machines belong to `search` (DESIGN's table); their terms are `metrics::sla`",
)];

/// The modules that send load, make its requests or probe its target (and `cli`): the
/// only ones that may import `engine`.
const ENGINE_USERS: &[&str] = &[
    "suite",
    "workload",
    "probe",
    "search",
    "preflight",
    "distribute",
    "cli",
];

/// A file of the crate: its path (relative, with `/`) and text.
struct Source {
    path: String,
    text: String,
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    path: String,
    line: usize,
    rule: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.path, self.line, self.rule)
    }
}

mod lex {
    //! Rust source with comments and the contents of string and char literals blanked
    //! (newlines kept, so line numbers hold): what is left is code.

    /// `text` with every comment and literal replaced by spaces (newlines kept).
    pub fn code(text: &str) -> String {
        let b = text.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            let end = if b[i..].starts_with(b"//") {
                b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p)
            } else if b[i..].starts_with(b"/*") {
                block_comment_end(b, i)
            } else if let Some(end) = raw_string_end(b, i) {
                end
            } else if b[i] == b'"' {
                string_end(b, i + 1)
            } else if b[i] == b'\'' {
                char_end(b, i).unwrap_or(i + 1)
            } else {
                out.push(b[i]);
                i += 1;
                continue;
            };
            let end = end.min(b.len());
            let from = out.len();
            out.extend(
                b[i..end]
                    .iter()
                    .map(|&c| if c == b'\n' { b'\n' } else { b' ' }),
            );
            if b[i] != b'/' {
                // A literal stays a literal (`""`), so code around it keeps its shape.
                out[from] = b'"';
                let last = out.len() - 1;
                out[last] = b'"';
            }
            i = end;
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    fn block_comment_end(b: &[u8], start: usize) -> usize {
        let (mut depth, mut i) = (0usize, start);
        while i < b.len() {
            if b[i..].starts_with(b"/*") {
                depth += 1;
                i += 2;
            } else if b[i..].starts_with(b"*/") {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            } else {
                i += 1;
            }
        }
        b.len()
    }

    /// The end of `"…"` whose contents start at `i`.
    fn string_end(b: &[u8], mut i: usize) -> usize {
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'"' => return i + 1,
                _ => i += 1,
            }
        }
        b.len()
    }

    /// The end of `r"…"`, `r#"…"#`, `br"…"` starting at `i`, if one starts there.
    fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            return None;
        }
        let mut j = i;
        if b.get(j) == Some(&b'b') {
            j += 1;
        }
        if b.get(j) != Some(&b'r') {
            return None;
        }
        j += 1;
        let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
        j += hashes;
        if b.get(j) != Some(&b'"') {
            return None;
        }
        let close: Vec<u8> = std::iter::once(b'"')
            .chain(std::iter::repeat_n(b'#', hashes))
            .collect();
        let body = j + 1;
        let found = b[body..]
            .windows(close.len())
            .position(|w| w == close.as_slice());
        Some(found.map_or(b.len(), |p| body + p + close.len()))
    }

    /// The end of a char literal at `i` (`'a'`, `'\n'`, `'\u{1F600}'`, `'é'`); `None` for
    /// a lifetime or a label.
    fn char_end(b: &[u8], i: usize) -> Option<usize> {
        if b.get(i + 1) == Some(&b'\\') {
            // The escaped character may itself be a quote (`'\''`).
            let close = b.get(i + 3..)?.iter().position(|&c| c == b'\'')?;
            return Some(i + 3 + close + 1);
        }
        let rest = std::str::from_utf8(&b[i + 1..(i + 6).min(b.len())])
            .or_else(|e| std::str::from_utf8(&b[i + 1..i + 1 + e.valid_up_to()]))
            .ok()?;
        let c = rest.chars().next()?;
        let after = i + 1 + c.len_utf8();
        (b.get(after) == Some(&b'\'')).then_some(after + 1)
    }
}

/// The module path of a file of `src/` (`engine/run.rs` → `[engine, run]`,
/// `engine/mod.rs` → `[engine]`, `lib.rs` → `[]`).
fn module_path(path: &str) -> Vec<String> {
    let rel = path.strip_prefix("src/").unwrap_or(path);
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The top-level module a file of `src/` belongs to (`lib.rs` and `main.rs`: none).
fn top_module(path: &str) -> Option<String> {
    module_path(path).into_iter().next()
}

fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at the start of `s`.
fn ident(s: &str) -> &str {
    &s[..s.find(|c: char| !is_ident(c)).unwrap_or(s.len())]
}

/// The first segments of the items of a `use` group's body (`a, b::c, d::{e, f}`).
fn group_heads(body: &str) -> Vec<&str> {
    let (mut heads, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in body
        .char_indices()
        .chain(std::iter::once((body.len(), ',')))
    {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                let item = body[start..i].trim();
                let head = ident(item);
                if !head.is_empty() {
                    heads.push(head);
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    heads
}

/// Where each inline `mod name {` of `code` begins and ends (byte offsets), for the
/// module path of a `super::` chain written inside it.
fn inline_mods(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut search = 0;
    while let Some(p) = code[search..].find("mod ") {
        let at = search + p;
        search = at + 4;
        if at > 0 && is_ident(code[..at].chars().next_back().unwrap_or(' ')) {
            continue;
        }
        let rest = &code[at + 4..];
        let name = ident(rest.trim_start());
        let after = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = at + 4 + (rest.len() - after.len());
        if let Some(close) = matching_brace(bytes, open) {
            out.push((open, close));
        }
    }
    out
}

/// The offset of the `}` closing the `{` at `open`.
fn matching_brace(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &c) in bytes.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Every reference of the file at `path` (with blanked `code`) into a top-level module:
/// `(line, module)`.
fn references(path: &str, code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut search = 0;
    while let Some(p) = code[search..].find("crate") {
        let at = search + p;
        search = at + 5;
        let before = code[..at].chars().next_back().unwrap_or(' ');
        if is_ident(before) || before == '$' {
            continue;
        }
        let Some(rest) = code[at + 5..].trim_start().strip_prefix("::") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(body) = rest.strip_prefix('{') {
            let close = group_close(body).unwrap_or(body.len());
            for head in group_heads(&body[..close]) {
                let offset = head.as_ptr() as usize - code.as_ptr() as usize;
                out.push((line_of(code, offset), head.to_string()));
            }
        } else if !ident(rest).is_empty() {
            out.push((line_of(code, at), ident(rest).to_string()));
        }
    }
    out.extend(super_references(path, code));
    out.retain(|(_, m)| !matches!(m.as_str(), "self" | "super" | "crate"));
    out
}

/// The offset of the `}` that closes a group whose body starts at offset 0.
fn group_close(body: &str) -> Option<usize> {
    let mut depth = 1usize;
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `super::super::x` chains that climb to the crate's root from the file at `path`.
fn super_references(path: &str, code: &str) -> Vec<(usize, String)> {
    let file_depth = module_path(path).len();
    let mods = inline_mods(code);
    let mut out = Vec::new();
    let mut search = 0;
    while let Some(p) = code[search..].find("super") {
        let at = search + p;
        if at > 0 && is_ident(code[..at].chars().next_back().unwrap_or(' ')) {
            search = at + 5;
            continue;
        }
        let mut rest = &code[at..];
        let mut climbs = 0;
        while let Some(r) = rest.strip_prefix("super") {
            match r.trim_start().strip_prefix("::") {
                Some(r) => {
                    climbs += 1;
                    rest = r.trim_start();
                }
                None => break,
            }
        }
        search = (code.len() - rest.len()).max(at + 5);
        let depth = file_depth + mods.iter().filter(|(o, c)| *o < at && at < *c).count();
        if climbs > 0 && climbs >= depth && !ident(rest).is_empty() {
            out.push((line_of(code, at), ident(rest).to_string()));
        }
    }
    out
}

/// The rule an import of `to` from `from` breaks, if any.
fn import_rule(from: &str, to: &str) -> Option<String> {
    if from == to {
        return None;
    }
    for (m, allowed, why) in ONLY {
        if *m == from && !allowed.contains(&to) {
            return Some(format!("`{from}` imports `{to}`: {why}"));
        }
    }
    for (m, banned, why) in FORBIDDEN {
        if *m == from && banned.contains(&to) {
            return Some(format!("`{from}` imports `{to}`: {why}"));
        }
    }
    if to == "engine" && !ENGINE_USERS.contains(&from) {
        return Some(format!(
            "`{from}` imports `engine`: only the stages that send load ({}) import it",
            ENGINE_USERS.join(", ")
        ));
    }
    None
}

/// Every function of `code`: `(name, first line, last line)`.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut search = 0;
    while let Some(p) = code[search..].find("fn ") {
        let at = search + p;
        search = at + 3;
        if at > 0 && is_ident(code[..at].chars().next_back().unwrap_or(' ')) {
            continue;
        }
        let name = ident(code[at + 3..].trim_start());
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` outside the signature's brackets; a `;` first
        // is a declaration without a body.
        let mut depth = 0i32;
        let mut open = None;
        for (i, &c) in bytes.iter().enumerate().skip(at) {
            match c {
                b'(' | b'[' | b'<' => depth += 1,
                b')' | b']' => depth -= 1,
                b'>' if i > 0 && bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => depth -= 1,
                b'{' if depth <= 0 => {
                    open = Some(i);
                    break;
                }
                b';' if depth <= 0 => break,
                _ => {}
            }
        }
        let Some(close) = open.and_then(|o| matching_brace(bytes, o)) else {
            continue;
        };
        out.push((name.to_string(), line_of(code, at), line_of(code, close)));
    }
    out
}

/// Every broken rule of `sources` (files of `src/` and `tests/`).
fn check(sources: &[Source]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut edges: BTreeMap<(String, String), (String, usize)> = BTreeMap::new();
    for s in sources {
        let code = lex::code(&s.text);
        let v = |line, rule: String| Violation {
            path: s.path.clone(),
            line,
            rule,
        };
        for (i, line) in code.lines().enumerate() {
            if line.contains("#[path") || line.contains("#![path") {
                out.push(v(
                    i + 1,
                    "a `#[path]` attribute: a module lives in its own folder (STYLE.md, Layout)"
                        .into(),
                ));
            }
        }
        if !s.path.starts_with("src/") {
            continue;
        }
        let lines = s.text.lines().count();
        if lines > MAX_FILE_LINES {
            out.push(v(
                lines,
                format!("{lines} lines: a file has at most {MAX_FILE_LINES}"),
            ));
        }
        for (name, first, last) in functions(&code) {
            let n = last - first + 1;
            if n > MAX_FN_LINES {
                out.push(v(
                    first,
                    format!("fn `{name}` has {n} lines: a function has at most {MAX_FN_LINES}"),
                ));
            }
        }
        let Some(from) = top_module(&s.path) else {
            continue;
        };
        out.extend(
            owned_reads(&from, &code)
                .into_iter()
                .map(|(line, rule)| v(line, rule)),
        );
        out.extend(
            misplaced_types(&from, &code)
                .into_iter()
                .map(|(line, rule)| v(line, rule)),
        );
        for (line, to) in references(&s.path, &code) {
            if let Some(rule) = import_rule(&from, &to) {
                out.push(v(line, rule));
            }
            if from != to {
                edges
                    .entry((from.clone(), to))
                    .or_insert((s.path.clone(), line));
            }
        }
    }
    out.extend(circles(&edges));
    out.extend(module_sizes(sources));
    out.sort();
    out.dedup();
    out
}

/// A violation for every module of [`MODULE_LINES`] over its lines.
fn module_sizes(sources: &[Source]) -> Vec<Violation> {
    let mut out = Vec::new();
    for (module, most, why) in MODULE_LINES {
        let lines: usize = sources
            .iter()
            .filter(|s| {
                s.path.starts_with("src/") && top_module(&s.path).as_deref() == Some(module)
            })
            .map(|s| s.text.lines().count())
            .sum();
        if lines > *most {
            out.push(Violation {
                path: format!("src/{module}/"),
                line: 0,
                rule: format!("{lines} lines: `{module}` holds at most {most}: {why}"),
            });
        }
    }
    out
}

/// Code of [`READ_ONLY_IN`] outside its owners (whitespace between its parts allowed,
/// across lines too): line and rule.
fn owned_reads(module: &str, code: &str) -> Vec<(usize, String)> {
    let mut compact = String::new();
    let mut line_of_char = Vec::new();
    for (i, line) in code.lines().enumerate() {
        for c in line.chars().filter(|c| !c.is_whitespace()) {
            compact.push(c);
            line_of_char.push(i + 1);
        }
    }
    let mut out = Vec::new();
    for (needle, owners, why) in READ_ONLY_IN {
        if owners.contains(&module) {
            continue;
        }
        for (at, _) in compact.match_indices(needle) {
            let line = line_of_char[compact[..at].chars().count()];
            out.push((line, format!("`{needle}` in `{module}`: {why}")));
        }
    }
    out
}

/// Types declared outside the module [`DEFINED_ONLY_IN`] gives them to: line and rule.
fn misplaced_types(module: &str, code: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "struct" || *w == "enum") else {
            continue;
        };
        let Some(name) = words.get(at + 1).map(|w| ident(w)) else {
            continue;
        };
        for (suffix, owner, why) in DEFINED_ONLY_IN {
            if name.ends_with(suffix) && module != *owner {
                out.push((
                    i + 1,
                    format!("`{name}` is declared in `{module}`, not `{owner}`: {why}"),
                ));
            }
        }
    }
    out
}

/// A violation for every edge that closes a circle between top-level modules.
fn circles(edges: &BTreeMap<(String, String), (String, usize)>) -> Vec<Violation> {
    let mut out = Vec::new();
    for ((from, to), (path, line)) in edges {
        if let Some(back) = route(edges, to, from) {
            out.push(Violation {
                path: path.clone(),
                line: *line,
                rule: format!(
                    "`{from}` imports `{to}`, and `{}`: a circle between modules",
                    back.join(" → ")
                ),
            });
        }
    }
    out
}

/// A path of imports from `start` to `goal`, if there is one.
fn route(
    edges: &BTreeMap<(String, String), (String, usize)>,
    start: &str,
    goal: &str,
) -> Option<Vec<String>> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![vec![start.to_string()]];
    while let Some(path) = stack.pop() {
        let last = path.last()?.clone();
        if last == goal {
            return Some(path);
        }
        if !seen.insert(last.clone()) {
            continue;
        }
        for (f, t) in edges.keys() {
            if *f == last {
                let mut next = path.clone();
                next.push(t.clone());
                stack.push(next);
            }
        }
    }
    None
}

fn read_tree(root: &Path, dir: &str, out: &mut Vec<Source>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .unwrap_or_else(|e| panic!("cannot read {dir}: {e}"))
        .map(|e| e.map(|e| e.path()).unwrap_or_default())
        .collect();
    entries.sort();
    for p in entries {
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        if p.is_dir() {
            read_tree(root, &rel, out);
        } else if rel.ends_with(".rs") {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"));
            out.push(Source { path: rel, text });
        }
    }
}

fn crate_sources() -> Vec<Source> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    read_tree(root, "src", &mut out);
    read_tree(root, "tests", &mut out);
    out
}

#[test]
fn the_house_holds() {
    let sources = crate_sources();
    assert!(
        sources.iter().any(|s| s.path == "src/lib.rs"),
        "no src/lib.rs read"
    );
    let broken = check(&sources);
    let list: Vec<String> = broken.iter().map(ToString::to_string).collect();
    assert!(
        broken.is_empty(),
        "{} broken rule(s) of the house (DESIGN.md, Architecture):\n{}",
        broken.len(),
        list.join("\n")
    );
}

#[test]
#[ignore = "prints figures; run with --ignored --nocapture"]
fn module_dependency_counts() {
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    for s in crate_sources()
        .iter()
        .filter(|s| s.path.starts_with("src/"))
    {
        let Some(from) = top_module(&s.path) else {
            continue;
        };
        for (_, to) in references(&s.path, &lex::code(&s.text)) {
            if to != from {
                *counts.entry((from.clone(), to)).or_default() += 1;
            }
        }
    }
    for ((from, to), n) in &counts {
        println!("{from:>12} -> {to:<12} {n}");
    }
}

#[cfg(test)]
mod rules {
    //! Each rule, shown to catch what it is for on small sources.

    use super::*;

    fn one(path: &str, text: &str) -> Vec<String> {
        let s = [Source {
            path: path.into(),
            text: text.into(),
        }];
        check(&s).iter().map(ToString::to_string).collect()
    }

    fn broken(path: &str, text: &str) -> String {
        let v = one(path, text);
        assert_eq!(v.len(), 1, "{v:?}");
        v[0].clone()
    }

    #[test]
    fn a_never_import_is_named_with_its_file_and_line() {
        let v = broken(
            "src/engine/run.rs",
            "//! doc\n\nuse crate::plan::EndpointSpec;\n",
        );
        assert!(
            v.starts_with("src/engine/run.rs:3: `engine` imports `plan`"),
            "{v}"
        );
        assert!(v.contains("DESIGN's Never"), "{v}");
    }

    #[test]
    fn a_suite_over_its_lines_is_named() {
        let big = "// line\n".repeat(2000);
        let two = [
            Source {
                path: "src/suite/a.rs".into(),
                text: big.clone(),
            },
            Source {
                path: "src/suite/b.rs".into(),
                text: big,
            },
        ];
        let v: Vec<String> = module_sizes(&two).iter().map(ToString::to_string).collect();
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].starts_with("src/suite/:0: 4000 lines"), "{v:?}");
        assert!(module_sizes(&two[..1]).is_empty());
    }

    #[test]
    fn the_load_table_read_after_the_planner_is_named() {
        let v = broken(
            "src/suite/x.rs",
            "fn f(run: &RunSpec) -> Option<u32> { run.settings\n    .load.requests }\n// settings.load\n",
        );
        assert!(
            v.starts_with("src/suite/x.rs:1:") || v.starts_with("src/suite/x.rs:2:"),
            "{v}"
        );
        assert!(v.contains("`settings.load` in `suite`"), "{v}");
        assert!(one(
            "src/planner/x.rs",
            "fn f(l: &LoadSpec) { s.settings.load; }\n"
        )
        .is_empty());
    }

    #[test]
    fn a_search_machine_outside_search_is_named() {
        let v = broken("src/metrics/sla.rs", "pub struct LimitSearch {\n}\n");
        assert!(
            v.starts_with("src/metrics/sla.rs:1: `LimitSearch` is declared in `metrics`"),
            "{v}"
        );
        assert!(one("src/search/x.rs", "pub(crate) struct LimitSearch;\n").is_empty());
    }

    #[test]
    fn groups_and_qualified_paths_are_imports() {
        let v = one(
            "src/api/chat.rs",
            "use crate::{units::HumanBytes, engine::{Outcome, Phase}};\nfn f() { let _ = crate::store::open(); }\n",
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains(":1: `api` imports `engine`"), "{v:?}");
        let v = broken(
            "src/report/x.rs",
            "fn f() -> crate :: engine::Phase { todo!() }\n",
        );
        assert!(v.contains("`report` imports `engine`"), "{v}");
    }

    #[test]
    fn comments_and_strings_are_not_imports() {
        let text = "//! uses crate::engine::RequestRecord\n/* crate::engine */\nconst A: &str = \"crate::engine::X\";\nconst B: &str = r#\"crate::engine\"#;\nconst C: char = '\"';\nfn f<'a>(x: &'a str) -> &'a str { x }\n";
        assert!(one("src/api/chat.rs", text).is_empty());
    }

    #[test]
    fn super_chains_that_reach_the_root_are_imports() {
        // Inside `mod tests` of engine/run.rs, `super::super` is `engine`: no import.
        let ok = "mod tests {\n    use super::super::record::X;\n}\n";
        assert!(one("src/engine/run.rs", ok).is_empty());
        let v = broken("src/engine/run.rs", "use super::super::store::Store;\n");
        assert!(v.contains(":1: `engine` imports `store`"), "{v}");
    }

    #[test]
    fn leaves_import_only_what_they_may() {
        let v = broken("src/record/mod.rs", "use crate::api::ApiKind;\n");
        assert!(v.contains("record is a leaf"), "{v}");
        assert!(one("src/record/mod.rs", "use crate::units::HumanBytes;\n").is_empty());
        let v = broken("src/control/urls.rs", "use crate::servers::Servers;\n");
        assert!(v.contains("control imports no stage"), "{v}");
    }

    #[test]
    fn only_load_senders_import_the_engine() {
        let v = broken(
            "src/metrics/summary.rs",
            "use crate::engine::RequestRecord;\n",
        );
        assert!(v.contains("only the stages that send load"), "{v}");
        assert!(one("src/suite/execute.rs", "use crate::engine::run;\n").is_empty());
        let v = broken("src/store/rows.rs", "use crate::plan::EndpointSpec;\n");
        assert!(v.contains("store must not know"), "{v}");
    }

    #[test]
    fn a_circle_between_modules_is_named() {
        let s = [
            Source {
                path: "src/dataset/a.rs".into(),
                text: "use crate::tokenize::T;\n".into(),
            },
            Source {
                path: "src/tokenize/b.rs".into(),
                text: "\n\nuse crate::dataset::D;\n".into(),
            },
        ];
        let v: Vec<String> = check(&s).iter().map(ToString::to_string).collect();
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(
            v[0].starts_with(
                "src/dataset/a.rs:1: `dataset` imports `tokenize`, and `tokenize → dataset`"
            ),
            "{v:?}"
        );
        assert!(v[1].starts_with("src/tokenize/b.rs:3:"), "{v:?}");
    }

    #[test]
    fn a_path_attribute_is_caught_in_src_and_tests() {
        let v = broken(
            "src/api/scan.rs",
            "#[cfg(test)]\n#[path = \"scan_tests.rs\"]\nmod tests;\n",
        );
        assert!(v.starts_with("src/api/scan.rs:2: a `#[path]`"), "{v}");
        assert_eq!(one("tests/x.rs", "#[path = \"y.rs\"]\nmod y;\n").len(), 1);
        assert!(one("src/api/scan.rs", "// #[path = \"x\"] in a comment\n").is_empty());
    }

    #[test]
    fn a_long_file_is_caught_at_its_end() {
        let text = "const X: u8 = 0;\n".repeat(MAX_FILE_LINES + 1);
        let v = broken("src/units.rs", &text);
        assert_eq!(
            v,
            format!(
                "src/units.rs:{}: {} lines: a file has at most {MAX_FILE_LINES}",
                MAX_FILE_LINES + 1,
                MAX_FILE_LINES + 1
            )
        );
        assert!(one("src/units.rs", &"const X: u8 = 0;\n".repeat(MAX_FILE_LINES)).is_empty());
    }

    #[test]
    fn a_long_function_is_caught_at_its_fn() {
        let body = |n: usize| {
            format!(
                "\npub async fn long<T: Into<u8>>(x: T) -> Vec<u8>\nwhere T: Copy\n{{\n{}}}\n",
                "    let _ = \"}\";\n".repeat(n - 4)
            )
        };
        let v = broken("src/engine/run.rs", &body(MAX_FN_LINES + 1));
        assert_eq!(v, format!("src/engine/run.rs:2: fn `long` has {} lines: a function has at most {MAX_FN_LINES}", MAX_FN_LINES + 1));
        assert!(one("src/engine/run.rs", &body(MAX_FN_LINES)).is_empty());
        // A declaration without a body is no function to measure.
        assert!(one("src/engine/run.rs", "trait T { fn f(&self); }\n").is_empty());
    }
}

/// A command's error is a `Failure` returned to `cli::main`, which prints it: no command
/// prints an `error:` itself (whitespace between the parts allowed, across lines too).
#[test]
fn commands_print_errors_in_one_place() {
    let mut found = Vec::new();
    for s in crate_sources()
        .iter()
        .filter(|s| s.path.starts_with("src/cli/"))
    {
        let compact: String = s.text.chars().filter(|c| !c.is_whitespace()).collect();
        for printer in ["eprintln!(\"error", "eprint!(\"error"] {
            if compact.contains(printer) {
                found.push(format!("{}: `{printer}…`", s.path));
            }
        }
    }
    assert!(
        found.is_empty(),
        "return a `cli::failure::Failure` instead:\n{}",
        found.join("\n")
    );
}
