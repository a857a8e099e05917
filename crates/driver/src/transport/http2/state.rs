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

mod received;

/// The window each stream advertises: large, so that 1 MB values are not throttled.
pub(super) const STREAM_WINDOW: u32 = 8 << 20;
/// The connection's window.
pub(super) const CONNECTION_WINDOW: u32 = 32 << 20;
/// What a stream's sending half may queue for want of window before it waits
/// ([`State::poll_send`]): without a bound, a body pumped to a server that does not read
/// would be held whole.
pub(super) const SEND_BUFFER: usize = 1 << 20;
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
    /// Sending halves whose queues the windows let go, to wake ([`SEND_BUFFER`]).
    sending: Vec<Waker>,
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
            sending: Vec::new(),
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
        // Once the ids are used up, none will get a slot: each is told in turn, to dial
        // again, rather than wait for streams to end.
        let free = match self.next_id > MAX_STREAM_ID {
            true => usize::MAX,
            false => self.max_streams.saturating_sub(self.active) as usize,
        };
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

    /// Ready when stream `id`'s sending half may queue more: what it queued for want of
    /// window is under [`SEND_BUFFER`]; or the body can no longer be sent (the error).
    pub(super) fn poll_send(&mut self, id: u32, cx: &Context<'_>) -> Poll<Result<(), Error>> {
        if let Err(e) = self.check_send(id) {
            return Poll::Ready(Err(e));
        }
        let Some(s) = self.streams.get_mut(&id) else { return Poll::Ready(Err(self.missing())) };
        if s.queued_len() < SEND_BUFFER {
            return Poll::Ready(Ok(()));
        }
        match &s.send_waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => s.send_waker = Some(cx.waker().clone()),
        }
        Poll::Pending
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
        // What went makes room for its sending half (woken by the task, after the frame).
        self.sending.extend(s.send_waker.take());
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

    /// Uses the stream ids up to `next` (the next one opened).
    #[cfg(test)]
    pub(super) fn skip_ids(&mut self, next: u32) {
        self.next_id = next;
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
            s.wake_both(wake);
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
