//! Which header names carry secrets, for everything that prints or stores headers (the
//! planner's stored settings, the engine's Debug output). One rule, shared; knows nothing
//! about plans or HTTP.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
