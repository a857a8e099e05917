//! The RangeStream call of etcd 3.7 on the hot path's [`Kv`]: one range request, answered
//! by a stream of [`RangeStreamResponse`] messages, each a slice of the keys, read as they
//! arrive and counted, never gathered into one answer.
//!
//! etcd streams a large range so that neither side holds all of it at once; the client
//! measures when the first message came (how soon a reader can start) and the last (the
//! whole range), and the keys and value bytes it received.

use std::time::Instant;

use bytes::BytesMut;
use tonic::Status;

use super::frame::{frame_one, next_message};
use super::kv::Kv;
use super::message::{RANGE_STREAM, RangeRequest, RangeStreamResponse, ResponseHeader};
use super::status::{check_http, http2_status, meta_status};
use super::unary::grpc_fields;

/// What one streamed range received.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Streamed {
    /// When its first message arrived (`None`: the stream ended without one).
    pub first: Option<Instant>,
    /// Keys received, or with `count_only` the count of the last message.
    pub keys: u64,
    /// Value bytes received.
    pub value_bytes: u64,
    /// The last message's header.
    pub header: Option<ResponseHeader>,
    /// The last message's `more`: the request's limit cut the range short.
    pub more: bool,
    /// The last key received (empty with none): where a next page starts after.
    pub last_key: bytes::Bytes,
}

impl Kv {
    /// Sends `req` as a RangeStream and reads every message of the answer until the
    /// server ends it. A server before etcd 3.7 answers UNIMPLEMENTED.
    pub(crate) async fn range_stream(&mut self, req: &RangeRequest) -> Result<Streamed, Status> {
        self.range_stream_each(req, |_| {}).await
    }

    /// As [`Kv::range_stream`], showing `each` every key-value received (a watch cache's
    /// list reads them).
    pub(crate) async fn range_stream_each(
        &mut self,
        req: &RangeRequest,
        mut each: impl FnMut(&super::message::KeyValue),
    ) -> Result<Streamed, Status> {
        let token = self.token().await?;
        let mut conn = self.channel().clone();
        let mut slot = conn.ready().await?;
        let (fields, n) = grpc_fields(token.as_ref());
        let (mut send, mut recv) = conn
            .connection()
            .open(&mut slot, &conn.head(RANGE_STREAM, &fields[..n]), false)
            .map_err(http2_status)?;
        send.send_data(frame_one(req), true).map_err(http2_status)?;
        let head = recv.head().await.map_err(http2_status)?;
        check_http(head.status.unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR))?;
        let mut got = Streamed::default();
        match meta_status(&head) {
            // Trailers only: an error, or a stream that ended without a message.
            Some(Err(status)) => return Err(status),
            Some(Ok(())) => return Ok(got),
            None => {}
        }
        let mut buf = BytesMut::new();
        loop {
            while let Some(message) = next_message(&mut buf)? {
                let chunk: RangeStreamResponse = prost::Message::decode(message)
                    .map_err(|e| Status::internal(format!("undecodable range stream: {e}")))?;
                got.first.get_or_insert_with(Instant::now);
                let Some(range) = chunk.range_response else { continue };
                range.kvs.iter().for_each(&mut each);
                got.keys += range.kvs.len() as u64;
                got.value_bytes += range.kvs.iter().map(|kv| kv.value.len() as u64).sum::<u64>();
                if req.count_only {
                    got.keys = range.count.max(0) as u64;
                }
                if range.header.is_some() {
                    got.header = range.header;
                }
                got.more = range.more;
                if let Some(last) = range.kvs.last() {
                    got.last_key = last.key.clone();
                }
            }
            match recv.data().await {
                Some(chunk) => buf.extend_from_slice(&chunk.map_err(http2_status)?),
                None => break,
            }
        }
        if !buf.is_empty() {
            return Err(Status::internal("range stream ended inside a message"));
        }
        let trailers = recv.trailers().await.map_err(http2_status)?;
        match trailers.as_ref().and_then(meta_status) {
            Some(Ok(())) => Ok(got),
            Some(Err(status)) => Err(status),
            None => Err(Status::internal("range stream ended without grpc-status")),
        }
    }
}
