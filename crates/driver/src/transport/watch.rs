//! A watch stream on a [`Channel`], without etcd-client or tonic: create and progress
//! requests ([`WatchRequest`]) framed and written to the HTTP/2 stream, responses decoded
//! from it as they arrive.
//!
//! Through etcd-client, each watch stream carried tonic's 8 KiB encode and decode buffers,
//! a task pumping its request body, and a channel of requests: 24.5 KB per stream over its
//! connection. Here a stream is its two HTTP/2 handles and a receive buffer that grows only to
//! the largest response it has held (benches/README.md: a few KB at most).

use bytes::{Bytes, BytesMut};
use etcdlat_core::workload::prefix_end;
use http::HeaderValue;
use tonic::Status;

use super::channel::Channel;
use super::frame::{frame_one, next_message};
use super::http2::{RecvStream, SendStream};
use super::message::{WATCH, WatchCreateRequest, WatchProgressRequest, WatchRequest};
use super::status::{check_http, http2_status, meta_status};
use super::unary::grpc_fields;

/// How a run's watchers are created: the fields of [`WatchCreateRequest`] that are the same
/// for all of them (the key is given per watcher).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct WatchCreate {
    /// Events from this revision on (0: from the next one).
    pub start_revision: i64,
    /// Each event carries the key's previous value.
    pub prev_kv: bool,
    /// The watcher covers every key with the given one as its prefix.
    pub prefix: bool,
    /// etcd sends progress notifications while there are no events.
    pub progress_notify: bool,
}

impl WatchCreate {
    /// The `WatchRequest` that creates a watcher on `key`.
    fn request(&self, key: &[u8]) -> WatchRequest {
        let range_end = if self.prefix { Bytes::from(prefix_end(key)) } else { Bytes::new() };
        let create = WatchCreateRequest {
            key: Bytes::copy_from_slice(key),
            range_end,
            start_revision: self.start_revision,
            progress_notify: self.progress_notify,
            prev_kv: self.prev_kv,
        };
        WatchRequest { create_request: Some(create), progress_request: None }
    }
}

/// The sending half of a watch stream; dropping it half-closes the stream, and etcd then
/// ends it, so it is kept for as long as the watchers are wanted.
pub(crate) struct WatchSender {
    stream: SendStream,
}

impl WatchSender {
    /// Asks for one more watcher on `key`; etcd answers with a `created` response, in the
    /// order asked.
    pub(crate) fn create(&mut self, key: &[u8], how: &WatchCreate) -> Result<(), Status> {
        self.send(&how.request(key))
    }

    /// Asks etcd for a progress notification on each of the stream's watchers: a response
    /// with no events whose header's revision everything before was delivered up to.
    pub(crate) fn request_progress(&mut self) -> Result<(), Status> {
        self.send(&WatchRequest {
            create_request: None,
            progress_request: Some(WatchProgressRequest {}),
        })
    }

    fn send(&mut self, request: &WatchRequest) -> Result<(), Status> {
        self.stream.send_data(frame_one(request), false).map_err(http2_status)
    }
}

/// The receiving half of a watch stream.
pub(crate) struct WatchReceiver {
    recv: RecvStream,
    /// The head was read.
    head: bool,
    /// The stream ended.
    ended: bool,
    /// The last chunk received, its whole messages not yet decoded: they are cut from it
    /// without copying.
    chunk: Bytes,
    /// A message that arrived over several chunks, gathered until it is whole.
    buf: BytesMut,
}

impl WatchReceiver {
    /// The receiver of the answer that comes on `recv`.
    pub(super) fn new(recv: RecvStream) -> Self {
        Self { recv, head: false, ended: false, chunk: Bytes::new(), buf: BytesMut::new() }
    }

    /// The next response, decoded as `M` (etcdlat's own [`super::message::WatchResponse`],
    /// or etcd-client's); `None` when etcd ended the stream with an OK status.
    pub(crate) async fn message<M: prost::Message + Default>(
        &mut self,
    ) -> Result<Option<M>, Status> {
        let Some(message) = self.raw().await? else { return Ok(None) };
        M::decode(message)
            .map(Some)
            .map_err(|e| Status::internal(format!("undecodable watch response: {e}")))
    }

    /// The next response's bytes, undecoded (for [`super::message::WatchView`]); `None`
    /// when etcd ended the stream with an OK status. Cancel-safe once the head was read:
    /// what arrived is kept in the receiver, not in the future.
    pub(crate) async fn raw(&mut self) -> Result<Option<Bytes>, Status> {
        if !self.head {
            // etcd sends the head with its first response, after the first create.
            let head = self.recv.head().await.map_err(http2_status)?;
            self.head = true;
            check_http(head.status.unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR))?;
            match meta_status(&head) {
                None => {}
                Some(Err(status)) => return Err(status),
                // Trailers only, OK: the stream ended without a response (an error for a
                // unary call, not for a stream).
                Some(Ok(())) => {
                    self.ended = true;
                    return Ok(None);
                }
            }
        }
        if self.ended {
            return Err(Status::internal("watch stream read after it ended"));
        }
        loop {
            if let Some(message) = self.next()? {
                return Ok(Some(message));
            }
            match self.recv.data().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(http2_status)?;
                    if self.buf.is_empty() {
                        self.chunk = chunk;
                    } else {
                        self.buf.extend_from_slice(&chunk);
                    }
                }
                None => {
                    let trailers = self.recv.trailers().await.map_err(http2_status)?;
                    self.ended = true;
                    if !self.buf.is_empty() {
                        return Err(Status::internal("watch stream ended inside a message"));
                    }
                    return match trailers.as_ref().and_then(meta_status) {
                        Some(Ok(())) => Ok(None),
                        Some(Err(status)) => Err(status),
                        None => Err(Status::internal("watch stream ended without grpc-status")),
                    };
                }
            }
        }
    }

    /// The next whole message received: cut from the last chunk when it holds all of it
    /// (most do: etcd writes each response in one DATA frame), else gathered in the buffer,
    /// which takes what is left of the chunk.
    fn next(&mut self) -> Result<Option<Bytes>, Status> {
        if self.buf.is_empty() {
            if let Some(message) = next_message(&mut self.chunk)? {
                return Ok(Some(message));
            }
            // The rest of the chunk begins a message that goes on in the next ones.
            self.buf.extend_from_slice(&self.chunk);
            self.chunk = Bytes::new();
            return Ok(None);
        }
        next_message(&mut self.buf)
    }
}

impl Channel {
    /// Opens a watch stream carrying `token`. The receiver waits for the response's head:
    /// etcd sends it only with its first response, after the first create.
    pub(crate) async fn watch(
        mut self,
        token: Option<HeaderValue>,
    ) -> Result<(WatchSender, WatchReceiver), Status> {
        let mut slot = self.ready().await?;
        let (fields, n) = grpc_fields(token.as_ref());
        let (stream, recv) = self
            .connection()
            .open(&mut slot, &self.head(WATCH, &fields[..n]), false)
            .map_err(http2_status)?;
        Ok((WatchSender { stream }, WatchReceiver::new(recv)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each way etcdlat creates a watcher goes on the wire byte for byte as etcd-client
    /// sends the same options.
    #[test]
    fn create_requests_are_framed_as_etcd_client_frames_them() {
        use etcd_client::WatchOptions;
        use etcd_client::proto::PbWatchRequest;
        let cases = [
            (WatchCreate::default(), WatchOptions::new()),
            (
                WatchCreate { start_revision: 42, prev_kv: true, ..WatchCreate::default() },
                WatchOptions::new().with_start_revision(42).with_prev_key(),
            ),
            (
                WatchCreate { prev_kv: true, ..WatchCreate::default() },
                WatchOptions::new().with_prev_key(),
            ),
            (
                WatchCreate { start_revision: i64::MAX, ..WatchCreate::default() },
                WatchOptions::new().with_start_revision(i64::MAX),
            ),
            (
                // A watch cache's: a resource's prefix, from after its list.
                WatchCreate {
                    start_revision: 9,
                    prev_kv: true,
                    prefix: true,
                    progress_notify: true,
                },
                WatchOptions::new()
                    .with_prefix()
                    .with_start_revision(9)
                    .with_prev_key()
                    .with_progress_notify(),
            ),
        ];
        for key in [&b"\x00key/\xff"[..], &[7; 300]] {
            for (how, options) in cases.clone() {
                let reference =
                    prost::Message::encode_to_vec(&PbWatchRequest::from(options.with_key(key)));
                let len = u32::try_from(reference.len()).unwrap().to_be_bytes();
                let expected = [&[0][..], &len, &reference].concat();
                assert_eq!(frame_one(&how.request(key)), expected, "{how:?}");
            }
        }
    }
}
