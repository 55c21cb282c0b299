//! The `x-request-id` perfplan sends, shaped as a UUID because some servers (llama.cpp's
//! Python server, through starlette-context) answer HTTP 400 to any other form:
//! `PPPPPPPP-PPPP-4000-8000-NNNNNNNNNNNN`, P the first 12 hex digits of the prefix (a run id
//! is 12 hex digits; another prefix is hashed), N the request's index in hex.

/// The ids a request carries in its headers: `x-request-id` (run prefix, index) and the
/// session header (its name, the session id).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ids<'a> {
    pub request: Option<(&'a str, u64)>,
    pub session: Option<(&'a str, u64)>,
}

impl Ids<'_> {
    /// Appends the header lines (`name: value\r\n`) to a request head.
    pub(crate) fn write(&self, w: &mut Vec<u8>) {
        use std::io::Write;
        // Writing into a Vec cannot fail.
        if let Some((name, session)) = self.session {
            let _ = write!(w, "{name}: {}\r\n", session_id(session));
        }
        if let Some((prefix, index)) = self.request {
            let _ = write!(w, "x-request-id: {}\r\n", request_id(prefix, index));
        }
    }
}

/// The session header's value of session `key`: 16 hex digits. Not a secret: a hash of
/// the plan's seed and the conversation (or group), the same in every run of a suite.
pub fn session_id(key: u64) -> String {
    format!("{key:016x}")
}

/// The request id of request `index` of the run `prefix`.
pub fn request_id(prefix: &str, index: u64) -> String {
    let hex = if prefix.len() >= 12 && prefix.bytes().take(12).all(|b| b.is_ascii_hexdigit()) {
        prefix[..12].to_ascii_lowercase()
    } else {
        // FNV-1a, so any prefix maps to 12 stable hex digits.
        let hash = crate::hash::fnv1a(prefix.as_bytes());
        format!("{:012x}", hash & 0xffff_ffff_ffff)
    };
    format!(
        "{}-{}-4000-8000-{:012x}",
        &hex[..8],
        &hex[8..12],
        index & 0xffff_ffff_ffff
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_uuid_shaped() {
        assert_eq!(
            request_id("3efd0e8e706f", 5),
            "3efd0e8e-706f-4000-8000-000000000005"
        );
        let other = request_id("t", 1);
        assert_eq!(other.len(), 36);
        assert_eq!(other, request_id("t", 1));
        assert_ne!(other, request_id("u", 1));
    }
}
