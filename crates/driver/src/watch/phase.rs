//! The phase the calling task has moved a watch run to, which every worker follows.

use std::time::Instant;

/// The phase the calling task has moved the run to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Phase {
    /// Create the watchers.
    Create,
    /// Put, slots counted from this instant.
    Put(Instant),
    /// Stop everything and hand back what was measured.
    Finish,
}
