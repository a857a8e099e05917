//! A start barrier on the etcd cluster under test, so that shards of one run on several
//! machines start measuring together and their measurement windows line up.
//!
//! ```no_run
//! # async fn f() -> Result<(), etcdlat_driver::BarrierError> {
//! use std::time::Duration;
//! use etcdlat_driver::Barrier;
//!
//! // On each of the 3 machines, with its own party number (0, 1 or 2):
//! let barrier = Barrier::new(["10.0.0.1:2379"], "etcdlat/barrier/run-42", 3)
//!     .timeout(Duration::from_secs(300));
//! let waited = barrier.wait(0, 1).await?;    // round 0, party 1
//! // ... every party gets here within a watch notification of the others.
//! # Ok(()) }
//! ```
//!
//! # How it works
//!
//! Party `P` of round `R` grants a lease (kept alive while it waits) and puts the key
//! `PREFIX/R/P` with the value `P/N` on it; the put's revision is `r`. It then reads the
//! round's keys as of revision `r` and watches them from `r + 1`, collecting the parties
//! that have put their key, until all `N` have. Then it revokes its lease, which removes
//! its key, and returns.
//!
//! Reading at `r`, not at the latest revision, is what lets every party remove its key
//! as soon as it passes: a party passes only after seeing every other party's put, so any
//! removal comes after every put, and each party's view (the keys at `r`, then every
//! event after `r`) contains every put even when the others have already passed and
//! removed theirs.
//!
//! A party that dies leaves its key behind only until its lease runs out ([`LEASE_TTL`]);
//! a barrier that is not complete within the timeout fails, naming who was there. Each
//! register and each removal is one revision of the cluster: a barrier of `N` parties moves
//! the revision by `2 N`.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use etcd_client::{Client, EventType, GetOptions, KeyValue, PutOptions, WatchOptions};

use crate::transport::{Dialer, Security, control_client_any, url};

/// Time to live of a party's lease: how long a key outlives a party that died.
pub const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a waiting party keeps its lease alive.
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(3);

/// How long a barrier waits for all its parties unless told otherwise.
pub const DEFAULT_BARRIER_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a barrier could not be passed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BarrierError {
    /// An endpoint is malformed.
    #[error("barrier: invalid endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The barrier's prefix is empty, or the parties are not a party of 1 or more.
    #[error("barrier: {0}")]
    Config(&'static str),
    /// etcd could not be reached, or a request of the barrier failed.
    #[error("barrier: {what} on {endpoints}: {reason}")]
    Etcd {
        /// What the barrier was doing (`connecting`, `registering`, `watching` ...).
        what: &'static str,
        /// The endpoints, comma-separated.
        endpoints: String,
        /// The gRPC status or transport error.
        reason: String,
    },
    /// Not every party arrived within the timeout.
    #[error(
        "barrier {prefix}: {present} of {parties} shards arrived within {timeout:?} (present: {names}); start the others, or raise the timeout"
    )]
    Timeout {
        /// The round's key prefix.
        prefix: String,
        /// Parties that had arrived.
        present: u32,
        /// Parties expected.
        parties: u32,
        /// The keys of those present.
        names: String,
        /// How long it waited.
        timeout: Duration,
    },
    /// A party registered for another number of parties.
    #[error(
        "barrier: {key} was registered as {found:?}, but this party expects {parties} parties; every shard must be given the same N"
    )]
    Mismatch {
        /// The other party's key.
        key: String,
        /// Its value (`P/N`).
        found: String,
        /// The number of parties this party expects.
        parties: u32,
    },
}

/// A barrier of `parties` parties under a key prefix on an etcd cluster.
#[derive(Debug, Clone)]
pub struct Barrier {
    endpoints: Vec<String>,
    prefix: String,
    parties: u32,
    timeout: Duration,
    dial_timeout: Duration,
    security: Security,
}

impl Barrier {
    /// A barrier on the cluster at `endpoints`, under `prefix` (a trailing `/` is optional),
    /// for `parties` parties; [`DEFAULT_BARRIER_TIMEOUT`], and a 5 s dial timeout.
    #[must_use]
    pub fn new<I, S>(endpoints: I, prefix: impl Into<String>, parties: u32) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: prefix.into().trim_end_matches('/').to_owned(),
            parties,
            timeout: DEFAULT_BARRIER_TIMEOUT,
            dial_timeout: crate::transport::DEFAULT_DIAL_TIMEOUT,
            security: Security::default(),
        }
    }

    /// How long [`Barrier::wait`] waits for every party.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// TLS and credentials for the connection to etcd.
    #[must_use]
    pub fn security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// How long to wait for the connection to etcd.
    #[must_use]
    pub fn dial_timeout(mut self, timeout: Duration) -> Self {
        self.dial_timeout = timeout;
        self
    }

    /// The key prefix of round `round`: `PREFIX/ROUND/`.
    #[must_use]
    pub fn round_prefix(&self, round: usize) -> String {
        format!("{}/{round}/", self.prefix)
    }

    /// Registers `party` (0-based) for round `round` (one round per run, when the
    /// parties run several one after another), waits until every party has registered,
    /// removes this party's key, and returns how long it waited.
    ///
    /// # Errors
    /// [`BarrierError::Timeout`] when not every party arrived in time,
    /// [`BarrierError::Mismatch`] when a party expects another number of parties,
    /// [`BarrierError::Etcd`] when etcd cannot be reached or a request fails, and
    /// [`BarrierError::Endpoint`] or [`BarrierError::Config`] for a malformed barrier.
    /// This party's key is removed in every case etcd can still be reached.
    pub async fn wait(&self, round: usize, party: u32) -> Result<Duration, BarrierError> {
        if self.prefix.is_empty() {
            return Err(BarrierError::Config("the key prefix must not be empty"));
        }
        if party >= self.parties {
            return Err(BarrierError::Config("the party must be below the number of parties"));
        }
        let began = Instant::now();
        let mut client = self.connect().await?;
        let ttl = i64::try_from(LEASE_TTL.as_secs()).unwrap_or(10);
        let lease = client
            .lease_grant(ttl, None)
            .await
            .map_err(|e| self.failed("granting a lease", e))?
            .id();
        let prefix = self.round_prefix(round);
        let mut present = BTreeSet::new();
        let outcome = tokio::time::timeout(
            self.timeout,
            self.register_and_wait(&mut client, lease, &prefix, party, &mut present),
        )
        .await;
        // Removes this party's key: every party has seen it (or the barrier failed).
        let revoked =
            client.lease_revoke(lease).await.map_err(|e| self.failed("removing its key", e));
        match outcome {
            Ok(Ok(())) => {
                revoked?;
                let waited = began.elapsed();
                tracing::debug!(prefix, party, ?waited, "barrier passed");
                Ok(waited)
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(BarrierError::Timeout {
                prefix,
                present: u32::try_from(present.len()).unwrap_or(u32::MAX),
                parties: self.parties,
                names: present.into_iter().collect::<Vec<_>>().join(", "),
                timeout: self.timeout,
            }),
        }
    }

    async fn connect(&self) -> Result<Client, BarrierError> {
        for e in &self.endpoints {
            url(e).map_err(|err| BarrierError::Endpoint {
                endpoint: e.clone(),
                reason: err.to_string(),
            })?;
        }
        if self.endpoints.is_empty() {
            return Err(BarrierError::Config("needs the endpoints of the cluster under test"));
        }
        let dialer = Dialer::new(&self.security, self.dial_timeout)
            .map_err(|e| self.failed("connecting", e))?;
        control_client_any(&dialer, &self.endpoints).await.map_err(|e| self.failed("connecting", e))
    }

    fn failed(&self, what: &'static str, reason: impl std::fmt::Display) -> BarrierError {
        BarrierError::Etcd { what, endpoints: self.endpoints.join(","), reason: reason.to_string() }
    }

    /// Puts this party's key and collects the parties present into `present` until all
    /// are.
    async fn register_and_wait(
        &self,
        client: &mut Client,
        lease: i64,
        prefix: &str,
        party: u32,
        present: &mut BTreeSet<String>,
    ) -> Result<(), BarrierError> {
        const WATCHING: &str = "watching the parties";
        const KEEPING: &str = "keeping its lease";
        let key = format!("{prefix}{party}");
        let value = format!("{party}/{}", self.parties);
        let put = client
            .put(key, value, Some(PutOptions::new().with_lease(lease)))
            .await
            .map_err(|e| self.failed("registering", e))?;
        let registered = put.header().map_or(0, etcd_client::ResponseHeader::revision);
        let got = client
            .get(prefix, Some(GetOptions::new().with_prefix().with_revision(registered)))
            .await
            .map_err(|e| self.failed("reading the parties", e))?;
        for kv in got.kvs() {
            self.arrived(kv, present)?;
        }
        tracing::debug!(prefix, party, present = present.len(), parties = self.parties, "barrier");
        if self.complete(present) {
            return Ok(());
        }

        let mut stream = client
            .watch(
                prefix,
                Some(WatchOptions::new().with_prefix().with_start_revision(registered + 1)),
            )
            .await
            .map_err(|e| self.failed(WATCHING, e))?;
        let (mut keeper, mut acks) =
            client.lease_keep_alive(lease).await.map_err(|e| self.failed(KEEPING, e))?;
        let mut tick = tokio::time::interval(KEEP_ALIVE_EVERY);
        loop {
            tokio::select! {
                message = stream.message() => {
                    let Some(response) = message.map_err(|e| self.failed(WATCHING, e))? else {
                        return Err(self.failed(WATCHING, "the watch stream ended"));
                    };
                    if response.canceled() {
                        let reason = format!(
                            "the watch was canceled (compacted at revision {}): {}",
                            response.compact_revision(),
                            response.cancel_reason()
                        );
                        return Err(self.failed(WATCHING, reason));
                    }
                    for event in response.events() {
                        if let (EventType::Put, Some(kv)) = (event.event_type(), event.kv()) {
                            self.arrived(kv, present)?;
                        }
                    }
                    tracing::debug!(prefix, party, present = present.len(), "barrier");
                    if self.complete(present) {
                        return Ok(());
                    }
                }
                _ = tick.tick() => {
                    keeper.keep_alive().await.map_err(|e| self.failed(KEEPING, e))?;
                }
                ack = acks.message() => {
                    match ack.map_err(|e| self.failed(KEEPING, e))? {
                        Some(a) if a.ttl() > 0 => {}
                        _ => return Err(self.failed(KEEPING, "the lease expired")),
                    }
                }
            }
        }
    }

    /// Records the party whose key `kv` is, checking it expects as many parties.
    fn arrived(&self, kv: &KeyValue, present: &mut BTreeSet<String>) -> Result<(), BarrierError> {
        let key = String::from_utf8_lossy(kv.key()).into_owned();
        let value = String::from_utf8_lossy(kv.value());
        let parties = value.split_once('/').and_then(|(_, n)| n.parse::<u32>().ok());
        if parties != Some(self.parties) {
            return Err(BarrierError::Mismatch {
                key,
                found: value.into_owned(),
                parties: self.parties,
            });
        }
        present.insert(key);
        Ok(())
    }

    fn complete(&self, present: &BTreeSet<String>) -> bool {
        present.len() >= self.parties as usize
    }
}
