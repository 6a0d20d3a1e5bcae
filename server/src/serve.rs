//! The HTTP/1.1 server: accepting connections, reading bodies under the size cap, running the
//! pipeline and the handler, and shutting down gracefully.

use crate::admin::{self, AdminContext, ADMIN_PATH_PREFIX};
use crate::admission::{
    Admission, AdmissionLimits, Admissions, ConnectionSlot, IdleClosure, QueuePlace,
};
use crate::auth::AuthPolicy;
use crate::body::{discard_rest, read_body, BodyError};
use crate::config::ServerConfig;
use crate::content_encoding::{self, decode_request_body, DecodeError};
use crate::cors;
use crate::faults::{Decision, FaultInjector};
use crate::handler::{DynamoHandler, StorageHealth};
use crate::metrics::{Metrics, Outcome};
use crate::open_files;
use crate::record::{Captured, Recorder};
use crate::request::{check_head_size, decode_api_request, route, Route, NOT_FOUND_BODY};
use crate::response::{
    close_connection, error_response, new_request_id, response, AMZ_JSON_CONTENT_TYPE,
    PLAIN_JSON_CONTENT_TYPE,
};
use crate::sigv4::RequestToSign;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, EXPECT};
use http::request::Parts;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::{Body as _, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use shoal_model::ApiError;
use shoal_tables::capacity::metering::CallCharge;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long to pause after a failed accept before retrying, when no idle connection could
/// be closed to free a descriptor.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// How long to pause after closing an idle connection to free a descriptor: long enough for
/// its task to run and close it.
const ACCEPT_DESCRIPTOR_PAUSE: Duration = Duration::from_millis(1);

/// hyper refuses a request head over this many times `header_bytes_max` on its own (`431`,
/// without a body); between the two the service answers `400` with DynamoDB's error body.
const HYPER_HEAD_SIZE_FACTOR: usize = 4;

/// How long a throttled client has to send the request (at accept) or the rest of the body
/// (at its address's limit) that its throttle answers.
const REFUSED_READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: String,
        source: std::io::Error,
    },
    #[error("fault rules: {0}")]
    Faults(String),
    #[error("recording: {0}")]
    Record(String),
}

/// Marks a response that a fault rule turned into a dropped connection: the service
/// answers hyper with an error instead, and hyper closes the connection without a word.
#[derive(Debug, Clone, Copy)]
struct DropConnection;

#[derive(Debug, thiserror::Error)]
#[error("connection dropped by a fault rule")]
struct DroppedByFault;

/// Binds the listener `config` names (`host:port`; port 0 picks a free one).
pub async fn bind(config: &ServerConfig) -> Result<TcpListener, ServerError> {
    let address = config.listen_address();
    TcpListener::bind(&address)
        .await
        .map_err(|source| ServerError::Bind { address, source })
}

/// Serves DynamoDB's protocol on `listener` until `shutdown` completes, then stops accepting,
/// lets in-flight requests finish for up to `config.shutdown_grace`, and returns. Connections
/// still open after the grace period are left to the runtime's shutdown.
pub async fn serve(
    listener: TcpListener,
    handler: Arc<dyn DynamoHandler>,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let state = Arc::new(ServerState::new(handler, config));
    state
        .faults
        .add(state.config.faults.clone())
        .map_err(ServerError::Faults)?;
    if let Some(options) = &state.config.record {
        state
            .recorder
            .start(options.clone())
            .map_err(ServerError::Record)?;
    }
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors: an idle connection gives its own up, so that idle
                    // connections never keep a client waiting in the backlog.
                    let out_of_descriptors =
                        matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                    if out_of_descriptors
                        && state.admissions.close_an_idle_connection(IdleClosure::OpenFiles)
                    {
                        tokio::time::sleep(ACCEPT_DESCRIPTOR_PAUSE).await;
                    } else {
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    }
                    continue;
                }
            },
        };
        match state.admissions.admit(peer.ip()) {
            Admission::Serve(slot) => serve_connection(&state, stream, peer, slot),
            Admission::Queue(place) => queue_connection(&state, stream, peer, place),
            Admission::Throttle => {
                // With the throttles' pool full, accepting pauses until it has room: this
                // client waits here, and later ones in the listen backlog, rather than going
                // unanswered.
                let permit = tokio::select! {
                    () = &mut shutdown => break,
                    permit = state.admissions.wait_for_refusal_permit() => permit,
                };
                if let Some(permit) = permit {
                    tokio::spawn(throttle_connection(Arc::clone(&state), stream, permit));
                }
            }
            // Dropping the stream closes it.
            Admission::Close => {}
        }
    }
    drop(listener);
    state.admissions.close_all();
    tokio::select! {
        () = state.admissions.all_ended() => {}
        () = tokio::time::sleep(state.config.shutdown_grace) => {
            tracing::warn!("shutdown grace period over; abandoning open connections");
        }
    }
    // The recording's queued calls are written and its file closed with its `end` line.
    let recorder = Arc::clone(&state.recorder);
    let _ = tokio::task::spawn_blocking(move || recorder.stop()).await;
    Ok(())
}

/// The HTTP/1.1 settings every connection gets: the head's size cap (the service checks
/// DynamoDB's smaller one itself, so that it can answer with an error body) and the header
/// read timeout, which also closes idle keep-alive connections.
fn http1_builder(config: &ServerConfig, header_read_timeout: Duration) -> http1::Builder {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout)
        .max_header_size(
            config
                .header_bytes_max
                .saturating_mul(HYPER_HEAD_SIZE_FACTOR),
        );
    builder
}

/// Serves a connection until it ends, or until the server asks it to close (to make room
/// for another, or at shutdown): hyper then closes it at once if it is idle, or after the
/// request in flight.
fn serve_connection(
    state: &Arc<ServerState>,
    stream: TcpStream,
    peer: SocketAddr,
    slot: Arc<ConnectionSlot>,
) {
    let connection_state = Arc::clone(state);
    let service_slot = Arc::clone(&slot);
    let service = service_fn(move |request: Request<Incoming>| {
        let request_state = Arc::clone(&connection_state);
        let slot = Arc::clone(&service_slot);
        async move {
            let response = match slot.begin_request().await {
                Ok(_busy) => handle_http(&request_state, request, peer, &slot).await,
                Err(_throttled) => throttle_request(&request_state, request).await,
            };
            if response.extensions().get::<DropConnection>().is_some() {
                return Err(DroppedByFault);
            }
            Ok(response)
        }
    });
    let connection = http1_builder(&state.config, state.config.header_read_timeout)
        .serve_connection(TokioIo::new(stream), service);
    tokio::spawn(async move {
        tokio::pin!(connection);
        let ended = tokio::select! {
            ended = connection.as_mut() => ended,
            () = slot.close_requested() => {
                connection.as_mut().graceful_shutdown();
                connection.await
            }
        };
        if let Err(error) = ended {
            tracing::debug!(%peer, %error, "connection ended with an error");
        }
        // The connection leaves the registry when the slot's last holder goes: this task
        // and the connection's service both end here.
    });
}

/// Holds a connection accepted while every open one had a whole request in flight until a
/// place frees (then serves it), or its wait runs out (then throttles it); its place in the
/// queue is held until then, so that the queue's bound counts it.
fn queue_connection(
    state: &Arc<ServerState>,
    stream: TcpStream,
    peer: SocketAddr,
    place: QueuePlace,
) {
    let state = Arc::clone(state);
    tokio::spawn(async move {
        match state.admissions.wait_for_place(peer.ip()).await {
            Admission::Serve(slot) => serve_connection(&state, stream, peer, slot),
            Admission::Throttle => {
                if let Some(permit) = state.admissions.wait_for_refusal_permit().await {
                    throttle_connection(Arc::clone(&state), stream, permit).await;
                }
            }
            // Shutting down: dropping the stream closes it.
            Admission::Queue(_) | Admission::Close => {}
        }
        drop(place);
    });
}

/// Answers the connection's first request as [`throttle_request`] does and closes it; a
/// client that sends no request within [`REFUSED_READ_TIMEOUT`] is dropped. `permit` is its
/// place in the throttles' pool.
async fn throttle_connection(
    state: Arc<ServerState>,
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
) {
    let service_state = Arc::clone(&state);
    let service = service_fn(move |request| {
        let state = Arc::clone(&service_state);
        async move { Ok::<_, Infallible>(throttle_request(&state, request).await) }
    });
    let read_timeout = state.config.header_read_timeout.min(REFUSED_READ_TIMEOUT);
    let connection = http1_builder(&state.config, read_timeout)
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    // The head's time, then the body's.
    let _ = tokio::time::timeout(2 * REFUSED_READ_TIMEOUT, connection).await;
    drop(permit);
}

/// Answers a request throttled at its address's limit with DynamoDB's `ThrottlingException`
/// (which the SDKs retry) and closes the connection after it. The rest of the body is read
/// and dropped first, for at most [`REFUSED_READ_TIMEOUT`], so that the client reads the
/// answer rather than a reset; the connection, busy meanwhile, bounds how many do so.
async fn throttle_request(
    state: &ServerState,
    request: Request<Incoming>,
) -> Response<Full<Bytes>> {
    let (parts, mut body) = request.into_parts();
    if let Some(discard_max) = body_to_discard(state, &parts, &body, declared_length(&parts)) {
        let deadline = tokio::time::Instant::now() + REFUSED_READ_TIMEOUT;
        discard_rest(&mut body, discard_max, deadline).await;
    }
    close_connection(error_response(&ApiError::throttling(), &new_request_id()))
}

struct ServerState {
    handler: Arc<dyn DynamoHandler>,
    admissions: Arc<Admissions>,
    operations: Vec<&'static str>,
    config: ServerConfig,
    metrics: Metrics,
    faults: FaultInjector,
    /// The host the health answer names when the request's `Host` names none.
    default_host: String,
    /// Turns on the blocking pool: without them every waiting write would hold a thread.
    handler_turns: Arc<Semaphore>,
    recorder: Arc<Recorder>,
}

impl ServerState {
    fn new(handler: Arc<dyn DynamoHandler>, config: ServerConfig) -> ServerState {
        let operations = handler.operations().to_vec();
        let region = config.region.as_deref().unwrap_or("us-east-1");
        let connections_max = open_files::fit_connections(config.connections_max);
        ServerState {
            admissions: Admissions::new(AdmissionLimits {
                connections_max,
                busy_per_client_max: config.busy_connections_per_client_max,
                queued_max: config.queued_connections_max,
                queue_wait_max: config.queue_wait_max,
            }),
            metrics: Metrics::new(&operations),
            faults: FaultInjector::new(&operations),
            default_host: format!("dynamodb.{region}.amazonaws.com"),
            handler_turns: Arc::new(Semaphore::new(config.handler_threads.max(1))),
            recorder: Arc::new(Recorder::new(Arc::clone(&handler))),
            handler,
            operations,
            config,
        }
    }
}

/// `slot` is the connection the request came on, so that reading its body can be watched
/// (`ConnectionSlot::receiving_body`). It is passed along rather than put in the request's
/// extensions, whose map would cost three allocations a request.
async fn handle_http(
    state: &ServerState,
    request: Request<Incoming>,
    peer: SocketAddr,
    slot: &ConnectionSlot,
) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let request_id = new_request_id();
    state.metrics.record_http_request();
    let (parts, body) = request.into_parts();
    let origin = cors::allowed_origin(state.config.cors.as_ref(), &parts.headers);
    let (mut response, operation) = answer(
        state,
        &parts,
        body,
        origin.is_some(),
        peer,
        slot,
        &request_id,
    )
    .await;
    tracing::debug!(
        request_id = &*request_id,
        method = %parts.method,
        path = parts.uri.path(),
        operation = operation.unwrap_or("-"),
        status = response.status().as_u16(),
        elapsed_micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        "request"
    );
    if let Some(origin) = &origin {
        cors::add_origin_headers(&mut response, origin);
    }
    if let Some(coding) = content_encoding::response_coding(&parts.headers) {
        response = content_encoding::compress(response, coding).await;
    }
    response
}

/// Answers a request (the pipeline's steps in order); also returns the operation, once known,
/// for the log.
async fn answer(
    state: &ServerState,
    parts: &Parts,
    body: Incoming,
    has_allowed_origin: bool,
    peer: SocketAddr,
    slot: &ConnectionSlot,
    request_id: &str,
) -> (Response<Full<Bytes>>, Option<&'static str>) {
    if let Err(error) = check_head_size(parts, state.config.header_bytes_max) {
        return (reject(state, error, request_id), None);
    }
    // The console calls the admin API, so it comes with it.
    let admin = state.config.admin || state.config.console;
    if admin && parts.uri.path().starts_with(ADMIN_PATH_PREFIX) {
        let context = AdminContext {
            faults: &state.faults,
            recorder: &state.recorder,
            handler: state.handler.as_ref(),
            allow_remote: state.config.admin_allow_remote,
            body_bytes_max: state.config.body_bytes_max,
            body_read_timeout: state.config.body_read_timeout,
            console: state.config.console,
            bench_report: state.config.bench_report,
        };
        return (
            admin::answer(&context, parts, body, peer.ip(), request_id).await,
            None,
        );
    }
    if cors::is_preflight(&parts.method, &parts.headers) {
        let mut answer = response(StatusCode::OK, "text/plain", String::new(), request_id);
        if has_allowed_origin {
            cors::add_preflight_headers(&mut answer, &parts.headers);
        }
        return (answer, None);
    }
    let route = route(
        &parts.method,
        parts.uri.path(),
        parts.headers.get(CONTENT_TYPE),
        !body.is_end_stream(),
    );
    match route {
        Route::Health => {
            let (status, body) =
                health_answer(&state.handler.health(), &parts.headers, &state.default_host);
            (response(status, "text/plain", body, request_id), None)
        }
        Route::Metrics => {
            let mut page = String::new();
            state.metrics.render(&mut page);
            state.admissions.render_metrics(&mut page);
            state.faults.render_metrics(&mut page);
            state.recorder.render_metrics(&mut page);
            state.handler.render_metrics(&mut page);
            (
                response(
                    StatusCode::OK,
                    "text/plain; version=0.0.4",
                    page,
                    request_id,
                ),
                None,
            )
        }
        Route::NotFound => {
            state.metrics.record_rejection("NotFound");
            (
                response(
                    StatusCode::NOT_FOUND,
                    AMZ_JSON_CONTENT_TYPE,
                    NOT_FOUND_BODY,
                    request_id,
                ),
                None,
            )
        }
        Route::Api => {
            let (mut answer, operation) = handle_api(state, parts, body, slot, request_id).await;
            // DynamoDB answers in the JSON dialect it was addressed in: `application/json`
            // to a client that sent it, `application/x-amz-json-1.0` to every other.
            if answers_plain_json(parts.headers.get(CONTENT_TYPE))
                && answer.headers().get(CONTENT_TYPE)
                    == Some(&HeaderValue::from_static(AMZ_JSON_CONTENT_TYPE))
            {
                answer.headers_mut().insert(
                    CONTENT_TYPE,
                    HeaderValue::from_static(PLAIN_JSON_CONTENT_TYPE),
                );
            }
            (answer, operation)
        }
    }
}

/// Whether a request with this content type is answered as `application/json`.
fn answers_plain_json(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| {
            media_type
                .trim()
                .eq_ignore_ascii_case(PLAIN_JSON_CONTENT_TYPE)
        })
}

/// The health answer: `200 healthy: <host> `, naming the host the client addressed (its
/// `Host` header), as DynamoDB's endpoints name themselves (`default_host` when the request
/// names none, or in bytes that are not text); `200 degraded: …` when damaged data was met;
/// `503 unhealthy: …` when writes are refused (docs/RECOVERY.md; docs/RUNNING.md, "Configuring the server").
fn health_answer(
    health: &StorageHealth,
    headers: &http::HeaderMap,
    default_host: &str,
) -> (StatusCode, String) {
    let host = headers
        .get(http::header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|host| !host.is_empty())
        .unwrap_or(default_host);
    match health {
        StorageHealth::Healthy => (StatusCode::OK, format!("healthy: {host} ")),
        StorageHealth::Degraded(why) => (StatusCode::OK, format!("degraded: {host}: {why} ")),
        StorageHealth::WritesRefused(why) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {host}: writes refused: {why} "),
        ),
    }
}

/// Answers a request routed to the API; also returns the operation, once known, for the log.
async fn handle_api(
    state: &ServerState,
    parts: &Parts,
    mut body: Incoming,
    slot: &ConnectionSlot,
    request_id: &str,
) -> (Response<Full<Bytes>>, Option<&'static str>) {
    let body_bytes_max = state.config.body_bytes_max;
    let deadline = tokio::time::Instant::now() + state.config.body_read_timeout;
    let declared_length = declared_length(parts);
    if declared_length.is_some_and(|length| length > body_bytes_max as u64) {
        let answer = refuse_body(state, parts, body, declared_length, deadline, request_id);
        return (answer, None);
    }
    // While the body is on its way the connection may be closed to make room for another
    // (`admission.rs`): a client that sent half a body is answered as at the deadline.
    let watch = slot.receiving_body();
    let read = tokio::select! {
        read = read_body(&mut body, body_bytes_max, deadline) => read,
        () = watch.stopped() => {
            state.metrics.record_rejection("BodyReadTimeout");
            let error = ApiError::serialization(
                "The request body was not received before the server, at its connection \
                 limit, needed the connection for another client",
            );
            return (close_connection(error_response(&error, request_id)), None);
        }
    };
    drop(watch);
    let sent = match read {
        Ok(sent) => sent,
        Err(BodyError::TooLarge) => {
            let answer = refuse_body(state, parts, body, None, deadline, request_id);
            return (answer, None);
        }
        Err(BodyError::TimedOut) => {
            state.metrics.record_rejection("BodyReadTimeout");
            let error = ApiError::serialization(format!(
                "The request body was not received within {} seconds",
                state.config.body_read_timeout.as_secs_f64()
            ));
            return (close_connection(error_response(&error, request_id)), None);
        }
        Err(BodyError::Broken(error)) => {
            // The client went away or sent broken framing; hyper closes the connection.
            tracing::debug!(%error, "failed to read request body");
            let error = ApiError::serialization("Failed to read the request body");
            return (close_connection(reject(state, error, request_id)), None);
        }
    };
    let content = match decode_request_body(&parts.headers, sent.clone(), body_bytes_max) {
        Ok(content) => content,
        Err(DecodeError::TooLarge) => return (too_large(state, request_id), None),
        // Bytes that do not decode are no JSON body: answered as one that does not parse.
        Err(DecodeError::Corrupt(coding)) => {
            tracing::debug!(coding, "request body does not decode");
            return (reject(state, ApiError::malformed_json(), request_id), None);
        }
    };

    let request = RequestToSign {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or(""),
        headers: &parts.headers,
        body: &sent,
    };
    let auth_policy = AuthPolicy {
        mode: &state.config.auth,
        region: state.config.region.as_deref(),
        clock_skew_max_seconds: i64::try_from(state.config.signature_clock_skew_max.as_secs())
            .unwrap_or(i64::MAX / 2),
        now_unix_seconds: unix_now_seconds(),
    };
    let decoded = match decode_api_request(&request, &content, &state.operations, &auth_policy) {
        Ok(decoded) => decoded,
        Err(error) => return (reject(state, error, request_id), None),
    };

    let operation = decoded.operation;
    // The server's own region names the ARNs of a request whose credential scope names none.
    let region = decoded.region.or_else(|| state.config.region.clone());
    let handler = Arc::clone(&state.handler);
    let started = Instant::now();
    // A faulted request waits its latency first; a dropped connection or an error (but one
    // after_apply) then stands in for the operation, which never runs.
    let mut error_after_apply = None;
    if let Some(Decision {
        latency,
        drop_connection,
        error,
    }) = state.faults.decide(operation, decoded.body)
    {
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        if drop_connection {
            let mut dropped = response(StatusCode::OK, "text/plain", "", request_id);
            dropped.extensions_mut().insert(DropConnection);
            return (dropped, Some(operation));
        }
        match error {
            Some(injected) if injected.after_apply => error_after_apply = Some(injected.error),
            Some(injected) => {
                let answer = error_response(&injected.error, request_id);
                state.metrics.record_operation(
                    operation,
                    outcome_of(&injected.error),
                    started.elapsed(),
                );
                return (answer, Some(operation));
            }
            None => {}
        }
    }
    // While recording, the handler also gives the units the call was charged; the answer
    // is the same either way.
    let recording = state.recorder.is_active();
    let call = move |handler: &dyn DynamoHandler, body: &[u8], region: Option<&str>| {
        if recording {
            handler.handle_charged(operation, body, region)
        } else {
            (
                handler.handle(operation, body, region),
                CallCharge::default(),
            )
        }
    };
    // The request's own bytes, or the `{}` a blank body stands for. Told apart by identity
    // (address and length), not by length: a two-byte blank body is as long as `{}`.
    let owned_body = || {
        if std::ptr::eq(decoded.body, &content[..]) {
            content.clone()
        } else {
            Bytes::copy_from_slice(decoded.body)
        }
    };
    let result = if handler.runs_inline(operation) {
        // A panic must still become a 500 rather than a dropped connection, as it does on the
        // blocking pool.
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            call(handler.as_ref(), decoded.body, region.as_deref())
        }))
        .map_err(|_| "handler panicked".to_string())
    } else {
        // The blocking pool needs an owned body.
        let body = owned_body();
        match Arc::clone(&state.handler_turns).acquire_owned().await {
            // The turn moves into the call, so it ends when the call does, even if the
            // client has gone and this future was dropped.
            Ok(turn) => tokio::task::spawn_blocking(move || {
                let _turn = turn;
                call(handler.as_ref(), &body, region.as_deref())
            })
            .await
            .map_err(|join_error| join_error.to_string()),
            Err(closed) => Err(closed.to_string()),
        }
    };
    let (result, charge) = match result {
        Ok((answer, charge)) => (Ok(answer), charge),
        Err(panic) => (Err(panic), CallCharge::default()),
    };
    let result = match error_after_apply {
        // The operation ran; its answer is replaced, whatever it was.
        Some(error) => result.map(|_| Err(error)),
        None => result,
    };
    let latency = started.elapsed();
    let recording = if recording {
        state.recorder.current()
    } else {
        None
    };
    let record = |answer: Option<&[u8]>, error: Option<&'static str>| {
        if let Some(recording) = &recording {
            recording.capture(Captured {
                started,
                latency_us: u64::try_from(latency.as_micros()).unwrap_or(u64::MAX),
                operation,
                request: decoded.body,
                answer,
                error,
                units: charge.units,
                returned: charge.returned,
            });
        }
    };
    let (response, outcome) = match result {
        Ok(Ok(body)) => {
            let body = Bytes::from(body);
            record(Some(&body), None);
            let ok = response(StatusCode::OK, AMZ_JSON_CONTENT_TYPE, body, request_id);
            (ok, Outcome::Success)
        }
        Ok(Err(error)) => {
            record(None, Some(error.code.name()));
            (error_response(&error, request_id), outcome_of(&error))
        }
        Err(panic) => {
            tracing::error!(operation, request_id, error = %panic, "handler panicked");
            let error = ApiError::internal_server_error();
            (error_response(&error, request_id), Outcome::ServerError)
        }
    };
    state.metrics.record_operation(operation, outcome, latency);
    (response, Some(operation))
}

/// The metrics outcome of an error answer: its HTTP status class.
fn outcome_of(error: &ApiError) -> Outcome {
    if crate::error_body::error_status(error.code).is_server_error() {
        Outcome::ServerError
    } else {
        Outcome::ClientError
    }
}

fn reject(state: &ServerState, error: ApiError, request_id: &str) -> Response<Full<Bytes>> {
    state.metrics.record_rejection(error.code.name());
    error_response(&error, request_id)
}

/// The request's `Content-Length`, if it gives a number.
fn declared_length(parts: &Parts) -> Option<u64> {
    parts
        .headers
        .get(CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok())
}

/// 413 for a body over the cap, whether declared (`declared_length`) or found while reading,
/// answered at once; the connection closes after it (see [`discard_unread_body`]).
fn refuse_body(
    state: &ServerState,
    parts: &Parts,
    body: Incoming,
    declared_length: Option<u64>,
    deadline: tokio::time::Instant,
    request_id: &str,
) -> Response<Full<Bytes>> {
    discard_unread_body(state, parts, body, declared_length, deadline);
    close_connection(too_large(state, request_id))
}

/// For a request answered without reading its body: what is left of the body is read and
/// dropped in the background, up to twice the cap and until the body deadline, before the
/// connection closes. Closing with the client's bytes unread would make the kernel reset the
/// connection, and a client still sending would lose the answer.
fn discard_unread_body(
    state: &ServerState,
    parts: &Parts,
    mut body: Incoming,
    declared_length: Option<u64>,
    deadline: tokio::time::Instant,
) {
    if let Some(discard_max) = body_to_discard(state, parts, &body, declared_length) {
        tokio::spawn(async move {
            discard_rest(&mut body, discard_max, deadline).await;
        });
    }
}

/// How many bytes of a request's unread body to read and drop before closing its connection
/// (see [`discard_unread_body`]), or `None` if none are to be: none are left, the client sent
/// `Expect: 100-continue` (it has sent nothing yet and is not asked to), or it declared more
/// than twice the cap.
fn body_to_discard(
    state: &ServerState,
    parts: &Parts,
    body: &Incoming,
    declared_length: Option<u64>,
) -> Option<u64> {
    let discard_max = (state.config.body_bytes_max as u64).saturating_mul(2);
    let waits_for_continue = parts
        .headers
        .get(EXPECT)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    (!waits_for_continue
        && !body.is_end_stream()
        && declared_length.is_none_or(|length| length <= discard_max))
    .then_some(discard_max)
}

/// 413 with a DynamoDB-style body.
fn too_large(state: &ServerState, request_id: &str) -> Response<Full<Bytes>> {
    state.metrics.record_rejection("RequestTooLarge");
    let error = ApiError::validation(format!(
        "Request size exceeds {} bytes",
        state.config.body_bytes_max
    ));
    let mut too_large = error_response(&error, request_id);
    *too_large.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
    too_large
}

fn unix_now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since_epoch| {
            i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX / 2)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_health_answer_says_healthy_degraded_or_writes_refused() {
        let mut headers = http::HeaderMap::new();
        headers.insert(http::header::HOST, "db.local:8000".parse().unwrap());
        let answer = |health| health_answer(&health, &headers, "dynamodb.x.amazonaws.com");
        assert_eq!(
            answer(StorageHealth::Healthy),
            (StatusCode::OK, "healthy: db.local:8000 ".to_string())
        );
        assert_eq!(
            answer(StorageHealth::Degraded(
                "2 reads met 1 damaged place".into()
            )),
            (
                StatusCode::OK,
                "degraded: db.local:8000: 2 reads met 1 damaged place ".to_string()
            )
        );
        assert_eq!(
            answer(StorageHealth::WritesRefused("disk full".into())),
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "unhealthy: db.local:8000: writes refused: disk full ".to_string()
            )
        );
    }
}
