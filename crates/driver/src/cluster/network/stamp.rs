//! When bytes reached the emulator: the kernel's receive timestamp of a socket's data.
//!
//! A delay line that counts its latency from when its thread got round to reading adds the
//! thread's own wake-up to every hop: tens of microseconds on a virtual machine whose idle
//! virtual CPU the host has to run again, milliseconds when the thread waited for a busy
//! core. The kernel stamps each packet as it arrives (`SO_TIMESTAMPNS`, loopback included),
//! and `recvmsg` hands the stamp of the last packet read back with the bytes; counted from
//! there, the thread's delay is spent inside the link's latency instead of added to it.

use std::cell::RefCell;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::BytesMut;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use tokio::io::Interest;
use tokio::net::tcp::OwnedReadHalf;

/// Where one direction of a delay line reads from.
pub(crate) trait StampedRead {
    /// Waits for bytes and appends what is there to `buf` (at most its spare capacity,
    /// which must not be empty); returns how many (0 at the end of the stream) and when the
    /// last of them reached the kernel, when it says.
    async fn read_stamped(&mut self, buf: &mut BytesMut) -> io::Result<(usize, Option<Instant>)>;
}

/// How much one read takes off a socket at most.
pub(crate) const CHUNK_BYTES: usize = 64 * 1024;

thread_local! {
    /// What `recvmsg` reads into on this thread, copied into the caller's buffer at once:
    /// `BytesMut`'s spare room is uninitialised, which safe code may not hand to the kernel.
    /// One per emulator thread, not one per socket: hundreds of connections would each
    /// hold [`CHUNK_BYTES`] of it.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; CHUNK_BYTES].into());
}

/// The read half of a proxied TCP connection, its packets stamped on arrival.
#[derive(Debug)]
pub(crate) struct StampedSocket {
    half: OwnedReadHalf,
    /// Room for one control message, the timestamp.
    control: Vec<u8>,
}

impl StampedSocket {
    /// Asks the kernel to stamp `half`'s packets; without stamps (an old kernel), reads are
    /// counted from when they are read.
    pub(crate) fn new(half: OwnedReadHalf) -> Self {
        let socket: &tokio::net::TcpStream = half.as_ref();
        if let Err(e) = setsockopt(socket, sockopt::ReceiveTimestampns, &true) {
            tracing::debug!("emulated link: no receive timestamps ({e}); counting from reads");
        }
        Self { half, control: nix::cmsg_space!(TimeSpec) }
    }
}

impl StampedRead for StampedSocket {
    async fn read_stamped(&mut self, buf: &mut BytesMut) -> io::Result<(usize, Option<Instant>)> {
        let room = (buf.capacity() - buf.len()).min(CHUNK_BYTES);
        let socket: &tokio::net::TcpStream = self.half.as_ref();
        let fd = socket.as_raw_fd();
        let control = &mut self.control;
        loop {
            socket.readable().await?;
            let read = socket.try_io(Interest::READABLE, || {
                SCRATCH.with_borrow_mut(|scratch| {
                    let mut iov = [io::IoSliceMut::new(&mut scratch[..room])];
                    let msg = recvmsg::<()>(
                        fd,
                        &mut iov,
                        Some(control.as_mut_slice()),
                        MsgFlags::empty(),
                    )?;
                    // Truncated control data (no room for the stamp) only costs the stamp.
                    let stamp = msg.cmsgs().ok().and_then(|mut c| {
                        c.find_map(|m| match m {
                            ControlMessageOwned::ScmTimestampns(ts) => Some(ts),
                            _ => None,
                        })
                    });
                    let n = msg.bytes;
                    buf.extend_from_slice(&scratch[..n]);
                    Ok((n, stamp))
                })
            });
            match read {
                Ok((n, stamp)) => return Ok((n, stamp.and_then(instant_of))),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A realtime-clock stamp as an `Instant` (the monotonic clock): now less its age. A stamp
/// from the future (the clock was set back) is now.
fn instant_of(ts: TimeSpec) -> Option<Instant> {
    let secs = u64::try_from(ts.tv_sec()).ok()?;
    let nanos = u32::try_from(ts.tv_nsec()).ok()?;
    let stamped = UNIX_EPOCH + Duration::new(secs, nanos);
    let (now, wall) = (Instant::now(), SystemTime::now());
    now.checked_sub(wall.duration_since(stamped).unwrap_or_default())
}

/// An in-memory pipe has no kernel to stamp it: its reads are counted from when they are
/// read.
#[cfg(test)]
impl StampedRead for tokio::io::DuplexStream {
    async fn read_stamped(&mut self, buf: &mut BytesMut) -> io::Result<(usize, Option<Instant>)> {
        let n = tokio::io::AsyncReadExt::read_buf(self, buf).await?;
        Ok((n, None))
    }
}

/// A loopback TCP connection: its sending end, and its receiving end once the kernel
/// stamps what arrives there. The kernel turns stamping on a moment after it is first asked
/// (from a work queue): until it has, reads are not stamped.
#[cfg(test)]
pub(crate) async fn stamped_pair() -> (tokio::net::TcpStream, StampedSocket) {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mut sender = tokio::net::TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
    let (accepted, _) = listener.accept().await.unwrap();
    let mut socket = StampedSocket::new(accepted.into_split().0);
    let mut buf = BytesMut::with_capacity(64);
    for _ in 0..100 {
        sender.write_all(b"x").await.unwrap();
        buf.clear();
        if socket.read_stamped(&mut buf).await.unwrap().1.is_some() {
            return (sender, socket);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("loopback packets are never stamped");
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    #[tokio::test]
    async fn bytes_read_late_carry_the_time_they_arrived() {
        let (mut sender, mut socket) = stamped_pair().await;
        let mut buf = BytesMut::with_capacity(1024);
        for _ in 0..3 {
            let sent = Instant::now();
            sender.write_all(b"later").await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
            buf.clear();
            let (n, stamp) = socket.read_stamped(&mut buf).await.unwrap();
            let read = Instant::now();
            assert_eq!(&buf[..n], b"later");
            let stamp = stamp.expect("stamped, as the packets before");
            // Stamped as sent, 20 ms before it was read (a clock's read apart: 1 ms).
            assert!(stamp + Duration::from_millis(1) >= sent, "stamped before it was sent");
            assert!(read - stamp >= Duration::from_millis(19), "{:?}", read - stamp);
        }
        drop(sender);
        buf.clear();
        assert_eq!(socket.read_stamped(&mut buf).await.unwrap().0, 0, "the end of the stream");
    }
}
