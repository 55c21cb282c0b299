//! Writing a plan: TOML text from a plan-shaped JSON table, laid out as a person would
//! write it (`[plan]`, `[endpoints.NAME]`, … sections; short tables inline; matrix
//! entries one per line) under a block of comment lines. The plans perfplan writes
//! itself (`import evalscope`, `run --url … --save-plan`) come from here, and are then
//! loaded back by `load_plan` like any file, so what is written is what runs.

use serde_json::{Map, Value};

/// Sections whose tables are named tables (`[endpoints.NAME]`).
const NAMED: [&str; 3] = ["endpoints", "models", "datasets"];
/// Longest inline table before it becomes a section of its own.
const INLINE_MAX: usize = 100;

/// The TOML text of `plan` under `header` (each line written as a `#` comment; a line
/// starting with `:schema` becomes the `#:schema` line). Strings are written as given:
/// `${VAR}` in one is expanded when the plan is loaded, so a caller writing a literal
/// value escapes it (`$${`) first.
pub(crate) fn to_toml(plan: &Map<String, Value>, header: &[String]) -> String {
    let mut out = String::new();
    for line in header {
        if line.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str(&format!(
                "#{}{line}\n",
                if line.starts_with(':') { "" } else { " " }
            ));
        }
    }
    for (key, value) in plan {
        if !value.is_object() {
            out.push_str(&format!("{} = {}\n", key_text(key), inline(value)));
        }
    }
    for (key, value) in plan {
        let Value::Object(table) = value else {
            continue;
        };
        if NAMED.contains(&key.as_str()) {
            for (name, entry) in table {
                if let Value::Object(entry) = entry {
                    section(&mut out, &[key.clone(), name.clone()], entry);
                }
            }
        } else {
            section(&mut out, std::slice::from_ref(key), table);
        }
    }
    out
}

fn section(out: &mut String, path: &[String], table: &Map<String, Value>) {
    let (sub, plain): (Vec<_>, Vec<_>) = table.iter().partition(|(k, v)| {
        matches!(v, Value::Object(_)) && (*k == "sim" || inline(v).len() > INLINE_MAX)
    });
    if !plain.is_empty() || sub.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        let header: Vec<String> = path.iter().map(|k| key_text(k)).collect();
        out.push_str(&format!("[{}]\n", header.join(".")));
        for (key, value) in plain {
            out.push_str(&format!("{} = {}\n", key_text(key), block(value)));
        }
    }
    for (key, value) in sub {
        if let Value::Object(t) = value {
            let mut p = path.to_vec();
            p.push(key.clone());
            section(out, &p, t);
        }
    }
}

/// A value at the top of a line: an array of several tables is one entry per line.
fn block(value: &Value) -> String {
    match value {
        Value::Array(items) if items.len() > 1 && items.iter().all(Value::is_object) => {
            let lines: Vec<String> = items
                .iter()
                .map(|v| format!("  {},\n", inline(v)))
                .collect();
            format!("[\n{}]", lines.concat())
        }
        Value::String(s) if s.contains('\n') => multi_line(s).unwrap_or_else(|| inline(value)),
        _ => inline(value),
    }
}

fn inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => basic_string(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(inline).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Object(map) if map.is_empty() => "{}".to_string(),
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{} = {}", key_text(k), inline(v)))
                .collect();
            format!("{{ {} }}", parts.join(", "))
        }
    }
}

/// A TOML basic string: JSON's escapes are TOML's (`\"`, `\\`, `\n`, `\uXXXX`).
fn basic_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// A multi-line literal string (`'''`), when the text allows one.
fn multi_line(s: &str) -> Option<String> {
    let clean = !s.contains("'''")
        && !s.ends_with('\'')
        && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control());
    clean.then(|| format!("'''\n{s}'''"))
}

fn key_text(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        serde_json::to_string(key).unwrap_or_else(|_| "\"\"".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn table(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn sections_inline_tables_and_one_load_per_line() {
        let plan = table(json!({
            "plan": {"name": "x", "seed": 0},
            "endpoints": {"server": {"base_url": "http://h:1", "timeouts": {"read": "600s"}}},
            "defaults": {"temperature": 0.0, "extra": {"ignore_eos": true}},
            "matrix": {"load": [{"concurrency": 1, "requests": 64}, {"concurrency": 4, "requests": 128}]},
        }));
        let text = to_toml(
            &plan,
            &[":schema plan.schema.json".into(), "imported".into()],
        );
        assert_eq!(
            text,
            "#:schema plan.schema.json\n# imported\n\n[plan]\nname = \"x\"\nseed = 0\n\n\
             [endpoints.server]\nbase_url = \"http://h:1\"\ntimeouts = { read = \"600s\" }\n\n\
             [defaults]\ntemperature = 0.0\nextra = { ignore_eos = true }\n\n[matrix]\nload = [\n  \
             { concurrency = 1, requests = 64 },\n  { concurrency = 4, requests = 128 },\n]\n"
        );
        let back: toml::Table = toml::from_str(&text).unwrap_or_default();
        assert_eq!(back["matrix"]["load"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn strings_round_trip_and_odd_keys_are_quoted() {
        let plan = table(json!({
            "defaults": {"body_template": "{\"a\": \"$${X}\"}\n", "extra": {"odd key": "q\"\\"}},
        }));
        let text = to_toml(&plan, &[]);
        assert!(text.contains("body_template = '''\n"), "{text}");
        let back: toml::Table = toml::from_str(&text).unwrap_or_default();
        assert_eq!(
            back["defaults"]["body_template"].as_str(),
            Some("{\"a\": \"$${X}\"}\n")
        );
        assert_eq!(back["defaults"]["extra"]["odd key"].as_str(), Some("q\"\\"));
    }
}
