//! A session over one served root: the runs found there, and every cache of what was
//! computed from them under one owner and one byte budget.
//!
//! ```text
//!  Session ── catalog: runs and hosts under the root (confined, rescanned at most every 2 s)
//!          └─ cache (one FlightCache, one LRU, one bound: --cache-mb)
//!               Response(key)        rendered bodies       ─┐ a response's computation may
//!               Artifact(type, file) one per tool family: ─┘ wait for the file-level
//!                 a host's OpStats, its trace index, its       entries below it; those
//!                 PyTorch parse with HTA's rows                wait for nothing
//! ```
//!
//! The session knows no tool family: each family's per-host artifact implements
//! [`HostArtifact`] (how it is computed, what it weighs, which counter it bumps) in the
//! family's module, and is kept here by its type.
//!
//! Profiles are reached through the session's [`ProfileStore`] (a local directory today),
//! never by path. Entries of a file are keyed by its name in the store and its identity,
//! the one the persistent cache keys by too ([`FileIdentity`]: size, modification and
//! status-change times, device and inode, version tag, a digest of blocks sampled across
//! a local file), so a rewritten file is read again, even one edited in place with its
//! size and modification time put back, and its old entries age out.
//!
//! **No deadlock, by construction.** Computations fan out on rayon's pool, and a pool
//! thread must never block waiting for a flight (its owner may need that very thread).
//! So every wait happens on the requesting thread: [`Session::each_file_entry`] first
//! looks up every file a request needs, then, in file order, computes the flights it owns
//! a batch at a time (in parallel on the pool; they wait for nothing) and waits, on its
//! own thread, for a flight another request owns only when every flight it owns before
//! that file is computed. Responses wait only for file-level entries, and file-level computations
//! wait for nothing, so the waits cannot form a cycle.

use crate::ApiError;
use crate::catalog::{Catalog, ServedRun};
use crate::persist::{self, Persisted};
use crate::pod_source::SourcePlace;
use crate::request::Answer;
use oxprof_diskcache::{DiskCache, FileIdentity};
use oxprof_flight::{Abandoned, CacheStats, FlightCache, Lookup, Weighted};
use oxprof_format::{HostFile, LocalStore, ProfileStore};
use oxprof_model::{LoadLimits, XSpace};
use oxprof_report::Body;
use rayon::prelude::*;
use std::any::{Any, TypeId};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Default bound of a server session's caches, in bytes.
pub const DEFAULT_CACHE_BYTES: usize = 512 << 20;

/// How a session is set up.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Bound of every cache together, in bytes.
    pub cache_bytes: usize,
    /// Serve only runs whose files, symlinks resolved, lie inside the root (a server's
    /// rule; a one-shot caller owns its files).
    pub confine_to_root: bool,
    /// Input budgets of every profile read (`--max-profile-bytes` and the rest).
    pub limits: LoadLimits,
    /// The persistent cache of per-host analyses shared with later processes
    /// (`--cache-dir`; `None`: `--no-cache`).
    pub disk_cache: Option<Arc<DiskCache>>,
    /// Places besides the root from which a pod result's hosts' own profiles may be read
    /// (`--pod-sources`: local folders or object-store prefixes; see `crate::pod_source`).
    pub pod_sources: Vec<String>,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
            confine_to_root: true,
            limits: LoadLimits::default(),
            disk_cache: None,
            pod_sources: Vec::new(),
        }
    }
}

impl SessionOptions {
    /// Options for a one-shot caller (the CLI): nothing outlives the request anyway.
    pub fn one_shot() -> Self {
        SessionOptions { cache_bytes: 0, confine_to_root: false, ..SessionOptions::default() }
    }
}

/// A rendered response kept in the cache: the body and what the routes need besides it.
#[derive(Debug)]
pub struct Rendered {
    /// `Content-Type` of the body.
    pub content_type: &'static str,
    /// The body.
    pub body: Arc<[u8]>,
    /// oxprof's notes for users (not part of the body).
    pub notes: Vec<String>,
}

/// A front-end's answer from [`Session::answered`].
#[derive(Debug)]
pub enum Served {
    /// A whole body, kept in the cache.
    Kept(Arc<Rendered>),
    /// A body written while it is sent (never kept), with oxprof's notes.
    Streamed {
        /// The body.
        body: Body,
        /// oxprof's notes for users.
        notes: Vec<String>,
    },
}

/// Identity of a file's contents as far as caching goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    path: PathBuf,
    identity: FileIdentity,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CacheKey {
    Response(String),
    /// A [`HostArtifact`] of one file, by its type.
    Artifact(TypeId, FileId),
    /// A value another crate keeps under the session's bound ([`Session::keep`]).
    Kept(String),
}

enum Cached {
    Response(Arc<Rendered>),
    /// A [`HostArtifact`], with its weight.
    Artifact(Arc<dyn Any + Send + Sync>, usize),
    /// See [`Session::keep`]: any value, with the bytes it holds.
    Kept(Arc<dyn std::any::Any + Send + Sync>, usize),
}

impl Weighted for Cached {
    fn weight(&self) -> usize {
        match self {
            Cached::Response(r) => r.body.len() + r.notes.iter().map(String::len).sum::<usize>() + 64,
            Cached::Artifact(_, bytes) => *bytes,
            Cached::Kept(_, bytes) => *bytes,
        }
    }
}

/// What a tool family computes from one host's file and the session keeps (the OpStats
/// analysis, the trace index, the PyTorch parse): one type per family, implemented in the
/// family's module, kept by its type under the session's one bound.
pub trait HostArtifact: Send + Sync + Sized + 'static {
    /// Computes it for `file`. Runs on the pool, under the request's admission: it must
    /// not wait for other entries (it may peek at them: [`Session::host_artifact_in_memory`]).
    fn compute(session: &Session, file: &HostFile) -> Result<Self, ApiError>;

    /// The heap bytes it holds (its charge against `--cache-mb`).
    fn weight(&self) -> usize;

    /// Counts one computation (`computed`) or one find in the session's counters.
    fn count(counts: &mut FileCounts, computed: bool);
}

/// The error handed to every waiter of a failed flight.
#[derive(Clone)]
struct SharedError(Arc<ApiError>);

impl From<Abandoned> for SharedError {
    fn from(abandoned: Abandoned) -> Self {
        SharedError(Arc::new(ApiError::Abandoned(abandoned)))
    }
}

impl From<SharedError> for ApiError {
    fn from(shared: SharedError) -> Self {
        Arc::try_unwrap(shared.0).unwrap_or_else(ApiError::Shared)
    }
}

fn shared(error: ApiError) -> SharedError {
    SharedError(Arc::new(error))
}

/// How often each kind of file-level entry was computed or found (in the cache or in
/// flight), for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// Host analyses (OpStats) computed.
    pub analyses_computed: u64,
    /// Host analyses found.
    pub analyses_found: u64,
    /// Trace data (model + index) built.
    pub traces_computed: u64,
    /// Trace data found.
    pub traces_found: u64,
    /// Host analyses read from the persistent cache instead of computed.
    pub analyses_from_disk: u64,
    /// Host analyses computed from the trace data in memory (its model and grouping)
    /// instead of decoding the file again.
    pub analyses_from_trace: u64,
    /// Trace views (track list, whole-trace window) answered from the persistent cache
    /// without decoding the profile.
    pub trace_views_from_disk: u64,
    /// PyTorch traces read and parsed (torch-tb-profiler's parse with HTA's rows and parts).
    pub pytorch_computed: u64,
    /// PyTorch views answered from the persistent cache without reading the trace.
    pub pytorch_views_from_disk: u64,
    /// PyTorch parses found.
    pub pytorch_found: u64,
    /// HTA ranks (steps and parts) read from the persistent cache instead of the trace.
    pub hta_ranks_from_disk: u64,
    /// HTA rank parts computed again, from the rank's rows read again from the trace, for a
    /// selection whose step filter differs from the rank's own (the parts computed with
    /// each parse are not counted).
    pub hta_parts_recomputed: u64,
    /// Those parts read from the persistent cache instead.
    pub hta_parts_from_disk: u64,
    /// Per-host artifacts of the crates above this one (`explain`'s HLO facts) computed.
    pub front_end_computed: u64,
    /// Those found.
    pub front_end_found: u64,
}

/// At most this many requests decode profiles at once (each decode is parallel inside):
/// more would not finish sooner on a machine's cores, and each holds a profile's worth
/// of memory, so a crowd of requests for hostile files cannot add up.
fn max_concurrent_loads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

/// A counting gate for [`Session::admit`]: `capacity` turns, and as many again lent while
/// loads wait on the network (`oxprof_format::io_wait`).
struct Gate {
    state: std::sync::Mutex<GateState>,
    opened: std::sync::Condvar,
}

#[derive(Debug)]
struct GateState {
    /// Turns free.
    free: usize,
    /// Turns lent now.
    lent: usize,
    /// Turns the gate has (the most it lends, too).
    capacity: usize,
}

/// How often a request waiting for a turn looks whether a load began to wait on the
/// network (which notifies no one).
const LEND_CHECK: Duration = Duration::from_millis(200);

impl Gate {
    fn new(capacity: usize) -> Gate {
        Gate {
            state: std::sync::Mutex::new(GateState { free: capacity, lent: 0, capacity }),
            opened: std::sync::Condvar::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A turn: a free one, or one lent while `waiting` loads wait on the network (a load
    /// that waits uses no core: a stalled server would otherwise hold turns for as long as
    /// it stalls). At most `capacity` are lent, so loads at work stay within twice the
    /// turns even when all that waited resume at once.
    fn admit(&self, waiting: impl Fn() -> usize) -> Admission<'_> {
        let mut state = self.state();
        loop {
            if state.free > 0 {
                state.free -= 1;
                return Admission { gate: self, lent: false };
            }
            if state.lent < waiting().min(state.capacity) {
                state.lent += 1;
                return Admission { gate: self, lent: true };
            }
            debug_assert_off_pool();
            state = self.opened.wait_timeout(state, LEND_CHECK).map_or_else(|p| p.into_inner().0, |(s, _)| s);
        }
    }
}

/// A request's turn to decode profiles; the next request's when dropped.
pub struct Admission<'s> {
    gate: &'s Gate,
    /// Lent while other loads wait on the network.
    lent: bool,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.state();
        if self.lent {
            state.lent -= 1;
        } else {
            state.free += 1;
        }
        drop(state);
        self.gate.opened.notify_one();
    }
}

/// The served runs and every cache computed from them.
pub struct Session {
    store: Arc<dyn ProfileStore>,
    disk_cache: Option<Arc<DiskCache>>,
    catalog: Catalog,
    limits: LoadLimits,
    gate: Gate,
    cache: FlightCache<CacheKey, Cached, SharedError>,
    counts: std::sync::Mutex<FileCounts>,
    /// See [`Session::memory_accounts`].
    accounts: std::sync::Mutex<Vec<std::sync::Weak<dyn MemoryAccount>>>,
    /// See [`SessionOptions::pod_sources`].
    pod_sources: Vec<String>,
    /// The stores of `pod_sources` opened so far (one per entry at most).
    pod_source_stores: std::sync::Mutex<Vec<(String, Arc<dyn ProfileStore>)>>,
}

/// Memory something holds for a session outside its cache, within a limit of its own
/// (the SQL engine's working memory of queries running).
pub trait MemoryAccount: Send + Sync {
    /// What it is, what it holds and its limit.
    fn stats(&self) -> MemoryAccountStats;
}

/// One [`MemoryAccount`]'s use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryAccountStats {
    /// What it is (`sql`).
    pub name: &'static str,
    /// Bytes held now.
    pub bytes: usize,
    /// Its limit.
    pub limit_bytes: usize,
    /// The most it held at once.
    pub peak_bytes: usize,
    /// Things it is doing now (queries running).
    pub active: usize,
}

impl Session {
    /// A session over the profiles of `store`; a local store's root must exist (it may
    /// hold no profiles yet).
    pub fn open(store: Arc<dyn ProfileStore>, options: SessionOptions) -> std::io::Result<Session> {
        Ok(Session {
            catalog: Catalog::new(store.clone(), options.confine_to_root)?,
            store,
            disk_cache: options.disk_cache,
            limits: options.limits,
            gate: Gate::new(max_concurrent_loads()),
            cache: FlightCache::new(options.cache_bytes),
            counts: Default::default(),
            accounts: Default::default(),
            pod_sources: options.pod_sources,
            pod_source_stores: Default::default(),
        })
    }

    /// A session over a local `root` (a log directory, a run directory or one profile
    /// file), which must exist.
    pub fn open_local(root: &Path, options: SessionOptions) -> std::io::Result<Session> {
        Session::open(Arc::new(LocalStore::new(root)), options)
    }

    /// A session over `root` as a user named it: a local path (see [`Session::open_local`])
    /// or an object-store URL (`s3://`, `gs://`, `az://`, `http(s)://`; see
    /// `oxprof_objstore`), whose downloaded objects share the persistent cache.
    pub fn open_path(root: &Path, options: SessionOptions) -> std::io::Result<Session> {
        let remote = oxprof_objstore::RemoteOptions { disk_cache: options.disk_cache.clone(), ..Default::default() };
        let store = oxprof_objstore::open_store(root, &remote).map_err(oxprof_objstore::StoreError::into_io)?;
        Session::open(store, options)
    }

    /// Where the session's profiles live.
    pub fn store(&self) -> &dyn ProfileStore {
        &*self.store
    }

    /// See [`SessionOptions::pod_sources`].
    pub fn pod_sources(&self) -> &[String] {
        &self.pod_sources
    }

    /// The store of `root`, one of [`Session::pod_sources`], opened once.
    fn pod_source_store(&self, root: &str) -> Result<Arc<dyn ProfileStore>, ApiError> {
        let mut stores = self.pod_source_stores.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, store)) = stores.iter().find(|(r, _)| r == root) {
            return Ok(store.clone());
        }
        let remote = oxprof_objstore::RemoteOptions { disk_cache: self.disk_cache.clone(), ..Default::default() };
        let store = oxprof_objstore::open_store(Path::new(root), &remote).map_err(|e| {
            ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: PathBuf::from(root), cause: e.into_io() })
        })?;
        stores.push((root.to_string(), store.clone()));
        Ok(store)
    }

    /// A fingerprint of a run's files (each host's name and file identity, as the caches
    /// key files) for cache keys: a rewritten or added file changes it.
    pub fn fingerprint(&self, run: &ServedRun) -> String {
        let mut out = run.dir.to_string_lossy().into_owned();
        for host in &run.hosts {
            let identity = self.identity(&host.path).unwrap_or_default();
            out.push_str(&format!("|{}:{}", host.host, identity.tag()));
        }
        out
    }

    /// A file's identity for cache keys (`None` when it cannot be read).
    fn identity(&self, file: &Path) -> Option<FileIdentity> {
        persist::identity(&*self.store, file)
    }

    /// The runs and hosts under the root.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The run named `name` (`None`: the newest).
    pub fn run(&self, name: Option<&str>) -> Result<ServedRun, ApiError> {
        self.catalog.find_run(name)
    }

    /// Counters of the cache (every kind of entry together).
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    /// How often host analyses and trace data were computed or found.
    pub fn file_counts(&self) -> FileCounts {
        *self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Updates the session's counters (a family's artifact counts what it did).
    pub(crate) fn count_with(&self, update: impl FnOnce(&mut FileCounts)) {
        update(&mut self.counts.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Loads one host's file within the session's input budgets, decoding the lines of the
    /// planes `lines_of` accepts.
    pub fn load(&self, file: &HostFile, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, ApiError> {
        if oxprof_format::discovery::is_pod_partial(&file.path) {
            // A pod result's host: its own profile, where pod.json says the job read it.
            let (place, source) = crate::pod_source::host_source(&*self.store, &self.pod_sources, file)?;
            let store = match place {
                SourcePlace::Root => self.store.clone(),
                SourcePlace::Allowed(root) => self.pod_source_store(&root)?,
            };
            return Ok(store.load(&source, &self.limits, lines_of)?);
        }
        Ok(self.store.load(&file.path, &self.limits, lines_of)?)
    }

    /// The persistent-cache slot of what `kind` computes from `file` (with `extra` inputs).
    pub(crate) fn persisted<'s>(&'s self, file: &'s HostFile, kind: &str, extra: &str) -> Persisted<'s> {
        // What a pod host's events give is kept in memory only: the cache would key it on
        // the partial's identity, which says nothing of its profile's.
        let disk_cache = self.disk_cache.as_deref().filter(|_| !oxprof_format::discovery::is_pod_partial(&file.path));
        Persisted::new(disk_cache, self.store(), &file.path, kind, extra)
    }

    /// Waits for this request's turn to decode profiles (see [`max_concurrent_loads`]).
    /// Call it on the request's thread around pure computation only, never while waiting
    /// for a flight: a waiting holder would keep the owner of that flight from its turn.
    /// A turn is lent while loads wait on a remote store's bytes (see [`Gate::admit`]).
    pub fn admit(&self) -> Admission<'_> {
        self.gate.admit(oxprof_format::io_wait::loads_waiting)
    }

    /// The session's input budgets.
    pub fn limits(&self) -> &LoadLimits {
        &self.limits
    }

    /// A rendered response, from the cache or computed once (on this thread) for every
    /// concurrent caller. Call it only on a request's own thread, never inside the pool.
    pub fn response(
        &self,
        key: String,
        refresh: bool,
        compute: impl FnOnce() -> Result<Rendered, ApiError>,
    ) -> Result<Arc<Rendered>, ApiError> {
        let key = CacheKey::Response(key);
        let entry = match self.cache.lookup(&key, refresh) {
            Lookup::Hit(entry) => entry,
            Lookup::Wait(waiter) => {
                debug_assert_off_pool();
                waiter.wait()?
            }
            Lookup::Compute(claim) => {
                let computed = catch_unwind(AssertUnwindSafe(compute)).unwrap_or(Err(ApiError::Panicked));
                claim.fulfil(computed.map(|r| Cached::Response(Arc::new(r))).map_err(shared))?
            }
        };
        match &*entry {
            Cached::Response(rendered) => Ok(rendered.clone()),
            _ => Err(ApiError::Panicked),
        }
    }

    /// A request's answer for a front-end that sends bodies (HTTP): a whole body is kept
    /// under `key` and computed once (on this thread) for every concurrent caller; a
    /// streamed one (a large trace) is written once for this caller and never kept, and
    /// callers that waited for it compute their own. Call it only on a request's own
    /// thread, never inside the pool.
    pub fn answered(
        &self,
        key: String,
        refresh: bool,
        answer: impl FnOnce() -> Result<Answer, ApiError>,
    ) -> Result<Served, ApiError> {
        let kept = |entry: Arc<Cached>| match &*entry {
            Cached::Response(rendered) => Ok(Served::Kept(rendered.clone())),
            _ => Err(ApiError::Panicked),
        };
        let claim = match self.cache.lookup(&CacheKey::Response(key), refresh) {
            Lookup::Hit(entry) => return kept(entry),
            Lookup::Wait(waiter) => {
                debug_assert_off_pool();
                match waiter.wait() {
                    Ok(entry) => return kept(entry),
                    // The caller it waited for streamed its answer (nothing was kept).
                    Err(SharedError(e)) if matches!(*e, ApiError::Abandoned(_)) => None,
                    Err(e) => return Err(e.into()),
                }
            }
            Lookup::Compute(claim) => Some(claim),
        };
        let computed =
            catch_unwind(AssertUnwindSafe(|| answer().map(Answer::into_body))).unwrap_or(Err(ApiError::Panicked));
        let rendered = match computed {
            Ok((body @ Body::Stream { .. }, notes)) => return Ok(Served::Streamed { body, notes }),
            Ok((Body::Text { content_type, text }, notes)) => {
                Ok(Rendered { content_type, body: text.into_bytes().into(), notes })
            }
            Ok((Body::Bytes { content_type, bytes }, notes)) => {
                Ok(Rendered { content_type, body: bytes.into(), notes })
            }
            Err(e) => Err(e),
        };
        match claim {
            Some(claim) => kept(claim.fulfil(rendered.map(|r| Cached::Response(Arc::new(r))).map_err(shared))?),
            None => Ok(Served::Kept(Arc::new(rendered?))),
        }
    }

    /// Whether the session has a persistent cache (`--cache-dir`; not with `--no-cache`).
    pub(crate) fn has_disk_cache(&self) -> bool {
        self.disk_cache.is_some()
    }

    /// `file`'s artifact of type `A` if it is in memory now, for the file as it is now
    /// (never computes or waits).
    pub fn host_artifact_in_memory<A: HostArtifact>(&self, file: &HostFile) -> Option<Arc<A>> {
        let identity = self.identity(&file.path)?;
        let key = CacheKey::Artifact(TypeId::of::<A>(), FileId { path: file.path.clone(), identity });
        match &*self.cache.peek(&key)? {
            Cached::Artifact(value, _) => value.clone().downcast::<A>().ok(),
            _ => None,
        }
    }

    /// Counts a trace view answered from the persistent cache.
    pub(crate) fn count_trace_view_from_disk(&self) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).trace_views_from_disk += 1;
    }

    /// Counts a PyTorch view answered from the persistent cache.
    pub(crate) fn count_pytorch_view_from_disk(&self) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).pytorch_views_from_disk += 1;
    }

    /// The rendered response kept under `key`, if any (never computes or waits).
    pub fn cached_response(&self, key: &str) -> Option<Arc<Rendered>> {
        match &*self.cache.peek(&CacheKey::Response(key.to_string()))? {
            Cached::Response(rendered) => Some(rendered.clone()),
            _ => None,
        }
    }

    // ---- Values other crates keep under the session's one bound -------------------------
    // Added for the SQL engine (`oxprof-sql`), whose built table columns must count in
    // `--cache-mb` like every other cache of the process; kept small and generic so the
    // session stays the one owner of cached memory.

    /// Keeps `value` (holding about `bytes`) under `key` with the session's other entries,
    /// least recently used first out. `key` should include [`Session::file_key`] of every
    /// file the value was computed from, so a rewritten file is never answered from it. A
    /// value already kept or being computed under `key` is left as it is.
    pub fn keep<T: std::any::Any + Send + Sync>(&self, key: String, value: Arc<T>, bytes: usize) {
        if let Lookup::Compute(claim) = self.cache.lookup(&CacheKey::Kept(key), false) {
            // Keeping a finished value cannot fail; the result is the value just kept.
            let _ = claim.fulfil(Ok(Cached::Kept(value, bytes)));
        }
    }

    /// The value kept under `key` by [`Session::keep`], if it is still there and a `T`.
    pub fn kept<T: std::any::Any + Send + Sync>(&self, key: &str) -> Option<Arc<T>> {
        match &*self.cache.peek(&CacheKey::Kept(key.to_string()))? {
            Cached::Kept(value, _) => value.clone().downcast::<T>().ok(),
            _ => None,
        }
    }

    /// `file`'s identity for cache keys: its name in the store and its size, modification
    /// time and version tag now (`None` when it cannot be read).
    pub fn file_key(&self, file: &HostFile) -> Option<String> {
        let stat = self.store.stat(&file.path).ok()?;
        let etag = stat.etag.as_deref().unwrap_or("");
        Some(format!("{}\0{}\0{}\0{etag}", file.path.display(), stat.size, stat.modified_ns))
    }

    /// Takes `bytes` of the session's one bound (`--cache-mb`) for memory held outside the
    /// cache (the SQL engine's query working memory), evicting cached values to make room;
    /// false when the bound cannot hold them. Give them back with [`Session::release_memory`].
    pub fn try_reserve_memory(&self, bytes: usize) -> bool {
        self.cache.try_reserve(bytes)
    }

    /// Gives back `bytes` taken by [`Session::try_reserve_memory`].
    pub fn release_memory(&self, bytes: usize) {
        self.cache.release(bytes)
    }

    /// Memory held for the session outside its cache, by whoever registered it with
    /// [`Session::add_memory_account`] (the SQL engine's query memory), for monitoring.
    pub fn memory_accounts(&self) -> Vec<MemoryAccountStats> {
        let accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        accounts.iter().filter_map(|a| a.upgrade()).map(|a| a.stats()).collect()
    }

    /// Reports `account` in [`Session::memory_accounts`] while it lives (it is held weakly).
    pub fn add_memory_account(&self, account: std::sync::Weak<dyn MemoryAccount>) {
        let mut accounts = self.accounts.lock().unwrap_or_else(|p| p.into_inner());
        accounts.retain(|a| a.strong_count() > 0);
        accounts.push(account);
    }

    /// Each file's artifact of type `A` (computed once per file and kept).
    pub fn host_artifacts<A: HostArtifact>(&self, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<A>>, ApiError> {
        self.host_artifacts_with(files, refresh, |file| A::compute(self, file))
    }

    /// [`Session::host_artifacts`], computing what is missing with `compute` instead of
    /// [`HostArtifact::compute`] (e.g. from a model the caller already decoded).
    pub fn host_artifacts_with<A: HostArtifact>(
        &self,
        files: &[&HostFile],
        refresh: bool,
        compute: impl Fn(&HostFile) -> Result<A, ApiError> + Sync,
    ) -> Result<Vec<Arc<A>>, ApiError> {
        let mut all = Vec::with_capacity(files.len());
        self.fold_host_artifacts_with(files, refresh, compute, |_, artifact| all.push(artifact))?;
        Ok(all)
    }

    /// Each file's artifact of type `A` handed to `fold` in file order, a batch of files at
    /// a time (see [`side_by_side`]): an artifact is dropped once folded unless the cache
    /// keeps it, so a many-host answer holds its hosts' artifacts only while they are
    /// folded, not all at once. The first error in file order is returned after every
    /// computation this call owns has finished (waiters of those flights get their
    /// results); nothing after it is folded.
    pub fn fold_host_artifacts_with<A: HostArtifact>(
        &self,
        files: &[&HostFile],
        refresh: bool,
        compute: impl Fn(&HostFile) -> Result<A, ApiError> + Sync,
        mut fold: impl FnMut(usize, Arc<A>),
    ) -> Result<(), ApiError> {
        let compute = |file: &HostFile| {
            let artifact = compute(file)?;
            let weight = artifact.weight();
            Ok(Cached::Artifact(Arc::new(artifact), weight))
        };
        let mut failed: Option<ApiError> = None;
        self.each_file_entry(files, refresh, TypeId::of::<A>(), A::count, compute, &mut |i, entry| {
            if failed.is_some() {
                return;
            }
            let artifact = entry.map_err(ApiError::from).and_then(|e| match &*e {
                Cached::Artifact(value, _) => value.clone().downcast::<A>().map_err(|_| ApiError::Panicked),
                _ => Err(ApiError::Panicked),
            });
            match artifact {
                Ok(artifact) => fold(i, artifact),
                Err(e) => failed = Some(e),
            }
        });
        failed.map_or(Ok(()), Err)
    }

    /// The entries of several files, handed to `sink` in file order: hits as their turn
    /// comes; the flights this call owns computed a batch at a time in parallel on the
    /// pool (they wait for nothing), each batch under an admission released before its
    /// entries are handed on; flights other requests own waited for on this thread when
    /// their turn comes. A file whose metadata cannot be read is computed without caching
    /// (its load reports why).
    ///
    /// No deadlock: a request waits for file `i` only after computing every flight it owns
    /// up to `i`, so of two requests waiting for each other's flights, each would have
    /// computed the other's first (files are in run order in every request).
    fn each_file_entry(
        &self,
        files: &[&HostFile],
        refresh: bool,
        artifact: TypeId,
        count: fn(&mut FileCounts, bool),
        compute: impl Fn(&HostFile) -> Result<Cached, ApiError> + Sync,
        sink: &mut dyn FnMut(usize, Result<Arc<Cached>, SharedError>),
    ) {
        /// Where a file's entry comes from.
        enum Slot {
            Ready(Result<Arc<Cached>, SharedError>),
            Wait(Waiter),
            /// Computed by this call, in a later batch.
            Mine,
            /// Handed on.
            Done,
        }
        let mut slots: Vec<Slot> = Vec::with_capacity(files.len());
        let mut mine: Vec<(usize, Option<Claim<'_>>)> = Vec::new();
        let mut sizes: Vec<u64> = vec![0; files.len()];
        for (i, file) in files.iter().enumerate() {
            let Some(identity) = self.identity(&file.path) else {
                slots.push(Slot::Mine);
                mine.push((i, None));
                continue;
            };
            sizes[i] = identity.size;
            let id = FileId { path: file.path.clone(), identity };
            let lookup = self.cache.lookup(&CacheKey::Artifact(artifact, id), refresh);
            self.count_with(|counts| count(counts, matches!(lookup, Lookup::Compute(_))));
            slots.push(match lookup {
                Lookup::Hit(entry) => Slot::Ready(Ok(entry)),
                Lookup::Wait(waiter) => Slot::Wait(waiter),
                Lookup::Compute(claim) => {
                    mine.push((i, Some(claim)));
                    Slot::Mine
                }
            });
        }
        // Hands on every entry before `until` (waiting for other requests' flights there).
        let mut next = 0;
        let mut hand_on = |slots: &mut Vec<Slot>, until: usize| {
            while next < until {
                match std::mem::replace(&mut slots[next], Slot::Done) {
                    Slot::Ready(entry) => sink(next, entry),
                    Slot::Wait(waiter) => {
                        debug_assert_off_pool();
                        sink(next, waiter.wait());
                    }
                    Slot::Mine | Slot::Done => sink(next, Err(shared(ApiError::Panicked))),
                }
                next += 1;
            }
        };
        let one = |i: usize, claim: Option<Claim<'_>>| {
            let result =
                catch_unwind(AssertUnwindSafe(|| compute(files[i]))).unwrap_or(Err(ApiError::Panicked)).map_err(shared);
            match claim {
                Some(claim) => claim.fulfil(result),
                None => result.map(Arc::new),
            }
        };
        // A remote store's loads wait on the network inside: hosts side by side run on
        // threads of their own, not the pool's (rayon would run all but one on its
        // workers), so that a stalled server holds no pool thread and with it every other
        // request's work; their decoding still uses the pool. (One host alone runs on this
        // thread either way.)
        let remote = self.store.local_root().is_none();
        for batch in side_by_side(mine, |&(i, _)| sizes[i]) {
            let until = batch.last().map_or(0, |&(i, _)| i + 1);
            let mut computed: Vec<(usize, Result<Arc<Cached>, SharedError>)> = Vec::with_capacity(batch.len());
            // Each batch is computed under an admission, released before waiting for others'.
            let admission = self.admit();
            if remote {
                let mut batch = batch.into_iter();
                loop {
                    let group: Vec<_> = batch.by_ref().take(max_concurrent_loads()).collect();
                    if group.is_empty() {
                        break;
                    }
                    std::thread::scope(|scope| {
                        let running: Vec<_> =
                            group.into_iter().map(|(i, claim)| (i, scope.spawn(move || one(i, claim)))).collect();
                        computed.extend(
                            running.into_iter().map(|(i, thread)| {
                                (i, thread.join().unwrap_or_else(|_| Err(shared(ApiError::Panicked))))
                            }),
                        );
                    });
                }
            } else {
                computed.par_extend(batch.into_par_iter().map(|(i, claim)| (i, one(i, claim))));
            }
            drop(admission);
            for (i, result) in computed {
                slots[i] = Slot::Ready(result);
            }
            hand_on(&mut slots, until);
        }
        hand_on(&mut slots, files.len());
    }
}

/// Splits files to compute into batches computed one after the other, the files of a
/// batch side by side: together no larger than the largest file, so a request's memory
/// peaks near one large host's (each host's analysis is parallel inside), while small
/// hosts still share the cores.
fn side_by_side<T>(items: Vec<T>, size_of: impl Fn(&T) -> u64) -> Vec<Vec<T>> {
    let largest = items.iter().map(&size_of).max().unwrap_or(0);
    let mut batches: Vec<Vec<T>> = Vec::new();
    let mut in_batch = 0u64;
    for item in items {
        let size = size_of(&item);
        match batches.last_mut() {
            Some(batch) if in_batch.saturating_add(size) <= largest => {
                in_batch += size;
                batch.push(item);
            }
            _ => {
                in_batch = size;
                batches.push(vec![item]);
            }
        }
    }
    batches
}

type Claim<'c> = oxprof_flight::Claim<'c, CacheKey, Cached, SharedError>;
type Waiter = oxprof_flight::Waiter<Cached, SharedError>;

/// Waiting for a flight on a pool thread could deadlock the pool (see the module docs):
/// debug builds (and so the tests) check that no caller does.
fn debug_assert_off_pool() {
    debug_assert!(
        rayon::current_thread_index().is_none(),
        "a session wait on a rayon pool thread can deadlock the pool; call it from the request's thread"
    );
}

#[cfg(test)]
mod tests {
    use super::{Gate, side_by_side};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Without loads waiting on the network the gate gives its turns and no more; while
    /// one waits, one more is lent (never more than the gate's turns), and lent turns come
    /// back as lent ones.
    #[test]
    fn the_gate_lends_turns_only_while_loads_wait() {
        let gate = Gate::new(1);
        let waiting = AtomicUsize::new(0);
        let first = gate.admit(|| waiting.load(Ordering::SeqCst));
        assert!(!first.lent);
        std::thread::scope(|scope| {
            let second = scope.spawn(|| gate.admit(|| waiting.load(Ordering::SeqCst)).lent);
            // The second request waits for a turn: none is free, no load waits...
            std::thread::sleep(super::LEND_CHECK * 2);
            assert!(!second.is_finished(), "a turn was given with none free and no load waiting");
            // ...until a load waits on the network: it gets a lent turn.
            waiting.store(1, Ordering::SeqCst);
            assert!(second.join().unwrap(), "the second turn is a lent one");
        });
        let state = gate.state();
        assert_eq!((state.free, state.lent), (0, 0), "the lent turn came back when dropped");
        drop(state);
        // At most `capacity` lent, however many wait.
        waiting.store(5, Ordering::SeqCst);
        let lent = gate.admit(|| waiting.load(Ordering::SeqCst));
        assert!(lent.lent);
        assert_eq!(gate.state().lent, 1);
        drop((first, lent));
        let state = gate.state();
        assert_eq!((state.free, state.lent), (1, 0));
    }

    #[test]
    fn hosts_run_side_by_side_only_within_the_largest_file() {
        // Sizes in MB: two large hosts go alone; small ones share a batch up to the largest.
        let batches = side_by_side(vec![170, 160, 40, 50, 60, 100, 5], |&s| s);
        assert_eq!(batches, vec![vec![170], vec![160], vec![40, 50, 60], vec![100, 5]]);
        assert_eq!(side_by_side(vec![10, 10, 10], |&s| s), vec![vec![10], vec![10], vec![10]]);
        assert!(side_by_side(Vec::<u64>::new(), |&s| s).is_empty());
    }
}
