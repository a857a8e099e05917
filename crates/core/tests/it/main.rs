//! Integration tests of etcdlat-core, one module per subject. The tests of the report data
//! that read it back through its written forms (the JSON contract, merge and compare, dbtester's
//! figures) live with the renderers, in `crates/render/tests/it`.
//!
//! - `fuzz`: the scenario parser fuzzed with proptest: never a panic, every error saying
//!   where, every scenario it accepts valid.

mod fuzz;
