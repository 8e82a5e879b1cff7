//! A bounded in-memory cache of computed responses where concurrent requests for the same
//! key share one computation (single flight).
//!
//! ```text
//!   request A ──► key K absent: insert an empty cell, compute ─────────► fill cell, account bytes
//!   request B ──► key K present: wait on the same cell ───────────────► read A's result
//!   request C ──► key K filled: read at once (hit)
//! ```
//!
//! Each key maps to a `OnceLock` cell; `OnceLock::get_or_init` blocks the other callers
//! while the first computes. Failures are handed to every waiter of that flight but not
//! kept, so the next request tries again. Successful values are charged their byte size;
//! when the total exceeds the bound, the least recently used entries are dropped (a value
//! larger than the whole bound is returned but not kept).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A value the cache can hold: it knows its size in bytes.
pub trait Weighted {
    /// Approximate heap bytes held.
    fn weight(&self) -> usize;
}

type Cell<V, E> = Arc<OnceLock<Result<Arc<V>, E>>>;

struct Entry<V, E> {
    cell: Cell<V, E>,
    /// 0 while the value is being computed.
    bytes: usize,
    last_used: u64,
}

struct State<V, E> {
    entries: HashMap<String, Entry<V, E>>,
    total_bytes: usize,
    clock: u64,
}

/// Counters for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    /// Entries held (including computations in flight).
    pub entries: usize,
    /// Bytes charged to finished entries.
    pub bytes: usize,
    /// The bound in bytes.
    pub limit_bytes: usize,
    /// Requests answered from a finished or in-flight entry.
    pub hits: u64,
    /// Requests that started a computation.
    pub computations: u64,
    /// Entries dropped to stay under the bound.
    pub evictions: u64,
}

/// The cache. `V` is the value, `E` the (cloneable) error shared by the waiters of one flight.
pub struct FlightCache<V, E> {
    state: Mutex<State<V, E>>,
    limit_bytes: usize,
    hits: AtomicU64,
    computations: AtomicU64,
    evictions: AtomicU64,
}

impl<V: Weighted, E: Clone> FlightCache<V, E> {
    /// An empty cache holding at most `limit_bytes` (by [`Weighted::weight`]).
    pub fn new(limit_bytes: usize) -> Self {
        FlightCache {
            state: Mutex::new(State { entries: HashMap::new(), total_bytes: 0, clock: 0 }),
            limit_bytes,
            hits: AtomicU64::new(0),
            computations: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<V, E>> {
        // A panic while holding the lock leaves consistent data (every update is a
        // single assignment), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The value for `key`: cached, computed by a concurrent caller, or computed now by
    /// `compute`. `refresh` drops a finished entry first (XProf's `use_saved_result=false`).
    pub fn get_or_compute(
        &self,
        key: &str,
        refresh: bool,
        compute: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, E> {
        let cell = {
            let mut state = self.lock();
            state.clock += 1;
            let now = state.clock;
            if refresh
                && state.entries.get(key).is_some_and(|e| e.cell.get().is_some())
                && let Some(old) = state.entries.remove(key)
            {
                state.total_bytes -= old.bytes;
            }
            match state.entries.get_mut(key) {
                Some(entry) => {
                    entry.last_used = now;
                    self.hits.fetch_add(1, Ordering::Relaxed);
                    entry.cell.clone()
                }
                None => {
                    let cell: Cell<V, E> = Arc::new(OnceLock::new());
                    state.entries.insert(key.to_string(), Entry { cell: cell.clone(), bytes: 0, last_used: now });
                    cell
                }
            }
        };
        let mut computed_here = false;
        let result = cell
            .get_or_init(|| {
                computed_here = true;
                self.computations.fetch_add(1, Ordering::Relaxed);
                compute().map(Arc::new)
            })
            .clone();
        if computed_here {
            self.settle(key, &cell, &result);
        }
        result
    }

    /// After a computation: charge its bytes and evict, or forget a failure.
    fn settle(&self, key: &str, cell: &Cell<V, E>, result: &Result<Arc<V>, E>) {
        let mut state = self.lock();
        let same_flight = state.entries.get(key).is_some_and(|e| Arc::ptr_eq(&e.cell, cell));
        if !same_flight {
            return;
        }
        let value = match result {
            Ok(value) => value,
            Err(_) => {
                state.entries.remove(key);
                return;
            }
        };
        let bytes = value.weight().max(1);
        if let Some(entry) = state.entries.get_mut(key) {
            entry.bytes = bytes;
        }
        state.total_bytes += bytes;
        while state.total_bytes > self.limit_bytes {
            // Least recently used finished entry (this one last: it was just used).
            let victim = state
                .entries
                .iter()
                .filter(|(_, e)| e.bytes > 0)
                .min_by_key(|(k, e)| (k.as_str() == key, e.last_used))
                .map(|(k, _)| k.clone());
            let Some(victim) = victim else { break };
            if let Some(old) = state.entries.remove(&victim) {
                state.total_bytes -= old.bytes;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let state = self.lock();
        CacheStats {
            entries: state.entries.len(),
            bytes: state.total_bytes,
            limit_bytes: self.limit_bytes,
            hits: self.hits.load(Ordering::Relaxed),
            computations: self.computations.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    impl Weighted for Vec<u8> {
        fn weight(&self) -> usize {
            self.len()
        }
    }

    #[test]
    fn concurrent_requests_share_one_computation() {
        let cache: FlightCache<Vec<u8>, String> = FlightCache::new(1 << 20);
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let v = cache
                        .get_or_compute("k", false, || {
                            runs.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(100));
                            Ok(vec![1, 2, 3])
                        })
                        .unwrap();
                    assert_eq!(*v, vec![1, 2, 3]);
                });
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let stats = cache.stats();
        assert_eq!((stats.computations, stats.hits, stats.bytes), (1, 7, 3));
    }

    #[test]
    fn failures_are_shared_but_not_kept() {
        let cache: FlightCache<Vec<u8>, String> = FlightCache::new(100);
        assert_eq!(cache.get_or_compute("k", false, || Err("boom".to_string())).unwrap_err(), "boom");
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(*cache.get_or_compute("k", false, || Ok(vec![7])).unwrap(), vec![7]);
    }

    #[test]
    fn least_recently_used_entries_are_evicted_to_stay_under_the_bound() {
        let cache: FlightCache<Vec<u8>, String> = FlightCache::new(10);
        cache.get_or_compute("a", false, || Ok(vec![0; 4])).unwrap();
        cache.get_or_compute("b", false, || Ok(vec![0; 4])).unwrap();
        cache.get_or_compute("a", false, || Ok(vec![9])).unwrap(); // touch a
        cache.get_or_compute("c", false, || Ok(vec![0; 4])).unwrap(); // evicts b
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes, stats.evictions), (2, 8, 1));
        assert_eq!(cache.get_or_compute("a", false, || Ok(vec![1])).unwrap().len(), 4, "a kept");
        // A value larger than the bound is returned but not kept.
        assert_eq!(cache.get_or_compute("big", false, || Ok(vec![0; 50])).unwrap().len(), 50);
        assert!(cache.stats().bytes <= 10);
    }

    #[test]
    fn refresh_recomputes() {
        let cache: FlightCache<Vec<u8>, String> = FlightCache::new(100);
        cache.get_or_compute("k", false, || Ok(vec![1])).unwrap();
        assert_eq!(*cache.get_or_compute("k", true, || Ok(vec![2])).unwrap(), vec![2]);
        assert_eq!(cache.stats().bytes, 1);
    }
}
