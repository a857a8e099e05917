//! The load: the [`driver::Driver`] that runs scenarios, its worker threads and their
//! logical clients, the request operations they execute (STM and the apiserver's among them), and background
//! compaction; the file descriptors its connections need, and its worker threads' CPU.

mod audit;
mod audit_log;
mod compaction;
mod completion;
mod cpu;
pub(crate) mod driver;
mod fds;
mod kubernetes;
pub(crate) mod progress;
pub(crate) mod report;
mod request;
mod run;
mod step;
mod stm;
pub(crate) mod worker;
