//! TOML text → `Node`, keeping the span of every key and value.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::diag::{Diagnostic, FileId, Span};
use super::node::{Entry, Node, NodeKind};

/// Parses a TOML document. A syntax error is one located diagnostic.
pub fn parse(file: FileId, text: &str) -> Result<Node, Diagnostic> {
    match DeTable::parse(text) {
        Ok(table) => {
            let span = span_of(file, &table);
            Ok(Node::new(
                NodeKind::Map(entries(file, table.get_ref())),
                span,
            ))
        }
        Err(err) => {
            let span = err.span().map(|r| Span::new(file, r.start, r.end));
            let message = err.message().trim().to_string();
            Err(Diagnostic::error(format!("invalid TOML: {message}"), span))
        }
    }
}

/// Parses one TOML value (for `--set key=value`).
pub(crate) fn parse_value(file: FileId, text: &str) -> Option<Node> {
    let value = DeValue::parse(text).ok()?;
    Some(convert(file, &value))
}

fn span_of<T>(file: FileId, s: &Spanned<T>) -> Span {
    let r = s.span();
    Span::new(file, r.start, r.end)
}

fn entries(file: FileId, table: &DeTable<'_>) -> Vec<Entry> {
    table
        .iter()
        .map(|(k, v)| Entry {
            key: k.get_ref().to_string(),
            key_span: span_of(file, k),
            value: convert(file, v),
        })
        .collect()
}

fn convert(file: FileId, value: &Spanned<DeValue<'_>>) -> Node {
    let span = span_of(file, value);
    let kind = match value.get_ref() {
        DeValue::String(s) => NodeKind::Str(s.to_string()),
        DeValue::Integer(i) => integer(i.as_str(), i.radix()),
        DeValue::Float(f) => float(f.as_str()),
        DeValue::Boolean(b) => NodeKind::Bool(*b),
        DeValue::Datetime(d) => NodeKind::Str(d.to_string()),
        DeValue::Array(items) => NodeKind::Seq(items.iter().map(|v| convert(file, v)).collect()),
        DeValue::Table(table) => NodeKind::Map(entries(file, table)),
    };
    Node::new(kind, span)
}

fn integer(text: &str, radix: u32) -> NodeKind {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let digits = clean
        .strip_prefix("0x")
        .or_else(|| clean.strip_prefix("0o"))
        .or_else(|| clean.strip_prefix("0b"))
        .unwrap_or(&clean);
    match i64::from_str_radix(digits, radix) {
        Ok(i) => NodeKind::Int(i),
        // Out of i64 range: keep it as a (huge) number so validation reports the range.
        Err(_) => NodeKind::Float(clean.parse::<f64>().unwrap_or(f64::INFINITY)),
    }
}

fn float(text: &str) -> NodeKind {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let value = match clean.as_str() {
        "inf" | "+inf" => f64::INFINITY,
        "-inf" => f64::NEG_INFINITY,
        "nan" | "+nan" | "-nan" => f64::NAN,
        other => other.parse().unwrap_or(f64::NAN),
    };
    NodeKind::Float(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_key_spans() {
        let text = "[plan]\nname = \"x\"\n";
        let node = parse(0, text).unwrap();
        let plan = node.entry("plan").unwrap();
        let name = plan.value.entry("name").unwrap();
        assert_eq!(&text[name.key_span.start..name.key_span.end], "name");
        assert_eq!(name.value.kind, NodeKind::Str("x".into()));
    }

    #[test]
    fn syntax_errors_are_located() {
        let err = parse(0, "[plan\nname = 1").unwrap_err();
        assert!(err.span.is_some());
        assert!(err.message.starts_with("invalid TOML"));
    }
}
