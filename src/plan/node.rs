//! The spanned tree both TOML and YAML plans are read into, so that interpolation,
//! overrides, imports and validation work the same way for both and every value keeps
//! its place in its file.

use serde_json::{Map, Number, Value};

use super::diag::Span;

#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<Entry>),
}

/// A key of a table, with where the key itself is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_span: Span,
    pub value: Node,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

/// One step of a path into a tree: a table key or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

impl Node {
    pub fn new(kind: NodeKind, span: Span) -> Node {
        Node { kind, span }
    }

    pub fn map(&self) -> Option<&[Entry]> {
        match &self.kind {
            NodeKind::Map(entries) => Some(entries),
            _ => None,
        }
    }

    pub fn entry(&self, key: &str) -> Option<&Entry> {
        self.map()?.iter().find(|e| e.key == key)
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|e| &e.value)
    }

    /// What a person calls this kind of value.
    pub(crate) fn type_name(&self) -> &'static str {
        match self.kind {
            NodeKind::Null => "null",
            NodeKind::Bool(_) => "a boolean",
            NodeKind::Int(_) => "an integer",
            NodeKind::Float(_) => "a number",
            NodeKind::Str(_) => "a string",
            NodeKind::Seq(_) => "an array",
            NodeKind::Map(_) => "a table",
        }
    }

    /// The best span for a path: the key of the deepest entry found (or the value for
    /// list items). Used to place errors found after deserialization.
    pub(crate) fn locate(&self, path: &[Step]) -> Span {
        let mut node = self;
        let mut best = self.span;
        for step in path {
            match (step, &node.kind) {
                (Step::Key(k), NodeKind::Map(entries)) => {
                    match entries.iter().find(|e| &e.key == k) {
                        Some(e) => {
                            best = e.key_span;
                            node = &e.value;
                        }
                        None => return best,
                    }
                }
                (Step::Index(i), NodeKind::Seq(items)) => match items.get(*i) {
                    Some(item) => {
                        best = item.span;
                        node = item;
                    }
                    None => return best,
                },
                _ => return best,
            }
        }
        best
    }

    /// The span of a value at a path (not its key), if it exists.
    pub(crate) fn value_span(&self, path: &[Step]) -> Option<Span> {
        let mut node = self;
        for step in path {
            node = match (step, &node.kind) {
                (Step::Key(k), NodeKind::Map(entries)) => {
                    &entries.iter().find(|e| &e.key == k)?.value
                }
                (Step::Index(i), NodeKind::Seq(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(node.span)
    }

    pub fn to_json(&self) -> Value {
        match &self.kind {
            NodeKind::Null => Value::Null,
            NodeKind::Bool(b) => Value::Bool(*b),
            NodeKind::Int(i) => Value::Number((*i).into()),
            NodeKind::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            NodeKind::Str(s) => Value::String(s.clone()),
            NodeKind::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            NodeKind::Map(entries) => {
                let mut map = Map::new();
                for e in entries {
                    map.insert(e.key.clone(), e.value.to_json());
                }
                Value::Object(map)
            }
        }
    }

    /// Builds a tree from JSON, every node at `span` (for values given on the command line).
    pub fn from_json(value: &Value, span: Span) -> Node {
        let kind = match value {
            Value::Null => NodeKind::Null,
            Value::Bool(b) => NodeKind::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => NodeKind::Int(i),
                None => NodeKind::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => NodeKind::Str(s.clone()),
            Value::Array(items) => {
                NodeKind::Seq(items.iter().map(|v| Node::from_json(v, span)).collect())
            }
            Value::Object(map) => NodeKind::Map(
                map.iter()
                    .map(|(k, v)| Entry {
                        key: k.clone(),
                        key_span: span,
                        value: Node::from_json(v, span),
                    })
                    .collect(),
            ),
        };
        Node::new(kind, span)
    }
}

/// Renders a path as a person writes it: `datasets.random-1k.input_tokens`, `matrix.load[2]`.
pub(crate) fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}
