//! `--set dotted.key=value`: overrides any key of the plan, the value typed by the
//! schema (TOML inline syntax for numbers, booleans, lists and tables; a bare word is a
//! string, and so is anything where the schema expects a string).

use serde_json::Value;

use super::diag::{Diagnostic, Sources, Span};
use super::node::{Entry, Node, NodeKind};
use super::toml_src;

/// Applies one `--set` argument to the tree.
pub fn apply(
    root: &mut Node,
    arg: &str,
    schema: &Value,
    sources: &mut Sources,
) -> Result<(), Diagnostic> {
    let file = sources.add("--set", arg);
    let whole = Span::new(file, 0, arg.len());
    let (path, raw) = arg.split_once('=').ok_or_else(|| {
        Diagnostic::error(
            format!("`--set {arg}` needs the form key.path=value"),
            Some(whole),
        )
    })?;
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(Diagnostic::error(
            format!("`--set`: empty key in `{path}`"),
            Some(whole),
        ));
    }
    let value_span = Span::new(file, path.len() + 1, arg.len());
    let raw = raw.trim();
    let mut value = toml_src::parse_value(file, raw)
        .unwrap_or_else(|| Node::new(NodeKind::Str(raw.to_string()), value_span));
    if wants_string(schema, &keys) && !matches!(value.kind, NodeKind::Str(_)) {
        value = Node::new(NodeKind::Str(raw.to_string()), value_span);
    }
    value.span = value_span;
    relocate(&mut value, value_span);
    insert(root, &keys, value, Span::new(file, 0, path.len()))
}

fn relocate(node: &mut Node, span: Span) {
    node.span = span;
    match &mut node.kind {
        NodeKind::Seq(items) => items.iter_mut().for_each(|n| relocate(n, span)),
        NodeKind::Map(entries) => entries.iter_mut().for_each(|e| {
            e.key_span = span;
            relocate(&mut e.value, span)
        }),
        _ => {}
    }
}

fn insert(root: &mut Node, keys: &[&str], value: Node, key_span: Span) -> Result<(), Diagnostic> {
    let Some((last, parents)) = keys.split_last() else {
        return Ok(());
    };
    let mut node = root;
    for (i, key) in parents.iter().enumerate() {
        let NodeKind::Map(entries) = &mut node.kind else {
            let at = keys[..i].join(".");
            return Err(Diagnostic::error(
                format!("`--set`: `{at}` is not a table"),
                Some(key_span),
            ));
        };
        let pos = match entries.iter().position(|e| e.key == *key) {
            Some(pos) => pos,
            None if i == 1 && NAMED_SECTIONS.contains(&keys[0]) => {
                return Err(undefined_name(keys, entries, key_span));
            }
            None => {
                entries.push(Entry {
                    key: key.to_string(),
                    key_span,
                    value: Node::new(NodeKind::Map(Vec::new()), key_span),
                });
                entries.len() - 1
            }
        };
        node = &mut entries[pos].value;
    }
    let NodeKind::Map(entries) = &mut node.kind else {
        return Err(Diagnostic::error(
            format!("`--set`: the parent of `{last}` is not a table"),
            Some(key_span),
        ));
    };
    match entries.iter_mut().find(|e| e.key == *last) {
        Some(e) => e.value = value,
        None => entries.push(Entry {
            key: last.to_string(),
            key_span,
            value,
        }),
    }
    Ok(())
}

/// Top-level tables of named entries: `--set` may change an entry's keys, or give a new
/// entry whole (`datasets.new={ kind = "prompt", text = "…" }`), but a key of an entry the
/// plan does not define is a typo, not a new entry.
const NAMED_SECTIONS: [&str; 3] = ["endpoints", "models", "datasets"];

fn undefined_name(keys: &[&str], entries: &[Entry], span: Span) -> Diagnostic {
    let (section, name) = (keys[0], keys[1]);
    let singular = section.trim_end_matches('s');
    let names: Vec<&str> = entries.iter().map(|e| e.key.as_str()).collect();
    let hint = super::diag::suggest(name, names.iter().copied())
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let defined = match names.is_empty() {
        true => "none".to_string(),
        false => names.join(", "),
    };
    Diagnostic::error(
        format!(
            "`--set {}`: the plan has no {singular} `{name}`{hint}; its {section}: {defined}",
            keys.join(".")
        ),
        Some(span),
    )
    .with_label(format!("no such {singular}"))
    .with_help(format!(
        "to add one, give the whole table: --set '{section}.{name}={{ … }}'"
    ))
}

/// Whether the schema at `keys` accepts a string and nothing that a TOML literal would parse as.
fn wants_string(root: &Value, keys: &[&str]) -> bool {
    let mut schema = root;
    for key in keys {
        schema = resolve(root, schema);
        let next = schema
            .get("properties")
            .and_then(|p| p.get(*key))
            .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
        match next {
            Some(s) => schema = s,
            None => return false,
        }
    }
    let types = accepted_types(root, schema);
    types.iter().any(|t| t == "string")
        && !types
            .iter()
            .any(|t| t == "integer" || t == "number" || t == "boolean")
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => root
            .get("$defs")
            .and_then(|d| d.get(r.rsplit('/').next().unwrap_or_default()))
            .unwrap_or(schema),
        None => schema,
    }
}

fn accepted_types(root: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(root, schema);
    if let Some(branches) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(Value::as_array)
    {
        return branches
            .iter()
            .flat_map(|b| accepted_types(root, b))
            .collect();
    }
    if schema.get("enum").is_some() {
        return vec!["string".into()];
    }
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}
