//! Writing items to a table through BatchWriteItem, as any DynamoDB client must: 25 puts a
//! request, no key twice in one request, UnprocessedItems and throttling answered by sending
//! again after an exponential, jittered back-off, and at most the user's rate.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::client::retry::{backoff, retryable};
use crate::client::target::{Client, Target};

/// Puts in one BatchWriteItem (DynamoDB's limit).
pub const BATCH_ITEMS_MAX: usize = 25;
/// Attempts of one batch without progress before the copy stops (about a minute of
/// back-off): the resume file lets the user run it again later.
const ATTEMPTS_MAX: u32 = 16;

/// A shared limit of items per second (a token bucket holding at most one second's worth).
pub struct RateLimiter {
    items_per_second: Option<f64>,
    bucket: Mutex<(f64, Instant)>,
}

impl RateLimiter {
    /// None: no limit.
    pub fn new(items_per_second: Option<f64>) -> RateLimiter {
        RateLimiter {
            items_per_second: items_per_second.filter(|rate| *rate > 0.0),
            bucket: Mutex::new((0.0, Instant::now())),
        }
    }

    /// Waits until `items` more items may be written.
    pub fn take(&self, items: usize) {
        let Some(rate) = self.items_per_second else {
            return;
        };
        let wait = {
            let mut bucket = self
                .bucket
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let now = Instant::now();
            let refill = now.duration_since(bucket.1).as_secs_f64() * rate;
            bucket.0 = (bucket.0 + refill).min(rate);
            bucket.1 = now;
            bucket.0 -= items as f64;
            if bucket.0 >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-bucket.0 / rate)
            }
        };
        std::thread::sleep(wait);
    }
}

/// One worker's writer to one table.
pub struct BatchWriter {
    target: Arc<Target>,
    client: Client,
    table: String,
    key_names: Vec<String>,
    limiter: Arc<RateLimiter>,
    /// Batches sent again, for the report.
    pub retries: u64,
}

impl BatchWriter {
    /// A writer to `table`, whose key attributes are `key_names` (a batch may not hold one
    /// key twice).
    pub fn new(
        target: Arc<Target>,
        table: &str,
        key_names: Vec<String>,
        limiter: Arc<RateLimiter>,
    ) -> Result<BatchWriter, String> {
        let client = target.client()?;
        Ok(BatchWriter {
            target,
            client,
            table: table.to_string(),
            key_names,
            limiter,
            retries: 0,
        })
    }

    /// Writes `items` (DynamoDB JSON item maps), in order: of two with one key, the later
    /// wins, as two puts would.
    pub fn write(&mut self, items: &[Value]) -> Result<(), String> {
        let mut batch: Vec<&Value> = Vec::with_capacity(BATCH_ITEMS_MAX);
        let mut keys: Vec<Vec<&Value>> = Vec::with_capacity(BATCH_ITEMS_MAX);
        for item in items {
            let key: Vec<&Value> = self.key_names.iter().map(|name| &item[name]).collect();
            if batch.len() == BATCH_ITEMS_MAX || keys.contains(&key) {
                self.send(&batch)?;
                batch.clear();
                keys.clear();
            }
            batch.push(item);
            keys.push(key);
        }
        if !batch.is_empty() {
            self.send(&batch)?;
        }
        Ok(())
    }

    fn send(&mut self, items: &[&Value]) -> Result<(), String> {
        self.limiter.take(items.len());
        let puts: Vec<Value> = items
            .iter()
            .map(|item| json!({"PutRequest": {"Item": item}}))
            .collect();
        let mut pending = json!({ "RequestItems": { self.table.clone(): puts } });
        let mut attempts = 0u32;
        let mut left = items.len();
        loop {
            let body = pending.to_string();
            match self.client.call("BatchWriteItem", body.as_bytes()) {
                Ok(answer) => {
                    let answer: Value = serde_json::from_slice(&answer).unwrap_or_default();
                    let unprocessed = &answer["UnprocessedItems"];
                    let count = unprocessed[&self.table].as_array().map_or(0, Vec::len);
                    if count == 0 {
                        return Ok(());
                    }
                    // Progress resets the count: only a batch that stops moving gives up.
                    if count < left {
                        attempts = 0;
                    }
                    left = count;
                    pending = json!({ "RequestItems": unprocessed });
                }
                Err(error) if retryable(&error) => {
                    if error.code == "ConnectionError" {
                        // The connection is gone: the next attempt needs a new one.
                        match self.target.client() {
                            Ok(client) => self.client = client,
                            Err(message) => tracing::debug!("reconnecting: {message}"),
                        }
                    }
                }
                Err(error) => {
                    return Err(format!(
                        "BatchWriteItem to {}: {}: {}",
                        self.table, error.code, error.message
                    ))
                }
            }
            attempts += 1;
            self.retries += 1;
            if attempts >= ATTEMPTS_MAX {
                return Err(format!(
                    "BatchWriteItem to {}: {left} items still unprocessed after {ATTEMPTS_MAX} attempts",
                    self.table
                ));
            }
            std::thread::sleep(backoff(attempts));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_limiter_holds_writers_to_the_rate() {
        let limiter = RateLimiter::new(Some(1000.0));
        let started = Instant::now();
        // 1,500 items at 1,000/s: the first second's worth is not in the bucket yet.
        for _ in 0..60 {
            limiter.take(25);
        }
        assert!(started.elapsed() >= Duration::from_millis(1400));
        let unlimited = RateLimiter::new(None);
        let started = Instant::now();
        unlimited.take(1_000_000);
        assert!(started.elapsed() < Duration::from_millis(100));
    }
}
