//! The `shoal` command-line tool: the command line and its dispatch. Each command is a module
//! of its own: `serve`, `health`, `streams` and `mcp` here, the others in the library
//! (`shoal::`).

mod health;
mod mcp;
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

/// `shoal --help`'s commands, grouped by what a user comes for. clap lists subcommands in
/// one flat list, so the groups are written here; a test checks that they name every
/// visible command exactly once.
const COMMAND_GROUPS: &str = "\
Server:
  serve       Serves DynamoDB's HTTP protocol; point any DynamoDB client at it
  health      Exits 0 if a server is healthy, 2 if degraded, 1 if not serving writes

Data:
  copy        Copies a table between endpoints or export directories
  export      Writes a table in DynamoDB's S3 export layout
  import      Reads an export into a table
  check       Verifies a database's indexes, collections and statistics
  streams     Reads a table's DynamoDB stream from the command line

Testing:
  bench       Runs a data-model file (capacity, cost, hot partitions), or a fixed load
  crash-test  Crashes a server or your application under load and checks what survived

Agents:
  mcp         Serves Shoal's tools to AI agents over the Model Context Protocol

Run `shoal help COMMAND` for a command's flags.";

#[derive(Parser)]
#[command(
    name = "shoal",
    version,
    about = "A durable, embeddable DynamoDB-compatible datastore",
    help_template = "{about-with-newline}\n{usage-heading} {usage}\n\n{before-help}\n\nOptions:\n{options}{after-help}",
    before_help = COMMAND_GROUPS,
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
    /// Benchmarks: runs a data-model file (`--model`: capacity, cost, hot partitions and
    /// latency per access pattern; `plan`, `compare`), or a fixed load (PutItem, GetItem,
    /// Query on an LSI and a GSI) against any DynamoDB endpoint on this machine.
    Bench(bench::BenchArgs),
    /// Asks the server at ENDPOINT for `GET /`: exits 0 if healthy, 2 if degraded (damaged
    /// data met), 1 if writes are refused or it does not answer (a health check for
    /// containers, which have no curl).
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
    /// Serves the Model Context Protocol (stdio, or streamable HTTP with a bearer token) so
    /// an AI agent can use Shoal: a tool per DynamoDB operation, the data-model bench, its
    /// capacity plan and cost, a table's partitions, stream tails, fault rules, crash tests.
    Mcp(mcp::McpArgs),
    /// The child `crash-test --mode kill` runs and kills.
    #[command(hide = true)]
    CrashTestChild(crash_test::CrashTestChildArgs),
    /// Crash-test child: writes the crash workload into DIR forever, printing `ack N` after
    /// each committed batch. Run it, kill -9 it, and verify with the crash tests.
    #[command(hide = true)]
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
        Command::Health(args) => return health::run(args),
        Command::Streams { command } => streams::run(command),
        Command::Check(args) => check::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Copy(args) => transfer::cli::copy(args),
        Command::Export(args) => transfer::cli::export(args),
        Command::Import(args) => transfer::cli::import(args),
        Command::CrashTest(args) => crash_test::command(args),
        Command::Mcp(args) => mcp::run(args),
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

    /// Every visible command and flag, at every depth, says what it does.
    #[test]
    fn every_command_and_flag_has_a_description() {
        use clap::CommandFactory;
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in command.get_subcommands().filter(|sub| !sub.is_hide_set()) {
                let path = format!("{path} {}", sub.get_name());
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(path.clone());
                }
                for arg in sub.get_arguments().filter(|arg| !arg.is_hide_set()) {
                    let id = arg.get_id().as_str();
                    if arg.get_help().is_none() && !["help", "version"].contains(&id) {
                        missing.push(format!("{path} {id}"));
                    }
                }
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "shoal", &mut missing);
        assert!(missing.is_empty(), "without a description: {missing:?}");
    }

    /// The help of every visible command, at every depth, as `tests/help.txt` holds it: a
    /// change of any help text shows in review as a change of that file. After a change on
    /// purpose, `SHOAL_UPDATE_HELP=1 cargo test --bin shoal help_texts` rewrites it.
    #[test]
    fn help_texts_match_their_snapshot() {
        use clap::CommandFactory;
        fn walk(command: &mut clap::Command, path: &str, out: &mut String) {
            out.push_str(&format!("==== {path} --help\n{}\n", command.render_help()));
            let names: Vec<String> = command
                .get_subcommands()
                .filter(|sub| !sub.is_hide_set() && sub.get_name() != "help")
                .map(|sub| sub.get_name().to_string())
                .collect();
            for name in names {
                if let Some(sub) = command.find_subcommand_mut(&name) {
                    walk(sub, &format!("{path} {name}"), out);
                }
            }
        }
        // A fixed width, so the wrapping does not follow the terminal the tests run in.
        let mut root = Cli::command().term_width(100);
        root.build();
        let mut rendered = String::new();
        walk(&mut root, "shoal", &mut rendered);
        let snapshot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/help.txt");
        if std::env::var_os("SHOAL_UPDATE_HELP").is_some() {
            std::fs::write(&snapshot, &rendered).unwrap();
            return;
        }
        let expected = std::fs::read_to_string(&snapshot).unwrap_or_default();
        if expected != rendered {
            let first = expected
                .lines()
                .zip(rendered.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(rendered.lines().count()));
            panic!(
                "the help texts differ from tests/help.txt from line {}: {:?}; if the change is \
                 meant, rewrite it with SHOAL_UPDATE_HELP=1 cargo test --bin shoal help_texts",
                first + 1,
                rendered.lines().nth(first)
            );
        }
    }

    /// `shoal --help`'s groups name each visible command once, and no other.
    #[test]
    fn the_grouped_command_list_names_every_visible_command_once() {
        use clap::CommandFactory;
        let visible: Vec<String> = Cli::command()
            .get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(|sub| sub.get_name().to_string())
            .collect();
        let listed: Vec<&str> = COMMAND_GROUPS
            .lines()
            .filter(|line| line.starts_with("  "))
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        let mut sorted_visible = visible.clone();
        sorted_visible.sort();
        let mut sorted_listed: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
        sorted_listed.sort();
        assert_eq!(sorted_listed, sorted_visible);
        let help = Cli::command().render_help().to_string();
        assert!(help.contains("Testing:\n  bench"), "{help}");
        assert!(help.contains("Agents:\n  mcp"), "{help}");
        assert!(!help.contains("crash-writer"), "{help}");
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
