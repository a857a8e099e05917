//! Integration tests of etcdlat-core, one module per subject.

mod columns;
mod fixture;
mod fuzz;
mod json_contract;
mod merge;
mod plot;
mod render;
