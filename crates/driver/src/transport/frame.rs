//! gRPC's length-prefixed messages: framing a request, reading the message out of a
//! response, decoding it.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tonic::Status;

use super::message::PutRequest;

/// gRPC's length-prefixed message header: a compression flag and a big-endian length.
pub(crate) const FRAME_HEADER: usize = 5;

/// Puts with values at least this large send the value as its own DATA chunk, straight
/// from the shared buffer, instead of copying it into the request's frame.
const ZERO_COPY_VALUE: usize = 16 << 10;

/// Largest response accepted, on the hot path and by etcd-client's watch streams: ranges
/// over many 1 MB values are large, but a run must not be able to exhaust the client's
/// memory with one answer.
pub(crate) const MAX_RESPONSE_BYTES: usize = 512 << 20;

/// A request's body: one framed message, or for large put values the frame's head and the
/// value itself (sent without copying it).
#[derive(Clone, Debug)]
pub(crate) enum Body {
    One(Bytes),
    Split(Bytes, Bytes),
}

impl Body {
    /// Takes the body, leaving an empty one (which allocates nothing).
    pub(super) fn take(&mut self) -> Self {
        std::mem::replace(self, Self::One(Bytes::new()))
    }
}

/// Frames one message as a unary call's body: the 5-byte gRPC header, then the message.
pub(crate) fn frame<M: prost::Message>(message: &M) -> Body {
    Body::One(frame_one(message))
}

/// Frames one message in one buffer, as a stream's DATA carries it.
pub(crate) fn frame_one<M: prost::Message>(message: &M) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(FRAME_HEADER + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut buf);
    buf.freeze()
}

/// Frames a put: large values go out as their own chunk, straight from the shared buffer.
pub(crate) fn frame_put(req: &PutRequest) -> Body {
    use prost::Message;
    if req.value.len() < ZERO_COPY_VALUE {
        return frame(req);
    }
    let len = req.encoded_len();
    let head_len = len - req.value.len();
    let mut head = BytesMut::with_capacity(FRAME_HEADER + head_len);
    head.put_u8(0);
    head.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    req.encode_head(&mut head);
    debug_assert_eq!(head.len(), FRAME_HEADER + head_len);
    Body::Split(head.freeze(), req.value.clone())
}

/// Decodes a response message.
pub(crate) fn decode<R: prost::Message + Default>(message: &Bytes) -> Result<R, Status> {
    R::decode(message.clone()).map_err(|e| Status::internal(format!("bad response: {e}")))
}

/// The message in a response's gRPC frame.
pub(super) fn message(mut data: Bytes) -> Result<Bytes, Status> {
    if data.len() < FRAME_HEADER {
        return Err(Status::internal(format!(
            "response of {} bytes has no gRPC frame",
            data.len()
        )));
    }
    let compressed = data.get_u8();
    let len = data.get_u32() as usize;
    if compressed != 0 {
        return Err(Status::internal("compressed response (none was asked for)"));
    }
    if len > MAX_RESPONSE_BYTES {
        // As gRPC says a message over its limit.
        return Err(Status::resource_exhausted(format!(
            "response message of {len} bytes is larger than the {MAX_RESPONSE_BYTES} allowed"
        )));
    }
    if data.len() < len {
        return Err(Status::internal(format!(
            "response frame says {len} bytes but {} arrived",
            data.len()
        )));
    }
    if data.len() > len {
        // A second message, or garbage: a unary call has exactly one.
        return Err(Status::internal(format!(
            "response has {} bytes after its {len}-byte message",
            data.len() - len
        )));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::message::{Key, RangeResponse};

    #[test]
    fn frames_round_trip() {
        let req = RangeResponse { count: 7, ..Default::default() };
        let Body::One(framed) = frame(&req) else { panic!("small message split") };
        let answer = message(framed).unwrap();
        assert_eq!(decode::<RangeResponse>(&answer).unwrap().count, 7);
        assert!(message(Bytes::from_static(b"\0\0\0\0\x09ab")).is_err(), "a short frame");
    }

    #[test]
    fn a_frame_holds_exactly_one_uncompressed_message_within_the_limit() {
        let frame = |flag: u8, len: u32, body: &[u8]| {
            let mut d = vec![flag];
            d.extend_from_slice(&len.to_be_bytes());
            d.extend_from_slice(body);
            Bytes::from(d)
        };
        let code = |d: Bytes| message(d).map(|_| ()).map_err(|s| s.code());
        assert_eq!(code(frame(0, 3, b"abc")), Ok(()));
        assert_eq!(code(frame(0, 4, b"abc")), Err(tonic::Code::Internal), "truncated");
        assert_eq!(code(frame(0, 2, b"abc")), Err(tonic::Code::Internal), "bytes after it");
        assert_eq!(code(frame(1, 3, b"abc")), Err(tonic::Code::Internal), "compressed");
        assert_eq!(code(frame(0, u32::MAX, b"abc")), Err(tonic::Code::ResourceExhausted));
    }

    proptest::proptest! {
        /// Whatever a server sends as a response body, reading the message out of it and
        /// decoding it as any answer the hot path reads fails cleanly or succeeds, and a
        /// message read is exactly what the frame's header says.
        #[test]
        fn any_response_body_is_read_without_panic(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256),
        ) {
            use crate::transport::message::{DeleteRangeResponse, PutResponse, TxnResponse};
            let data = Bytes::from(data);
            if let Ok(m) = message(data.clone()) {
                proptest::prop_assert_eq!(data[0], 0);
                proptest::prop_assert_eq!(&data[FRAME_HEADER..], &m[..]);
                proptest::prop_assert_eq!(u32::from_be_bytes([data[1], data[2], data[3], data[4]]) as usize, m.len());
            }
            let _ = decode::<PutResponse>(&data);
            let _ = decode::<RangeResponse>(&data);
            let _ = decode::<DeleteRangeResponse>(&data);
            let _ = decode::<TxnResponse>(&data);
            let _ = decode::<crate::transport::message::AuthenticateResponse>(&data);
        }

        /// A well-formed frame of a range answer with arbitrary contents reads back as sent.
        #[test]
        fn range_answers_round_trip(
            count in proptest::prelude::any::<i64>(),
            more in proptest::prelude::any::<bool>(),
            member in proptest::prelude::any::<u64>(),
            kvs in proptest::collection::vec(
                (proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                 proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                 proptest::prelude::any::<i64>()),
                0..8),
        ) {
            use crate::transport::message::{KeyValue, ResponseHeader};
            let sent = RangeResponse {
                header: Some(ResponseHeader { member_id: member, ..Default::default() }),
                kvs: kvs
                    .into_iter()
                    .map(|(k, v, rev)| KeyValue {
                        key: k.into(),
                        value: v.into(),
                        mod_revision: rev,
                    })
                    .collect(),
                more,
                count,
            };
            let Body::One(framed) = frame(&sent) else { unreachable!("a small message") };
            let read: RangeResponse = decode(&message(framed).unwrap()).unwrap();
            proptest::prop_assert_eq!(read, sent);
        }
    }

    #[test]
    fn large_put_values_are_not_copied() {
        use prost::Message;
        let value = Bytes::from(vec![7u8; 1 << 20]);
        let req = PutRequest { key: Key::new(b"k"), value: value.clone() };
        let Body::Split(head, sent) = frame_put(&req) else { panic!("1 MB value was copied") };
        assert_eq!(sent.as_ptr(), value.as_ptr(), "the value is sent from the shared buffer");
        let mut whole = head.to_vec();
        whole.extend_from_slice(&sent);
        let Body::One(reference) = frame(&req) else { unreachable!() };
        assert_eq!(whole, reference.to_vec());
        assert_eq!(whole.len(), FRAME_HEADER + req.encoded_len());
    }
}
