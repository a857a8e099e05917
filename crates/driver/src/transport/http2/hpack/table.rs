//! HPACK's tables (RFC 7541 2.3): the static table of Appendix A, and the dynamic table the
//! server's encoder fills and this side mirrors, one per connection.

use std::collections::VecDeque;

/// RFC 7541 Appendix A: entry `i` has index `i + 1`.
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What an entry costs beyond its name and value, in the table's size (RFC 7541 4.1).
const ENTRY_OVERHEAD: usize = 32;

/// The dynamic table (RFC 7541 2.3.2, 4): entries newest first, their names and values in
/// one buffer, so that adding an entry allocates nothing once the buffer has grown to the
/// table's use, and the buffer stays under three times the table's maximum size.
#[derive(Debug, Default)]
pub(super) struct Dynamic {
    /// The entries' names and values, oldest first, after the bytes of evicted entries that
    /// the next [`Dynamic::compact`] drops.
    bytes: Vec<u8>,
    /// Where `bytes[0]` is in the positions entries keep (which a compaction leaves as they
    /// are).
    base: usize,
    /// Newest first: index 62 (the first after the static table) is `entries[0]`.
    entries: VecDeque<Entry>,
    /// The table's size as RFC 7541 4.1 counts it.
    size: usize,
    max_size: usize,
}

/// Where an entry's name and value are: `len` bytes of name at `at`, then its value.
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: usize,
    name: usize,
    value: usize,
}

impl Entry {
    fn size(self) -> usize {
        self.name + self.value + ENTRY_OVERHEAD
    }
}

impl Dynamic {
    /// An empty table of at most `max_size` bytes.
    pub(super) fn new(max_size: usize) -> Self {
        Self { max_size, ..Self::default() }
    }

    /// The entry of dynamic index `i` (0 is the newest): its name and value.
    pub(super) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let e = self.entries.get(i)?;
        let at = e.at - self.base;
        let (name, rest) = self.bytes[at..].split_at(e.name);
        Some((name, &rest[..e.value]))
    }

    /// Entries in the table.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The table's size (RFC 7541 4.1): its names and values and 32 bytes per entry.
    #[cfg(test)]
    pub(super) fn size(&self) -> usize {
        self.size
    }

    /// Adds an entry, evicting the oldest until it fits; an entry larger than the table
    /// empties it and is not added (RFC 7541 4.4).
    pub(super) fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        if size > self.max_size {
            while self.evict() {}
            return;
        }
        while self.size + size > self.max_size {
            self.evict();
        }
        self.compact();
        let at = self.base + self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_front(Entry { at, name: name.len(), value: value.len() });
        self.size += size;
    }

    /// A dynamic table size update (RFC 7541 4.3, 6.3): a new maximum, entries evicted
    /// until the table fits it.
    pub(super) fn set_max_size(&mut self, max_size: usize) {
        self.max_size = max_size;
        while self.size > max_size {
            self.evict();
        }
    }

    /// Evicts the oldest entry; false if there was none.
    fn evict(&mut self) -> bool {
        let Some(oldest) = self.entries.pop_back() else { return false };
        self.size -= oldest.size();
        if self.entries.is_empty() {
            self.base += self.bytes.len();
            self.bytes.clear();
        }
        true
    }

    /// Drops evicted entries' bytes once there are at least as many as live ones: the buffer
    /// stays under twice the live bytes plus one entry, and each byte is moved once on
    /// average.
    fn compact(&mut self) {
        let dead = self.entries.back().map_or(self.bytes.len(), |oldest| oldest.at - self.base);
        if dead > 0 && dead >= self.bytes.len() - dead {
            self.bytes.drain(..dead);
            self.base += dead;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(table: &Dynamic) -> Vec<(&[u8], &[u8])> {
        (0..table.len()).map(|i| table.get(i).unwrap()).collect()
    }

    #[test]
    fn entries_are_evicted_oldest_first_by_size() {
        let mut table = Dynamic::new(100);
        table.insert(b"a", b"1");
        table.insert(b"bb", b"22");
        assert_eq!(contents(&table), [(&b"bb"[..], &b"22"[..]), (b"a", b"1")]);
        assert_eq!(table.size(), 34 + 36);
        // 70 + 35 > 100: the oldest goes.
        table.insert(b"c", b"33");
        assert_eq!(contents(&table), [(&b"c"[..], &b"33"[..]), (b"bb", b"22")]);
        assert_eq!(table.size(), 35 + 36);
        // Larger than the table: it empties and the entry is not added.
        table.insert(&[b'x'; 60], &[b'y'; 10]);
        assert_eq!((table.len(), table.size()), (0, 0));
        // Exactly the table's size fits.
        table.insert(&[b'x'; 60], &[b'y'; 8]);
        assert_eq!((table.len(), table.size()), (1, 100));
        table.set_max_size(99);
        assert_eq!((table.len(), table.size()), (0, 0));
    }

    #[test]
    fn the_buffer_stays_bounded_as_entries_come_and_go() {
        let mut table = Dynamic::new(256);
        for i in 0..10_000u32 {
            let value = i.to_string();
            table.insert(b"grpc-message", value.as_bytes());
            assert_eq!(table.get(0).unwrap(), (&b"grpc-message"[..], value.as_bytes()));
            assert!(table.size() <= 256);
            assert!(table.bytes.len() < 3 * 256, "{} bytes kept", table.bytes.len());
        }
        let oldest = table.len() - 1;
        let want = (10_000 - table.len()).to_string();
        assert_eq!(table.get(oldest).unwrap(), (&b"grpc-message"[..], want.as_bytes()));
    }
}
