//! The HTTP server's integration tests, as one test binary: the crate and its dependencies
//! are linked once, not once per file. Each module is one concern (its docs say which);
//! `support` is shared. One test has a binary of its own, `tests/handler_threads.rs`: it
//! counts the process's threads, which other tests running beside it would add to.

mod support;

mod console;
mod content_encoding;
mod limits;
mod sigv4_verify;
mod transport;
