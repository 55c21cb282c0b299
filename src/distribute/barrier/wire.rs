//! The barrier's protocol: one JSON object per line over TCP, tagged by `t`.
//!
//! A shard K > 1 connects to shard 1 and says `hello` (its shard, perfplan version and
//! plan fingerprint, refused when they are not shard 1's), measures the round trip and
//! its clock's offset with a few `ping`/`pong`s (the best of them), then says `joined`
//! with that round trip. Per run each shard says `ready` (it waits at the barrier) or
//! `pass` (it will not start the run); once all N have, shard 1 sends each ready shard
//! `go` with a delay to wait from receipt, less half its round trip, so that all start
//! at one instant whatever their clocks say. `alive` flows both ways each second;
//! `abort` stops every shard with shard 1's reason; `done` ends a shard's suite.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// The longest line either side reads: a run id and a reason fit many times over.
const MAX_LINE: usize = 64 * 1024;

/// What a shard says to shard 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum ToLeader {
    Hello {
        shard: String,
        version: String,
        plan: String,
    },
    Ping {
        n: u32,
    },
    Joined {
        rtt_us: u64,
    },
    Ready {
        run: String,
    },
    Pass {
        run: String,
    },
    Alive,
    Done,
}

/// What shard 1 says to a shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(crate) enum ToShard {
    Welcome,
    Refuse { reason: String },
    Pong { n: u32, wall_us: u64 },
    Go { run: String, delay_us: u64 },
    Abort { reason: String },
    Alive,
}

/// A line read: a message, the peer's close, or a line that is not the protocol.
#[derive(Debug)]
pub enum Read<T> {
    Message(T),
    Closed,
    Garbled(String),
}

/// Writes one message as a line.
pub async fn send<T: Serialize>(w: &mut (impl AsyncWrite + Unpin), msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    w.write_all(&line).await
}

/// Reads one message (at most [`MAX_LINE`] bytes; a longer line is garbled).
pub async fn receive<T: for<'de> Deserialize<'de>>(r: &mut (impl AsyncBufRead + Unpin)) -> Read<T> {
    let mut line = Vec::new();
    loop {
        let buf = match r.fill_buf().await {
            Ok([]) | Err(_) => return Read::Closed,
            Ok(buf) => buf,
        };
        let (take, end) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..take]);
        r.consume(take);
        if line.len() > MAX_LINE {
            return Read::Garbled(format!("a line over {MAX_LINE} bytes"));
        }
        if end {
            break;
        }
    }
    match serde_json::from_slice(&line) {
        Ok(msg) => Read::Message(msg),
        Err(_) => Read::Garbled(
            String::from_utf8_lossy(&line)
                .trim()
                .chars()
                .take(200)
                .collect(),
        ),
    }
}

/// Microseconds since the unix epoch of the wall clock now.
pub(crate) fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_and_bad_lines_are_garbled() {
        let mut out = Vec::new();
        let go = ToShard::Go {
            run: "r 1".into(),
            delay_us: 5,
        };
        send(&mut out, &go).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"t\":\"go\",\"run\":\"r 1\",\"delay_us\":5}\n"
        );
        out.extend_from_slice(b"{\"t\":\"alive\"}\nnot json\n");
        let mut r = tokio::io::BufReader::new(&out[..]);
        assert!(matches!(receive::<ToShard>(&mut r).await, Read::Message(m) if m == go));
        assert!(matches!(
            receive::<ToShard>(&mut r).await,
            Read::Message(ToShard::Alive)
        ));
        assert!(matches!(receive::<ToShard>(&mut r).await, Read::Garbled(l) if l == "not json"));
        assert!(matches!(receive::<ToShard>(&mut r).await, Read::Closed));
        let long = vec![b'x'; MAX_LINE + 10];
        let mut r = tokio::io::BufReader::new(&long[..]);
        assert!(matches!(receive::<ToShard>(&mut r).await, Read::Garbled(_)));
    }
}
