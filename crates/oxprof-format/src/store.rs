//! The profile-store seam: where runs and host files live. A store lists the runs and hosts
//! under a location, states a file (size, modification time, entity tag), reads a file
//! whole or a byte range of it, and loads a host file into the model through the format
//! seam. Sessions, the CLI and the server reach profiles only through a store, so an
//! object store (S3, GCS, Azure, HTTP) is one more implementation of [`ProfileStore`].
//!
//! [`LocalStore`] is the directory on this machine: discovery walks it and loading maps
//! files ([`crate::load`]). A host file's `path` is the store's name for the file: a file
//! system path here, an object key in a remote store.

use crate::discovery::{Discovery, DiscoveryError};
use crate::error::LoadError;
use crate::formats::{Detected, SNIFF_BYTES};
use oxprof_model::XSpace;
use oxprof_model::limits::{Limit, LimitExceeded, LoadLimits};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// What caches of results computed from a file are keyed by: a rewritten file differs in
/// at least one of these. On a local file, every write changes the status-change time
/// (`ctime`), which, unlike the modification time, no user can set back; a file replaced
/// by another (a rename over it, a copy) is another inode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the Unix epoch (0 when the store does not know it).
    pub modified_ns: u64,
    /// The store's version tag of the contents (an object store's ETag), if it has one.
    pub etag: Option<String>,
    /// Status-change time (`ctime`), ns since the Unix epoch (0 when the store does not
    /// know it: remote stores, non-Unix systems).
    pub changed_ns: u64,
    /// The device holding the file (0 when unknown).
    pub device: u64,
    /// The file's inode number on that device (0 when unknown).
    pub inode: u64,
}

/// Where profiles live: runs and hosts under a location, and their bytes.
pub trait ProfileStore: Send + Sync {
    /// The store's root as the user named it (a path or URL), for messages.
    fn root(&self) -> &Path;

    /// The root's directory on this machine, when the store is local (the server confines
    /// client-named directories to it); `None` for remote stores.
    fn local_root(&self) -> Option<&Path> {
        None
    }

    /// Runs and hosts under `at` (a log directory, a run directory or one file, in the
    /// store's names), or under the root when `at` is `None`.
    fn discover(&self, at: Option<&Path>) -> Result<Discovery, DiscoveryError>;

    /// Size, modification time and version tag of a file.
    fn stat(&self, file: &Path) -> Result<FileStat, LoadError>;

    /// Bytes `range` of a file (fewer when the file ends first).
    fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError>;

    /// Bytes of each of `ranges` of a file (each fewer when the file ends first), e.g. the
    /// blocks a cache key samples. The default reads them one by one; a local store opens
    /// the file once.
    fn read_ranges(&self, file: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, LoadError> {
        ranges.iter().map(|range| self.read_range(file, range.clone())).collect()
    }

    /// A file decoded into the model within `limits`, decoding the lines of only the planes
    /// `lines_of` accepts. The default reads the file whole (refusing it first if its size
    /// is over budget) and imports it through the format seam; local stores map it instead.
    fn load(&self, file: &Path, limits: &LoadLimits, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, LoadError> {
        let stat = self.stat(file)?;
        if stat.size > limits.max_profile_bytes {
            let exceeded =
                LimitExceeded { limit: Limit::ProfileBytes, allowed: limits.max_profile_bytes, at_least: stat.size };
            return Err(LoadError::LimitExceeded { path: file.to_path_buf(), exceeded });
        }
        let bytes = self.read_range(file, 0..stat.size)?;
        if self.stat(file)? != stat {
            return Err(LoadError::FileChanged { path: file.to_path_buf() });
        }
        crate::load::import_bytes(file, &bytes, limits, lines_of)
    }

    /// The format of a file, from its first bytes (or its name when they say nothing).
    fn detect(&self, file: &Path) -> Result<Detected, LoadError> {
        let head = self.read_range(file, 0..SNIFF_BYTES as u64)?;
        crate::load::detect_or_name(file, &head)
    }
}

/// A local file's [`FileStat`]: with its inode, device and status-change time on Unix.
fn local_stat(meta: &std::fs::Metadata) -> FileStat {
    let since_epoch = |t: std::io::Result<std::time::SystemTime>| {
        t.ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64)
    };
    let stat = FileStat { size: meta.len(), modified_ns: since_epoch(meta.modified()), ..FileStat::default() };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let changed_ns = u64::try_from(meta.ctime())
            .ok()
            .and_then(|s| s.checked_mul(1_000_000_000))
            .and_then(|ns| ns.checked_add(u64::try_from(meta.ctime_nsec()).ok()?))
            .unwrap_or(0);
        FileStat { changed_ns, device: meta.dev(), inode: meta.ino(), ..stat }
    }
    #[cfg(not(unix))]
    stat
}

/// A directory (or one file) on this machine.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    /// A store rooted at `root` (a log directory, a run directory or one profile file).
    pub fn new(root: impl Into<PathBuf>) -> LocalStore {
        LocalStore { root: root.into() }
    }
}

impl ProfileStore for LocalStore {
    fn root(&self) -> &Path {
        &self.root
    }

    fn local_root(&self) -> Option<&Path> {
        Some(&self.root)
    }

    fn discover(&self, at: Option<&Path>) -> Result<Discovery, DiscoveryError> {
        crate::discovery::discover(at.unwrap_or(&self.root))
    }

    fn stat(&self, file: &Path) -> Result<FileStat, LoadError> {
        let meta = std::fs::metadata(file).map_err(|cause| LoadError::Io { path: file.to_path_buf(), cause })?;
        Ok(local_stat(&meta))
    }

    fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
        Ok(self.read_ranges(file, std::slice::from_ref(&range))?.pop().unwrap_or_default())
    }

    fn read_ranges(&self, file: &Path, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>, LoadError> {
        let io = |cause| LoadError::Io { path: file.to_path_buf(), cause };
        let mut f = File::open(file).map_err(io)?;
        let size = f.metadata().map_err(io)?.len();
        ranges
            .iter()
            .map(|range| {
                f.seek(SeekFrom::Start(range.start)).map_err(io)?;
                let len = range.end.saturating_sub(range.start);
                // Sized up front: one read per range, not a growing buffer's several.
                let mut out = Vec::with_capacity(len.min(size.saturating_sub(range.start)) as usize);
                (&mut f).take(len).read_to_end(&mut out).map_err(io)?;
                Ok(out)
            })
            .collect()
    }

    fn load(&self, file: &Path, limits: &LoadLimits, lines_of: &dyn Fn(&str) -> bool) -> Result<XSpace, LoadError> {
        crate::load::load_xspace_with(file, limits, lines_of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// A store of files held in memory: exercises the trait's default `load`, as a remote
    /// store would use it.
    struct MemoryStore {
        root: PathBuf,
        files: Mutex<BTreeMap<PathBuf, (Vec<u8>, u64)>>,
    }

    impl ProfileStore for MemoryStore {
        fn root(&self) -> &Path {
            &self.root
        }
        fn discover(&self, _at: Option<&Path>) -> Result<Discovery, DiscoveryError> {
            Err(DiscoveryError::NoProfiles(self.root.clone()))
        }
        fn stat(&self, file: &Path) -> Result<FileStat, LoadError> {
            let files = self.files.lock().unwrap();
            let (bytes, version) = files.get(file).ok_or_else(|| LoadError::Io {
                path: file.to_path_buf(),
                cause: std::io::Error::from(std::io::ErrorKind::NotFound),
            })?;
            Ok(FileStat { size: bytes.len() as u64, etag: Some(format!("v{version}")), ..FileStat::default() })
        }
        fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
            let files = self.files.lock().unwrap();
            let (bytes, _) = &files[file];
            let end = (range.end as usize).min(bytes.len());
            Ok(bytes[(range.start as usize).min(end)..end].to_vec())
        }
    }

    fn tiny_space_bytes() -> Vec<u8> {
        oxprof_testkit::fixtures::one_op_profile()
    }

    #[test]
    fn a_store_without_files_on_disk_loads_through_the_format_seam() {
        let file = PathBuf::from("run/host.bin");
        let store = MemoryStore {
            root: PathBuf::from("mem"),
            files: Mutex::new(BTreeMap::from([(file.clone(), (tiny_space_bytes(), 1))])),
        };
        let space = store.load(&file, &LoadLimits::default(), &|_| true).unwrap();
        assert_eq!(space.planes.len(), 1);
        assert_eq!(store.detect(&file).unwrap().format, crate::Format::XSpace);
        assert_eq!(store.stat(&file).unwrap().etag.as_deref(), Some("v1"));
        let small = LoadLimits::default().with_max_profile_bytes(4);
        assert!(matches!(store.load(&file, &small, &|_| true), Err(LoadError::LimitExceeded { .. })));
    }

    #[test]
    fn the_local_store_states_reads_ranges_and_loads() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("plugins/profile/run1");
        std::fs::create_dir_all(&run).unwrap();
        let file = run.join("vm.xplane.pb");
        let bytes = tiny_space_bytes();
        std::fs::write(&file, &bytes).unwrap();
        let store = LocalStore::new(dir.path());
        let discovery = store.discover(None).unwrap();
        assert_eq!(discovery.runs[0].hosts[0].path, file);
        assert_eq!(store.stat(&file).unwrap().size, bytes.len() as u64);
        assert_eq!(store.read_range(&file, 2..6).unwrap(), bytes[2..6]);
        assert_eq!(store.read_range(&file, 0..1 << 20).unwrap(), bytes);
        assert_eq!(store.load(&file, &LoadLimits::default(), &|_| true).unwrap().planes.len(), 1);
        assert!(matches!(store.stat(&run.join("missing.xplane.pb")), Err(LoadError::Io { .. })));
    }

    /// A same-size edit with the modification time put back still changes the stat (its
    /// status-change time), and so does a file replaced by a copy with its times.
    #[cfg(unix)]
    #[test]
    fn a_rewrite_with_the_old_mtime_changes_the_stat() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("vm.xplane.pb");
        std::fs::write(&file, b"0123456789").unwrap();
        let store = LocalStore::new(dir.path());
        let before = store.stat(&file).unwrap();
        assert!(before.changed_ns > 0 && before.inode > 0, "{before:?}");
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        // Rewritten until the clock moves on (file systems with coarse timestamps).
        let mut after = before.clone();
        for _ in 0..1000 {
            let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
            std::os::unix::fs::FileExt::write_at(&f, b"X", 5).unwrap();
            f.set_modified(mtime).unwrap();
            drop(f);
            after = store.stat(&file).unwrap();
            if after != before {
                break;
            }
        }
        assert_eq!((after.size, after.modified_ns), (before.size, before.modified_ns), "size and mtime as before");
        assert_ne!(after.changed_ns, before.changed_ns, "the status-change time moved");
        // Another file in its place (a rename over it) is another inode.
        let other = dir.path().join("other");
        std::fs::write(&other, b"0123456789").unwrap();
        std::fs::File::options().write(true).open(&other).unwrap().set_modified(mtime).unwrap();
        std::fs::rename(&other, &file).unwrap();
        assert_ne!(store.stat(&file).unwrap().inode, before.inode);
        assert_eq!(store.read_ranges(&file, &[0..2, 8..20, 30..40]).unwrap(), [&b"01"[..], b"89", b""]);
    }
}
