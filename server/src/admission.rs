//! Which accepted connections are served: at most `connections_max` in all and at most
//! `connections_per_client_max` from one client address, so that one client cannot hold every
//! slot. A connection over either limit is not simply closed (its client would see a reset
//! and could not tell it from a crash): it is answered `ThrottlingException`, which the AWS
//! SDKs retry with backoff. Those answers have a small pool of their own; a connection that
//! finds that full too is closed at once, so a flood costs the server nothing but accepts.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Connections being answered `ThrottlingException` at once, at most.
const REJECTIONS_IN_FLIGHT_MAX: usize = 64;

/// What to do with an accepted connection.
pub enum Admission {
    /// Serve it; the slot is held until the value is dropped.
    Serve(ConnectionSlot),
    /// Answer its request with `ThrottlingException`, then close it.
    Throttle(OwnedSemaphorePermit),
    /// Close it at once.
    Close,
}

/// A served connection's claim on the limits, released on drop.
pub struct ConnectionSlot {
    _slot: OwnedSemaphorePermit,
    client: IpAddr,
    per_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut counts = self
            .per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.client);
            }
        }
    }
}

/// The server's connection limits.
pub struct Admissions {
    slots: Arc<Semaphore>,
    per_client: Arc<Mutex<HashMap<IpAddr, usize>>>,
    per_client_max: usize,
    rejections: Arc<Semaphore>,
}

impl Admissions {
    pub fn new(connections_max: usize, per_client_max: usize) -> Admissions {
        Admissions {
            slots: Arc::new(Semaphore::new(connections_max)),
            per_client: Arc::new(Mutex::new(HashMap::new())),
            per_client_max,
            rejections: Arc::new(Semaphore::new(REJECTIONS_IN_FLIGHT_MAX)),
        }
    }

    /// Decides for a connection from `client`.
    pub fn admit(&self, client: IpAddr) -> Admission {
        let mut counts = self
            .per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let count = counts.get(&client).copied().unwrap_or(0);
        let slot = if count < self.per_client_max {
            Arc::clone(&self.slots).try_acquire_owned().ok()
        } else {
            None
        };
        let Some(slot) = slot else {
            drop(counts);
            return match Arc::clone(&self.rejections).try_acquire_owned() {
                Ok(permit) => Admission::Throttle(permit),
                Err(_) => Admission::Close,
            };
        };
        counts.insert(client, count + 1);
        Admission::Serve(ConnectionSlot {
            _slot: slot,
            client,
            per_client: Arc::clone(&self.per_client),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_each_client_and_the_total_and_frees_slots_on_drop() {
        let admissions = Admissions::new(3, 2);
        let first: IpAddr = "127.0.0.2".parse().unwrap();
        let second: IpAddr = "127.0.0.3".parse().unwrap();
        let a = admissions.admit(first);
        let b = admissions.admit(first);
        assert!(matches!(a, Admission::Serve(_)));
        assert!(matches!(b, Admission::Serve(_)));
        assert!(matches!(admissions.admit(first), Admission::Throttle(_)));
        let c = admissions.admit(second);
        assert!(matches!(c, Admission::Serve(_)));
        // The total is reached: even a new client is throttled.
        let third: IpAddr = "127.0.0.4".parse().unwrap();
        assert!(matches!(admissions.admit(third), Admission::Throttle(_)));
        drop(a);
        assert!(matches!(admissions.admit(first), Admission::Serve(_)));
        drop((b, c));
    }

    #[test]
    fn closes_once_the_rejection_pool_is_full() {
        let admissions = Admissions::new(0, 1);
        let client: IpAddr = "127.0.0.2".parse().unwrap();
        let held: Vec<Admission> = (0..REJECTIONS_IN_FLIGHT_MAX)
            .map(|_| admissions.admit(client))
            .collect();
        assert!(held
            .iter()
            .all(|admission| matches!(admission, Admission::Throttle(_))));
        assert!(matches!(admissions.admit(client), Admission::Close));
    }
}
