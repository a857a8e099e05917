//! One stream as its connection keeps it: what it received and has to send, and the DATA
//! its reader has not taken yet.

use std::collections::VecDeque;
use std::hash::Hasher;
use std::task::Waker;

use bytes::{Bytes, BytesMut};

use super::{Error, Meta};

/// Stream ids are odd and unique on a connection: hashed by a multiplication.
#[derive(Default)]
pub(super) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// What a stream received and has to send.
#[derive(Default)]
pub(super) struct Stream {
    /// Keep every field of the head and trailers (not only gRPC's status).
    pub(super) full: bool,
    pub(super) head: Option<Meta>,
    pub(super) got_head: bool,
    pub(super) data: Chunks,
    pub(super) trailers: Option<Meta>,
    /// The server ended the stream.
    pub(super) end: bool,
    pub(super) error: Option<Error>,
    pub(super) waker: Option<Waker>,
    /// Bytes the reader took that were not yet given back to the server's window.
    pub(super) unacked: u32,
    /// What the server may still send on the stream: what it sends past that is refused,
    /// so that a stream holds at most [`STREAM_WINDOW`](super::state::STREAM_WINDOW) for its reader.
    pub(super) recv_window: i64,
    pub(super) send_window: i64,
    /// Data not sent yet for want of window, and whether the body ends after it.
    pub(super) queued: VecDeque<Bytes>,
    pub(super) send_end: bool,
    /// The body's end was queued or sent.
    pub(super) send_closed: bool,
    /// In [`super::state::State`]'s blocked line.
    pub(super) blocked: bool,
    /// The receiving half was dropped while the sending half lives: what comes is given
    /// back at once, not held.
    pub(super) reader_gone: bool,
    /// The sending half, waiting for what it queued to go
    /// ([`SEND_BUFFER`](super::state::SEND_BUFFER)).
    pub(super) send_waker: Option<Waker>,
    /// Handles alive: the receiving half, and the sending half if it has one.
    pub(super) refs: u8,
    /// Counts against the server's limit on concurrent streams.
    pub(super) counted: bool,
}

impl Stream {
    /// Both halves' wakers, for the stream failed or its body stopped.
    pub(super) fn wake_both(&mut self, wake: &mut Vec<Waker>) {
        wake.extend(self.waker.take());
        wake.extend(self.send_waker.take());
    }

    /// How many bytes of the body wait for window.
    pub(super) fn queued_len(&self) -> usize {
        self.queued.iter().map(Bytes::len).sum()
    }
}

/// The DATA a stream received and its reader did not take yet: almost always one chunk,
/// a slice of the connection's read buffer. What comes before the reader took it is
/// copied into a buffer of the stream's own: each slice keeps the whole read buffer it
/// was cut from alive, so slices held of small DATA frames between large frames would
/// hold far more memory than their bytes, and than the stream's window bounds.
#[derive(Default)]
pub(super) enum Chunks {
    #[default]
    None,
    One(Bytes),
    Many(BytesMut),
}

impl Chunks {
    pub(super) fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(chunk),
            Self::One(first) => {
                let mut all = BytesMut::with_capacity(first.len() + chunk.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&chunk);
                Self::Many(all)
            }
            Self::Many(mut all) => {
                all.extend_from_slice(&chunk);
                Self::Many(all)
            }
        }
    }

    pub(super) fn pop(&mut self) -> Option<Bytes> {
        match std::mem::take(self) {
            Self::None => None,
            Self::One(chunk) => Some(chunk),
            Self::Many(all) => Some(all.freeze()),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }

    /// How many bytes it holds.
    pub(super) fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::One(chunk) => chunk.len(),
            Self::Many(all) => all.len(),
        }
    }
}
