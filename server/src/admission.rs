//! Which connections are served, which idle ones are closed to make room, and which clients
//! wait for a place.
//!
//! Idle connections never cause a refusal. A connection is *busy* while a request is in
//! flight on it (from the moment hyper hands the request to the service, with its body still
//! to read, until the answer is handed back), and *idle* otherwise: waiting for its first
//! request or, kept alive, for its next. The AWS SDKs keep idle connections in pools, and a
//! test suite that makes a client per test leaves hundreds behind; all of them come from
//! 127.0.0.1. Closing an idle keep-alive connection is ordinary HTTP, which every client
//! handles by reconnecting; refusing a request is not.
//!
//! Two limits, each counting what it must:
//! - `connections_max` open connections in all, which bounds file descriptors and memory. A
//!   connection accepted at the limit first closes the connection idle the longest (oldest
//!   idle first: the one its client is least likely to reuse, since the SDKs' pools hand out
//!   their most recently used connection). With none idle between requests, it closes the
//!   connection stalled the longest: one that has sent no request since it opened, or one
//!   waiting for the rest of its request body (answered a SerializationException, as at the
//!   body deadline), whichever has waited longer. A client that sends half a body holds a
//!   busy place, and enough of them from a few addresses (each under the per-address limit)
//!   would otherwise fill the server for the whole body deadline. The SDKs' pools leave
//!   connections behind that never sent a request; those are older than a request whose body
//!   is arriving, so they go first, and a new connection is closed only after every older
//!   stall. A request whose body has arrived is never cut off, and one that raced the
//!   closing of its connection (its head read after the connection was chosen, as idle or
//!   new) gets [`BODY_WAIT_ONCE_CHOSEN`] for its body and is served. When every open
//!   connection has a whole request in flight, the new connection waits for a place (below).
//! - `busy_per_client_max` busy connections from one client address, so that one client
//!   sending its bodies slowly cannot hold every busy slot. Checked when a request starts;
//!   at it, the request first closes its address's connection that has waited the longest
//!   for the rest of a body, if one has, then waits for a place (below), in arrival order.
//!
//! Waiting: at most `queued_max` clients wait at once, at both limits together, each for at
//! most `queue_wait_max`. A client that finds the queue full, or whose wait runs out, is
//! throttled: answered DynamoDB's `ThrottlingException` (HTTP 400, which the AWS SDKs retry
//! with backoff) and its connection closed. A connection that waits at `connections_max` is
//! accepted and held, its request unread, until a place frees. Connections throttled at
//! `connections_max` have a small pool of their own ([`REFUSALS_IN_FLIGHT_MAX`]); when it is
//! full the server stops accepting until it has room, so that later clients wait in the
//! listen backlog rather than go unanswered. Throttles are counted by limit and reason and
//! logged at most once per [`REFUSAL_LOG_INTERVAL`] per kind.
//!
//! Each connection's activity is one atomic word, so starting and ending a request takes no
//! lock; the registry's lock is taken when a connection opens or closes and to pick idle
//! connections to close, which is done from a queue of the oldest idle ones refilled by one
//! scan per [`EVICTION_BATCH`] closures.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

/// Connections being answered a throttle at accept at once, at most.
pub const REFUSALS_IN_FLIGHT_MAX: usize = 64;

/// At most one log line per kind of throttle in this long; the next line says how many it
/// did not log.
pub const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// How many of the oldest idle connections one scan of the registry queues for closing.
const EVICTION_BATCH: usize = 64;

/// A connection's activity word: busy, being closed, or idle since the stamp it holds (any
/// other value; stamps grow, so a smaller one has been idle longer).
const BUSY: u64 = 0;
const CLOSING: u64 = u64::MAX;
/// Set in the idle stamp of a connection that has not sent a request yet, so that it sorts
/// after every connection idle between requests (see [`Admissions::admit`]).
const NEVER_USED: u64 = 1 << 62;

/// The limits of the server's connections and of the wait for a place.
#[derive(Debug, Clone, Copy)]
pub struct AdmissionLimits {
    pub connections_max: usize,
    pub busy_per_client_max: usize,
    /// Clients waiting for a place at once, at both limits together.
    pub queued_max: usize,
    /// How long a client waits for a place before it is throttled.
    pub queue_wait_max: Duration,
}

/// What to do with an accepted connection.
pub enum Admission {
    /// Serve it; it leaves the registry when the slot is dropped.
    Serve(Arc<ConnectionSlot>),
    /// Every open connection has a whole request in flight: hold it while it waits for a
    /// place ([`Admissions::wait_for_place`]); the place in the queue is its own.
    Queue(QueuePlace),
    /// No place, and the queue is full (or the wait ran out): answer its request with a
    /// `ThrottlingException`, then close it.
    Throttle,
    /// Close it at once (the server is shutting down).
    Close,
}

/// The limit a client waits at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `connections_max`, every open connection with a whole request in flight.
    Connections,
    /// `busy_per_client_max`, its address with that many requests in flight.
    ClientBusy,
}

impl Limit {
    const ALL: [Limit; 2] = [Limit::Connections, Limit::ClientBusy];

    /// The `limit` label of the queue's metrics.
    pub fn label(self) -> &'static str {
        match self {
            Limit::Connections => "connections_max",
            Limit::ClientBusy => "busy_connections_per_client",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Why a client was throttled rather than served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Throttle {
    /// `queued_max` clients were waiting already.
    QueueFull,
    /// No place freed within `queue_wait_max`.
    WaitOver,
}

impl Throttle {
    const ALL: [Throttle; 2] = [Throttle::QueueFull, Throttle::WaitOver];

    /// The `reason` label of `shoal_throttled_connections_total`.
    pub fn label(self) -> &'static str {
        match self {
            Throttle::QueueFull => "queue_full",
            Throttle::WaitOver => "wait_over",
        }
    }
}

/// A client throttled at a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub limit: Limit,
    pub reason: Throttle,
}

impl Throttled {
    /// Its place among the throttle counters.
    fn index(self) -> usize {
        self.limit.index() * Throttle::ALL.len() + self.reason as usize
    }
}

/// How many kinds of throttle there are (limits times reasons).
const THROTTLE_KINDS: usize = Limit::ALL.len() * Throttle::ALL.len();

/// A client's place in the queue; it leaves the queue when this drops.
pub struct QueuePlace {
    admissions: Arc<Admissions>,
    limit: Limit,
}

impl Drop for QueuePlace {
    fn drop(&mut self) {
        self.admissions.queued_all.fetch_sub(1, Ordering::SeqCst);
        self.admissions.queued_now[self.limit.index()].fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why an idle connection was closed to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleClosure {
    /// A new connection came in at `connections_max`.
    ConnectionLimit,
    /// Accepting failed for want of file descriptors.
    OpenFiles,
    /// This one was waiting for the rest of its request body when a new connection came in
    /// at `connections_max` with none idle between requests, and had waited longer than any
    /// that has sent nothing; or the longest of its address's, when a request from its
    /// address came in at `busy_per_client_max`.
    SlowBody,
}

impl IdleClosure {
    const ALL: [IdleClosure; 3] = [
        IdleClosure::ConnectionLimit,
        IdleClosure::OpenFiles,
        IdleClosure::SlowBody,
    ];

    /// The `reason` label of `shoal_idle_connections_closed_total`.
    pub fn label(self) -> &'static str {
        match self {
            IdleClosure::ConnectionLimit => "connection_limit",
            IdleClosure::OpenFiles => "open_files",
            IdleClosure::SlowBody => "slow_body",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The server's connections and their limits.
pub struct Admissions {
    limits: AdmissionLimits,
    registry: Mutex<Registry>,
    /// The next idle stamp (starts at 1: 0 is [`BUSY`]).
    idle_clock: AtomicU64,
    refusals_in_flight: Arc<Semaphore>,
    /// Clients waiting for a place now, at both limits together (at most `queued_max`).
    queued_all: AtomicUsize,
    /// The same, by limit.
    queued_now: [AtomicUsize; Limit::ALL.len()],
    /// Clients that waited for a place, by limit.
    queued_counts: [AtomicU64; Limit::ALL.len()],
    throttle_counts: [AtomicU64; THROTTLE_KINDS],
    throttle_logs: [RateLimitedLog; THROTTLE_KINDS],
    idle_closure_counts: [AtomicU64; IdleClosure::ALL.len()],
    /// Woken (one waiter at a time) when a place may have freed for a connection waiting at
    /// `connections_max`: a connection ended, went idle, or began waiting for a body.
    place_freed: Notify,
    /// Woken when the last connection ends (for shutdown).
    all_ended: Notify,
}

struct Registry {
    next_id: u64,
    /// Connections that count toward `connections_max`: served ones not yet chosen to close.
    counted: HashMap<u64, Arc<ConnectionState>>,
    /// Every live connection (closing ones included) by client address.
    clients: HashMap<IpAddr, Client>,
    /// The oldest idle connections at the last scan, oldest first, with their stamps then.
    oldest_idle: VecDeque<(u64, Arc<ConnectionState>)>,
    /// Live connections, closing ones included.
    live: usize,
    /// Set once shutdown begins: every connection is being closed, and no more are served.
    shutting_down: bool,
}

struct Client {
    connections: usize,
    /// A place per request this address may have in flight; shared with its connections.
    /// Its waiters are served in arrival order.
    busy: Arc<Semaphore>,
}

struct ConnectionState {
    id: u64,
    client: IpAddr,
    /// [`BUSY`], [`CLOSING`] or an idle stamp.
    activity: AtomicU64,
    /// Asks the connection's task to close it gracefully (hyper closes an idle connection at
    /// once and finishes a request in flight first).
    close: Notify,
    /// 0, or the stamp taken when its request began waiting for the rest of its body
    /// ([`BusyConnection::receiving_body`]); [`CLOSING`] once chosen to make room.
    receiving_since: AtomicU64,
    /// Tells the request reading its body that the connection was chosen to make room.
    stop_receiving: Notify,
    client_busy: Arc<Semaphore>,
}

/// A served connection's place in the registry; dropped when the connection ends.
pub struct ConnectionSlot {
    admissions: Arc<Admissions>,
    state: Arc<ConnectionState>,
}

/// A request in flight on a connection; dropping it makes the connection idle again.
pub struct BusyConnection<'a> {
    slot: &'a ConnectionSlot,
    /// The request's place among its address's requests in flight.
    _client_place: OwnedSemaphorePermit,
}

impl Admissions {
    pub fn new(limits: AdmissionLimits) -> Arc<Admissions> {
        let limits = AdmissionLimits {
            // A semaphore holds at most this many places; no address has as many requests.
            busy_per_client_max: limits.busy_per_client_max.min(Semaphore::MAX_PERMITS),
            ..limits
        };
        Arc::new(Admissions {
            limits,
            registry: Mutex::new(Registry {
                next_id: 0,
                counted: HashMap::new(),
                clients: HashMap::new(),
                oldest_idle: VecDeque::new(),
                live: 0,
                shutting_down: false,
            }),
            idle_clock: AtomicU64::new(1),
            refusals_in_flight: Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT_MAX)),
            queued_all: AtomicUsize::new(0),
            queued_now: Default::default(),
            queued_counts: Default::default(),
            throttle_counts: Default::default(),
            throttle_logs: Default::default(),
            idle_closure_counts: Default::default(),
            place_freed: Notify::new(),
            all_ended: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn next_idle_stamp(&self) -> u64 {
        let stamp = self.idle_clock.fetch_add(1, Ordering::Relaxed);
        debug_assert!(stamp != BUSY && stamp != CLOSING);
        stamp
    }

    /// Decides for a connection from `client`.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Admission {
        match self.take_place(client) {
            Admission::Throttle => match self.enter_queue(Limit::Connections) {
                Some(place) => Admission::Queue(place),
                None => {
                    self.throttle(Limit::Connections, Throttle::QueueFull, client);
                    Admission::Throttle
                }
            },
            decided => decided,
        }
    }

    /// Waits, for at most `queue_wait_max`, for a place for a connection from `client` that
    /// was queued at accept (its caller holds its [`QueuePlace`] meanwhile): [`Admission::Serve`]
    /// once one frees, [`Admission::Throttle`] if none did (counted), [`Admission::Close`] at
    /// shutdown.
    pub async fn wait_for_place(self: &Arc<Self>, client: IpAddr) -> Admission {
        let deadline = tokio::time::Instant::now() + self.limits.queue_wait_max;
        loop {
            let freed = self.place_freed.notified();
            tokio::pin!(freed);
            // Registered before the check, so a place freed between the two is not missed.
            freed.as_mut().enable();
            match self.take_place(client) {
                Admission::Throttle => {}
                decided => return decided,
            }
            if tokio::time::timeout_at(deadline, freed).await.is_err() {
                self.throttle(Limit::Connections, Throttle::WaitOver, client);
                return Admission::Throttle;
            }
        }
    }

    /// A place for a connection from `client`, making room if it must: [`Admission::Serve`],
    /// [`Admission::Close`] at shutdown, or [`Admission::Throttle`] when every open
    /// connection has a whole request in flight.
    fn take_place(self: &Arc<Self>, client: IpAddr) -> Admission {
        let mut registry = self.lock();
        if registry.shutting_down {
            return Admission::Close;
        }
        // Who makes room, in order: a connection idle between requests (its client has been
        // served and reconnects if it needs to), then the one stalled the longest (module
        // docs).
        let room = registry.counted.len() < self.limits.connections_max
            || self.close_oldest_idle(&mut registry, IdleClosure::ConnectionLimit, NEVER_USED)
            || self.close_longest_stalled(&mut registry);
        if !room {
            return Admission::Throttle;
        }
        let id = registry.next_id;
        registry.next_id += 1;
        let busy_per_client_max = self.limits.busy_per_client_max;
        let client_entry = registry.clients.entry(client).or_insert_with(|| Client {
            connections: 0,
            busy: Arc::new(Semaphore::new(busy_per_client_max)),
        });
        client_entry.connections += 1;
        let state = Arc::new(ConnectionState {
            id,
            client,
            activity: AtomicU64::new(NEVER_USED | self.next_idle_stamp()),
            close: Notify::new(),
            receiving_since: AtomicU64::new(0),
            stop_receiving: Notify::new(),
            client_busy: Arc::clone(&client_entry.busy),
        });
        registry.counted.insert(id, Arc::clone(&state));
        registry.live += 1;
        Admission::Serve(Arc::new(ConnectionSlot {
            admissions: Arc::clone(self),
            state,
        }))
    }

    /// A place in the queue at `limit`, unless `queued_max` clients are waiting already.
    fn enter_queue(self: &Arc<Self>, limit: Limit) -> Option<QueuePlace> {
        self.queued_all
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |queued| {
                (queued < self.limits.queued_max).then_some(queued + 1)
            })
            .ok()?;
        self.queued_now[limit.index()].fetch_add(1, Ordering::SeqCst);
        self.queued_counts[limit.index()].fetch_add(1, Ordering::Relaxed);
        Some(QueuePlace {
            admissions: Arc::clone(self),
            limit,
        })
    }

    /// Wakes a connection waiting at `connections_max`, if any waits, to look for a place.
    fn place_may_have_freed(&self) {
        if self.queued_now[Limit::Connections.index()].load(Ordering::SeqCst) > 0 {
            self.place_freed.notify_one();
        }
    }

    /// Waits, in arrival order and for at most `queue_wait_max`, for a place among the
    /// requests in flight from the connection's address, after closing the one of them that
    /// has waited the longest for the rest of its body, if one has (module docs).
    async fn wait_for_client_place(
        self: &Arc<Self>,
        state: &ConnectionState,
    ) -> Result<OwnedSemaphorePermit, Throttled> {
        let Some(_place) = self.enter_queue(Limit::ClientBusy) else {
            return Err(self.throttle(Limit::ClientBusy, Throttle::QueueFull, state.client));
        };
        self.close_oldest_receiving(&mut self.lock(), Some(state.client));
        let place = Arc::clone(&state.client_busy).acquire_owned();
        match tokio::time::timeout(self.limits.queue_wait_max, place).await {
            Ok(Ok(place)) => Ok(place),
            // `Err(Closed)` cannot happen (the semaphore is never closed); it throttles too.
            _ => Err(self.throttle(Limit::ClientBusy, Throttle::WaitOver, state.client)),
        }
    }

    /// A place in the pool of connections being answered a throttle at accept, once it has
    /// one, so that those cannot hold descriptors without bound (`None` cannot happen: the
    /// pool is never closed).
    pub async fn wait_for_refusal_permit(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.refusals_in_flight)
            .acquire_owned()
            .await
            .ok()
    }

    /// Closes the connection idle the longest, if any is idle (for `reason`); it stops
    /// counting toward `connections_max` at once.
    pub fn close_an_idle_connection(&self, reason: IdleClosure) -> bool {
        let mut registry = self.lock();
        self.close_oldest_idle(&mut registry, reason, CLOSING)
    }

    /// Closes, among the connections that have sent no request yet and those waiting for the
    /// rest of a body, the one that has waited the longest: both wait times are stamps of
    /// the same clock. New connections come last this way, or a burst of new clients would
    /// close each other before their requests arrive (in a flood of half bodies, 508 of
    /// 1,000 concurrent clients were closed unanswered so); a flood's silent, half-head and
    /// half-body connections are older than they, so they go first. And a request whose body
    /// is still on its way is not cut off while a connection an SDK's pool left behind
    /// unused is open: before this order, a suite of 300 SDK clients at a limit of 64
    /// connections had every place held by such connections, and cut requests off.
    fn close_longest_stalled(&self, registry: &mut Registry) -> bool {
        let reason = IdleClosure::ConnectionLimit;
        let Some(receiving @ (since, _)) = self.oldest_receiving(registry, None) else {
            return self.close_oldest_idle(registry, reason, CLOSING);
        };
        // A connection that has sent nothing counts as stalled since it opened. If the body
        // arrives before it is chosen, a newer silent connection goes instead.
        let silent_before = NEVER_USED | since;
        self.close_oldest_idle(registry, reason, silent_before)
            || self.close_receiving(registry, receiving)
            || self.close_oldest_idle(registry, reason, CLOSING)
    }

    /// Closes the connection idle the longest among those whose stamp is below `below`
    /// ([`NEVER_USED`]: only connections idle between requests; `NEVER_USED | stamp`: those
    /// and the ones that opened before `stamp` and have sent nothing; [`CLOSING`]: any).
    fn close_oldest_idle(&self, registry: &mut Registry, reason: IdleClosure, below: u64) -> bool {
        // Two rounds: the queue, then a fresh scan. A queued connection that has been busy
        // since its stamp was taken (or has closed) fails the exchange and is skipped: it is
        // no longer among the oldest idle. The queue is in stamp order: an entry at or past
        // `below` means none after it qualifies, and the queue is rebuilt.
        for _round in 0..2 {
            while let Some((stamp, state)) = registry.oldest_idle.pop_front() {
                if stamp >= below {
                    registry.oldest_idle.clear();
                    break;
                }
                let chosen = state
                    .activity
                    .compare_exchange(stamp, CLOSING, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok();
                if chosen && registry.counted.remove(&state.id).is_some() {
                    state.close.notify_one();
                    self.idle_closure_counts[reason.index()].fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(client = %state.client, reason = reason.label(), "closing an idle connection");
                    return true;
                }
            }
            let mut idle: Vec<(u64, Arc<ConnectionState>)> = registry
                .counted
                .values()
                .filter_map(|state| {
                    let activity = state.activity.load(Ordering::Acquire);
                    (activity != BUSY && activity != CLOSING && activity < below)
                        .then(|| (activity, Arc::clone(state)))
                })
                .collect();
            if idle.is_empty() {
                return false;
            }
            if idle.len() > EVICTION_BATCH {
                idle.select_nth_unstable_by_key(EVICTION_BATCH - 1, |(stamp, _)| *stamp);
                idle.truncate(EVICTION_BATCH);
            }
            idle.sort_unstable_by_key(|(stamp, _)| *stamp);
            registry.oldest_idle.extend(idle);
        }
        false
    }

    /// The connection that has waited the longest for the rest of its request body (among
    /// `only_client`'s, if given), with the stamp it began waiting at, if any is waiting.
    fn oldest_receiving(
        &self,
        registry: &Registry,
        only_client: Option<IpAddr>,
    ) -> Option<(u64, Arc<ConnectionState>)> {
        registry
            .counted
            .values()
            .filter(|state| only_client.is_none_or(|client| state.client == client))
            .filter_map(|state| {
                let since = state.receiving_since.load(Ordering::Acquire);
                (since != 0 && since != CLOSING).then_some((since, state))
            })
            .min_by_key(|(since, _)| *since)
            .map(|(since, state)| (since, Arc::clone(state)))
    }

    /// Closes the connection that has waited the longest for the rest of its request body
    /// (among `only_client`'s, if given), if any is waiting (module docs); it stops counting
    /// toward `connections_max` at once.
    fn close_oldest_receiving(&self, registry: &mut Registry, only_client: Option<IpAddr>) -> bool {
        self.oldest_receiving(registry, only_client)
            .is_some_and(|oldest| self.close_receiving(registry, oldest))
    }

    /// Closes `state`'s connection, found waiting for its body since `since`, unless its body
    /// has arrived since.
    fn close_receiving(
        &self,
        registry: &mut Registry,
        (since, state): (u64, Arc<ConnectionState>),
    ) -> bool {
        // Fails if its body arrived meanwhile: then it is not chosen, and nothing is closed.
        if state
            .receiving_since
            .compare_exchange(since, CLOSING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        registry.counted.remove(&state.id);
        state.stop_receiving.notify_one();
        state.close.notify_one();
        self.idle_closure_counts[IdleClosure::SlowBody.index()].fetch_add(1, Ordering::Relaxed);
        tracing::debug!(client = %state.client, "closing a connection still waiting for its request body");
        true
    }

    /// Starts shutdown: no connection is served any more, and every open one is asked to
    /// close (idle ones at once, busy ones after their request).
    pub fn close_all(&self) {
        let mut registry = self.lock();
        registry.shutting_down = true;
        for state in registry.counted.values() {
            state.close.notify_one();
        }
        registry.counted.clear();
        registry.oldest_idle.clear();
        // Connections waiting for a place look again, and find the server shutting down.
        self.place_freed.notify_waiters();
    }

    /// Completes once no connection is left (after [`Admissions::close_all`]).
    pub async fn all_ended(&self) {
        loop {
            let ended = self.all_ended.notified();
            tokio::pin!(ended);
            // Registered before the check, so a wake-up between the two is not lost.
            ended.as_mut().enable();
            if self.lock().live == 0 {
                return;
            }
            ended.await;
        }
    }

    /// Counts a throttle and logs it, at most once per [`REFUSAL_LOG_INTERVAL`] per kind.
    fn throttle(&self, limit: Limit, reason: Throttle, client: IpAddr) -> Throttled {
        let throttled = Throttled { limit, reason };
        self.throttle_counts[throttled.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(unlogged) = self.throttle_logs[throttled.index()].take_turn() {
            tracing::warn!(
                %client,
                limit = limit.label(),
                reason = reason.label(),
                unlogged_since_last_line = unlogged,
                "throttled a client: {}",
                self.throttle_text(throttled, client)
            );
        }
        throttled
    }

    /// Why a client was throttled, for the log: the limit, the queue, and the flag that
    /// raises the limit.
    fn throttle_text(&self, throttled: Throttled, client: IpAddr) -> String {
        let AdmissionLimits {
            connections_max,
            busy_per_client_max,
            queued_max,
            queue_wait_max,
        } = self.limits;
        let at_limit = match throttled.limit {
            Limit::Connections => format!(
                "the server holds its limit of {connections_max} open connections, every one \
                 with a request in flight (shoal serve --connections-max raises it)"
            ),
            Limit::ClientBusy => format!(
                "{client} has {busy_per_client_max} requests in flight, the most one client \
                 address may have (shoal serve --busy-connections-per-client raises it)"
            ),
        };
        match throttled.reason {
            Throttle::QueueFull => format!("{at_limit}, and {queued_max} clients wait already"),
            Throttle::WaitOver => format!(
                "{at_limit}, and no place freed within {} s",
                queue_wait_max.as_secs_f64()
            ),
        }
    }

    /// Appends the connection families in Prometheus text format.
    pub fn render_metrics(&self, out: &mut String) {
        let (live, busy) = {
            let registry = self.lock();
            let busy: usize = registry
                .clients
                .values()
                .map(|client| {
                    self.limits
                        .busy_per_client_max
                        .saturating_sub(client.busy.available_permits())
                })
                .sum();
            (registry.live, busy)
        };
        let unlabelled = |value: usize| [(String::new(), value as u64)];
        write_family(
            out,
            "shoal_open_connections",
            "gauge",
            "Client connections open now.",
            unlabelled(live),
        );
        write_family(
            out,
            "shoal_busy_connections",
            "gauge",
            "Client connections with a request in flight now.",
            unlabelled(busy),
        );
        write_family(
            out,
            "shoal_idle_connections_closed_total",
            "counter",
            "Idle connections closed to make room.",
            IdleClosure::ALL.map(|reason| {
                (
                    format!("reason=\"{}\"", reason.label()),
                    self.idle_closure_counts[reason.index()].load(Ordering::Relaxed),
                )
            }),
        );
        let by_limit = |value: &dyn Fn(Limit) -> u64| {
            Limit::ALL.map(|limit| (format!("limit=\"{}\"", limit.label()), value(limit)))
        };
        write_family(
            out,
            "shoal_queued_connections",
            "gauge",
            "Clients waiting for a place now, by the limit they wait at.",
            by_limit(&|limit| self.queued_now[limit.index()].load(Ordering::Relaxed) as u64),
        );
        write_family(
            out,
            "shoal_queued_connections_total",
            "counter",
            "Clients that waited for a place, by limit.",
            by_limit(&|limit| self.queued_counts[limit.index()].load(Ordering::Relaxed)),
        );
        let throttles = Limit::ALL.into_iter().flat_map(|limit| {
            Throttle::ALL.map(|reason| {
                let throttled = Throttled { limit, reason };
                (
                    format!("limit=\"{}\",reason=\"{}\"", limit.label(), reason.label()),
                    self.throttle_counts[throttled.index()].load(Ordering::Relaxed),
                )
            })
        });
        write_family(
            out,
            "shoal_throttled_connections_total",
            "counter",
            "Clients answered ThrottlingException at a connection limit, by limit and reason.",
            throttles,
        );
    }
}

/// Appends a metric family in Prometheus text format: its help and type lines, then a line
/// per sample (its labels, as rendered between the braces, or none, and its value).
fn write_family(
    out: &mut String,
    name: &str,
    kind: &str,
    help: &str,
    samples: impl IntoIterator<Item = (String, u64)>,
) {
    // Writing to a String cannot fail; the fmt::Results are ignored for that reason.
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    for (labels, value) in samples {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

impl ConnectionSlot {
    /// Marks the connection busy for a request, once its client address has a place for it:
    /// at once, or after waiting in the queue; throttled if the queue is full or the wait
    /// runs out.
    pub async fn begin_request(&self) -> Result<BusyConnection<'_>, Throttled> {
        let state = &self.state;
        // Busy from here on, even while it waits: a connection with a request waiting is not
        // idle, and is not closed to make room. A connection chosen to close stays so: hyper
        // finishes this request, then closes it.
        let _ = state
            .activity
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |activity| {
                (activity != CLOSING).then_some(BUSY)
            });
        let client_place = match Arc::clone(&state.client_busy).try_acquire_owned() {
            Ok(place) => place,
            Err(_) => self.admissions.wait_for_client_place(state).await?,
        };
        Ok(BusyConnection {
            slot: self,
            _client_place: client_place,
        })
    }

    /// Completes when the server asks this connection to close (to make room, or at
    /// shutdown).
    pub async fn close_requested(&self) {
        self.state.close.notified().await;
    }

    /// Marks the connection's request as waiting for the rest of its body until the guard
    /// drops, which makes the connection one to close when the server is full (module docs).
    pub fn receiving_body(&self) -> ReceivingBody {
        let state = Arc::clone(&self.state);
        // A connection chosen to close while its request was arriving (an idle or a new one:
        // the client sent its request as the server made room) no longer counts, so nothing
        // would choose it again: its body gets [`BODY_WAIT_ONCE_CHOSEN`] (`stopped`).
        let chosen_before_waiting = state.activity.load(Ordering::Acquire) == CLOSING;
        let since = if chosen_before_waiting {
            CLOSING
        } else {
            self.admissions.next_idle_stamp()
        };
        state.receiving_since.store(since, Ordering::Release);
        self.admissions.place_may_have_freed();
        ReceivingBody {
            state,
            chosen_before_waiting,
        }
    }
}

/// How long the body of a request may take to arrive on a connection that was chosen to close
/// before the request's head was read. Such a request raced the closing of an idle or new
/// connection, which a client cannot see coming; it is served if its body comes within this
/// (the client's SDK would not retry the error it would get otherwise), and the connection
/// closes after the answer. Short, since the connection no longer counts toward the limit
/// and holds its address's busy place meanwhile.
pub const BODY_WAIT_ONCE_CHOSEN: Duration = Duration::from_secs(1);

/// A request waiting for its body; see [`ConnectionSlot::receiving_body`].
pub struct ReceivingBody {
    state: Arc<ConnectionState>,
    /// The connection had been chosen to close before the wait began.
    chosen_before_waiting: bool,
}

impl ReceivingBody {
    /// Completes when the connection is chosen to make room, or [`BODY_WAIT_ONCE_CHOSEN`]
    /// after the wait began on a connection chosen before it: the request is then to be
    /// answered at once and the connection closed.
    pub async fn stopped(&self) {
        if self.chosen_before_waiting {
            tokio::time::sleep(BODY_WAIT_ONCE_CHOSEN).await;
            return;
        }
        let stopped = self.state.stop_receiving.notified();
        tokio::pin!(stopped);
        stopped.as_mut().enable();
        if self.state.receiving_since.load(Ordering::Acquire) == CLOSING {
            return;
        }
        stopped.await;
    }
}

impl Drop for ReceivingBody {
    fn drop(&mut self) {
        // A connection chosen meanwhile stays chosen (it no longer counts toward the limit).
        let _ =
            self.state
                .receiving_since
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |since| {
                    (since != CLOSING).then_some(0)
                });
    }
}

impl Drop for BusyConnection<'_> {
    fn drop(&mut self) {
        // The address's place goes back when `_client_place` drops, after this.
        let state = &self.slot.state;
        let stamp = self.slot.admissions.next_idle_stamp();
        let _ = state
            .activity
            .compare_exchange(BUSY, stamp, Ordering::AcqRel, Ordering::Acquire);
        self.slot.admissions.place_may_have_freed();
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let state = &self.state;
        // A queued stamp of this connection can no longer be chosen.
        state.activity.store(CLOSING, Ordering::Release);
        let mut registry = self.admissions.lock();
        let was_counted = registry.counted.remove(&state.id).is_some();
        if let Some(client) = registry.clients.get_mut(&state.client) {
            client.connections -= 1;
            if client.connections == 0 {
                registry.clients.remove(&state.client);
            }
        }
        assert!(registry.live > 0, "a connection ended twice");
        registry.live -= 1;
        if registry.live == 0 {
            self.admissions.all_ended.notify_waiters();
        }
        drop(registry);
        if was_counted {
            self.admissions.place_may_have_freed();
        }
    }
}

/// Lets one log line through per [`REFUSAL_LOG_INTERVAL`] and counts the ones held back.
#[derive(Default)]
struct RateLimitedLog {
    last_line: Mutex<Option<Instant>>,
    held_back: AtomicU64,
}

impl RateLimitedLog {
    /// `Some(lines held back since the last one)` if a line may be written now.
    fn take_turn(&self) -> Option<u64> {
        let now = Instant::now();
        let mut last_line = self
            .last_line
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match *last_line {
            Some(last) if now.duration_since(last) < REFUSAL_LOG_INTERVAL => {
                self.held_back.fetch_add(1, Ordering::Relaxed);
                None
            }
            _ => {
                *last_line = Some(now);
                Some(self.held_back.swap(0, Ordering::Relaxed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Admissions with a queue of two and a wait longer than any test.
    fn admissions(connections_max: usize, busy_per_client_max: usize) -> Arc<Admissions> {
        queueing(
            connections_max,
            busy_per_client_max,
            2,
            Duration::from_secs(60),
        )
    }

    fn queueing(
        connections_max: usize,
        busy_per_client_max: usize,
        queued_max: usize,
        queue_wait_max: Duration,
    ) -> Arc<Admissions> {
        Admissions::new(AdmissionLimits {
            connections_max,
            busy_per_client_max,
            queued_max,
            queue_wait_max,
        })
    }

    fn served(admission: Admission) -> Arc<ConnectionSlot> {
        match admission {
            Admission::Serve(slot) => slot,
            Admission::Queue(_) => panic!("queued"),
            Admission::Throttle => panic!("throttled"),
            Admission::Close => panic!("closed"),
        }
    }

    fn queued(admission: Admission) -> QueuePlace {
        match admission {
            Admission::Queue(place) => place,
            _ => panic!("not queued"),
        }
    }

    /// Whether the slot's connection was asked to close.
    fn close_was_requested(slot: &ConnectionSlot) -> bool {
        slot.state.activity.load(Ordering::Acquire) == CLOSING
    }

    fn throttle_count(admissions: &Admissions, limit: Limit, reason: Throttle) -> u64 {
        admissions.throttle_counts[Throttled { limit, reason }.index()].load(Ordering::Relaxed)
    }

    fn closed_count(admissions: &Admissions, reason: IdleClosure) -> u64 {
        admissions.idle_closure_counts[reason.index()].load(Ordering::Relaxed)
    }

    /// `future`'s output, or a failed test naming `what` if it takes longer than 10 s
    /// (what every wait below allows for a thing that must happen).
    async fn within_10s<F: std::future::Future>(future: F, what: &str) -> F::Output {
        tokio::time::timeout(Duration::from_secs(10), future)
            .await
            .unwrap_or_else(|_| panic!("within 10 s: {what}"))
    }

    #[tokio::test]
    async fn idle_connections_at_the_limit_make_room_oldest_first() {
        let admissions = admissions(3, 100);
        let client = address("127.0.0.1");
        let oldest = served(admissions.admit(client));
        let middle = served(admissions.admit(client));
        let newest = served(admissions.admit(client));
        // `oldest` serves a request and goes idle again: idle between requests, it goes
        // before the connections that have sent none, whatever their age.
        drop(oldest.begin_request().await.unwrap());
        let fourth = served(admissions.admit(client));
        assert!(close_was_requested(&oldest));
        assert!(!close_was_requested(&middle) && !close_was_requested(&newest));
        // Then those, oldest first.
        let fifth = served(admissions.admit(client));
        assert!(close_was_requested(&middle));
        assert!(!close_was_requested(&newest) && !close_was_requested(&fourth));
        assert_eq!(closed_count(&admissions, IdleClosure::ConnectionLimit), 2);
        drop(fifth);
    }

    #[tokio::test]
    async fn with_every_connection_busy_a_new_one_waits_for_a_place() {
        let admissions = admissions(2, 100);
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        let first_busy = first.begin_request().await.unwrap();
        let second_busy = second.begin_request().await.unwrap();
        // Two wait (the queue's bound); the next one is throttled at once.
        let waiting = queued(admissions.admit(client));
        let also_waiting = queued(admissions.admit(client));
        assert!(matches!(admissions.admit(client), Admission::Throttle));
        assert_eq!(
            throttle_count(&admissions, Limit::Connections, Throttle::QueueFull),
            1
        );
        assert!(!close_was_requested(&first) && !close_was_requested(&second));
        // One request ends: its connection is idle, and makes room for the first waiting.
        let waiter = {
            let admissions = Arc::clone(&admissions);
            tokio::spawn(async move { served(admissions.wait_for_place(client).await) })
        };
        drop(second_busy);
        let third = within_10s(waiter, "a freed place reaches the waiting connection")
            .await
            .unwrap();
        assert!(close_was_requested(&second));
        assert!(!close_was_requested(&first));
        drop(waiting);
        assert_eq!(admissions.queued_all.load(Ordering::SeqCst), 1);
        drop((first_busy, third, also_waiting));
    }

    #[tokio::test]
    async fn a_connection_whose_wait_runs_out_is_throttled() {
        let admissions = queueing(1, 100, 2, Duration::from_millis(50));
        let client = address("127.0.0.1");
        let only = served(admissions.admit(client));
        let busy = only.begin_request().await.unwrap();
        let place = queued(admissions.admit(client));
        assert!(matches!(
            admissions.wait_for_place(client).await,
            Admission::Throttle
        ));
        assert_eq!(
            throttle_count(&admissions, Limit::Connections, Throttle::WaitOver),
            1
        );
        drop((place, busy));
    }

    #[tokio::test]
    async fn with_none_idle_the_longest_wait_for_a_body_makes_room() {
        let admissions = admissions(3, 100);
        let client = address("127.0.0.2");
        let slots: Vec<_> = (0..3).map(|_| served(admissions.admit(client))).collect();
        let mut busy = Vec::new();
        for slot in &slots {
            busy.push(slot.begin_request().await.unwrap());
        }
        // The first has its whole body (it waited, then the body came); the other two wait,
        // the third since longer than the second.
        drop(slots[0].receiving_body());
        let third_waiting = slots[2].receiving_body();
        let second_waiting = slots[1].receiving_body();
        let fourth = served(admissions.admit(address("127.0.0.3")));
        within_10s(
            slots[2].close_requested(),
            "its connection is asked to close",
        )
        .await;
        within_10s(third_waiting.stopped(), "the chosen request hears it").await;
        assert_eq!(closed_count(&admissions, IdleClosure::SlowBody), 1);
        // Its body arriving now changes nothing: it is no longer counted.
        drop(third_waiting);
        // The second gets its body before anyone else comes: a whole request in flight is
        // never cut off, so with every place busy the next connection waits.
        drop(second_waiting);
        let fourth_busy = fourth.begin_request().await.unwrap();
        assert!(matches!(admissions.admit(client), Admission::Queue(_)));
        assert!(!close_was_requested(&slots[1]));
        drop((busy, fourth_busy));
    }

    #[tokio::test]
    async fn of_a_body_wait_and_connections_that_sent_nothing_the_longest_stalled_makes_room() {
        let admissions = admissions(3, 100);
        let client = address("127.0.0.1");
        // A connection an SDK's pool opened and never used, then a request whose body is on
        // its way, then a connection that has not sent its request yet.
        let left_unused = served(admissions.admit(client));
        let receiving = served(admissions.admit(client));
        let receiving_busy = receiving.begin_request().await.unwrap();
        let waiting = receiving.receiving_body();
        let newer = served(admissions.admit(client));
        // The unused connection has waited longer than the body: it makes room.
        let fourth = served(admissions.admit(client));
        assert!(close_was_requested(&left_unused));
        assert!(!close_was_requested(&receiving) && !close_was_requested(&newer));
        let closed = |reason| closed_count(&admissions, reason);
        assert_eq!(closed(IdleClosure::ConnectionLimit), 1);
        assert_eq!(closed(IdleClosure::SlowBody), 0);
        // The neighbouring case: the body has waited longer than the connections opened
        // after it began, so it goes before them.
        let fifth = served(admissions.admit(client));
        within_10s(
            waiting.stopped(),
            "the request waiting for its body is stopped",
        )
        .await;
        assert!(!close_was_requested(&newer) && !close_was_requested(&fourth));
        assert_eq!(closed(IdleClosure::SlowBody), 1);
        drop((receiving_busy, fifth));
    }

    #[tokio::test]
    async fn the_idle_queue_yields_no_connection_past_the_bound_asked_for() {
        let admissions = admissions(4, 100);
        let client = address("127.0.0.1");
        let idle_first = served(admissions.admit(client));
        drop(idle_first.begin_request().await.unwrap());
        let idle_second = served(admissions.admit(client));
        drop(idle_second.begin_request().await.unwrap());
        let receiving = served(admissions.admit(client));
        let receiving_busy = receiving.begin_request().await.unwrap();
        let waiting = receiving.receiving_body();
        let silent = served(admissions.admit(client));
        // A scan for any idle connection queues both idle ones and the silent one, and
        // closes the first; the second then goes busy, so its queued stamp is stale.
        assert!(admissions.close_an_idle_connection(IdleClosure::OpenFiles));
        assert!(close_was_requested(&idle_first));
        let second_busy = idle_second.begin_request().await.unwrap();
        let filler = served(admissions.admit(client));
        // At the limit, none is idle between requests: the queue's silent connection, opened
        // after the body wait began, is not taken for one; the body wait, stalled longer,
        // makes room.
        let last = served(admissions.admit(client));
        within_10s(
            waiting.stopped(),
            "the request waiting for its body is stopped",
        )
        .await;
        assert!(!close_was_requested(&silent));
        assert_eq!(closed_count(&admissions, IdleClosure::ConnectionLimit), 0);
        drop((receiving_busy, second_busy, filler, last));
    }

    #[tokio::test]
    async fn a_request_that_raced_its_connections_closing_gets_a_moment_for_its_body() {
        let admissions = admissions(1, 100);
        let client = address("127.0.0.1");
        // Idle, then chosen to make room, as its client sends a request on it.
        let raced = served(admissions.admit(client));
        drop(raced.begin_request().await.unwrap());
        let newer = served(admissions.admit(client));
        assert!(close_was_requested(&raced));
        let raced_busy = raced.begin_request().await.unwrap();
        let started = Instant::now();
        let waiting = raced.receiving_body();
        // Its body has a moment to come (then it is served), not none.
        waiting.stopped().await;
        assert!(
            started.elapsed() >= BODY_WAIT_ONCE_CHOSEN,
            "{:?}",
            started.elapsed()
        );
        // The neighbouring case that must not change: a request chosen while it waits for its
        // body is stopped at once.
        let newer_busy = newer.begin_request().await.unwrap();
        let newer_waiting = newer.receiving_body();
        let third = served(admissions.admit(client));
        tokio::time::timeout(Duration::from_millis(100), newer_waiting.stopped())
            .await
            .expect("a request chosen while waiting for its body is stopped at once");
        drop((raced_busy, newer_busy, third));
    }

    #[tokio::test]
    async fn a_connection_that_went_busy_after_it_was_queued_is_not_closed() {
        let admissions = admissions(2, 100);
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        // Fills the queue with both, then takes `first`.
        let third = served(admissions.admit(client));
        assert!(close_was_requested(&first));
        // `second` is queued with its old stamp, but is busy now: the next pick skips it
        // and, finding nobody idle, the new connection waits.
        let second_busy = second.begin_request().await.unwrap();
        let third_busy = third.begin_request().await.unwrap();
        assert!(matches!(admissions.admit(client), Admission::Queue(_)));
        assert!(!close_was_requested(&second));
        drop((second_busy, third_busy));
    }

    #[tokio::test]
    async fn each_client_address_has_its_own_busy_limit_and_waits_at_it_in_order() {
        let admissions = admissions(100, 2);
        let first = address("127.0.0.2");
        let second = address("127.0.0.3");
        let connections: Vec<_> = (0..5).map(|_| served(admissions.admit(first))).collect();
        let one = connections[0].begin_request().await.unwrap();
        let two = connections[1].begin_request().await.unwrap();
        // Two more wait (the queue's bound), the next is throttled.
        let third = connections[2].begin_request();
        let fourth = connections[3].begin_request();
        tokio::pin!(third, fourth);
        for waiting in [third.as_mut(), fourth.as_mut()] {
            assert!(tokio::time::timeout(Duration::from_millis(20), waiting)
                .await
                .is_err());
        }
        assert_eq!(
            connections[4].begin_request().await.err(),
            Some(Throttled {
                limit: Limit::ClientBusy,
                reason: Throttle::QueueFull
            })
        );
        // Another address is not held to the first one's count.
        let other = served(admissions.admit(second));
        let other_busy = other.begin_request().await.unwrap();
        // A request that ends hands its place to the one waiting the longest.
        drop(one);
        let three = within_10s(third, "the first waiting gets the place")
            .await
            .unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(20), fourth.as_mut())
                .await
                .is_err()
        );
        drop(two);
        let four = within_10s(fourth, "the second waiting gets the next")
            .await
            .unwrap();
        assert_eq!(
            admissions.queued_counts[Limit::ClientBusy.index()].load(Ordering::Relaxed),
            2
        );
        drop((three, four, other_busy));
    }

    #[tokio::test]
    async fn a_request_at_its_address_limit_closes_that_addresses_oldest_half_body() {
        let admissions = admissions(100, 2);
        let slow = address("127.0.0.2");
        let connections: Vec<_> = (0..3).map(|_| served(admissions.admit(slow))).collect();
        let other = served(admissions.admit(address("127.0.0.3")));
        let other_busy = other.begin_request().await.unwrap();
        let other_waiting = other.receiving_body();
        let half_body = {
            let busy = connections[0].begin_request().await.unwrap();
            let waiting = connections[0].receiving_body();
            (busy, waiting)
        };
        let whole = connections[1].begin_request().await.unwrap();
        let third = connections[2].begin_request();
        tokio::pin!(third);
        assert!(
            tokio::time::timeout(Duration::from_millis(20), third.as_mut())
                .await
                .is_err()
        );
        // The half body of its own address was chosen (not the other address's, older), and
        // its place goes to the waiting request once it is answered.
        within_10s(half_body.1.stopped(), "the half body is stopped").await;
        assert_ne!(other.state.receiving_since.load(Ordering::Acquire), CLOSING);
        drop(half_body);
        let three = within_10s(third, "the freed place reaches the waiting request")
            .await
            .unwrap();
        drop((three, whole, other_waiting, other_busy));
    }

    #[tokio::test]
    async fn a_request_whose_wait_runs_out_is_throttled() {
        let admissions = queueing(100, 1, 2, Duration::from_millis(50));
        let client = address("127.0.0.2");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        let busy = first.begin_request().await.unwrap();
        assert_eq!(
            second.begin_request().await.err(),
            Some(Throttled {
                limit: Limit::ClientBusy,
                reason: Throttle::WaitOver
            })
        );
        assert_eq!(admissions.queued_all.load(Ordering::SeqCst), 0);
        drop(busy);
    }

    #[tokio::test]
    async fn metrics_count_open_busy_closed_queued_and_throttled() {
        let admissions = queueing(1, 1, 1, Duration::from_secs(60));
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        let busy = second.begin_request().await.unwrap();
        let place = queued(admissions.admit(client));
        assert!(matches!(admissions.admit(client), Admission::Throttle));
        let mut page = String::new();
        admissions.render_metrics(&mut page);
        for line in [
            // `first` was closed to make room, but its connection has not ended yet.
            "shoal_open_connections 2",
            "shoal_busy_connections 1",
            "shoal_idle_connections_closed_total{reason=\"connection_limit\"} 1",
            "shoal_idle_connections_closed_total{reason=\"open_files\"} 0",
            "shoal_queued_connections{limit=\"connections_max\"} 1",
            "shoal_queued_connections{limit=\"busy_connections_per_client\"} 0",
            "shoal_queued_connections_total{limit=\"connections_max\"} 1",
            "shoal_throttled_connections_total{limit=\"connections_max\",reason=\"queue_full\"} 1",
            "shoal_throttled_connections_total{limit=\"connections_max\",reason=\"wait_over\"} 0",
            "shoal_throttled_connections_total{limit=\"busy_connections_per_client\",reason=\"queue_full\"} 0",
        ] {
            assert!(page.lines().any(|l| l == line), "missing {line}\n{page}");
        }
        drop((busy, place));
        drop((first, second));
        let mut page = String::new();
        admissions.render_metrics(&mut page);
        for line in [
            "shoal_open_connections 0",
            "shoal_queued_connections{limit=\"connections_max\"} 0",
        ] {
            assert!(page.lines().any(|l| l == line), "missing {line}\n{page}");
        }
    }

    #[test]
    fn throttles_are_logged_once_per_interval() {
        let log = RateLimitedLog::default();
        assert_eq!(log.take_turn(), Some(0));
        assert_eq!(log.take_turn(), None);
        assert_eq!(log.take_turn(), None);
        *log.last_line.lock().unwrap() = Some(Instant::now() - REFUSAL_LOG_INTERVAL);
        assert_eq!(log.take_turn(), Some(2));
    }

    #[tokio::test]
    async fn shutdown_waits_for_every_connection() {
        let admissions = admissions(10, 10);
        let slot = served(admissions.admit(address("127.0.0.1")));
        admissions.close_all();
        // The connection was asked to close: its request-to-close completes at once.
        tokio::time::timeout(Duration::from_secs(1), slot.close_requested())
            .await
            .unwrap();
        assert!(matches!(
            admissions.admit(address("127.0.0.1")),
            Admission::Close
        ));
        let waiter = {
            let admissions = Arc::clone(&admissions);
            tokio::spawn(async move { admissions.all_ended().await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished());
        drop(slot);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
    }
}
