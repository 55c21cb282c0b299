//! The kernel's receive timestamps of a TCP socket (`SO_TIMESTAMPNS`, read with
//! `recvmsg`): when the bytes a read returns arrived, not when the reader got round to
//! them. For TCP the stamp of one read is that of the last segment it took, so the
//! bytes of one read arrived at that time or before. The one place both sides use it:
//! the simulator (when a request arrived) and the lean client (when an answer's bytes
//! arrived). Elsewhere than Linux, or where the kernel refuses, there is no stamp.
//! A leaf: it imports nothing of the crate.

pub use imp::{buffer, enable, recv};

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, SystemTime};

    use nix::sys::socket::{
        recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags, SockaddrStorage,
    };
    use nix::sys::time::TimeSpec;
    use tokio::net::TcpStream;

    /// Asks the kernel to stamp received data; false if it refuses.
    pub fn enable(tcp: &TcpStream) -> bool {
        setsockopt(tcp, sockopt::ReceiveTimestampns, &true).is_ok()
    }

    pub fn buffer() -> Vec<u8> {
        nix::cmsg_space!(TimeSpec)
    }

    /// One `recvmsg` into `dst`: the byte count and the kernel's timestamp of the data.
    pub fn recv(
        tcp: &TcpStream,
        dst: &mut [u8],
        cmsg: &mut [u8],
    ) -> io::Result<(usize, Option<SystemTime>)> {
        let mut iov = [io::IoSliceMut::new(dst)];
        let msg = recvmsg::<SockaddrStorage>(
            tcp.as_raw_fd(),
            &mut iov,
            Some(cmsg),
            MsgFlags::MSG_DONTWAIT,
        )
        .map_err(io::Error::from)?;
        let stamp = msg.cmsgs().ok().and_then(|mut all| {
            all.find_map(|c| match c {
                ControlMessageOwned::ScmTimestampns(ts) => to_system_time(ts),
                _ => None,
            })
        });
        Ok((msg.bytes, stamp))
    }

    /// The stamp as a time; `None` for a zero stamp (the kernel turns stamping on
    /// system-wide a moment after the first socket asks, and leaves earlier data unstamped).
    fn to_system_time(ts: TimeSpec) -> Option<SystemTime> {
        if ts.tv_sec() == 0 && ts.tv_nsec() == 0 {
            return None;
        }
        let secs = u64::try_from(ts.tv_sec()).ok()?;
        let nanos = u32::try_from(ts.tv_nsec()).ok()?;
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::time::SystemTime;

    use tokio::net::TcpStream;

    pub fn enable(_: &TcpStream) -> bool {
        false
    }

    pub fn buffer() -> Vec<u8> {
        Vec::new()
    }

    pub fn recv(
        _: &TcpStream,
        _: &mut [u8],
        _: &mut [u8],
    ) -> io::Result<(usize, Option<SystemTime>)> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// How long ago the kernel stamped data (zero for a stamp in the future: a clock step).
pub fn age(stamp: std::time::SystemTime) -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(stamp)
        .unwrap_or_default()
}
