//! The apiserver's writes as one transaction each, encoded by hand: `Txn(If
//! mod_revision(key) == r, Then Put or Delete, [Else Get])`. A create compares with 0 and
//! has no Else; an update or delete (GuaranteedUpdate) reads the object back in its Else.
//!
//! [`super::TxnRequest`] builds three `Vec`s per request and prost computes each nested
//! message's length at every level it is nested in (a compare in a transaction, a put in a
//! request op in a transaction): 2,800 instructions to frame a 256-byte update, against 750
//! for a put (benches/README.md, issue 28). Here each length is computed once, from
//! borrowed parts, and the bytes written straight into the frame. The tests check every
//! shape byte for byte against the generated types.

use bytes::BufMut;
use prost::encoding::{encode_varint, encoded_len_varint};

/// `etcdserverpb.Compare.CompareTarget.MOD`.
const TARGET_MOD: u64 = 2;

/// Keys of the messages written here: (field number << 3) | wire type.
mod key {
    /// `TxnRequest.compare`, `.success`, `.failure` (length-delimited).
    pub(super) const COMPARE: u8 = 1 << 3 | 2;
    pub(super) const SUCCESS: u8 = 2 << 3 | 2;
    pub(super) const FAILURE: u8 = 3 << 3 | 2;
    /// `Compare.target` (varint), `.key` (bytes), `.mod_revision` (varint, in the oneof).
    pub(super) const TARGET: u8 = 2 << 3;
    pub(super) const COMPARE_KEY: u8 = 3 << 3 | 2;
    pub(super) const MOD_REVISION: u8 = 6 << 3;
    /// `RequestOp.request_range`, `.request_put`, `.request_delete_range`.
    pub(super) const RANGE: u8 = 1 << 3 | 2;
    pub(super) const PUT: u8 = 2 << 3 | 2;
    pub(super) const DELETE: u8 = 3 << 3 | 2;
    /// `PutRequest.key`, `.value`, `.lease`; `RangeRequest.key` and
    /// `DeleteRangeRequest.key` are field 1 too.
    pub(super) const KEY: u8 = 1 << 3 | 2;
    pub(super) const VALUE: u8 = 2 << 3 | 2;
    pub(super) const LEASE: u8 = 3 << 3;
}

/// What the transaction's Then does to its key.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Write<'a> {
    /// A put of `value`, attached to `lease` unless 0.
    Put { value: &'a [u8], lease: i64 },
    /// A delete of the key.
    Delete,
}

/// `Txn(If mod_revision(key) == expected, Then write, Else Get(key) when else_get)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuardedWrite<'a> {
    pub key: &'a [u8],
    pub expected: i64,
    pub write: Write<'a>,
    pub else_get: bool,
}

impl GuardedWrite<'_> {
    /// The encoded `TxnRequest`'s length.
    pub(crate) fn encoded_len(&self) -> usize {
        let compare = self.compare_len();
        let then = self.then_len();
        let mut len = nested(compare) + nested(then);
        if self.else_get {
            len += nested(self.else_len());
        }
        len
    }

    /// Writes the encoded `TxnRequest` (fields in order, as prost writes them).
    pub(crate) fn encode(&self, buf: &mut impl BufMut) {
        buf.put_u8(key::COMPARE);
        encode_varint(self.compare_len() as u64, buf);
        buf.put_u8(key::TARGET);
        encode_varint(TARGET_MOD, buf);
        bytes_field(key::COMPARE_KEY, self.key, buf);
        buf.put_u8(key::MOD_REVISION);
        encode_varint(self.expected as u64, buf);

        buf.put_u8(key::SUCCESS);
        encode_varint(self.then_len() as u64, buf);
        match self.write {
            Write::Put { value, lease } => {
                buf.put_u8(key::PUT);
                encode_varint(self.put_len(value, lease) as u64, buf);
                bytes_field(key::KEY, self.key, buf);
                bytes_field(key::VALUE, value, buf);
                if lease != 0 {
                    buf.put_u8(key::LEASE);
                    encode_varint(lease as u64, buf);
                }
            }
            Write::Delete => {
                buf.put_u8(key::DELETE);
                encode_varint(bytes_len(self.key) as u64, buf);
                bytes_field(key::KEY, self.key, buf);
            }
        }

        if self.else_get {
            buf.put_u8(key::FAILURE);
            encode_varint(self.else_len() as u64, buf);
            buf.put_u8(key::RANGE);
            encode_varint(bytes_len(self.key) as u64, buf);
            bytes_field(key::KEY, self.key, buf);
        }
    }

    /// The `Compare`: target, key, and the revision (a oneof member: written even when 0).
    fn compare_len(&self) -> usize {
        2 + bytes_len(self.key) + 1 + encoded_len_varint(self.expected as u64)
    }

    /// The Then's `RequestOp`.
    fn then_len(&self) -> usize {
        match self.write {
            Write::Put { value, lease } => nested(self.put_len(value, lease)),
            Write::Delete => nested(bytes_len(self.key)),
        }
    }

    fn put_len(&self, value: &[u8], lease: i64) -> usize {
        let lease_len = if lease == 0 { 0 } else { 1 + encoded_len_varint(lease as u64) };
        bytes_len(self.key) + bytes_len(value) + lease_len
    }

    /// The Else's `RequestOp`: a Range of the key alone.
    fn else_len(&self) -> usize {
        nested(bytes_len(self.key))
    }
}

/// A length-delimited field of `len` bytes with its one-byte key and its length.
fn nested(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

/// A bytes field as proto3 writes it: absent when empty.
fn bytes_len(bytes: &[u8]) -> usize {
    if bytes.is_empty() { 0 } else { nested(bytes.len()) }
}

fn bytes_field(key: u8, bytes: &[u8], buf: &mut impl BufMut) {
    if !bytes.is_empty() {
        buf.put_u8(key);
        encode_varint(bytes.len() as u64, buf);
        buf.put_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        Compare, DeleteRangeRequest, Key, PutRequest, RangeRequest, Request, RequestOp, TxnRequest,
    };
    use super::*;
    use bytes::Bytes;
    use prost::Message;

    /// The same transaction as the generated types (through etcdlat's own, which the
    /// module's tests hold to etcd-client's byte for byte).
    fn reference(w: &GuardedWrite<'_>) -> TxnRequest {
        let key = Bytes::copy_from_slice(w.key);
        let then = match w.write {
            Write::Put { value, lease } => Request::Put(PutRequest {
                key: Key::new(w.key),
                value: Bytes::copy_from_slice(value),
                lease,
            }),
            Write::Delete => Request::DeleteRange(DeleteRangeRequest {
                key: key.clone(),
                range_end: Bytes::new(),
            }),
        };
        let get = Request::Range(RangeRequest { key: key.clone(), ..RangeRequest::default() });
        TxnRequest {
            compare: vec![Compare::mod_revision(key, w.expected, false)],
            success: vec![RequestOp { request: Some(then) }],
            failure: if w.else_get { vec![RequestOp { request: Some(get) }] } else { Vec::new() },
        }
    }

    /// Creates, updates and deletes, with and without a lease and an Else, of keys and
    /// values across the one- and two-byte length boundaries, at revisions 0 to the
    /// largest, encode byte for byte as the generated types do.
    #[test]
    fn every_shape_encodes_as_the_generated_types_do() {
        let values = [
            Bytes::new(),
            Bytes::from_static(b"v"),
            Bytes::from(vec![7; 127]),
            Bytes::from(vec![7; 128]),
            Bytes::from(vec![9; 70_000]),
        ];
        let keys: [&[u8]; 4] = [b"/registry/pods/ns-0/object-00000001", b"k", &[1; 127], &[2; 200]];
        let mut shapes = 0;
        for key in keys {
            for expected in [0, 1, 300, i64::MAX] {
                for else_get in [false, true] {
                    let mut writes = vec![Write::Delete];
                    for value in &values {
                        for lease in [0, 1, 0x7fff_ffff_ffff] {
                            writes.push(Write::Put { value, lease });
                        }
                    }
                    for write in writes {
                        let w = GuardedWrite { key, expected, write, else_get };
                        let mut ours = Vec::new();
                        w.encode(&mut ours);
                        let theirs = reference(&w).encode_to_vec();
                        assert_eq!(ours, theirs, "{w:?}");
                        assert_eq!(w.encoded_len(), theirs.len(), "{w:?}");
                        shapes += 1;
                    }
                }
            }
        }
        assert_eq!(shapes, 4 * 4 * 2 * 16);
    }
}
