//! Secrets: which header names carry them (one rule, for everything that prints or
//! stores headers: the planner's stored settings, the engine's Debug output, a trace's
//! recorded headers), the variable a literal secret of a plan is taken from on `rerun`,
//! the guard that hides secret-looking values in stored settings, and the `Redactor`
//! that hides known secret values wherever they would appear in text (logs, messages).
//! Knows nothing about plans or HTTP.

use std::borrow::Cow;

use serde_json::Value;

/// What a hidden value is replaced with in settings and text.
pub(crate) const REDACTED: &str = "<redacted>";

/// Header names whose values are never printed or stored: authorization, anything with
/// `key`, `token`, `secret`, `cookie` or `password` in its name.
pub fn is_secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "authorization",
        "key",
        "token",
        "secret",
        "cookie",
        "password",
    ]
    .iter()
    .any(|s| n.contains(s))
}

/// The environment variable a literal secret header of a plan is stored as (and taken
/// from on `rerun`): `PERFPLAN_SECRET_<ENDPOINT>_<HEADER>`, upper case, every character
/// other than a letter or digit written `_` (`cache-on` + `X-Api-Key` →
/// `PERFPLAN_SECRET_CACHE_ON_X_API_KEY`).
pub(crate) fn secret_variable(endpoint: &str, header: &str) -> String {
    let part = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("PERFPLAN_SECRET_{}_{}", part(endpoint), part(header))
}

/// Keys of stored settings whose values are never kept, whatever their place (a guard:
/// the suite redacts headers itself).
const SECRET_SETTING_KEYS: [&str; 5] = ["api_key", "authorization", "password", "secret", "token"];

/// `value` with the values of secret-looking keys replaced by [`REDACTED`], and under
/// every `headers` table the values of secret headers (by [`is_secret_header`]).
pub(crate) fn redact_settings(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase();
                    let v = if SECRET_SETTING_KEYS.contains(&lower.as_str()) {
                        Value::from(REDACTED)
                    } else if lower == "headers" {
                        redact_headers(v)
                    } else {
                        redact_settings(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_settings).collect()),
        other => other.clone(),
    }
}

fn redact_headers(headers: &Value) -> Value {
    match headers {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(name, v)| {
                    let v = if is_secret_header(name) {
                        Value::from(REDACTED)
                    } else {
                        v.clone()
                    };
                    (name.clone(), v)
                })
                .collect(),
        ),
        _ => Value::from(REDACTED),
    }
}

/// Values shorter than this are not searched for in free text: a two-letter "secret"
/// would blank out that pair of letters everywhere. Stored plans hide every length.
pub(crate) const MIN_REDACTED_LEN: usize = 6;

/// Known secret values (a plan's secret headers, API keys), hidden wherever they appear
/// in a text. Cheap to clone; empty hides nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so that a value containing another is hidden whole.
    values: Vec<String>,
}

impl Redactor {
    /// Adds a secret value, and the credential after a scheme word (`Bearer sk-…`).
    pub fn add(&mut self, value: &str) {
        let value = value.trim();
        let mut parts = vec![value];
        if let Some((scheme, rest)) = value.split_once(' ') {
            if scheme.chars().all(|c| c.is_ascii_alphabetic()) {
                parts.push(rest.trim());
            }
        }
        for part in parts {
            if part.len() >= MIN_REDACTED_LEN && !self.values.iter().any(|v| v == part) {
                self.values.push(part.to_string());
            }
        }
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `text` with every known secret replaced by [`REDACTED`].
    pub(crate) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = Cow::Owned(out.replace(v.as_str(), REDACTED));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_header_names() {
        for name in [
            "Authorization",
            "X-Api-Key",
            "x-auth-token",
            "Cookie",
            "X-Secret",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        assert!(!is_secret_header("X-Trace"));
    }

    #[test]
    fn variables_name_the_endpoint_and_the_header() {
        assert_eq!(
            secret_variable("cache-on", "X-Api-Key"),
            "PERFPLAN_SECRET_CACHE_ON_X_API_KEY"
        );
        assert_eq!(
            secret_variable("a.b", "authorization"),
            "PERFPLAN_SECRET_A_B_AUTHORIZATION"
        );
    }

    #[test]
    fn settings_keep_plain_headers_and_hide_secret_ones() {
        let v = json!({"endpoint": {"api_key_env": "KEY", "api_key": "sk-1",
            "headers": {"Authorization": "Bearer x", "X-Trace": "on"}}});
        assert_eq!(
            redact_settings(&v),
            json!({"endpoint": {"api_key_env": "KEY", "api_key": REDACTED,
                "headers": {"Authorization": REDACTED, "X-Trace": "on"}}})
        );
    }

    #[test]
    fn the_redactor_hides_values_and_bearer_credentials() {
        let mut r = Redactor::default();
        r.add("Bearer sk-canary-123");
        r.add("abc");
        let text = "sent Bearer sk-canary-123; later sk-canary-123 alone; abc stays";
        assert_eq!(
            r.redact(text),
            "sent <redacted>; later <redacted> alone; abc stays"
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }
}
