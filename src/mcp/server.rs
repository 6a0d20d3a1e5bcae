//! The MCP server itself: the tool list, and each call routed to a DynamoDB operation
//! ([`super::dynamodb`]) or to one of Shoal's own tools ([`super::shoal_tools`]), with the
//! limits every call is held to: how many run at once, and how large an answer may be.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use shoal::client::target::{Client, Target};
use tokio::sync::Semaphore;

use super::{dynamodb, shoal_tools};

/// Tool calls running at once; more are refused with a message rather than queued, so an
/// agent that fans out learns the limit instead of waiting on it.
pub const CALLS_MAX: usize = 8;
/// Long tools (a bench run, a crash test) running at once: each takes the machine's cores.
pub const LONG_CALLS_MAX: usize = 1;
/// Largest answer a tool returns, in bytes of text: an agent's context is small, and a
/// DynamoDB page is up to 1 MB of items.
pub const RESULT_BYTES_MAX: usize = 1 << 20;

/// What the server serves: the database (embedded) or the endpoint, and its limits.
pub struct Shoal {
    pub target: Target,
    /// With `--endpoint`: its URL (the admin API's fault rules, stream tails go there).
    pub endpoint: Option<String>,
    /// Idle clients of `target`, reused by later calls (at most [`CALLS_MAX`] kept).
    clients: Mutex<Vec<Client>>,
    calls: Arc<Semaphore>,
    pub long_calls: Arc<Semaphore>,
    tools: Vec<Tool>,
}

/// The handler rmcp runs: cheap to clone, as the HTTP transport makes one per request.
#[derive(Clone)]
pub struct ShoalMcp(pub Arc<Shoal>);

impl ShoalMcp {
    pub fn new(target: Target, endpoint: Option<String>) -> ShoalMcp {
        let tools = dynamodb::tools()
            .into_iter()
            .map(|(name, description, schema)| tool(name, description, schema))
            .chain(
                shoal_tools::tools()
                    .into_iter()
                    .map(|(name, description, schema)| tool(name, description, schema)),
            )
            .collect();
        ShoalMcp(Arc::new(Shoal {
            target,
            endpoint,
            clients: Mutex::new(Vec::new()),
            calls: Arc::new(Semaphore::new(CALLS_MAX)),
            long_calls: Arc::new(Semaphore::new(LONG_CALLS_MAX)),
            tools,
        }))
    }
}

fn tool(name: &'static str, description: impl Into<String>, schema: Value) -> Tool {
    let schema = match schema {
        Value::Object(members) => members,
        _ => serde_json::Map::new(),
    };
    Tool::new(name, description.into(), Arc::new(schema))
}

impl Shoal {
    /// Runs DynamoDB `operation` with request `body` on a client of the target, on the
    /// blocking pool (an endpoint client blocks on its own runtime).
    pub async fn call(self: &Arc<Self>, operation: &str, body: Vec<u8>) -> Result<String, String> {
        let shoal = Arc::clone(self);
        let operation = operation.to_string();
        blocking(move || {
            let mut client = shoal.take_client()?;
            match client.call(&operation, &body) {
                Ok(answer) => {
                    shoal.give_back(client);
                    String::from_utf8(answer).map_err(|_| "the answer is not UTF-8".to_string())
                }
                Err(error) => {
                    // A connection that failed is not reused.
                    if error.code != "ConnectionError" {
                        shoal.give_back(client);
                    }
                    let mut text = format!("{}: {}", error.code, error.message);
                    if let Some(item) = error.item {
                        text.push_str(&format!("\nItem: {item}"));
                    }
                    Err(text)
                }
            }
        })
        .await?
    }

    fn take_client(&self) -> Result<Client, String> {
        let idle = self.clients.lock().ok().and_then(|mut idle| idle.pop());
        match idle {
            Some(client) => Ok(client),
            None => self.target.client(),
        }
    }

    fn give_back(&self, client: Client) {
        if let Ok(mut idle) = self.clients.lock() {
            if idle.len() < CALLS_MAX {
                idle.push(client);
            }
        }
    }
}

/// Runs `work` on tokio's blocking pool.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| format!("the call failed: {e}"))
}

/// A tool's answer: its text, or an error the agent reads (not a protocol error, which
/// clients hide from it).
fn answer(outcome: Result<String, String>) -> CallToolResult {
    match outcome {
        Ok(text) if text.len() > RESULT_BYTES_MAX => {
            CallToolResult::error(vec![ContentBlock::text(format!(
                "the answer is {} bytes, over the {} a tool returns (any write was still made): \
             ask for less (Limit, ProjectionExpression, fewer records) and page on",
                text.len(),
                "1 MiB"
            ))])
        }
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
    }
}

const INSTRUCTIONS: &str = "Shoal is a DynamoDB-compatible datastore. Each DynamoDB operation \
is a tool named as the API names it (PutItem, Query, CreateTable, …) taking the request \
exactly as DynamoDB's API does, in DynamoDB JSON ({\"S\": \"text\"}, {\"N\": \"12\"}). \
Shoal's own tools: bench_model runs a data-model file (tables, items, access patterns) \
and reports capacity, cost, hot partitions and item collections; plan_capacity_and_cost \
says at what multiple of the modelled rate the design first throttles and what it costs \
per month; describe_partitions shows a live table's largest partitions and item \
collections; tail_stream reads a table's stream records; list_fault_rules, \
add_fault_rules and clear_fault_rules inject errors and latency into a server's answers; \
crash_test crashes a database under load and checks what survived.";

impl ServerHandler for ShoalMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("shoal", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.0.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Ok(_permit) = Arc::clone(&self.0.calls).try_acquire_owned() else {
            return Ok(answer(Err(format!(
                "{CALLS_MAX} tool calls are already running: wait for one to finish"
            )))
            .into());
        };
        let name = request.name.to_string();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let outcome = if dynamodb::is_operation(&name) {
            match serde_json::to_vec(&arguments) {
                Ok(body) => self.0.call(&name, body).await,
                Err(e) => Err(e.to_string()),
            }
        } else {
            shoal_tools::call(&self.0, &name, arguments).await
        };
        Ok(answer(outcome).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_over_the_limit_is_an_error_that_says_what_to_do() {
        let big = answer(Ok("x".repeat(RESULT_BYTES_MAX + 1)));
        assert_eq!(big.is_error, Some(true));
        let text = serde_json::to_string(&big.content).unwrap();
        assert!(text.contains("Limit"), "{text}");
        let fits = answer(Ok("x".repeat(RESULT_BYTES_MAX)));
        assert_eq!(fits.is_error, Some(false));
    }
}
