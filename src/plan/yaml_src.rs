//! YAML text → `Node` (YAML 1.2 core schema), built from the event stream of
//! saphyr-parser so that every value keeps its span, aliases are expanded within a
//! budget (alias bombs are errors, not hangs) and nesting depth is bounded.
//! This file is the only place that knows the YAML crate.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle};

use super::diag::{Diagnostic, FileId, Span};
use super::node::{Entry, Node, NodeKind};

/// Most nodes a document may expand to (aliases included).
const MAX_NODES: usize = 100_000;
/// Deepest nesting allowed.
const MAX_DEPTH: usize = 64;

enum Frame {
    Seq {
        items: Vec<Node>,
        start: usize,
        anchor: usize,
    },
    Map {
        entries: Vec<Entry>,
        key: Option<(String, Span)>,
        start: usize,
        anchor: usize,
    },
}

struct Builder<'a> {
    file: FileId,
    offsets: Offsets<'a>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Node>,
    nodes: usize,
    root: Option<Node>,
    documents: usize,
}

/// Parses a YAML document into a tree.
pub fn parse(file: FileId, text: &str) -> Result<Node, Diagnostic> {
    let mut b = Builder {
        file,
        offsets: Offsets::new(text),
        stack: Vec::new(),
        anchors: HashMap::new(),
        nodes: 0,
        root: None,
        documents: 0,
    };
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| {
            let at = b.offsets.byte(e.marker().index());
            Diagnostic::error(
                format!("invalid YAML: {}", e.info()),
                Some(Span::new(file, at, at + 1)),
            )
        })?;
        let span = Span::new(
            file,
            b.offsets.byte(span.start.index()),
            b.offsets.byte(span.end.index()),
        );
        b.event(event, span)?;
    }
    Ok(b.root
        .unwrap_or_else(|| Node::new(NodeKind::Map(Vec::new()), Span::new(file, 0, 0))))
}

impl Builder<'_> {
    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(Diagnostic::error(
                        "a plan is one YAML document; remove the second `---`",
                        Some(span),
                    ));
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let node = Node::new(scalar(&value, style, tag.as_deref()), span);
                self.push(node, anchor)?;
            }
            Event::Alias(id) => {
                let node =
                    self.anchors.get(&id).cloned().ok_or_else(|| {
                        Diagnostic::error("alias to an unknown anchor", Some(span))
                    })?;
                self.count(size(&node), span)?;
                self.push(node, 0)?;
            }
            Event::SequenceStart(anchor, _) => self.open(
                Frame::Seq {
                    items: Vec::new(),
                    start: span.start,
                    anchor,
                },
                span,
            )?,
            Event::MappingStart(anchor, _) => self.open(
                Frame::Map {
                    entries: Vec::new(),
                    key: None,
                    start: span.start,
                    anchor,
                },
                span,
            )?,
            Event::SequenceEnd | Event::MappingEnd => self.close(span)?,
            _ => {}
        }
        Ok(())
    }

    fn count(&mut self, n: usize, span: Span) -> Result<(), Diagnostic> {
        self.nodes += n;
        if self.nodes > MAX_NODES {
            return Err(Diagnostic::error(
                format!("the document expands to more than {MAX_NODES} values (an alias bomb?)"),
                Some(span),
            ));
        }
        Ok(())
    }

    fn open(&mut self, frame: Frame, span: Span) -> Result<(), Diagnostic> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(Diagnostic::error(
                format!("nesting deeper than {MAX_DEPTH} levels"),
                Some(span),
            ));
        }
        self.count(1, span)?;
        self.stack.push(frame);
        Ok(())
    }

    fn close(&mut self, span: Span) -> Result<(), Diagnostic> {
        let Some(frame) = self.stack.pop() else {
            return Ok(());
        };
        let (kind, start, anchor) = match frame {
            Frame::Seq {
                items,
                start,
                anchor,
            } => (NodeKind::Seq(items), start, anchor),
            Frame::Map {
                entries,
                start,
                anchor,
                ..
            } => (NodeKind::Map(entries), start, anchor),
        };
        let node = Node::new(kind, Span::new(self.file, start, span.end.max(start)));
        self.push(node, anchor)
    }

    fn push(&mut self, node: Node, anchor: usize) -> Result<(), Diagnostic> {
        self.count(1, node.span)?;
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                None => {
                    let name = match &node.kind {
                        NodeKind::Str(s) => s.clone(),
                        NodeKind::Int(i) => i.to_string(),
                        NodeKind::Bool(b) => b.to_string(),
                        NodeKind::Float(f) => f.to_string(),
                        NodeKind::Null => "null".to_string(),
                        _ => {
                            return Err(Diagnostic::error(
                                "table keys must be plain strings",
                                Some(node.span),
                            ))
                        }
                    };
                    *key = Some((name, node.span));
                }
                Some((name, key_span)) => merge_or_insert(entries, name, key_span, node)?,
            },
        }
        Ok(())
    }
}

/// `<<: *anchor` merges the anchored table's keys that are not already set.
fn merge_or_insert(
    entries: &mut Vec<Entry>,
    key: String,
    key_span: Span,
    value: Node,
) -> Result<(), Diagnostic> {
    if key != "<<" {
        if entries.iter().any(|e| e.key == key) {
            return Err(Diagnostic::error(
                format!("duplicate key `{key}`"),
                Some(key_span),
            ));
        }
        entries.push(Entry {
            key,
            key_span,
            value,
        });
        return Ok(());
    }
    let sources = match value.kind {
        NodeKind::Map(_) => vec![value],
        NodeKind::Seq(items) => items,
        _ => {
            return Err(Diagnostic::error(
                "`<<` merges a table or a list of tables",
                Some(key_span),
            ))
        }
    };
    for src in sources {
        let NodeKind::Map(more) = src.kind else {
            return Err(Diagnostic::error(
                "`<<` merges a table or a list of tables",
                Some(key_span),
            ));
        };
        for e in more {
            if !entries.iter().any(|x| x.key == e.key) {
                entries.push(e);
            }
        }
    }
    Ok(())
}

fn size(node: &Node) -> usize {
    match &node.kind {
        NodeKind::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        NodeKind::Map(entries) => 1 + entries.iter().map(|e| size(&e.value)).sum::<usize>(),
        _ => 1,
    }
}

/// YAML 1.2 core schema resolution of a scalar.
fn scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> NodeKind {
    if style != ScalarStyle::Plain || tag.is_some_and(|t| t.ends_with("str")) {
        return NodeKind::Str(text.to_string());
    }
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return NodeKind::Null,
        "true" | "True" | "TRUE" => return NodeKind::Bool(true),
        "false" | "False" | "FALSE" => return NodeKind::Bool(false),
        ".inf" | "+.inf" | ".Inf" | ".INF" => return NodeKind::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return NodeKind::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return NodeKind::Float(f64::NAN),
        _ => {}
    }
    if let Some(kind) = integer(text) {
        return kind;
    }
    let looks_numeric = text
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
        && text.bytes().any(|b| b.is_ascii_digit());
    if looks_numeric {
        if let Ok(f) = text.parse::<f64>() {
            return NodeKind::Float(f);
        }
    }
    NodeKind::Str(text.to_string())
}

fn integer(text: &str) -> Option<NodeKind> {
    let (digits, radix) = if let Some(hex) = text.strip_prefix("0x") {
        (hex, 16)
    } else if let Some(oct) = text.strip_prefix("0o") {
        (oct, 8)
    } else {
        (text, 10)
    };
    let body = digits.strip_prefix(['+', '-']).unwrap_or(digits);
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    Some(match i64::from_str_radix(digits, radix) {
        Ok(i) => NodeKind::Int(i),
        Err(_) => NodeKind::Float(text.parse().unwrap_or(f64::INFINITY)),
    })
}

/// Character index → byte offset (saphyr counts characters).
struct Offsets<'a> {
    text: &'a str,
    table: Option<Vec<usize>>,
}

impl<'a> Offsets<'a> {
    fn new(text: &'a str) -> Offsets<'a> {
        let table = (!text.is_ascii()).then(|| text.char_indices().map(|(i, _)| i).collect());
        Offsets { text, table }
    }

    fn byte(&self, char_index: usize) -> usize {
        match &self.table {
            None => char_index.min(self.text.len()),
            Some(t) => t.get(char_index).copied().unwrap_or(self.text.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_schema_scalars() {
        let node = parse(0, "a: 1\nb: 1.5\nc: true\nd: ~\ne: '1'\nf: text\n").unwrap();
        assert_eq!(node.get("a").unwrap().kind, NodeKind::Int(1));
        assert_eq!(node.get("b").unwrap().kind, NodeKind::Float(1.5));
        assert_eq!(node.get("c").unwrap().kind, NodeKind::Bool(true));
        assert_eq!(node.get("d").unwrap().kind, NodeKind::Null);
        assert_eq!(node.get("e").unwrap().kind, NodeKind::Str("1".into()));
        assert_eq!(node.get("f").unwrap().kind, NodeKind::Str("text".into()));
    }

    #[test]
    fn key_spans_point_at_keys() {
        let text = "plan:\n  name: x\n";
        let node = parse(0, text).unwrap();
        let e = node.get("plan").unwrap().entry("name").unwrap();
        assert_eq!(&text[e.key_span.start..e.key_span.end], "name");
    }

    #[test]
    fn alias_bomb_is_an_error() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            text.push_str(&format!("a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"));
        }
        let err = parse(0, &text).unwrap_err();
        assert!(err.message.contains("alias bomb"), "{}", err.message);
    }

    #[test]
    fn merge_keys_and_duplicates() {
        let node = parse(0, "base: &b {x: 1}\nt:\n  <<: *b\n  y: 2\n").unwrap();
        assert_eq!(
            node.get("t").unwrap().get("x").unwrap().kind,
            NodeKind::Int(1)
        );
        assert!(parse(0, "a: 1\na: 2\n").is_err());
    }
}
