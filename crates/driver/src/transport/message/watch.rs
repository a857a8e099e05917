//! The Watch service's messages, as etcdlat's own watch streams ([`crate::transport::watch`])
//! send and read them: create requests (one key or a prefix, from a revision, with previous
//! values and progress notifications when asked), progress requests, and responses whose
//! events keep their keys and values as slices of the received buffer ([`Bytes`]): decoding
//! an event copies nothing, where etcd-client's generated types copy each key and value
//! into a `Vec` of its own (a watch cache reads every event of its resource).

use bytes::Bytes;

use super::ResponseHeader;

/// `etcdserverpb.WatchRequest`: a create or a progress request (`request_union`'s fields 1
/// and 3; etcdlat never cancels a watcher: its watchers last as long as their stream). At
/// most one is set, so it encodes as the `oneof` does.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchRequest {
    #[prost(message, optional, tag = "1")]
    pub create_request: Option<WatchCreateRequest>,
    #[prost(message, optional, tag = "3")]
    pub progress_request: Option<WatchProgressRequest>,
}

/// `etcdserverpb.WatchCreateRequest`: a key or a range, from a revision, with or without
/// the previous values and progress notifications (`filters`, `watch_id` and `fragment`
/// left at their defaults).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchCreateRequest {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub range_end: Bytes,
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    #[prost(bool, tag = "4")]
    pub progress_notify: bool,
    #[prost(bool, tag = "6")]
    pub prev_kv: bool,
}

/// `etcdserverpb.WatchProgressRequest`: asks etcd for a progress notification on every
/// watcher of the stream (it has no fields).
#[derive(Clone, Copy, PartialEq, prost::Message)]
pub(crate) struct WatchProgressRequest {}

/// `etcdserverpb.WatchResponse` (`fragment` is never asked for, so not read).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct WatchResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    #[prost(bool, tag = "3")]
    pub created: bool,
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

/// `mvccpb.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Event {
    /// `mvccpb.Event.EventType`: 0 a put, 1 a delete.
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub kv: Option<EventKeyValue>,
    #[prost(message, optional, tag = "3")]
    pub prev_kv: Option<EventKeyValue>,
}

/// `mvccpb.KeyValue` as an event carries it: with its version, which tells a create
/// (version 1) from an update (`create_revision` and `lease` are not read).
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct EventKeyValue {
    #[prost(bytes = "bytes", tag = "1")]
    pub key: Bytes,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(int64, tag = "4")]
    pub version: i64,
    #[prost(bytes = "bytes", tag = "5")]
    pub value: Bytes,
}

/// A watch response read in place, for a reader of every event that needs only their keys,
/// revisions and kinds (a watch cache): nothing is decoded until asked for, and nothing is
/// allocated or reference-counted, where [`WatchResponse`] builds a `Vec` of events and
/// two counted slices per key-value. Fields are etcd's `rpc.proto` and `kv.proto`; others
/// are skipped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WatchView<'a> {
    message: &'a [u8],
    /// The header's revision (0 without one).
    pub revision: i64,
    pub created: bool,
    pub canceled: bool,
    pub compact_revision: i64,
    /// Whether it carries events (their count is not needed, so not taken).
    pub has_events: bool,
}

/// One event of a [`WatchView`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EventView<'a> {
    pub key: &'a [u8],
    pub mod_revision: i64,
    /// The key's version after the event: 1 for a create, 0 for a delete.
    pub version: i64,
    pub deleted: bool,
    /// It carried the key's previous value.
    pub prev_kv: bool,
}

impl<'a> WatchView<'a> {
    /// Reads `message`'s scalar fields, checking its fields are framed whole (its events'
    /// own fields are read by [`Self::events`], once).
    pub(crate) fn parse(message: &'a [u8]) -> Result<Self, Malformed> {
        let mut view = Self {
            message,
            revision: 0,
            created: false,
            canceled: false,
            compact_revision: 0,
            has_events: false,
        };
        for field in Fields(message) {
            match field? {
                (1, Value::Bytes(header)) => {
                    for field in Fields(header) {
                        if let (3, Value::Varint(revision)) = field? {
                            view.revision = revision as i64;
                        }
                    }
                }
                (3, Value::Varint(created)) => view.created = created != 0,
                (4, Value::Varint(canceled)) => view.canceled = canceled != 0,
                (5, Value::Varint(revision)) => view.compact_revision = revision as i64,
                (11, Value::Bytes(_)) => view.has_events = true,
                _ => {}
            }
        }
        Ok(view)
    }

    /// Why etcd cancelled the watcher (empty when it did not say).
    pub(crate) fn cancel_reason(&self) -> &'a str {
        Fields(self.message)
            .find_map(|field| match field {
                Ok((6, Value::Bytes(reason))) => std::str::from_utf8(reason).ok(),
                _ => None,
            })
            .unwrap_or("")
    }

    /// Its events, in order, each read as it is reached.
    pub(crate) fn events(
        &self,
    ) -> impl Iterator<Item = Result<EventView<'a>, Malformed>> + use<'a> {
        Fields(self.message).filter_map(|field| match field {
            Ok((11, Value::Bytes(event))) => Some(EventView::parse(event)),
            _ => None,
        })
    }
}

impl<'a> EventView<'a> {
    fn parse(event: &'a [u8]) -> Result<Self, Malformed> {
        let mut view =
            Self { key: &[], mod_revision: 0, version: 0, deleted: false, prev_kv: false };
        for field in Fields(event) {
            match field? {
                (1, Value::Varint(kind)) => view.deleted = kind == 1,
                (2, Value::Bytes(kv)) => {
                    for field in Fields(kv) {
                        match field? {
                            (1, Value::Bytes(key)) => view.key = key,
                            (3, Value::Varint(revision)) => view.mod_revision = revision as i64,
                            (4, Value::Varint(version)) => view.version = version as i64,
                            _ => {}
                        }
                    }
                }
                (3, Value::Bytes(_)) => view.prev_kv = true,
                _ => {}
            }
        }
        Ok(view)
    }
}

/// A watch response that is not well-formed protobuf, and where.
#[derive(Debug, thiserror::Error)]
#[error("malformed watch response: {0}")]
pub(crate) struct Malformed(&'static str);

/// A protobuf message's fields in order, as (field number, value), read in place.
struct Fields<'a>(&'a [u8]);

/// A field's value: a varint's, or a length-delimited field's bytes (fixed-width values are
/// skipped: these messages have none that is read).
enum Value<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Fixed,
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, Value<'a>), Malformed>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let field = self.field();
        if field.is_err() {
            // Nothing after a malformed field can be read.
            self.0 = &[];
        }
        Some(field)
    }
}

impl<'a> Fields<'a> {
    #[inline]
    fn field(&mut self) -> Result<(u32, Value<'a>), Malformed> {
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| Malformed("a field number"))?;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            2 => {
                let len = usize::try_from(self.varint()?).ok().filter(|&len| len <= self.0.len());
                let len = len.ok_or(Malformed("field runs past its message"))?;
                let (bytes, rest) = self.0.split_at(len);
                self.0 = rest;
                Value::Bytes(bytes)
            }
            width @ (1 | 5) => {
                let rest = self.0.get(if width == 1 { 8 } else { 4 }..);
                self.0 = rest.ok_or(Malformed("field runs past its message"))?;
                Value::Fixed
            }
            _ => return Err(Malformed("a wire type that is not etcd's")),
        };
        Ok((tag, value))
    }

    /// A base-128 varint, at most 10 bytes, taken from the front: one byte at once, longer
    /// ones (revisions, the header's ids) by prost's unrolled reader.
    #[inline]
    fn varint(&mut self) -> Result<u64, Malformed> {
        match self.0 {
            [byte, rest @ ..] if *byte < 0x80 => {
                self.0 = rest;
                Ok(u64::from(*byte))
            }
            _ => prost::encoding::decode_varint(&mut self.0).map_err(|_| Malformed("a varint")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{across, header, pb_header, same_request};
    use super::*;
    use etcd_client::WatchOptions;
    use etcd_client::proto::{
        PbEvent, PbKeyValue, PbWatchRequest, PbWatchRequestUnion, PbWatchResponse,
    };
    use prost::Message;

    #[test]
    fn watch_create_requests_encode_like_generated_code() {
        let keys: [&[u8]; 3] = [b"watchkey", b"\x00watch/\xff", &[7; 300]];
        for key in keys {
            for start_revision in [0, 1, 42, i64::MAX] {
                for (prev_kv, prefix, progress_notify) in
                    [(false, false, false), (true, false, false), (true, true, true)]
                {
                    let range_end = if prefix {
                        Bytes::from(etcdlat_core::workload::prefix_end(key))
                    } else {
                        Bytes::new()
                    };
                    let ours = WatchRequest {
                        create_request: Some(WatchCreateRequest {
                            key: Bytes::copy_from_slice(key),
                            range_end,
                            start_revision,
                            progress_notify,
                            prev_kv,
                        }),
                        progress_request: None,
                    };
                    let mut options =
                        WatchOptions::new().with_key(key).with_start_revision(start_revision);
                    if prev_kv {
                        options = options.with_prev_key();
                    }
                    if prefix {
                        options = options.with_prefix();
                    }
                    if progress_notify {
                        options = options.with_progress_notify();
                    }
                    let reference = PbWatchRequest::from(options);
                    same_request(&ours, &reference);
                    assert_eq!(across::<WatchRequest>(&reference), ours);
                }
            }
        }
        same_request(&WatchRequest::default(), &PbWatchRequest::default());
    }

    /// A progress request is etcd-client's `request_progress`, byte for byte.
    #[test]
    fn progress_requests_encode_like_generated_code() {
        let ours =
            WatchRequest { create_request: None, progress_request: Some(WatchProgressRequest {}) };
        let reference = PbWatchRequest {
            request_union: Some(PbWatchRequestUnion::ProgressRequest(Default::default())),
        };
        same_request(&ours, &reference);
    }

    /// What etcd sends (events with and without previous values, a delete, a progress
    /// notification, a cancellation) decodes to what it says; the fields skipped here are
    /// the only ones lost on the way back.
    #[test]
    fn watch_responses_decode_as_the_server_encodes_them() {
        let pb_kv = |key: &[u8], mod_revision, version, value: &[u8]| PbKeyValue {
            key: key.to_vec(),
            create_revision: 2,
            mod_revision,
            version,
            value: value.to_vec(),
            lease: 9,
        };
        let kv = |key: &'static [u8], mod_revision, version, value: &'static [u8]| EventKeyValue {
            key: Bytes::from_static(key),
            mod_revision,
            version,
            value: Bytes::from_static(value),
        };
        let events = PbWatchResponse {
            header: Some(pb_header()),
            watch_id: 7,
            events: vec![
                PbEvent { r#type: 0, kv: Some(pb_kv(b"/a", 5, 1, b"x")), prev_kv: None },
                PbEvent {
                    r#type: 0,
                    kv: Some(pb_kv(b"/a", 6, 2, &[3; 300])),
                    prev_kv: Some(pb_kv(b"/a", 5, 1, b"x")),
                },
                PbEvent {
                    r#type: 1,
                    kv: Some(pb_kv(b"/a", 7, 0, b"")),
                    prev_kv: Some(pb_kv(b"/a", 6, 2, b"y")),
                },
            ],
            ..Default::default()
        };
        let ours = WatchResponse::decode(Bytes::from(events.encode_to_vec())).unwrap();
        assert_eq!(ours.header, Some(header()));
        assert_eq!((ours.watch_id, ours.created, ours.canceled), (7, false, false));
        assert_eq!(
            ours.events,
            [
                Event { r#type: 0, kv: Some(kv(b"/a", 5, 1, b"x")), prev_kv: None },
                Event {
                    r#type: 0,
                    kv: Some(EventKeyValue {
                        value: Bytes::from(vec![3; 300]),
                        ..kv(b"/a", 6, 2, b"")
                    }),
                    prev_kv: Some(kv(b"/a", 5, 1, b"x")),
                },
                Event {
                    r#type: 1,
                    kv: Some(kv(b"/a", 7, 0, b"")),
                    prev_kv: Some(kv(b"/a", 6, 2, b"y")),
                },
            ]
        );
        let back = across::<PbWatchResponse>(&ours);
        let lost = |kv: &PbKeyValue| PbKeyValue { create_revision: 0, lease: 0, ..kv.clone() };
        for (back, sent) in back.events.iter().zip(&events.events) {
            assert_eq!(back.kv, sent.kv.as_ref().map(lost));
            assert_eq!(back.prev_kv, sent.prev_kv.as_ref().map(lost));
        }

        let cancelled = PbWatchResponse {
            header: Some(pb_header()),
            watch_id: 3,
            canceled: true,
            compact_revision: 40,
            cancel_reason: "mvcc: required revision has been compacted".into(),
            ..Default::default()
        };
        let ours = across::<WatchResponse>(&cancelled);
        assert!(ours.canceled && !ours.created && ours.events.is_empty());
        let bytes = cancelled.encode_to_vec();
        let view = WatchView::parse(&bytes).unwrap();
        assert!(view.canceled && !view.created && !view.has_events);
        assert_eq!((view.compact_revision, view.revision), (40, 3));
        assert_eq!(view.cancel_reason(), ours.cancel_reason);
        assert_eq!(
            (ours.compact_revision, ours.cancel_reason.as_str()),
            (40, "mvcc: required revision has been compacted")
        );
        let created = PbWatchResponse { created: true, ..Default::default() };
        assert!(across::<WatchResponse>(&created).created);
        assert!(WatchView::parse(&created.encode_to_vec()).unwrap().created);
    }

    /// Read in place, a response says what the decoded one says of each event, and a
    /// response cut short is refused or read as its first events, never misread.
    #[test]
    fn a_view_reads_events_as_decoding_does_and_refuses_a_cut_message() {
        let pb_kv = |mod_revision, version, value: &[u8]| PbKeyValue {
            key: format!("/registry/pods/ns-0/p{mod_revision}").into_bytes(),
            create_revision: 2,
            mod_revision,
            version,
            value: value.to_vec(),
            lease: 300,
        };
        let response = PbWatchResponse {
            header: Some(pb_header()),
            watch_id: 1,
            events: vec![
                PbEvent { r#type: 0, kv: Some(pb_kv(5, 1, b"x")), prev_kv: None },
                PbEvent {
                    r#type: 0,
                    kv: Some(pb_kv(300, 2, &[3; 200])),
                    prev_kv: Some(pb_kv(5, 1, b"x")),
                },
                PbEvent {
                    r#type: 1,
                    kv: Some(pb_kv(1 << 40, 0, b"")),
                    prev_kv: Some(pb_kv(6, 2, b"y")),
                },
            ],
            ..Default::default()
        };
        let bytes = response.encode_to_vec();
        let view = WatchView::parse(&bytes).unwrap();
        assert_eq!(
            (view.revision, view.created, view.canceled, view.has_events),
            (3, false, false, true)
        );
        let decoded = WatchResponse::decode(bytes.as_slice()).unwrap();
        let expected: Vec<EventView<'_>> = decoded
            .events
            .iter()
            .map(|e| {
                let kv = e.kv.as_ref().unwrap();
                EventView {
                    key: &kv.key,
                    mod_revision: kv.mod_revision,
                    version: kv.version,
                    deleted: e.r#type == 1,
                    prev_kv: e.prev_kv.is_some(),
                }
            })
            .collect();
        assert_eq!(view.events().collect::<Result<Vec<_>, _>>().unwrap(), expected);
        assert_eq!(expected.iter().map(|e| e.deleted).collect::<Vec<_>>(), [false, false, true]);
        // A message cut inside a field is refused; cut between two, it is a shorter
        // message (the gRPC frame's length keeps that from happening), whose events are
        // the first ones whole, never one misread.
        let mut refused = 0;
        for cut in 1..bytes.len() {
            match WatchView::parse(&bytes[..cut]) {
                Err(_) => refused += 1,
                Ok(view) => {
                    let read: Vec<_> = view.events().collect::<Result<_, _>>().unwrap();
                    assert_eq!(read, expected[..read.len()], "cut at {cut}");
                }
            }
        }
        assert!(refused > bytes.len() * 9 / 10, "{refused} of {} cuts refused", bytes.len());
    }
}
