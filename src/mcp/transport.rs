//! How MCP reaches `shoal mcp`: stdio (the client starts the command), or streamable HTTP
//! (rmcp's tower service on a hyper server) behind a bearer token, which every request must
//! carry: on a loopback address any local program or web page could otherwise call the
//! tools, and on any other address any machine that reaches it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use shoal_server::sigv4::signatures_equal;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::server::ShoalMcp;
use super::TOKEN_VARIABLE;

/// The path MCP is served on.
pub const MCP_PATH: &str = "/mcp";
/// Shortest bearer token accepted.
pub const TOKEN_CHARS_MIN: usize = 16;
/// Largest request body, in bytes: DynamoDB's own request limit (a BatchWriteItem).
const REQUEST_BYTES_MAX: usize = 16 << 20;
/// Open HTTP connections at once; further ones are closed at once.
const CONNECTIONS_MAX: usize = 64;

/// Serves MCP on stdin and stdout until the client closes them.
pub async fn serve_stdio(handler: ShoalMcp) -> Result<(), String> {
    let service = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP over stdio: {e}"))?;
    service
        .waiting()
        .await
        .map_err(|e| format!("MCP over stdio: {e}"))?;
    Ok(())
}

/// The token `--http ADDRESS` is served with, or why it is refused.
pub fn check_token(address: SocketAddr, token: Option<String>) -> Result<String, String> {
    match token.filter(|token| !token.is_empty()) {
        None if address.ip().is_loopback() => Err(format!(
            "--http needs a bearer token (--token, or the {TOKEN_VARIABLE} environment \
             variable): without one any program or web page on this machine could call the \
             tools, which read and change the data"
        )),
        None => Err(format!(
            "refusing to serve MCP on {address} without a token: it is not a loopback \
             address, so any machine that reaches it could read and change the data and run \
             the tools; give --token or {TOKEN_VARIABLE}, or bind 127.0.0.1"
        )),
        Some(token) if token.chars().count() < TOKEN_CHARS_MIN => Err(format!(
            "the bearer token has fewer than {TOKEN_CHARS_MIN} characters: too easy to guess"
        )),
        Some(token) => Ok(token),
    }
}

/// Whether `header` is `Bearer <token>`, compared in time independent of where they differ
/// (as SigV4 signatures are).
fn authorized(header: Option<&[u8]>, token: &str) -> bool {
    match header.map(std::str::from_utf8) {
        Some(Ok(header)) => signatures_equal(&format!("Bearer {token}"), header),
        _ => false,
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.to_string())).boxed());
    *response.status_mut() = status;
    response
}

/// Serves MCP over streamable HTTP on `address` until interrupted.
pub async fn serve_http(
    handler: ShoalMcp,
    address: SocketAddr,
    token: String,
) -> Result<(), String> {
    let listener = TcpListener::bind(address)
        .await
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(REQUEST_BYTES_MAX);
    if !local.ip().is_loopback() {
        // rmcp checks the Host header against loopback names (DNS rebinding); a server bound
        // elsewhere is reached by other names, and the token is what guards it.
        config = config.disable_allowed_hosts();
    }
    let service: StreamableHttpService<ShoalMcp, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let token: Arc<str> = Arc::from(token);
    let connections = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    // The line a supervisor (or a test) reads to learn the port of `--http 127.0.0.1:0`, as
    // `shoal serve` prints its own.
    println!("shoal mcp listening on http://{local}{MCP_PATH}");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tokio::signal::ctrl_c() => return Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "accepting an MCP connection failed");
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            continue;
        };
        let service = service.clone();
        let token = Arc::clone(&token);
        tokio::spawn(async move {
            let _permit = permit;
            let respond = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = service.clone();
                let token = Arc::clone(&token);
                async move {
                    let header = request
                        .headers()
                        .get(hyper::header::AUTHORIZATION)
                        .map(|value| value.as_bytes());
                    let response = if !authorized(header, &token) {
                        let mut refusal = plain(
                            StatusCode::UNAUTHORIZED,
                            "send Authorization: Bearer TOKEN (the token shoal mcp was started with)\n",
                        );
                        refusal.headers_mut().insert(
                            hyper::header::WWW_AUTHENTICATE,
                            hyper::header::HeaderValue::from_static("Bearer"),
                        );
                        refusal
                    } else if request.uri().path() != MCP_PATH {
                        plain(StatusCode::NOT_FOUND, "MCP is served on /mcp\n")
                    } else {
                        service.handle(request).await
                    };
                    Ok::<_, Infallible>(response)
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), respond)
                .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_needs_a_token_and_says_why() {
        let loopback: SocketAddr = "127.0.0.1:8765".parse().unwrap();
        let anywhere: SocketAddr = "0.0.0.0:8765".parse().unwrap();
        let refused = check_token(loopback, None).unwrap_err();
        assert!(refused.contains("any program or web page"), "{refused}");
        let refused = check_token(anywhere, Some(String::new())).unwrap_err();
        assert!(refused.contains("not a loopback address"), "{refused}");
        assert!(check_token(loopback, Some("short".into())).is_err());
        let token = "0123456789abcdef".to_string();
        assert_eq!(check_token(anywhere, Some(token.clone())), Ok(token));
    }

    #[test]
    fn only_the_exact_bearer_token_is_authorized() {
        let token = "0123456789abcdef";
        assert!(authorized(Some(b"Bearer 0123456789abcdef"), token));
        assert!(!authorized(Some(b"Bearer 0123456789abcdeg"), token));
        assert!(!authorized(Some(b"Bearer 0123456789abcde"), token));
        assert!(!authorized(Some(b"0123456789abcdef"), token));
        assert!(!authorized(None, token));
    }
}
