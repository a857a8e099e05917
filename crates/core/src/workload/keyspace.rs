//! Keys and values made the way etcd's benchmark tool makes them, so results compare.
//!
//! etcd's tool writes `binary.PutVarint(index)` (a zig-zag varint) into a `key-size` byte
//! buffer and sends one random value buffer with every request. etcdlat does the same, with
//! one deliberate difference: the buffer is cleared before each key is written. etcd's tool
//! reuses it without clearing, so after a longer varint a shorter one keeps stale bytes and
//! the tool writes more distinct keys than `--key-space-size`; etcdlat writes exactly
//! `key-space-size` distinct keys.

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Zipf};

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
}
