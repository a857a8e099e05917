//! A watch stream on a [`Channel`], without etcd-client or tonic: create requests
//! ([`WatchRequest`]) framed and written to the HTTP/2 stream, responses decoded from it as
//! they arrive.
//!
//! Through etcd-client, each watch stream carried tonic's 8 KiB encode and decode buffers,
//! a task pumping its request body, and a channel of requests: 24.5 KB per stream over its
//! connection. Here a stream is its two HTTP/2 handles and a receive buffer that grows only to
//! the largest response it has held (benches/README.md: a few KB at most).

use bytes::{Bytes, BytesMut};
use etcd_client::proto::PbWatchResponse;
use http::HeaderValue;
use tonic::Status;

use super::channel::Channel;
use super::frame::{frame_one, next_message};
use super::http2::{RecvStream, SendStream};
use super::message::{WATCH, WatchCreateRequest, WatchRequest};
use super::status::{http2_status, meta_status};
use super::unary::{answer_body, grpc_fields};

/// How a run's watchers are created: the fields of [`WatchCreateRequest`] that are the same
/// for all of them (the key is given per watcher).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct WatchCreate {
    /// Events from this revision on (0: from the next one).
    pub start_revision: i64,
    /// Each event carries the key's previous value.
    pub prev_kv: bool,
}

impl WatchCreate {
    /// The `WatchRequest` that creates a watcher on `key`.
    fn request(&self, key: &[u8]) -> WatchRequest {
        let create = WatchCreateRequest {
            key: Bytes::copy_from_slice(key),
            start_revision: self.start_revision,
            prev_kv: self.prev_kv,
        };
        WatchRequest { create_request: Some(create) }
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
        self.stream.send_data(frame_one(&how.request(key)), false).map_err(http2_status)
    }
}

/// The receiving half of a watch stream.
pub(crate) struct WatchReceiver {
    recv: RecvStream,
    /// The head was read.
    head: bool,
    /// The stream ended.
    ended: bool,
    /// Received bytes not yet decoded into a message.
    buf: BytesMut,
}

impl WatchReceiver {
    /// The next response; `None` when etcd ended the stream with an OK status.
    pub(crate) async fn message(&mut self) -> Result<Option<PbWatchResponse>, Status> {
        if !self.head {
            // etcd sends the head with its first response, after the first create.
            self.head = true;
            answer_body(&self.recv.head().await.map_err(http2_status)?)?;
        }
        if self.ended {
            return Err(Status::internal("watch stream read after it ended"));
        }
        loop {
            if let Some(message) = next_message(&mut self.buf)? {
                return prost::Message::decode(message)
                    .map(Some)
                    .map_err(|e| Status::internal(format!("undecodable watch response: {e}")));
            }
            match self.recv.data().await {
                Some(chunk) => {
                    let chunk = chunk.map_err(http2_status)?;
                    self.buf.extend_from_slice(&chunk);
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
}

impl Channel {
    /// Opens a watch stream carrying `token`. The receiver waits for the response's head:
    /// etcd sends it only with its first response, after the first create.
    pub(crate) async fn watch(
        mut self,
        token: Option<HeaderValue>,
    ) -> Result<(WatchSender, WatchReceiver), Status> {
        self.ready().await?;
        let (fields, n) = grpc_fields(token.as_ref());
        let (stream, recv) =
            self.connection().open(&self.head(WATCH, &fields[..n]), false).map_err(http2_status)?;
        let receiver = WatchReceiver { recv, head: false, ended: false, buf: BytesMut::new() };
        Ok((WatchSender { stream }, receiver))
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
                WatchCreate { start_revision: 42, prev_kv: true },
                WatchOptions::new().with_start_revision(42).with_prev_key(),
            ),
            (WatchCreate { start_revision: 0, prev_kv: true }, WatchOptions::new().with_prev_key()),
            (
                WatchCreate { start_revision: i64::MAX, prev_kv: false },
                WatchOptions::new().with_start_revision(i64::MAX),
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
