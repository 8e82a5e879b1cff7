//! The persistent analysis cache (`oxprof-diskcache`) as the CLI opens it: the same
//! directory (`cache_dir`, else `$OXPROF_CACHE_DIR`, else the platform cache directory),
//! the same bound (4 GiB), off with `persistent_cache=False` (the CLI's `--no-cache`); and
//! its counters for Python (`Profile.cache_info()`).

use oxprof_api::DiskCache;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Default bound of the cache directory, in bytes (the CLI's `--cache-dir-mb 4096`).
pub(crate) const DEFAULT_CACHE_DIR_BYTES: u64 = 4096 << 20;

/// The cache asked for, or `None` when turned off; a cache that cannot be opened is also
/// `None`, with the warning the CLI prints (answers do not need it).
pub(crate) fn open(enabled: bool, dir: Option<PathBuf>, max_bytes: u64) -> (Option<Arc<DiskCache>>, Option<String>) {
    if !enabled {
        return (None, None);
    }
    let Some(root) = dir.or_else(DiskCache::default_root) else { return (None, None) };
    match DiskCache::open(&root, max_bytes) {
        Ok(cache) => (Some(Arc::new(cache)), None),
        Err(e) => (None, Some(e.to_string())),
    }
}

/// `{"dir", "hits", "misses", "rejected", "written", "evicted", "entries", "bytes"}`: where
/// the cache is, what this handle did, and what the directory holds.
pub(crate) fn info<'py>(py: Python<'py>, cache: &DiskCache) -> PyResult<Bound<'py, PyDict>> {
    let usage = py.detach(|| cache.usage());
    let counters = cache.counters();
    let dict = PyDict::new(py);
    dict.set_item("dir", cache.dir())?;
    for (name, counter) in [
        ("hits", &counters.hits),
        ("misses", &counters.misses),
        ("rejected", &counters.rejected),
        ("written", &counters.written),
        ("evicted", &counters.evicted),
    ] {
        dict.set_item(name, counter.load(Ordering::Relaxed))?;
    }
    dict.set_item("entries", usage.entries)?;
    dict.set_item("bytes", usage.bytes)?;
    Ok(dict)
}
