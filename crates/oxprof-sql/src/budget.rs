//! What a query may spend: the engine's one memory pool (every query's operators and
//! every string a function builds are charged to it), the largest string value, and a
//! cancellation flag that the work checks (host builders, functions, planning).
//!
//! The pool is the engine's, shared by every query it runs at once (the server has one
//! engine per session), so concurrent queries together stay within its limit. In the
//! server it also charges the session's one bound (`--cache-mb`, [`SharedBound`]), so
//! query memory and cached values together stay within that bound.

use datafusion::error::DataFusionError;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation};
use oxprof_api::session::Session;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// A bound the pool's memory is also charged to: the session's `--cache-mb`, which evicts
/// cached values to make room.
pub trait SharedBound: Send + Sync {
    /// Takes `bytes`, or false when the bound cannot hold them.
    fn try_take(&self, bytes: usize) -> bool;
    /// Gives back `bytes` taken.
    fn give_back(&self, bytes: usize);
    /// The bound, in bytes (for messages).
    fn bound_bytes(&self) -> usize;
}

impl SharedBound for Session {
    fn try_take(&self, bytes: usize) -> bool {
        self.try_reserve_memory(bytes)
    }

    fn give_back(&self, bytes: usize) {
        self.release_memory(bytes)
    }

    fn bound_bytes(&self) -> usize {
        self.cache_stats().limit_bytes
    }
}

/// The engine's memory pool: a byte limit over every reservation of every query, with
/// its use and peak kept for `/oxprof/api/info`.
pub struct SqlPool {
    limit: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicU64,
    /// The session's bound, also charged (see [`SqlPool::sharing`]).
    shared: Option<Arc<dyn SharedBound>>,
    /// Bytes taken from `shared` and not given back yet.
    taken: AtomicUsize,
}

impl std::fmt::Debug for SqlPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlPool").field("stats", &self.stats()).field("shared", &self.shared.is_some()).finish()
    }
}

/// How much of the pool is in use (see [`crate::Engine::memory`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Bytes reserved by the queries running now.
    pub used_bytes: usize,
    /// The pool's limit.
    pub limit_bytes: usize,
    /// The most ever reserved at once.
    pub peak_bytes: usize,
    /// Reservations refused (each failed its query with a memory error).
    pub refused: u64,
}

impl SqlPool {
    /// A pool of `limit` bytes.
    pub fn new(limit: usize) -> SqlPool {
        SqlPool {
            limit,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            shared: None,
            taken: AtomicUsize::new(0),
        }
    }

    /// This pool, also charging `bound` for every byte it grants.
    pub fn sharing(mut self, bound: Arc<dyn SharedBound>) -> SqlPool {
        self.shared = Some(bound);
        self
    }

    /// Its counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            used_bytes: self.used.load(Ordering::Relaxed),
            limit_bytes: self.limit,
            peak_bytes: self.peak.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }

    fn grown(&self, now: usize) {
        self.peak.fetch_max(now, Ordering::Relaxed);
    }
}

impl std::fmt::Display for SqlPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stats = self.stats();
        write!(
            f,
            "oxprof-sql(used: {}, limit: {})",
            human_bytes(stats.used_bytes as u64),
            human_bytes(self.limit as u64)
        )
    }
}

impl MemoryPool for SqlPool {
    fn name(&self) -> &str {
        "oxprof-sql"
    }

    fn grow(&self, _reservation: &MemoryReservation, additional: usize) {
        let now = self.used.fetch_add(additional, Ordering::Relaxed) + additional;
        self.grown(now);
        // Growth that cannot fail: charged to the shared bound when it has room.
        if let Some(shared) = &self.shared
            && shared.try_take(additional)
        {
            self.taken.fetch_add(additional, Ordering::Relaxed);
        }
    }

    fn shrink(&self, _reservation: &MemoryReservation, shrink: usize) {
        self.used.fetch_sub(shrink, Ordering::Relaxed);
        if let Some(shared) = &self.shared {
            let back = self
                .taken
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| Some(taken.saturating_sub(shrink)))
                .map_or(0, |before| before.min(shrink));
            shared.give_back(back);
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> datafusion::error::Result<()> {
        let updated = self.used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
            used.checked_add(additional).filter(|&now| now <= self.limit)
        });
        match updated {
            Ok(before) => {
                if let Some(shared) = &self.shared {
                    if !shared.try_take(additional) {
                        self.used.fetch_sub(additional, Ordering::Relaxed);
                        self.refused.fetch_add(1, Ordering::Relaxed);
                        return Err(DataFusionError::ResourcesExhausted(format!(
                            "{} needed {} more than the server's memory bound of {} (--cache-mb) holds beside \
                             its cached analyses and other queries; raise --cache-mb",
                            reservation.consumer().name(),
                            human_bytes(additional as u64),
                            human_bytes(shared.bound_bytes() as u64)
                        )));
                    }
                    self.taken.fetch_add(additional, Ordering::Relaxed);
                }
                self.grown(before + additional);
                Ok(())
            }
            Err(used) => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(DataFusionError::ResourcesExhausted(format!(
                    "{} needed {} more, {} of the SQL memory limit of {} being in use",
                    reservation.consumer().name(),
                    human_bytes(additional as u64),
                    human_bytes(used as u64),
                    human_bytes(self.limit as u64)
                )))
            }
        }
    }

    fn reserved(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Finite(self.limit)
    }
}

/// `n` bytes for people: `512 B`, `64 MiB`, `1.5 GiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// One query's budget: the engine's pool, the value caps, and whether it was cancelled.
#[derive(Debug)]
pub struct QueryBudget {
    pool: Arc<dyn MemoryPool>,
    cancelled: AtomicBool,
    /// Largest string (or aggregated list) one value may be.
    pub max_value_bytes: usize,
    /// Largest string a function may build from constants alone: such a value is computed
    /// once, at planning, and then copied into every row of a batch.
    pub max_constant_bytes: usize,
}

impl QueryBudget {
    /// A budget over `pool`.
    pub fn new(pool: Arc<dyn MemoryPool>, max_value_bytes: usize, max_constant_bytes: usize) -> QueryBudget {
        QueryBudget { pool, cancelled: AtomicBool::new(false), max_value_bytes, max_constant_bytes }
    }

    /// Marks the query cancelled: the work stops at its next check.
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether the query was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// `Err` once the query was cancelled (a check point of work that cannot be dropped).
    pub fn check(&self) -> datafusion::error::Result<()> {
        if self.is_cancelled() { Err(DataFusionError::External(Box::new(crate::SqlError::Cancelled))) } else { Ok(()) }
    }

    /// An empty reservation named `name` in the engine's pool.
    pub fn reservation(&self, name: String) -> MemoryReservation {
        MemoryConsumer::new(name).register(&self.pool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_refuses_past_its_limit_and_keeps_its_peak() {
        let pool: Arc<dyn MemoryPool> = Arc::new(SqlPool::new(1000));
        let a = MemoryConsumer::new("a").register(&pool);
        a.try_grow(600).unwrap();
        let b = MemoryConsumer::new("b").register(&pool);
        let error = b.try_grow(500).unwrap_err().to_string();
        assert!(error.contains("b needed 500 B more, 600 B of the SQL memory limit of 1000 B"), "{error}");
        b.try_grow(400).unwrap();
        drop(a);
        drop(b);
        let stats = pool.downcast_ref::<SqlPool>().unwrap().stats();
        assert_eq!(stats, PoolStats { used_bytes: 0, limit_bytes: 1000, peak_bytes: 1000, refused: 1 });
        assert_eq!(human_bytes(1 << 30), "1 GiB");
    }

    /// A bound of 1000 bytes that counts what it lent.
    struct Bound(AtomicUsize);

    impl SharedBound for Bound {
        fn try_take(&self, bytes: usize) -> bool {
            self.0
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| Some(t + bytes).filter(|&n| n <= 1000))
                .is_ok()
        }
        fn give_back(&self, bytes: usize) {
            self.0.fetch_sub(bytes, Ordering::Relaxed);
        }
        fn bound_bytes(&self) -> usize {
            1000
        }
    }

    #[test]
    fn a_shared_bound_is_charged_and_refuses_past_itself() {
        let bound = Arc::new(Bound(AtomicUsize::new(0)));
        let pool: Arc<dyn MemoryPool> = Arc::new(SqlPool::new(1 << 20).sharing(bound.clone()));
        let a = MemoryConsumer::new("a").register(&pool);
        a.try_grow(700).unwrap();
        assert_eq!(bound.0.load(Ordering::Relaxed), 700);
        let error = a.try_grow(400).unwrap_err().to_string();
        assert!(error.contains("a needed 400 B more than the server's memory bound of 1000 B (--cache-mb)"), "{error}");
        assert_eq!(pool.reserved(), 700);
        drop(a);
        assert_eq!((bound.0.load(Ordering::Relaxed), pool.reserved()), (0, 0));
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
