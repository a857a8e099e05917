//! The connection's task: reads frames and hands them to their streams, writes what the
//! streams queued, holds PING acknowledgements, and pings while streams are open.

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use http::header::HeaderName;
use http::{HeaderValue, StatusCode};
use tokio::io::AsyncWrite;
use tokio::time::{Instant, Sleep};

use super::codec::{self, Block, DEFAULT_MAX_FRAME, HEADER_LEN, Head};
use super::hpack::{self, Decoder};
use super::out::Out;
use super::{Error, Meta, Shared};
use crate::transport::io::Io;

/// A PING acknowledgement goes with the first bytes written once it is this old: etcd's
/// pings here estimate bandwidth, it has one outstanding at a time and sends the next with
/// the next request it receives after the acknowledgement, so acknowledging at once made
/// one ping, and one more wake-up of the client, per request.
const PONG_RIPE: Duration = Duration::from_millis(2);
/// The longest a PING acknowledgement waits for something to go with.
const PONG_HOLD: Duration = Duration::from_millis(5);

/// Ping interval while streams are open. etcd closes connections that ping more often
/// than its `--grpc-keepalive-min-time` (5 s by default) or that ping with no stream open.
pub(super) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// A connection whose ping is not answered within this long is closed; its streams fail
/// with `Unavailable` instead of hanging on a dead or frozen member.
pub(super) const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// What a read reserves at least: a burst of small answers in one `recvfrom`.
const READ: usize = 4 * 1024;
/// A read buffer that grew past this is dropped once empty.
const KEEP_READ: usize = 64 * 1024;
/// The largest header block accepted (head or trailers).
const MAX_HEADER_BLOCK: usize = 1 << 20;
/// The most a head or trailers may hold, counted as RFC 9113 counts a header list (names,
/// values and 32 bytes a field), advertised as SETTINGS_MAX_HEADER_LIST_SIZE: a block's
/// fields can repeat dynamic-table entries of up to 4 KiB for one byte each.
pub(super) const MAX_HEADER_LIST: usize = 64 * 1024;
/// At most this many slices go to one `writev`.
const MAX_SLICES: usize = 64;
/// Reading stops while the answers it owes the server (PING and SETTINGS
/// acknowledgements) and could not write reach this: a server that floods them and reads
/// nothing would otherwise make the client hold an answer for every one. A server that
/// reads owes the client a few at a time.
const MAX_OWED: usize = 64 * 1024;

/// The future that runs a connection (module docs).
pub(crate) struct Task {
    shared: Arc<Shared>,
    io: Io,
    read: BytesMut,
    decoder: Decoder,
    /// A header block whose CONTINUATION frames are still to come.
    block: Option<Block>,
    /// Taken from the state, being written: `writing[written..]` is left.
    writing: Out,
    written: usize,
    /// Streams to wake once the lock is released.
    wake: Vec<Waker>,
    /// PING acknowledgements held, since when, and their deadline.
    pongs: Vec<u8>,
    pongs_since: Option<Instant>,
    pong: Option<Pin<Box<Sleep>>>,
    /// The next keepalive, or the deadline of the ping sent.
    keepalive: Pin<Box<Sleep>>,
    ping: Option<[u8; 8]>,
    pings: u64,
    /// Bytes of answers owed the server since all was last written ([`MAX_OWED`]).
    owed: usize,
    /// The connection has nothing left to do, as the last take of what to write found it
    /// (a change after that wakes the task, whose waker was left in the same lock).
    done: bool,
    /// [`KEEPALIVE_INTERVAL`] and [`KEEPALIVE_TIMEOUT`] (shorter in tests).
    interval: Duration,
    timeout: Duration,
}

impl Task {
    pub(super) fn new(shared: Arc<Shared>, io: Io) -> Self {
        Self::with_keepalive(shared, io, KEEPALIVE_INTERVAL, KEEPALIVE_TIMEOUT)
    }

    /// A task that pings every `interval` while streams are open, and gives up on a ping
    /// after `timeout`.
    pub(super) fn with_keepalive(
        shared: Arc<Shared>,
        io: Io,
        interval: Duration,
        timeout: Duration,
    ) -> Self {
        Self {
            shared,
            io,
            read: BytesMut::new(),
            decoder: Decoder::new(hpack::DEFAULT_TABLE_SIZE),
            block: None,
            writing: Out::default(),
            written: 0,
            wake: Vec::new(),
            pongs: Vec::new(),
            pongs_since: None,
            pong: None,
            keepalive: Box::pin(tokio::time::sleep(interval)),
            ping: None,
            pings: 0,
            owed: 0,
            done: false,
            interval,
            timeout,
        }
    }

    fn wake_all(&mut self) {
        for w in self.wake.drain(..) {
            w.wake();
        }
    }

    /// Reads until the socket has nothing more, handing each frame to its stream; or until
    /// the answers it owes reach [`MAX_OWED`] (then the socket is not asked to wake the
    /// task for reading: [`Task::poll_run`] reads on once they are written).
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        loop {
            if self.owed >= MAX_OWED {
                return Poll::Ready(Ok(()));
            }
            if self.read.capacity() - self.read.len() < READ / 4 {
                if self.read.is_empty() && self.read.capacity() > KEEP_READ {
                    self.read = BytesMut::new();
                }
                self.read.reserve(READ);
            }
            let n = match tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read)
            {
                Poll::Pending => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(n)) => n,
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(Err(Error::Io(format!("connection lost: {e}").into())));
                }
            };
            if n == 0 {
                let state = self.shared.lock();
                return Poll::Ready(if state.gone() {
                    Ok(())
                } else {
                    Err(Error::Io("connection closed by the server".into()))
                });
            }
            let result = self.frames();
            self.wake_all();
            result?;
        }
    }

    /// Handles every whole frame read, under one lock.
    fn frames(&mut self) -> Result<(), Error> {
        let Self {
            shared, read, decoder, block, wake, pongs, pongs_since, pong, ping, owed, ..
        } = self;
        let mut state = shared.lock();
        while let Some(head) = Head::peek(read) {
            if head.len > DEFAULT_MAX_FRAME {
                let what =
                    format!("a frame of {} bytes, over the {DEFAULT_MAX_FRAME} allowed", head.len);
                return Err(Error::connection(codec::FRAME_SIZE_ERROR, what));
            }
            if read.len() < HEADER_LEN + head.len {
                read.reserve(HEADER_LEN + head.len - read.len());
                return Ok(());
            }
            let mut payload = read.split_to(HEADER_LEN + head.len);
            payload.advance(HEADER_LEN);
            if block.is_some() && head.kind != codec::CONTINUATION {
                return Err(Error::protocol("a header block interrupted by another frame"));
            }
            match head.kind {
                codec::DATA => {
                    if head.stream == 0 {
                        return Err(Error::protocol("DATA on stream 0"));
                    }
                    state.check_incoming(head.stream, "DATA")?;
                    codec::unpad(head.flags, &mut payload)
                        .ok_or_else(|| Error::protocol("DATA with more padding than data"))?;
                    let end = head.flags & codec::END_STREAM != 0;
                    state.received_data(head.stream, payload.freeze(), head.len, end, wake)?;
                }
                codec::HEADERS => {
                    if head.stream == 0 {
                        return Err(Error::protocol("HEADERS on stream 0"));
                    }
                    state.check_incoming(head.stream, "HEADERS")?;
                    codec::header_fragment(head.flags, &mut payload).map_err(|code| {
                        Error::connection(code, "HEADERS shorter than its padding and priority")
                    })?;
                    let end = head.flags & codec::END_STREAM != 0;
                    if head.flags & codec::END_HEADERS != 0 {
                        let full = state.wants_all_fields(head.stream);
                        let meta = decode(decoder, full, &payload)?;
                        state.received_meta(head.stream, meta, end, wake);
                    } else {
                        *block = Some(Block::new(head.stream, end, &payload));
                    }
                }
                codec::CONTINUATION => {
                    let Some(open) = block.as_mut() else {
                        return Err(Error::protocol("CONTINUATION without HEADERS"));
                    };
                    if open.stream != head.stream {
                        return Err(Error::protocol("CONTINUATION on another stream"));
                    }
                    open.fragments.extend_from_slice(&payload);
                    if open.fragments.len() > MAX_HEADER_BLOCK {
                        let what = "a header block over 1 MiB";
                        return Err(Error::connection(codec::ENHANCE_YOUR_CALM, what));
                    }
                    if head.flags & codec::END_HEADERS != 0 {
                        let Some(done) = block.take() else { unreachable!("checked above") };
                        let (id, end) = (done.stream, done.end_stream);
                        let full = state.wants_all_fields(id);
                        // A large block is decoded with the lock released: the streams'
                        // readers and writers go on meanwhile.
                        drop(state);
                        let meta = decode(decoder, full, &done.fragments);
                        state = shared.lock();
                        state.received_meta(id, meta?, end, wake);
                    }
                }
                codec::RST_STREAM => {
                    let code = (payload.len() == 4)
                        .then(|| codec::u32_at(&payload, 0))
                        .flatten()
                        .ok_or_else(|| frame_size("RST_STREAM not of 4 bytes"))?;
                    if head.stream == 0 {
                        return Err(Error::protocol("RST_STREAM on stream 0"));
                    }
                    state.check_known(head.stream, "RST_STREAM")?;
                    state.received_reset(head.stream, code, wake);
                }
                codec::SETTINGS => {
                    if head.stream != 0 {
                        return Err(Error::protocol("SETTINGS on a stream"));
                    }
                    if head.flags & codec::ACK == 0 {
                        state.received_settings(&payload, wake)?;
                        *owed += HEADER_LEN;
                    } else if !payload.is_empty() {
                        return Err(frame_size("a SETTINGS acknowledgement with a payload"));
                    }
                }
                codec::PING => {
                    let Ok(data) = <[u8; 8]>::try_from(&payload[..]) else {
                        return Err(frame_size("PING not of 8 bytes"));
                    };
                    if head.stream != 0 {
                        return Err(Error::protocol("PING on a stream"));
                    }
                    if head.flags & codec::ACK != 0 {
                        if *ping == Some(data) {
                            *ping = None;
                        }
                    } else {
                        codec::put_ping(pongs, codec::ACK, data);
                        *owed += HEADER_LEN + data.len();
                        if pongs_since.is_none() {
                            let now = Instant::now();
                            *pongs_since = Some(now);
                            match pong {
                                Some(timer) => timer.as_mut().reset(now + PONG_HOLD),
                                None => *pong = Some(Box::pin(tokio::time::sleep(PONG_HOLD))),
                            }
                        }
                    }
                }
                codec::GOAWAY => {
                    let (Some(last), Some(code)) =
                        (codec::u31(&payload), codec::u32_at(&payload, 4))
                    else {
                        return Err(frame_size("GOAWAY shorter than 8 bytes"));
                    };
                    if head.stream != 0 {
                        return Err(Error::protocol("GOAWAY on a stream"));
                    }
                    let debug = String::from_utf8_lossy(&payload[8..]).into_owned();
                    state.received_go_away(last, Error::GoAway { code, debug: debug.into() }, wake);
                }
                codec::WINDOW_UPDATE => {
                    let increment = (payload.len() == 4)
                        .then(|| codec::u31(&payload))
                        .flatten()
                        .ok_or_else(|| frame_size("WINDOW_UPDATE not of 4 bytes"))?;
                    state.received_window(head.stream, increment, wake)?;
                }
                codec::PRIORITY_FRAME => {
                    if head.stream == 0 {
                        return Err(Error::protocol("PRIORITY on stream 0"));
                    }
                    // Priorities are not acted on, but a PRIORITY must be well formed (RFC
                    // 9113 6.3, 5.3.1).
                    match (payload.len() == 5).then(|| codec::u31(&payload)).flatten() {
                        None => {
                            let what = "PRIORITY not of 5 bytes";
                            state.stream_error(head.stream, codec::FRAME_SIZE_ERROR, what, wake)?;
                        }
                        Some(on) if on == head.stream => {
                            let what = "PRIORITY of a stream on itself";
                            state.stream_error(head.stream, codec::PROTOCOL_ERROR, what, wake)?;
                        }
                        Some(_) => {}
                    }
                }
                codec::PUSH_PROMISE => {
                    return Err(Error::protocol("PUSH_PROMISE, though push is disabled"));
                }
                // Types this client does not know: ignored, as RFC 9113 says.
                _ => {}
            }
        }
        Ok(())
    }

    /// Takes what the streams queued and writes it, with held acknowledgements when ripe.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        loop {
            if self.written == self.writing.len() {
                self.writing.clear();
                self.written = 0;
            }
            {
                let mut state = self.shared.lock();
                self.writing.append(&mut state.out);
                match &state.task {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => state.task = Some(cx.waker().clone()),
                }
                self.done = state.finished() || state.gone();
                // Who waits for a stream slot that what was read freed (streams ended, a
                // larger limit).
                while let Some(waiter) = state.call_waiter() {
                    self.wake.push(waiter);
                }
            }
            self.wake_all();
            self.ripen(cx);
            if self.written == self.writing.len() {
                if self.pongs.is_empty() {
                    self.owed = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            let count = self.writing.slices(self.written, &mut slices);
            let n = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..count]))
                .map_err(|e| Error::Io(format!("connection lost: {e}").into()))?;
            if n == 0 {
                return Poll::Ready(Err(Error::Io("connection lost: write of zero".into())));
            }
            self.written += n;
        }
    }

    /// Moves held PING acknowledgements to what is written: with other bytes once ripe,
    /// alone at their deadline.
    fn ripen(&mut self, cx: &mut Context<'_>) {
        let Some(since) = self.pongs_since else { return };
        let expired = self.pong.as_mut().is_some_and(|p| p.as_mut().poll(cx).is_ready());
        let going = self.written < self.writing.len();
        // Reading waits for them once they are many: they go at once.
        let many = self.owed >= MAX_OWED;
        if expired || many || (going && since.elapsed() >= PONG_RIPE) {
            self.writing.buf().extend_from_slice(&self.pongs);
            self.pongs.clear();
            self.pongs_since = None;
        }
    }

    /// Pings every [`KEEPALIVE_INTERVAL`] while streams are open; fails when a ping goes
    /// unanswered for [`KEEPALIVE_TIMEOUT`].
    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> Result<(), Error> {
        while self.keepalive.as_mut().poll(cx).is_ready() {
            if self.ping.is_some() {
                return Err(Error::Closed("connection: keepalive ping unanswered"));
            }
            let now = Instant::now();
            let mut state = self.shared.lock();
            if state.streams.is_empty() {
                self.keepalive.as_mut().reset(now + self.interval);
                continue;
            }
            self.pings += 1;
            let data = self.pings.to_be_bytes();
            codec::put_ping(state.out.buf(), 0, data);
            self.ping = Some(data);
            self.keepalive.as_mut().reset(now + self.timeout);
        }
        if self.ping.is_none() && self.keepalive.deadline() > Instant::now() + self.interval {
            // The ping was answered: the next one comes an interval later.
            self.keepalive.as_mut().reset(Instant::now() + self.interval);
        }
        Ok(())
    }

    fn poll_run(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        loop {
            ready!(self.poll_read(cx))?;
            let paused = self.owed >= MAX_OWED;
            self.poll_keepalive(cx)?;
            let written = self.poll_write(cx)?;
            if written.is_ready() && self.done {
                return Poll::Ready(Ok(()));
            }
            // Reading stopped for the answers owed, and they are written: read on (the
            // socket was not asked to wake the task for it).
            if !(paused && written.is_ready()) {
                return Poll::Pending;
            }
        }
    }
}

/// A frame of a size its type does not allow (RFC 9113 4.2).
fn frame_size(what: &'static str) -> Error {
    Error::connection(codec::FRAME_SIZE_ERROR, what)
}

/// Decodes a header block for a stream, keeping only gRPC's status fields unless `full`.
/// Blocks of streams that are gone are decoded all the same: HPACK's table depends on every
/// block. A block HPACK cannot decode ends the connection with COMPRESSION_ERROR (RFC 9113
/// 4.3: the outer error); a header list over [`MAX_HEADER_LIST`], or fields that HTTP does
/// not allow in a response, fail only the stream (8.1.1: the inner one). Fields the stream
/// does not keep are not checked, nor copied: once the list is over its limit, what is left
/// of the block is only decoded, so that one that repeats a 4 KiB table entry for each of
/// its bytes costs no more than its size.
fn decode(decoder: &mut Decoder, full: bool, block: &[u8]) -> Result<Result<Meta, Error>, Error> {
    let mut meta = Meta::default();
    let mut malformed = None;
    let mut list_len = 0;
    // A field other than a pseudo-header came.
    let mut fields = false;
    let decoded = decoder.decode(block, |name, value| {
        if malformed.is_some() {
            return;
        }
        list_len += name.len() + value.len() + 32;
        if list_len > MAX_HEADER_LIST {
            malformed = Some("a header list over 64 KiB");
            return;
        }
        if let Some(pseudo) = name.strip_prefix(b":") {
            // RFC 9113 8.3: one :status, before every field.
            match (pseudo, StatusCode::from_bytes(value)) {
                _ if fields => malformed = Some("a pseudo-header after a field"),
                (b"status", _) if meta.status.is_some() => malformed = Some("a repeated :status"),
                (b"status", Ok(status)) => meta.status = Some(status),
                (b"status", Err(_)) => malformed = Some("a :status that is not a status code"),
                _ => malformed = Some("a pseudo-header that responses do not have"),
            }
            return;
        }
        fields = true;
        let grpc = matches!(name, b"grpc-status" | b"grpc-message");
        if !grpc && !full {
            return;
        }
        let Some(value) = header_value(value) else {
            malformed = Some("a field value with bytes HTTP does not allow");
            return;
        };
        if full {
            let Ok(header) = HeaderName::from_lowercase(name) else {
                malformed = Some("a field name HTTP does not allow");
                return;
            };
            if meta.headers.try_append(header, value.clone()).is_err() {
                malformed = Some("a header list over 64 KiB");
                return;
            }
        }
        match name {
            b"grpc-status" => meta.grpc_status = Some(value),
            b"grpc-message" => meta.grpc_message = Some(value),
            _ => {}
        }
    });
    if let Err(e) = decoded {
        let what = format!("undecodable header block: {e}");
        return Err(Error::connection(codec::COMPRESSION_ERROR, what));
    }
    Ok(malformed.map_or(Ok(meta), |m| Err(Error::malformed(m))))
}

/// `value` as a header value: gRPC's usual ones without allocating.
fn header_value(value: &[u8]) -> Option<HeaderValue> {
    match value {
        b"0" => Some(HeaderValue::from_static("0")),
        b"" => Some(HeaderValue::from_static("")),
        _ => HeaderValue::from_bytes(value).ok(),
    }
}

impl Drop for Task {
    /// A task dropped before its end (its runtime shut down, or it was aborted) ends the
    /// connection all the same: its streams and those waiting for a slot fail rather than
    /// wait for ever, and the channel dials again.
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        if state.closed.is_none() {
            state.close(Error::Closed("connection: its task was dropped"), &mut self.wake);
        }
        drop(state);
        self.wake_all();
    }
}

impl Future for Task {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let result = ready!(this.poll_run(cx));
        let error = match &result {
            Ok(()) => Error::Closed("connection: closed"),
            Err(e) => e.clone(),
        };
        // The server is told why before the connection closes (RFC 9113 5.4.1, 6.8): a
        // connection error's code, NO_ERROR for a graceful close or a keepalive given up
        // (as grpc-go's client says). The last stream it may have acted on is 0: servers
        // open none here.
        let code = match &error {
            Error::Protocol { code, .. } => Some(*code),
            Error::Io(_) => None,
            _ => Some(codec::NO_ERROR),
        };
        if let Some(code) = code {
            codec::put_go_away(this.shared.lock().out.buf(), 0, code);
        }
        if !matches!(error, Error::Io(_)) {
            // What the end queued (a GOAWAY saying why) goes out if the socket takes it now.
            let _ = this.poll_write(cx);
        }
        let mut state = this.shared.lock();
        state.close(error, &mut this.wake);
        drop(state);
        this.wake_all();
        Poll::Ready(result)
    }
}
