//! `shoal mcp`: a Model Context Protocol server, on the official Rust SDK (`rmcp`), so that
//! an agent (Claude Desktop, Claude Code, any MCP client) works with Shoal through tools:
//! one per DynamoDB operation, and Shoal's own (the data-model bench, its capacity plan and
//! cost, a table's partitions and item collections, stream tails, fault rules, crash tests).
//!
//! It serves either a database in this process (`--data-dir`, `--in-memory`, as `shoal
//! serve` opens one) or a running server (`--endpoint URL`, which is what makes a live
//! server's fault rules reachable). `server.rs` is the handler and its limits,
//! `dynamodb.rs` the DynamoDB tools, `shoal_tools.rs` Shoal's own, `transport.rs` stdio and
//! streamable HTTP with its bearer token.

pub mod dynamodb;
pub mod server;
pub mod shoal_tools;
pub mod transport;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use shoal::client::target::Target;
use shoal::tables::{Database, Options};

use server::ShoalMcp;

/// The environment variable the HTTP transport's bearer token is read from.
pub const TOKEN_VARIABLE: &str = "SHOAL_MCP_TOKEN";

#[derive(Args)]
pub struct McpArgs {
    /// Serve this database directory in this process (created if missing), as `shoal serve
    /// --data-dir` does; not while a server has it open.
    #[arg(long, value_name = "DIR", default_value = "./shoal-data")]
    data_dir: PathBuf,
    /// Serve a database that lives in memory only, gone when the command ends.
    #[arg(long, conflicts_with = "endpoint")]
    in_memory: bool,
    /// Drive the DynamoDB server at this URL (http:// or https://) instead of a database in
    /// this process; the fault-rule tools need it started with `shoal serve --admin`.
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// Serve MCP over streamable HTTP on this address (path /mcp), e.g. 127.0.0.1:8765,
    /// instead of stdio. Clients must send `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The bearer token of --http (at least 16 characters); default: the SHOAL_MCP_TOKEN
    /// environment variable, which keeps it out of the process list.
    #[arg(long, value_name = "TOKEN", requires = "http")]
    token: Option<String>,
}

/// `shoal mcp`.
pub fn run(args: McpArgs) -> Result<(), String> {
    // Checked before the database opens: a refused bind should not wait on a recovery.
    let http = match args.http {
        Some(address) => {
            let token = args
                .token
                .clone()
                .or_else(|| std::env::var(TOKEN_VARIABLE).ok());
            Some((address, transport::check_token(address, token)?))
        }
        None => None,
    };
    let (target, endpoint) = match &args.endpoint {
        Some(url) => (Target::new(Some(url))?, Some(url.clone())),
        None => {
            let database = if args.in_memory {
                Database::open_in_memory(Options::default())
            } else {
                Database::open(&args.data_dir, Options::default())
            }
            .map_err(|e| format!("cannot open {}: {e}", args.data_dir.display()))?;
            (Target::Embedded(Arc::new(database)), None)
        }
    };
    let handler = ShoalMcp::new(target, endpoint);
    // An endpoint's idle clients each own a runtime, which may not be dropped inside the
    // async runtime: this reference is the last one, dropped after the runtime.
    let last = handler.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let served = runtime.block_on(async move {
        match http {
            Some((address, token)) => transport::serve_http(handler, address, token).await,
            None => transport::serve_stdio(handler).await,
        }
    });
    drop(runtime);
    drop(last);
    served
}
