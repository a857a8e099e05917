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
