//! Model check of the single-flight cache: loom runs each scenario under every
//! interleaving of its threads (and every spurious wake-up), so a lost wake-up, a double
//! computation or a waiter left hanging would show up as a failure or a deadlock report.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p oxprof-flight --release --test loom`
//! (`scripts/test.sh` does). Without `--cfg loom` this file is empty.
#![cfg(loom)]

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use oxprof_flight::{Abandoned, FlightCache, Lookup, Weighted};

#[derive(Debug, Clone, PartialEq)]
enum E {
    Failed,
    Abandoned,
}

impl From<Abandoned> for E {
    fn from(_: Abandoned) -> Self {
        E::Abandoned
    }
}

#[derive(Debug, PartialEq)]
struct V(u32);

impl Weighted for V {
    fn weight(&self) -> usize {
        4
    }
}

type Cache = FlightCache<u8, V, E>;

/// Every interleaving with up to three preemptions (loom's usual bound: bugs of this kind
/// show within two or three), so the suite stays at seconds.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(f);
}

/// Two callers of one key: the computation runs once and both get its value.
#[test]
fn two_callers_share_one_computation() {
    model(|| {
        let cache = Arc::new(Cache::new(64));
        let runs = Arc::new(AtomicUsize::new(0));
        let spawn = |cache: Arc<Cache>, runs: Arc<AtomicUsize>| {
            thread::spawn(move || {
                let v = cache.get_or_compute(&1, false, || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(V(7))
                });
                assert_eq!(v.unwrap().0, 7);
            })
        };
        let a = spawn(cache.clone(), runs.clone());
        let b = spawn(cache.clone(), runs.clone());
        a.join().unwrap();
        b.join().unwrap();
        // Either both shared one flight, or the second came after the first had finished
        // and hit the cache: never two computations of a kept value.
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(cache.stats().in_flight, 0);
    });
}

/// An owner that gives up (its claim dropped: a panic) wakes a waiter with `Abandoned`.
#[test]
fn an_abandoned_flight_wakes_its_waiter() {
    model(|| {
        let cache = Arc::new(Cache::new(64));
        let Lookup::Compute(claim) = cache.lookup(&1, false) else { panic!("first lookup owns the flight") };
        let waiter_cache = cache.clone();
        let waiter = thread::spawn(move || match waiter_cache.lookup(&1, false) {
            Lookup::Wait(w) => w.wait(),
            Lookup::Hit(v) => Ok(v),
            // The abandoned key was forgotten before this lookup: compute it here.
            Lookup::Compute(c) => c.fulfil(Ok(V(1))),
        });
        drop(claim);
        let got = waiter.join().unwrap().map(|v| v.0);
        assert!(got == Err(E::Abandoned) || got == Ok(1), "{got:?}");
        assert_eq!(cache.stats().in_flight, 0);
    });
}

/// A failure reaches the waiter and is not kept; a later caller computes again.
#[test]
fn a_failure_is_shared_then_forgotten() {
    model(|| {
        let cache = Arc::new(Cache::new(64));
        let c2 = cache.clone();
        let other = thread::spawn(move || c2.get_or_compute(&1, false, || Err(E::Failed)));
        let here = cache.get_or_compute(&1, false, || Err(E::Failed));
        assert_eq!(here.unwrap_err(), E::Failed);
        assert_eq!(other.join().unwrap().unwrap_err(), E::Failed);
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.get_or_compute(&1, false, || Ok(V(2))).unwrap().0, 2);
    });
}

/// Two owners of different keys, each evicting the other under a tight bound, and a
/// third thread waiting on one of them: everyone finishes and the bound holds.
#[test]
fn eviction_races_with_waiters() {
    model(|| {
        let cache = Arc::new(Cache::new(4));
        let c1 = cache.clone();
        let a = thread::spawn(move || c1.get_or_compute(&1, false, || Ok(V(1))).map(|v| v.0));
        let c2 = cache.clone();
        let b = thread::spawn(move || c2.get_or_compute(&2, false, || Ok(V(2))).map(|v| v.0));
        let waited = cache.get_or_compute(&1, false, || Ok(V(1))).map(|v| v.0);
        assert_eq!(a.join().unwrap(), Ok(1));
        assert_eq!(b.join().unwrap(), Ok(2));
        assert_eq!(waited, Ok(1));
        let stats = cache.stats();
        assert!(stats.bytes <= 4, "{stats:?}");
        assert_eq!(stats.in_flight, 0);
    });
}

/// A refresh while the value is being computed joins that flight; a refresh of a
/// finished value computes again. Nobody hangs.
#[test]
fn refresh_during_a_flight() {
    model(|| {
        let cache = Arc::new(Cache::new(64));
        let c1 = cache.clone();
        let a = thread::spawn(move || c1.get_or_compute(&1, false, || Ok(V(1))).map(|v| v.0));
        let refreshed = cache.get_or_compute(&1, true, || Ok(V(2))).map(|v| v.0);
        let first = a.join().unwrap();
        assert!(
            matches!((&first, &refreshed), (Ok(1), Ok(1)) | (Ok(1), Ok(2)) | (Ok(2), Ok(2))),
            "{first:?} {refreshed:?}"
        );
        assert_eq!(cache.stats().in_flight, 0);
    });
}
