//! Loading a plan: read the file (TOML or YAML by extension), merge its imports, expand
//! `${VAR}`, apply `--set`, validate against the schema, deserialize, and check the
//! semantics — reporting every problem at once, located.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::diag::{Diagnostic, Report, Sources, Span};
use super::node::{Node, Step};
use super::spec::PlanSpec;
use super::{access, imports, interp, semantic, set, toml_src, validate, yaml_src};

/// Largest plan file read.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Deepest chain of imports.
const MAX_IMPORT_DEPTH: usize = 8;

/// How to load: `--set` overrides and where environment variables come from.
pub struct LoadOptions<'a> {
    pub sets: Vec<String>,
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Texts to use instead of reading files, by path as the loader names them (the plan
    /// path as given, imports joined to their importer's folder): `rerun` loads the texts
    /// a suite stored.
    pub files: Option<&'a std::collections::BTreeMap<String, String>>,
    /// The plan file's name in diagnostics, when it is not its path (`import` checks a
    /// plan it writes to standard output as `<stdout>`).
    pub shown_as: Option<&'a str>,
}

impl<'a> LoadOptions<'a> {
    /// Options reading files from disk.
    pub fn new(sets: Vec<String>, env: &'a dyn Fn(&str) -> Option<String>) -> LoadOptions<'a> {
        LoadOptions {
            sets,
            env,
            files: None,
            shown_as: None,
        }
    }
}

/// The process environment, for `LoadOptions::env`.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A plan that loaded: its types, the tree (for locating later problems), the texts it
/// was read from, and its warnings.
#[derive(Debug, Clone)]
pub struct LoadedPlan {
    pub spec: PlanSpec,
    pub tree: Node,
    pub report: Report,
    /// The plan file.
    pub path: PathBuf,
    /// Folder of the plan file: relative dataset and import paths start here.
    pub base_dir: PathBuf,
    /// The `--set` overrides as given.
    pub sets: Vec<String>,
    /// The plan's secret headers: literal ones, and every value for redaction.
    pub secrets: super::secrets::PlanSecrets,
}

impl LoadedPlan {
    /// The texts of the plan file and its imports (not the `--set` pseudo-files) as they
    /// are stored: literal secrets written as `${PERFPLAN_SECRET_…}`.
    pub(crate) fn file_texts(&self) -> Vec<(String, String)> {
        self.stored_sources()
            .filter(|(name, _)| name != "--set")
            .collect()
    }

    /// The `--set` overrides as they are stored: literal secrets written as
    /// `${PERFPLAN_SECRET_…}` (`rerun` resolves them from the environment).
    pub(crate) fn stored_sets(&self) -> Vec<String> {
        self.stored_sources()
            .filter(|(name, _)| name == "--set")
            .map(|(_, text)| text)
            .collect()
    }

    fn stored_sources(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.report.sources.files.iter().enumerate().map(|(i, s)| {
            let text = self.secrets.stored.get(i).unwrap_or(&s.text);
            (s.name.clone(), text.clone())
        })
    }

    /// Where a path of the plan is written, for diagnostics found after loading.
    pub(crate) fn locate(&self, path: &[Step]) -> Span {
        self.tree.locate(path)
    }
}

/// The JSON Schema of a plan, as `perfplan schema` prints it.
pub fn plan_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(PlanSpec)).unwrap_or(Value::Null)
}

/// Loads and checks a plan. On failure the report holds every error (and warning).
pub fn load_plan(path: &Path, opts: &LoadOptions<'_>) -> Result<LoadedPlan, Report> {
    load_plan_partial(path, opts).map_err(|f| f.report)
}

/// A plan that did not load: every problem found, and what could still be read of it.
#[derive(Debug)]
pub struct Failed {
    pub report: Report,
    /// The plan with its faulty values left out (`prune`), when the rest deserializes:
    /// the checks that come after loading (the planner's) can still run on it.
    pub partial: Option<LoadedPlan>,
    /// What was left out: a later problem at or around it is a consequence, not a
    /// problem of its own (`prune::Pruned::covers`).
    pub pruned: super::prune::Pruned,
}

/// Most values left out, one at a time, of a tree the schema accepted but serde refused.
const MAX_PRUNED: usize = 64;

/// `load_plan`, keeping what could be read of a plan that did not load. Every phase
/// runs whatever the earlier ones found (the schema's keys, types and ranges; the
/// references; the semantic rules; the files), on the plan with its faulty values left
/// out, so one pass reports every problem.
pub fn load_plan_partial(path: &Path, opts: &LoadOptions<'_>) -> Result<LoadedPlan, Box<Failed>> {
    let mut report = Report::default();
    let Some(read) = read_tree(path, opts, &mut report) else {
        return Err(Box::new(Failed {
            report,
            partial: None,
            pruned: Default::default(),
        }));
    };
    let (tree, spans) = super::prune::prune(&read.tree, &read.bad.all());
    let mut pruned = super::prune::Pruned {
        spans,
        tables: Vec::new(),
    };
    for path in &read.bad.values {
        pruned.table_of(path);
    }
    let spec = match deserialize(&read.tree) {
        Ok(spec) => Some(spec),
        Err(d) => {
            if !report.has_errors() {
                report.diagnostics.push(d);
            }
            None
        }
    };
    let lenient = match spec {
        Some(spec) if read.bad.is_empty() => Some((spec, read.tree.clone())),
        _ => lenient_spec(tree, &mut pruned),
    };
    let Some((spec, tree)) = lenient else {
        return Err(Box::new(Failed {
            report,
            partial: None,
            pruned,
        }));
    };
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let later = later_checks(&spec, &tree, &base_dir);
    report
        .diagnostics
        .extend(later.into_iter().filter(|d| !pruned.covers(d, &tree)));
    let plan = LoadedPlan {
        spec,
        tree,
        report: report.clone(),
        path: path.to_path_buf(),
        base_dir,
        sets: opts.sets.clone(),
        secrets: read.secrets,
    };
    if report.has_errors() {
        return Err(Box::new(Failed {
            report,
            partial: Some(plan),
            pruned,
        }));
    }
    Ok(plan)
}

/// The checks of a deserialized plan: semantics, access, the files it names.
fn later_checks(spec: &PlanSpec, tree: &Node, base_dir: &Path) -> Vec<Diagnostic> {
    let mut diags = semantic::check(spec, tree);
    diags.extend(super::path_names::check(spec, tree));
    diags.extend(access::check(spec, tree));
    diags.extend(semantic::check_files(spec, tree, base_dir));
    diags.extend(access::check_files(spec, tree, base_dir));
    diags
}

/// The plan of a pruned tree, leaving out, one at a time, each further value serde
/// refuses; `None` when what is left still does not deserialize.
fn lenient_spec(mut tree: Node, pruned: &mut super::prune::Pruned) -> Option<(PlanSpec, Node)> {
    for _ in 0..MAX_PRUNED {
        match deserialize_at(&tree) {
            Ok(spec) => return Some((spec, tree)),
            Err((steps, _)) => {
                pruned.table_of(&steps);
                pruned.spans.push(super::prune::remove(&mut tree, &steps)?);
            }
        }
    }
    None
}

/// What `read_tree` read: the tree, its secrets, and the paths of the values the schema
/// found at fault.
struct Read {
    tree: Node,
    secrets: super::secrets::PlanSecrets,
    bad: validate::Faults,
}

fn read_tree(path: &Path, opts: &LoadOptions<'_>, report: &mut Report) -> Option<Read> {
    let mut diags = Vec::new();
    let tree = read_file(path, opts, &mut report.sources, &mut diags, 0);
    report.diagnostics.append(&mut diags);
    let mut tree = tree?;
    report
        .diagnostics
        .extend(interp::interpolate(&mut tree, opts.env));
    let schema = plan_schema();
    for arg in &opts.sets {
        if let Err(d) = set::apply(&mut tree, arg, &schema, &mut report.sources) {
            report.diagnostics.push(d);
        }
    }
    // Literal secrets: stored as `${VAR}`, masked in every diagnostic from here on.
    let secrets = super::secrets::PlanSecrets::find(&tree, &report.sources);
    secrets.mask(&mut report.sources);
    report.diagnostics.extend(secrets.warnings());
    if report.has_errors() {
        return None;
    }
    let (diags, bad) = validate::check_with_paths(&schema, &tree);
    report.diagnostics.extend(diags);
    report.diagnostics.extend(semantic::check_refs(&tree));
    Some(Read { tree, secrets, bad })
}

fn read_file(
    path: &Path,
    opts: &LoadOptions<'_>,
    sources: &mut Sources,
    diags: &mut Vec<Diagnostic>,
    depth: usize,
) -> Option<Node> {
    let shown = path.display().to_string();
    let text = match source_text(path, &shown, opts) {
        Ok(text) => text,
        Err(msg) => {
            diags.push(Diagnostic::error(
                format!("cannot read plan `{shown}`: {msg}"),
                None,
            ));
            return None;
        }
    };
    let name = match (depth, opts.shown_as) {
        (0, Some(name)) => name.to_string(),
        _ => shown.clone(),
    };
    let file = sources.add(name, text);
    let text = &sources.files[file].text;
    let parsed = match path.extension().and_then(|e| e.to_str()) {
        Some("toml") => toml_src::parse(file, text),
        Some("yaml") | Some("yml") => yaml_src::parse(file, text),
        _ => Err(Diagnostic::error(
            format!("cannot tell the format of `{shown}`: name the file *.toml, *.yaml or *.yml"),
            None,
        )),
    };
    let mut tree = match parsed {
        Ok(tree) => tree,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    if !matches!(tree.kind, super::node::NodeKind::Map(_)) {
        diags.push(Diagnostic::error(
            "a plan must be a table of sections ([plan], [endpoints.NAME], …)",
            Some(tree.span),
        ));
        return None;
    }
    let imports = match imports::take_imports(&mut tree) {
        Ok(list) => list,
        Err(d) => {
            diags.push(d);
            return Some(tree);
        }
    };
    for (rel, span) in imports {
        if depth >= MAX_IMPORT_DEPTH {
            diags.push(Diagnostic::error(
                format!("imports nested deeper than {MAX_IMPORT_DEPTH} (a cycle?)"),
                Some(span),
            ));
            continue;
        }
        let target = path.parent().unwrap_or(Path::new("")).join(&rel);
        let mut sub = Vec::new();
        match read_file(&target, opts, sources, &mut sub, depth + 1) {
            Some(other) => imports::merge(&mut tree, other, sources, &mut Vec::new(), diags),
            None => {
                for mut d in sub.drain(..) {
                    if d.span.is_none() {
                        d.span = Some(span);
                    }
                    diags.push(d);
                }
            }
        }
        diags.append(&mut sub);
    }
    Some(tree)
}

/// The text of a plan file: the one given for it (`rerun`, `import`), or the file's.
fn source_text(path: &Path, shown: &str, opts: &LoadOptions<'_>) -> Result<String, String> {
    match opts.files.and_then(|f| f.get(shown)) {
        Some(text) => Ok(crate::text::normalize(text.clone())),
        None => read_text(path),
    }
}

fn read_text(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".to_string());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "larger than {} MiB",
            MAX_FILE_BYTES / (1024 * 1024)
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
    crate::text::decode(bytes).map_err(|e| e.to_string())
}

fn deserialize(tree: &Node) -> Result<PlanSpec, Diagnostic> {
    deserialize_at(tree).map_err(|(steps, message)| {
        let span = tree
            .value_span(&steps)
            .unwrap_or_else(|| tree.locate(&steps));
        let at = super::node::path_text(&steps);
        Diagnostic::error(format!("invalid value in `{at}`: {message}"), Some(span))
    })
}

/// The plan of a tree, or the path serde refused and why.
fn deserialize_at(tree: &Node) -> Result<PlanSpec, (Vec<Step>, String)> {
    let json = tree.to_json();
    serde_path_to_error::deserialize(json).map_err(|err| {
        let steps: Vec<Step> = err
            .path()
            .iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Seq { index } => Some(Step::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(Step::Key(key.clone())),
                serde_path_to_error::Segment::Enum { variant } => Some(Step::Key(variant.clone())),
                serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        (steps, err.inner().to_string())
    })
}
