//! A connection's state, shared by its handles, its streams and its task under one lock:
//! the streams and what they received, the bytes waiting to be written, and both
//! directions' flow control.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use super::codec::{self, DEFAULT_MAX_FRAME, RequestHead};
use super::out::{Out, put_data};
use super::{Error, Meta};

/// The window each stream advertises: large, so that 1 MB values are not throttled.
pub(super) const STREAM_WINDOW: u32 = 8 << 20;
/// The connection's window.
pub(super) const CONNECTION_WINDOW: u32 = 32 << 20;
/// The largest stream id; a connection that used them all is dialled again.
const MAX_STREAM_ID: u32 = i32::MAX as u32;
/// The window every connection starts with (RFC 9113).
const DEFAULT_WINDOW: u32 = 65_535;

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
    full: bool,
    head: Option<Meta>,
    got_head: bool,
    data: Chunks,
    trailers: Option<Meta>,
    /// The server ended the stream.
    end: bool,
    error: Option<Error>,
    waker: Option<Waker>,
    /// Bytes the reader took that were not yet given back to the server's window.
    unacked: u32,
    send_window: i64,
    /// Data not sent yet for want of window, and whether the body ends after it.
    queued: VecDeque<Bytes>,
    send_end: bool,
    /// The body's end was queued or sent.
    send_closed: bool,
    /// In [`State::blocked`].
    blocked: bool,
    /// Handles alive: the receiving half, and the sending half if it has one.
    refs: u8,
    /// Counts against the server's limit on concurrent streams.
    counted: bool,
}

/// The DATA a stream received and its reader did not take yet: almost always one chunk.
#[derive(Default)]
enum Chunks {
    #[default]
    None,
    One(Bytes),
    Many(VecDeque<Bytes>),
}

impl Chunks {
    fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(chunk),
            Self::One(first) => Self::Many(VecDeque::from([first, chunk])),
            Self::Many(mut all) => {
                all.push_back(chunk);
                Self::Many(all)
            }
        }
    }

    fn pop(&mut self) -> Option<Bytes> {
        match std::mem::take(self) {
            Self::None => None,
            Self::One(chunk) => Some(chunk),
            Self::Many(mut all) => {
                let chunk = all.pop_front();
                if !all.is_empty() {
                    *self = Self::Many(all);
                }
                chunk
            }
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }
}

/// A connection's state (module docs).
pub(super) struct State {
    pub(super) streams: HashMap<u32, Stream, BuildHasherDefault<IdHasher>>,
    next_id: u32,
    /// Bytes for the task to write.
    pub(super) out: Out,
    /// The task's waker, taken by whoever gives it something to do.
    pub(super) task: Option<Waker>,
    /// Why the connection ended, once it did.
    pub(super) closed: Option<Error>,
    /// The last stream the server said it would serve, once it is going away.
    go_away: Option<(u32, Error)>,
    /// The server's settings.
    initial_window: i64,
    pub(super) max_frame: usize,
    max_streams: u32,
    /// The connection's send window.
    send_window: i64,
    /// Bytes taken from the connection's window that were not given back yet.
    unacked: u32,
    /// Streams with data waiting for window, in the order they blocked.
    blocked: VecDeque<u32>,
    /// Streams counting against `max_streams`, and who waits for one of them to end.
    active: u32,
    waiting: Vec<Waker>,
    /// [`super::Connection`] handles alive.
    pub(super) handles: usize,
}

impl State {
    /// A new connection's state, its preface and settings waiting to be written.
    pub(super) fn new() -> Self {
        let mut out = Out::default();
        out.buf().extend_from_slice(codec::PREFACE);
        codec::put_settings(out.buf(), STREAM_WINDOW);
        codec::put_window_update(out.buf(), 0, CONNECTION_WINDOW - DEFAULT_WINDOW);
        Self {
            streams: HashMap::default(),
            next_id: 1,
            out,
            task: None,
            closed: None,
            go_away: None,
            initial_window: i64::from(DEFAULT_WINDOW),
            max_frame: DEFAULT_MAX_FRAME,
            max_streams: u32::MAX,
            send_window: i64::from(DEFAULT_WINDOW),
            unacked: 0,
            blocked: VecDeque::new(),
            active: 0,
            waiting: Vec::new(),
            handles: 1,
        }
    }

    /// The task's waker if it has something to do: bytes to write, or the connection to
    /// end.
    pub(super) fn notify(&mut self) -> Option<Waker> {
        if self.out.is_empty() && !self.finished() {
            return None;
        }
        self.task.take()
    }

    /// Whether the connection has nothing left to do: no handle, no stream.
    pub(super) fn finished(&self) -> bool {
        self.handles == 0 && self.streams.is_empty()
    }

    pub(super) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if let Some(e) = &self.closed {
            return Poll::Ready(Err(e.clone()));
        }
        if let Some((_, e)) = &self.go_away {
            return Poll::Ready(Err(e.clone()));
        }
        if self.next_id > MAX_STREAM_ID {
            return Poll::Ready(Err(Error::Closed("connection: its stream ids are used up")));
        }
        if self.active >= self.max_streams {
            if !self.waiting.iter().any(|w| w.will_wake(cx.waker())) {
                self.waiting.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    /// Opens a stream: writes its HEADERS (ending it when `end`).
    pub(super) fn open(
        &mut self,
        head: &RequestHead<'_>,
        full: bool,
        end: bool,
    ) -> Result<u32, Error> {
        if let Some(e) = &self.closed {
            return Err(e.clone());
        }
        if let Some((_, e)) = &self.go_away {
            return Err(e.clone());
        }
        let id = self.next_id;
        if id > MAX_STREAM_ID {
            return Err(Error::Closed("connection: its stream ids are used up"));
        }
        self.next_id += 2;
        codec::put_headers(self.out.buf(), id, head, end, self.max_frame);
        let stream = Stream {
            full,
            send_window: self.initial_window,
            send_closed: end,
            refs: if full { 2 } else { 1 },
            counted: true,
            ..Stream::default()
        };
        self.streams.insert(id, stream);
        self.active += 1;
        Ok(id)
    }

    /// Whether the stream's body can still be sent on.
    pub(super) fn check_send(&self, id: u32) -> Result<(), Error> {
        if let Some(e) = &self.closed {
            return Err(e.clone());
        }
        match self.streams.get(&id) {
            Some(Stream { error: Some(e), .. }) => Err(e.clone()),
            Some(Stream { send_closed: true, .. }) => {
                Err(Error::Closed("stream: its body already ended"))
            }
            Some(_) => Ok(()),
            None => Err(Error::Closed("stream: already ended")),
        }
    }

    /// Sends `data` on the stream (its body ending when `end`): what the windows allow now,
    /// the rest once they open.
    pub(super) fn send_data(&mut self, id: u32, mut data: Bytes, end: bool) {
        let Self { streams, out, send_window, max_frame, blocked, .. } = self;
        let Some(s) = streams.get_mut(&id) else { return };
        if end {
            s.send_closed = true;
        }
        if s.queued.is_empty()
            && put_data(out, *max_frame, &mut s.send_window, send_window, id, &mut data, end)
        {
            self.settle(id);
            return;
        }
        s.queued.push_back(data);
        s.send_end |= end;
        if !s.blocked {
            s.blocked = true;
            blocked.push_back(id);
        }
    }

    /// Writes what stream `id` has queued, as far as the windows allow; whether all went.
    fn write_queued(&mut self, id: u32) -> bool {
        let Self { streams, out, send_window, max_frame, .. } = self;
        let Some(s) = streams.get_mut(&id) else { return true };
        if s.error.is_some() {
            s.queued.clear();
            return true;
        }
        while let Some(mut front) = s.queued.pop_front() {
            let end = s.send_end && s.queued.is_empty();
            if !put_data(out, *max_frame, &mut s.send_window, send_window, id, &mut front, end) {
                s.queued.push_front(front);
                return false;
            }
        }
        s.blocked = false;
        self.settle(id);
        true
    }

    /// Writes what blocked streams have queued, in turn, as far as the windows allow.
    fn unblock(&mut self) {
        for _ in 0..self.blocked.len() {
            if self.send_window <= 0 {
                return;
            }
            let Some(id) = self.blocked.pop_front() else { return };
            if !self.write_queued(id) {
                self.blocked.push_back(id);
            }
        }
    }

    /// Stops counting the stream against the server's limit once both sides ended it.
    fn settle(&mut self, id: u32) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        let done = s.error.is_some() || (s.end && s.send_closed && s.queued.is_empty());
        if s.counted && done {
            s.counted = false;
            self.active -= 1;
            if let Some(waiter) = self.waiting.pop() {
                waiter.wake();
            }
        }
    }

    /// Resets stream `id` with `code`, failing it.
    pub(super) fn reset(&mut self, id: u32, code: u32) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        if s.error.is_none() && !(s.end && s.send_closed && s.queued.is_empty()) {
            codec::put_reset(self.out.buf(), id, code);
        }
        s.queued.clear();
        s.error.get_or_insert(Error::Closed("stream: reset by the client"));
        self.settle(id);
    }

    /// One of a stream's handles was dropped (`send`: its sending half). The last one
    /// removes it, resetting it if it had not ended.
    pub(super) fn release(&mut self, id: u32, send: bool) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        s.refs -= 1;
        if s.refs > 0 {
            if send && !s.send_closed && s.error.is_none() && self.closed.is_none() {
                self.send_data(id, Bytes::new(), true);
            }
            return;
        }
        let ended = s.error.is_some() || (s.end && s.send_closed && s.queued.is_empty());
        if !ended && self.closed.is_none() {
            codec::put_reset(self.out.buf(), id, codec::CANCEL);
        }
        self.settle_removed(id);
    }

    fn settle_removed(&mut self, id: u32) {
        if let Some(s) = self.streams.remove(&id)
            && s.counted
        {
            self.active -= 1;
            if let Some(waiter) = self.waiting.pop() {
                waiter.wake();
            }
        }
    }

    fn register(s: &mut Stream, cx: &Context<'_>) {
        match &s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => s.waker = Some(cx.waker().clone()),
        }
    }

    fn stream(&mut self, id: u32) -> Result<&mut Stream, Error> {
        let closed = self.closed.clone();
        match self.streams.get_mut(&id) {
            Some(s) => Ok(s),
            None => Err(closed.unwrap_or(Error::Closed("stream: already ended"))),
        }
    }

    pub(super) fn poll_head(&mut self, id: u32, cx: &Context<'_>) -> Poll<Result<Meta, Error>> {
        let s = match self.stream(id) {
            Ok(s) => s,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Some(head) = s.head.take() {
            return Poll::Ready(Ok(head));
        }
        if let Some(e) = &s.error {
            return Poll::Ready(Err(e.clone()));
        }
        if s.got_head {
            return Poll::Ready(Err(Error::Closed("stream: its head was already read")));
        }
        Self::register(s, cx);
        Poll::Pending
    }

    pub(super) fn poll_data(
        &mut self,
        id: u32,
        cx: &Context<'_>,
    ) -> Poll<Option<Result<Bytes, Error>>> {
        let s = match self.stream(id) {
            Ok(s) => s,
            Err(e) => return Poll::Ready(Some(Err(e))),
        };
        if let Some(chunk) = s.data.pop() {
            let taken = chunk.len() as u32;
            let open = !s.end && s.error.is_none();
            s.unacked += taken;
            if open && s.unacked >= STREAM_WINDOW / 2 {
                let increment = std::mem::take(&mut s.unacked);
                codec::put_window_update(self.out.buf(), id, increment);
            }
            self.consumed(taken);
            return Poll::Ready(Some(Ok(chunk)));
        }
        if let Some(e) = &s.error {
            return Poll::Ready(Some(Err(e.clone())));
        }
        if s.end {
            return Poll::Ready(None);
        }
        Self::register(s, cx);
        Poll::Pending
    }

    pub(super) fn poll_trailers(
        &mut self,
        id: u32,
        cx: &Context<'_>,
    ) -> Poll<Result<Option<Meta>, Error>> {
        let s = match self.stream(id) {
            Ok(s) => s,
            Err(e) => return Poll::Ready(Err(e)),
        };
        if let Some(e) = &s.error {
            return Poll::Ready(Err(e.clone()));
        }
        if s.end && s.data.is_empty() {
            return Poll::Ready(Ok(s.trailers.take()));
        }
        if !s.data.is_empty() {
            return Poll::Ready(Err(Error::Closed("stream: trailers read before its data")));
        }
        Self::register(s, cx);
        Poll::Pending
    }

    /// `n` bytes of the connection's window were used up and may be given back.
    pub(super) fn consumed(&mut self, n: u32) {
        self.unacked += n;
        if self.unacked >= CONNECTION_WINDOW / 2 {
            codec::put_window_update(self.out.buf(), 0, self.unacked);
            self.unacked = 0;
        }
    }

    // ===== what the task does with the frames it reads =====

    /// A response's head or trailers arrived for stream `id`, or fields that make it
    /// malformed (RFC 9113 8.1.1: the stream fails, the connection goes on).
    pub(super) fn received_meta(
        &mut self,
        id: u32,
        meta: Result<Meta, Error>,
        end: bool,
        wake: &mut Vec<Waker>,
    ) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        if s.error.is_some() || s.end {
            return;
        }
        let meta = match meta {
            Ok(meta) => meta,
            Err(malformed) => return self.fail_stream(id, malformed, wake),
        };
        if !s.got_head {
            s.got_head = true;
            if meta.status.is_none() {
                return self.fail_stream(id, Error::malformed("response without :status"), wake);
            }
            s.head = Some(meta);
        } else if end {
            s.trailers = Some(meta);
        } else {
            return self.fail_stream(id, Error::malformed("headers after the head"), wake);
        }
        if end {
            s.end = true;
        }
        if let Some(w) = s.waker.take() {
            wake.push(w);
        }
        if end {
            self.settle(id);
        }
    }

    /// DATA of `len` bytes on the wire (`data` once unpadded) arrived for stream `id`.
    pub(super) fn received_data(
        &mut self,
        id: u32,
        data: Bytes,
        len: usize,
        end: bool,
        wake: &mut Vec<Waker>,
    ) {
        let padding = (len - data.len()) as u32;
        let Some(s) = self.streams.get_mut(&id) else {
            return self.consumed(len as u32);
        };
        if s.error.is_some() || s.end {
            return self.consumed(len as u32);
        }
        if !s.got_head {
            self.consumed(len as u32);
            return self.fail_stream(id, Error::malformed("DATA before the head"), wake);
        }
        if !data.is_empty() {
            s.data.push(data);
        }
        if end {
            s.end = true;
        }
        if let Some(w) = s.waker.take() {
            wake.push(w);
        }
        if padding > 0 {
            self.consumed(padding);
        }
        if end {
            self.settle(id);
        }
    }

    /// Fails stream `id` for what the server sent on it, resetting it.
    pub(super) fn fail_stream(&mut self, id: u32, error: Error, wake: &mut Vec<Waker>) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        codec::put_reset(self.out.buf(), id, codec::PROTOCOL_ERROR);
        s.error = Some(error);
        s.queued.clear();
        if let Some(w) = s.waker.take() {
            wake.push(w);
        }
        self.settle(id);
    }

    /// The server reset stream `id` with `code`. After its whole answer, that only stops
    /// the request's body: a server that answered before the request ended says so with
    /// `NO_ERROR` (RFC 9113 8.1; grpc-go does when etcd-client's request body ends after
    /// the answer), and the answer stands.
    pub(super) fn received_reset(&mut self, id: u32, code: u32, wake: &mut Vec<Waker>) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        if s.end {
            s.send_closed = true;
        } else if s.error.is_none() {
            s.error = Some(Error::Reset(code));
        }
        s.queued.clear();
        if let Some(w) = s.waker.take() {
            wake.push(w);
        }
        self.settle(id);
    }

    /// The server's SETTINGS.
    pub(super) fn received_settings(&mut self, payload: &[u8]) -> Result<(), Error> {
        let settings = codec::settings(payload)
            .ok_or_else(|| Error::protocol(format!("SETTINGS of {} bytes", payload.len())))?;
        for (id, value) in settings {
            match id {
                codec::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value > i32::MAX as u32 {
                        return Err(Error::protocol(format!("initial window of {value} bytes")));
                    }
                    let delta = i64::from(value) - self.initial_window;
                    self.initial_window = i64::from(value);
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                    }
                    if delta > 0 {
                        let blocked: Vec<u32> = self.blocked.iter().copied().collect();
                        for id in blocked {
                            if self.write_queued(id) {
                                self.blocked.retain(|b| *b != id);
                            }
                        }
                    }
                }
                codec::SETTINGS_MAX_FRAME_SIZE => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(Error::protocol(format!("max frame size of {value}")));
                    }
                    self.max_frame = value as usize;
                }
                codec::SETTINGS_MAX_CONCURRENT_STREAMS => {
                    self.max_streams = value;
                    for w in self.waiting.drain(..) {
                        w.wake();
                    }
                }
                // HEADER_TABLE_SIZE: no dynamic table is used to encode. The rest does not
                // concern a client.
                _ => {}
            }
        }
        codec::put_settings_ack(self.out.buf());
        Ok(())
    }

    /// A WINDOW_UPDATE for stream `id` (0: the connection).
    pub(super) fn received_window(&mut self, id: u32, increment: u32) -> Result<(), Error> {
        let increment = i64::from(increment);
        if id == 0 {
            self.send_window += increment;
            if self.send_window > i64::from(i32::MAX) {
                return Err(Error::protocol("connection window over 2^31-1"));
            }
            self.unblock();
            return Ok(());
        }
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        s.send_window += increment;
        if s.blocked && self.write_queued(id) {
            self.blocked.retain(|b| *b != id);
        }
        Ok(())
    }

    /// The server is going away: streams after `last` were not served and fail; no new one
    /// opens.
    pub(super) fn received_go_away(&mut self, last: u32, error: Error, wake: &mut Vec<Waker>) {
        let last = self.go_away.as_ref().map_or(last, |(l, _)| last.min(*l));
        for (id, s) in &mut self.streams {
            if *id > last && s.error.is_none() {
                s.error = Some(error.clone());
                s.queued.clear();
                if let Some(w) = s.waker.take() {
                    wake.push(w);
                }
            }
        }
        let ids: Vec<u32> = self.streams.keys().copied().filter(|id| *id > last).collect();
        for id in ids {
            self.settle(id);
        }
        wake.append(&mut self.waiting);
        self.go_away = Some((last, error));
    }

    /// Whether stream `id` keeps every field of its head and trailers.
    pub(super) fn wants_all_fields(&self, id: u32) -> bool {
        self.streams.get(&id).is_some_and(|s| s.full)
    }

    /// Whether the server went away and every stream it serves has ended.
    pub(super) fn gone(&self) -> bool {
        self.go_away.is_some() && self.active == 0
    }

    /// The connection ended with `error`: every stream fails with it.
    pub(super) fn close(&mut self, error: Error, wake: &mut Vec<Waker>) {
        self.closed.get_or_insert(error.clone());
        for s in self.streams.values_mut() {
            if s.error.is_none() && !s.end {
                s.error = Some(error.clone());
            }
            s.queued.clear();
            if let Some(w) = s.waker.take() {
                wake.push(w);
            }
        }
        wake.append(&mut self.waiting);
        self.blocked.clear();
    }
}
