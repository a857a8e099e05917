//! What a completed request did, as the operations report it to the worker's loop.

use crate::transport::message::ResponseHeader;

/// What a successful request did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Done {
    /// Keys written or read.
    pub keys: u64,
    /// Value bytes written or read.
    pub value_bytes: u64,
    /// Attempts beyond the first (STM conflicts).
    pub retries: u64,
    /// The member that answered (from the response header; 0 when unknown).
    pub member: u64,
}

/// The member id in a response header.
pub(crate) fn member_of(header: Option<&ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.member_id)
}
