//! A bounded, least-recently-used cache in which concurrent callers asking for the same key
//! share one computation ("single flight"), built so that a wait can never deadlock a
//! thread pool.
//!
//! ```text
//!   lookup(K) ──► K ready ─────────────────────────────► Hit(value)
//!             ──► K absent: a new flight, owned by you ─► Compute(claim) ─► claim.fulfil(result)
//!             ──► K being computed by someone else ─────► Wait(waiter)   ─► waiter.wait()
//! ```
//!
//! A lookup never blocks (beyond a short mutex). The caller decides *where* each part
//! runs, and the rule that keeps a server live is: **wait only on threads that no
//! computation needs**. A computation may fan out on a thread pool (rayon), but pool
//! threads never wait on a flight; requests claim what they need first, compute their own
//! flights (on the pool if they like), and only then wait for flights owned by others, on
//! their own request thread. The owner of a flight never waits on anything but its own
//! computation, so every flight finishes, and every waiter wakes.
//!
//! A claim dropped without a result (its owner panicked) wakes its waiters with
//! [`Abandoned`] and forgets the key. Failures are handed to every waiter of that flight
//! but not kept: the next lookup computes again. Values are charged [`Weighted::weight`]
//! bytes; when the total passes the bound, the least recently used values are dropped (a
//! value larger than the whole bound is handed out but not kept).
//!
//! Under `--cfg loom` the primitives are loom's, and `tests/loom.rs` checks every
//! interleaving of small scenarios (`RUSTFLAGS="--cfg loom" cargo test -p oxprof-flight
//! --release --test loom`).

mod sync;

use std::collections::HashMap;
use std::hash::Hash;
#[cfg(not(loom))]
use std::time::Duration;
use sync::{Arc, Condvar, Mutex, lock};

/// A value the cache can hold: it knows roughly how many bytes it keeps alive.
pub trait Weighted {
    /// Approximate heap bytes held.
    fn weight(&self) -> usize;
}

/// The owner of a flight gave up without a result (it panicked, or its claim was dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abandoned;

impl std::fmt::Display for Abandoned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the computation this request waited for failed unexpectedly; try again")
    }
}

impl std::error::Error for Abandoned {}

/// Counters for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Entries held (finished and in flight).
    pub entries: usize,
    /// Entries being computed.
    pub in_flight: usize,
    /// Bytes charged to finished entries.
    pub bytes: usize,
    /// Bytes of the bound taken by [`FlightCache::try_reserve`] for memory held outside the
    /// cache (a SQL query's working memory), not yet released.
    pub reserved_bytes: usize,
    /// The bound in bytes.
    pub limit_bytes: usize,
    /// Lookups answered by a finished entry or by joining a flight.
    pub hits: u64,
    /// Lookups that started a computation.
    pub computations: u64,
    /// Entries dropped to stay under the bound (or removed by [`FlightCache::retain`]).
    pub evictions: u64,
}

/// One computation in progress: its outcome once known, and the waiters' wake-up call.
struct Flight<V, E> {
    outcome: Mutex<Option<Result<Arc<V>, E>>>,
    done: Condvar,
}

impl<V, E> Flight<V, E> {
    fn new() -> Self {
        Flight { outcome: Mutex::new(None), done: Condvar::new() }
    }
}

enum Slot<V, E> {
    Pending(Arc<Flight<V, E>>),
    Ready { value: Arc<V>, bytes: usize, last_used: u64 },
}

struct State<K, V, E> {
    entries: HashMap<K, Slot<V, E>>,
    total_bytes: usize,
    reserved_bytes: usize,
    clock: u64,
    hits: u64,
    computations: u64,
    evictions: u64,
}

/// The cache: keys `K`, values `V` (handed out as `Arc<V>`), errors `E` (cloned to every
/// waiter of a failed flight).
pub struct FlightCache<K, V, E> {
    state: Mutex<State<K, V, E>>,
    limit_bytes: usize,
}

/// What a lookup found.
pub enum Lookup<'c, K: Hash + Eq + Clone, V: Weighted, E: Clone + From<Abandoned>> {
    /// A finished value.
    Hit(Arc<V>),
    /// Another caller is computing it: [`Waiter::wait`] for it (never on a pool thread
    /// that a computation might need).
    Wait(Waiter<V, E>),
    /// Nobody is: compute it and [`Claim::fulfil`] the claim.
    Compute(Claim<'c, K, V, E>),
}

/// The right and the duty to compute one key. Dropping it unfulfilled wakes the waiters
/// with [`Abandoned`].
pub struct Claim<'c, K: Hash + Eq + Clone, V: Weighted, E: Clone + From<Abandoned>> {
    cache: &'c FlightCache<K, V, E>,
    key: Option<K>,
    flight: Arc<Flight<V, E>>,
}

/// A handle on someone else's flight.
pub struct Waiter<V, E> {
    flight: Arc<Flight<V, E>>,
}

impl<K: Hash + Eq + Clone, V: Weighted, E: Clone + From<Abandoned>> FlightCache<K, V, E> {
    /// An empty cache holding at most `limit_bytes` (by [`Weighted::weight`]).
    pub fn new(limit_bytes: usize) -> Self {
        FlightCache {
            state: Mutex::new(State {
                entries: HashMap::new(),
                total_bytes: 0,
                reserved_bytes: 0,
                clock: 0,
                hits: 0,
                computations: 0,
                evictions: 0,
            }),
            limit_bytes,
        }
    }

    /// The bound in bytes.
    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    /// Looks `key` up without blocking. `refresh` drops a finished value first (a flight in
    /// progress is joined: it is as fresh as a new one).
    pub fn lookup(&self, key: &K, refresh: bool) -> Lookup<'_, K, V, E> {
        let mut state = lock(&self.state);
        state.clock += 1;
        let now = state.clock;
        if refresh && let Some(Slot::Ready { bytes, .. }) = state.entries.get(key) {
            let bytes = *bytes;
            state.entries.remove(key);
            state.total_bytes -= bytes;
        }
        match state.entries.get_mut(key) {
            Some(Slot::Ready { value, last_used, .. }) => {
                *last_used = now;
                let value = value.clone();
                state.hits += 1;
                Lookup::Hit(value)
            }
            Some(Slot::Pending(flight)) => {
                let flight = flight.clone();
                state.hits += 1;
                Lookup::Wait(Waiter { flight })
            }
            None => {
                let flight = Arc::new(Flight::new());
                state.entries.insert(key.clone(), Slot::Pending(flight.clone()));
                state.computations += 1;
                Lookup::Compute(Claim { cache: self, key: Some(key.clone()), flight })
            }
        }
    }

    /// The finished value of `key`, if there is one (counted as a hit and marked used);
    /// never starts or joins a flight.
    pub fn peek(&self, key: &K) -> Option<Arc<V>> {
        let mut state = lock(&self.state);
        state.clock += 1;
        let now = state.clock;
        let Some(Slot::Ready { value, last_used, .. }) = state.entries.get_mut(key) else { return None };
        *last_used = now;
        let value = value.clone();
        state.hits += 1;
        Some(value)
    }

    /// The value of `key`: cached, computed by a concurrent caller (waited for on this
    /// thread), or computed now on this thread by `compute`. Call it only where waiting
    /// is safe (see the crate docs).
    pub fn get_or_compute(&self, key: &K, refresh: bool, compute: impl FnOnce() -> Result<V, E>) -> Result<Arc<V>, E> {
        match self.lookup(key, refresh) {
            Lookup::Hit(value) => Ok(value),
            Lookup::Wait(waiter) => waiter.wait(),
            Lookup::Compute(claim) => claim.fulfil(compute()),
        }
    }

    /// Drops every finished entry whose key fails `keep` (e.g. results of a file that has
    /// changed). Flights in progress are left to finish.
    pub fn retain(&self, mut keep: impl FnMut(&K) -> bool) {
        let mut state = lock(&self.state);
        let mut freed = 0;
        let mut dropped = 0;
        state.entries.retain(|key, slot| match slot {
            Slot::Ready { bytes, .. } if !keep(key) => {
                freed += *bytes;
                dropped += 1;
                false
            }
            _ => true,
        });
        state.total_bytes -= freed;
        state.evictions += dropped;
    }

    /// Takes `bytes` of the bound for memory held outside the cache (so that one bound
    /// covers the process: the cache's values and, say, a query's working memory),
    /// evicting least recently used values to make room. False, taking nothing, when the
    /// bound cannot hold them even with every finished value evicted.
    pub fn try_reserve(&self, bytes: usize) -> bool {
        let mut state = lock(&self.state);
        let fits = |state: &State<K, V, E>| {
            state.total_bytes.saturating_add(state.reserved_bytes).saturating_add(bytes) <= self.limit_bytes
        };
        while !fits(&state) {
            if !Self::evict_least_recent(&mut *state, None) {
                return false;
            }
        }
        state.reserved_bytes += bytes;
        true
    }

    /// Gives back `bytes` taken by [`FlightCache::try_reserve`].
    pub fn release(&self, bytes: usize) {
        let mut state = lock(&self.state);
        state.reserved_bytes = state.reserved_bytes.saturating_sub(bytes);
    }

    /// Drops the least recently used finished entry (other than `spare`); false when there
    /// is none.
    fn evict_least_recent(state: &mut State<K, V, E>, spare: Option<&K>) -> bool {
        let victim = state
            .entries
            .iter()
            .filter_map(|(k, s)| match s {
                Slot::Ready { last_used, .. } if Some(k) != spare => Some((k, *last_used)),
                _ => None,
            })
            .min_by_key(|(_, last_used)| *last_used)
            .map(|(k, _)| k.clone());
        let Some(victim) = victim else { return false };
        if let Some(Slot::Ready { bytes, .. }) = state.entries.remove(&victim) {
            state.total_bytes -= bytes;
            state.evictions += 1;
        }
        true
    }

    /// Current counters.
    pub fn stats(&self) -> CacheStats {
        let state = lock(&self.state);
        CacheStats {
            entries: state.entries.len(),
            in_flight: state.entries.values().filter(|s| matches!(s, Slot::Pending(_))).count(),
            bytes: state.total_bytes,
            reserved_bytes: state.reserved_bytes,
            limit_bytes: self.limit_bytes,
            hits: state.hits,
            computations: state.computations,
            evictions: state.evictions,
        }
    }

    /// Settles a finished flight in the table: keeps its value (evicting to stay under the
    /// bound) or forgets a failure. A flight that was displaced meanwhile changes nothing.
    fn settle(&self, key: &K, flight: &Arc<Flight<V, E>>, result: &Result<Arc<V>, E>, bytes: usize) {
        let mut state = lock(&self.state);
        let ours = matches!(state.entries.get(key), Some(Slot::Pending(f)) if Arc::ptr_eq(f, flight));
        if !ours {
            return;
        }
        let value = match result {
            Ok(value) if bytes <= self.limit_bytes => value.clone(),
            _ => {
                state.entries.remove(key);
                return;
            }
        };
        let now = state.clock;
        state.entries.insert(key.clone(), Slot::Ready { value, bytes, last_used: now });
        state.total_bytes += bytes;
        // Reserved memory counts against the bound too: values make room for it, never
        // the other way round (this one stays even when reservations alone fill the bound).
        while state.total_bytes + state.reserved_bytes > self.limit_bytes {
            // The least recently used finished entry other than this one.
            if !Self::evict_least_recent(&mut *state, Some(key)) {
                break;
            }
        }
    }
}

impl<K: Hash + Eq + Clone, V: Weighted, E: Clone + From<Abandoned>> Claim<'_, K, V, E> {
    /// Hands the result to the cache and to every waiter, and returns it.
    pub fn fulfil(mut self, result: Result<V, E>) -> Result<Arc<V>, E> {
        let result = result.map(Arc::new);
        self.finish(result.clone());
        result
    }

    fn finish(&mut self, result: Result<Arc<V>, E>) {
        let Some(key) = self.key.take() else { return };
        // Weigh outside the table's lock: a value may take a while to measure. A cache
        // that keeps nothing (bound 0: one-shot callers) does not weigh at all.
        let bytes = match &result {
            Ok(value) if self.cache.limit_bytes > 0 => value.weight().max(1),
            Ok(_) => 1,
            Err(_) => 0,
        };
        self.cache.settle(&key, &self.flight, &result, bytes);
        *lock(&self.flight.outcome) = Some(result);
        self.flight.done.notify_all();
    }
}

impl<K: Hash + Eq + Clone, V: Weighted, E: Clone + From<Abandoned>> Drop for Claim<'_, K, V, E> {
    fn drop(&mut self) {
        if self.key.is_some() {
            self.finish(Err(E::from(Abandoned)));
        }
    }
}

impl<V, E: Clone> Waiter<V, E> {
    /// Blocks until the flight's owner has a result.
    pub fn wait(self) -> Result<Arc<V>, E> {
        let mut outcome = lock(&self.flight.outcome);
        loop {
            if let Some(result) = outcome.as_ref() {
                return result.clone();
            }
            outcome = self.flight.done.wait(outcome).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    /// Like [`Waiter::wait`], giving up after `timeout` (`None`: still running; the
    /// waiter may try again).
    #[cfg(not(loom))]
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<Arc<V>, E>> {
        let deadline = std::time::Instant::now() + timeout;
        let mut outcome = lock(&self.flight.outcome);
        loop {
            if let Some(result) = outcome.as_ref() {
                return Some(result.clone());
            }
            let left = deadline.checked_duration_since(std::time::Instant::now())?;
            outcome = self.flight.done.wait_timeout(outcome, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, Clone, PartialEq)]
    enum TestError {
        Failed(&'static str),
        Abandoned,
    }

    impl From<Abandoned> for TestError {
        fn from(_: Abandoned) -> Self {
            TestError::Abandoned
        }
    }

    impl Weighted for Vec<u8> {
        fn weight(&self) -> usize {
            self.len()
        }
    }

    type Cache = FlightCache<String, Vec<u8>, TestError>;

    fn key(k: &str) -> String {
        k.to_string()
    }

    #[test]
    fn reservations_share_the_bound_with_values() {
        let cache = Cache::new(100);
        cache.get_or_compute(&key("a"), false, || Ok(vec![0; 40])).unwrap();
        cache.get_or_compute(&key("b"), false, || Ok(vec![0; 40])).unwrap();
        // 30 more fit only once the least recently used value ("a") is gone.
        assert!(cache.try_reserve(30));
        assert!(cache.peek(&key("a")).is_none() && cache.peek(&key("b")).is_some());
        assert_eq!((cache.stats().bytes, cache.stats().reserved_bytes), (40, 30));
        // Nothing can make room for more than the bound.
        assert!(!cache.try_reserve(71));
        assert_eq!(cache.stats().reserved_bytes, 30);
        // A new value makes room for itself from other values, not from reservations.
        cache.get_or_compute(&key("c"), false, || Ok(vec![0; 60])).unwrap();
        assert!(cache.peek(&key("b")).is_none() && cache.peek(&key("c")).is_some());
        assert_eq!((cache.stats().bytes, cache.stats().reserved_bytes), (60, 30));
        cache.release(30);
        assert_eq!(cache.stats().reserved_bytes, 0);
        assert!(cache.try_reserve(40));
    }

    #[test]
    fn concurrent_requests_share_one_computation() {
        let cache = Cache::new(1 << 20);
        let runs = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let v = cache
                        .get_or_compute(&key("k"), false, || {
                            runs.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(50));
                            Ok(vec![1, 2, 3])
                        })
                        .unwrap();
                    assert_eq!(*v, vec![1, 2, 3]);
                });
            }
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let stats = cache.stats();
        assert_eq!((stats.computations, stats.hits, stats.bytes, stats.in_flight), (1, 7, 3, 0));
    }

    #[test]
    fn failures_are_shared_but_not_kept() {
        let cache = Cache::new(100);
        assert_eq!(
            cache.get_or_compute(&key("k"), false, || Err(TestError::Failed("boom"))),
            Err(TestError::Failed("boom"))
        );
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(*cache.get_or_compute(&key("k"), false, || Ok(vec![7])).unwrap(), vec![7]);
    }

    #[test]
    fn a_dropped_claim_wakes_its_waiters_with_abandoned() {
        let cache = Cache::new(100);
        let Lookup::Compute(claim) = cache.lookup(&key("k"), false) else { panic!("first lookup computes") };
        let Lookup::Wait(waiter) = cache.lookup(&key("k"), false) else { panic!("second lookup waits") };
        std::thread::scope(|s| {
            let handle = s.spawn(move || waiter.wait());
            drop(claim);
            assert_eq!(handle.join().unwrap(), Err(TestError::Abandoned));
        });
        assert_eq!(cache.stats().entries, 0, "an abandoned key is forgotten");
    }

    #[test]
    fn a_panicking_computation_does_not_hang_its_waiters() {
        let cache = Cache::new(100);
        let Lookup::Compute(claim) = cache.lookup(&key("k"), false) else { panic!() };
        let Lookup::Wait(waiter) = cache.lookup(&key("k"), false) else { panic!() };
        std::thread::scope(|s| {
            let owner = s.spawn(move || {
                let _claim = claim;
                panic!("computation failed");
            });
            assert_eq!(waiter.wait(), Err(TestError::Abandoned));
            assert!(owner.join().is_err(), "the owner panicked");
        });
    }

    #[test]
    fn least_recently_used_entries_are_evicted_to_stay_under_the_bound() {
        let cache = Cache::new(10);
        cache.get_or_compute(&key("a"), false, || Ok(vec![0; 4])).unwrap();
        cache.get_or_compute(&key("b"), false, || Ok(vec![0; 4])).unwrap();
        cache.get_or_compute(&key("a"), false, || Ok(vec![9])).unwrap(); // touch a
        cache.get_or_compute(&key("c"), false, || Ok(vec![0; 4])).unwrap(); // evicts b
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes, stats.evictions), (2, 8, 1));
        assert_eq!(cache.get_or_compute(&key("a"), false, || Ok(vec![1])).unwrap().len(), 4, "a kept");
        // A value larger than the bound is returned but not kept.
        assert_eq!(cache.get_or_compute(&key("big"), false, || Ok(vec![0; 50])).unwrap().len(), 50);
        assert!(cache.stats().bytes <= 10);
        assert_eq!(cache.stats().entries, 2);
    }

    #[test]
    fn refresh_recomputes_a_finished_value_and_joins_a_running_one() {
        let cache = Cache::new(100);
        cache.get_or_compute(&key("k"), false, || Ok(vec![1])).unwrap();
        assert_eq!(*cache.get_or_compute(&key("k"), true, || Ok(vec![2])).unwrap(), vec![2]);
        assert_eq!(cache.stats().bytes, 1);
        let Lookup::Compute(claim) = cache.lookup(&key("j"), false) else { panic!() };
        assert!(matches!(cache.lookup(&key("j"), true), Lookup::Wait(_)));
        claim.fulfil(Ok(vec![3])).unwrap();
    }

    #[test]
    fn peek_finds_only_finished_values() {
        let cache = Cache::new(100);
        assert!(cache.peek(&key("k")).is_none());
        let Lookup::Compute(claim) = cache.lookup(&key("k"), false) else { panic!() };
        assert!(cache.peek(&key("k")).is_none(), "a flight in progress is not a value");
        claim.fulfil(Ok(vec![5])).unwrap();
        assert_eq!(*cache.peek(&key("k")).unwrap(), vec![5]);
    }

    #[test]
    fn retain_drops_finished_entries() {
        let cache = Cache::new(100);
        cache.get_or_compute(&key("a1"), false, || Ok(vec![0; 3])).unwrap();
        cache.get_or_compute(&key("b1"), false, || Ok(vec![0; 5])).unwrap();
        cache.retain(|k| !k.starts_with('a'));
        let stats = cache.stats();
        assert_eq!((stats.entries, stats.bytes), (1, 5));
    }

    #[test]
    fn wait_timeout_gives_up_and_can_be_retried() {
        let cache = Cache::new(100);
        let Lookup::Compute(claim) = cache.lookup(&key("k"), false) else { panic!() };
        let Lookup::Wait(waiter) = cache.lookup(&key("k"), false) else { panic!() };
        assert!(waiter.wait_timeout(Duration::from_millis(10)).is_none());
        claim.fulfil(Ok(vec![4])).unwrap();
        assert_eq!(*waiter.wait_timeout(Duration::from_millis(10)).unwrap().unwrap(), vec![4]);
    }
}
