//! The recorded headers of a trace record that are sent again with it. Names must be HTTP
//! tokens and values must not break a request head. Never replayed: framing and
//! hop-by-hop headers (the client writes its own), `accept-encoding` (perfplan reads
//! uncompressed answers), `x-request-id` (perfplan sets its own, the key for joining with
//! server logs), `user-agent` (perfplan names itself), and secrets (a trace recorded in production must not carry its
//! credentials to a test server; the endpoint's key is sent). Knows nothing about HTTP
//! clients.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::secrets::is_secret_header;

/// Headers the client writes itself or that make no sense replayed.
const OWN: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "expect",
    "proxy-connection",
    "accept-encoding",
    "x-request-id",
    "user-agent",
];

/// Header names and values.
pub(crate) type Headers = Vec<(String, String)>;

/// The headers of one record: the ones to send, and the names left out (lowercase).
pub(crate) fn replayable(headers: Option<&Value>) -> Result<(Headers, BTreeSet<String>), String> {
    let (mut keep, mut skipped) = (Vec::new(), BTreeSet::new());
    let map = match headers {
        None | Some(Value::Null) => return Ok((keep, skipped)),
        Some(Value::Object(map)) => map,
        Some(_) => return Err("`headers` must be an object of header names to strings".into()),
    };
    for (name, value) in map {
        let Some(value) = value.as_str() else {
            return Err(format!("header `{name}` must have a string value"));
        };
        if !is_token(name) {
            return Err(format!("`{name}` is not a valid header name"));
        }
        if !value
            .bytes()
            .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
        {
            return Err(format!(
                "header `{name}` has a value with a line break, control or non-ASCII character"
            ));
        }
        let lower = name.to_ascii_lowercase();
        if OWN.contains(&lower.as_str()) || is_secret_header(&lower) {
            skipped.insert(lower);
        } else {
            keep.push((name.clone(), value.to_string()));
        }
    }
    Ok((keep, skipped))
}

/// An HTTP token (RFC 9110): visible ASCII without separators.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_routing_headers_and_leaves_out_framing_and_secrets() {
        let h = json!({
            "X-Session-Id": "s1", "x-priority": "high", "Authorization": "Bearer prod",
            "Host": "prod", "Content-Length": "9", "x-api-key": "k", "Accept-Encoding": "gzip",
            "X-Request-Id": "r"
        });
        let (keep, skipped) = replayable(Some(&h)).unwrap();
        assert_eq!(
            keep,
            [
                ("X-Session-Id".to_string(), "s1".to_string()),
                ("x-priority".to_string(), "high".to_string())
            ]
        );
        let skipped: Vec<_> = skipped.into_iter().collect();
        assert_eq!(
            skipped,
            [
                "accept-encoding",
                "authorization",
                "content-length",
                "host",
                "x-api-key",
                "x-request-id"
            ]
        );
    }

    #[test]
    fn bad_headers_are_errors() {
        assert!(replayable(Some(&json!("x"))).is_err());
        assert!(replayable(Some(&json!({"x": 1}))).is_err());
        assert!(replayable(Some(&json!({"bad name": "v"}))).is_err());
        assert!(replayable(Some(&json!({"x": "a\r\nInjected: 1"}))).is_err());
        assert!(replayable(Some(&json!({"x": "caf\u{e9}"}))).is_err());
        assert!(replayable(None).unwrap().0.is_empty());
        assert!(replayable(Some(&Value::Null)).unwrap().0.is_empty());
    }
}
