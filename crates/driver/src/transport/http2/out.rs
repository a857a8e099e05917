//! A connection's outgoing bytes: frames copied into one buffer, large payloads (1 MB
//! values) kept in their own buffers, all written in order by one `writev`; and DATA cut
//! to what the flow-control windows and the frame size allow.

use std::io::IoSlice;

use bytes::Bytes;

use super::codec;

/// Payloads at least this large are written from their own buffers, not copied.
const DIRECT: usize = 8 * 1024;
/// A buffer of outgoing bytes that grew past this is given back once written, so that a
/// connection that once carried a burst does not keep its memory while idle.
const KEEP: usize = 16 * 1024;

/// Bytes waiting to be written: frames copied into `buf`, and large payloads kept as they
/// are, each to go after the bytes of `buf` before its offset.
#[derive(Default)]
pub(super) struct Out {
    buf: Vec<u8>,
    large: Vec<(usize, Bytes)>,
}

impl Out {
    pub(super) fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.large.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.buf.len() + self.large.iter().map(|(_, b)| b.len()).sum::<usize>()
    }

    pub(super) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    fn push_payload(&mut self, payload: Bytes) {
        if payload.len() >= DIRECT {
            self.large.push((self.buf.len(), payload));
        } else {
            self.buf.extend_from_slice(&payload);
        }
    }

    /// Moves everything in `other` to the end of this.
    pub(super) fn append(&mut self, other: &mut Out) {
        let base = self.buf.len();
        self.buf.append(&mut other.buf);
        self.large.extend(other.large.drain(..).map(|(at, b)| (base + at, b)));
    }

    /// The bytes after the first `skip`, as slices in order; how many were filled.
    pub(super) fn slices<'a>(&'a self, mut skip: usize, slices: &mut [IoSlice<'a>]) -> usize {
        let mut count = 0;
        let mut from = 0;
        let mut push = |piece: &'a [u8], skip: &mut usize, count: &mut usize| {
            if *count == slices.len() {
                return;
            }
            if *skip >= piece.len() {
                *skip -= piece.len();
                return;
            }
            slices[*count] = IoSlice::new(&piece[*skip..]);
            *skip = 0;
            *count += 1;
        };
        for (at, large) in &self.large {
            push(&self.buf[from..*at], &mut skip, &mut count);
            push(&large[..], &mut skip, &mut count);
            from = *at;
        }
        push(&self.buf[from..], &mut skip, &mut count);
        count
    }

    /// Empties it, giving back a buffer that grew large.
    pub(super) fn clear(&mut self) {
        if self.buf.capacity() > KEEP {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.large.clear();
    }
}

/// Writes `data` as DATA frames on stream `id`, as far as the stream's and the
/// connection's windows allow, ending the stream with the last when `end`; whether all of
/// it went (what did not is left in `data`).
pub(super) fn put_data(
    out: &mut Out,
    max_frame: usize,
    stream_window: &mut i64,
    conn_window: &mut i64,
    id: u32,
    data: &mut Bytes,
    end: bool,
) -> bool {
    loop {
        let allowed = (*stream_window).min(*conn_window).clamp(0, max_frame as i64) as usize;
        let n = data.len().min(allowed);
        if n == 0 && !data.is_empty() {
            return false;
        }
        let last = n == data.len();
        if n == 0 && !end {
            return true;
        }
        let flags = if last && end { codec::END_STREAM } else { 0 };
        codec::put_head(&mut out.buf, n, codec::DATA, flags, id);
        let chunk = data.split_to(n);
        out.push_payload(chunk);
        *stream_window -= n as i64;
        *conn_window -= n as i64;
        if last {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(out: &Out) -> Vec<u8> {
        let mut slices = [IoSlice::new(&[]); 64];
        let n = out.slices(0, &mut slices);
        slices[..n].iter().flat_map(|s| s.iter().copied()).collect()
    }

    #[test]
    fn large_payloads_go_between_the_frames_around_them_and_skip_counts_across() {
        let mut out = Out::default();
        out.buf.extend_from_slice(b"ab");
        let large = Bytes::from(vec![b'x'; DIRECT]);
        out.push_payload(large.clone());
        let mut slices = [IoSlice::new(&[]); 64];
        assert_eq!(out.slices(0, &mut slices), 2);
        assert_eq!(slices[1].as_ptr(), large.as_ptr(), "written from its own buffer, not copied");
        out.buf.extend_from_slice(b"cd");
        out.push_payload(Bytes::from_static(b"small"));
        let mut want = b"ab".to_vec();
        want.extend(vec![b'x'; DIRECT]);
        want.extend_from_slice(b"cdsmall");
        assert_eq!(written(&out), want);
        assert_eq!(out.len(), want.len());
        let mut slices = [IoSlice::new(&[]); 64];
        let n = out.slices(DIRECT + 1, &mut slices);
        let rest: Vec<u8> = slices[..n].iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(rest, want[DIRECT + 1..]);
        let mut other = Out::default();
        other.buf.extend_from_slice(b"12");
        other.push_payload(Bytes::from(vec![b'y'; DIRECT]));
        out.append(&mut other);
        assert!(other.is_empty());
        want.extend_from_slice(b"12");
        want.extend(vec![b'y'; DIRECT]);
        assert_eq!(written(&out), want);
    }

    #[test]
    fn data_is_cut_by_the_windows_and_the_frame_size() {
        let mut out = Out::default();
        let (mut stream, mut conn) = (40_000, 100_000);
        let mut data = Bytes::from(vec![1u8; 50_000]);
        assert!(!put_data(&mut out, 16_384, &mut stream, &mut conn, 1, &mut data, true));
        assert_eq!((stream, conn, data.len()), (0, 60_000, 10_000));
        let bytes = written(&out);
        let mut at = 0;
        let mut frames = Vec::new();
        while at < bytes.len() {
            let h = codec::Head::peek(&bytes[at..]).unwrap();
            frames.push((h.len, h.flags));
            at += codec::HEADER_LEN + h.len;
        }
        assert_eq!(frames, [(16_384, 0), (16_384, 0), (7_232, 0)]);
        stream = 20_000;
        let mut out = Out::default();
        assert!(put_data(&mut out, 16_384, &mut stream, &mut conn, 1, &mut data, true));
        assert_eq!(codec::Head::peek(&written(&out)).unwrap().flags, codec::END_STREAM);
        let mut empty = Bytes::new();
        let mut out = Out::default();
        assert!(put_data(&mut out, 16_384, &mut 0, &mut 0, 3, &mut empty, true));
        assert_eq!(written(&out), [0, 0, 0, 0, codec::END_STREAM, 0, 0, 0, 3]);
    }
}
