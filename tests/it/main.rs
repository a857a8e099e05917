//! The repository as its users get it, beyond what one crate's own tests can show.
//!
//! - `embed`: the README's "Embedding in a test suite", built and run as a crate of its own
//!   outside the workspace, as an embedder gets the library.

mod embed;
