//! [`RemoteStore`]: a logdir in an object store as a [`ProfileStore`].
//!
//! * **Listing:** one prefixed listing per discovery (paginated; with
//!   `OXPROF_OBJSTORE_PARALLEL_LIST=1` over key ranges in parallel; a WebDAV server's
//!   directory by directory); runs and hosts come from the keys ([`crate::layout`]). The session's catalog decides how often
//!   to rediscover: for a remote root, at most once per its 2 s rescan interval, however
//!   many `/runs` calls come (`Catalog::refreshed`).
//! * **Stat:** from the latest listing or HEAD while younger than [`STAT_FRESH`], else a
//!   new HEAD: a replaced object shows a new ETag, so caches keyed by it reload.
//! * **Reading:** a range is fetched as parallel ranged GETs, each conditional on the ETag
//!   the read started with, handed on in order as they complete (a gzip object inflates
//!   while the rest downloads); a replaced object fails the read ([`LoadError::FileChanged`])
//!   rather than mixing two versions. Whole objects go through the on-disk cache, keyed by
//!   URL, size and ETag (`--cache-dir`, bounded, least recently used out first).

use crate::connect::{Connection, RemoteOptions, connect};
use crate::limits::{MAX_DEPTH_VAR, MAX_LIST_SECONDS_VAR, MAX_LISTED_VAR};
use crate::location::Location;
use crate::runtime::{spawn, wait};
use crate::transport::ObjectBytes;
use crate::{StoreError, StoreLimits, layout};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};
use oxprof_diskcache::{DiskCache, FileIdentity};
use oxprof_format::formats::SNIFF_BYTES;
use oxprof_format::formats::format_of_name;
use oxprof_format::{
    Discovery, DiscoveryError, FileStat, HostFile, Limit, LimitExceeded, LoadError, LoadLimits, ProfileStore, Run,
    XSpace,
};
use std::collections::HashMap;
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a listed or HEAD-ed object's size and ETag are trusted without asking again:
/// the catalog's rescan throttle, so one refresh costs one listing, not a HEAD per host.
pub const STAT_FRESH: Duration = Duration::from_secs(2);
/// Bytes per ranged GET (`OXPROF_OBJSTORE_CHUNK_MB` overrides).
const CHUNK_BYTES: u64 = 8 << 20;
/// Ranged GETs in flight for one read (`OXPROF_OBJSTORE_PARALLEL_GETS` overrides): a
/// distant cloud store needs several streams to fill a link, a local server few.
const PARALLEL_GETS: usize = 8;

/// A tuning override from the environment, within `1..=max`.
fn tuned(name: &str, default: u64, max: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).filter(|v| (1..=max).contains(v)).unwrap_or(default)
}
/// Largest object kept in the on-disk cache.
const MAX_CACHED_OBJECT: u64 = 4 << 30;
/// The disk cache's entry kind for whole objects.
const OBJECT_ENTRY: &str = "object";

/// A logdir (a prefix, a run directory or one object) in an object store.
pub struct RemoteStore {
    at: Location,
    root: PathBuf,
    store: Arc<dyn ObjectStore>,
    credentials: String,
    disk_cache: Option<Arc<DiskCache>>,
    limits: StoreLimits,
    stats: Mutex<HashMap<String, (Instant, FileStat)>>,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore").field("root", &crate::redact(&self.at.root)).finish_non_exhaustive()
    }
}

fn stat_of(meta: &ObjectMeta) -> FileStat {
    let modified_ns = meta.last_modified.timestamp_nanos_opt().map_or(0, |ns| ns.max(0) as u64);
    FileStat { size: meta.size, modified_ns, etag: meta.e_tag.clone(), ..FileStat::default() }
}

/// The object at `key` as listed (its name byte for byte: a `%` in it is not encoded again).
fn raw_key(key: &str) -> Key {
    Key::parse(key).unwrap_or_else(|_| Key::from(key))
}

/// The store error as the I/O error the seam's errors carry (they name the file).
fn io_error(e: StoreError, _url: &str) -> std::io::Error {
    e.into_io()
}

/// A file's name as errors show it: its URL without secrets ([`crate::redact`]).
fn shown(file: &Path) -> PathBuf {
    PathBuf::from(crate::redact(&file.to_string_lossy()).into_owned())
}

/// Why a listing stopped short of the whole prefix.
enum ListFailure {
    Store(object_store::Error),
    TooMany,
    TooDeep,
    TooSlow,
}

impl From<object_store::Error> for ListFailure {
    fn from(e: object_store::Error) -> Self {
        ListFailure::Store(e)
    }
}

impl RemoteStore {
    /// A store over the logdir at `url` (`s3://…`, `gs://…`, `az://…`, `http(s)://…`). Finds
    /// credentials but sends no request yet.
    pub fn open(url: &str, options: &RemoteOptions) -> Result<RemoteStore, StoreError> {
        let at = Location::parse(url)?;
        let Connection { store, credentials } = connect(&at, options)?;
        Ok(RemoteStore {
            root: PathBuf::from(&at.root),
            at,
            store,
            credentials,
            disk_cache: options.disk_cache.clone(),
            limits: options.limits.clone(),
            stats: Mutex::new(HashMap::new()),
        })
    }

    /// Where the logdir is.
    pub fn location(&self) -> &Location {
        &self.at
    }

    fn error(&self, url: &str, e: object_store::Error) -> StoreError {
        StoreError::from_object_store(url, &self.credentials, e)
    }

    fn key(&self, file: &Path) -> Result<String, LoadError> {
        let name = file.to_str().unwrap_or_default();
        self.at.key_of(name).ok_or_else(|| LoadError::Io {
            path: shown(file),
            cause: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("not under {}", crate::redact(&self.at.root)),
            ),
        })
    }

    fn remember(&self, key: &str, stat: FileStat) {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), (Instant::now(), stat));
    }

    fn forget(&self, key: &str) {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Every object under `prefix`, in one paginated listing (a WebDAV server's, directory
    /// by directory).
    pub fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        // Opt-in: on a local server (CPU-bound, 2 cores) the extra requests cost more than
        // the parallel round trips save; a distant store is latency-bound (README).
        self.list_as(prefix, std::env::var_os("OXPROF_OBJSTORE_PARALLEL_LIST").is_some())
    }

    /// [`RemoteStore::list`], over key ranges in parallel when `by_ranges` (S3, GCS, Azure;
    /// see `list_key_ranges`), in key order either way.
    pub fn list_as(&self, prefix: &str, by_ranges: bool) -> Result<Vec<ObjectMeta>, StoreError> {
        let store = self.store.clone();
        let key = (!prefix.is_empty()).then(|| Key::from(prefix));
        let by_directory = self.at.cloud == crate::Cloud::Http;
        let (max_listed, max_depth) = (self.limits.max_listed, self.limits.max_depth);
        let max_seconds = self.limits.max_list_seconds;
        let listing = async move {
            if by_directory {
                return walk_directories(store, key, max_listed, max_depth).await;
            }
            if by_ranges {
                return list_key_ranges(store, key, max_listed).await;
            }
            let mut stream = store.list(key.as_ref());
            let mut out = Vec::new();
            while let Some(meta) = stream.next().await {
                out.push(meta?);
                if out.len() > max_listed {
                    return Err(ListFailure::TooMany);
                }
            }
            Ok(out)
        };
        // Dropping the listing at the deadline cancels its requests in flight.
        let listed = wait(async move {
            tokio::time::timeout(Duration::from_secs(max_seconds), listing).await.unwrap_or(Err(ListFailure::TooSlow))
        });
        let url = self.at.name_of(prefix);
        match listed {
            Ok(listed) if listed.len() <= max_listed => Ok(listed),
            Ok(_) | Err(ListFailure::TooMany) => Err(StoreError::Limit {
                url,
                what: format!(
                    "more than {max_listed} entries under this prefix; name a narrower logdir, or raise {MAX_LISTED_VAR}"
                ),
            }),
            Err(ListFailure::TooDeep) => Err(StoreError::Limit {
                url,
                what: format!(
                    "directories nested more than {max_depth} levels deep under this logdir; name a deeper \
                     directory, or raise {MAX_DEPTH_VAR}"
                ),
            }),
            Err(ListFailure::TooSlow) => Err(StoreError::Limit {
                url,
                what: format!(
                    "listing took more than {max_seconds} s (a WebDAV walk lists each directory in turn); \
                     name a narrower logdir, or raise {MAX_LIST_SECONDS_VAR}"
                ),
            }),
            Err(ListFailure::Store(e)) => Err(self.error(&url, e)),
        }
    }

    fn head(&self, key: &str) -> Result<FileStat, StoreError> {
        let store = self.store.clone();
        let location = raw_key(key);
        let meta =
            wait(async move { store.head(&location).await }).map_err(|e| self.error(&self.at.name_of(key), e))?;
        let stat = stat_of(&meta);
        self.remember(key, stat.clone());
        Ok(stat)
    }

    fn fresh_stat(&self, key: &str) -> Result<FileStat, StoreError> {
        let known = self.stats.lock().unwrap_or_else(|p| p.into_inner()).get(key).cloned();
        match known {
            Some((at, stat)) if at.elapsed() < STAT_FRESH => Ok(stat),
            _ => self.head(key),
        }
    }

    /// Bytes `range` of the object at `key`, as of `stat`: parallel ranged GETs, each
    /// conditional on `stat`'s ETag.
    fn fetch(&self, key: &str, stat: &FileStat, range: Range<u64>) -> Result<Vec<u8>, StoreError> {
        let total = (range.end - range.start) as usize;
        let mut parts = self.stream(key, stat, range);
        // Grown as bytes arrive: a size a server stated is no reason to reserve memory.
        let mut bytes = Vec::with_capacity(total.min(CHUNK_BYTES as usize));
        parts.read_to_end(&mut bytes).map_err(|_| parts.take_error(&self.at.name_of(key)))?;
        if bytes.len() != total {
            // Shorter than its stated size: replaced by a smaller object mid-read.
            return Err(StoreError::Changed { url: self.at.name_of(key) });
        }
        Ok(bytes)
    }

    /// Bytes `range` of the object at `key` as a reader that yields them in order while
    /// later parts are still downloading (parallel ranged GETs, each conditional on
    /// `stat`'s ETag), so that a decoder can start on the first part.
    fn stream(&self, key: &str, stat: &FileStat, range: Range<u64>) -> Parts {
        let chunk_bytes = tuned("OXPROF_OBJSTORE_CHUNK_MB", CHUNK_BYTES >> 20, 1024) << 20;
        let parallel = tuned("OXPROF_OBJSTORE_PARALLEL_GETS", PARALLEL_GETS as u64, 64) as usize;
        let chunks: Vec<Range<u64>> = (range.start..range.end)
            .step_by(chunk_bytes as usize)
            .map(|start| start..(start + chunk_bytes).min(range.end))
            .collect();
        let store = self.store.clone();
        let location = raw_key(key);
        let etag = stat.etag.clone();
        // Unbounded: the whole object is kept by the reader anyway, and the I/O threads
        // never block on a slow decoder.
        let (tx, rx) = std::sync::mpsc::channel();
        spawn(async move {
            let mut sent = false;
            let mut parts = futures::stream::iter(chunks)
                .map(|chunk| {
                    let options = GetOptions {
                        range: Some(GetRange::Bounded(chunk)),
                        if_match: etag.clone(),
                        ..GetOptions::default()
                    };
                    let store = store.clone();
                    let location = location.clone();
                    async move { store.get_opts(&location, options).await?.bytes().await }
                })
                .buffered(parallel);
            loop {
                match parts.try_next().await {
                    Ok(Some(part)) => {
                        sent = true;
                        if tx.send(Ok(part)).is_err() {
                            return; // the reader gave up
                        }
                    }
                    Ok(None) => return,
                    // A plain HTTP server without range requests: the whole object, once.
                    Err(object_store::Error::NotSupported { .. }) if !sent => break,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
            drop(parts);
            // Read as it arrives and no further than the range's end, whatever length the
            // answer states or however long it goes on.
            let mut extensions = http::Extensions::new();
            extensions.insert(ObjectBytes(range.end));
            let options = GetOptions { if_match: etag, extensions, ..GetOptions::default() };
            let mut body = match store.get_opts(&location, options).await {
                Ok(whole) => whole.into_stream(),
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return;
                }
            };
            let mut at = 0u64;
            while at < range.end {
                let piece = match body.next().await {
                    Some(Ok(piece)) => piece,
                    Some(Err(e)) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                    None => return,
                };
                let (start, end) = (at, at + piece.len() as u64);
                at = end;
                let (from, to) = (range.start.max(start), range.end.min(end));
                if from < to && tx.send(Ok(piece.slice((from - start) as usize..(to - start) as usize))).is_err() {
                    return; // the reader gave up
                }
            }
        });
        Parts { parts: rx, current: bytes::Bytes::new(), error: None, credentials: self.credentials.clone() }
    }

    fn cache_key(&self, key: &str, stat: &FileStat) -> Option<String> {
        let etag = stat.etag.clone()?;
        let identity = FileIdentity {
            size: stat.size,
            modified_ns: stat.modified_ns,
            etag: Some(etag),
            ..FileIdentity::default()
        };
        Some(oxprof_diskcache::entry_key(OBJECT_ENTRY, &identity, &self.at.name_of(key)))
    }
}

/// An object's bytes in order as its ranged GETs complete (see [`RemoteStore::stream`]).
struct Parts {
    parts: std::sync::mpsc::Receiver<Result<bytes::Bytes, object_store::Error>>,
    current: bytes::Bytes,
    /// The store's error, kept whole for [`Parts::take_error`] (a reader passes on only an
    /// I/O error).
    error: Option<object_store::Error>,
    credentials: String,
}

impl Parts {
    /// The error that ended the stream, as a [`StoreError`] about `url`.
    fn take_error(&mut self, url: &str) -> StoreError {
        match self.error.take() {
            Some(e) => StoreError::from_object_store(url, &self.credentials, e),
            None => StoreError::Other { url: url.to_string(), cause: "the download stopped".into() },
        }
    }
}

impl Read for Parts {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            // A long wait for the next part lends this load's decode turn (see io_wait).
            match oxprof_format::io_wait::recv(&self.parts) {
                Ok(Ok(part)) => self.current = part,
                Ok(Err(e)) => {
                    let message = e.to_string();
                    self.error = Some(e);
                    return Err(std::io::Error::other(message));
                }
                Err(_) => return Ok(0), // every part delivered
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        bytes::Buf::advance(&mut self.current, n);
        Ok(n)
    }
}

/// Keys in one listing page (S3's and GCS's most).
const LIST_PAGE: usize = 1000;
/// Listing requests in flight.
const PARALLEL_LISTS: usize = 8;

/// Every object under `prefix` in key order, listed by several requests at once: a full
/// page from a key range splits what is left of the range at the next characters of its
/// last key (`…run_01000` → `(…run_01000, …run_02]`, `(…run_02, …run_03]`, …), and the
/// parts are listed concurrently (S3 and GCS `start-after`, Azure `startFrom`). One
/// paginated listing of 10,000 keys is ten round trips in a row; this is three rounds, but
/// about 2.5 times the pages (ranges that turn out full are split again), so it pays only
/// where round trips, not the server, are the cost (`OXPROF_OBJSTORE_PARALLEL_LIST=1`).
async fn list_key_ranges(
    store: Arc<dyn ObjectStore>,
    prefix: Option<Key>,
    max_listed: usize,
) -> Result<Vec<ObjectMeta>, ListFailure> {
    // (exclusive start, inclusive end) of each range still to list.
    let mut pending: Vec<(Option<String>, Option<String>)> = vec![(None, None)];
    let mut out = Vec::new();
    while !pending.is_empty() {
        if out.len() > max_listed {
            return Err(ListFailure::TooMany);
        }
        let pages: Vec<_> = futures::stream::iter(std::mem::take(&mut pending))
            .map(|(after, until)| {
                let store = store.clone();
                let prefix = prefix.clone();
                async move {
                    let mut listing = match &after {
                        Some(after) => store.list_with_offset(prefix.as_ref(), &raw_key(after)),
                        None => store.list(prefix.as_ref()),
                    };
                    let mut page = Vec::new();
                    let mut full = false;
                    while let Some(meta) = listing.next().await {
                        let meta = meta?;
                        // A server that ignores the offset repeats what came before it.
                        if after.as_deref().is_some_and(|after| meta.location.as_ref() <= after) {
                            continue;
                        }
                        if until.as_deref().is_some_and(|until| meta.location.as_ref() > until) {
                            break;
                        }
                        page.push(meta);
                        if page.len() == LIST_PAGE {
                            full = true;
                            break;
                        }
                    }
                    Ok::<_, object_store::Error>((page, full, until))
                }
            })
            .buffer_unordered(PARALLEL_LISTS)
            .try_collect()
            .await?;
        for (page, full, until) in pages {
            if full && let (Some(first), Some(last)) = (page.first(), page.last()) {
                pending.extend(split_after(first.location.as_ref(), last.location.as_ref(), until));
            }
            out.extend(page);
        }
    }
    out.sort_by(|a, b| a.location.cmp(&b.location));
    Ok(out)
}

/// What is left of a key range after a full page from `first` to `last`, cut into parts at
/// the character where the page's keys differ: the characters of `last`'s class (digits,
/// upper or lower case letters) above its own, then everything after them up to `until`.
fn split_after(first: &str, last: &str, until: Option<String>) -> Vec<(Option<String>, Option<String>)> {
    let at = first.bytes().zip(last.bytes()).take_while(|(a, b)| a == b).count();
    let whole = vec![(Some(last.to_string()), until.clone())];
    let Some(&c) = last.as_bytes().get(at) else { return whole };
    let class = match c {
        b'0'..=b'9' => b'0'..=b'9',
        b'A'..=b'Z' => b'A'..=b'Z',
        b'a'..=b'z' => b'a'..=b'z',
        _ => return whole,
    };
    let stem = &last[..at];
    // Bounds: `last`, then stem+d for each d above c in its class, then stem+(class end+1).
    let mut bounds: Vec<String> =
        (c + 1..=*class.end()).chain([class.end() + 1]).map(|d| format!("{stem}{}", d as char)).collect();
    // Past `until`, nothing is left to split.
    if let Some(until) = &until {
        bounds.retain(|b| b.as_str() < until.as_str());
    }
    let mut parts = Vec::with_capacity(bounds.len() + 1);
    let mut after = last.to_string();
    for bound in bounds {
        parts.push((Some(after), Some(bound.clone())));
        after = bound;
    }
    parts.push((Some(after), until));
    parts
}

/// PROPFINDs in flight during a walk.
const PARALLEL_PROPFINDS: usize = 8;

/// Every file under `prefix` on a WebDAV server, one `Depth: 1` PROPFIND per directory,
/// several at once. Servers refuse `Depth: infinity` by default (Apache's mod_dav, nginx,
/// WsgiDAV: it is a denial-of-service risk), which is what `object_store`'s recursive
/// listing sends. A hostile server cannot make it hold more than `max_listed` entries
/// (files and directories, counted as each answer arrives) or descend more than
/// `max_depth` levels; an answer's size is the transport's `max_list_bytes`. Entries that
/// are not inside the directory listed are not followed.
async fn walk_directories(
    store: Arc<dyn ObjectStore>,
    prefix: Option<Key>,
    max_listed: usize,
    max_depth: usize,
) -> Result<Vec<ObjectMeta>, ListFailure> {
    let mut out = Vec::new();
    let mut entries = 0usize;
    let mut level = vec![prefix];
    for depth in 0..=max_depth {
        if level.is_empty() {
            break;
        }
        if depth == max_depth {
            return Err(ListFailure::TooDeep);
        }
        let mut listings = futures::stream::iter(std::mem::take(&mut level))
            .map(|dir| {
                let store = store.clone();
                async move { store.list_with_delimiter(dir.as_ref()).await.map(|listing| (dir, listing)) }
            })
            .buffer_unordered(PARALLEL_PROPFINDS);
        while let Some(listed) = listings.next().await {
            let (dir, listing) = listed?;
            entries = entries.saturating_add(listing.objects.len() + listing.common_prefixes.len());
            if entries > max_listed {
                return Err(ListFailure::TooMany);
            }
            let inside = |key: &Key| {
                dir.as_ref().is_none_or(|dir| key.prefix_match(dir).is_some_and(|mut rest| rest.next().is_some()))
            };
            out.extend(listing.objects.into_iter().filter(|meta| inside(&meta.location)));
            level.extend(listing.common_prefixes.into_iter().filter(|key| inside(key)).map(Some));
        }
    }
    Ok(out)
}

impl ProfileStore for RemoteStore {
    fn root(&self) -> &Path {
        &self.root
    }

    fn discover(&self, at: Option<&Path>) -> Result<Discovery, DiscoveryError> {
        let at = at.unwrap_or(&self.root);
        let name = at.to_str().unwrap_or_default();
        let fail = |e: StoreError| DiscoveryError::Io { path: shown(at), cause: io_error(e, name) };
        let prefix = self.at.key_of(name).ok_or_else(|| {
            fail(StoreError::BadUrl { url: name.to_string(), reason: format!("not under {}", self.at.root) })
        })?;
        let file_name = prefix.rsplit('/').next().unwrap_or_default();
        let listed = if format_of_name(file_name).is_some() {
            Vec::new()
        } else {
            self.list(&prefix).map_err(|e| match (self.at.cloud, e) {
                // Plain web servers cannot list a directory: only WebDAV servers can.
                (crate::Cloud::Http, StoreError::Other { url, .. }) => fail(StoreError::Other {
                    url,
                    cause: "this HTTP server cannot list directories (WebDAV PROPFIND); name one profile file instead"
                        .into(),
                }),
                (_, e) => fail(e),
            })?
        };
        if listed.is_empty() {
            // One object named directly (or nothing there).
            self.head(&prefix).map_err(fail)?;
            let host = format_of_name(file_name).map_or(file_name, |(_, host)| host).to_string();
            let dir = name.rsplit_once('/').map_or(name, |(dir, _)| dir);
            let run = dir.rsplit('/').next().unwrap_or(dir).to_string();
            let hosts = vec![HostFile { host, path: at.to_path_buf() }];
            return Ok(Discovery {
                runs: vec![Run { name: run, dir: PathBuf::from(dir), hosts }],
                skipped: Vec::new(),
            });
        }
        let strip = if prefix.is_empty() { 0 } else { prefix.len() + 1 };
        let now = Instant::now();
        let mut stats = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        for meta in &listed {
            stats.insert(meta.location.to_string(), (now, stat_of(meta)));
        }
        drop(stats);
        let names = listed.iter().map(|m| m.location.as_ref().get(strip..).unwrap_or_default());
        layout::discover_names(name, names)
    }

    fn stat(&self, file: &Path) -> Result<FileStat, LoadError> {
        let key = self.key(file)?;
        let url = file.to_string_lossy();
        self.fresh_stat(&key).map_err(|e| LoadError::Io { path: shown(file), cause: io_error(e, &url) })
    }

    /// Decodes while the object downloads: parts come in order as their GETs complete,
    /// and a gzip object is inflated as they arrive — a gzip'd PyTorch trace imported as it
    /// inflates, too (XSpace protobuf and JSON decoders need the whole message, so plain
    /// objects are gathered first).
    fn load(&self, file: &Path, limits: &LoadLimits, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, LoadError> {
        let key = self.key(file)?;
        // The decoders name the file in their errors: without secrets.
        let named = shown(file);
        let url = file.to_string_lossy();
        let fail = |e: StoreError| match e {
            StoreError::Changed { .. } => LoadError::FileChanged { path: shown(file) },
            e => LoadError::Io { path: shown(file), cause: io_error(e, &url) },
        };
        let stat = self.fresh_stat(&key).map_err(fail)?;
        if stat.size > limits.max_profile_bytes {
            let exceeded =
                LimitExceeded { limit: Limit::ProfileBytes, allowed: limits.max_profile_bytes, at_least: stat.size };
            return Err(LoadError::LimitExceeded { path: shown(file), exceeded });
        }
        let cached = self
            .disk_cache
            .as_ref()
            .filter(|_| stat.size <= MAX_CACHED_OBJECT)
            .and_then(|cache| Some((cache, self.cache_key(&key, &stat)?)));
        if let Some((cache, entry)) = &cached
            && let Some(bytes) = cache.get(entry)
            && bytes.len() as u64 == stat.size
        {
            return oxprof_format::decode_bytes_lines_of(&named, &bytes, limits, lines_of);
        }
        if std::env::var_os("OXPROF_OBJSTORE_NO_OVERLAP").is_some() {
            // Download whole, then decode (benchmarks compare the two).
            let bytes = self.read_range(file, 0..stat.size)?;
            return oxprof_format::decode_bytes_lines_of(&named, &bytes, limits, lines_of);
        }
        let mut parts = self.stream(&key, &stat, 0..stat.size);
        let mut head = vec![0u8; SNIFF_BYTES.min(stat.size as usize)];
        let decoded =
            parts.read_exact(&mut head).map_err(|cause| LoadError::Io { path: shown(file), cause }).and_then(|()| {
                if cached.is_some() {
                    let (space, raw) =
                        oxprof_format::decode_stream_lines_of(&named, head, &mut parts, stat.size, limits, lines_of)?;
                    Ok((space, raw.len() as u64, Some(raw)))
                } else {
                    // Nothing keeps the bytes: a plain profile goes to a temporary file and is
                    // decoded from its mapping, as a local file is (not whole in memory
                    // beside its model: an executor's `oxprof pod partial` peaked at ~1.9x
                    // its host above the process's floor, against ~1.2x for a local file).
                    let (space, read) =
                        oxprof_format::decode_stream_spilled(&named, head, &mut parts, stat.size, limits, lines_of)?;
                    Ok((space, read, None))
                }
            });
        let (space, bytes_read, raw) = match decoded {
            Ok(done) => done,
            // A download error shows as the decoder's I/O or gzip error: report the store's.
            Err(_) if parts.error.is_some() => {
                self.forget(&key);
                return Err(fail(parts.take_error(&self.at.name_of(&key))));
            }
            Err(e) => return Err(e),
        };
        // Shorter than its stated size, or (on a server without ETags to make GETs
        // conditional) a different object by now: replaced mid-read.
        if bytes_read != stat.size || self.stat(file)? != stat {
            self.forget(&key);
            return Err(LoadError::FileChanged { path: shown(file) });
        }
        if let (Some((cache, entry)), Some(raw)) = (cached, raw) {
            // Best effort: a full disk changes no answer.
            let _ = cache.put(&entry, &raw);
        }
        Ok(space)
    }

    fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
        let key = self.key(file)?;
        let url = file.to_string_lossy();
        let fail = |e: StoreError| match e {
            StoreError::Changed { .. } => LoadError::FileChanged { path: shown(file) },
            e => LoadError::Io { path: shown(file), cause: io_error(e, &url) },
        };
        let stat = self.fresh_stat(&key).map_err(fail)?;
        let range = range.start.min(stat.size)..range.end.min(stat.size);
        let whole = range == (0..stat.size) && stat.size <= MAX_CACHED_OBJECT;
        let cached =
            self.disk_cache.as_ref().filter(|_| whole).and_then(|cache| Some((cache, self.cache_key(&key, &stat)?)));
        if let Some((cache, entry)) = &cached
            && let Some(bytes) = cache.get(entry)
            && bytes.len() as u64 == stat.size
        {
            return Ok(bytes);
        }
        let bytes = self.fetch(&key, &stat, range).map_err(|e| {
            self.forget(&key);
            fail(e)
        })?;
        if let Some((cache, entry)) = cached {
            // Best effort: a full disk changes no answer.
            let _ = cache.put(&entry, &bytes);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parts after a full page cover everything after its last key, each key in
    /// exactly one part.
    #[test]
    fn ranges_after_a_full_page_partition_the_rest() {
        let first = "p/run_00001/h.pb";
        let last = "p/run_01000/h.pb";
        let parts = split_after(first, last, None);
        assert_eq!(parts.first().unwrap(), &(Some(last.to_string()), Some("p/run_02".to_string())));
        assert_eq!(parts.last().unwrap(), &(Some("p/run_0:".to_string()), None));
        assert_eq!(parts.len(), 10);
        let owner = |key: &str| {
            parts
                .iter()
                .filter(|(after, until)| {
                    after.as_deref().is_none_or(|a| key > a) && until.as_deref().is_none_or(|u| key <= u)
                })
                .count()
        };
        for key in [
            "p/run_01001/h.pb",
            "p/run_02",
            "p/run_02000/h.pb",
            "p/run_09999/h.pb",
            "p/run_10000/h.pb",
            "q/x",
            "p/run_0A",
        ] {
            assert_eq!(owner(key), 1, "{key}");
        }
        // Bounded above: no part reaches past the bound.
        let bounded = split_after(first, last, Some("p/run_05".to_string()));
        assert_eq!(bounded.last().unwrap().1.as_deref(), Some("p/run_05"));
        assert!(bounded.iter().all(|(_, until)| until.as_deref().is_some_and(|u| u <= "p/run_05")));
        // Keys that differ at a character outside the classes: one part.
        assert_eq!(split_after("a/x-1", "a/x_1", None), vec![(Some("a/x_1".to_string()), None)]);
    }
}
