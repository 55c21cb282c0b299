//! When the bytes of the lean client's reads arrived (`Arrival`): the kernel's receive
//! stamp of each read (`rx_stamp::StampedTcp`, the client's TCP stream), so the answer's
//! times are when its bytes arrived, not when the client's runtime got round to reading
//! them (the difference is the client's own delay). Where the kernel gives no stamp (not Linux,
//! stamping refused, or the first moment after it was turned on) a read notes none and
//! the read's own time is used.
//!
//! What a stamp can say: segments that wait unread in a socket are merged by the kernel,
//! and the merged data keeps the newest one's stamp. A client that comes to a socket later
//! than the next chunk's arrival dates the first chunk at that next one's arrival: the
//! error is bounded by the gap to the next chunk (an ITL), not by how late the client was.
//! (Reading one event at a time does not help: measured, the merge happens before the
//! read.) Knows nothing about HTTP.

use std::time::{Duration, Instant, SystemTime};

pub(crate) use crate::rx_stamp::StampedTcp;

/// When the bytes of a read arrived: the kernel's time as an `Instant`, and how long
/// before the read that was (zero without a kernel stamp).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) at: Instant,
    pub(crate) delay: Duration,
    /// The kernel stamped the bytes (else `at` is the read's own time).
    pub(crate) kernel: bool,
}

impl Arrival {
    /// The arrival of bytes read just now, with the kernel's `stamp` if there is one.
    pub(crate) fn of(stamp: Option<SystemTime>) -> Arrival {
        let now = Instant::now();
        let delay = stamp.map(crate::rx_stamp::age).unwrap_or_default();
        Arrival {
            at: now.checked_sub(delay).unwrap_or(now),
            delay,
            kernel: stamp.is_some(),
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::net::TcpStream;

    /// A reader delayed on purpose: the kernel's time of the bytes lies before the read's
    /// own time by the delay.
    #[tokio::test]
    async fn a_delayed_read_is_stamped_when_the_bytes_arrived() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The first socket that asks turns stamping on system-wide a moment later.
        let first = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), true);
        let _first_peer = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut client = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), true);
        let (mut server, _) = listener.accept().await.unwrap();
        if !first.kernel() {
            eprintln!("skipped: this kernel refuses SO_TIMESTAMPNS");
            return;
        }
        server.write_all(b"data: first\n\n").await.unwrap();
        let written = Instant::now();
        tokio::time::sleep(Duration::from_millis(80)).await;
        let mut buf = [0u8; 64];
        let n = client.read(&mut buf).await.unwrap();
        let arrival = Arrival::of(client.stamp());
        assert_eq!(&buf[..n], b"data: first\n\n");
        assert!(arrival.kernel);
        assert!(arrival.delay >= Duration::from_millis(75), "{arrival:?}");
        let off = arrival.at.saturating_duration_since(written)
            + written.saturating_duration_since(arrival.at);
        assert!(
            off < Duration::from_millis(5),
            "stamped {off:?} from the write"
        );
    }

    /// Without stamps (asked for none), a read is timed when it returns.
    #[tokio::test]
    async fn without_stamps_a_read_is_timed_when_it_returns() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut client = StampedTcp::new(TcpStream::connect(addr).await.unwrap(), false);
        let (mut server, _) = listener.accept().await.unwrap();
        server.write_all(b"x").await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut buf = [0u8; 8];
        assert_eq!(client.read(&mut buf).await.unwrap(), 1);
        let arrival = Arrival::of(client.stamp());
        assert!(!arrival.kernel);
        assert_eq!(arrival.delay, Duration::ZERO);
    }
}
