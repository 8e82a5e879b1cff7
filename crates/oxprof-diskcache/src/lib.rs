//! A persistent cache of what oxprof computes from a profile file (a host's OpStats, its
//! trace index), so that a later process answers from disk instead of decoding again.
//!
//! ```text
//!  <cache dir>/OXPROF-CACHE.TAG         oxprof's marker (and CACHEDIR.TAG): see `owned`
//!  <cache dir>/v<LAYOUT>/<key>.bin      one entry: header + payload
//!                 key  = xxh3-128 of (oxprof version, kind, the file's identity, extra)
//!                 (callers put what else decides a payload in kind or extra: oxprof-api
//!                 adds its build's source fingerprint to the kind)
//!                 identity = size, mtime, ctime, device, inode, etag, and a digest of
//!                 blocks sampled across the file (see `identity`)
//! ```
//!
//! * **Never stale:** an entry is found only under the identity of the file it was computed
//!   from (a write to a local file always changes its `ctime`, which users cannot set
//!   back), and oxprof's own version is part of every key (with the caller's build
//!   fingerprint), so an upgrade never reads an older layout or an older build's results
//!   (and a layout change moves to a new `v<LAYOUT>` directory).
//! * **Never torn:** entries are written to a unique temporary file and renamed into place
//!   (concurrent writers of one entry write the same bytes; the last rename wins); a read
//!   checks magic, layout, length and a checksum of the payload and treats anything else
//!   as a miss (and removes the entry).
//! * **Only its own:** the directory is used only when oxprof made it, found it empty or
//!   marked it before; only files with an entry's name and header are ever read, replaced
//!   or removed; links and special files are never followed or opened (see `owned`).
//! * **Bounded:** after each write the directory is trimmed to its byte bound, least
//!   recently used first (a hit refreshes the entry's modification time).
//! * **Best effort:** a failed write (full disk, read-only directory) is reported to the
//!   caller as a [`WriteError`] and changes no answer.
//!
//! No knowledge of profiles or analyses here: payloads are bytes.

mod identity;
mod owned;

pub use identity::{FileIdentity, IDENTITY_BLOCK, SAMPLE_BLOCK, SAMPLE_BLOCKS, entry_key, sample_hash, sample_ranges};
pub use owned::{CACHEDIR_TAG, MARKER, OpenError};

use owned::{FileKind, MAGIC, file_kind, is_layout_name, is_ours, is_regular, open_regular, remove_if_ours};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;
use xxhash_rust::xxh3::Xxh3;

/// Bumped whenever the entry layout changes (entries of other layouts live in other
/// directories and are never read).
pub const LAYOUT: u32 = 1;
const HEADER_BYTES: usize = 8 + 4 + 8 + 8;
/// Default bound of a cache directory, in bytes.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;

/// Why an entry was not written (the answer is unaffected).
#[derive(Debug, thiserror::Error)]
#[error("{path}: cannot write the analysis cache: {cause}; answers are unaffected (--no-cache turns the cache off)")]
pub struct WriteError {
    /// The file or directory that failed.
    pub path: PathBuf,
    /// The OS error.
    pub cause: std::io::Error,
}

/// Counters of one cache handle, for tests and `oxprof cache info`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Entries found and valid.
    pub hits: AtomicU64,
    /// Keys not found.
    pub misses: AtomicU64,
    /// Files found under a key but unusable: torn, corrupt or of another layout (removed),
    /// or not an entry of oxprof's at all (a link, a FIFO, another header: left alone).
    pub rejected: AtomicU64,
    /// Entries written.
    pub written: AtomicU64,
    /// Entries removed to stay within the bound.
    pub evicted: AtomicU64,
}

/// What a directory holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Entries.
    pub entries: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A cache directory of one layout, within a byte bound.
#[derive(Debug)]
pub struct DiskCache {
    root: PathBuf,
    dir: PathBuf,
    max_bytes: u64,
    counters: Counters,
}

impl DiskCache {
    /// The platform's cache directory for oxprof (`$XDG_CACHE_HOME/oxprof`,
    /// `~/.cache/oxprof`, `~/Library/Caches/oxprof`, `%LOCALAPPDATA%\oxprof`), unless
    /// `OXPROF_CACHE_DIR` names another.
    pub fn default_root() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("OXPROF_CACHE_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir));
        }
        dirs::cache_dir().map(|d| d.join("oxprof"))
    }

    /// Opens the cache under `root`, bounded to `max_bytes`: `root` is created and marked
    /// if it does not exist, marked if it is empty (or holds only an older oxprof's
    /// entries), and refused ([`OpenError::NotOurs`]) if it holds anything else without
    /// oxprof's marker.
    pub fn open(root: &Path, max_bytes: u64) -> Result<DiskCache, OpenError> {
        owned::claim_root(root)?;
        let dir = root.join(format!("v{LAYOUT}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(cause) => return Err(WriteError { path: dir, cause }.into()),
        }
        // A link in its place would send entries (and their removal) elsewhere.
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir()) {
            let found = format!("something other than a directory at v{LAYOUT}");
            return Err(OpenError::NotOurs { path: root.to_path_buf(), found });
        }
        Ok(DiskCache { root: root.to_path_buf(), dir, max_bytes, counters: Counters::default() })
    }

    /// The directory entries of this layout live in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// This handle's counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.bin"))
    }

    /// Whether an entry is stored under `key` (not read or checked: [`DiskCache::get`] does).
    pub fn contains(&self, key: &str) -> bool {
        is_regular(&self.path_of(key))
    }

    /// The payload stored under `key`, if there is a whole, valid one. An unusable entry
    /// is removed and counted as rejected.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.get_with(key, |payload, len| {
            let mut bytes = Vec::with_capacity(usize::try_from(len).ok()?);
            payload.read_to_end(&mut bytes).ok()?;
            Some(bytes)
        })
    }

    /// What `read` makes of the payload stored under `key`, streamed to it (`read` gets the
    /// payload's bytes and their number; the payload is never whole in memory here). The
    /// answer counts only if the entry is whole and valid: once `read` returns, the rest of
    /// the payload is read and the checksum over all of it checked. An entry that fails
    /// that, or that `read` cannot use (`None`), is removed and counted as rejected; a file
    /// there that is not an entry of oxprof's (a link, a FIFO, another header) is a
    /// rejection too, left where it is.
    pub fn get_with<T>(&self, key: &str, read: impl FnOnce(&mut dyn Read, u64) -> Option<T>) -> Option<T> {
        let path = self.path_of(key);
        let Some(file) = open_regular(&path) else {
            let counter =
                if std::fs::symlink_metadata(&path).is_ok() { &self.counters.rejected } else { &self.counters.misses };
            counter.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let answer = (|| {
            let stored_bytes = file.metadata().ok()?.len();
            let mut input = BufReader::with_capacity(1 << 16, &file);
            let mut head = [0u8; HEADER_BYTES];
            input.read_exact(&mut head).ok()?;
            let (len, checksum) = parse_header(&head)?;
            if stored_bytes.checked_sub(HEADER_BYTES as u64) != Some(len) {
                return None; // torn, or grown: not an entry this header describes
            }
            let mut payload = Verifying { input: input.take(len), hasher: Xxh3::new() };
            let value = read(&mut payload, len)?;
            // What `read` left unread is still covered by the checksum.
            std::io::copy(&mut payload, &mut std::io::sink()).ok()?;
            (payload.input.limit() == 0 && payload.hasher.digest() == checksum).then_some(value)
        })();
        match answer {
            Some(value) => {
                self.counters.hits.fetch_add(1, Ordering::Relaxed);
                // Recently used: eviction goes by modification time (set through the open
                // file: the name is not looked up again).
                let _ = file.set_modified(SystemTime::now());
                Some(value)
            }
            None => {
                self.counters.rejected.fetch_add(1, Ordering::Relaxed);
                drop(file);
                remove_if_ours(&path, FileKind::Entry);
                None
            }
        }
    }

    /// Stores `payload` under `key` (atomically: readers see the old entry, no entry, or
    /// the whole new one), then trims the directory to its bound.
    pub fn put(&self, key: &str, payload: &[u8]) -> Result<(), WriteError> {
        if (HEADER_BYTES + payload.len()) as u64 > self.max_bytes {
            return Ok(()); // larger than the whole cache: not kept
        }
        self.put_streamed(key, &mut |out| out.write_all(payload))
    }

    /// Stores what `write` writes under `key`, as [`DiskCache::put`] does, streamed to the
    /// entry's file: the payload never has to be in memory as a whole. An error of `write`
    /// (or of the disk) leaves no entry and is returned. A file at the entry's name that
    /// is not an entry of oxprof's is left alone (and the new entry not kept).
    pub fn put_streamed(
        &self,
        key: &str,
        write: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), WriteError> {
        let path = self.path_of(key);
        let (tmp_path, file) = tempfile_in(&self.dir).map_err(|cause| WriteError { path: self.dir.clone(), cause })?;
        // No fsync: a crash may leave a torn entry, which the checksum turns into a miss.
        let written = (|| {
            // The magic first, so that a file left by a writer that died is known as oxprof's.
            let mut sink = Hashing { out: BufWriter::with_capacity(1 << 16, file), hasher: Xxh3::new(), len: 0 };
            sink.out.write_all(&header(0, 0))?;
            write(&mut sink)?;
            let Hashing { out, hasher, len } = sink;
            let mut file = out.into_inner().map_err(|e| e.into_error())?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&header(len, hasher.digest()))?;
            Ok(len)
        })();
        let payload_len = match written {
            Ok(len) => len,
            Err(cause) => {
                let _ = std::fs::remove_file(&tmp_path);
                return Err(WriteError { path: tmp_path, cause });
            }
        };
        if HEADER_BYTES as u64 + payload_len > self.max_bytes {
            let _ = std::fs::remove_file(&tmp_path);
            return Ok(()); // larger than the whole cache: not kept
        }
        if std::fs::symlink_metadata(&path).is_ok() && !is_ours(&path, FileKind::Entry) {
            let _ = std::fs::remove_file(&tmp_path);
            let cause = std::io::Error::new(std::io::ErrorKind::AlreadyExists, "not an entry of oxprof's: left alone");
            return Err(WriteError { path, cause });
        }
        if let Err(cause) = std::fs::rename(&tmp_path, &path) {
            let _ = std::fs::remove_file(&tmp_path);
            return Err(WriteError { path, cause });
        }
        self.counters.written.fetch_add(1, Ordering::Relaxed);
        self.trim();
        Ok(())
    }

    /// Entries and bytes in the directory now (files with an entry's name and header).
    pub fn usage(&self) -> Usage {
        let mut usage = Usage::default();
        for (_, len, _) in self.entries().into_iter().filter(|(path, _, _)| is_ours(path, FileKind::Entry)) {
            usage.entries += 1;
            usage.bytes += len;
        }
        usage
    }

    /// Removes every entry oxprof wrote (of every layout) under the cache's root, and the
    /// layout directories of other layouts that are empty then; returns what was removed.
    /// Nothing else is touched: files without an entry's name and header, links, other
    /// directories.
    pub fn clear(&self) -> Result<Usage, WriteError> {
        let mut removed = Usage::default();
        let listing = std::fs::read_dir(&self.root).map_err(|cause| WriteError { path: self.root.clone(), cause })?;
        for layout in listing.flatten() {
            let is_layout =
                layout.file_name().to_str().is_some_and(is_layout_name) && layout.file_type().is_ok_and(|t| t.is_dir());
            if !is_layout {
                continue;
            }
            let dir = layout.path();
            let files = std::fs::read_dir(&dir).map_err(|cause| WriteError { path: dir.clone(), cause })?;
            for file in files.flatten() {
                let Some(kind) = file.file_name().to_str().and_then(file_kind) else { continue };
                let Ok(meta) = file.metadata() else { continue };
                if meta.file_type().is_file() && remove_if_ours(&file.path(), kind) && kind == FileKind::Entry {
                    removed.entries += 1;
                    removed.bytes += meta.len();
                }
            }
            if dir != self.dir {
                // Fails, as wanted, while anything else is in it.
                let _ = std::fs::remove_dir(&dir);
            }
        }
        Ok(removed)
    }

    /// (path, bytes, modified) of every file with an entry's name (not checked further).
    fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let Ok(read) = std::fs::read_dir(&self.dir) else { return Vec::new() };
        read.flatten()
            .filter(|e| e.file_name().to_str().and_then(file_kind) == Some(FileKind::Entry))
            .filter_map(|e| {
                // Not followed: a link's or a FIFO's metadata is its own, and skipped.
                let meta = e.metadata().ok().filter(|m| m.file_type().is_file())?;
                Some((e.path(), meta.len(), meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)))
            })
            .collect()
    }

    /// Removes least recently used entries until the directory is within its bound, and
    /// temporary files abandoned by writers that died (older than an hour). Only files
    /// oxprof wrote are removed (a file with an entry's name but not its header is not
    /// counted against the bound either).
    fn trim(&self) {
        let mut entries = self.entries();
        let mut total: u64 = entries.iter().map(|(_, len, _)| len).sum();
        if total > self.max_bytes {
            entries.sort_by_key(|(_, _, modified)| *modified);
            for (path, len, _) in entries {
                if total <= self.max_bytes {
                    break;
                }
                if remove_if_ours(&path, FileKind::Entry) {
                    self.counters.evicted.fetch_add(1, Ordering::Relaxed);
                    total -= len;
                } else if !is_ours(&path, FileKind::Entry) {
                    total -= len; // not oxprof's: not in its bound
                }
            }
        }
        let Ok(read) = std::fs::read_dir(&self.dir) else { return };
        for e in read.flatten() {
            let stale_tmp = e.file_name().to_str().and_then(file_kind) == Some(FileKind::Temporary)
                && e.metadata()
                    .ok()
                    .filter(|m| m.file_type().is_file())
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > 3600);
            if stale_tmp {
                remove_if_ours(&e.path(), FileKind::Temporary);
            }
        }
    }
}

/// An entry's header: magic, layout, payload length, xxh3 of the payload.
fn header(payload_len: u64, checksum: u64) -> [u8; HEADER_BYTES] {
    let mut header = [0u8; HEADER_BYTES];
    header[..8].copy_from_slice(MAGIC);
    header[8..12].copy_from_slice(&LAYOUT.to_le_bytes());
    header[12..20].copy_from_slice(&payload_len.to_le_bytes());
    header[20..28].copy_from_slice(&checksum.to_le_bytes());
    header
}

/// Writes through to `out`, hashing and counting what it writes (the entry's payload).
struct Hashing<W: Write> {
    out: W,
    hasher: Xxh3,
    len: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The payload length and checksum an entry's header states, or `None` if it is not the
/// header of an entry of this layout.
fn parse_header(head: &[u8; HEADER_BYTES]) -> Option<(u64, u64)> {
    if &head[..8] != MAGIC || u32::from_le_bytes(head[8..12].try_into().ok()?) != LAYOUT {
        return None;
    }
    let len = u64::from_le_bytes(head[12..20].try_into().ok()?);
    let checksum = u64::from_le_bytes(head[20..28].try_into().ok()?);
    Some((len, checksum))
}

/// Hashes what is read through it (the payload of an entry being read).
struct Verifying<R> {
    input: R,
    hasher: Xxh3,
}

impl<R: Read> Read for Verifying<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.input.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// A new uniquely named temporary file in `dir` (`<pid>-<n>.tmp`), opened for writing
/// (created new: never through a link).
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{}-{n}.tmp", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}
