//! The watch family of workloads: `watch`, `watch-get` and `watch-latency`, with etcd
//! benchmark's flags and defaults, measured the way etcdlat measures everything else.
//!
//! # How a run goes
//!
//! Everything runs on the worker threads, over the workers' connections: watch stream `s`
//! is opened on connection `s % conns` by the worker that owns it, putter `p` (one per
//! logical client for `watch`, one for `watch-latency`) sends on connection `p % conns`, and
//! the getter of `watch-get` on connection 0. The calling task steps the workers through
//! phases and looks at their progress a few hundred times a second, never per event:
//!
//! 1. every worker creates its watchers (measurement starts here); `watch-get` first puts
//!    `events` values to key `watchkey`, unmeasured, and its watchers start from the first
//!    of them, so they are unsynced and catch up;
//! 2. once all are created, the puts start, `put-rate` a second for the whole run (0:
//!    unlimited, each putter one put in flight);
//! 3. once every put is acknowledged, the run waits until every expected event has arrived,
//!    or until none arrived for [`conductor::EVENT_GRACE`], and stops. Measurement ends with
//!    the last event, put or get.
//!
//! A stop (the driver's shutdown) ends the run at any phase: requests in flight get the
//! driver's stop grace to finish, the report holds what was measured and is marked
//! interrupted. The load section's `rate`, `duration` and `warmup` do not apply here; its
//! `clients` is the number of `watch` putters, as etcd's tool uses `--clients`.
//!
//! # What is recorded
//!
//! - `watch-create`: from sending a create request to its `created` response. Creates are
//!   pipelined on a stream and etcd answers them in order, so the `k`th `created` response
//!   of a stream answers its `k`th create. Every workload records it. (etcd's tool times
//!   only the client library's call, which does not wait for the server.)
//! - `watch-event`: from the moment the put was sent to the moment its event arrived, for
//!   every event on every watcher. Every put's value starts with its send time (8 bytes,
//!   little-endian nanoseconds since an instant all worker threads share), so the event
//!   itself says when its put was sent. etcd's tool times an event from the previous one,
//!   about 0 by construction. Values of `watch` are those 8 bytes; `watch-latency` values
//!   are `val-size` bytes, at least 8.
//! - `watch-event-acked` (`watch-latency`): from the put's acknowledgement (its response
//!   arriving at the putter) to the event's arrival. Events are matched to puts by revision:
//!   the put response's header revision is the event's mod revision (the putter publishes
//!   each acknowledgement in a lock-free table by revision that watchers read). An event
//!   that arrives before its put's response is counted in the accounting's `before_ack` and
//!   recorded nothing here: it is never clamped to 0, as etcd's tool does. An event that
//!   arrives more than [`ack::ACK_SLOTS`] revisions after its put was acknowledged can no longer
//!   be matched and is recorded only from the send.
//! - `put` (`watch`, `watch-latency`): the puts that make the events, like any put.
//! - `range` (`watch-get`): serializable gets of key `abc`, back to back from one client,
//!   from the start of watch creation until every watcher has caught up.
//!
//! Only an event's first arrival, in revision order, is recorded.
//!
//! # Accounting
//!
//! Every watcher checks that its events arrive once each and in revision order: an event of
//! the revision it saw last is a duplicate, one older than that is out of order (it may also
//! be a late duplicate; the two cannot be told apart without remembering every revision).
//! `expected` is, over the acknowledged puts, the number of watchers of each put's key
//! (`watch-get`: watchers times events); `missing` is `expected - (received - duplicate)`.
//! Events of writes this run did not make (a value of another length on a watched key) are
//! left out of every figure.
//!
//! A put can fail and still have been applied: under overload etcd answers "request timed
//! out" for proposals it may yet commit, and a lost connection or a stop leaves a put's
//! outcome unknown ([`crate::transport::outcome_unknown`]). Such puts are counted in `uncertain_puts`, and
//! the watchers of their keys in `uncertain_events`, the most events they can have made;
//! events seen beyond `expected + uncertain_events` are `unexplained`. The run waits for
//! the `expected` events only.

mod ack;
mod conductor;
mod phase;
mod plan;
mod tally;
mod task;

pub(crate) use conductor::run;
