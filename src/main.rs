//! The `shoal` command-line tool: the command line and its dispatch. Each command is a module
//! of its own: `serve`, `health` and `streams` here, the others in the library (`shoal::`).

mod health;
mod serve;
mod streams;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use shoal::{bench, check, crash_test, transfer};

use serve::dynamodb_local;

/// mimalloc instead of the C library's allocator: a request allocates and frees many small
/// strings and maps (items decoded for a Query, JSON text), where glibc's malloc spent a
/// quarter of the server's time in its slow paths.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "shoal",
    version,
    about = "A durable, embeddable DynamoDB-compatible datastore",
    after_help = "DynamoDB Local's command line also works: `shoal -sharedDb -inMemory -port 8000` \
                  starts `shoal serve` (`shoal -help` lists those flags)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serves DynamoDB's HTTP protocol (point any DynamoDB client at it with an endpoint URL).
    Serve(serve::ServeArgs),
    /// Load generator: PutItem, GetItem, Query on an LSI and on a GSI against any DynamoDB
    /// endpoint on this machine, from many keep-alive connections.
    Bench(bench::BenchArgs),
    /// Exits 0 if the server at ENDPOINT answers `GET /` with 200, else 1 (a health check
    /// for containers, which have no curl).
    Health(health::HealthArgs),
    /// DynamoDB Streams from the command line, against a running server.
    Streams {
        #[command(subcommand)]
        command: streams::StreamsCommand,
    },
    /// Verifies a database: every index equals the index derived from the base items, every
    /// item-collection record its recomputed size, every statistic its recount (exits 1 if
    /// anything disagrees). Streams the data, showing progress on stderr; refuses a
    /// directory that holds no database.
    Check(check::CheckArgs),
    /// Crashes a database under a mixed workload (puts, updates, deletes, transactions on a
    /// table with an LSI, a GSI, a stream and Time to Live) again and again, and checks after
    /// each recovery every acknowledged write, every index, collection and statistics record,
    /// and the stream. Exits 1 on any violation.
    CrashTest(crash_test::CrashTestArgs),
    /// Copies a table between any two DynamoDB-compatible endpoints (Shoal, DynamoDB,
    /// Alternator, DynamoDB Local) or export directories: parallel scan, batch writes with
    /// back-off, a progress bar; an interrupted copy run again goes on where it stopped.
    Copy(transfer::cli::CopyArgs),
    /// Writes a table in DynamoDB's S3 export layout (what DynamoDB's ImportTable and
    /// `shoal import` read): from a data directory at one snapshot, or from any endpoint.
    Export(transfer::cli::ExportArgs),
    /// Reads an export (DynamoDB's or Shoal's) into a table: a new table of a data
    /// directory, or a table of any endpoint.
    Import(transfer::cli::ImportArgs),
    /// The child `crash-test --mode kill` runs and kills.
    #[command(hide = true)]
    CrashTestChild(crash_test::CrashTestChildArgs),
    /// Crash-test child: writes the crash workload into DIR forever, printing `ack N` after
    /// each committed batch. Run it, kill -9 it, and verify with the crash tests.
    CrashWriter(crash_test::writer::CrashWriterArgs),
}

fn main() -> ExitCode {
    // A crash test makes the engine log the failures it injects on purpose: quiet by default.
    let crash_testing = std::env::args().nth(1).as_deref() == Some("crash-test");
    let default_filter = if crash_testing { "off" } else { "info" };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter)),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args =
        match dynamodb_local::translate(std::env::args().collect(), &serve::serve_value_flags()) {
            Ok(dynamodb_local::Invocation::Args(args)) => args,
            Ok(dynamodb_local::Invocation::Help) => {
                print!("{}", dynamodb_local::usage());
                return ExitCode::SUCCESS;
            }
            Err(message) => {
                eprintln!("shoal: {message}");
                return ExitCode::from(2);
            }
        };
    let cli = Cli::parse_from(args);
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Health(args) => health::run(args),
        Command::Streams { command } => streams::run(command),
        Command::Check(args) => check::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Copy(args) => transfer::cli::copy(args),
        Command::Export(args) => transfer::cli::export(args),
        Command::Import(args) => transfer::cli::import(args),
        Command::CrashTest(args) => crash_test::command(args),
        Command::CrashTestChild(args) => crash_test::child_command(args),
        Command::CrashWriter(args) => crash_test::writer::command(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("shoal: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::time::Duration;

    use shoal_server::CorsOrigins;

    /// Parses a command line the way `main` does.
    pub(crate) fn parse(text: &str) -> Result<Cli, String> {
        let args = text.split_whitespace().map(str::to_owned).collect();
        match dynamodb_local::translate(args, &serve::serve_value_flags())? {
            dynamodb_local::Invocation::Args(args) => {
                Cli::try_parse_from(args).map_err(|e| e.to_string())
            }
            dynamodb_local::Invocation::Help => Err("help".to_owned()),
        }
    }

    pub(crate) fn serve_args(text: &str) -> serve::ServeArgs {
        match parse(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"))
            .command
        {
            Command::Serve(serve) => serve,
            _ => panic!("{text}: not serve"),
        }
    }

    #[test]
    fn dynamodb_local_command_line_starts_serve() {
        let serve = serve_args("shoal -sharedDb -inMemory -port 8000");
        assert_eq!(serve.port, 8000);
        assert!(serve.in_memory && serve.shared_db);
        assert_eq!(serve.cors, None);

        let serve = serve_args(
            "shoal -port 9000 -dbPath /tmp/x -cors https://a.example,https://b.example \
             -delayTransientStatuses -optimizeDbBeforeStartup -disableTelemetry",
        );
        assert_eq!(serve.port, 9000);
        assert_eq!(serve.data_dir, PathBuf::from("/tmp/x"));
        assert!(!serve.in_memory);
        assert_eq!(
            serve.cors,
            Some(CorsOrigins::List(vec![
                "https://a.example".to_owned(),
                "https://b.example".to_owned()
            ]))
        );
        assert!(serve.delay_transient_statuses);
        assert_eq!(
            serve::transient_status_delay(&serve),
            Duration::from_secs(5)
        );
        assert!(serve.optimize_db_before_startup && serve.disable_telemetry);

        assert_eq!(
            serve_args("shoal -cors * -inMemory").cors,
            Some(CorsOrigins::Any)
        );
        assert_eq!(parse("shoal -help").err().as_deref(), Some("help"));
    }

    #[test]
    fn serve_keeps_both_spellings() {
        let serve = serve_args("shoal serve -port 8000 -inMemory");
        assert_eq!(serve.port, 8000);
        assert!(serve.in_memory);
        let serve = serve_args("shoal serve --port 7000 --data-dir d --durability none");
        assert_eq!(serve.port, 7000);
        assert_eq!(serve.data_dir, PathBuf::from("d"));
        let serve = serve_args("shoal serve --host 0.0.0.0 -port 1 --in-memory -sharedDb");
        assert_eq!((serve.host.as_str(), serve.port), ("0.0.0.0", 1));
        assert!(serve.in_memory && serve.shared_db);
        // Defaults are untouched by the translation.
        let serve = serve_args("shoal serve");
        assert_eq!(serve.port, 8000);
        assert_eq!(serve.data_dir, PathBuf::from("./shoal-data"));
    }

    #[test]
    fn unknown_flags_bad_values_and_conflicts_are_errors() {
        let error = parse("shoal -inMemory -fooBar").err().unwrap();
        assert!(error.contains("-fooBar"), "{error}");
        assert!(parse("shoal -cors , -inMemory").is_err());
        // DynamoDB Local refuses -inMemory with -dbPath; so does Shoal, in either spelling.
        let error = parse("shoal -inMemory -dbPath /tmp/x").err().unwrap();
        assert!(error.contains("cannot be used with"), "{error}");
        assert!(parse("shoal serve --in-memory --data-dir /tmp/x").is_err());
    }
}
