//! Integration tests of etcdlat-testkit: its helpers checked against a real etcd, one module
//! per testkit module.
//!
//! - `etcd`: `Etcd` names the etcd the tests run against as the started server reports it.
//! - `pki`: `Pki`'s certificates against a member with `--client-cert-auth`: its client
//!   certificate accepted under every name of the server's, the others and an untrusting
//!   client refused.

mod etcd;
mod pki;
