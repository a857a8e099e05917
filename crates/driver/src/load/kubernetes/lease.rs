//! Leases for objects with a time to live, reused as the apiserver's `leaseManager` reuses
//! them: a lease is granted for the TTL plus a reuse time (5% of the TTL, at most
//! `lease-reuse`), serves the objects created within that reuse time of its grant, up to
//! `lease-objects` of them, and is never kept alive: its expiry deletes its objects.
//!
//! One per worker and operation, in `Cell`s: a request reads it without a lock. While one
//! of the worker's clients grants a new lease, the others that need one wait for it (the
//! apiserver holds a lock across the grant); the grant, a rare event, is part of the create
//! it is made for, as in the apiserver.

use std::cell::Cell;
use std::time::{Duration, Instant};

use etcdlat_core::workload::EventOp;
use tokio::sync::Notify;

use crate::transport::{Conn, status};

/// How leases are granted and reused.
#[derive(Debug, Clone, Copy)]
pub(super) struct Plan {
    /// The TTL a lease is granted with: the objects' TTL plus the reuse time, seconds.
    grant_ttl_s: i64,
    /// How long after its grant a lease takes new objects.
    reuse: Duration,
    /// The most objects a lease takes.
    objects: u64,
}

impl Plan {
    /// Leases for objects that live `ttl`, reused as `reuse` says.
    pub(super) fn new(ttl: Duration, reuse: &EventOp) -> Self {
        let reuse_time = (ttl / 20).min(reuse.lease_reuse);
        let reuse_s = reuse_time.as_secs();
        Self {
            grant_ttl_s: i64::try_from(ttl.as_secs() + reuse_s).unwrap_or(i64::MAX),
            reuse: Duration::from_secs(reuse_s),
            objects: reuse.lease_objects,
        }
    }
}

/// The lease a worker's creates attach their objects to.
pub(super) struct Leases {
    plan: Plan,
    /// The lease in use: its id, when it was granted, how many objects it took.
    current: Cell<Option<(i64, Instant, u64)>>,
    /// A client is granting a new lease; the others wait on `granted`.
    granting: Cell<bool>,
    granted: Notify,
}

impl Leases {
    pub(super) fn new(plan: Plan) -> Self {
        Self { plan, current: Cell::new(None), granting: Cell::new(false), granted: Notify::new() }
    }

    /// The lease the next object goes on: the current one while it may take it, else a
    /// new one granted now.
    pub(super) async fn lease(&self, conn: &Conn) -> Result<i64, tonic::Status> {
        loop {
            let now = Instant::now();
            if let Some((id, granted, count)) = self.current.get()
                && now.duration_since(granted) < self.plan.reuse
                && count < self.plan.objects
            {
                self.current.set(Some((id, granted, count + 1)));
                return Ok(id);
            }
            if !self.granting.get() {
                break;
            }
            self.granted.notified().await;
        }
        self.granting.set(true);
        let granted = self.grant(conn).await;
        self.granting.set(false);
        self.granted.notify_waiters();
        let id = granted?;
        self.current.set(Some((id, Instant::now(), 1)));
        Ok(id)
    }

    async fn grant(&self, conn: &Conn) -> Result<i64, tonic::Status> {
        let mut leases = conn.client().await.map_err(status)?.lease_client();
        Ok(leases.grant(self.plan.grant_ttl_s, None).await.map_err(status)?.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_hour_long_ttl_reuses_a_lease_for_a_minute_and_grants_it_an_hour_and_a_minute() {
        let plan = Plan::new(Duration::from_secs(3600), &EventOp::default());
        assert_eq!(plan.grant_ttl_s, 3660);
        assert_eq!(plan.reuse, Duration::from_secs(60));
        assert_eq!(plan.objects, 1000);
        // A short TTL reuses for 5% of it.
        let short = Plan::new(Duration::from_secs(100), &EventOp::default());
        assert_eq!((short.grant_ttl_s, short.reuse), (105, Duration::from_secs(5)));
    }
}
