//! The response head of the lean HTTP/1.1 client, as servers really send it: status,
//! framing (`Transfer-Encoding` over `Content-Length`, else until close), whether the
//! connection may serve another request (`Connection` tokens, HTTP/1.0), and the content
//! type, every name and value in any letter case. Pure: bytes in, `Head` out.

use std::io;

/// The parts of a response head the engine uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    pub status: u16,
    pub event_stream: bool,
    pub json: bool,
    pub framing: Framing,
    pub close: bool,
}

/// How the body's end is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

pub(crate) fn bad(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// What a `Content-Type` value says of the body, in any letter case: (an SSE stream, JSON).
pub(crate) fn content_kind(value: &str) -> (bool, bool) {
    let v = value.trim().to_ascii_lowercase();
    (
        v.starts_with("text/event-stream"),
        v.starts_with("application/json"),
    )
}

pub(crate) fn parse_head(buf: &[u8]) -> io::Result<Option<(Head, usize)>> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let used = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(bad("malformed response head")),
    };
    let status = resp.code.unwrap_or(0);
    let mut head = Head {
        status,
        event_stream: false,
        json: false,
        framing: Framing::UntilClose,
        close: false,
    };
    let (mut length, mut chunked, mut keep_alive) = (None, None, false);
    for h in resp.headers.iter() {
        let value = std::str::from_utf8(h.value).unwrap_or("").trim();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse().map_err(|_| bad("invalid content-length"))?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            // The last coding decides: `gzip, chunked` is chunked; `gzip` alone ends at close.
            let last = value.rsplit(',').next().unwrap_or("").trim();
            chunked = Some(last.eq_ignore_ascii_case("chunked"));
        } else if h.name.eq_ignore_ascii_case("connection") {
            for token in value.split(',').map(str::trim) {
                head.close |= token.eq_ignore_ascii_case("close");
                keep_alive |= token.eq_ignore_ascii_case("keep-alive");
            }
        } else if h.name.eq_ignore_ascii_case("content-type") {
            (head.event_stream, head.json) = content_kind(value);
        }
    }
    // RFC 9112 6.3: Transfer-Encoding overrides Content-Length; a response with both is
    // suspect (smuggling, a broken proxy), so its connection is not reused.
    head.framing = match (chunked, length) {
        (Some(true), _) => Framing::Chunked,
        (Some(false), _) | (None, None) => Framing::UntilClose,
        (None, Some(n)) => Framing::Length(n),
    };
    head.close |= chunked.is_some() && length.is_some();
    // HTTP/1.0 closes after the response unless the server says keep-alive.
    head.close |= resp.version == Some(0) && !keep_alive;
    if status < 200 || matches!(status, 204 | 304) {
        head.framing = Framing::Length(0);
    }
    Ok(Some((head, used)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_parsing() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\nrest";
        let (head, used) = parse_head(raw).unwrap().unwrap();
        assert_eq!(head.status, 200);
        assert!(head.event_stream && !head.close);
        assert_eq!(head.framing, Framing::Chunked);
        assert_eq!(&raw[used..], b"rest");
        let raw =
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 3\r\nconnection: close\r\n\r\n";
        let (head, _) = parse_head(raw).unwrap().unwrap();
        assert_eq!(
            (head.status, head.framing, head.close),
            (500, Framing::Length(3), true)
        );
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-")
            .unwrap()
            .is_none());
    }

    fn head(raw: &str) -> Head {
        parse_head(raw.as_bytes()).unwrap().unwrap().0
    }

    #[test]
    fn framing_and_reuse_as_servers_send_them() {
        // Transfer-Encoding wins over Content-Length; such a response is not reused.
        let h = head("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert_eq!((h.framing, h.close), (Framing::Chunked, true));
        // The last coding decides; a non-chunked one ends at the close.
        let h = head("HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, CHUNKED\r\n\r\n");
        assert_eq!(h.framing, Framing::Chunked);
        let h = head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n");
        assert_eq!(h.framing, Framing::UntilClose);
        // `Connection` is a list of tokens, in any case.
        assert!(head("HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\n\r\n").close);
        assert!(!head("HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n").close);
        // HTTP/1.0 closes unless kept alive.
        assert!(head("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n").close);
        let h = head("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\n");
        assert!(!h.close);
        // 1xx, 204 and 304 have no body.
        assert_eq!(
            head("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n").framing,
            Framing::Length(0)
        );
        assert_eq!(
            head("HTTP/1.1 204 No Content\r\n\r\n").framing,
            Framing::Length(0)
        );
        assert_eq!(
            content_kind(" Text/Event-Stream; charset=UTF-8"),
            (true, false)
        );
        assert_eq!(content_kind("APPLICATION/JSON"), (false, true));
    }
}
