//! [`RemoteStore`]: a logdir in an object store as a [`ProfileStore`].
//!
//! * **Listing:** one prefixed listing (paginated by the store) per discovery; runs and
//!   hosts come from the keys ([`crate::layout`]). The session's catalog decides how often
//!   to rediscover (its rescan throttle), as for local logdirs.
//! * **Stat:** from the latest listing or HEAD while younger than [`STAT_FRESH`], else a
//!   new HEAD: a replaced object shows a new ETag, so caches keyed by it reload.
//! * **Reading:** a range is fetched as parallel ranged GETs, each conditional on the ETag
//!   the read started with; a replaced object fails the read ([`LoadError::FileChanged`])
//!   rather than mixing two versions. Whole objects go through the on-disk cache, keyed by
//!   URL, size and ETag (`--cache-dir`, bounded, least recently used out first).

use crate::connect::{Connection, RemoteOptions, connect};
use crate::location::Location;
use crate::runtime::wait;
use crate::{StoreError, layout};
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as Key;
use object_store::{GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreExt};
use oxprof_diskcache::{DiskCache, FileIdentity};
use oxprof_format::formats::format_of_name;
use oxprof_format::{Discovery, DiscoveryError, FileStat, HostFile, LoadError, ProfileStore, Run};
use std::collections::HashMap;
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
/// Most objects one listing reads (a budget: a bucket of millions is not a logdir).
const MAX_LISTED: usize = 2_000_000;
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
    stats: Mutex<HashMap<String, (Instant, FileStat)>>,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore").field("root", &self.at.root).finish_non_exhaustive()
    }
}

fn stat_of(meta: &ObjectMeta) -> FileStat {
    let modified_ns = meta.last_modified.timestamp_nanos_opt().map_or(0, |ns| ns.max(0) as u64);
    FileStat { size: meta.size, modified_ns, etag: meta.e_tag.clone() }
}

/// The store error as the I/O error the seam's errors carry (they name the file).
fn io_error(e: StoreError, _url: &str) -> std::io::Error {
    e.into_io()
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
            path: file.to_path_buf(),
            cause: std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("not under {}", self.at.root)),
        })
    }

    fn remember(&self, key: &str, stat: FileStat) {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).insert(key.to_string(), (Instant::now(), stat));
    }

    fn forget(&self, key: &str) {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    /// Every object under `prefix`, in one paginated listing.
    pub fn list(&self, prefix: &str) -> Result<Vec<ObjectMeta>, StoreError> {
        let store = self.store.clone();
        let key = (!prefix.is_empty()).then(|| Key::from(prefix));
        let listed = wait(async move {
            let mut stream = store.list(key.as_ref());
            let mut out = Vec::new();
            while let Some(meta) = stream.next().await {
                out.push(meta?);
                if out.len() > MAX_LISTED {
                    break;
                }
            }
            Ok::<_, object_store::Error>(out)
        });
        let url = self.at.name_of(prefix);
        let listed = listed.map_err(|e| self.error(&url, e))?;
        if listed.len() > MAX_LISTED {
            return Err(StoreError::Other {
                url,
                cause: format!("more than {MAX_LISTED} objects under this prefix; name a narrower logdir"),
            });
        }
        Ok(listed)
    }

    fn head(&self, key: &str) -> Result<FileStat, StoreError> {
        let store = self.store.clone();
        let location = Key::from(key);
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
        let chunk_bytes = tuned("OXPROF_OBJSTORE_CHUNK_MB", CHUNK_BYTES >> 20, 1024) << 20;
        let parallel = tuned("OXPROF_OBJSTORE_PARALLEL_GETS", PARALLEL_GETS as u64, 64) as usize;
        let chunks: Vec<Range<u64>> = (range.start..range.end)
            .step_by(chunk_bytes as usize)
            .map(|start| start..(start + chunk_bytes).min(range.end))
            .collect();
        let store = self.store.clone();
        let location = Key::from(key);
        let etag = stat.etag.clone();
        let total = (range.end - range.start) as usize;
        let range_in_task = range.clone();
        let fetched = wait(async move {
            let mut out = Vec::with_capacity(total);
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
                    Ok(Some(part)) => out.extend_from_slice(&part),
                    Ok(None) => return Ok(out),
                    // A plain HTTP server without range requests: the whole object, once.
                    Err(object_store::Error::NotSupported { .. }) if out.is_empty() => break,
                    Err(e) => return Err(e),
                }
            }
            drop(parts);
            let options = GetOptions { if_match: etag, ..GetOptions::default() };
            let whole = store.get_opts(&location, options).await?.bytes().await?;
            let end = (range_in_task.end as usize).min(whole.len());
            Ok::<_, object_store::Error>(whole[(range_in_task.start as usize).min(end)..end].to_vec())
        });
        let bytes = fetched.map_err(|e| self.error(&self.at.name_of(key), e))?;
        if bytes.len() != total {
            // Shorter than its stated size: replaced by a smaller object mid-read.
            return Err(StoreError::Changed { url: self.at.name_of(key) });
        }
        Ok(bytes)
    }

    fn cache_key(&self, key: &str, stat: &FileStat) -> Option<String> {
        let etag = stat.etag.clone()?;
        let identity = FileIdentity { size: stat.size, modified_ns: stat.modified_ns, etag: Some(etag), ends_hash: 0 };
        Some(oxprof_diskcache::entry_key(OBJECT_ENTRY, &identity, &self.at.name_of(key)))
    }
}

impl ProfileStore for RemoteStore {
    fn root(&self) -> &Path {
        &self.root
    }

    fn discover(&self, at: Option<&Path>) -> Result<Discovery, DiscoveryError> {
        let at = at.unwrap_or(&self.root);
        let name = at.to_str().unwrap_or_default();
        let fail = |e: StoreError| DiscoveryError::Io { path: at.to_path_buf(), cause: io_error(e, name) };
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
        self.fresh_stat(&key).map_err(|e| LoadError::Io { path: file.to_path_buf(), cause: io_error(e, &url) })
    }

    fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
        let key = self.key(file)?;
        let url = file.to_string_lossy();
        let fail = |e: StoreError| match e {
            StoreError::Changed { .. } => LoadError::FileChanged { path: file.to_path_buf() },
            e => LoadError::Io { path: file.to_path_buf(), cause: io_error(e, &url) },
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
