//! `shoal streams`: DynamoDB Streams from the command line, against a running server.
//! `streams tail` ([`tail`]) prints a table's stream records while they arrive.

pub mod tail;

use clap::Subcommand;

#[derive(Subcommand)]
pub enum StreamsCommand {
    /// Prints a table's stream records as JSON lines (one GetRecords record per line) while
    /// they arrive, following shard rollovers; runs until interrupted or a limit below.
    Tail(tail::TailArgs),
}

/// `shoal streams`.
pub fn run(command: StreamsCommand) -> Result<(), String> {
    match command {
        StreamsCommand::Tail(args) => tail::run(args),
    }
}
