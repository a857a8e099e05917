//! HPACK's Huffman code (RFC 7541 5.2, Appendix B), decoded four bits at a time: a state
//! machine built from the RFC's code table at compile time, one table look-up per four bits
//! instead of a walk down the code's tree per bit.
//!
//! A state is an internal node of the code's tree (257 leaves, so 256 internal nodes, one
//! byte each): the bits read since the last whole symbol. Four bits complete at most one
//! symbol, since the shortest code is five bits long.

use super::Error;

/// RFC 7541 Appendix B: each symbol's code, aligned to the right, and its length in bits.
/// The 257th is EOS, which a string must not contain.
#[rustfmt::skip]
const CODES: [(u32, u8); 257] = [
    // 0..=4
    (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28),
    // 5..=9
    (0xfffffe5, 28), (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24),
    // 10..=14
    (0x3ffffffc, 30), (0xfffffe9, 28), (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28),
    // 15..=19
    (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28), (0xfffffef, 28), (0xffffff0, 28),
    // 20..=24
    (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28), (0xffffff4, 28),
    // 25..=29
    (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
    // 30..='"'
    (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10),
    // '#'..=39
    (0xffa, 12), (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11),
    // '('..=','
    (0x3fa, 10), (0x3fb, 10), (0xf9, 8), (0x7fb, 11), (0xfa, 8),
    // '-'..='1'
    (0x16, 6), (0x17, 6), (0x18, 6), (0x0, 5), (0x1, 5),
    // '2'..='6'
    (0x2, 5), (0x19, 6), (0x1a, 6), (0x1b, 6), (0x1c, 6),
    // '7'..=';'
    (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
    // '<'..='@'
    (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13),
    // 'A'..='E'
    (0x21, 6), (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7),
    // 'F'..='J'
    (0x61, 7), (0x62, 7), (0x63, 7), (0x64, 7), (0x65, 7),
    // 'K'..='O'
    (0x66, 7), (0x67, 7), (0x68, 7), (0x69, 7), (0x6a, 7),
    // 'P'..='T'
    (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7), (0x6f, 7),
    // 'U'..='Y'
    (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
    // 'Z'..='^'
    (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14),
    // '_'..='c'
    (0x22, 6), (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5),
    // 'd'..='h'
    (0x24, 6), (0x5, 5), (0x25, 6), (0x26, 6), (0x27, 6),
    // 'i'..='m'
    (0x6, 5), (0x74, 7), (0x75, 7), (0x28, 6), (0x29, 6),
    // 'n'..='r'
    (0x2a, 6), (0x7, 5), (0x2b, 6), (0x76, 7), (0x2c, 6),
    // 's'..='w'
    (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
    // 'x'..='|'
    (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), (0x7fc, 11),
    // '}'..=129
    (0x3ffd, 14), (0x1ffd, 13), (0xffffffc, 28), (0xfffe6, 20), (0x3fffd2, 22),
    // 130..=134
    (0xfffe7, 20), (0xfffe8, 20), (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22),
    // 135..=139
    (0x7fffd9, 23), (0x3fffd6, 22), (0x7fffda, 23), (0x7fffdb, 23), (0x7fffdc, 23),
    // 140..=144
    (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23), (0xffffec, 24),
    // 145..=149
    (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23),
    // 150..=154
    (0x7fffe2, 23), (0x7fffe3, 23), (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22),
    // 155..=159
    (0x7fffe5, 23), (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24),
    // 160..=164
    (0x3fffda, 22), (0x1fffdd, 21), (0xfffe9, 20), (0x3fffdb, 22), (0x3fffdc, 22),
    // 165..=169
    (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21), (0x7fffea, 23), (0x3fffdd, 22),
    // 170..=174
    (0x3fffde, 22), (0xfffff0, 24), (0x1fffdf, 21), (0x3fffdf, 22), (0x7fffeb, 23),
    // 175..=179
    (0x7fffec, 23), (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
    // 180..=184
    (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23), (0xfffea, 20),
    // 185..=189
    (0x3fffe2, 22), (0x3fffe3, 22), (0x3fffe4, 22), (0x7ffff0, 23), (0x3fffe5, 22),
    // 190..=194
    (0x3fffe6, 22), (0x7ffff1, 23), (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20),
    // 195..=199
    (0x7fff1, 19), (0x3fffe7, 22), (0x7ffff2, 23), (0x3fffe8, 22), (0x1ffffec, 25),
    // 200..=204
    (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27), (0x7ffffdf, 27),
    // 205..=209
    (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), (0x7fff2, 19), (0x1fffe3, 21),
    // 210..=214
    (0x3ffffe6, 26), (0x7ffffe0, 27), (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27),
    // 215..=219
    (0xfffff2, 24), (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26),
    // 220..=224
    (0xffffffd, 28), (0x7ffffe3, 27), (0x7ffffe4, 27), (0x7ffffe5, 27), (0xfffec, 20),
    // 225..=229
    (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21), (0x3fffe9, 22), (0x1fffe7, 21),
    // 230..=234
    (0x1fffe8, 21), (0x7ffff3, 23), (0x3fffea, 22), (0x3fffeb, 22), (0x1ffffee, 25),
    // 235..=239
    (0x1ffffef, 25), (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
    // 240..=244
    (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), (0x7ffffe7, 27),
    // 245..=249
    (0x7ffffe8, 27), (0x7ffffe9, 27), (0x7ffffea, 27), (0x7ffffeb, 27), (0xffffffe, 28),
    // 250..=254
    (0x7ffffec, 27), (0x7ffffed, 27), (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27),
    // 255..=EOS
    (0x3ffffee, 26), (0x3fffffff, 30),
];

/// A child in [`tree`]'s nodes that is a leaf: its symbol in the low bits.
const LEAF: u16 = 0x8000;
/// The symbol that may only pad, never appear.
const EOS_SYMBOL: u16 = 256;

/// The four bits completed a symbol, [`Step::symbol`].
const EMIT: u8 = 1;
/// The four bits completed EOS: the string is not valid.
const EOS: u8 = 2;
/// The string may end after the four bits: what was read since the last symbol is padding,
/// at most 7 bits, all ones (the start of EOS's code).
const ACCEPT: u8 = 4;

/// What reading four bits does in a state.
#[derive(Clone, Copy)]
struct Step {
    /// The state after them.
    next: u8,
    /// The symbol they completed, when `flags` has [`EMIT`].
    symbol: u8,
    flags: u8,
}

/// The state machine: `STEPS[state][four bits]`.
static STEPS: [[Step; 16]; 256] = steps();

/// The code's tree: each internal node's children by bit, each another node's index or
/// [`LEAF`] with a symbol. Node 0 is the root. Building it fails to compile if the table is
/// not a prefix code of exactly 256 internal nodes.
const fn tree() -> [[u16; 2]; 256] {
    let mut nodes = [[0u16; 2]; 256];
    let mut used = 1;
    let mut symbol = 0;
    while symbol < CODES.len() {
        let (code, len) = CODES[symbol];
        let mut node = 0;
        let mut bit = len;
        while bit > 1 {
            bit -= 1;
            let b = ((code >> bit) & 1) as usize;
            if nodes[node][b] == 0 {
                nodes[node][b] = used as u16;
                used += 1;
            }
            node = nodes[node][b] as usize;
        }
        nodes[node][(code & 1) as usize] = LEAF | symbol as u16;
        symbol += 1;
    }
    assert!(used == 256, "the code table is not a complete prefix code");
    nodes
}

const fn steps() -> [[Step; 16]; 256] {
    let nodes = tree();
    // Padding: the nodes on the path of ones from the root, up to 7 deep.
    let mut padding = [false; 256];
    let mut node = 0;
    let mut depth = 0;
    while depth <= 7 {
        padding[node] = true;
        node = nodes[node][1] as usize;
        depth += 1;
    }
    let mut steps = [[Step { next: 0, symbol: 0, flags: 0 }; 16]; 256];
    let mut state = 0;
    while state < 256 {
        let mut nibble = 0;
        while nibble < 16 {
            let mut step = Step { next: 0, symbol: 0, flags: 0 };
            let mut node = state;
            let mut bit = 4;
            while bit > 0 {
                bit -= 1;
                let child = nodes[node][(nibble >> bit) & 1];
                if child & LEAF == 0 {
                    node = child as usize;
                } else {
                    if child == LEAF | EOS_SYMBOL {
                        step.flags |= EOS;
                    } else {
                        step.flags |= EMIT;
                        step.symbol = child as u8;
                    }
                    node = 0;
                }
            }
            if padding[node] {
                step.flags |= ACCEPT;
            }
            step.next = node as u8;
            steps[state][nibble] = step;
            nibble += 1;
        }
        state += 1;
    }
    steps
}

/// Appends the Huffman-coded string `coded` to `out`, decoded.
///
/// # Errors
///
/// [`Error::HuffmanEos`] if it contains EOS, [`Error::HuffmanPadding`] if it ends in more
/// than 7 bits of padding or padding that is not all ones.
pub(super) fn decode(coded: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    // A symbol takes 5 bits at least.
    out.reserve(coded.len() * 8 / 5);
    let mut state = 0u8;
    let mut accept = true;
    for &byte in coded {
        for nibble in [byte >> 4, byte & 0xf] {
            let step = STEPS[usize::from(state)][usize::from(nibble)];
            if step.flags & EOS != 0 {
                return Err(Error::HuffmanEos);
            }
            if step.flags & EMIT != 0 {
                out.push(step.symbol);
            }
            state = step.next;
            accept = step.flags & ACCEPT != 0;
        }
    }
    if accept { Ok(()) } else { Err(Error::HuffmanPadding) }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// `s` Huffman-coded, padded with ones (what an encoder sends).
    pub(in crate::transport::http2) fn encode(s: &[u8]) -> Vec<u8> {
        let (mut out, mut bits, mut pending) = (Vec::new(), 0u32, 0u64);
        for &b in s {
            let (code, len) = CODES[usize::from(b)];
            pending = pending << len | u64::from(code);
            bits += u32::from(len);
            while bits >= 8 {
                bits -= 8;
                out.push((pending >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push((pending << (8 - bits)) as u8 | (0xff >> bits));
        }
        out
    }

    fn decoded(coded: &[u8]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        decode(coded, &mut out).map(|()| out)
    }

    #[test]
    fn the_code_table_is_canonical_and_complete() {
        // HPACK's code is canonical: ordered by length, then symbol, each code is the one
        // before plus one, shifted to its length. A mistyped code or length breaks this.
        let mut order: Vec<usize> = (0..CODES.len()).collect();
        order.sort_by_key(|&s| (CODES[s].1, s));
        let (mut code, mut len) = (0u32, CODES[order[0]].1);
        for (i, &s) in order.iter().enumerate() {
            if i > 0 {
                code = (code + 1) << (CODES[s].1 - len);
                len = CODES[s].1;
            }
            assert_eq!(CODES[s], (code, len), "symbol {s}");
        }
        assert_eq!(code, (1 << 30) - 1, "the last code is all ones: the code is complete");
        assert_eq!(CODES[usize::from(EOS_SYMBOL)], ((1 << 30) - 1, 30));
        assert_eq!((CODES[usize::from(b'0')], CODES[usize::from(b' ')]), ((0, 5), (0x14, 6)));
    }

    #[test]
    fn the_rfcs_strings_decode() {
        // RFC 7541 C.4 and C.6.
        let cases: [(&[u8], &[u8]); 5] = [
            (
                &[0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff],
                b"www.example.com",
            ),
            (&[0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf], b"no-cache"),
            (&[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f], b"custom-key"),
            (&[0x64, 0x02], b"302"),
            (&[0x9b, 0xd9, 0xab], b"gzip"),
        ];
        for (coded, plain) in cases {
            assert_eq!(decoded(coded).unwrap(), plain);
            assert_eq!(encode(plain), coded);
        }
    }

    #[test]
    fn every_byte_decodes_as_encoded() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decoded(&encode(&all)).unwrap(), all);
        for b in 0..=255u8 {
            assert_eq!(decoded(&encode(&[b, b'a', b])).unwrap(), [b, b'a', b]);
        }
        assert_eq!(decoded(&[]).unwrap(), b"");
    }

    #[test]
    fn eos_and_bad_padding_are_refused() {
        // EOS is 30 ones: with two bits of padding, four bytes of ones.
        assert_eq!(decoded(&[0xff; 4]), Err(Error::HuffmanEos));
        assert_eq!(decoded(&[0x00, 0xff, 0xff, 0xff, 0xff]), Err(Error::HuffmanEos));
        // '0' is 00000: three bits of padding must be ones.
        assert_eq!(decoded(&[0x07]).unwrap(), b"0");
        assert_eq!(decoded(&[0x00]), Err(Error::HuffmanPadding));
        assert_eq!(decoded(&[0x05]), Err(Error::HuffmanPadding));
        // 'a' is 00011: eleven bits of ones after it are too many.
        assert_eq!(decoded(&[0x1f]).unwrap(), b"a");
        assert_eq!(decoded(&[0x1f, 0xff]), Err(Error::HuffmanPadding));
        // Eight '0's fill five bytes: a whole byte of padding after them is too much.
        assert_eq!(decoded(&[0, 0, 0, 0, 0]).unwrap(), b"00000000");
        assert_eq!(decoded(&[0, 0, 0, 0, 0, 0xff]), Err(Error::HuffmanPadding));
        // Seven ones are the most padding allowed: five '0's and seven ones fill four bytes.
        assert_eq!(decoded(&[0, 0, 0, 0x7f]).unwrap(), b"00000");
        // Seven ones and a zero start a longer code ('!' is 1111111000), not padding.
        assert_eq!(decoded(&[0xfe]), Err(Error::HuffmanPadding));
    }
}
