//! watch-latency's acknowledgement table: each put's revision and acknowledgement time,
//! published by the putter and read by every watcher, with no lock.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering, fence};

/// Slots of watch-latency's acknowledgement table, indexed by revision: an event that
/// arrives more than this many revisions after its put was acknowledged is not matched.
pub(super) const ACK_SLOTS: u64 = 1 << 16;

/// watch-latency's acknowledgements, by revision: the putter publishes each put's revision
/// and acknowledgement time, watchers on every thread look them up per event. A slot is a
/// sequence lock (one writer, the putter; readers retry while it writes), so no lock is
/// taken and nothing allocated.
pub(super) struct Acks {
    slots: Box<[AckSlot]>,
    mask: u64,
}

#[derive(Default)]
struct AckSlot {
    /// Odd while being written.
    seq: AtomicU64,
    revision: AtomicI64,
    acked_ns: AtomicU64,
}

/// What the table knows of a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ack {
    /// Acknowledged at this many nanoseconds after the base instant.
    At(u64),
    /// Not acknowledged yet.
    Pending,
    /// Acknowledged so long ago that its slot was reused.
    Forgotten,
}

impl Acks {
    pub(super) fn new(puts: u64) -> Self {
        let n = puts.clamp(1, ACK_SLOTS).next_power_of_two();
        Self { slots: (0..n).map(|_| AckSlot::default()).collect(), mask: n - 1 }
    }

    fn slot(&self, revision: i64) -> &AckSlot {
        &self.slots[(revision as u64 & self.mask) as usize]
    }

    /// Publishes an acknowledgement. Only one thread may publish.
    pub(super) fn publish(&self, revision: i64, acked_ns: u64) {
        let slot = self.slot(revision);
        let seq = slot.seq.load(Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        slot.revision.store(revision, Ordering::Relaxed);
        slot.acked_ns.store(acked_ns, Ordering::Relaxed);
        slot.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    pub(super) fn lookup(&self, revision: i64) -> Ack {
        let slot = self.slot(revision);
        for _ in 0..1000 {
            let before = slot.seq.load(Ordering::Acquire);
            if before.is_multiple_of(2) {
                let r = slot.revision.load(Ordering::Relaxed);
                let acked_ns = slot.acked_ns.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if slot.seq.load(Ordering::Relaxed) == before {
                    return match r.cmp(&revision) {
                        std::cmp::Ordering::Equal => Ack::At(acked_ns),
                        std::cmp::Ordering::Less => Ack::Pending,
                        std::cmp::Ordering::Greater => Ack::Forgotten,
                    };
                }
            }
            std::hint::spin_loop();
        }
        // Being written right now: the acknowledgement is not out yet.
        Ack::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn acks_are_found_by_revision() {
        let acks = Acks::new(4);
        assert_eq!(acks.slots.len(), 4);
        assert_eq!(acks.lookup(10), Ack::Pending);
        acks.publish(10, 1_000);
        assert_eq!(acks.lookup(10), Ack::At(1_000));
        assert_eq!(acks.lookup(14), Ack::Pending, "same slot, later revision");
        acks.publish(14, 2_000);
        assert_eq!(acks.lookup(10), Ack::Forgotten);
        assert_eq!(acks.lookup(14), Ack::At(2_000));
        assert_eq!(Acks::new(u64::MAX).slots.len() as u64, ACK_SLOTS);
    }

    #[test]
    fn acks_are_consistent_across_threads() {
        let acks = Arc::new(Acks::new(64));
        let writer = {
            let acks = Arc::clone(&acks);
            std::thread::spawn(move || {
                for rev in 1..20_000i64 {
                    acks.publish(rev, rev as u64 * 3);
                }
            })
        };
        for rev in (1..20_000i64).step_by(7) {
            if let Ack::At(ns) = acks.lookup(rev) {
                assert_eq!(ns, rev as u64 * 3);
            }
        }
        writer.join().expect("writer");
        assert_eq!(acks.lookup(19_999), Ack::At(59_997));
    }
}
