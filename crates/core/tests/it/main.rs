//! Integration tests of etcdlat-core, one module per subject.

mod columns;
mod drawn;
mod fixture;
mod fuzz;
mod heatmap;
mod json_contract;
mod merge;
mod plot;
mod render;
mod study;
