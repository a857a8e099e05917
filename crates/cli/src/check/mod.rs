//! `etcdlat check`: `disk` (the WAL's write pattern on a directory's filesystem, on a plain
//! thread, stopped by the stop flag with its test files removed) and `perf` (etcdctl check
//! perf's load as a load run, its rules printed each with its figure, and the check's keys
//! deleted after, however the run ended).

pub mod disk;
pub mod perf;
