//! etcd benchmark's subcommands (put, range, txn-put, txn-mixed, watch, watch-get,
//! watch-latency, lease-keepalive, stm) as scenarios, with etcd's flag names, defaults and
//! error wording.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use etcdlat_core::workload::DEFAULT_PAGE_SIZE;
use etcdlat_core::{
    Arrivals, ClientStep, Compaction, CompactionStyle, Isolation, LeaseOp, Load, Operation, PutOp,
    RangeOp, Scenario, Schedule, StmLocker, StmOp, TxnMixedOp, TxnPutOp, WatchGetOp,
    WatchLatencyOp, WatchOp, escape_key,
};

use super::flag::{consistency_flag, duration_flag, flag_error, positive, size_flag};
use crate::command_line::{
    LeaseKeepaliveArgs, LoadArgs, PutArgs, RangeArgs, StmArgs, TxnMixedArgs, TxnPutArgs, WatchArgs,
    WatchGetArgs, WatchLatencyArgs,
};

/// etcd's default `--total`.
const DEFAULT_TOTAL: u64 = 10_000;

/// The load flags of a request command, with etcd's default total unless --duration replaces it.
fn load_from(args: &LoadArgs) -> Result<Load> {
    let duration = duration_flag("--duration", args.duration.as_deref())?;
    let warmup = duration_flag("--warmup", args.warmup.as_deref())?;
    if args.total == 0 {
        bail!("--total: must be more than 0");
    }
    // With --duration the run stops at whichever comes first; etcd's default total still
    // applies unless --total was raised.
    let total =
        if duration.is_some() && args.total == DEFAULT_TOTAL { None } else { Some(args.total) };
    let mut load = Load {
        conns: None,
        clients: 1,
        total,
        duration,
        rate: args.rate,
        warmup: warmup.unwrap_or_default(),
        schedule: if args.open_loop { Schedule::Open } else { Schedule::Closed },
        arrivals: if args.poisson { Arrivals::Poisson } else { Arrivals::Constant },
        stages: Vec::new(),
        client_steps: Vec::new(),
    };
    if let Some(clients) = &args.client_steps {
        load.client_steps = client_steps(clients, total, duration)?;
        load.clients = clients.iter().copied().max().unwrap_or(1);
        (load.total, load.duration) = (None, None);
    }
    Ok(load)
}

/// `--client-steps`: a step per number of clients, each with an even share of the total
/// (as dbtester split its request number), or of the duration when that is what was given.
fn client_steps(
    clients: &[u32],
    total: Option<u64>,
    duration: Option<Duration>,
) -> Result<Vec<ClientStep>> {
    let n = clients.len() as u64;
    let step = |clients: u32| ClientStep { clients, total: None, duration: None };
    match (total, duration) {
        (Some(_), Some(_)) => {
            bail!("--client-steps: split --total or --duration over the steps, not both")
        }
        (Some(total), None) => {
            if total < n {
                bail!(
                    "--client-steps: --total {total} cannot give each of the {n} steps a request"
                );
            }
            let shares = etcdlat_core::step::split(total, &vec![1; clients.len()]);
            Ok(clients
                .iter()
                .zip(shares)
                .map(|(&c, (_, share))| ClientStep { total: Some(share), ..step(c) })
                .collect())
        }
        (None, duration) => {
            let each = duration.unwrap_or_default() / u32::try_from(n).unwrap_or(u32::MAX);
            Ok(clients.iter().map(|&c| ClientStep { duration: Some(each), ..step(c) }).collect())
        }
    }
}

/// `etcdlat put`.
pub fn put(args: &PutArgs) -> Result<Scenario> {
    if args.key_space_size <= 0 {
        bail!("expected positive --key-space-size, got ({})", args.key_space_size);
    }
    let val_size = size_flag("--val-size", &args.val_size)?;
    let op = PutOp {
        key_size: args.key_size,
        val_size,
        key_space_size: args.key_space_size as u64,
        sequential_keys: args.sequential_keys,
        key_starts: args.key_starts,
        prefix: key_text(&args.prefix),
        seed: args.seed,
        zipf: args.zipf,
    };
    let mut s = Scenario::new(Operation::Put(op));
    s.load = load_from(&args.load)?;
    let compact_interval =
        duration_flag("--compact-interval", Some(&args.compact_interval))?.unwrap_or_default();
    if !compact_interval.is_zero() {
        s.compaction = Some(Compaction {
            interval: compact_interval,
            index_delta: args.compact_index_delta,
            style: CompactionStyle::Benchmark,
        });
    }
    s.checks.hashkv = args.check_hashkv;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

/// A key, prefix or range end given on the command line, any bytes (etcd's tool takes
/// them so: `range $'\001' $'\377'`), as a scenario writes it ([`escape_key`]).
fn key_text(arg: &OsStr) -> String {
    escape_key(arg.as_bytes())
}

/// A scenario of one operation with the load flags, validated with flag names in errors.
fn request_scenario(op: Operation, load: &LoadArgs) -> Result<Scenario> {
    let mut s = Scenario::new(op);
    s.load = load_from(load)?;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

/// A stream (watch) scenario: no request total applies.
fn stream_scenario(op: Operation) -> Result<Scenario> {
    let mut s = Scenario::new(op);
    s.load.total = None;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

/// `etcdlat txn-put`.
pub fn txn_put(args: &TxnPutArgs) -> Result<Scenario> {
    let op = TxnPutOp {
        txn_ops: positive("txn-ops", args.txn_ops)?,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        ..TxnPutOp::default()
    };
    request_scenario(Operation::TxnPut(op), &args.load)
}

/// `etcdlat txn-mixed`.
pub fn txn_mixed(args: &TxnMixedArgs) -> Result<Scenario> {
    let op = TxnMixedOp {
        key: args.key.as_deref().map(key_text).unwrap_or_default(),
        end_key: args.end_key.as_deref().or(args.end.as_deref()).map(key_text),
        rw_ratio: args.rw_ratio,
        limit: args.limit,
        consistency: consistency_flag(&args.consistency)?,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        key_starts: 0,
        seed: None,
    };
    request_scenario(Operation::TxnMixed(op), &args.load)
}

/// `etcdlat watch`.
pub fn watch(args: &WatchArgs) -> Result<Scenario> {
    let op = WatchOp {
        streams: args.streams,
        watch_per_stream: args.watch_per_stream,
        watched_key_total: args.watched_key_total,
        put_rate: args.put_rate,
        put_total: args.put_total,
        key_size: args.key_size,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        sequential_keys: args.sequential_keys,
        ..WatchOp::default()
    };
    stream_scenario(Operation::Watch(op))
}

/// `etcdlat watch-get`.
pub fn watch_get(args: &WatchGetArgs) -> Result<Scenario> {
    let op = WatchGetOp { watchers: args.watchers, streams: args.streams, events: args.events };
    stream_scenario(Operation::WatchGet(op))
}

/// `etcdlat watch-latency`.
pub fn watch_latency(args: &WatchLatencyArgs) -> Result<Scenario> {
    let op = WatchLatencyOp {
        streams: args.streams,
        watchers_per_stream: args.watchers_per_stream,
        put_rate: args.put_rate,
        put_total: args.put_total,
        prevkv: args.prevkv,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
    };
    stream_scenario(Operation::WatchLatency(op))
}

/// `etcdlat lease-keepalive`.
pub fn lease_keepalive(args: &LeaseKeepaliveArgs) -> Result<Scenario> {
    request_scenario(Operation::LeaseKeepalive(LeaseOp { ttl: args.ttl }), &args.load)
}

/// `etcdlat stm`.
pub fn stm(args: &StmArgs) -> Result<Scenario> {
    let isolation = match args.isolation.as_str() {
        "c" => Isolation::ReadCommitted,
        "r" => Isolation::RepeatableReads,
        "s" => Isolation::Serializable,
        "ss" => Isolation::SerializableSnapshot,
        other => bail!("--isolation: expected c, r, s or ss, got {other:?}"),
    };
    let locker = match args.stm_locker.as_str() {
        "stm" => StmLocker::Stm,
        "lock-client" => StmLocker::LockClient,
        "lock-rpc" => StmLocker::LockRpc,
        other => {
            bail!("--stm-locker: unexpected stm locker {other:?} (stm, lock-client or lock-rpc)")
        }
    };
    let keys = positive("keys", args.keys)?;
    let keys_per_txn =
        u64::try_from(args.keys_per_txn).ok().filter(|&k| k <= keys).ok_or_else(|| {
            anyhow!("expected --keys-per-txn between 0 and {keys}, got ({})", args.keys_per_txn)
        })?;
    let txn_wr_percent =
        u64::try_from(args.txn_wr_percent).ok().filter(|&p| p <= 100).ok_or_else(|| {
            anyhow!("expected [0, 100] --txn-wr-percent, got ({})", args.txn_wr_percent)
        })?;
    let op = StmOp {
        isolation,
        keys,
        keys_per_txn,
        txn_wr_percent,
        stm_locker: locker,
        val_size: size_flag("--val-size", &args.val_size)?,
        ..StmOp::default()
    };
    request_scenario(Operation::Stm(op), &args.load)
}

/// `etcdlat range`.
pub fn range(args: &RangeArgs) -> Result<Scenario> {
    let consistency = consistency_flag(&args.consistency)?;
    // One key per request from a key space (the network-latency analysis's fork of etcd's
    // tool): KEY is its prefix, and with --sequential-keys alone each request reads the next
    // key, --total of them.
    let key_space_size = match (args.key_space_size, args.sequential_keys) {
        (Some(n), _) => Some(n),
        (None, true) => Some(args.load.total),
        (None, false) => None,
    };
    if key_space_size.is_none() {
        for (flag, given) in
            [("--key-starts", args.key_starts.is_some()), ("--key-size", args.key_size.is_some())]
        {
            if given {
                bail!(
                    "{flag} applies to keys read one per request: add --sequential-keys or --key-space-size"
                );
            }
        }
    }
    // etcd's tool's own words for what it refuses.
    if args.paginate && args.limit > 0 {
        bail!("--paginate and --limit are mutually exclusive");
    }
    if args.count_only && args.keys_only {
        bail!("`--keys-only` and `--count-only` cannot be set at the same time");
    }
    if args.paginate && args.stream {
        bail!("--paginate and --stream are mutually exclusive: a stream is one request");
    }
    let op = RangeOp {
        key: args.key.as_deref().map(key_text).unwrap_or_default(),
        range_end: args.end.as_deref().map(key_text),
        prefix: args.prefix,
        consistency,
        limit: args.limit,
        count_only: args.count_only,
        keys_only: args.keys_only,
        key_space_size,
        key_size: args.key_size.unwrap_or(8),
        sequential_keys: args.sequential_keys,
        key_starts: args.key_starts.unwrap_or(0),
        stream: args.stream,
        paginate: args.paginate,
        page_size: args.page_size.unwrap_or(DEFAULT_PAGE_SIZE),
        ..RangeOp::default()
    };
    request_scenario(Operation::Range(op), &args.load)
}
