//! gRPC's length-prefixed messages: framing a request, reading the messages out of a
//! response (a unary call's one, or a stream's as they arrive), decoding them. gRPC's
//! 5-byte message header is written ([`put_header`]) and read ([`message_len`]) here and
//! nowhere else.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tonic::Status;

use super::message::{GuardedWrite, PutRequest};

/// gRPC's length-prefixed message header: a compression flag and a big-endian length.
const FRAME_HEADER: usize = 5;

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
    framed(message.encoded_len(), |buf| message.encode_raw(buf))
}

/// Frames one of the apiserver's writes ([`GuardedWrite`]), encoded by hand.
pub(crate) fn frame_guarded(write: &GuardedWrite<'_>) -> Body {
    Body::One(framed(write.encoded_len(), |buf| write.encode(buf)))
}

/// The frame of a message of `len` bytes that `encode` writes.
fn framed(len: usize, encode: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut buf = BytesMut::with_capacity(FRAME_HEADER + len);
    put_header(&mut buf, len);
    encode(&mut buf);
    debug_assert_eq!(buf.len(), FRAME_HEADER + len, "a message is as long as it says");
    buf.freeze()
}

/// Frames a put: large values go out as their own chunk, straight from the shared buffer.
pub(crate) fn frame_put(req: &PutRequest) -> Body {
    use prost::Message;
    // A leased put's lease follows its value: framed whole (only transactions send one).
    if req.value.len() < ZERO_COPY_VALUE || req.lease != 0 {
        return frame(req);
    }
    let len = req.encoded_len();
    let head_len = len - req.value.len();
    let mut head = BytesMut::with_capacity(FRAME_HEADER + head_len);
    put_header(&mut head, len);
    req.encode_head(&mut head);
    debug_assert_eq!(head.len(), FRAME_HEADER + head_len);
    Body::Split(head.freeze(), req.value.clone())
}

/// Writes the header of an uncompressed message of `len` bytes: the one place it is written.
fn put_header(buf: &mut impl BufMut, len: usize) {
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
}

/// The length of the message whose header starts `data`, or `None` while fewer than
/// [`FRAME_HEADER`] bytes have arrived: the one place a header is read. A compressed
/// message (none is ever asked for) and one over [`MAX_RESPONSE_BYTES`] are refused from
/// the header alone, before any of the message is waited for or buffered.
fn message_len(data: &[u8]) -> Result<Option<usize>, Status> {
    let [compressed, a, b, c, d, ..] = *data else { return Ok(None) };
    if compressed != 0 {
        return Err(Status::internal("compressed response message (none was asked for)"));
    }
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if len > MAX_RESPONSE_BYTES {
        // As gRPC says a message over its limit.
        return Err(Status::resource_exhausted(format!(
            "response message of {len} bytes is larger than the {MAX_RESPONSE_BYTES} allowed"
        )));
    }
    Ok(Some(len))
}

/// Decodes a response message.
pub(crate) fn decode<R: prost::Message + Default>(message: &Bytes) -> Result<R, Status> {
    R::decode(message.clone()).map_err(|e| Status::internal(format!("bad response: {e}")))
}

/// The message in a unary response's body, which holds exactly one.
pub(super) fn message(mut data: Bytes) -> Result<Bytes, Status> {
    let Some(len) = message_len(&data)? else {
        return Err(Status::internal(format!(
            "response of {} bytes has no gRPC frame",
            data.len()
        )));
    };
    data.advance(FRAME_HEADER);
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

/// The next whole message at the front of a stream's received bytes, cut from them;
/// `None` until all of it has arrived. From a chunk as received (`Bytes`) the message is a
/// slice of it; from a buffer gathering a message over several chunks (`BytesMut`), that
/// buffer's front, split off: never a copy.
pub(super) fn next_message<B: Buf + AsRef<[u8]>>(buf: &mut B) -> Result<Option<Bytes>, Status> {
    let Some(len) = message_len(buf.as_ref())? else { return Ok(None) };
    if buf.remaining() < FRAME_HEADER + len {
        // Not reserved up front: the length is the server's word, and the buffer grows
        // with what actually arrives.
        return Ok(None);
    }
    buf.advance(FRAME_HEADER);
    Ok(Some(buf.copy_to_bytes(len)))
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

    /// A frame as a server might send it, well-formed or not.
    fn raw(flag: u8, len: u32, body: &[u8]) -> Vec<u8> {
        [&[flag][..], &len.to_be_bytes(), body].concat()
    }

    /// What a unary call makes of `data`, as a gRPC code.
    fn unary(data: &[u8]) -> Result<Bytes, tonic::Code> {
        message(Bytes::copy_from_slice(data)).map_err(|s| s.code())
    }

    /// What a stream makes of `data` received so far, as a gRPC code.
    fn stream(data: &[u8]) -> Result<Option<Bytes>, tonic::Code> {
        next_message(&mut BytesMut::from(data)).map_err(|s| s.code())
    }

    #[test]
    fn a_frame_holds_exactly_one_uncompressed_message_within_the_limit() {
        let code = |d: Vec<u8>| unary(&d).map(|_| ());
        assert_eq!(code(raw(0, 3, b"abc")), Ok(()));
        assert_eq!(code(raw(0, 4, b"abc")), Err(tonic::Code::Internal), "truncated");
        assert_eq!(code(raw(0, 2, b"abc")), Err(tonic::Code::Internal), "bytes after it");
        assert_eq!(code(raw(1, 3, b"abc")), Err(tonic::Code::Internal), "compressed");
        assert_eq!(code(raw(0, u32::MAX, b"abc")), Err(tonic::Code::ResourceExhausted));
    }

    #[test]
    fn headers_are_written_and_read_back_exactly() {
        let lens = [0, 1, 127, 128, 255, 256, 65_535, 65_536, 1 << 24, MAX_RESPONSE_BYTES];
        for len in lens {
            let mut header = Vec::new();
            put_header(&mut header, len);
            assert_eq!(header, raw(0, len as u32, b""), "flag 0, then the length big-endian");
            assert_eq!(message_len(&header).unwrap(), Some(len));
        }
        let sent = RangeResponse { count: 7, more: true, ..Default::default() };
        let framed = frame_one(&sent);
        let mut buf = BytesMut::from(&framed[..]);
        let read = next_message(&mut buf).unwrap().expect("a whole message");
        assert!(buf.is_empty());
        assert_eq!(decode::<RangeResponse>(&read).unwrap(), sent);
        assert_eq!(message(framed).unwrap(), read);
    }

    #[test]
    fn a_partial_header_is_no_message_yet() {
        // Whatever the header will say, a stream waits for all of it, and a unary answer
        // that ends inside it is an error.
        for header in [raw(0, 3, b""), raw(1, 3, b""), raw(0, u32::MAX, b"")] {
            for n in 0..FRAME_HEADER {
                assert_eq!(message_len(&header[..n]).unwrap(), None);
                let mut buf = BytesMut::from(&header[..n]);
                assert_eq!(next_message(&mut buf).unwrap(), None);
                assert_eq!(buf.len(), n, "nothing is consumed");
                assert_eq!(unary(&header[..n]), Err(tonic::Code::Internal));
            }
        }
    }

    #[test]
    fn lengths_over_the_limit_are_refused_from_the_header_alone() {
        let limit = u32::try_from(MAX_RESPONSE_BYTES).unwrap();
        for len in [limit + 1, u32::MAX] {
            let header = raw(0, len, b"");
            let refused = tonic::Code::ResourceExhausted;
            assert_eq!(message_len(&header).unwrap_err().code(), refused);
            assert_eq!(unary(&header).unwrap_err(), refused);
            assert_eq!(stream(&header).unwrap_err(), refused);
        }
        // At the limit a stream waits for the message, without reserving room for it.
        let mut claimed = BytesMut::from(&raw(0, limit, b"")[..]);
        assert_eq!(next_message(&mut claimed).unwrap(), None);
        assert!(claimed.capacity() < 1 << 20, "a claimed 512 MiB is not allocated up front");
        assert_eq!(unary(&raw(0, limit, b"")), Err(tonic::Code::Internal), "truncated");
    }

    #[test]
    fn a_compressed_message_is_refused() {
        for flag in [1, 2, 0x80, 0xff] {
            let framed = raw(flag, 3, b"abc");
            assert_eq!(message_len(&framed).unwrap_err().code(), tonic::Code::Internal);
            assert_eq!(unary(&framed).unwrap_err(), tonic::Code::Internal);
            assert_eq!(stream(&framed).unwrap_err(), tonic::Code::Internal);
        }
        assert_eq!(unary(&raw(0, 3, b"abc")).as_deref(), Ok(&b"abc"[..]));
        assert_eq!(stream(&raw(0, 3, b"abc")).unwrap().as_deref(), Some(&b"abc"[..]));
    }

    #[test]
    fn messages_are_cut_from_the_stream_as_they_complete() {
        let one = [&[0u8, 0, 0, 0, 3][..], b"abc"].concat();
        let empty = [0u8, 0, 0, 0, 0];
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&one[..4]);
        assert_eq!(next_message(&mut buf).unwrap(), None, "a partial prefix");
        buf.extend_from_slice(&one[4..7]);
        assert_eq!(next_message(&mut buf).unwrap(), None, "a partial message");
        buf.extend_from_slice(&one[7..]);
        buf.extend_from_slice(&empty);
        assert_eq!(next_message(&mut buf).unwrap().as_deref(), Some(&b"abc"[..]));
        assert_eq!(next_message(&mut buf).unwrap().as_deref(), Some(&b""[..]));
        assert!(buf.is_empty());
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
            let mut buf = BytesMut::from(&data[..]);
            if let Ok(Some(m)) = next_message(&mut buf) {
                proptest::prop_assert_eq!(data[0], 0);
                proptest::prop_assert_eq!(&data[FRAME_HEADER..FRAME_HEADER + m.len()], &m[..]);
                proptest::prop_assert_eq!(&data[FRAME_HEADER + m.len()..], &buf[..]);
            }
            let _ = decode::<PutResponse>(&data);
            let _ = decode::<RangeResponse>(&data);
            let _ = decode::<DeleteRangeResponse>(&data);
            let _ = decode::<TxnResponse>(&data);
            let _ = decode::<crate::transport::message::AuthenticateResponse>(&data);
        }

        /// A header is read as gRPC says: a length, when the message is not compressed and
        /// is within the limit.
        #[test]
        fn any_header_is_read_as_grpc_says(
            flag in proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::prelude::any::<u8>()],
            len in proptest::prop_oneof![0..=MAX_RESPONSE_BYTES as u32, proptest::prelude::any::<u32>()],
        ) {
            let read = message_len(&raw(flag, len, b"")).map_err(|s| s.code());
            let expected = match (flag, len as usize) {
                (0, len) if len <= MAX_RESPONSE_BYTES => Ok(Some(len)),
                (0, _) => Err(tonic::Code::ResourceExhausted),
                _ => Err(tonic::Code::Internal),
            };
            proptest::prop_assert_eq!(read, expected);
        }

        /// Messages framed one after another and received in arbitrary chunks are cut from
        /// the stream exactly as they were framed, each as soon as its last byte arrives.
        #[test]
        fn a_stream_of_frames_reads_back_as_framed(
            bodies in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), 0..8),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..16),
        ) {
            let mut wire = Vec::new();
            for body in &bodies {
                put_header(&mut wire, body.len());
                wire.extend_from_slice(body);
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (wire.len() + 1)).collect();
            cuts.push(wire.len());
            cuts.sort_unstable();
            let (mut buf, mut read, mut from) = (BytesMut::new(), Vec::new(), 0);
            for to in cuts {
                buf.extend_from_slice(&wire[from..to]);
                from = to;
                while let Some(m) = next_message(&mut buf).unwrap() {
                    read.push(m.to_vec());
                }
                // Every message whose last byte has arrived has been read.
                let arrived = bodies
                    .iter()
                    .scan(0, |end, body| {
                        *end += FRAME_HEADER + body.len();
                        Some(*end)
                    })
                    .filter(|&end| end <= to)
                    .count();
                proptest::prop_assert_eq!(read.len(), arrived);
            }
            proptest::prop_assert_eq!(read, bodies);
            proptest::prop_assert!(buf.is_empty());
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
        let req = PutRequest { key: Key::new(b"k"), value: value.clone(), lease: 0 };
        let Body::Split(head, sent) = frame_put(&req) else { panic!("1 MB value was copied") };
        assert_eq!(sent.as_ptr(), value.as_ptr(), "the value is sent from the shared buffer");
        let mut whole = head.to_vec();
        whole.extend_from_slice(&sent);
        let Body::One(reference) = frame(&req) else { unreachable!() };
        assert_eq!(whole, reference.to_vec());
        assert_eq!(whole.len(), FRAME_HEADER + req.encoded_len());
    }
}
