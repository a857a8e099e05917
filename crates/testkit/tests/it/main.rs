//! Integration tests of etcdlat-testkit: its helpers checked against a real etcd, one module
//! per testkit module.

mod etcd;
mod pki;
