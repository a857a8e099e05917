//! etcd-client's control requests (status, member list, compaction, faults, barrier):
//! their deadline, and their errors in words and as gRPC statuses.

use std::future::Future;
use std::time::Duration;

use tonic::Status;

/// A control request (etcd-client's, which has no deadline of its own on our channel),
/// given up after `limit` with `DeadlineExceeded` naming `what`.
pub(crate) async fn within<T>(
    limit: Duration,
    what: &str,
    request: impl Future<Output = Result<T, etcd_client::Error>>,
) -> Result<T, etcd_client::Error> {
    tokio::time::timeout(limit, request).await.unwrap_or_else(|_| {
        Err(etcd_client::Error::GRpcStatus(Status::deadline_exceeded(format!(
            "no answer to {what} within {limit:?}"
        ))))
    })
}

/// An error and its sources on one line: tonic's top-level transport error says only
/// "transport error"; the cause is further down.
pub(crate) fn source_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}

/// A failed request's gRPC status, from etcd-client's error.
pub(crate) fn status(e: etcd_client::Error) -> Status {
    match e {
        etcd_client::Error::GRpcStatus(s) => s,
        other => Status::unknown(other.to_string()),
    }
}

/// Whether a write that failed with `status` may have been applied all the same: the error
/// says that the client or etcd stopped waiting (etcd's "request timed out" under
/// overload, a deadline, a cancellation, a lost connection), not that the write was refused.
/// "too many requests" is etcd refusing a request before proposing it (etcd 3.4 sends it
/// as `Unknown`), so that write was not applied, whatever the code.
pub(crate) fn outcome_unknown(status: &tonic::Status) -> bool {
    use tonic::Code;
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Cancelled | Code::Unknown
    ) && !status.message().contains("too many requests")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_of_unknown_outcome_are_told_from_refused_ones() {
        use tonic::{Code, Status};
        let unknown = [
            Status::unavailable("etcdserver: request timed out"),
            Status::unavailable("error reading a body from connection: connection reset"),
            Status::deadline_exceeded("Timeout expired"),
            Status::cancelled("operation was canceled"),
            Status::unknown("h2 protocol error: broken pipe"),
        ];
        for status in &unknown {
            assert!(outcome_unknown(status), "{status:?}");
        }
        let refused = [
            // etcd's preflight refusal, before proposing, as etcd 3.4 and later send it.
            Status::unknown("etcdserver: too many requests"),
            Status::resource_exhausted("etcdserver: too many requests"),
            Status::new(Code::Unavailable, "etcdserver: too many requests"),
            Status::invalid_argument("etcdserver: request is too large"),
            Status::resource_exhausted("etcdserver: mvcc: database space exceeded"),
            Status::failed_precondition("etcdserver: not capable"),
            Status::permission_denied("etcdserver: permission denied"),
        ];
        for status in &refused {
            assert!(!outcome_unknown(status), "{status:?}");
        }
    }
}
