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

use crate::scenario::PutOp;

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

/// Makes the key of each request of a put workload into one reused buffer.
#[derive(Debug, Clone)]
pub struct KeyGen {
    buf: Vec<u8>,
    prefix_len: usize,
    start: u64,
    space: u64,
    sequential: bool,
    rng: StdRng,
}

impl KeyGen {
    /// A generator for `op`; `seed` drives the choice of random keys.
    #[must_use]
    pub fn new(op: &PutOp, seed: u64) -> Self {
        let mut buf = Vec::with_capacity(op.prefix.len() + op.key_size as usize);
        buf.extend_from_slice(op.prefix.as_bytes());
        buf.resize(op.prefix.len() + op.key_size as usize, 0);
        Self {
            buf,
            prefix_len: op.prefix.len(),
            start: op.key_starts,
            space: op.key_space_size,
            sequential: op.sequential_keys,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Restarts the random key choice from `seed` (each worker gets its own stream).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }

    /// The key index of request `i`: `key-starts + i % key-space-size` for sequential keys,
    /// uniformly random in the key space otherwise.
    pub fn index(&mut self, i: u64) -> u64 {
        let offset =
            if self.sequential { i % self.space } else { self.rng.random_range(0..self.space) };
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
    use std::collections::HashSet;

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
        let mut g = KeyGen::new(&op, 1);
        let keys: HashSet<Vec<u8>> = (0..5000).map(|i| g.key(i).to_vec()).collect();
        assert_eq!(keys.len(), 1000);
        assert!(keys.iter().all(|k| k.len() == 8));
        assert_eq!(g.key(0), KeyGen::new(&op, 9).key_at(5));
    }

    #[test]
    fn default_key_space_writes_one_key() {
        let mut g = KeyGen::new(&PutOp { sequential_keys: true, ..PutOp::default() }, 1);
        let first = g.key(0).to_vec();
        assert!((1..100).all(|i| g.key(i) == first.as_slice()));
    }

    #[test]
    fn random_keys_stay_in_space_and_are_seeded() {
        let op = PutOp { key_space_size: 50, prefix: "bench/".into(), ..PutOp::default() };
        let mut a = KeyGen::new(&op, 7);
        let mut b = KeyGen::new(&op, 7);
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
