//! Recordings of `shoal serve --record`: `model-from` fits a data model to one
//! (`model_from.rs`, with the distributions in `fit.rs`), `replay` sends its requests again
//! (`replay.rs`); `read.rs` reads the files (their format is the server's
//! `shoal_server::record::format`).

pub mod fit;
pub mod model_from;
pub mod read;
pub mod replay;
