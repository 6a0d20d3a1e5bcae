//! `shoal health`: asks a server for `GET /`; exits 0 when it answers `200 healthy`, 2 when
//! it answers `200 degraded` (serving, but damaged data was met: docs/RECOVERY.md), 1 when it
//! does not answer 200 (`503`: writes refused) or does not answer at all.
//!
//! The container image has no curl or wget (it holds the static binary alone), so its
//! HEALTHCHECK runs this. Plain HTTP over a std `TcpStream`, one request, bounded in time and
//! in the bytes read.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use clap::Args;

/// Most bytes of the answer read: the health answer is one short line.
const RESPONSE_BYTES_MAX: u64 = 64 * 1024;

/// `host:port` from `http://host:port[/...]` (port 80 when absent); only plain HTTP.
pub fn authority(endpoint: &str) -> Result<String, String> {
    let rest = endpoint.strip_prefix("http://").ok_or_else(|| {
        format!("the endpoint must be a plain http:// URL, such as http://127.0.0.1:8000, not {endpoint:?}")
    })?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(format!("the endpoint {endpoint:?} names no host"));
    }
    // A port follows the last colon unless that colon is inside an IPv6 literal's brackets.
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.contains(']'));
    Ok(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    })
}

/// Sends `GET /` to `endpoint`; the answer's body when the status is 200, else why not.
/// `timeout` bounds the connection and the whole exchange.
pub fn check(endpoint: &str, timeout: Duration) -> Result<String, String> {
    let authority = authority(endpoint)?;
    let deadline = Instant::now() + timeout;
    let addresses = authority
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {authority}: {e}"))?;
    let mut last_error = format!("{authority} resolves to no address");
    let mut stream = None;
    for address in addresses {
        match TcpStream::connect_timeout(&address, timeout) {
            Ok(connected) => {
                stream = Some(connected);
                break;
            }
            Err(e) => last_error = format!("cannot connect to {address}: {e}"),
        }
    }
    let mut stream = stream.ok_or(last_error)?;
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    let io_error = |e: std::io::Error| format!("{authority}: {e}");
    stream.set_read_timeout(Some(remaining)).map_err(io_error)?;
    stream
        .set_write_timeout(Some(remaining))
        .map_err(io_error)?;
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .map_err(io_error)?;
    let mut answer = Vec::new();
    stream
        .take(RESPONSE_BYTES_MAX)
        .read_to_end(&mut answer)
        .map_err(io_error)?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status_line = head.lines().next().unwrap_or_default();
    let status = status_line.split_whitespace().nth(1);
    if status == Some("200") {
        Ok(body.trim().to_owned())
    } else if status_line.is_empty() {
        Err(format!(
            "{authority} closed the connection without answering"
        ))
    } else {
        Err(format!("{authority} answered {status_line:?}"))
    }
}

#[derive(Args)]
pub struct HealthArgs {
    /// The server's endpoint (plain http://).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    endpoint: String,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 5)]
    timeout_seconds: u64,
}

/// Exit status of `shoal health` for a server that serves but met damaged data.
pub const DEGRADED_EXIT: u8 = 2;

/// `shoal health`: prints the answer's body on a 200 (and why not otherwise), and exits as
/// the module says.
pub fn run(args: HealthArgs) -> std::process::ExitCode {
    match check(&args.endpoint, Duration::from_secs(args.timeout_seconds)) {
        Ok(body) => {
            println!("{body}");
            if body.starts_with("degraded") {
                std::process::ExitCode::from(DEGRADED_EXIT)
            } else {
                std::process::ExitCode::SUCCESS
            }
        }
        Err(why) => {
            eprintln!("shoal: {why}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::parse;
    use crate::Command;
    use std::net::TcpListener;

    #[test]
    fn endpoints_parse_to_host_and_port() {
        assert_eq!(
            authority("http://127.0.0.1:8000"),
            Ok("127.0.0.1:8000".into())
        );
        assert_eq!(
            authority("http://localhost:9/x/y"),
            Ok("localhost:9".into())
        );
        assert_eq!(
            authority("http://example.test"),
            Ok("example.test:80".into())
        );
        assert_eq!(authority("http://[::1]:8000/"), Ok("[::1]:8000".into()));
        assert_eq!(authority("http://[::1]"), Ok("[::1]:80".into()));
        assert!(authority("https://127.0.0.1:8000").is_err());
        assert!(authority("127.0.0.1:8000").is_err());
        assert!(authority("http:///").is_err());
    }

    /// A one-shot server on a free loopback port that reads a request and sends `answer`.
    fn answering(answer: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // The whole request is read before answering and the client's close is awaited
            // after: closing with unread bytes would reset the connection under the answer.
            let mut request = Vec::new();
            let mut chunk = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&chunk[..n]),
                }
            }
            let _ = stream.write_all(answer.as_bytes());
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let _ = stream.read_to_end(&mut request);
        });
        format!("http://{address}")
    }

    #[test]
    fn a_200_is_healthy_and_anything_else_is_not() {
        let endpoint = answering("HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nhealthy ");
        assert_eq!(
            check(&endpoint, Duration::from_secs(5)),
            Ok("healthy".into())
        );
        let endpoint = answering("HTTP/1.1 503 Service Unavailable\r\n\r\n");
        let error = check(&endpoint, Duration::from_secs(5)).unwrap_err();
        assert!(error.contains("503"), "{error}");
        let endpoint = answering("");
        let error = check(&endpoint, Duration::from_secs(5)).unwrap_err();
        assert!(error.contains("without answering"), "{error}");
    }

    #[test]
    fn nothing_listening_is_unhealthy() {
        // Bind then drop: the port is free and, for a moment, nobody else's.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let error = check(&format!("http://127.0.0.1:{port}"), Duration::from_secs(5)).unwrap_err();
        assert!(error.contains("cannot connect"), "{error}");
    }

    #[test]
    fn a_silent_server_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        // The listener's backlog accepts the connection; nothing ever answers.
        let started = Instant::now();
        let error = check(&endpoint, Duration::from_millis(300)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5), "{error}");
        drop(listener);
    }

    #[test]
    fn health_takes_an_endpoint() {
        let cli = parse("shoal health --endpoint http://127.0.0.1:9").unwrap();
        let Command::Health(HealthArgs {
            endpoint,
            timeout_seconds,
        }) = cli.command
        else {
            panic!("not health")
        };
        assert_eq!(
            (endpoint.as_str(), timeout_seconds),
            ("http://127.0.0.1:9", 5)
        );
    }
}
