//! What in a cache directory is oxprof's: the directory itself only when oxprof marked it,
//! and in it only files with an entry's (or a temporary file's) name whose first bytes are
//! an entry's header. Nothing here follows a symbolic link or opens anything but a regular
//! file (`O_NOFOLLOW | O_NONBLOCK`, then `fstat`), so a link or a FIFO planted at an
//! entry's name is neither read through nor waited on.
//!
//! ```text
//!  <root>/OXPROF-CACHE.TAG   oxprof's marker: this directory is oxprof's cache
//!  <root>/CACHEDIR.TAG       the cache directory tag convention (backup tools skip it)
//!  <root>/v<N>/              one layout's entries
//!          <32 hex>.bin       an entry: starts with the magic `OXPCACHE`
//!          <pid>-<n>.tmp      an entry being written (magic first, or empty)
//! ```
//!
//! A root is marked when oxprof creates it, or finds it empty, or finds it holding nothing
//! but what an oxprof from before markers wrote there (layout directories of entries and
//! temporary files, each checked by name and header); anything else in it and oxprof
//! refuses the directory with [`OpenError::NotOurs`].

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The file that marks a directory as oxprof's cache.
pub const MARKER: &str = "OXPROF-CACHE.TAG";
/// The cache directory tag (<https://bford.info/cachedir/>), for backup tools.
pub const CACHEDIR_TAG: &str = "CACHEDIR.TAG";
const MARKER_TEXT: &str = "oxprof analysis cache: oxprof removes only the entries it wrote here \
(`oxprof cache clear`); see `oxprof cache info`.\n";
const CACHEDIR_TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by oxprof (its analysis cache).\n\
# For information about cache directory tags, see https://bford.info/cachedir/\n";
/// The first bytes of every entry.
pub(crate) const MAGIC: &[u8; 8] = b"OXPCACHE";
/// At most this many files of an unmarked directory are checked before it is adopted.
const MAX_ADOPTED_FILES: usize = 100_000;

/// Why a cache directory cannot be used (answers do not need it).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The directory could not be made or marked.
    #[error(transparent)]
    Write(#[from] crate::WriteError),
    /// The directory holds what oxprof did not write, and no oxprof marker.
    #[error(
        "{path}: not oxprof's cache directory (it holds {found} and no {MARKER}): oxprof keeps its cache only in a new \
         or empty directory, so as never to remove what it did not write; name another with --cache-dir or \
         OXPROF_CACHE_DIR, or turn the cache off with --no-cache"
    )]
    NotOurs {
        /// The directory.
        path: PathBuf,
        /// What was found in it, e.g. `"notes.txt"`.
        found: String,
    },
}

/// Makes `root` oxprof's cache directory, or checks that it is (see the module docs).
pub(crate) fn claim_root(root: &Path) -> Result<(), OpenError> {
    let write_error = |cause| crate::WriteError { path: root.to_path_buf(), cause };
    match std::fs::metadata(root) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            // The marker goes in first: a process opening the directory at the same time
            // sees either nothing or the marker.
            std::fs::create_dir_all(root).map_err(write_error)?;
            return mark(root);
        }
        Err(cause) => return Err(write_error(cause).into()),
        Ok(meta) if !meta.is_dir() => {
            return Err(write_error(std::io::Error::new(ErrorKind::NotADirectory, "not a directory")).into());
        }
        Ok(_) => {}
    }
    if is_regular(&root.join(MARKER)) {
        return Ok(());
    }
    match foreign_content(root).map_err(write_error)? {
        None => mark(root),
        Some(found) => Err(OpenError::NotOurs { path: root.to_path_buf(), found }),
    }
}

/// Writes the marker (unless another process did) and the cache directory tag.
fn mark(root: &Path) -> Result<(), OpenError> {
    let write_error = |path: PathBuf| move |cause| crate::WriteError { path, cause };
    let marker = root.join(MARKER);
    match OpenOptions::new().write(true).create_new(true).open(&marker) {
        Ok(mut file) => std::io::Write::write_all(&mut file, MARKER_TEXT.as_bytes()).map_err(write_error(marker))?,
        Err(e) if e.kind() == ErrorKind::AlreadyExists && is_regular(&marker) => {}
        Err(cause) => return Err(write_error(marker)(cause).into()),
    }
    let tag = root.join(CACHEDIR_TAG);
    match OpenOptions::new().write(true).create_new(true).open(&tag) {
        Ok(mut file) => std::io::Write::write_all(&mut file, CACHEDIR_TAG_TEXT.as_bytes()).map_err(write_error(tag))?,
        // Someone's tag, or another oxprof's: either says what it should.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(cause) => return Err(write_error(tag)(cause).into()),
    }
    Ok(())
}

/// `None` when `root` holds nothing but what an oxprof wrote (layout directories of
/// entries and temporary files), or when another process marked it meanwhile; else what it
/// holds besides, for the message.
fn foreign_content(root: &Path) -> std::io::Result<Option<String>> {
    let mut checked = 0usize;
    let mut foreign: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == MARKER {
            // Marked by another oxprof since this one looked: the marker decides.
            return Ok(if is_regular(&root.join(MARKER)) { None } else { Some(format!("{MARKER:?}")) });
        }
        let is_layout = name.to_str().is_some_and(is_layout_name) && entry.file_type()?.is_dir();
        if !(is_layout && layout_is_ours(&entry.path(), &mut checked)?) {
            foreign.push(name.to_string_lossy().into_owned());
            if foreign.len() == 2 {
                break;
            }
        }
    }
    if !foreign.is_empty() && is_regular(&root.join(MARKER)) {
        return Ok(None); // marked meanwhile (its tag may be what was seen)
    }
    Ok(match foreign.as_slice() {
        [] => None,
        [one] => Some(format!("{one:?}")),
        [first, ..] => Some(format!("{first:?} and more")),
    })
}

/// Whether every file of a layout directory is an entry or a temporary file of oxprof's
/// (counting them in `checked`, refusing past [`MAX_ADOPTED_FILES`]).
fn layout_is_ours(dir: &Path, checked: &mut usize) -> std::io::Result<bool> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        *checked += 1;
        if *checked > MAX_ADOPTED_FILES {
            return Ok(false);
        }
        let Some(kind) = entry.file_name().to_str().and_then(file_kind) else { return Ok(false) };
        if !entry.file_type()?.is_file() || !is_ours(&entry.path(), kind) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `v<digits>`: a layout directory's name.
pub(crate) fn is_layout_name(name: &str) -> bool {
    name.len() > 1 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// What a file of a layout directory is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// `<32 lowercase hex digits>.bin`.
    Entry,
    /// `<digits>-<digits>.tmp`.
    Temporary,
}

/// The kind of file `name` names, or `None` when oxprof never writes such a name.
pub(crate) fn file_kind(name: &str) -> Option<FileKind> {
    if let Some(key) = name.strip_suffix(".bin") {
        return (key.len() == 32 && key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
            .then_some(FileKind::Entry);
    }
    let (pid, n) = name.strip_suffix(".tmp")?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(pid) && digits(n)).then_some(FileKind::Temporary)
}

/// Opens `path` for reading if it is a regular file, never following a symbolic link nor
/// waiting on a FIFO or a device; `None` otherwise.
pub(crate) fn open_regular(path: &Path) -> Option<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    if !is_regular(path) {
        return None;
    }
    let file = options.open(path).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

/// Whether `path` is a regular file itself (not a link to one).
pub(crate) fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// Whether the regular file at `path` was written by oxprof as a file of `kind`: it starts
/// with [`MAGIC`], or is empty (a write torn by a crash: nothing in it to lose); a
/// temporary file may also start with zeros (an older oxprof's header placeholder).
pub(crate) fn is_ours(path: &Path, kind: FileKind) -> bool {
    let Some(file) = open_regular(path) else { return false };
    let mut head = Vec::with_capacity(MAGIC.len());
    if file.take(MAGIC.len() as u64).read_to_end(&mut head).is_err() {
        return false;
    }
    match kind {
        FileKind::Entry => head == MAGIC || head.is_empty(),
        FileKind::Temporary => head == MAGIC || head.iter().all(|&b| b == 0),
    }
}

/// Removes the file at `path` if it is oxprof's (see [`is_ours`]); whether it did.
pub(crate) fn remove_if_ours(path: &Path, kind: FileKind) -> bool {
    is_ours(path, kind) && std::fs::remove_file(path).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_oxprof_writes() {
        assert_eq!(file_kind("0123456789abcdef0123456789abcdef.bin"), Some(FileKind::Entry));
        assert_eq!(file_kind("12-0.tmp"), Some(FileKind::Temporary));
        for other in [
            "0123456789ABCDEF0123456789abcdef.bin",
            "0123456789abcdef.bin",
            "photo.bin",
            ".bin",
            "12.tmp",
            "-1.tmp",
            "a-1.tmp",
            "12-0.tmp.bak",
            "notes.txt",
        ] {
            assert_eq!(file_kind(other), None, "{other}");
        }
        assert!(is_layout_name("v1") && is_layout_name("v10"));
        assert!(!is_layout_name("v") && !is_layout_name("v1a") && !is_layout_name("video"));
    }
}
