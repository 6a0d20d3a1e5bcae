//! Which connections are served, and which idle ones are closed to make room.
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
//!   their most recently used connection). With none idle, it closes the connection that has
//!   been waiting for the rest of its request body the longest (answered a
//!   SerializationException, as at the body deadline): a client that sends half a body holds
//!   a busy place, and enough of them from a few addresses (each under the per-address limit)
//!   would otherwise fill the server for the whole body deadline. A request whose body has
//!   arrived is never cut off. It is refused only when every open connection has a whole
//!   request in flight.
//! - `busy_per_client_max` busy connections from one client address, so that one client
//!   sending its bodies slowly cannot hold every busy slot. Checked when a request starts;
//!   over it, that request is refused.
//!
//! A refused client is answered `503 ServiceUnavailable` with a text naming the limit, and
//! `Connection: close`; the AWS SDKs retry a 503 with backoff. Refusals being answered have a
//! small pool of their own ([`REFUSALS_IN_FLIGHT_MAX`]); a connection refused at accept that
//! finds that pool full is closed at once (and a refused request's unread body is not waited
//! for), so a flood costs the server nothing but accepts. Refusals are
//! counted by reason and logged at most once per [`REFUSAL_LOG_INTERVAL`] per reason.
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

/// Connections being answered a refusal at once, at most.
pub const REFUSALS_IN_FLIGHT_MAX: usize = 64;

/// At most one log line per refusal reason in this long; the next line says how many
/// refusals it did not log.
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

/// What to do with an accepted connection.
pub enum Admission {
    /// Serve it; it leaves the registry when the slot is dropped.
    Serve(Arc<ConnectionSlot>),
    /// Every open connection is busy: answer its request with the refusal, then close it.
    Refuse(OwnedSemaphorePermit),
    /// Close it at once (the refusals' own pool is full too).
    Close,
}

/// Why a client was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The server holds `connections_max` connections and every one is busy.
    EveryConnectionBusy,
    /// The client's address has `busy_per_client_max` requests in flight.
    ClientBusy,
    /// As `EveryConnectionBusy`, but so many refusals are being answered that this
    /// connection was closed without one.
    RefusalsPending,
}

impl Refusal {
    const ALL: [Refusal; 3] = [
        Refusal::EveryConnectionBusy,
        Refusal::ClientBusy,
        Refusal::RefusalsPending,
    ];

    /// The `reason` label of `shoal_rejected_connections_total`.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::EveryConnectionBusy => "every_connection_busy",
            Refusal::ClientBusy => "client_busy",
            Refusal::RefusalsPending => "refusals_pending",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Why an idle connection was closed to make room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleClosure {
    /// A new connection came in at `connections_max`.
    ConnectionLimit,
    /// Accepting failed for want of file descriptors.
    OpenFiles,
    /// A new connection came in at `connections_max` with none idle, and this one was
    /// waiting for the rest of its request body the longest.
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
    connections_max: usize,
    busy_per_client_max: usize,
    registry: Mutex<Registry>,
    /// The next idle stamp (starts at 1: 0 is [`BUSY`]).
    idle_clock: AtomicU64,
    refusals_in_flight: Arc<Semaphore>,
    refusal_counts: [AtomicU64; Refusal::ALL.len()],
    refusal_logs: [RateLimitedLog; Refusal::ALL.len()],
    idle_closure_counts: [AtomicU64; IdleClosure::ALL.len()],
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
    /// Requests in flight from this address; shared with its connections.
    busy: Arc<AtomicUsize>,
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
    client_busy: Arc<AtomicUsize>,
}

/// A served connection's place in the registry; dropped when the connection ends.
pub struct ConnectionSlot {
    admissions: Arc<Admissions>,
    state: Arc<ConnectionState>,
}

/// A request in flight on a connection; dropping it makes the connection idle again.
pub struct BusyConnection<'a> {
    slot: &'a ConnectionSlot,
}

impl Admissions {
    pub fn new(connections_max: usize, busy_per_client_max: usize) -> Arc<Admissions> {
        Arc::new(Admissions {
            connections_max,
            busy_per_client_max,
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
            refusal_counts: Default::default(),
            refusal_logs: Default::default(),
            idle_closure_counts: Default::default(),
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
        let mut registry = self.lock();
        if registry.shutting_down {
            return Admission::Close;
        }
        // Who makes room, in order: a connection idle between requests (its client has been
        // served and reconnects if it needs to), the one waiting the longest for the rest of
        // its body, then one that has sent no request yet. New connections come last, or a
        // burst of new clients would close each other before their requests arrive (in a
        // flood of half bodies, 508 of 1,000 concurrent clients were closed unanswered so);
        // a flood's silent or half-head connections are older than they, so they go first.
        let room = registry.counted.len() < self.connections_max
            || self.close_oldest_idle(&mut registry, IdleClosure::ConnectionLimit, NEVER_USED)
            || self.close_oldest_receiving(&mut registry)
            || self.close_oldest_idle(&mut registry, IdleClosure::ConnectionLimit, CLOSING);
        if !room {
            drop(registry);
            return match self.refusal_permit() {
                Some(permit) => {
                    self.count_refusal(Refusal::EveryConnectionBusy, client);
                    Admission::Refuse(permit)
                }
                None => {
                    self.count_refusal(Refusal::RefusalsPending, client);
                    Admission::Close
                }
            };
        }
        let id = registry.next_id;
        registry.next_id += 1;
        let client_entry = registry.clients.entry(client).or_insert_with(|| Client {
            connections: 0,
            busy: Arc::new(AtomicUsize::new(0)),
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

    /// A place in the refusals' pool, if it has one: held while a refused client is
    /// answered, so that refusals cannot hold connections without bound.
    pub fn refusal_permit(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.refusals_in_flight)
            .try_acquire_owned()
            .ok()
    }

    /// Closes the connection idle the longest, if any is idle (for `reason`); it stops
    /// counting toward `connections_max` at once.
    pub fn close_an_idle_connection(&self, reason: IdleClosure) -> bool {
        let mut registry = self.lock();
        self.close_oldest_idle(&mut registry, reason, CLOSING)
    }

    /// Closes the connection idle the longest among those whose stamp is below `below`
    /// ([`NEVER_USED`]: only connections idle between requests; [`CLOSING`]: any).
    fn close_oldest_idle(&self, registry: &mut Registry, reason: IdleClosure, below: u64) -> bool {
        // Two rounds: the queue, then a fresh scan. A queued connection that has been busy
        // since its stamp was taken (or has closed) fails the exchange and is skipped: it is
        // no longer among the oldest idle. The queue is in stamp order: a front at or past
        // `below` means none before it qualifies, and the queue is rebuilt.
        for _round in 0..2 {
            if registry
                .oldest_idle
                .front()
                .is_some_and(|(stamp, _)| *stamp >= below)
            {
                registry.oldest_idle.clear();
            }
            while let Some((stamp, state)) = registry.oldest_idle.pop_front() {
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

    /// Closes the connection that has waited the longest for the rest of its request body, if
    /// any is waiting (module docs); it stops counting toward `connections_max` at once.
    fn close_oldest_receiving(&self, registry: &mut Registry) -> bool {
        let oldest = registry
            .counted
            .values()
            .filter_map(|state| {
                let since = state.receiving_since.load(Ordering::Acquire);
                (since != 0 && since != CLOSING).then_some((since, state))
            })
            .min_by_key(|(since, _)| *since);
        let Some((since, state)) = oldest else {
            return false;
        };
        // Fails if its body arrived meanwhile: then it is not chosen, and nothing is closed.
        if state
            .receiving_since
            .compare_exchange(since, CLOSING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let state = Arc::clone(state);
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

    /// Counts a refusal and logs it, at most once per [`REFUSAL_LOG_INTERVAL`] per reason.
    fn count_refusal(&self, refusal: Refusal, client: IpAddr) {
        self.refusal_counts[refusal.index()].fetch_add(1, Ordering::Relaxed);
        if let Some(unlogged) = self.refusal_logs[refusal.index()].take_turn() {
            tracing::warn!(
                %client,
                reason = refusal.label(),
                connections_max = self.connections_max,
                busy_per_client_max = self.busy_per_client_max,
                unlogged_since_last_line = unlogged,
                "refused a client: {}",
                self.refusal_text(refusal, client)
            );
        }
    }

    /// What a refused client reads: the limit, and the flag that raises it.
    pub fn refusal_text(&self, refusal: Refusal, client: IpAddr) -> String {
        match refusal {
            Refusal::EveryConnectionBusy | Refusal::RefusalsPending => format!(
                "The server holds its limit of {} open connections, and every one is busy \
                 with a request. Retry shortly (shoal serve --connections-max raises the \
                 limit).",
                self.connections_max
            ),
            Refusal::ClientBusy => format!(
                "{client} has {} requests in flight, the most one client address may have. \
                 Retry shortly (shoal serve --busy-connections-per-client raises the limit).",
                self.busy_per_client_max
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
                .map(|client| client.busy.load(Ordering::Relaxed))
                .sum();
            (registry.live, busy)
        };
        // Writing to a String cannot fail; the fmt::Results are ignored for that reason.
        let _ = writeln!(
            out,
            "# HELP shoal_open_connections Client connections open now."
        );
        let _ = writeln!(out, "# TYPE shoal_open_connections gauge");
        let _ = writeln!(out, "shoal_open_connections {live}");
        let _ = writeln!(
            out,
            "# HELP shoal_busy_connections Client connections with a request in flight now."
        );
        let _ = writeln!(out, "# TYPE shoal_busy_connections gauge");
        let _ = writeln!(out, "shoal_busy_connections {busy}");
        let _ = writeln!(
            out,
            "# HELP shoal_idle_connections_closed_total Idle connections closed to make room."
        );
        let _ = writeln!(out, "# TYPE shoal_idle_connections_closed_total counter");
        for reason in IdleClosure::ALL {
            let _ = writeln!(
                out,
                "shoal_idle_connections_closed_total{{reason=\"{}\"}} {}",
                reason.label(),
                self.idle_closure_counts[reason.index()].load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP shoal_rejected_connections_total Clients refused at a connection limit."
        );
        let _ = writeln!(out, "# TYPE shoal_rejected_connections_total counter");
        for reason in Refusal::ALL {
            let _ = writeln!(
                out,
                "shoal_rejected_connections_total{{reason=\"{}\"}} {}",
                reason.label(),
                self.refusal_counts[reason.index()].load(Ordering::Relaxed)
            );
        }
    }
}

impl ConnectionSlot {
    /// Marks the connection busy for a request, unless its client address already has
    /// `busy_per_client_max` requests in flight.
    pub fn begin_request(&self) -> Result<BusyConnection<'_>, Refusal> {
        let state = &self.state;
        let busy_before = state.client_busy.fetch_add(1, Ordering::AcqRel);
        if busy_before >= self.admissions.busy_per_client_max {
            state.client_busy.fetch_sub(1, Ordering::AcqRel);
            self.admissions
                .count_refusal(Refusal::ClientBusy, state.client);
            return Err(Refusal::ClientBusy);
        }
        // A connection chosen to close stays so: hyper finishes this request, then closes it.
        let _ = state
            .activity
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |activity| {
                (activity != CLOSING).then_some(BUSY)
            });
        Ok(BusyConnection { slot: self })
    }

    /// Completes when the server asks this connection to close (to make room, or at
    /// shutdown).
    pub async fn close_requested(&self) {
        self.state.close.notified().await;
    }

    /// Marks the connection's request as waiting for the rest of its body until the guard
    /// drops, which makes the connection the last resort to close when the server is full
    /// (module docs).
    pub fn receiving_body(&self) -> ReceivingBody {
        let state = Arc::clone(&self.state);
        // A connection chosen to close while its head was still arriving no longer counts,
        // so nothing would choose it again: it does not wait for its body at all.
        let since = if state.activity.load(Ordering::Acquire) == CLOSING {
            CLOSING
        } else {
            self.admissions.next_idle_stamp()
        };
        state.receiving_since.store(since, Ordering::Release);
        ReceivingBody { state }
    }

    /// The refusal text for this connection's client.
    pub fn refusal_text(&self, refusal: Refusal) -> String {
        self.admissions.refusal_text(refusal, self.state.client)
    }
}

/// A request waiting for its body; see [`ConnectionSlot::receiving_body`].
pub struct ReceivingBody {
    state: Arc<ConnectionState>,
}

impl ReceivingBody {
    /// Completes when the connection is chosen to make room: the request is to be answered
    /// at once and the connection closed.
    pub async fn stopped(&self) {
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
        let state = &self.slot.state;
        state.client_busy.fetch_sub(1, Ordering::AcqRel);
        let stamp = self.slot.admissions.next_idle_stamp();
        let _ = state
            .activity
            .compare_exchange(BUSY, stamp, Ordering::AcqRel, Ordering::Acquire);
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let state = &self.state;
        // A queued stamp of this connection can no longer be chosen.
        state.activity.store(CLOSING, Ordering::Release);
        let mut registry = self.admissions.lock();
        registry.counted.remove(&state.id);
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

    fn served(admission: Admission) -> Arc<ConnectionSlot> {
        match admission {
            Admission::Serve(slot) => slot,
            Admission::Refuse(_) => panic!("refused"),
            Admission::Close => panic!("closed"),
        }
    }

    /// Whether the slot's connection was asked to close.
    fn close_was_requested(slot: &ConnectionSlot) -> bool {
        slot.state.activity.load(Ordering::Acquire) == CLOSING
    }

    #[test]
    fn idle_connections_at_the_limit_make_room_oldest_first() {
        let admissions = Admissions::new(3, 100);
        let client = address("127.0.0.1");
        let oldest = served(admissions.admit(client));
        let middle = served(admissions.admit(client));
        let newest = served(admissions.admit(client));
        // `oldest` serves a request and goes idle again: idle between requests, it goes
        // before the connections that have sent none, whatever their age.
        drop(oldest.begin_request().unwrap());
        let fourth = served(admissions.admit(client));
        assert!(close_was_requested(&oldest));
        assert!(!close_was_requested(&middle) && !close_was_requested(&newest));
        // Then those, oldest first.
        let fifth = served(admissions.admit(client));
        assert!(close_was_requested(&middle));
        assert!(!close_was_requested(&newest) && !close_was_requested(&fourth));
        assert_eq!(
            admissions.idle_closure_counts[IdleClosure::ConnectionLimit.index()]
                .load(Ordering::Relaxed),
            2
        );
        drop(fifth);
    }

    #[test]
    fn only_busy_connections_refuse_a_new_one() {
        let admissions = Admissions::new(2, 100);
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        let first_busy = first.begin_request().unwrap();
        let second_busy = second.begin_request().unwrap();
        assert!(matches!(admissions.admit(client), Admission::Refuse(_)));
        assert!(!close_was_requested(&first) && !close_was_requested(&second));
        // One request ends: its connection is idle, and it makes room.
        drop(second_busy);
        let third = served(admissions.admit(client));
        assert!(close_was_requested(&second));
        assert!(!close_was_requested(&first));
        drop((first_busy, third));
    }

    #[tokio::test]
    async fn with_none_idle_the_longest_wait_for_a_body_makes_room() {
        let admissions = Admissions::new(3, 100);
        let client = address("127.0.0.2");
        let slots: Vec<_> = (0..3).map(|_| served(admissions.admit(client))).collect();
        let busy: Vec<_> = slots
            .iter()
            .map(|slot| slot.begin_request().unwrap())
            .collect();
        // The first has its whole body (it waited, then the body came); the other two wait,
        // the third since longer than the second.
        drop(slots[0].receiving_body());
        let third_waiting = slots[2].receiving_body();
        let second_waiting = slots[1].receiving_body();
        let fourth = served(admissions.admit(address("127.0.0.3")));
        tokio::time::timeout(Duration::from_secs(10), slots[2].close_requested())
            .await
            .expect("its connection is asked to close");
        tokio::time::timeout(Duration::from_secs(10), third_waiting.stopped())
            .await
            .expect("the chosen request hears it");
        assert_eq!(
            admissions.idle_closure_counts[IdleClosure::SlowBody.index()].load(Ordering::Relaxed),
            1
        );
        // Its body arriving now changes nothing: it is no longer counted.
        drop(third_waiting);
        let fifth = served(admissions.admit(client));
        // The second gets its body before anyone else comes: a whole request in flight is
        // never cut off, so the next connection is refused.
        drop(second_waiting);
        let fourth_busy = fourth.begin_request().unwrap();
        let fifth_busy = fifth.begin_request().unwrap();
        assert!(matches!(admissions.admit(client), Admission::Refuse(_)));
        drop((busy, fourth_busy, fifth_busy));
    }

    #[test]
    fn a_connection_that_went_busy_after_it_was_queued_is_not_closed() {
        let admissions = Admissions::new(2, 100);
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        // Fills the queue with both, then takes `first`.
        let third = served(admissions.admit(client));
        assert!(close_was_requested(&first));
        // `second` is queued with its old stamp, but is busy now: the next pick skips it
        // and, finding nobody idle, refuses.
        let second_busy = second.begin_request().unwrap();
        let third_busy = third.begin_request().unwrap();
        assert!(matches!(admissions.admit(client), Admission::Refuse(_)));
        assert!(!close_was_requested(&second));
        drop((second_busy, third_busy));
    }

    #[test]
    fn each_client_address_has_its_own_busy_limit() {
        let admissions = Admissions::new(100, 2);
        let first = address("127.0.0.2");
        let second = address("127.0.0.3");
        let connections: Vec<_> = (0..3).map(|_| served(admissions.admit(first))).collect();
        let one = connections[0].begin_request().unwrap();
        let two = connections[1].begin_request().unwrap();
        assert_eq!(
            connections[2].begin_request().err(),
            Some(Refusal::ClientBusy)
        );
        // Another address is not held to the first one's count.
        let other = served(admissions.admit(second));
        let other_busy = other.begin_request().unwrap();
        // A request that ends frees its place.
        drop(one);
        let three = connections[2].begin_request().unwrap();
        assert_eq!(
            admissions.refusal_counts[Refusal::ClientBusy.index()].load(Ordering::Relaxed),
            1
        );
        drop((two, three, other_busy));
    }

    #[test]
    fn closes_once_the_refusals_pool_is_full() {
        let admissions = Admissions::new(0, 1);
        let client = address("127.0.0.2");
        let held: Vec<Admission> = (0..REFUSALS_IN_FLIGHT_MAX)
            .map(|_| admissions.admit(client))
            .collect();
        assert!(held
            .iter()
            .all(|admission| matches!(admission, Admission::Refuse(_))));
        assert!(matches!(admissions.admit(client), Admission::Close));
    }

    #[test]
    fn metrics_count_open_busy_closed_and_refused() {
        let admissions = Admissions::new(1, 1);
        let client = address("127.0.0.1");
        let first = served(admissions.admit(client));
        let second = served(admissions.admit(client));
        let busy = second.begin_request().unwrap();
        assert!(matches!(admissions.admit(client), Admission::Refuse(_)));
        let mut page = String::new();
        admissions.render_metrics(&mut page);
        for line in [
            // `first` was closed to make room, but its connection has not ended yet.
            "shoal_open_connections 2",
            "shoal_busy_connections 1",
            "shoal_idle_connections_closed_total{reason=\"connection_limit\"} 1",
            "shoal_idle_connections_closed_total{reason=\"open_files\"} 0",
            "shoal_rejected_connections_total{reason=\"every_connection_busy\"} 1",
            "shoal_rejected_connections_total{reason=\"client_busy\"} 0",
        ] {
            assert!(page.lines().any(|l| l == line), "missing {line}\n{page}");
        }
        drop(busy);
        drop((first, second));
        let mut page = String::new();
        admissions.render_metrics(&mut page);
        assert!(
            page.lines().any(|l| l == "shoal_open_connections 0"),
            "{page}"
        );
    }

    #[test]
    fn refusals_are_logged_once_per_interval() {
        let log = RateLimitedLog::default();
        assert_eq!(log.take_turn(), Some(0));
        assert_eq!(log.take_turn(), None);
        assert_eq!(log.take_turn(), None);
        *log.last_line.lock().unwrap() = Some(Instant::now() - REFUSAL_LOG_INTERVAL);
        assert_eq!(log.take_turn(), Some(2));
    }

    #[tokio::test]
    async fn shutdown_waits_for_every_connection() {
        let admissions = Admissions::new(10, 10);
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
