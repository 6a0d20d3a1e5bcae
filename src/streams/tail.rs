//! `shoal streams tail`: prints a table's stream records as JSON lines while they arrive.
//! The reading is [`shoal::client::streams`]; this is its command line.

use std::time::Duration;

use clap::Args;
use shoal::client::streams::{tail, From, TailOptions};

use crate::serve::parse_count;

#[derive(Args)]
pub struct TailArgs {
    /// The table whose latest stream is read.
    #[arg(long)]
    table: String,
    /// Start at the oldest record retained, or only print what is written from now on.
    #[arg(long, value_enum, default_value = "trim-horizon")]
    from: From,
    /// The server's endpoint (plain http://).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    endpoint: String,
    /// Exit after printing this many records.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    max_records: Option<u64>,
    /// Exit after this many seconds without a new record.
    #[arg(long, value_name = "SECONDS", value_parser = parse_count)]
    idle_exit_seconds: Option<u64>,
}

/// `shoal streams tail`.
pub fn run(args: TailArgs) -> Result<(), String> {
    // Only plain http:// is offered here; the check names what to write instead.
    crate::health::authority(&args.endpoint)?;
    let options = TailOptions {
        endpoint: args.endpoint,
        table: args.table,
        from: args.from,
        max_records: args.max_records,
        idle_exit: args.idle_exit_seconds.map(Duration::from_secs),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(tail(&options, std::io::stdout().lock()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::streams::StreamsCommand;
    use crate::tests::parse;
    use crate::Command;

    #[test]
    fn streams_tail_takes_a_table_and_limits() {
        let cli = parse("shoal streams tail --table Music").unwrap();
        let Command::Streams {
            command: StreamsCommand::Tail(tail),
        } = cli.command
        else {
            panic!("not streams tail")
        };
        assert_eq!(tail.table, "Music");
        assert_eq!(tail.from, From::TrimHorizon);
        assert_eq!(tail.endpoint, "http://127.0.0.1:8000");
        assert_eq!((tail.max_records, tail.idle_exit_seconds), (None, None));
        let cli = parse(
            "shoal streams tail --table T --from latest --endpoint http://127.0.0.1:9 \
             --max-records 3 --idle-exit-seconds 2",
        )
        .unwrap();
        let Command::Streams {
            command: StreamsCommand::Tail(tail),
        } = cli.command
        else {
            panic!("not streams tail")
        };
        assert_eq!(tail.from, From::Latest);
        assert_eq!(
            (tail.max_records, tail.idle_exit_seconds),
            (Some(3), Some(2))
        );
        assert!(parse("shoal streams tail").is_err());
        assert!(parse("shoal streams tail --table T --from middle").is_err());
        assert!(parse("shoal streams tail --table T --max-records 0").is_err());
    }
}
