//! YAML text of a JSON value, laid out as Kubernetes manifests are written: block
//! mappings and sequences, scalars in JSON's syntax (a subset of YAML's, so every string
//! is quoted and escaped exactly), multi-line strings as literal blocks (`|`) so a plan
//! in a ConfigMap reads as the plan. Keys are written as JSON strings when they are not
//! plain words.

use serde_json::Value;

/// `docs` as one YAML stream, each document after `---`.
pub fn stream(docs: &[Value]) -> String {
    let mut out = String::new();
    for doc in docs {
        out.push_str("---\n");
        block(doc, 0, &mut out);
    }
    out
}

/// A mapping or sequence at `indent`, each entry on its own line.
fn block(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                out.push_str(&format!("{pad}{}:", key(k)));
                after_key(v, indent, out);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for v in items {
                out.push_str(&format!("{pad}-"));
                match v {
                    Value::Object(m) if !m.is_empty() => {
                        // The first entry on the dash's line, the others below it.
                        let mut inner = String::new();
                        block(v, indent + 2, &mut inner);
                        out.push(' ');
                        out.push_str(inner.trim_start());
                    }
                    _ => after_key(v, indent, out),
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

/// What follows `key:` (or `-`): a nested block, a literal block, or a scalar.
fn after_key(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block(v, indent + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block(v, indent + 2, out);
        }
        Value::String(s) if literal_ok(s) => {
            let chomp = if s.ends_with('\n') { "" } else { "-" };
            out.push_str(&format!(" |2{chomp}\n"));
            let pad = " ".repeat(indent + 2);
            for line in s.strip_suffix('\n').unwrap_or(s).split('\n') {
                if line.is_empty() {
                    out.push('\n');
                } else {
                    out.push_str(&format!("{pad}{line}\n"));
                }
            }
        }
        other => out.push_str(&format!(" {}\n", scalar(other))),
    }
}

/// Whether a string reads back unchanged from a literal block: more than one line, at
/// most one final newline, no characters a block cannot hold, no trailing spaces.
fn literal_ok(s: &str) -> bool {
    let body = s.strip_suffix('\n').unwrap_or(s);
    s.contains('\n')
        && !body.ends_with('\n')
        && !s
            .chars()
            .any(|c| (c.is_control() && c != '\n' && c != '\t') || c == '\u{feff}')
        && !body
            .split('\n')
            .any(|l| l.ends_with(' ') || l.ends_with('\t'))
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        other => other.to_string(),
    }
}

fn key(k: &str) -> String {
    let plain = !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && k.as_bytes()[0].is_ascii_alphabetic();
    match plain {
        true => k.to_string(),
        false => Value::String(k.to_string()).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manifests_read_as_written() {
        let doc = json!({
            "kind": "ConfigMap",
            "metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "perfplan"}},
            "data": {"plan.toml": "[plan]\nname = \"x\"\n\n[matrix]\n", "one": "a: b"},
            "list": [{"name": "a", "value": 1}, "s", [], {}],
            "empty": {},
        });
        assert_eq!(
            stream(&[doc]),
            "---\nkind: \"ConfigMap\"\nmetadata:\n  name: \"p\"\n  labels:\n    \
             app.kubernetes.io/name: \"perfplan\"\ndata:\n  plan.toml: |2\n    [plan]\n    \
             name = \"x\"\n\n    [matrix]\n  one: \"a: b\"\nlist:\n  - name: \"a\"\n    value: \
             1\n  - \"s\"\n  - []\n  - {}\nempty: {}\n"
        );
    }

    #[test]
    fn strings_a_block_cannot_hold_stay_quoted() {
        for s in ["a \nb", "a\n\n", "x\u{7}\ny", "one line"] {
            assert!(!literal_ok(s), "{s:?}");
        }
        assert!(literal_ok("  indented\nsecond"));
        assert_eq!(key("9lives"), "\"9lives\"");
    }
}
