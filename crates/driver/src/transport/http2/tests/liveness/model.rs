//! The fuzzing peer's model of a connection: what each side sent, the windows each side
//! gave the other, and the settings the client acknowledged; every frame the client sends
//! is checked against it as it arrives.

use std::collections::{HashMap, VecDeque};

use tokio::net::tcp::OwnedWriteHalf;
use tokio::sync::mpsc;

use super::super::super::state::{CONNECTION_WINDOW, STREAM_WINDOW};
use super::super::super::{SendStream, codec};
use super::super::*;

/// How long the client has to answer a PING: past it, it stalled.
pub(super) const BOUND: Duration = Duration::from_secs(10);

/// RFC 9113's default window, the connection's before the client's first WINDOW_UPDATE.
const DEFAULT_WINDOW: i64 = 65_535;

/// What a flood of DATA carries.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fill {
    Data,
    /// Data, and 255 bytes of padding a frame.
    Padded,
    /// Padding alone, 256 bytes of the windows a frame that the reader never sees.
    Padding,
}

/// One call the client made, as the test and the peer saw it.
#[derive(Default)]
pub(super) struct Call {
    /// Its stream id, once the peer saw its HEADERS.
    pub id: Option<u32>,
    /// Read whenever something is there (else only when a step says so).
    pub eager: bool,
    pub send: Option<SendStream>,
    pub recv: Option<RecvStream>,
    /// Body bytes handed to the client.
    pub queued: usize,
    /// The test ended the body.
    pub body_end: bool,
    /// Body bytes the peer received.
    pub received: usize,
    /// The client ended its side (END_STREAM), or reset the stream.
    pub client_ended: bool,
    pub client_reset: bool,
    /// What the peer's windows let the client send on the stream.
    pub send_window: i64,
    /// What the peer sent: the head, the end of its side, a reset (before its end).
    pub head_sent: bool,
    pub peer_ended: bool,
    pub peer_reset: Option<u32>,
    /// The peer reset the stream after its end: the client stops sending the body.
    pub stopped: bool,
    /// What the client's stream window lets the peer send.
    pub credit: i64,
    /// Data bytes sent for the reader that it has not taken.
    pub unread: usize,
    /// The reader took the head; saw the end or an error.
    pub head_read: bool,
    pub finished: bool,
}

impl Call {
    /// Open as the peer sees it: neither side reset it, and not both ended it.
    pub fn open(&self) -> bool {
        self.id.is_some()
            && !self.client_reset
            && self.peer_reset.is_none()
            && !self.stopped
            && !(self.client_ended && self.peer_ended)
    }

    /// The peer may still send on it.
    pub fn peer_may_send(&self) -> bool {
        self.open() && !self.peer_ended
    }
}

/// The server's end, driven by the fuzzer's steps.
pub(super) struct Model {
    pub writer: OwnedWriteHalf,
    pub frames: mpsc::UnboundedReceiver<(Head, Bytes)>,
    pub calls: Vec<Call>,
    pub by_id: HashMap<u32, usize>,
    /// What the client's connection window lets the peer send.
    pub credit: i64,
    /// What the peer's connection window lets the client send.
    pub send_window: i64,
    /// Settings sent and not yet acknowledged, in order; `None`: a barrier's.
    pending: VecDeque<Option<Vec<(u16, u32)>>>,
    /// The settings in force: a rise from when it was sent (the client may use it as soon
    /// as it reads it), a fall from when the client acknowledged it.
    pub initial: i64,
    pub max_frame: usize,
    pub max_streams: u32,
    /// The peer sent a GOAWAY: the client may close the connection once its streams end.
    pub going_away: bool,
    /// The client closed the connection (after the GOAWAY): no more credit comes back.
    pub closed: bool,
    /// Barriers asked and passed.
    barriers: (u64, u64),
}

impl Model {
    pub fn new(writer: OwnedWriteHalf, frames: mpsc::UnboundedReceiver<(Head, Bytes)>) -> Self {
        Self {
            writer,
            frames,
            calls: Vec::new(),
            by_id: HashMap::new(),
            credit: DEFAULT_WINDOW,
            send_window: DEFAULT_WINDOW,
            // The empty SETTINGS of the handshake.
            pending: VecDeque::from([Some(Vec::new())]),
            initial: DEFAULT_WINDOW,
            max_frame: codec::DEFAULT_MAX_FRAME,
            max_streams: u32::MAX,
            going_away: false,
            closed: false,
            barriers: (0, 0),
        }
    }

    pub async fn write(&mut self, bytes: &[u8]) {
        let written = self.writer.write_all(bytes).await;
        assert!(written.is_ok() || self.going_away, "the client reads: {written:?}");
    }

    /// Streams open as the peer sees them.
    pub fn open_streams(&self) -> usize {
        self.calls.iter().filter(|c| c.open()).count()
    }

    /// Sends an empty SETTINGS and takes every frame the client sent before its
    /// acknowledgement: everything the client did with what came before it. (Not a PING:
    /// the client holds their acknowledgements a few milliseconds.)
    pub async fn barrier(&mut self) {
        self.barriers.0 += 1;
        self.write(&settings(&[])).await;
        self.pending.push_back(None);
        while self.barriers.1 < self.barriers.0 {
            let next = tokio::time::timeout(BOUND, self.frames.recv()).await;
            let next = next.unwrap_or_else(|_| panic!("stall: no answer within {BOUND:?}"));
            let Some((head, body)) = next else {
                // Closed, which only a GOAWAY allows: all it sent was taken.
                assert!(self.going_away, "the client closed the connection to a lawful server");
                self.closed = true;
                return;
            };
            self.take(&head, &body);
        }
    }

    /// One frame from the client, checked against the peer's settings and windows.
    fn take(&mut self, head: &Head, payload: &[u8]) {
        let end = head.flags & codec::END_STREAM != 0;
        match head.kind {
            codec::HEADERS => {
                let at = self.by_id.len();
                assert!(at < self.calls.len(), "HEADERS of stream {} not opened", head.stream);
                assert!(!self.by_id.contains_key(&head.stream), "stream {} again", head.stream);
                self.by_id.insert(head.stream, at);
                let call = &mut self.calls[at];
                call.id = Some(head.stream);
                call.send_window = self.initial;
                call.credit = i64::from(STREAM_WINDOW);
                call.client_ended = end;
                let open = self.open_streams();
                assert!(
                    open as u64 <= u64::from(self.max_streams),
                    "stream {} opened with {open} open, past the server's limit of {}",
                    head.stream,
                    self.max_streams
                );
            }
            codec::DATA => {
                let len = head.len;
                assert!(len <= self.max_frame, "DATA of {len} bytes, past {}", self.max_frame);
                let call = self.call(head.stream);
                assert!(!call.client_ended, "DATA on stream {} after its end", head.stream);
                assert!(!call.client_reset, "DATA on stream {} after its reset", head.stream);
                call.send_window -= len as i64;
                call.received += len;
                call.client_ended = end;
                let stream_window = call.send_window;
                self.send_window -= len as i64;
                // An empty DATA (the body's end) needs no window, and a window shrunk by
                // SETTINGS may be below 0.
                assert!(
                    len == 0 || (stream_window >= 0 && self.send_window >= 0),
                    "DATA of {len} bytes on stream {} past the server's windows ({stream_window} \
                     left of the stream's, {} of the connection's)",
                    head.stream,
                    self.send_window
                );
            }
            codec::WINDOW_UPDATE => {
                let n = i64::from(codec::u31(payload).expect("4 bytes"));
                assert!(n > 0, "WINDOW_UPDATE of 0 on stream {}", head.stream);
                match head.stream {
                    0 => self.credit += n,
                    id => self.call(id).credit += n,
                }
                assert!(
                    self.credit <= i64::from(CONNECTION_WINDOW),
                    "the client gave back more than it consumed"
                );
            }
            codec::SETTINGS if head.flags & codec::ACK != 0 => {
                let acked = self.pending.pop_front().expect("an ACK of SETTINGS sent");
                let Some(settings) = acked else {
                    self.barriers.1 += 1;
                    return;
                };
                self.apply(&settings);
            }
            codec::RST_STREAM => self.call(head.stream).client_reset = true,
            codec::GOAWAY => {
                let code = codec::u32_at(payload, 4);
                assert!(
                    self.going_away && code == Some(codec::NO_ERROR),
                    "GOAWAY sent to a lawful server: {payload:?}"
                );
            }
            // Keepalive pings, the client's own SETTINGS.
            _ => {}
        }
    }

    /// Puts `settings` in force.
    fn apply(&mut self, settings: &[(u16, u32)]) {
        for &(id, value) in settings {
            match id {
                codec::SETTINGS_INITIAL_WINDOW_SIZE => {
                    let delta = i64::from(value) - self.initial;
                    self.initial = i64::from(value);
                    for call in self.calls.iter_mut().filter(|c| c.id.is_some()) {
                        call.send_window += delta;
                    }
                }
                codec::SETTINGS_MAX_FRAME_SIZE => self.max_frame = value as usize,
                codec::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = value,
                _ => {}
            }
        }
    }

    /// Puts in force at once those of `settings` that raise a limit.
    fn raise(&mut self, settings: &[(u16, u32)]) {
        let rises = settings.iter().filter(|&&(id, value)| match id {
            codec::SETTINGS_INITIAL_WINDOW_SIZE => i64::from(value) > self.initial,
            codec::SETTINGS_MAX_FRAME_SIZE => value as usize > self.max_frame,
            codec::SETTINGS_MAX_CONCURRENT_STREAMS => value > self.max_streams,
            _ => false,
        });
        let rises: Vec<_> = rises.copied().collect();
        self.apply(&rises);
    }

    fn call(&mut self, id: u32) -> &mut Call {
        let at = *self.by_id.get(&id).unwrap_or_else(|| panic!("a frame on stream {id}"));
        &mut self.calls[at]
    }

    /// What may go on call `at` now: the smaller of its window and the connection's.
    pub fn room(&self, at: usize) -> usize {
        self.credit.min(self.calls[at].credit).max(0) as usize
    }

    /// DATA of `len` bytes on call `at` (padded with `pad` bytes each frame, and ending its
    /// side when `end`), as far as the client's windows allow; the end only if all went.
    pub async fn data(&mut self, at: usize, len: usize, pad: Option<u8>, end: bool) {
        let call = &self.calls[at];
        let Some(id) = call.id.filter(|_| call.peer_may_send() && call.head_sent) else { return };
        let overhead = pad.map_or(0, |p| 1 + usize::from(p));
        let mut left = len;
        let mut bytes = Vec::new();
        loop {
            let room = self.room(at);
            let chunk = left.min(codec::DEFAULT_MAX_FRAME - overhead);
            if chunk + overhead > room {
                break;
            }
            let last = chunk == left;
            let flags = if last && end { codec::END_STREAM } else { 0 };
            match pad {
                None => bytes.extend(frame(codec::DATA, flags, id, &vec![1; chunk])),
                Some(p) => {
                    let payload = [vec![p], vec![1; chunk], vec![0; usize::from(p)]].concat();
                    bytes.extend(frame(codec::DATA, flags | codec::PADDED, id, &payload));
                }
            }
            let flow = (chunk + overhead) as i64;
            self.credit -= flow;
            let call = &mut self.calls[at];
            call.credit -= flow;
            if call.recv.is_some() {
                call.unread += chunk;
            }
            left -= chunk;
            if last {
                call.peer_ended |= end;
                break;
            }
        }
        self.write(&bytes).await;
    }

    /// DATA on call `at` up to all the client's windows allow (8 MiB at most).
    pub async fn flood(&mut self, at: usize, fill: Fill) {
        let room = self.room(at).min(STREAM_WINDOW as usize);
        match fill {
            Fill::Data => self.data(at, room, None, false).await,
            Fill::Padded => self.data(at, room, Some(255), false).await,
            Fill::Padding => {
                let call = &self.calls[at];
                let Some(id) = call.id.filter(|_| call.peer_may_send() && call.head_sent) else {
                    return;
                };
                let frames = room / 256;
                let one = frame(codec::DATA, codec::PADDED, id, &[&[255][..], &[0; 255]].concat());
                self.credit -= (frames * 256) as i64;
                self.calls[at].credit -= (frames * 256) as i64;
                self.write(&one.repeat(frames)).await;
            }
        }
    }

    /// The response's head on call `at`; its trailers (`end`), as trailers only when no
    /// head went before.
    pub async fn meta(&mut self, at: usize, end: bool) {
        let call = &mut self.calls[at];
        let Some(id) = call.id.filter(|_| call.peer_may_send()) else { return };
        let bytes = match (call.head_sent, end) {
            (true, false) => return,
            (false, false) => frame(codec::HEADERS, codec::END_HEADERS, id, &head_block()),
            (true, true) => {
                let b = block(&[("grpc-status", "0")]);
                frame(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, id, &b)
            }
            (false, true) => {
                let b = [head_block(), block(&[("grpc-status", "0")])].concat();
                frame(codec::HEADERS, codec::END_HEADERS | codec::END_STREAM, id, &b)
            }
        };
        call.head_sent = true;
        call.peer_ended |= end;
        self.write(&bytes).await;
    }

    /// Resets call `at` with `code`.
    pub async fn reset(&mut self, at: usize, code: u32) {
        let call = &mut self.calls[at];
        let Some(id) = call.id.filter(|_| call.open()) else { return };
        if call.peer_ended {
            call.stopped = true;
        } else {
            call.peer_reset = Some(code);
        }
        self.write(&frame(codec::RST_STREAM, 0, id, &code.to_be_bytes())).await;
    }

    /// A WINDOW_UPDATE of `n` for call `at` (`None`: the connection).
    pub async fn window(&mut self, at: Option<usize>, n: u32) {
        let id = match at {
            None => {
                self.send_window += i64::from(n);
                0
            }
            Some(at) => {
                let call = &mut self.calls[at];
                let Some(id) = call.id.filter(|_| call.open()) else { return };
                call.send_window += i64::from(n);
                id
            }
        };
        self.write(&window(id, n)).await;
    }

    /// The server's SETTINGS of `pairs`, applied once acknowledged.
    pub async fn settings(&mut self, pairs: Vec<(u16, u32)>) {
        self.write(&settings(&pairs)).await;
        self.raise(&pairs);
        self.pending.push_back(Some(pairs));
    }
}

fn head_block() -> Vec<u8> {
    block(&[(":status", "200")])
}
