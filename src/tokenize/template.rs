//! Chat templates rendered with minijinja the way transformers renders them with Jinja2:
//! `trim_blocks` and `lstrip_blocks` on, Python string/dict/list methods (pycompat),
//! `raise_exception`, a Python-compatible `tojson`, `strftime_now`, and the variables
//! `messages`, `add_generation_prompt`, the special tokens (`bos_token`, `eos_token`, ...) and
//! any extra template variables (a request's `chat_template_kwargs`).

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::value::{Kwargs, Value as JinjaValue};
use minijinja::{Environment, Error, ErrorKind};
use serde_json::{Map, Value};

use super::TokenizeError;

const NAME: &str = "chat_template";

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
}

impl ChatTemplate {
    /// Compiles `source`; `origin` names the file it came from in errors.
    pub fn compile(source: String, origin: &Path) -> Result<ChatTemplate, TokenizeError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_template_owned(NAME, source)
            .map_err(|source| TokenizeError::TemplateSyntax {
                path: origin.to_path_buf(),
                source,
            })?;
        Ok(ChatTemplate { env })
    }

    /// Renders a conversation. `special_tokens` are (name, text) pairs such as
    /// `("bos_token", "<s>")`; `extra` adds template variables (never replacing `messages`
    /// or `add_generation_prompt`).
    pub fn render(
        &self,
        messages: &[Value],
        add_generation_prompt: bool,
        special_tokens: &[(String, String)],
        extra: &Map<String, Value>,
    ) -> Result<String, Error> {
        let template = self.env.get_template(NAME)?;
        let mut ctx: BTreeMap<&str, JinjaValue> = BTreeMap::new();
        for (name, value) in extra {
            ctx.insert(name, JinjaValue::from_serialize(value));
        }
        for (name, text) in special_tokens {
            ctx.insert(name, text.as_str().into());
        }
        ctx.insert("messages", JinjaValue::from_serialize(messages));
        ctx.insert("add_generation_prompt", add_generation_prompt.into());
        template.render(ctx)
    }
}

fn raise_exception(message: String) -> Result<JinjaValue, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: the current UTC time formatted like Python's `strftime`.
fn strftime_now(format: String) -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    strftime(&format, secs)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Formats `unix_secs` (UTC) with the common `strftime` directives.
pub(crate) fn strftime(format: &str, unix_secs: u64) -> String {
    let t = crate::units::UtcTime::of_unix_secs(i64::try_from(unix_secs).unwrap_or(i64::MAX / 2));
    let (year, month, day) = (t.year, u64::from(t.month), u64::from(t.day));
    let (hour, minute, second) = (u64::from(t.hour), u64::from(t.minute), u64::from(t.second));
    let weekday = t.weekday as usize;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = chars.next();
        let unpadded = spec == Some('-');
        if unpadded {
            spec = chars.next();
        }
        let num = |n: u64| {
            if unpadded {
                n.to_string()
            } else {
                format!("{n:02}")
            }
        };
        match spec {
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", year.rem_euclid(100))),
            Some('m') => out.push_str(&num(month)),
            Some('d') => out.push_str(&num(day)),
            Some('H') => out.push_str(&num(hour)),
            Some('M') => out.push_str(&num(minute)),
            Some('S') => out.push_str(&num(second)),
            Some('B') => out.push_str(MONTHS[(month - 1) as usize]),
            Some('b') => out.push_str(&MONTHS[(month - 1) as usize][..3]),
            Some('A') => out.push_str(DAYS[weekday]),
            Some('a') => out.push_str(&DAYS[weekday][..3]),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Python's `json.dumps(value, ensure_ascii=False)` as transformers' `tojson` filter does:
/// `", "` and `": "` separators, or indented lines with `indent=N`.
fn tojson(value: &JinjaValue, indent: Option<JinjaValue>, kwargs: Kwargs) -> Result<String, Error> {
    let indent = match indent {
        Some(v) => Some(v),
        None => kwargs.get::<Option<JinjaValue>>("indent")?,
    };
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    // Accepted for compatibility; output is never ASCII-escaped, like transformers.
    let _ = kwargs.get::<Option<bool>>("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let mut json = serde_json::to_value(value).map_err(|err| {
        Error::new(ErrorKind::InvalidOperation, "cannot serialize to JSON").with_source(err)
    })?;
    if sort_keys {
        sort_json_keys(&mut json);
    }
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => Some(usize::try_from(v)?),
    };
    let mut out = Vec::new();
    let written = match indent {
        Some(n) => {
            let pad = " ".repeat(n);
            let fmt = serde_json::ser::PrettyFormatter::with_indent(pad.as_bytes());
            serde::Serialize::serialize(
                &json,
                &mut serde_json::Serializer::with_formatter(&mut out, fmt),
            )
        }
        None => serde::Serialize::serialize(
            &json,
            &mut serde_json::Serializer::with_formatter(&mut out, PythonFormatter),
        ),
    };
    written.map_err(|err| {
        Error::new(ErrorKind::InvalidOperation, "cannot serialize to JSON").with_source(err)
    })?;
    String::from_utf8(out).map_err(|err| {
        Error::new(ErrorKind::InvalidOperation, "JSON is not UTF-8").with_source(err)
    })
}

fn sort_json_keys(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = std::mem::take(map).into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            for (key, mut v) in entries {
                sort_json_keys(&mut v);
                map.insert(key, v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_json_keys),
        _ => {}
    }
}

/// Compact JSON with Python's default separators.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
    ) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(source: &str, messages: Value) -> Result<String, Error> {
        let t = ChatTemplate::compile(source.to_string(), Path::new("t.jinja")).unwrap();
        let messages: Vec<Value> = serde_json::from_value(messages).unwrap();
        let specials = [
            ("bos_token".to_string(), "<s>".to_string()),
            ("eos_token".to_string(), "</s>".to_string()),
        ];
        t.render(&messages, true, &specials, &Map::new())
    }

    #[test]
    fn strftime_formats_known_dates() {
        // 2024-07-26 00:00:00 UTC, a Friday
        assert_eq!(strftime("%d %b %Y", 1_721_952_000), "26 Jul 2024");
        assert_eq!(
            strftime("%A %-d %B %y %H:%M:%S %%", 1_721_952_000 + 3_723),
            "Friday 26 July 24 01:02:03 %"
        );
        assert_eq!(strftime("%Y-%m-%d", 0), "1970-01-01");
        assert_eq!(strftime("%Y-%m-%d", 951_782_400), "2000-02-29");
    }

    #[test]
    fn tojson_matches_python_json_dumps() {
        let out = render(
            "{{ messages[0] | tojson }}|{{ messages[0] | tojson(indent=2) }}",
            json!([{"role": "user", "content": "<a> & é"}]),
        )
        .unwrap();
        assert_eq!(
            out,
            "{\"role\": \"user\", \"content\": \"<a> & é\"}|{\n  \"role\": \"user\",\n  \"content\": \"<a> & é\"\n}"
        );
    }

    #[test]
    fn raise_exception_fails_the_render_with_its_message() {
        let err = render("{{ raise_exception('roles must alternate') }}", json!([])).unwrap_err();
        assert!(err.to_string().contains("roles must alternate"), "{err}");
    }

    #[test]
    fn python_methods_and_block_trimming_work() {
        let source = "{% for m in messages %}\n  {% if m.content.startswith('x') %}{{ m.content.strip().upper() }}{% endif %}\n{% endfor %}{{ bos_token }}";
        let out = render(source, json!([{"role": "user", "content": "xy  "}])).unwrap();
        assert_eq!(out, "XY<s>");
    }
}
