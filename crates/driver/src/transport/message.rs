//! The etcd messages the client sends and reads itself (KV and Authenticate), written by
//! hand and sent over its own HTTP/2 connections ([`super::kv`]), not through tonic.
//!
//! etcd-client's convenience layer takes keys and values as owned `Vec<u8>`, so every put
//! would copy its value (a megabyte, for 1 MB scenarios), and it takes two locks per call
//! for auth tokens. These messages carry the value as a shared [`Bytes`] (reference counted,
//! sent without copying when large: [`super::frame::frame_put`]) and a short key inline, so
//! building a request copies only the key. Field numbers are etcd's `rpc.proto`; fields the
//! client does not need are skipped when decoding responses. Every message is checked
//! against etcd-client's generated types by the tests below.

use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{self, DecodeContext, WireType};

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

impl PutRequest {
    /// Everything of the encoded message but the value's bytes: the key field and the
    /// value's tag and length.
    pub(crate) fn encode_head(&self, buf: &mut impl BufMut) {
        let key = self.key.as_slice();
        if !key.is_empty() {
            encoding::encode_key(1, WireType::LengthDelimited, buf);
            encoding::encode_varint(key.len() as u64, buf);
            buf.put_slice(key);
        }
        if !self.value.is_empty() {
            encoding::encode_key(2, WireType::LengthDelimited, buf);
            encoding::encode_varint(self.value.len() as u64, buf);
        }
    }
}

impl prost::Message for PutRequest {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        self.encode_head(buf);
        buf.put_slice(&self.value);
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
    #[prost(int64, tag = "4")]
    pub revision: i64,
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

/// `etcdserverpb.DeleteRangeRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DeleteRangeRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: Bytes,
}

/// `etcdserverpb.DeleteRangeResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub deleted: i64,
}

/// `etcdserverpb.Compare.CompareResult`.
pub(crate) mod compare_result {
    pub const EQUAL: i32 = 0;
    pub const LESS: i32 = 2;
}

/// `etcdserverpb.Compare.CompareTarget`.
pub(crate) mod compare_target {
    pub const MOD: i32 = 2;
}

/// `etcdserverpb.Compare`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Compare {
    #[prost(int32, tag = "1")]
    pub result: i32,
    #[prost(int32, tag = "2")]
    pub target: i32,
    #[prost(bytes = "bytes", tag = "3")]
    pub key: Bytes,
    #[prost(oneof = "TargetUnion", tags = "4, 5, 6")]
    pub target_union: Option<TargetUnion>,
}

/// `etcdserverpb.Compare.target_union` (the revision targets).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum TargetUnion {
    #[prost(int64, tag = "4")]
    Version(i64),
    #[prost(int64, tag = "5")]
    CreateRevision(i64),
    #[prost(int64, tag = "6")]
    ModRevision(i64),
}

impl Compare {
    /// `mod_revision(key) == rev`, or `< rev` when `less`.
    pub(crate) fn mod_revision(key: Bytes, rev: i64, less: bool) -> Self {
        Self {
            result: if less { compare_result::LESS } else { compare_result::EQUAL },
            target: compare_target::MOD,
            key,
            target_union: Some(TargetUnion::ModRevision(rev)),
        }
    }
}

/// `etcdserverpb.RequestOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct RequestOp {
    #[prost(oneof = "Request", tags = "1, 2, 3")]
    pub request: Option<Request>,
}

/// `etcdserverpb.RequestOp.request` (nested transactions are not used).
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Request {
    #[prost(message, tag = "1")]
    Range(RangeRequest),
    #[prost(message, tag = "2")]
    Put(PutRequest),
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeRequest),
}

/// `etcdserverpb.TxnRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

impl TxnRequest {
    /// A transaction without conditions that runs `ops`.
    pub(crate) fn unconditional(ops: impl IntoIterator<Item = Request>) -> Self {
        let success = ops.into_iter().map(|r| RequestOp { request: Some(r) }).collect();
        Self { compare: Vec::new(), success, failure: Vec::new() }
    }
}

/// `etcdserverpb.ResponseOp`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ResponseOp {
    #[prost(oneof = "Response", tags = "1, 2, 3")]
    pub response: Option<Response>,
}

/// `etcdserverpb.ResponseOp.response`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub(crate) enum Response {
    #[prost(message, tag = "1")]
    Range(RangeResponse),
    #[prost(message, tag = "2")]
    Put(PutResponse),
    #[prost(message, tag = "3")]
    DeleteRange(DeleteRangeResponse),
}

/// `etcdserverpb.TxnResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct TxnResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

/// `etcdserverpb.AuthenticateRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AuthenticateRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub password: String,
}

/// `etcdserverpb.AuthenticateResponse` (its header is not read).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct AuthenticateResponse {
    #[prost(string, tag = "2")]
    pub token: String,
}

/// The methods these messages go to.
pub(crate) const PUT: &str = "/etcdserverpb.KV/Put";
pub(crate) const RANGE: &str = "/etcdserverpb.KV/Range";
pub(crate) const DELETE_RANGE: &str = "/etcdserverpb.KV/DeleteRange";
pub(crate) const TXN: &str = "/etcdserverpb.KV/Txn";
pub(crate) const AUTHENTICATE: &str = "/etcdserverpb.Auth/Authenticate";

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

    #[test]
    fn txn_request_encodes_like_generated_code() {
        use etcd_client::proto::{PbCompare, PbTxnOpRequest, PbTxnRequest, PbTxnRequestOp};
        let ours = TxnRequest {
            compare: vec![Compare::mod_revision(Bytes::from_static(b"k"), 7, false)],
            success: vec![RequestOp {
                request: Some(Request::Put(PutRequest {
                    key: Key::new(b"k"),
                    value: Bytes::from_static(b"v"),
                })),
            }],
            failure: vec![RequestOp {
                request: Some(Request::Range(RangeRequest {
                    key: Bytes::from_static(b"k"),
                    range_end: Bytes::new(),
                    ..RangeRequest::default()
                })),
            }],
        }
        .encode_to_vec();
        let reference = PbTxnRequest {
            compare: vec![PbCompare {
                result: 0,
                target: 2,
                key: b"k".to_vec(),
                target_union: Some(etcd_client::proto::PbTargetUnion::ModRevision(7)),
                range_end: Vec::new(),
            }],
            success: vec![PbTxnRequestOp {
                request: Some(PbTxnOpRequest::RequestPut(etcd_client::proto::PbPutRequest {
                    key: b"k".to_vec(),
                    value: b"v".to_vec(),
                    ..Default::default()
                })),
            }],
            failure: vec![PbTxnRequestOp {
                request: Some(PbTxnOpRequest::RequestRange(etcd_client::proto::PbRangeRequest {
                    key: b"k".to_vec(),
                    ..Default::default()
                })),
            }],
        }
        .encode_to_vec();
        assert_eq!(ours, reference);
    }
}
