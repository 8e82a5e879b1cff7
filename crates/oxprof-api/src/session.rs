//! A session over one served root: the runs found there, and every cache of what was
//! computed from them under one owner and one byte budget.
//!
//! ```text
//!  Session ── catalog: runs and hosts under the root (confined, rescanned at most every 2 s)
//!          └─ cache (one FlightCache, one LRU, one bound: --cache-mb)
//!               Response(key)  rendered bodies          ─┐ a response's computation may
//!               Analysis(file) a host's OpStats          ├ wait for the file-level entries
//!               Trace(file)    decoded model + index      │ below it; those wait for nothing
//!               PyTorch(file)  torch-tb-profiler's parse ─┘ and HTA's rank rows and parts, read together
//! ```
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
//! So every wait happens on the requesting thread: [`Session::file_entries`] first looks
//! up every file a request needs, computes the flights it owns (in parallel on the pool;
//! they wait for nothing), and only then waits, on its own thread, for flights that other
//! requests own. Responses wait only for file-level entries, and file-level computations
//! wait for nothing, so the waits cannot form a cycle.

use crate::ApiError;
use crate::catalog::{Catalog, ServedRun};
use crate::persist::{self, Persisted};
use crate::trace::HostTraceData;
use oxprof_diskcache::{DiskCache, FileIdentity};
use oxprof_flight::{Abandoned, CacheStats, FlightCache, Lookup, Weighted};
use oxprof_format::{HostFile, LocalStore, ProfileStore};
use oxprof_model::{LoadLimits, XSpace};
use oxprof_xprof::op_stats::convert::HostAnalysis;
use rayon::prelude::*;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
            confine_to_root: true,
            limits: LoadLimits::default(),
            disk_cache: None,
        }
    }
}

impl SessionOptions {
    /// Options for a one-shot caller (the CLI): nothing outlives the request anyway.
    pub fn one_shot() -> Self {
        SessionOptions { cache_bytes: 0, confine_to_root: false, limits: LoadLimits::default(), disk_cache: None }
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

/// Identity of a file's contents as far as caching goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileId {
    path: PathBuf,
    identity: FileIdentity,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum CacheKey {
    Response(String),
    Analysis(FileId),
    Trace(FileId),
    /// A PyTorch trace read for the PyTorch views (`crate::pytorch`) and the HTA tools
    /// (`crate::hta`), from one load of the file.
    PyTorch(FileId),
    /// A value another crate keeps under the session's bound ([`Session::keep`]).
    Kept(String),
}

enum Cached {
    Response(Arc<Rendered>),
    Analysis(Arc<HostAnalysis>),
    Trace(Arc<HostTraceData>),
    PyTorch(Arc<PytorchFile>),
    /// See [`Session::keep`]: any value, with the bytes it holds.
    Kept(Arc<dyn std::any::Any + Send + Sync>, usize),
}

/// One PyTorch trace as both tool families read it: switching between a PyTorch view and an
/// HTA tool on a run answers from memory instead of reading a multi-GB file again.
struct PytorchFile {
    parsed: Arc<oxprof_pytorch::Parsed>,
    hta: Arc<HtaRank>,
}

/// One rank as the HTA tools read it, from one load with the PyTorch parse.
pub struct HtaRank {
    /// HTA's rows, rank `-1` when the trace names none (the caller numbers those); read
    /// again only by a selection whose step filter differs from `parts`'.
    pub trace: oxprof_pytorch::hta::trace::RankTrace,
    /// What both HTA tools derive from this rank alone, filtered as the rank's own steps say.
    pub parts: oxprof_pytorch::hta::parts::RankParts,
}

impl Weighted for Cached {
    fn weight(&self) -> usize {
        match self {
            Cached::Response(r) => r.body.len() + r.notes.iter().map(String::len).sum::<usize>() + 64,
            Cached::Analysis(a) => analysis_bytes(a),
            Cached::Trace(t) => t.heap_bytes(),
            Cached::PyTorch(p) => p.parsed.heap_bytes() + p.hta.trace.heap_bytes() + p.hta.parts.heap_bytes(),
            Cached::Kept(_, bytes) => *bytes,
        }
    }
}

/// An OpStats analysis' size: its JSON size, a close proxy for its heap size.
fn analysis_bytes(analysis: &HostAnalysis) -> usize {
    /// Counts bytes written and keeps none.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing plain data into a counter cannot fail; a failure would only
    // undercharge this entry.
    let _ = serde_json::to_writer(&mut count, &analysis.op_stats);
    count.0 + analysis.advice.iter().map(String::len).sum::<usize>() + 256
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
    /// PyTorch parses found.
    pub pytorch_found: u64,
    /// HTA rank parts computed again for a selection whose step filter differs from the
    /// rank's own (the parts computed with each parse are not counted).
    pub hta_parts_recomputed: u64,
}

/// At most this many requests decode profiles at once (each decode is parallel inside):
/// more would not finish sooner on a machine's cores, and each holds a profile's worth
/// of memory, so a crowd of requests for hostile files cannot add up.
fn max_concurrent_loads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8)
}

/// A counting gate for [`Session::admit`].
struct Gate {
    free: std::sync::Mutex<usize>,
    opened: std::sync::Condvar,
}

/// A request's turn to decode profiles; the next request's when dropped.
pub struct Admission<'s> {
    gate: &'s Gate,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        *self.gate.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
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
            gate: Gate { free: std::sync::Mutex::new(max_concurrent_loads()), opened: std::sync::Condvar::new() },
            cache: FlightCache::new(options.cache_bytes),
            counts: Default::default(),
            accounts: Default::default(),
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

    fn count(&self, key: &CacheKey, computed: bool) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        match (key, computed) {
            (CacheKey::Analysis(_), true) => counts.analyses_computed += 1,
            (CacheKey::Analysis(_), false) => counts.analyses_found += 1,
            (CacheKey::Trace(_), true) => counts.traces_computed += 1,
            (CacheKey::Trace(_), false) => counts.traces_found += 1,
            (CacheKey::PyTorch(_), true) => counts.pytorch_computed += 1,
            (CacheKey::PyTorch(_), false) => counts.pytorch_found += 1,
            (CacheKey::Response(_) | CacheKey::Kept(_), _) => {}
        }
    }

    /// Loads one host's file within the session's input budgets, decoding the lines of the
    /// planes `lines_of` accepts.
    pub fn load(&self, file: &HostFile, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, ApiError> {
        Ok(self.store.load(&file.path, &self.limits, lines_of)?)
    }

    /// The persistent-cache slot of what `kind` computes from `file` (with `extra` inputs).
    pub(crate) fn persisted<'s>(&'s self, file: &'s HostFile, kind: &str, extra: &str) -> Persisted<'s> {
        Persisted::new(self.disk_cache.as_deref(), self.store(), &file.path, kind, extra)
    }

    /// Waits for this request's turn to decode profiles (see [`max_concurrent_loads`]).
    /// Call it on the request's thread around pure computation only, never while waiting
    /// for a flight: a waiting holder would keep the owner of that flight from its turn.
    pub fn admit(&self) -> Admission<'_> {
        let mut free = self.gate.free.lock().unwrap_or_else(|p| p.into_inner());
        while *free == 0 {
            debug_assert_off_pool();
            free = self.gate.opened.wait(free).unwrap_or_else(|p| p.into_inner());
        }
        *free -= 1;
        Admission { gate: &self.gate }
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

    /// Whether the session has a persistent cache (`--cache-dir`; not with `--no-cache`).
    pub(crate) fn has_disk_cache(&self) -> bool {
        self.disk_cache.is_some()
    }

    /// Whether `file`'s trace data (model + index) is in memory now (never computes or waits).
    pub(crate) fn has_trace(&self, file: &HostFile) -> bool {
        self.trace_in_memory(file).is_some()
    }

    /// `file`'s trace data (model, grouping, index) if it is in memory now, for the file as
    /// it is now (never computes or waits).
    fn trace_in_memory(&self, file: &HostFile) -> Option<Arc<HostTraceData>> {
        let identity = self.identity(&file.path)?;
        match &*self.cache.peek(&CacheKey::Trace(FileId { path: file.path.clone(), identity }))? {
            Cached::Trace(trace) => Some(trace.clone()),
            _ => None,
        }
    }

    /// Counts a trace view answered from the persistent cache.
    pub(crate) fn count_trace_view_from_disk(&self) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).trace_views_from_disk += 1;
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

    /// `file`'s OpStats analysis from `space`, its model the caller already decoded (with
    /// every line), kept like [`Session::host_analyses`]' so the tools that follow find it
    /// instead of decoding the file a second time (`oxprof export` builds the model tables
    /// and the tool tables from one decode).
    pub fn host_analysis_of_decoded(&self, file: &HostFile, space: &XSpace) -> Result<Arc<HostAnalysis>, ApiError> {
        let entries = self.file_entries(&[file], false, CacheKey::Analysis, |file| {
            let analysis = oxprof_xprof::op_stats::convert::xspace_to_op_stats(space);
            self.persisted(file, persist::ANALYSIS_ENTRY, "").write(|| persist::encode_analysis(&analysis));
            Ok(Cached::Analysis(Arc::new(analysis)))
        })?;
        match entries.first().map(|e| &**e) {
            Some(Cached::Analysis(a)) => Ok(a.clone()),
            _ => Err(ApiError::Panicked),
        }
    }

    /// Each host's OpStats analysis (loaded and converted once per file and kept).
    pub fn host_analyses(&self, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<HostAnalysis>>, ApiError> {
        let entries = self.file_entries(files, refresh, CacheKey::Analysis, |file| {
            let persisted = self.persisted(file, persist::ANALYSIS_ENTRY, "");
            if let Some(analysis) = persisted.read().and_then(|bytes| persist::decode_analysis(&bytes)) {
                self.counts.lock().unwrap_or_else(|p| p.into_inner()).analyses_from_disk += 1;
                return Ok(Cached::Analysis(Arc::new(analysis)));
            }
            if let Some(trace) = self.trace_in_memory(file) {
                // The trace viewer's model and grouping are the ones OpStats needs: no second
                // decode, and no second model beside the one the cache holds.
                self.counts.lock().unwrap_or_else(|p| p.into_inner()).analyses_from_trace += 1;
                let analysis = oxprof_xprof::op_stats::convert::xspace_to_op_stats_grouped(&trace.space, &trace.groups);
                persisted.write(|| persist::encode_analysis(&analysis));
                return Ok(Cached::Analysis(Arc::new(analysis)));
            }
            let space = self.load(file, &|_| true)?;
            let analysis = oxprof_xprof::op_stats::convert::xspace_to_op_stats(&space);
            if files.len() == 1 {
                // Unmapping ~100 MB of tables takes a while: not on the request's path.
                rayon::spawn(move || drop(space));
            } else {
                // The next host is decoded next: its model must not meet this one in memory.
                drop(space);
            }
            persisted.write(|| persist::encode_analysis(&analysis));
            Ok(Cached::Analysis(Arc::new(analysis)))
        })?;
        entries
            .into_iter()
            .map(|e| match &*e {
                Cached::Analysis(a) => Ok(a.clone()),
                _ => Err(ApiError::Panicked),
            })
            .collect()
    }

    /// Each host's decoded model, grouping and trace index (built once per file and kept).
    pub fn host_traces(&self, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<HostTraceData>>, ApiError> {
        let entries = self.file_entries(files, refresh, CacheKey::Trace, |file| {
            Ok(Cached::Trace(Arc::new(crate::trace::load_host_with(self, file)?)))
        })?;
        entries
            .into_iter()
            .map(|e| match &*e {
                Cached::Trace(t) => Ok(t.clone()),
                _ => Err(ApiError::Panicked),
            })
            .collect()
    }

    /// Each host's PyTorch trace as the PyTorch views read it (parsed once per file, with
    /// HTA's rows, and kept, so every view after the first answers without reading the file).
    pub fn host_pytorch(
        &self,
        files: &[&HostFile],
        refresh: bool,
    ) -> Result<Vec<Arc<oxprof_pytorch::Parsed>>, ApiError> {
        Ok(self.pytorch_files(files, refresh)?.into_iter().map(|f| f.parsed.clone()).collect())
    }

    /// Each host's events as HTA holds them (rank −1 when the trace names none) and what
    /// the HTA tools derive from them, read with [`Session::host_pytorch`]'s parse from the
    /// same load and kept.
    pub fn host_hta(&self, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<HtaRank>>, ApiError> {
        Ok(self.pytorch_files(files, refresh)?.into_iter().map(|f| f.hta.clone()).collect())
    }

    /// Counts HTA rank parts computed for a request (see [`FileCounts::hta_parts_recomputed`]).
    pub(crate) fn count_hta_parts_recomputed(&self, n: u64) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).hta_parts_recomputed += n;
    }

    fn pytorch_files(&self, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<PytorchFile>>, ApiError> {
        let entries = self.file_entries(files, refresh, CacheKey::PyTorch, |file| {
            let space = self.load(file, &|_| true)?;
            // HTA's rows and what its tools derive from them, beside the PyTorch parse.
            let (parsed, hta) = rayon::join(
                || oxprof_pytorch::parse(&space),
                || {
                    let trace = oxprof_pytorch::hta::trace::RankTrace::from_space(&space, &file.host, -1);
                    let parts = oxprof_pytorch::hta::parts::RankParts::of_rank(&trace);
                    Arc::new(HtaRank { trace, parts })
                },
            );
            // Unmapping the model takes a while: not on the request's path.
            rayon::spawn(move || drop(space));
            Ok(Cached::PyTorch(Arc::new(PytorchFile { parsed: Arc::new(parsed), hta })))
        })?;
        entries
            .into_iter()
            .map(|e| match &*e {
                Cached::PyTorch(p) => Ok(p.clone()),
                _ => Err(ApiError::Panicked),
            })
            .collect()
    }

    /// The entries of several files, in order: hits at once; the flights this call owns
    /// computed in parallel on the pool (they wait for nothing); then the flights other
    /// requests own waited for on this thread. A file whose metadata cannot be read is
    /// computed without caching (its load reports why).
    fn file_entries(
        &self,
        files: &[&HostFile],
        refresh: bool,
        key_of: fn(FileId) -> CacheKey,
        compute: impl Fn(&HostFile) -> Result<Cached, ApiError> + Sync,
    ) -> Result<Vec<Arc<Cached>>, ApiError> {
        let mut found: Vec<Option<Result<Arc<Cached>, SharedError>>> = Vec::with_capacity(files.len());
        let mut waiters: Vec<(usize, Waiter)> = Vec::new();
        let mut mine: Vec<(usize, Option<Claim<'_>>)> = Vec::new();
        let mut sizes: Vec<u64> = vec![0; files.len()];
        for (i, file) in files.iter().enumerate() {
            found.push(None);
            let Some(identity) = self.identity(&file.path) else {
                mine.push((i, None));
                continue;
            };
            sizes[i] = identity.size;
            let id = FileId { path: file.path.clone(), identity };
            let key = key_of(id);
            let lookup = self.cache.lookup(&key, refresh);
            self.count(&key, matches!(lookup, Lookup::Compute(_)));
            match lookup {
                Lookup::Hit(entry) => found[i] = Some(Ok(entry)),
                Lookup::Wait(waiter) => waiters.push((i, waiter)),
                Lookup::Compute(claim) => mine.push((i, Some(claim))),
            }
        }
        // Our flights are computed under an admission, released before waiting for others'.
        let admission = (!mine.is_empty()).then(|| self.admit());
        let mut computed: Vec<(usize, Result<Arc<Cached>, SharedError>)> = Vec::with_capacity(mine.len());
        for batch in side_by_side(mine, |&(i, _)| sizes[i]) {
            computed.par_extend(batch.into_par_iter().map(|(i, claim)| {
                let result = catch_unwind(AssertUnwindSafe(|| compute(files[i])))
                    .unwrap_or(Err(ApiError::Panicked))
                    .map_err(shared);
                match claim {
                    Some(claim) => (i, claim.fulfil(result)),
                    None => (i, result.map(Arc::new)),
                }
            }));
        }
        drop(admission);
        for (i, result) in computed {
            found[i] = Some(result);
        }
        for (i, waiter) in waiters {
            debug_assert_off_pool();
            found[i] = Some(waiter.wait());
        }
        found.into_iter().map(|r| r.unwrap_or(Err(shared(ApiError::Panicked))).map_err(ApiError::from)).collect()
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
    use super::side_by_side;

    #[test]
    fn hosts_run_side_by_side_only_within_the_largest_file() {
        // Sizes in MB: two large hosts go alone; small ones share a batch up to the largest.
        let batches = side_by_side(vec![170, 160, 40, 50, 60, 100, 5], |&s| s);
        assert_eq!(batches, vec![vec![170], vec![160], vec![40, 50, 60], vec![100, 5]]);
        assert_eq!(side_by_side(vec![10, 10, 10], |&s| s), vec![vec![10], vec![10], vec![10]]);
        assert!(side_by_side(Vec::<u64>::new(), |&s| s).is_empty());
    }
}
