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
/// at least one of these.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileStat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the Unix epoch (0 when the store does not know it).
    pub modified_ns: u64,
    /// The store's version tag of the contents (an object store's ETag), if it has one.
    pub etag: Option<String>,
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
        let modified_ns =
            meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
        Ok(FileStat { size: meta.len(), modified_ns, etag: None })
    }

    fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
        let io = |cause| LoadError::Io { path: file.to_path_buf(), cause };
        let mut f = File::open(file).map_err(io)?;
        f.seek(SeekFrom::Start(range.start)).map_err(io)?;
        let mut out = Vec::new();
        f.take(range.end.saturating_sub(range.start)).read_to_end(&mut out).map_err(io)?;
        Ok(out)
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
            Ok(FileStat { size: bytes.len() as u64, modified_ns: 0, etag: Some(format!("v{version}")) })
        }
        fn read_range(&self, file: &Path, range: Range<u64>) -> Result<Vec<u8>, LoadError> {
            let files = self.files.lock().unwrap();
            let (bytes, _) = &files[file];
            let end = (range.end as usize).min(bytes.len());
            Ok(bytes[(range.start as usize).min(end)..end].to_vec())
        }
    }

    fn tiny_space_bytes() -> Vec<u8> {
        oxprof_xspace::testing::XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "thread", 0, |l| {
                    l.event("op", 0, 10);
                });
            })
            .to_bytes()
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
}
