//! The cluster under test and what is done to it around the load: discovery of members
//! and leader, targeting, the HashKV check, throwaway local clusters, scripted faults,
//! members' `/metrics`, the barrier that lines up distributed runs, the emulated network
//! of local clusters, toxiproxy's toxics for clusters etcdlat did not start, and the alarms
//! (NOSPACE) a run leaves raised.

pub(crate) mod alarm;
pub(crate) mod barrier;
pub(crate) mod discovery;
pub(crate) mod fault;
pub(crate) mod hashkv;
pub(crate) mod local;
pub(crate) mod metrics;
pub(crate) mod network;
pub(crate) mod orphan;
mod process;
pub(crate) mod target;
pub(crate) mod toxiproxy;
