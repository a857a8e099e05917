//! The KV requests of the hot path, sent straight over a tonic channel.
//!
//! etcd-client's convenience layer takes keys and values as owned `Vec<u8>`, so every put
//! would copy its value (a megabyte, for 1 MB scenarios), and it takes two locks per call
//! for auth tokens. These messages carry the value as a shared [`Bytes`] (reference counted,
//! encoded straight into the HTTP/2 frame) and the key inline, so building a request
//! allocates nothing of ours. Field numbers are etcd's `rpc.proto`; fields the client
//! does not need are skipped when decoding responses.

use bytes::{Buf, BufMut, Bytes};
use http::uri::PathAndQuery;
use prost::encoding::{self, DecodeContext, WireType};
use tonic::transport::Channel;
use tonic_prost::ProstCodec;

/// Largest response accepted: ranges over many 1 MB values are large.
pub(crate) const MAX_DECODING_BYTES: usize = 512 << 20;

/// Keys up to this many bytes are kept inline in the request.
const INLINE_KEY: usize = 32;

/// A key, inline when short.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Key {
    Inline { len: u8, buf: [u8; INLINE_KEY] },
    Shared(Bytes),
}

impl Key {
    pub(crate) fn new(bytes: &[u8]) -> Self {
        if bytes.len() <= INLINE_KEY {
            let mut buf = [0; INLINE_KEY];
            buf[..bytes.len()].copy_from_slice(bytes);
            Self::Inline { len: bytes.len() as u8, buf }
        } else {
            Self::Shared(Bytes::copy_from_slice(bytes))
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Inline { len, buf } => &buf[..*len as usize],
            Self::Shared(b) => b,
        }
    }
}

impl Default for Key {
    fn default() -> Self {
        Self::Inline { len: 0, buf: [0; INLINE_KEY] }
    }
}

/// `etcdserverpb.PutRequest` (key, value; lease and flags left at their defaults).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PutRequest {
    pub key: Key,
    pub value: Bytes,
}

impl prost::Message for PutRequest {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        let key = self.key.as_slice();
        if !key.is_empty() {
            encoding::encode_key(1, WireType::LengthDelimited, buf);
            encoding::encode_varint(key.len() as u64, buf);
            buf.put_slice(key);
        }
        if !self.value.is_empty() {
            encoding::bytes::encode(2, &self.value, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        encoding::skip_field(wire_type, tag, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        let key = self.key.as_slice().len();
        let key_len = if key == 0 { 0 } else { 1 + encoding::encoded_len_varint(key as u64) + key };
        let value_len =
            if self.value.is_empty() { 0 } else { encoding::bytes::encoded_len(2, &self.value) };
        key_len + value_len
    }

    fn clear(&mut self) {
        *self = Self::default();
    }
}

/// `etcdserverpb.ResponseHeader`.
#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub(crate) struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    #[prost(int64, tag = "3")]
    pub revision: i64,
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// `etcdserverpb.PutResponse`, header only (`prev_kv` is never asked for).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `etcdserverpb.RangeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RangeRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: Bytes,
    #[prost(int64, tag = "3")]
    pub limit: i64,
    #[prost(bool, tag = "7")]
    pub serializable: bool,
    #[prost(bool, tag = "8")]
    pub keys_only: bool,
    #[prost(bool, tag = "9")]
    pub count_only: bool,
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct KeyValue {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(bytes = "bytes", tag = "5")]
    pub value: Bytes,
}

/// `etcdserverpb.RangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
    #[prost(int64, tag = "4")]
    pub count: i64,
}

/// A KV client over one connection.
#[derive(Clone, Debug)]
pub(crate) struct Kv {
    grpc: tonic::client::Grpc<Channel>,
}

impl Kv {
    pub(crate) fn new(channel: Channel) -> Self {
        let grpc = tonic::client::Grpc::new(channel)
            .max_decoding_message_size(MAX_DECODING_BYTES)
            .max_encoding_message_size(usize::MAX);
        Self { grpc }
    }

    async fn ready(&mut self) -> Result<(), tonic::Status> {
        self.grpc
            .ready()
            .await
            .map_err(|e| tonic::Status::unavailable(format!("connection not ready: {e}")))
    }

    pub(crate) async fn put(&mut self, req: PutRequest) -> Result<PutResponse, tonic::Status> {
        self.ready().await?;
        let path = PathAndQuery::from_static("/etcdserverpb.KV/Put");
        let codec = ProstCodec::<PutRequest, PutResponse>::default();
        Ok(self.grpc.unary(tonic::Request::new(req), path, codec).await?.into_inner())
    }

    pub(crate) async fn range(
        &mut self,
        req: RangeRequest,
    ) -> Result<RangeResponse, tonic::Status> {
        self.ready().await?;
        let path = PathAndQuery::from_static("/etcdserverpb.KV/Range");
        let codec = ProstCodec::<RangeRequest, RangeResponse>::default();
        Ok(self.grpc.unary(tonic::Request::new(req), path, codec).await?.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn put_request_encodes_like_generated_code() {
        let req = PutRequest { key: Key::new(b"k1"), value: Bytes::from_static(b"value") };
        let ours = req.encode_to_vec();
        let reference = etcd_client::proto::PbPutRequest {
            key: b"k1".to_vec(),
            value: b"value".to_vec(),
            ..Default::default()
        }
        .encode_to_vec();
        assert_eq!(ours, reference);
        assert_eq!(req.encoded_len(), ours.len());

        let long = PutRequest { key: Key::new(&[7; 100]), value: Bytes::new() };
        let reference =
            etcd_client::proto::PbPutRequest { key: vec![7; 100], ..Default::default() }
                .encode_to_vec();
        assert_eq!(long.encode_to_vec(), reference);
    }
}
