//! A bounded, process-wide pool of idle buffers for work that allocates the same large
//! buffers over and over: memtable arena chunks, and the buffers a table build grows.
//!
//! Why: mimalloc (the allocator the `shoal` binary uses) returns freed memory to the OS
//! within milliseconds, so a buffer freed at the end of one memtable or table build is
//! page-faulted back in, zeroed by the kernel, by the next. On a VM whose freed memory goes
//! back to the host that is dear: a profile of one unpaced writer had a quarter of the flush
//! thread's time, and a tenth of the writer's, in fresh-page faults and buffer growth. An idle
//! buffer here keeps its pages mapped. The pool holds at most `idle_max` buffers; past that,
//! a returned buffer is freed.

use parking_lot::Mutex;

pub(crate) struct BufferPool<T> {
    idle: Mutex<Vec<T>>,
    idle_max: usize,
}

impl<T> BufferPool<T> {
    pub(crate) const fn new(idle_max: usize) -> BufferPool<T> {
        BufferPool {
            idle: Mutex::new(Vec::new()),
            idle_max,
        }
    }

    /// An idle buffer, if the pool has one.
    pub(crate) fn take(&self) -> Option<T> {
        self.idle.lock().pop()
    }

    /// Keeps `buffer` for a later [`BufferPool::take`], or frees it if the pool is full.
    pub(crate) fn give(&self, buffer: T) {
        let mut idle = self.idle.lock();
        if idle.len() < self.idle_max {
            idle.push(buffer);
            return;
        }
        drop(idle);
        // Freed here, outside the lock.
        drop(buffer);
    }

    /// Frees every idle buffer (outside the lock).
    pub(crate) fn release_idle(&self) {
        let idle = std::mem::take(&mut *self.idle.lock());
        drop(idle);
    }

    /// Buffers idle now.
    #[cfg(test)]
    pub(crate) fn idle_count(&self) -> usize {
        self.idle.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_idle_max_and_hands_them_back() {
        let pool = BufferPool::new(2);
        assert_eq!(pool.take(), None::<Vec<u8>>);
        for len in [10, 20, 30] {
            pool.give(vec![0u8; len]);
        }
        assert_eq!(pool.idle_count(), 2);
        let lens: Vec<usize> = std::iter::from_fn(|| pool.take())
            .map(|b| b.len())
            .collect();
        assert_eq!(lens, vec![20, 10]);
        assert_eq!(pool.idle_count(), 0);
        pool.give(vec![0u8; 5]);
        pool.release_idle();
        assert_eq!(pool.idle_count(), 0);
        assert_eq!(pool.take(), None);
    }
}
