//! The repository as its users get it, beyond what one crate's own tests can show.
//!
//! - `code_map`: ARCHITECTURE.md names every source folder and file, and no file it names is
//!   gone; every `tests/it` index declares and describes each of its modules; no two source
//!   files import each other in a circle.
//! - `public_api`: the library crates' public API, from rustdoc's JSON, is the checked-in
//!   listing `docs/public-api.txt`, so that a change to it is a reviewed diff.
//! - `embed`: the README's "Embedding in a test suite", built and run as a crate of its own
//!   outside the workspace, as an embedder gets the library.

mod code_map;
mod embed;
mod public_api;
