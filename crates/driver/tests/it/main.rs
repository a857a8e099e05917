//! The driver against real etcd servers started by the testkit.
//!
//! - `put`: puts change the store as the report says (revision, keys, big values).
//! - `range`: reads return the data put; consistency, limit, count-only.
//! - `run`: how runs connect and stop (connections, rate, duration, shutdown, bad endpoints).

mod put;
mod range;
mod run;

use etcdlat_core::Scenario;

/// A scenario from TOML, panicking with the error when invalid.
pub fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("invalid test scenario: {e}"))
}
