//! Keys and values made the way etcd's benchmark tool makes them, so results compare.
//!
//! etcd's tool writes `binary.PutVarint(index)` (a zig-zag varint) into a `key-size` byte
//! buffer and sends one random value buffer with every request. etcdlat does the same, with
//! one deliberate difference: the buffer is cleared before each key is written. etcd's tool
//! reuses it without clearing, so after a longer varint a shorter one keeps stale bytes and
//! the tool writes more distinct keys than `--key-space-size`; etcdlat writes exactly
//! `key-space-size` distinct keys.
//!
//! Also which keys a range or delete touches ([`KeyTarget`]), and the checks every
//! operation's key space is held to.

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Zipf};

use super::{InvalidParam, check_positive, invalid};

/// Writes `x` as Go's `binary.PutVarint` does (zig-zag, then base-128 varint) into `buf`
/// and returns the number of bytes written.
///
/// # Panics
/// When `buf` is shorter than [`varint_len`] of `x`; scenarios are validated against this.
pub fn put_varint(buf: &mut [u8], x: i64) -> usize {
    let mut ux = (x as u64) << 1;
    if x < 0 {
        ux = !ux;
    }
    let mut i = 0;
    while ux >= 0x80 {
        buf[i] = (ux as u8) | 0x80;
        ux >>= 7;
        i += 1;
    }
    buf[i] = ux as u8;
    i + 1
}

/// Bytes [`put_varint`] needs for the non-negative index `x`.
#[must_use]
pub fn varint_len(x: u64) -> usize {
    let zz = x << 1;
    (64 - zz.leading_zeros() as usize).div_ceil(7).max(1)
}

/// How key indices are chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDist {
    /// Uniformly at random.
    Uniform,
    /// Request `i` uses index `i % space`.
    Sequential,
    /// Zipf-distributed with this exponent: index 0 the most frequent.
    Zipf {
        /// The exponent `s` (> 0; around 1 is typical of real key popularity).
        exponent: f64,
    },
}

/// A set of keys: `space` indices from `start`, each the varint of its index in a `key_size`
/// buffer after `prefix`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpace {
    /// Bytes before every key.
    pub prefix: Vec<u8>,
    /// Bytes after the prefix.
    pub key_size: u64,
    /// Number of distinct keys.
    pub space: u64,
    /// First index.
    pub start: u64,
    /// How indices are chosen.
    pub dist: KeyDist,
}

/// Makes the key of each request into one reused buffer.
#[derive(Debug, Clone)]
pub struct KeyGen {
    buf: Vec<u8>,
    prefix_len: usize,
    start: u64,
    space: u64,
    dist: KeyDist,
    zipf: Option<Zipf<f64>>,
    rng: StdRng,
}

impl KeyGen {
    /// A generator over `keys`; `seed` drives the choice of random keys.
    #[must_use]
    pub fn new(keys: &KeySpace, seed: u64) -> Self {
        let mut buf = Vec::with_capacity(keys.prefix.len() + keys.key_size as usize);
        buf.extend_from_slice(&keys.prefix);
        buf.resize(keys.prefix.len() + keys.key_size as usize, 0);
        let zipf = match keys.dist {
            KeyDist::Zipf { exponent } => Zipf::new(keys.space as f64, exponent).ok(),
            _ => None,
        };
        Self {
            buf,
            prefix_len: keys.prefix.len(),
            start: keys.start,
            space: keys.space,
            dist: keys.dist,
            zipf,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Number of distinct keys.
    #[must_use]
    pub fn space(&self) -> u64 {
        self.space
    }

    /// Restarts the random key choice from `seed` (each worker gets its own stream).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }

    /// The key index of request `i`: `start + i % space` for sequential keys, random in the
    /// key space otherwise.
    pub fn index(&mut self, i: u64) -> u64 {
        let offset = match (self.dist, &self.zipf) {
            (KeyDist::Sequential, _) => i % self.space,
            (KeyDist::Zipf { .. }, Some(z)) => {
                (z.sample(&mut self.rng) as u64).clamp(1, self.space) - 1
            }
            _ => self.rng.random_range(0..self.space),
        };
        self.start + offset
    }

    /// The key of request `i`, valid until the next call.
    pub fn key(&mut self, i: u64) -> &[u8] {
        let index = self.index(i);
        self.key_at(index)
    }

    /// The key with index `index`, valid until the next call.
    pub fn key_at(&mut self, index: u64) -> &[u8] {
        let body = &mut self.buf[self.prefix_len..];
        body.fill(0);
        put_varint(body, index as i64);
        &self.buf
    }
}

/// One random value of `len` bytes, as etcd's tool sends with every put.
#[must_use]
pub fn random_value(len: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; len];
    StdRng::seed_from_u64(seed ^ 0x5EED_0A1E).fill_bytes(&mut v);
    v
}

/// Which keys a range or delete touches.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyTarget {
    /// The same key or range every time: `key` to `range_end` (empty: just `key`).
    Fixed {
        /// First key.
        key: Vec<u8>,
        /// End of the range, exclusive; empty for a single key.
        range_end: Vec<u8>,
    },
    /// One key per request from a key space (`key` is its prefix).
    Space(KeySpace),
}

/// The range end that covers every key starting with `prefix` (etcd's `GetPrefixRangeEnd`);
/// `\0` (every key) for an empty prefix or one of only 0xff bytes.
#[must_use]
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// The first key of a range: etcd rejects an empty key, so a range over every key (empty
/// start, non-empty end) starts at `\0`, as etcd's client does.
#[must_use]
pub fn range_start(key: &[u8], range_end: &[u8]) -> Vec<u8> {
    if key.is_empty() && !range_end.is_empty() { vec![0] } else { key.to_vec() }
}

/// An operation's key-space parameters as its table gives them (`key-size`,
/// `key-space-size`, `key-starts`, `sequential-keys`, `zipf`, and the text of the keys'
/// prefix), gathered from its parsed fields: every operation that picks its keys from a
/// key space (put, range, delete, txn-put, txn-mixed, watch) checks them and makes its
/// [`KeySpace`] here, one way. The fields themselves stay each operation's own, as its TOML
/// keys, defaults and scenario echo are; see [`super::kv::PutOp::keys`].
#[derive(Debug, Clone, Copy)]
pub(super) struct KeyParams<'a> {
    /// The keys' prefix, as written ([`key_bytes`]).
    pub(super) prefix: &'a str,
    pub(super) key_size: u64,
    pub(super) space: u64,
    pub(super) start: u64,
    pub(super) sequential: bool,
    pub(super) zipf: Option<f64>,
}

impl KeyParams<'_> {
    /// The keys they make.
    pub(super) fn key_space(&self) -> KeySpace {
        KeySpace {
            prefix: key_bytes(self.prefix),
            key_size: self.key_size,
            space: self.space,
            start: self.start,
            dist: key_dist(self.sequential, self.zipf),
        }
    }

    /// Checks them for the operation at `at`: the key space fits the key size, and the key
    /// choice is one of sequential, Zipf or uniform.
    pub(super) fn check(&self, at: &str) -> Result<(), InvalidParam> {
        check_key_space(at, self.key_size, self.space, self.start)?;
        check_dist(at, self.sequential, self.zipf)
    }
}

/// Key selection shared by range and delete, borrowed from either: a fixed key or range,
/// or one key per request from a key space (`space`, whose prefix is `key`).
pub(super) struct TargetSpec<'a> {
    pub(super) key: &'a str,
    pub(super) range_end: Option<&'a str>,
    pub(super) prefix: bool,
    pub(super) space: Option<KeyParams<'a>>,
}

impl TargetSpec<'_> {
    pub(super) fn target(&self) -> KeyTarget {
        match &self.space {
            Some(keys) => KeyTarget::Space(keys.key_space()),
            None => {
                let range_end = if self.prefix {
                    prefix_end(&key_bytes(self.key))
                } else {
                    self.range_end.map(key_bytes).unwrap_or_default()
                };
                KeyTarget::Fixed { key: range_start(&key_bytes(self.key), &range_end), range_end }
            }
        }
    }

    pub(super) fn check(&self, at: &str) -> Result<(), InvalidParam> {
        if self.prefix && self.range_end.is_some() {
            return Err(invalid(at, "prefix", "cannot be combined with range-end"));
        }
        match &self.space {
            Some(keys) => {
                if self.prefix || self.range_end.is_some() {
                    return Err(invalid(
                        at,
                        "key-space-size",
                        "means one key per request; it cannot be combined with prefix or range-end",
                    ));
                }
                keys.check(at)
            }
            None if self.key.is_empty() && !self.prefix && self.range_end.is_none() => {
                Err(invalid(
                    at,
                    "key",
                    "must not be empty (use prefix = true for every key, or key-space-size)",
                ))
            }
            None => Ok(()),
        }
    }
}

/// Checks that a key space of `space` keys from `start` fits `key_size` bytes.
pub(super) fn check_key_space(
    at: &str,
    key_size: u64,
    space: u64,
    start: u64,
) -> Result<(), InvalidParam> {
    check_positive(at, "key-space-size", space)?;
    let Some(last) = start.checked_add(space - 1).filter(|&k| k <= i64::MAX as u64) else {
        return Err(invalid(at, "key-starts", "key-starts + key-space-size is too large"));
    };
    let need = varint_len(last) as u64;
    if key_size < need {
        return Err(invalid(
            at,
            "key-size",
            format!(
                "{key_size} bytes cannot hold {space} distinct keys starting at {start}; need at least {need}"
            ),
        ));
    }
    if key_size > 1 << 20 {
        return Err(invalid(at, "key-size", "keys over 1 MiB are not supported"));
    }
    Ok(())
}

/// How `sequential-keys` and `zipf` choose key indices.
fn key_dist(sequential: bool, zipf: Option<f64>) -> KeyDist {
    match (sequential, zipf) {
        (_, Some(exponent)) => KeyDist::Zipf { exponent },
        (true, None) => KeyDist::Sequential,
        (false, None) => KeyDist::Uniform,
    }
}

/// Checks that `sequential-keys` and `zipf` agree, and the Zipf exponent.
fn check_dist(at: &str, sequential: bool, zipf: Option<f64>) -> Result<(), InvalidParam> {
    match zipf {
        Some(_) if sequential => {
            Err(invalid(at, "zipf", "cannot be combined with sequential-keys"))
        }
        Some(s) if !(s.is_finite() && s > 0.0) => {
            Err(invalid(at, "zipf", format!("the exponent must be more than 0, got {s}")))
        }
        _ => Ok(()),
    }
}

/// The bytes of a key, prefix or range end as a scenario or the command line writes it:
/// UTF-8 text in which `\xNN` (two hex digits) stands for the byte NN and `\\` for one
/// backslash, so that any bytes can be named (`\x01` to `\xff` is "every key" in etcd's
/// capacity test). A backslash followed by anything else is kept as it is.
#[must_use]
pub fn key_bytes(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'\\') {
                out.push(b'\\');
                i += 2;
                continue;
            }
            let hex = |b: Option<&u8>| b.and_then(|b| char::from(*b).to_digit(16));
            if bytes.get(i + 1) == Some(&b'x')
                && let (Some(hi), Some(lo)) = (hex(bytes.get(i + 2)), hex(bytes.get(i + 3)))
            {
                out.push((hi * 16 + lo) as u8);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    out
}

/// `bytes` written so that [`key_bytes`] gives them back: valid UTF-8 as it is, except
/// control characters (`\xNN`) and backslashes (`\\`); every byte that is not UTF-8 as
/// `\xNN`. How keys given as raw bytes (`range $'\001' $'\377'`) are kept in a scenario
/// and printed in reports.
#[must_use]
pub fn escape_key(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::PutOp;
    use std::collections::HashSet;

    #[test]
    fn zipf_keys_favour_low_indices() {
        let keys = KeySpace {
            prefix: vec![],
            key_size: 8,
            space: 1000,
            start: 0,
            dist: KeyDist::Zipf { exponent: 1.1 },
        };
        let mut g = KeyGen::new(&keys, 3);
        let mut counts = vec![0u32; 1000];
        for i in 0..20_000 {
            let idx = g.index(i);
            assert!(idx < 1000);
            counts[idx as usize] += 1;
        }
        assert!(counts[0] > counts[10] && counts[10] > counts[500], "{:?}", &counts[..12]);
        assert!(counts[0] > 20_000 / 10, "index 0 is the most popular: {}", counts[0]);
    }

    #[test]
    fn varint_matches_go() {
        // Go: binary.PutVarint(buf, 0) = [0], 1 = [2], -1 = [1], 63 = [126], 64 = [128 1], 300 = [216 4].
        let enc = |x: i64| {
            let mut b = [0u8; 10];
            let n = put_varint(&mut b, x);
            b[..n].to_vec()
        };
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(1), [2]);
        assert_eq!(enc(-1), [1]);
        assert_eq!(enc(63), [126]);
        assert_eq!(enc(64), [128, 1]);
        assert_eq!(enc(300), [216, 4]);
        assert_eq!(varint_len(0), 1);
        assert_eq!(varint_len(63), 1);
        assert_eq!(varint_len(64), 2);
        assert_eq!(varint_len(i64::MAX as u64), 10);
    }

    #[test]
    fn sequential_keys_cover_the_space_exactly() {
        let op = PutOp {
            key_space_size: 1000,
            sequential_keys: true,
            key_starts: 5,
            ..PutOp::default()
        };
        let mut g = KeyGen::new(&op.key_space(), 1);
        let keys: HashSet<Vec<u8>> = (0..5000).map(|i| g.key(i).to_vec()).collect();
        assert_eq!(keys.len(), 1000);
        assert!(keys.iter().all(|k| k.len() == 8));
        assert_eq!(g.key(0), KeyGen::new(&op.key_space(), 9).key_at(5));
    }

    #[test]
    fn default_key_space_writes_one_key() {
        let mut g =
            KeyGen::new(&PutOp { sequential_keys: true, ..PutOp::default() }.key_space(), 1);
        let first = g.key(0).to_vec();
        assert!((1..100).all(|i| g.key(i) == first.as_slice()));
    }

    #[test]
    fn random_keys_stay_in_space_and_are_seeded() {
        let op = PutOp { key_space_size: 50, prefix: "bench/".into(), ..PutOp::default() };
        let mut a = KeyGen::new(&op.key_space(), 7);
        let mut b = KeyGen::new(&op.key_space(), 7);
        let ka: Vec<Vec<u8>> = (0..200).map(|i| a.key(i).to_vec()).collect();
        let kb: Vec<Vec<u8>> = (0..200).map(|i| b.key(i).to_vec()).collect();
        assert_eq!(ka, kb);
        let distinct: HashSet<_> = ka.iter().collect();
        assert!(distinct.len() <= 50 && distinct.len() > 30);
        assert!(ka.iter().all(|k| k.starts_with(b"bench/") && k.len() == 14));
    }

    #[test]
    fn values_are_random_and_seeded() {
        let v = random_value(1024, 3);
        assert_eq!(v, random_value(1024, 3));
        assert_ne!(v, random_value(1024, 4));
        assert!(v.iter().filter(|&&b| b == 0).count() < 30);
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"abc"), b"abd");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b""), b"\0");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    }

    #[test]
    fn keys_name_any_bytes_and_read_back_as_written() {
        assert_eq!(key_bytes("foo"), b"foo");
        assert_eq!(key_bytes("\\x01"), [1]);
        assert_eq!(key_bytes("\\xff"), [0xff]);
        assert_eq!(key_bytes("a\\x00b\\\\c"), b"a\0b\\c");
        // Not an escape: kept.
        assert_eq!(key_bytes("a\\b\\x1"), b"a\\b\\x1");
        assert_eq!(key_bytes("ключ"), "ключ".as_bytes());
        for bytes in
            [&b"\x01"[..], b"\xff", b"a\\b", b"\xfe\x00k\x7f", "ключ/\u{1}".as_bytes(), b"\\x41"]
        {
            assert_eq!(key_bytes(&escape_key(bytes)), bytes, "{}", escape_key(bytes));
        }
        assert_eq!(escape_key(&[1]), "\\x01");
        assert_eq!(escape_key(&[0xff]), "\\xff");
        assert_eq!(escape_key(b"a\\x41"), "a\\\\x41");
        assert_eq!(escape_key("ключ".as_bytes()), "ключ");
    }
}
