//! The consistency audit's end after the run ([`etcdlat_core::audit`]): the workers' logs
//! (recorded as [`super::audit_log`] says) gathered into one [`History`], the written keys
//! read back, and the history checked.
//!
//! Read back: every key written, its current mod revision, and every acknowledged put's key
//! at the put's revision, up to [`READ_BACK_CONCURRENCY`] reads at a time over one
//! connection, each retried while the cluster is unavailable.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcd_client::{Client, GetOptions};
use etcdlat_core::audit::{Access, AtRevision, Entry, KeyRef, ReadBack, ReadPlan};

use super::audit_log::Spaces;
use super::request::Work;
use crate::transport::{outcome_unknown, status, within};

/// Every worker's audit entries together, and what is needed to read their keys back.
pub(crate) struct History {
    pub entries: Vec<Entry>,
    /// Requests of audited kinds issued: recorded or not.
    pub issued: u64,
    /// The run's operations, for their key spaces and values.
    pub work: Arc<Work>,
}

impl History {
    /// The workers' `(entries, not recorded)` concatenated.
    pub(crate) fn gather(
        parts: impl IntoIterator<Item = (Vec<Entry>, u64)>,
        work: Arc<Work>,
    ) -> Self {
        let (mut entries, mut issued) = (Vec::new(), 0);
        for (mine, beyond) in parts {
            issued += beyond + mine.iter().filter(|e| e.access != Access::PutMore).count() as u64;
            if entries.is_empty() {
                entries = mine;
            } else {
                entries.extend_from_slice(&mine);
            }
        }
        Self { entries, issued, work }
    }

    /// Reads the keys back from `client` (when one could be had) and checks the history;
    /// `member_name` names member ids, `limit` is the run's `audit-limit`.
    pub(crate) async fn check(
        &self,
        client: Result<Client, String>,
        limit: u64,
        member_name: &dyn Fn(u64) -> String,
    ) -> etcdlat_core::audit::AuditReport {
        let plan = ReadPlan::of(&self.entries);
        let back = match client {
            Ok(client) => read_back(&client, &self.entries, &plan, self.work.spaces()).await,
            Err(e) => Err(e),
        };
        let server = back.as_ref().ok().map(|b| (&plan, b));
        let mut report = etcdlat_core::audit::check(&self.entries, server, member_name);
        report.issued = self.issued;
        report.limit = limit;
        report.read_back_error = back.err();
        report
    }
}

/// Reads at a time during the read back.
pub(crate) const READ_BACK_CONCURRENCY: usize = 64;

/// How long one read of the read back may take, and how long the read back keeps retrying
/// a read the cluster is unavailable for (a member restarting, an election).
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const RETRY_FOR: Duration = Duration::from_secs(30);

/// One read of the read back.
enum Read {
    /// A key's current mod revision: `plan.keys[i]`.
    Current(usize),
    /// A put's key at its revision: `plan.puts[i]`.
    At(usize, i64),
}

/// Reads back what `plan` asks for, from `client`.
///
/// # Errors
/// In words, when a read fails for longer than [`RETRY_FOR`] (or with an error retrying
/// cannot cure).
pub(crate) async fn read_back(
    client: &Client,
    history: &[Entry],
    plan: &ReadPlan,
    spaces: &Spaces,
) -> Result<ReadBack, String> {
    let mut keygens = spaces.keygens();
    let mut key = |k: KeyRef| keygens[usize::from(k.space)].key_at(k.key).to_vec();
    let mut reads = Vec::with_capacity(plan.keys.len() + plan.puts.len());
    for (i, &k) in plan.keys.iter().enumerate() {
        reads.push((Read::Current(i), key(k)));
    }
    for (i, &p) in plan.puts.iter().enumerate() {
        let e = &history[p];
        if let Some(k) = e.key_ref() {
            reads.push((Read::At(i, e.revision), key(k)));
        }
    }
    let mut back = ReadBack {
        current: vec![0; plan.keys.len()],
        at_revision: vec![AtRevision::Compacted; plan.puts.len()],
    };
    let mut running = tokio::task::JoinSet::new();
    let mut reads = reads.into_iter();
    loop {
        while running.len() < READ_BACK_CONCURRENCY {
            let Some((read, key)) = reads.next() else { break };
            let client = client.clone();
            running.spawn(async move {
                let answer = get(client, key, &read).await;
                (read, answer)
            });
        }
        let Some(joined) = running.join_next().await else { break };
        let (read, answer) = joined.map_err(|e| e.to_string())?;
        match (read, answer?) {
            (Read::Current(i), Got::Found(mod_revision, _)) => back.current[i] = mod_revision,
            (Read::Current(_), Got::Absent | Got::Compacted) => {}
            (Read::At(i, _), got) => {
                let space = history[plan.puts[i]].space;
                back.at_revision[i] = match got {
                    Got::Found(mod_revision, value) => AtRevision::Found {
                        mod_revision,
                        value_matches: spaces.wrote(space, &value),
                    },
                    Got::Absent => AtRevision::Absent,
                    Got::Compacted => AtRevision::Compacted,
                };
            }
        }
    }
    Ok(back)
}

/// What one read found.
enum Got {
    /// The key, with its mod revision and value.
    Found(i64, Vec<u8>),
    /// No such key.
    Absent,
    /// The revision asked for was compacted.
    Compacted,
}

/// One read, retried while the cluster is unavailable.
async fn get(client: Client, key: Vec<u8>, read: &Read) -> Result<Got, String> {
    let options = match read {
        Read::Current(_) => GetOptions::new().with_keys_only(),
        Read::At(_, revision) => GetOptions::new().with_revision(*revision),
    };
    let deadline = Instant::now() + RETRY_FOR;
    let mut kv = client.kv_client();
    loop {
        let answer =
            within(READ_TIMEOUT, "a read back", kv.get(key.clone(), Some(options.clone())));
        match answer.await.map_err(status) {
            Ok(resp) => {
                return Ok(resp
                    .kvs()
                    .first()
                    .map_or(Got::Absent, |kv| Got::Found(kv.mod_revision(), kv.value().to_vec())));
            }
            Err(s) if s.code() == tonic::Code::OutOfRange && s.message().contains("compacted") => {
                return Ok(Got::Compacted);
            }
            Err(s) if outcome_unknown(&s) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(s) => return Err(format!("reading a key back: {}", s.message())),
        }
    }
}
