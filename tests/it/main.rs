//! The repository as its users get it, beyond what one crate's own tests can show.
//!
//! - `code_map`: the claims ARCHITECTURE.md makes hold: the crates depend one way, no two
//!   source files import each other in a circle, the libraries never print, read the
//!   environment or exit; every source folder is named in the map, every path it names
//!   exists, every test it cites is defined, every source file opens with a `//!` line; every
//!   `tests/it` index declares and describes each of its modules.
//! - `public_api`: the library crates' public API, from rustdoc's JSON, is the checked-in
//!   listing `docs/public-api.txt`, so that a change to it is a reviewed diff.
//! - `embed`: the README's "Embedding in a test suite", built and run as a crate of its own
//!   outside the workspace, as an embedder gets the library.

mod code_map;
mod embed;
mod public_api;
