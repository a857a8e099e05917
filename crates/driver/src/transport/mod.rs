//! The client's own gRPC, on its own HTTP/2: dialling, connections and their redial, unary
//! calls, gRPC framing and statuses, the hand-written messages of the hot path, the run's
//! auth token, and the tower service etcd-client runs on over the same connections.
//!
//! Layers, each file importing only those below it:
//! - [`message`], [`frame`], [`mod@status`]: etcd's messages, gRPC's framing and statuses;
//! - [`security`], [`auth`]: TLS and credentials, the run's token;
//! - [`io`]: a connection's byte stream, TCP or TLS;
//! - [`http2`]: HTTP/2 as gRPC uses it: streams, flow control, pings, each turn's frames
//!   in one write;
//! - [`dial`]: TCP, TLS, and HTTP/2 started on them;
//! - [`channel`]: one running HTTP/2 connection, redialled when lost;
//! - [`unary`], [`service`]: a unary call on a channel, etcd-client's service on one;
//! - [`kv`]: the hot path's client, one future per request;
//! - [`range_stream`]: etcd 3.7's RangeStream on that client, its messages counted as they
//!   arrive;
//! - [`watch`]: a watch stream of the client's own, without etcd-client;
//! - [`conn`]: [`Conn`], the one connection type the load opens, and control clients;
//! - [`control`]: deadlines and errors of etcd-client's control requests.
//!
//! Nothing a server sends panics the client: whatever its frames, statuses and bodies, a
//! call ends in a gRPC status (mapped as gRPC maps them) that the run counts. `frame` and
//! `status` are property-tested with arbitrary bytes, and the testkit's `HostileProxy`
//! drives a whole run through malformed answers, resets, GOAWAY and stalls.

mod auth;
mod channel;
mod conn;
mod control;
mod dial;
pub(crate) mod frame;
mod http2;
mod io;
mod kv;
pub(crate) mod message;
mod range_stream;
mod security;
mod service;
mod status;
mod unary;
mod watch;

pub(crate) use conn::{Conn, control_client, control_client_any};
pub(crate) use control::{outcome_unknown, source_chain, status, within};
pub use dial::DEFAULT_DIAL_TIMEOUT;
pub(crate) use dial::{Dialer, url};
pub(crate) use io::Ledger;
pub(crate) use kv::Kv;
pub use security::{Credentials, Security, TlsConfigError, TlsOptions};
pub(crate) use watch::{WatchCreate, WatchReceiver, WatchSender};
