//! When the cluster served: one bit per millisecond of measured time (tested with the
//! recorder that marks it).

use std::time::Duration;

/// One bit per millisecond of measured time, set when a request completed successfully in
/// that millisecond: when the cluster served, to the millisecond, at the cost of a few
/// instructions per request and 450 KB per hour per kind per worker. Timelines merge by OR
/// ([`Timeline::union`]); fault reports read the unavailability windows from them
/// ([`crate::fault`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    bits: Vec<u64>,
}

impl Timeline {
    /// Words allocated at the first mark: about a minute.
    const FIRST_WORDS: usize = 1024;

    /// Marks the millisecond `since` the start as having a success.
    #[inline]
    pub fn mark(&mut self, since: Duration) {
        let ms = since.as_secs() * 1000 + u64::from(since.subsec_millis());
        let word = (ms >> 6) as usize;
        if word >= self.bits.len() {
            self.grow(word);
        }
        self.bits[word] |= 1 << (ms & 63);
    }

    #[cold]
    fn grow(&mut self, word: usize) {
        let len = (word + 1).max(self.bits.len() * 2).max(Self::FIRST_WORDS);
        self.bits.resize(len, 0);
    }

    /// Whether millisecond `ms` had a success.
    #[must_use]
    pub fn is_set(&self, ms: u64) -> bool {
        self.bits.get((ms >> 6) as usize).is_some_and(|w| w & (1 << (ms & 63)) != 0)
    }

    /// The first millisecond from `from` (inclusive) to `limit` (exclusive) with a success.
    #[must_use]
    pub fn first_set_from(&self, from: u64, limit: u64) -> Option<u64> {
        let mut ms = from;
        while ms < limit {
            let word = (ms >> 6) as usize;
            let bits = *self.bits.get(word)? >> (ms & 63);
            if bits != 0 {
                let found = ms + u64::from(bits.trailing_zeros());
                return (found < limit).then_some(found);
            }
            ms = (ms | 63) + 1;
        }
        None
    }

    /// Adds another timeline's successes to this one.
    pub fn union(&mut self, other: &Timeline) {
        if other.bits.len() > self.bits.len() {
            self.bits.resize(other.bits.len(), 0);
        }
        for (a, b) in self.bits.iter_mut().zip(&other.bits) {
            *a |= b;
        }
    }
}
