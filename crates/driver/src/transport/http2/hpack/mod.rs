//! HPACK (RFC 7541): decoding the header blocks of the server's responses.
//!
//! The server's encoder may use all of HPACK, and grpc-go's (etcd's) does: values it sent
//! before are referenced in its dynamic table, literals are Huffman-coded when shorter. The
//! client's own requests need none of it (`codec.rs` writes literals of the static table),
//! so only the decoder is here.
//!
//! Every response head and trailer goes through [`Decoder::decode`], so it allocates
//! nothing per field: fields are handed to the caller as slices of the block, of a table,
//! or of one reused buffer for Huffman-coded strings; the dynamic table keeps its entries
//! in one buffer of its own. What a hostile server controls is bounded: strings by the
//! block they are in, integers by [`MAX_INTEGER`], the table by the size this side
//! advertises.

mod huffman;
mod table;

use table::{Dynamic, STATIC};

/// The dynamic table's size when SETTINGS_HEADER_TABLE_SIZE is not sent (RFC 9113 6.5.2):
/// the client does not send it, so this is the most the server may use.
pub(super) const DEFAULT_TABLE_SIZE: usize = 4_096;

/// The largest integer read (RFC 7541 5.1 leaves it to the implementation): above every
/// index, length and table size a block can validly hold.
const MAX_INTEGER: u64 = (1 << 31) - 1;

/// A Huffman buffer that grew past this (a string of kilobytes) is freed after its block.
const KEEP_SCRATCH: usize = 4 * 1_024;

/// Why a header block could not be decoded. Each is a connection error of type
/// COMPRESSION_ERROR (RFC 9113 4.3): the dynamic table can no longer be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// An integer above [`MAX_INTEGER`], or longer than any such integer can be.
    #[error("an integer over {MAX_INTEGER}")]
    IntegerOverflow,
    /// An index that is 0 or past the static and dynamic tables' entries.
    #[error("index {index} is in neither table ({entries} entries)")]
    IndexOutOfRange { index: usize, entries: usize },
    /// A Huffman-coded string that contains EOS.
    #[error("a Huffman-coded string contains EOS")]
    HuffmanEos,
    /// A Huffman-coded string padded with more than 7 bits, or with bits that are not ones.
    #[error("a Huffman-coded string is padded with more than 7 bits or not with ones")]
    HuffmanPadding,
    /// A dynamic table size update above SETTINGS_HEADER_TABLE_SIZE.
    #[error("a dynamic table size update to {size} bytes, over the {limit} allowed")]
    SizeUpdateOverLimit { size: usize, limit: usize },
    /// A dynamic table size update after a header field (RFC 7541 4.2 allows them only at
    /// the start of a block).
    #[error("a dynamic table size update after a header field")]
    SizeUpdateNotAtStart,
    /// The block ends inside a representation, or a string is longer than what is left.
    #[error("the block ends inside a header field")]
    Truncated,
}

/// A connection's HPACK decoder: its dynamic table and what decoding reuses.
#[derive(Debug)]
pub(crate) struct Decoder {
    table: Dynamic,
    /// The most the server may set the table's size to: SETTINGS_HEADER_TABLE_SIZE as this
    /// side advertises it.
    limit: usize,
    /// The Huffman-decoded strings of the field being decoded (and a name copied out of the
    /// dynamic table when the field may evict it).
    scratch: Vec<u8>,
}

impl Decoder {
    /// A decoder whose dynamic table starts at, and may be set up to, `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self { table: Dynamic::new(limit), limit, scratch: Vec::new() }
    }

    /// Decodes a whole header block, handing `field` each name and value in order. The
    /// dynamic table is updated as the block says, whoever the block is for: the server's
    /// encoder counts on it.
    ///
    /// # Errors
    ///
    /// Why the block is not valid HPACK. Fields before the fault were handed over; the
    /// connection cannot go on, since the table may now differ from the server's.
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        let result = self.fields(&mut Input { block, at: 0 }, &mut field);
        if self.scratch.capacity() > KEEP_SCRATCH {
            self.scratch = Vec::new();
        }
        result
    }

    fn fields(
        &mut self,
        input: &mut Input<'_>,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        let mut at_start = true;
        while let Some(first) = input.peek() {
            self.scratch.clear();
            match first {
                // Indexed header field (6.1).
                0x80..=0xff => {
                    let (name, value) = entry(&self.table, input.integer(7)?)?;
                    field(name, value);
                }
                // Literal header field with incremental indexing (6.2.1).
                0x40..=0x7f => self.literal(input, 6, true, field)?,
                // Dynamic table size update (6.3).
                0x20..=0x3f => {
                    if !at_start {
                        return Err(Error::SizeUpdateNotAtStart);
                    }
                    let size = input.integer(5)?;
                    if size > self.limit {
                        return Err(Error::SizeUpdateOverLimit { size, limit: self.limit });
                    }
                    self.table.set_max_size(size);
                    continue;
                }
                // Literal header field without indexing (6.2.2) or never indexed (6.2.3):
                // the same to an endpoint.
                0x00..=0x1f => self.literal(input, 4, false, field)?,
            }
            at_start = false;
        }
        Ok(())
    }

    /// A literal header field whose name index has a `prefix`-bit prefix; added to the
    /// dynamic table when `index`.
    fn literal(
        &mut self,
        input: &mut Input<'_>,
        prefix: u32,
        index: bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        let name = match input.integer(prefix)? {
            0 => input.string(&mut self.scratch)?,
            i if i <= STATIC.len() => Text::Raw(STATIC[i - 1].0),
            i => {
                // Copied: adding the new entry may evict the one the name is in (4.4).
                let (name, _) = entry(&self.table, i)?;
                let start = self.scratch.len();
                self.scratch.extend_from_slice(name);
                Text::Decoded(start, self.scratch.len())
            }
        };
        let value = input.string(&mut self.scratch)?;
        let (name, value) = (name.bytes(&self.scratch), value.bytes(&self.scratch));
        field(name, value);
        if index {
            self.table.insert(name, value);
        }
        Ok(())
    }
}

/// The entry of `index` (1-based) in the static table, then the dynamic one.
fn entry(table: &Dynamic, index: usize) -> Result<(&[u8], &[u8]), Error> {
    let found = match index.checked_sub(1) {
        Some(i) if i < STATIC.len() => Some(STATIC[i]),
        Some(i) => table.get(i - STATIC.len()),
        None => None,
    };
    found.ok_or(Error::IndexOutOfRange { index, entries: STATIC.len() + table.len() })
}

/// A string literal: bytes of the block (or of the static table), or a range of the
/// decoder's scratch buffer.
#[derive(Clone, Copy)]
enum Text<'a> {
    Raw(&'a [u8]),
    Decoded(usize, usize),
}

impl<'a> Text<'a> {
    fn bytes<'s>(self, scratch: &'s [u8]) -> &'s [u8]
    where
        'a: 's,
    {
        match self {
            Self::Raw(raw) => raw,
            Self::Decoded(start, end) => &scratch[start..end],
        }
    }
}

/// A header block and how far it was read.
struct Input<'a> {
    block: &'a [u8],
    at: usize,
}

impl<'a> Input<'a> {
    fn peek(&self) -> Option<u8> {
        self.block.get(self.at).copied()
    }

    fn byte(&mut self) -> Result<u8, Error> {
        let b = *self.block.get(self.at).ok_or(Error::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    /// An integer with an `n`-bit prefix (5.1), the bits above it ignored.
    fn integer(&mut self, n: u32) -> Result<usize, Error> {
        let max = ((1u16 << n) - 1) as u8;
        let prefix = self.byte()? & max;
        if prefix < max {
            return Ok(usize::from(prefix));
        }
        let mut value = u64::from(max);
        // Five more bytes hold 35 bits: more than MAX_INTEGER.
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            value += u64::from(b & 0x7f) << shift;
            if value > MAX_INTEGER {
                return Err(Error::IntegerOverflow);
            }
            if b & 0x80 == 0 {
                return usize::try_from(value).map_err(|_| Error::IntegerOverflow);
            }
        }
        Err(Error::IntegerOverflow)
    }

    /// A string literal (5.2), Huffman-decoded into `scratch` (appended) if coded.
    fn string(&mut self, scratch: &mut Vec<u8>) -> Result<Text<'a>, Error> {
        let huffman = self.peek().is_some_and(|b| b & 0x80 != 0);
        let len = self.integer(7)?;
        if len > self.block.len() - self.at {
            return Err(Error::Truncated);
        }
        let raw = &self.block[self.at..self.at + len];
        self.at += len;
        if !huffman {
            return Ok(Text::Raw(raw));
        }
        let start = scratch.len();
        huffman::decode(raw, scratch)?;
        Ok(Text::Decoded(start, scratch.len()))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::codec::put_int;
    pub(in super::super) use super::huffman::tests::encode as huffman;
    use super::*;

    /// Bytes from the RFC's hex dumps (spaces and line breaks ignored).
    fn hex(dump: &str) -> Vec<u8> {
        let digits: Vec<u8> = dump.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    /// The fields `block` decodes to, as text.
    pub(in super::super) fn fields(
        decoder: &mut Decoder,
        block: &[u8],
    ) -> Result<Vec<(String, String)>, Error> {
        let mut got = Vec::new();
        decoder.decode(block, |name, value| {
            let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
            got.push((text(name), text(value)));
        })?;
        Ok(got)
    }

    /// Header fields (or table entries) as the RFC lists them.
    type List = [(&'static str, &'static str)];

    fn pairs(list: &List) -> Vec<(String, String)> {
        list.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect()
    }

    /// The dynamic table's entries, newest first, and its size.
    fn table(decoder: &Decoder) -> (Vec<(String, String)>, usize) {
        let text = |b: &[u8]| String::from_utf8(b.to_vec()).unwrap();
        let entries = (0..decoder.table.len())
            .map(|i| decoder.table.get(i).unwrap())
            .map(|(n, v)| (text(n), text(v)))
            .collect();
        (entries, decoder.table.size())
    }

    /// Decodes each `(dump, fields, table, size)` in turn on one decoder, checking the fields
    /// and the dynamic table after each.
    fn sequence(decoder: &mut Decoder, steps: &[(&str, &List, &List, usize)]) {
        for (i, (dump, want, want_table, want_size)) in steps.iter().enumerate() {
            assert_eq!(fields(decoder, &hex(dump)).unwrap(), pairs(want), "block {}", i + 1);
            assert_eq!(table(decoder), (pairs(want_table), *want_size), "table {}", i + 1);
        }
    }

    #[test]
    fn c1_integers() {
        // C.1.1: 10 in a 5-bit prefix (the bits above it belong to the representation).
        assert_eq!(Input { block: &[0b1110_1010], at: 0 }.integer(5), Ok(10));
        // C.1.2: 1337 in a 5-bit prefix.
        let mut input = Input { block: &[0b0001_1111, 0b1001_1010, 0b0000_1010], at: 0 };
        assert_eq!(input.integer(5), Ok(1337));
        assert_eq!(input.at, 3);
        // C.1.3: 42 at an octet boundary.
        assert_eq!(Input { block: &[42], at: 0 }.integer(8), Ok(42));
        // The prefix's maximum itself takes a second byte of 0.
        assert_eq!(Input { block: &[0x1f, 0], at: 0 }.integer(5), Ok(31));
        assert_eq!(Input { block: &[0xff, 0], at: 0 }.integer(8), Ok(255));
    }

    #[test]
    fn c2_header_field_representations() {
        // C.2.1: literal with indexing.
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572");
        assert_eq!(fields(&mut d, &block).unwrap(), pairs(&[("custom-key", "custom-header")]));
        assert_eq!(table(&d), (pairs(&[("custom-key", "custom-header")]), 55));
        // C.2.2: literal without indexing.
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("040c 2f73 616d 706c 652f 7061 7468");
        assert_eq!(fields(&mut d, &block).unwrap(), pairs(&[(":path", "/sample/path")]));
        assert_eq!(table(&d), (vec![], 0));
        // C.2.3: literal never indexed.
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block = hex("1008 7061 7373 776f 7264 0673 6563 7265 74");
        assert_eq!(fields(&mut d, &block).unwrap(), pairs(&[("password", "secret")]));
        assert_eq!(table(&d), (vec![], 0));
        // C.2.4: indexed.
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        assert_eq!(fields(&mut d, &hex("82")).unwrap(), pairs(&[(":method", "GET")]));
        assert_eq!(table(&d), (vec![], 0));
    }

    const REQUEST_1: &List = &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ];
    const REQUEST_2: &List = &[
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
        ("cache-control", "no-cache"),
    ];
    const REQUEST_3: &List = &[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/index.html"),
        (":authority", "www.example.com"),
        ("custom-key", "custom-value"),
    ];
    const REQUEST_TABLE_1: &List = &[(":authority", "www.example.com")];
    const REQUEST_TABLE_2: &List =
        &[("cache-control", "no-cache"), (":authority", "www.example.com")];
    const REQUEST_TABLE_3: &List = &[
        ("custom-key", "custom-value"),
        ("cache-control", "no-cache"),
        (":authority", "www.example.com"),
    ];

    #[test]
    fn c3_requests_without_huffman() {
        sequence(
            &mut Decoder::new(DEFAULT_TABLE_SIZE),
            &[
                (
                    "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
                    REQUEST_1,
                    REQUEST_TABLE_1,
                    57,
                ),
                ("8286 84be 5808 6e6f 2d63 6163 6865", REQUEST_2, REQUEST_TABLE_2, 110),
                (
                    "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
                    REQUEST_3,
                    REQUEST_TABLE_3,
                    164,
                ),
            ],
        );
    }

    #[test]
    fn c4_requests_with_huffman() {
        sequence(
            &mut Decoder::new(DEFAULT_TABLE_SIZE),
            &[
                ("8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", REQUEST_1, REQUEST_TABLE_1, 57),
                ("8286 84be 5886 a8eb 1064 9cbf", REQUEST_2, REQUEST_TABLE_2, 110),
                (
                    "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
                    REQUEST_3,
                    REQUEST_TABLE_3,
                    164,
                ),
            ],
        );
    }

    const DATE_1: &str = "Mon, 21 Oct 2013 20:13:21 GMT";
    const DATE_2: &str = "Mon, 21 Oct 2013 20:13:22 GMT";
    const LOCATION: &str = "https://www.example.com";
    const COOKIE: &str = "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1";
    const RESPONSE_1: &List = &[
        (":status", "302"),
        ("cache-control", "private"),
        ("date", DATE_1),
        ("location", LOCATION),
    ];
    const RESPONSE_2: &List = &[
        (":status", "307"),
        ("cache-control", "private"),
        ("date", DATE_1),
        ("location", LOCATION),
    ];
    const RESPONSE_3: &List = &[
        (":status", "200"),
        ("cache-control", "private"),
        ("date", DATE_2),
        ("location", LOCATION),
        ("content-encoding", "gzip"),
        ("set-cookie", COOKIE),
    ];
    const RESPONSE_TABLE_1: &List = &[
        ("location", LOCATION),
        ("date", DATE_1),
        ("cache-control", "private"),
        (":status", "302"),
    ];
    const RESPONSE_TABLE_2: &List = &[
        (":status", "307"),
        ("location", LOCATION),
        ("date", DATE_1),
        ("cache-control", "private"),
    ];
    const RESPONSE_TABLE_3: &List =
        &[("set-cookie", COOKIE), ("content-encoding", "gzip"), ("date", DATE_2)];

    #[test]
    fn c5_responses_without_huffman_evict() {
        // SETTINGS_HEADER_TABLE_SIZE of 256.
        sequence(
            &mut Decoder::new(256),
            &[
                (
                    "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133
                     2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70
                     6c65 2e63 6f6d",
                    RESPONSE_1,
                    RESPONSE_TABLE_1,
                    222,
                ),
                ("4803 3330 37c1 c0bf", RESPONSE_2, RESPONSE_TABLE_2, 222),
                (
                    "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d
                     54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049
                     5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e
                     3d31",
                    RESPONSE_3,
                    RESPONSE_TABLE_3,
                    215,
                ),
            ],
        );
    }

    #[test]
    fn c6_responses_with_huffman_evict() {
        sequence(
            &mut Decoder::new(256),
            &[
                (
                    "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
                     2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
                    RESPONSE_1,
                    RESPONSE_TABLE_1,
                    222,
                ),
                ("4883 640e ffc1 c0bf", RESPONSE_2, RESPONSE_TABLE_2, 222),
                (
                    "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
                     77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
                     9587 3160 65c0 03ed 4ee5 b106 3d50 07",
                    RESPONSE_3,
                    RESPONSE_TABLE_3,
                    215,
                ),
            ],
        );
    }

    #[test]
    fn size_updates_at_the_start_resize_the_table_within_the_limit() {
        let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
        let block =
            hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d 5808 6e6f 2d63 6163 6865");
        fields(&mut d, &block).unwrap();
        assert_eq!(table(&d), (pairs(REQUEST_TABLE_2), 110));
        // To 60 bytes: only the newest entry stays. Then back up to the limit (4096: 31 + 97
        // + 31 * 128), both at the start of one block, before its fields.
        let got = fields(&mut d, &hex("3f 1d 3f e1 1f be")).unwrap();
        assert_eq!(got, pairs(&[("cache-control", "no-cache")]));
        assert_eq!(table(&d), (pairs(&[("cache-control", "no-cache")]), 53));
        // To 0: the table empties, and a block may be only that.
        assert_eq!(fields(&mut d, &hex("20")).unwrap(), vec![]);
        assert_eq!(table(&d), (vec![], 0));
        // Entries no longer fit until the size is raised again.
        fields(&mut d, &hex("4001 6101 62")).unwrap();
        assert_eq!(table(&d), (vec![], 0));
        fields(&mut d, &hex("3f 1d 4001 6101 62")).unwrap();
        assert_eq!(table(&d), (pairs(&[("a", "b")]), 34));
    }

    #[test]
    fn a_new_entry_may_name_the_entry_it_evicts() {
        // RFC 7541 4.4: a table with room for one entry; the second takes its name from the
        // first, which it evicts.
        let mut d = Decoder::new(40);
        fields(&mut d, &hex("4004 6e61 6d65 0131")).unwrap();
        assert_eq!(table(&d), (pairs(&[("name", "1")]), 37));
        let got = fields(&mut d, &hex("7e 0132")).unwrap();
        assert_eq!(got, pairs(&[("name", "2")]));
        assert_eq!(table(&d), (pairs(&[("name", "2")]), 37));
    }

    #[test]
    fn malformed_blocks_are_refused_with_their_reason() {
        let overlimit = Error::SizeUpdateOverLimit { size: 4_097, limit: DEFAULT_TABLE_SIZE };
        let cases: [(&str, Error); 14] = [
            // An index past 2^31, and one whose integer goes on past five bytes.
            ("ff ff ff ff ff 0f", Error::IntegerOverflow),
            ("ff 80 80 80 80 80 00", Error::IntegerOverflow),
            // Index 0, an index past the (empty) dynamic table, and a name index past it.
            ("80", Error::IndexOutOfRange { index: 0, entries: 61 }),
            ("be", Error::IndexOutOfRange { index: 62, entries: 61 }),
            ("7e 0131", Error::IndexOutOfRange { index: 62, entries: 61 }),
            // A Huffman-coded name that is EOS; a value padded with zeros, and with 11 ones.
            ("00 84 ffff ffff 0131", Error::HuffmanEos),
            ("01 81 00", Error::HuffmanPadding),
            ("01 82 1fff", Error::HuffmanPadding),
            // A size update to 4097 (31 + 98 + 31 * 128), and one after a field.
            ("3f e2 1f", overlimit),
            ("82 20", Error::SizeUpdateNotAtStart),
            // The block ends in an integer, before a value, and inside a string.
            ("ff", Error::Truncated),
            ("01", Error::Truncated),
            ("00 05 61", Error::Truncated),
            ("00 01 61 7f 00", Error::Truncated),
        ];
        for (dump, want) in cases {
            let mut d = Decoder::new(DEFAULT_TABLE_SIZE);
            assert_eq!(fields(&mut d, &hex(dump)), Err(want), "{dump}");
        }
    }

    /// A literal with incremental indexing and a new name, Huffman-coded or not.
    fn literal(name: &[u8], value: &[u8], huffman: bool) -> Vec<u8> {
        let mut out = vec![0x40];
        for s in [name, value] {
            let coded = if huffman { self::huffman(s) } else { s.to_vec() };
            put_int(&mut out, if huffman { 0x80 } else { 0 }, 7, coded.len());
            out.extend_from_slice(&coded);
        }
        out
    }

    proptest::proptest! {
        /// Whatever bytes a server sends as header blocks, decoding them never panics and
        /// either succeeds or names what is wrong; the table stays within its limit.
        #[test]
        fn any_bytes_decode_or_fail_without_panic(
            blocks in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
                1..6,
            ),
        ) {
            let mut d = Decoder::new(256);
            for block in &blocks {
                let _ = d.decode(block, |_, _| {});
                proptest::prop_assert!(d.table.size() <= 256);
            }
        }

        /// Fields added to the dynamic table come back as they were sent when referenced,
        /// however many were evicted in between.
        #[test]
        fn indexed_entries_come_back_as_sent(
            sent in proptest::collection::vec(
                (
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40),
                    proptest::prelude::any::<bool>(),
                ),
                1..40,
            ),
        ) {
            let mut d = Decoder::new(256);
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (name, value, huffman) in &sent {
                let mut got = Vec::new();
                d.decode(&literal(name, value, *huffman), |n, v| got.push((n.to_vec(), v.to_vec())))
                    .unwrap();
                proptest::prop_assert_eq!(&got, &vec![(name.clone(), value.clone())]);
                model.insert(0, (name.clone(), value.clone()));
                while model.iter().map(|(n, v)| n.len() + v.len() + 32).sum::<usize>() > 256 {
                    model.pop();
                }
                // Every entry, by index: 0xbe is 62, the newest.
                let block: Vec<u8> = (0..model.len()).map(|i| 0xbe + i as u8).collect();
                let mut got = Vec::new();
                d.decode(&block, |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
                proptest::prop_assert_eq!(&got, &model);
                proptest::prop_assert_eq!(d.table.len(), model.len());
            }
        }
    }
}
