//! What the connection's task hands its state of the frames it reads: heads and trailers,
//! DATA, resets, settings, window updates, GOAWAYs, each checked as RFC 9113 says.

use std::task::Waker;

use bytes::Bytes;

use super::super::codec;
use super::super::{Error, Meta};
use super::{State, give_back};

impl State {
    /// Whether stream `id` (not 0) is idle: one this client never opened (RFC 9113 5.1;
    /// the server opens none, as push is off).
    fn idle(&self, id: u32) -> bool {
        id.is_multiple_of(2) || id >= self.next_id
    }

    /// Checks that a frame other than HEADERS or DATA may come on stream `id` (not 0):
    /// any frame on an idle stream is a connection error.
    pub(in super::super) fn check_known(&self, id: u32, kind: &str) -> Result<(), Error> {
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
    pub(in super::super) fn check_incoming(&self, id: u32, kind: &str) -> Result<(), Error> {
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
    pub(in super::super) fn received_meta(
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
        let malformed = |what| Error::malformed(what);
        if !s.got_head {
            let error = match meta.status {
                None => malformed("response without :status"),
                // 101 has no place in HTTP/2 (RFC 9113 8.6).
                Some(http::StatusCode::SWITCHING_PROTOCOLS) => malformed("a 101 response"),
                // An informational head: the final one follows (8.1).
                Some(status) if status.is_informational() && !end => return,
                Some(status) if status.is_informational() => {
                    malformed("an informational head ending the stream")
                }
                Some(_) => {
                    s.got_head = true;
                    s.head = Some(meta);
                    return self.received_end(id, end, wake);
                }
            };
            return self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
        } else if end {
            if meta.status.is_some() {
                let error = malformed("trailers with :status");
                return self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
            }
            s.trailers = Some(meta);
        } else {
            let error = Error::malformed("headers after the head");
            return self.fail_stream(id, codec::PROTOCOL_ERROR, error, wake);
        }
        self.received_end(id, end, wake);
    }

    /// Stream `id` received its head or trailers, ending it when `end`: its reader is woken.
    fn received_end(&mut self, id: u32, end: bool, wake: &mut Vec<Waker>) {
        let Some(s) = self.streams.get_mut(&id) else { return };
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
    pub(in super::super) fn received_data(
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

    /// A stream error of `code` on stream `id` (not 0) for a frame that may come on any
    /// stream: the stream fails; on one never opened, which cannot be reset, the
    /// connection does.
    pub(in super::super) fn stream_error(
        &mut self,
        id: u32,
        code: u32,
        what: &'static str,
        wake: &mut Vec<Waker>,
    ) -> Result<(), Error> {
        if self.idle(id) {
            return Err(Error::connection(code, format!("{what}, on stream {id} never opened")));
        }
        if self.streams.get(&id).is_some_and(|s| s.error.is_none()) {
            self.fail_stream(id, code, Error::malformed(what), wake);
        }
        Ok(())
    }

    /// Fails stream `id` for what the server sent on it, resetting it with `code`.
    pub(in super::super) fn fail_stream(
        &mut self,
        id: u32,
        code: u32,
        error: Error,
        wake: &mut Vec<Waker>,
    ) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        codec::put_reset(self.out.buf(), id, code);
        s.error = Some(error);
        s.queued.clear();
        s.wake_both(wake);
        self.settle(id);
    }

    /// The server reset stream `id` with `code`. After its whole answer, that only stops
    /// the request's body: a server that answered before the request ended says so with
    /// `NO_ERROR` (RFC 9113 8.1; grpc-go does when etcd-client's request body ends after
    /// the answer), and the answer stands.
    pub(in super::super) fn received_reset(&mut self, id: u32, code: u32, wake: &mut Vec<Waker>) {
        let Some(s) = self.streams.get_mut(&id) else { return };
        if s.end {
            s.send_closed = true;
        } else if s.error.is_none() {
            s.error = Some(Error::Reset(code));
        }
        s.queued.clear();
        s.wake_both(wake);
        self.settle(id);
    }

    /// The server's SETTINGS.
    pub(in super::super) fn received_settings(
        &mut self,
        payload: &[u8],
        wake: &mut Vec<Waker>,
    ) -> Result<(), Error> {
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
        wake.append(&mut self.sending);
        codec::put_settings_ack(self.out.buf());
        Ok(())
    }

    /// A WINDOW_UPDATE for stream `id` (0: the connection). Of 0 bytes, or taking a
    /// window past 2^31-1, it fails the stream, or the connection (RFC 9113 6.9).
    pub(in super::super) fn received_window(
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
            wake.append(&mut self.sending);
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
        wake.append(&mut self.sending);
        Ok(())
    }

    /// The server is going away: streams after `last` were not served and fail; no new one
    /// opens.
    pub(in super::super) fn received_go_away(
        &mut self,
        last: u32,
        error: Error,
        wake: &mut Vec<Waker>,
    ) {
        let last = self.go_away.as_ref().map_or(last, |(l, _)| last.min(*l));
        for (id, s) in &mut self.streams {
            if *id > last && s.error.is_none() {
                s.error = Some(error.clone());
                s.queued.clear();
                s.wake_both(wake);
            }
        }
        let ids: Vec<u32> = self.streams.keys().copied().filter(|id| *id > last).collect();
        for id in ids {
            self.settle(id);
        }
        wake.extend(self.waiting.drain(..).map(|w| w.waker));
        self.go_away = Some((last, error));
    }
}
