//! A connection's state, shared by its handles, its streams and its task under one lock:
//! the streams and what they received, the bytes waiting to be written, and both
//! directions' flow control.

use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasherDefault;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

use super::codec::{self, DEFAULT_MAX_FRAME, RequestHead};
use super::out::{Out, put_data};
use super::stream::{Chunks, IdHasher, Stream};
use super::{Error, Meta};

/// The window each stream advertises: large, so that 1 MB values are not throttled.
pub(super) const STREAM_WINDOW: u32 = 8 << 20;
/// The connection's window.
pub(super) const CONNECTION_WINDOW: u32 = 32 << 20;
/// The largest stream id; a connection that used them all is dialled again.
const MAX_STREAM_ID: u32 = i32::MAX as u32;
/// The window every connection starts with (RFC 9113).
const DEFAULT_WINDOW: u32 = 65_535;

/// One who waits for a stream slot ([`State::poll_ready`]).
struct Waiter {
    ticket: u64,
    waker: Waker,
    /// Woken since a slot became free for it.
    called: bool,
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
    /// What the server may still send on the connection ([`CONNECTION_WINDOW`] at most).
    recv_window: i64,
    /// Streams with data waiting for window, in the order they blocked.
    blocked: VecDeque<u32>,
    /// Streams counting against `max_streams`, and who waits for one of them to end, in
    /// the order they came (their tickets increase from front to back).
    active: u32,
    waiting: VecDeque<Waiter>,
    last_ticket: u64,
    /// [`super::Connection`] handles alive.
    pub(super) handles: usize,
}

impl State {
    /// A new connection's state, its preface and settings waiting to be written.
    pub(super) fn new() -> Self {
        let mut out = Out::default();
        out.buf().extend_from_slice(codec::PREFACE);
        codec::put_settings(out.buf(), STREAM_WINDOW, super::task::MAX_HEADER_LIST as u32);
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
            recv_window: i64::from(CONNECTION_WINDOW),
            blocked: VecDeque::new(),
            active: 0,
            waiting: VecDeque::new(),
            last_ticket: 0,
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

    /// Why no stream may be opened any more, if so: the connection ended, the server is
    /// going away, or the stream ids are used up.
    fn refusal(&self) -> Option<Error> {
        if let Some(e) = &self.closed {
            Some(e.clone())
        } else if let Some((_, e)) = &self.go_away {
            Some(e.clone())
        } else if self.next_id > MAX_STREAM_ID {
            Some(Error::Closed("connection: its stream ids are used up"))
        } else {
            None
        }
    }

    /// Ready when a stream may be opened. While the server's limit on concurrent streams
    /// leaves no room, callers wait in line, first come first served: `ticket` (0 for one
    /// not in line) holds the caller's place, and is 0 again once it is ready or failed.
    /// One that came later never goes first, so none waits for ever behind those that
    /// keep coming.
    pub(super) fn poll_ready(
        &mut self,
        cx: &Context<'_>,
        ticket: &mut u64,
    ) -> Poll<Result<(), Error>> {
        let failed = self.refusal();
        if let Some(e) = failed {
            self.leave(std::mem::take(ticket));
            return Poll::Ready(Err(e));
        }
        let free = self.max_streams.saturating_sub(self.active) as usize;
        let place = match *ticket {
            0 => None,
            mine => self.waiting.binary_search_by_key(&mine, |w| w.ticket).ok(),
        };
        match place {
            None if free > 0 && self.waiting.is_empty() => {}
            Some(at) if at < free => {
                self.waiting.remove(at);
            }
            Some(at) => {
                let waiter = &mut self.waiting[at];
                if !waiter.waker.will_wake(cx.waker()) {
                    waiter.waker = cx.waker().clone();
                }
                waiter.called = false;
                return Poll::Pending;
            }
            None => {
                self.last_ticket += 1;
                *ticket = self.last_ticket;
                let waker = cx.waker().clone();
                self.waiting.push_back(Waiter { ticket: *ticket, waker, called: false });
                return Poll::Pending;
            }
        }
        *ticket = 0;
        // The slot is the caller's until it opens its stream or lets the slot go.
        self.active += 1;
        Poll::Ready(Ok(()))
    }

    /// A slot [`State::poll_ready`] gave was let go without a stream.
    pub(super) fn unreserve(&mut self) {
        self.active -= 1;
    }

    /// The caller holding `ticket` (0: none) no longer waits for a stream slot.
    pub(super) fn leave(&mut self, ticket: u64) {
        if ticket == 0 {
            return;
        }
        if let Ok(at) = self.waiting.binary_search_by_key(&ticket, |w| w.ticket) {
            self.waiting.remove(at);
        }
    }

    /// The waker of the first waiter for a stream slot that a slot is free for and that
    /// was not called yet. A stream ending or a waiter leaving frees one place at a time,
    /// so each calls the one waiter it lets in; the task calls them all after what it
    /// read, which may free many.
    pub(super) fn call_waiter(&mut self) -> Option<Waker> {
        if self.waiting.is_empty() {
            return None;
        }
        let free = self.max_streams.saturating_sub(self.active) as usize;
        let waiter = self.waiting.iter_mut().take(free).find(|w| !w.called)?;
        waiter.called = true;
        Some(waiter.waker.clone())
    }

    /// Opens a stream: writes its HEADERS (ending it when `end`), in a slot
    /// [`State::poll_ready`] gave (`reserved`, which it lets go if it fails) or in a new one.
    pub(super) fn open(
        &mut self,
        head: &RequestHead<'_>,
        full: bool,
        end: bool,
        reserved: bool,
    ) -> Result<u32, Error> {
        let failed = self.refusal();
        if let Some(e) = failed {
            if reserved {
                self.unreserve();
            }
            return Err(e);
        }
        let id = self.next_id;
        self.next_id += 2;
        codec::put_headers(self.out.buf(), id, head, end, self.max_frame);
        let stream = Stream {
            full,
            send_window: self.initial_window,
            recv_window: i64::from(STREAM_WINDOW),
            send_closed: end,
            refs: if full { 2 } else { 1 },
            counted: true,
            ..Stream::default()
        };
        self.streams.insert(id, stream);
        if !reserved {
            self.active += 1;
        }
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
            } else if !send {
                // Nobody reads what comes on now: what it holds, and all that comes after,
                // goes back to the connection's window at once (else a few such streams,
                // their bodies kept going by a pump, would take the whole window; h2's
                // issue 648).
                s.reader_gone = true;
                s.waker = None;
                let unread = s.data.len() as u32;
                s.data = Chunks::None;
                if unread > 0 && self.closed.is_none() {
                    self.consumed(unread);
                }
            }
            return;
        }
        let ended = s.error.is_some() || (s.end && s.send_closed && s.queued.is_empty());
        // What the reader never took is given back to the connection's window as if it had
        // been read: otherwise every stream abandoned with data shrinks a pooled
        // connection's window for good, until the server can send nothing more.
        let unread = s.data.len() as u32;
        if !ended && self.closed.is_none() {
            codec::put_reset(self.out.buf(), id, codec::CANCEL);
        }
        if unread > 0 && self.closed.is_none() {
            self.consumed(unread);
        }
        self.settle_removed(id);
    }

    fn settle_removed(&mut self, id: u32) {
        if let Some(s) = self.streams.remove(&id)
            && s.counted
        {
            self.active -= 1;
        }
    }

    fn register(s: &mut Stream, cx: &Context<'_>) {
        match &s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => s.waker = Some(cx.waker().clone()),
        }
    }

    fn stream(&mut self, id: u32) -> Result<&mut Stream, Error> {
        let missing = self.missing();
        self.streams.get_mut(&id).ok_or(missing)
    }

    /// Why a stream's handle finds it gone.
    fn missing(&self) -> Error {
        self.closed.clone().unwrap_or(Error::Closed("stream: already ended"))
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
        let Some(s) = self.streams.get_mut(&id) else {
            return Poll::Ready(Some(Err(self.missing())));
        };
        if let Some(chunk) = s.data.pop() {
            let taken = chunk.len() as u32;
            let open = !s.end && s.error.is_none();
            give_back(&mut self.out, id, s, taken, open);
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
            self.recv_window += i64::from(self.unacked);
            self.unacked = 0;
        }
    }

    // ===== what the task does with the frames it reads =====

    /// Whether stream `id` (not 0) is idle: one this client never opened (RFC 9113 5.1;
    /// the server opens none, as push is off).
    fn idle(&self, id: u32) -> bool {
        id.is_multiple_of(2) || id >= self.next_id
    }

    /// Checks that a frame other than HEADERS or DATA may come on stream `id` (not 0):
    /// any frame on an idle stream is a connection error.
    pub(super) fn check_known(&self, id: u32, kind: &str) -> Result<(), Error> {
        if self.idle(id) {
            return Err(Error::protocol(format!("{kind} on stream {id}, never opened")));
        }
        Ok(())
    }

    /// Checks that HEADERS or DATA may come on stream `id` (not 0): not on an idle stream,
    /// nor after the server ended the stream (STREAM_CLOSED; RFC 9113 5.1 allows a stream
    /// error there, and 5.4.1 a connection error in its place). Frames on a stream this
    /// client failed or reset, or gave up, are dropped: the server may have sent them
    /// before it knew.
    pub(super) fn check_incoming(&self, id: u32, kind: &str) -> Result<(), Error> {
        self.check_known(id, kind)?;
        match self.streams.get(&id) {
            Some(s) if s.end && s.error.is_none() => Err(Error::connection(
                codec::STREAM_CLOSED,
                format!("{kind} on stream {id} after its end"),
            )),
            _ => Ok(()),
        }
    }

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
            Err(malformed) => return self.fail_stream(id, codec::PROTOCOL_ERROR, malformed, wake),
        };
        if !s.got_head {
            s.got_head = true;
            if meta.status.is_none() {
                let error = Error::malformed("response without :status");
                return self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
            }
            s.head = Some(meta);
        } else if end {
            s.trailers = Some(meta);
        } else {
            let error = Error::malformed("headers after the head");
            return self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
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
    /// Past what the windows allow, it fails the connection (FLOW_CONTROL_ERROR): a server
    /// that ignored them could make the client hold any amount for a reader that does not
    /// read.
    pub(super) fn received_data(
        &mut self,
        id: u32,
        data: Bytes,
        len: usize,
        end: bool,
        wake: &mut Vec<Waker>,
    ) -> Result<(), Error> {
        let flow = |window| {
            let what = format!("DATA of {len} bytes past the {window} window");
            Err(Error::connection(codec::FLOW_CONTROL_ERROR, what))
        };
        if len as i64 > self.recv_window {
            return flow("connection's");
        }
        self.recv_window -= len as i64;
        let padding = (len - data.len()) as u32;
        let Some(s) = self.streams.get_mut(&id) else {
            self.consumed(len as u32);
            return Ok(());
        };
        if s.error.is_some() || s.end {
            self.consumed(len as u32);
            return Ok(());
        }
        if len as i64 > s.recv_window {
            return flow("stream's");
        }
        s.recv_window -= len as i64;
        if s.reader_gone {
            s.end |= end;
            self.consumed(len as u32);
            if end {
                self.settle(id);
            }
            return Ok(());
        }
        // Padding is given back at once, to the stream's window as to the connection's: it
        // is never read, and a server sending padding alone would otherwise use up the
        // stream's window for good.
        give_back(&mut self.out, id, s, padding, !end);
        if !s.got_head {
            self.consumed(len as u32);
            let error = Error::malformed("DATA before the head");
            self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
            return Ok(());
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
        Ok(())
    }

    /// Fails stream `id` for what the server sent on it, resetting it with `code`.
    pub(super) fn fail_stream(&mut self, id: u32, code: u32, error: Error, wake: &mut Vec<Waker>) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        codec::put_reset(self.out.buf(), id, code);
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
        let settings = codec::settings(payload).ok_or_else(|| {
            let what = format!("SETTINGS of {} bytes", payload.len());
            Error::connection(codec::FRAME_SIZE_ERROR, what)
        })?;
        let too_large = |what: String| Error::connection(codec::FLOW_CONTROL_ERROR, what);
        for (id, value) in settings {
            match id {
                codec::SETTINGS_ENABLE_PUSH if value != 0 => {
                    return Err(Error::protocol(format!("SETTINGS_ENABLE_PUSH of {value}")));
                }
                codec::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value > i32::MAX as u32 {
                        return Err(too_large(format!("initial window of {value} bytes")));
                    }
                    let delta = i64::from(value) - self.initial_window;
                    self.initial_window = i64::from(value);
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                        if s.send_window > i64::from(i32::MAX) {
                            return Err(too_large("a stream's window over 2^31-1".to_owned()));
                        }
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
                // Waiters it lets in are called by the task, after the frames it read.
                codec::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = value,
                // HEADER_TABLE_SIZE: no dynamic table is used to encode. The rest does not
                // concern a client.
                _ => {}
            }
        }
        codec::put_settings_ack(self.out.buf());
        Ok(())
    }

    /// A WINDOW_UPDATE for stream `id` (0: the connection). Of 0 bytes, or taking a
    /// window past 2^31-1, it fails the stream, or the connection (RFC 9113 6.9).
    pub(super) fn received_window(
        &mut self,
        id: u32,
        increment: u32,
        wake: &mut Vec<Waker>,
    ) -> Result<(), Error> {
        let increment = i64::from(increment);
        if id == 0 {
            if increment == 0 {
                return Err(Error::protocol("WINDOW_UPDATE of 0 bytes"));
            }
            self.send_window += increment;
            if self.send_window > i64::from(i32::MAX) {
                let what = "connection window over 2^31-1";
                return Err(Error::connection(codec::FLOW_CONTROL_ERROR, what));
            }
            self.unblock();
            return Ok(());
        }
        self.check_known(id, "WINDOW_UPDATE")?;
        let Some(s) = self.streams.get_mut(&id) else { return Ok(()) };
        if s.error.is_some() {
            return Ok(());
        }
        if increment == 0 {
            let error = Error::malformed("WINDOW_UPDATE of 0 bytes");
            self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
            return Ok(());
        }
        if s.send_window + increment > i64::from(i32::MAX) {
            let error = Error::malformed("stream window over 2^31-1");
            self.fail_stream(id, codec::FLOW_CONTROL_ERROR, error, wake);
            return Ok(());
        }
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
        wake.extend(self.waiting.drain(..).map(|w| w.waker));
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

    /// The bytes of DATA held for readers: the most one stream holds, and all together.
    #[cfg(test)]
    pub(super) fn buffered(&self) -> (usize, usize) {
        let each = self.streams.values().map(|s| s.data.len());
        each.fold((0, 0), |(most, all), n| (most.max(n), all + n))
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
        wake.extend(self.waiting.drain(..).map(|w| w.waker));
        self.blocked.clear();
    }
}

/// `n` bytes of stream `id`'s window were used up and may be given back: once half the
/// window is owed, in one WINDOW_UPDATE, while the server may still send (`open`).
fn give_back(out: &mut Out, id: u32, s: &mut Stream, n: u32, open: bool) {
    s.unacked += n;
    if open && s.unacked >= STREAM_WINDOW / 2 {
        let increment = std::mem::take(&mut s.unacked);
        s.recv_window += i64::from(increment);
        codec::put_window_update(out.buf(), id, increment);
    }
}
