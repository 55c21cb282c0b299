//! The output limit a request body sends, read from the body itself (what the server
//! sees, after `reject_fields` and any `body_template`): the largest of `max_tokens`,
//! `max_completion_tokens` and `max_output_tokens` at its top level. The engine cuts a
//! stream that runs far past it (`overlong`). Read once per request with the JSON cursor,
//! with whether the body asks for a running usage on every chunk
//! (`stream_options.continuous_usage_stats`), whose counts the engine then reads.

use super::scan::Cursor;

/// The body's output limit; `None` when it sends none (or is not a JSON object).
pub fn output_limit(body: &[u8]) -> Option<u32> {
    body_reads(body).0
}

/// The body's output limit, and whether it asks for per-chunk usage
/// (`"stream_options": {"continuous_usage_stats": true, ...}` with `"stream": true`).
pub fn body_reads(body: &[u8]) -> (Option<u32>, bool) {
    let mut c = Cursor::new(body);
    let (mut limit, mut running, mut stream) = (None::<u32>, false, false);
    let read = c.object(|c, key| match key {
        b"max_tokens" | b"max_completion_tokens" | b"max_output_tokens" => {
            // Not a whole number (a server would refuse it): skipped, as if absent.
            if let Ok(Some(n)) = c.opt_u32() {
                limit = Some(limit.map_or(n, |l| l.max(n)));
                Ok(())
            } else {
                c.skip()
            }
        }
        b"stream" => {
            stream = c.is_true()?;
            Ok(())
        }
        b"stream_options" => {
            if c.null()? {
                return Ok(());
            }
            if c.peek() != Some(b'{') {
                return c.skip();
            }
            c.object(|c, key| match key {
                b"continuous_usage_stats" => {
                    running = c.is_true()?;
                    Ok(())
                }
                _ => c.skip(),
            })
        }
        _ => c.skip(),
    });
    match read {
        Ok(()) => (limit, running && stream),
        Err(_) => (None, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_limit_name_and_takes_the_largest() {
        let limit = |s: &str| output_limit(s.as_bytes());
        assert_eq!(
            limit(r#"{"model":"m","messages":[{"content":"max_tokens"}],"max_tokens":16}"#),
            Some(16)
        );
        assert_eq!(limit(r#"{"max_output_tokens":8,"input":"x"}"#), Some(8));
        assert_eq!(
            limit(r#"{"max_tokens":8,"max_completion_tokens":32}"#),
            Some(32)
        );
        assert_eq!(limit(r#"{"model":"m","extra":{"max_tokens":5}}"#), None);
        assert_eq!(limit(r#"{"max_tokens":null}"#), None);
        assert_eq!(limit(r#"{"max_tokens":"16"}"#), None);
        assert_eq!(limit("not json"), None);
    }

    #[test]
    fn per_chunk_usage_is_asked_on_a_stream_only() {
        let asks = |s: &str| body_reads(s.as_bytes()).1;
        let options = r#""stream_options":{"include_usage":true,"continuous_usage_stats":true}"#;
        assert!(asks(&format!(
            r#"{{"stream":true,{options},"max_tokens":4}}"#
        )));
        assert!(!asks(&format!(r#"{{{options}}}"#)), "not a stream");
        assert!(!asks(
            r#"{"stream":true,"stream_options":{"include_usage":true}}"#
        ));
        assert!(!asks(r#"{"stream":true,"stream_options":null}"#));
        assert!(!asks(
            r#"{"stream":true,"x":{"continuous_usage_stats":true}}"#
        ));
        assert!(!asks(
            r#"{"stream":"yes","stream_options":{"continuous_usage_stats":true}}"#
        ));
    }
}
