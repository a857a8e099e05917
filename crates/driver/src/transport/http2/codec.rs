//! HTTP/2's frames as the client writes and reads them (RFC 9113), and request heads in
//! HPACK (RFC 7541) without its dynamic table: indexed entries and literals of the static
//! table, which every server decodes and which cost the client nothing to keep.

use bytes::{Buf, BufMut, BytesMut};

/// The connection preface a client opens with.
pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A frame's header: length, type, flags and stream.
pub(super) const HEADER_LEN: usize = 9;

/// The largest frame payload either side may send unless told otherwise, and the largest
/// this client accepts (it never advertises more).
pub(super) const DEFAULT_MAX_FRAME: usize = 16_384;

/// Frame types.
pub(super) const DATA: u8 = 0x0;
pub(super) const HEADERS: u8 = 0x1;
pub(super) const PRIORITY_FRAME: u8 = 0x2;
pub(super) const RST_STREAM: u8 = 0x3;
pub(super) const SETTINGS: u8 = 0x4;
pub(super) const PUSH_PROMISE: u8 = 0x5;
pub(super) const PING: u8 = 0x6;
pub(super) const GOAWAY: u8 = 0x7;
pub(super) const WINDOW_UPDATE: u8 = 0x8;
pub(super) const CONTINUATION: u8 = 0x9;

/// Flags.
pub(super) const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY: u8 = 0x20;

/// Settings.
pub(super) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(super) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(super) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(super) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub(super) const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// Error codes (the ones the client sends or maps).
pub(super) const NO_ERROR: u32 = 0x0;
pub(super) const PROTOCOL_ERROR: u32 = 0x1;
pub(super) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(super) const STREAM_CLOSED: u32 = 0x5;
pub(super) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(super) const COMPRESSION_ERROR: u32 = 0x9;
pub(crate) const REFUSED_STREAM: u32 = 0x7;
pub(crate) const CANCEL: u32 = 0x8;
pub(crate) const ENHANCE_YOUR_CALM: u32 = 0xb;
pub(crate) const INADEQUATE_SECURITY: u32 = 0xc;

/// An error code's name, as RFC 9113 gives it.
pub(crate) fn reason(code: u32) -> &'static str {
    match code {
        0x0 => "NO_ERROR",
        0x1 => "PROTOCOL_ERROR",
        0x2 => "INTERNAL_ERROR",
        0x3 => "FLOW_CONTROL_ERROR",
        0x4 => "SETTINGS_TIMEOUT",
        0x5 => "STREAM_CLOSED",
        0x6 => "FRAME_SIZE_ERROR",
        0x7 => "REFUSED_STREAM",
        0x8 => "CANCEL",
        0x9 => "COMPRESSION_ERROR",
        0xa => "CONNECT_ERROR",
        0xb => "ENHANCE_YOUR_CALM",
        0xc => "INADEQUATE_SECURITY",
        0xd => "HTTP_1_1_REQUIRED",
        _ => "unknown error code",
    }
}

/// A frame's header, read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// The header at the front of `buf`, if nine bytes have arrived.
    pub(super) fn peek(buf: &[u8]) -> Option<Self> {
        let [a, b, c, kind, flags, s0, s1, s2, s3, ..] = *buf else { return None };
        Some(Self {
            len: usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c),
            kind,
            flags,
            stream: u32::from_be_bytes([s0, s1, s2, s3]) & 0x7fff_ffff,
        })
    }
}

/// Writes a frame's header.
pub(super) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&[(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags]);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// The client's SETTINGS: no server push, `window` for each stream, header lists of
/// `max_list` bytes at most (as RFC 9113 counts them).
pub(super) fn put_settings(out: &mut Vec<u8>, window: u32, max_list: u32) {
    let settings = [
        (SETTINGS_ENABLE_PUSH, 0),
        (SETTINGS_INITIAL_WINDOW_SIZE, window),
        (SETTINGS_MAX_HEADER_LIST_SIZE, max_list),
    ];
    put_head(out, 6 * settings.len(), SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

pub(super) fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, SETTINGS, ACK, 0);
}

pub(super) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & 0x7fff_ffff).to_be_bytes());
}

pub(super) fn put_ping(out: &mut Vec<u8>, flags: u8, payload: [u8; 8]) {
    put_head(out, 8, PING, flags, 0);
    out.extend_from_slice(&payload);
}

pub(super) fn put_reset(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub(super) fn put_go_away(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A header field: its name (in lower case) and value.
pub(crate) type Field<'a> = (&'a [u8], &'a [u8]);

/// A request's head, for [`put_headers`].
pub(crate) struct RequestHead<'a> {
    pub https: bool,
    pub authority: &'a str,
    pub path: &'a str,
    /// Header fields after the pseudo-headers.
    pub fields: &'a [Field<'a>],
}

/// HPACK's static table: `:method: POST`, `:scheme: http`, `:scheme: https`.
const METHOD_POST: u8 = 3;
const SCHEME_HTTP: u8 = 6;
const SCHEME_HTTPS: u8 = 7;
/// Names of the static table.
const NAME_AUTHORITY: usize = 1;
const NAME_PATH: usize = 4;
const NAME_CONTENT_TYPE: usize = 31;
const NAME_USER_AGENT: usize = 58;

/// Writes `head` as a POST's HEADERS frame on `stream` (with CONTINUATION frames if its
/// block is larger than `max_frame`), ending the stream when `end`.
pub(super) fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    head: &RequestHead<'_>,
    end: bool,
    max_frame: usize,
) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    out.push(0x80 | METHOD_POST);
    out.push(0x80 | if head.https { SCHEME_HTTPS } else { SCHEME_HTTP });
    put_literal(out, NAME_PATH, head.path.as_bytes());
    put_literal(out, NAME_AUTHORITY, head.authority.as_bytes());
    for &(name, value) in head.fields {
        match name {
            b"content-type" => put_literal(out, NAME_CONTENT_TYPE, value),
            b"user-agent" => put_literal(out, NAME_USER_AGENT, value),
            _ => {
                out.push(0);
                put_string(out, name);
                put_string(out, value);
            }
        }
    }
    let block = out.len() - start - HEADER_LEN;
    let flags = if end { END_STREAM } else { 0 };
    if block <= max_frame {
        let mut header = Vec::with_capacity(HEADER_LEN);
        put_head(&mut header, block, HEADERS, flags | END_HEADERS, stream);
        out[start..start + HEADER_LEN].copy_from_slice(&header);
        return;
    }
    // Rare (a header block over 16 KB): cut it into HEADERS and CONTINUATION frames.
    let block = out.split_off(start + HEADER_LEN);
    out.truncate(start);
    let mut chunks = block.chunks(max_frame).peekable();
    let mut first = true;
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        let (kind, mut f) = if first { (HEADERS, flags) } else { (CONTINUATION, 0) };
        if last {
            f |= END_HEADERS;
        }
        put_head(out, chunk.len(), kind, f, stream);
        out.extend_from_slice(chunk);
        first = false;
    }
}

/// A literal header field without indexing, its name from the static table.
fn put_literal(out: &mut Vec<u8>, name: usize, value: &[u8]) {
    put_int(out, 0, 4, name);
    put_string(out, value);
}

/// A string literal, not Huffman-coded.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// HPACK's integer with an `n`-bit prefix, after the bits in `high`.
pub(super) fn put_int(out: &mut Vec<u8>, high: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(high | value as u8);
        return;
    }
    out.push(high | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// Strips a received frame's padding; `None` if the frame says more padding than it has.
pub(super) fn unpad(flags: u8, payload: &mut BytesMut) -> Option<()> {
    if flags & PADDED == 0 {
        return Some(());
    }
    let pad = usize::from(*payload.first()?);
    payload.advance(1);
    if pad > payload.len() {
        return None;
    }
    payload.truncate(payload.len() - pad);
    Some(())
}

/// Strips a HEADERS frame's padding and priority, leaving its header block fragment; the
/// error code if they do not fit: PROTOCOL_ERROR for padding past the frame's end
/// (RFC 9113 6.2), FRAME_SIZE_ERROR for a frame too short for its priority (4.2).
pub(super) fn header_fragment(flags: u8, payload: &mut BytesMut) -> Result<(), u32> {
    let whole = payload.len();
    unpad(flags, payload).ok_or(PROTOCOL_ERROR)?;
    if flags & PRIORITY != 0 {
        if payload.len() < 5 {
            let unpadded = whole - usize::from(flags & PADDED != 0);
            return Err(if unpadded >= 5 { PROTOCOL_ERROR } else { FRAME_SIZE_ERROR });
        }
        payload.advance(5);
    }
    Ok(())
}

/// The settings in a SETTINGS frame's payload.
pub(super) fn settings(payload: &[u8]) -> Option<impl Iterator<Item = (u16, u32)> + '_> {
    payload.len().is_multiple_of(6).then(|| {
        payload.chunks_exact(6).map(|s| {
            (u16::from_be_bytes([s[0], s[1]]), u32::from_be_bytes([s[2], s[3], s[4], s[5]]))
        })
    })
}

/// A big-endian `u32` at the front of `payload`, its reserved bit cleared.
pub(super) fn u31(payload: &[u8]) -> Option<u32> {
    let [a, b, c, d, ..] = *payload else { return None };
    Some(u32::from_be_bytes([a, b, c, d]) & 0x7fff_ffff)
}

/// A big-endian `u32` at `at` in `payload`.
pub(super) fn u32_at(payload: &[u8], at: usize) -> Option<u32> {
    let b = payload.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// A header block being collected: a HEADERS frame, then CONTINUATION frames until one
/// ends it.
pub(super) struct Block {
    pub stream: u32,
    pub end_stream: bool,
    pub fragments: BytesMut,
}

impl Block {
    pub(super) fn new(stream: u32, end_stream: bool, first: &[u8]) -> Self {
        let mut fragments = BytesMut::with_capacity(first.len());
        fragments.put_slice(first);
        Self { stream, end_stream, fragments }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::hpack::{self, Decoder};
    use super::*;

    /// What an HPACK decoder reads from `block`: the client's own, which is checked against
    /// RFC 7541's examples.
    pub(in super::super) fn decoded(block: &[u8]) -> Vec<(String, String)> {
        let mut decoder = Decoder::new(hpack::DEFAULT_TABLE_SIZE);
        hpack::tests::fields(&mut decoder, block).unwrap()
    }

    #[test]
    fn request_heads_decode_as_written() {
        let long = "x".repeat(300);
        let fields: &[(&[u8], &[u8])] = &[
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
            (b"token", long.as_bytes()),
            (b"user-agent", b"etcdlat"),
        ];
        let head = RequestHead {
            https: true,
            authority: "127.0.0.1:2379",
            path: "/etcdserverpb.KV/Put",
            fields,
        };
        let mut out = Vec::new();
        put_headers(&mut out, 3, &head, true, DEFAULT_MAX_FRAME);
        let h = Head::peek(&out).unwrap();
        assert_eq!((h.kind, h.flags, h.stream), (HEADERS, END_STREAM | END_HEADERS, 3));
        assert_eq!(h.len, out.len() - HEADER_LEN);
        let got = decoded(&out[HEADER_LEN..]);
        let want: Vec<(String, String)> = [
            (":method", "POST"),
            (":scheme", "https"),
            (":path", "/etcdserverpb.KV/Put"),
            (":authority", "127.0.0.1:2379"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("token", long.as_str()),
            ("user-agent", "etcdlat"),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_large_header_block_is_cut_into_continuations() {
        let big = "y".repeat(50);
        let fields: &[(&[u8], &[u8])] = &[(b"token", big.as_bytes())];
        let head = RequestHead { https: false, authority: "h:1", path: "/p", fields };
        let mut out = Vec::new();
        put_headers(&mut out, 5, &head, false, 16);
        let (mut at, mut block, mut kinds) = (0, Vec::new(), Vec::new());
        while at < out.len() {
            let h = Head::peek(&out[at..]).unwrap();
            assert!(h.len <= 16);
            kinds.push((h.kind, h.flags));
            block.extend_from_slice(&out[at + HEADER_LEN..at + HEADER_LEN + h.len]);
            at += HEADER_LEN + h.len;
        }
        assert_eq!(kinds.first(), Some(&(HEADERS, 0)));
        assert_eq!(kinds.last(), Some(&(CONTINUATION, END_HEADERS)));
        assert!(kinds[1..kinds.len() - 1].iter().all(|k| *k == (CONTINUATION, 0)));
        assert_eq!(decoded(&block).last().unwrap().1, big);
    }

    #[test]
    fn integers_take_their_prefix_and_continue_in_sevens() {
        let mut out = Vec::new();
        put_int(&mut out, 0, 5, 10);
        put_int(&mut out, 0, 5, 1337);
        put_int(&mut out, 0x80, 7, 127);
        assert_eq!(out, [10, 31, 154, 10, 0xff, 0]);
    }

    #[test]
    fn padding_and_priority_are_stripped_and_bad_padding_refused() {
        let mut padded = BytesMut::from(&[2, b'a', b'b', 0, 0][..]);
        assert!(unpad(PADDED, &mut padded).is_some());
        assert_eq!(padded, &b"ab"[..]);
        assert!(unpad(PADDED, &mut BytesMut::from(&[9, 1][..])).is_none());
        assert!(unpad(PADDED, &mut BytesMut::new()).is_none());
        let mut prioritised = BytesMut::from(&[0, 0, 0, 1, 16, 0x88][..]);
        assert!(header_fragment(PRIORITY, &mut prioritised).is_ok());
        assert_eq!(prioritised, &[0x88][..]);
        let short = header_fragment(PRIORITY, &mut BytesMut::from(&[1, 2][..]));
        assert_eq!(short, Err(FRAME_SIZE_ERROR));
        let padding_over_priority = [3, 0, 0, 0, 1, 16, 0x88];
        let eaten =
            header_fragment(PRIORITY | PADDED, &mut BytesMut::from(&padding_over_priority[..]));
        assert_eq!(eaten, Err(PROTOCOL_ERROR));
        let settings_payload = [0, 4, 0, 1, 0, 0, 0, 5, 0, 0, 64, 0];
        let read: Vec<_> = settings(&settings_payload).unwrap().collect();
        assert_eq!(read, [(4, 65_536), (5, 16_384)]);
        assert!(settings(&[0, 1, 2]).is_none());
    }
}
