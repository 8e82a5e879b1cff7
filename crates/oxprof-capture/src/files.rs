//! Where a capture writes, and how: never outside `<logdir>/plugins/profile/<session>/`,
//! never into an existing run, never over an existing file, and nothing left behind when
//! it fails.
//!
//! - Session ids are plain names ([`validate_session_id`]): no path separators, no `.` /
//!   `..`, no NUL, ASCII letters, digits, `_`, `-` and `.` only, at most
//!   [`MAX_SESSION_ID_LEN`] characters.
//! - `plugins` and `plugins/profile` must be real directories: created when missing, and
//!   refused when a symbolic link (or a file) is there (checked with `symlink_metadata`,
//!   which does not follow links).
//! - The run directory is claimed with a single `mkdir`, which fails when anything is at
//!   its path (a run, a file, a symbolic link, even a dangling one): a session id chosen by
//!   the user is then refused ([`CaptureError::SessionExists`]); the default id (the
//!   time) gets a suffix `_2`, `_3`, … so that captures started in the same second get runs
//!   of their own.
//! - Each file is written to a temporary file of its own in the run directory
//!   (`.<name>.<pid>.<random>.part`, created with `O_EXCL`, so never through a link) and
//!   published under its name with a rename that does not replace
//!   (`renameat2(RENAME_NOREPLACE)`, or `link` + `unlink`): two writers of one name never
//!   overwrite each other, the second gets [`CaptureError::FileExists`]. On any failure
//!   (disk full, file too large, …) the temporary file is removed.
//! - A run directory is removed when the session that claimed it ends with it empty, and
//!   so are the directories the claim created for it (the log directory and its missing
//!   parents, `plugins`, `plugins/profile`), innermost first, each only if empty: a failed
//!   capture leaves nothing behind, and never removes a directory it did not make.

use crate::error::CaptureError;
use crate::options::{default_session_id, repository_root};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// How many suffixed names (`<time>_2` …) a default session id tries.
const MAX_DEFAULT_ID_SUFFIX: u32 = 1000;

/// Checks that `id` can name a run directory by itself (see the module docs).
pub fn validate_session_id(id: &str) -> Result<(), CaptureError> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_SESSION_ID_LEN {
        "it is too long"
    } else if id == "." || id == ".." {
        "it names the current or the parent directory"
    } else if id.contains(['/', '\\']) {
        "it contains a path separator"
    } else if id.contains('\0') {
        "it contains a NUL character"
    } else if id.starts_with('.') {
        "it starts with '.'"
    } else if id.starts_with('-') {
        "it starts with '-'"
    } else if !id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        "it contains a character other than letters, digits, '_', '-' and '.'"
    } else {
        return Ok(());
    };
    // Echo a bounded prefix: the id may be anything a client sent.
    let shown: String = id.chars().take(MAX_SESSION_ID_LEN + 8).collect();
    Err(CaptureError::BadSessionId { session_id: shown, reason })
}

/// How many times a claim starts again when a directory it just found or made vanished
/// (another capture that failed removed the empty directories it had made).
const MAX_CLAIM_ATTEMPTS: u32 = 3;

/// A run directory this process created (and so may write into): removed on drop when
/// it is still empty, with the directories created for it, so a failed capture leaves
/// nothing behind.
#[derive(Debug)]
pub(crate) struct RunDir {
    path: PathBuf,
    session_id: String,
    /// The absolute log directory.
    logdir: PathBuf,
    /// Directories created for this run, outermost first.
    created: std::sync::Mutex<Created>,
}

/// Directories this process created, outermost first: removed on drop, innermost first,
/// each only if empty (stopping at the first that is not).
#[derive(Debug, Default)]
struct Created(Vec<PathBuf>);

impl Created {
    /// Creates `path` (a directory) if missing; whether it did.
    fn dir(&mut self, path: &Path) -> std::io::Result<bool> {
        match std::fs::create_dir(path) {
            Ok(()) => {
                self.0.push(path.to_path_buf());
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Creates `path` and its missing parents (as `create_dir_all`, remembering each).
    fn dir_all(&mut self, path: &Path) -> std::io::Result<()> {
        let mut missing = Vec::new();
        let mut at = path;
        while !at.as_os_str().is_empty() && std::fs::symlink_metadata(at).is_err() {
            missing.push(at);
            let Some(parent) = at.parent() else { break };
            at = parent;
        }
        for dir in missing.into_iter().rev() {
            self.dir(dir)?;
        }
        Ok(())
    }

    fn remove(&mut self) {
        while let Some(dir) = self.0.pop() {
            // `remove_dir` fails on a non-empty directory: exactly the check wanted.
            if std::fs::remove_dir(&dir).is_err() {
                self.0.clear();
            }
        }
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        self.remove();
    }
}

impl RunDir {
    /// Creates `<logdir>/plugins/profile/<session>` (see the module docs), and `logdir`
    /// first if it is missing. `session_id`: the user's choice, or `None` for the time of
    /// `now`.
    pub(crate) fn claim(logdir: &Path, session_id: Option<&str>, now: SystemTime) -> Result<RunDir, CaptureError> {
        if let Some(id) = session_id {
            validate_session_id(id)?;
        }
        let mut attempt = 1;
        loop {
            match Self::claim_once(logdir, session_id, now) {
                Err(CaptureError::Io { error, .. })
                    if error.kind() == ErrorKind::NotFound && attempt < MAX_CLAIM_ATTEMPTS =>
                {
                    attempt += 1;
                }
                claimed => return claimed,
            }
        }
    }

    fn claim_once(logdir: &Path, session_id: Option<&str>, now: SystemTime) -> Result<RunDir, CaptureError> {
        // Dropped on any early return: what was created goes again.
        let mut created = Created::default();
        created.dir_all(logdir).map_err(|e| CaptureError::io(logdir, e))?;
        let absolute = std::fs::canonicalize(logdir).map_err(|e| CaptureError::io(logdir, e))?;
        // The log directory's created parts as their absolute names (real directories this
        // claim made, so the last components of the canonical path).
        let made = created.0.len();
        created.0 = absolute.ancestors().take(made).map(Path::to_path_buf).collect();
        created.0.reverse();
        ensure_real_dir(&absolute.join("plugins"), &mut created)?;
        let root = repository_root(&absolute);
        ensure_real_dir(&root, &mut created)?;
        let claimed = match session_id {
            Some(id) => create_run(&root, id)?
                .ok_or_else(|| CaptureError::SessionExists { session_id: id.to_string(), path: root.join(id) })?,
            None => {
                let base = default_session_id(now);
                let mut claimed = None;
                for n in 1..=MAX_DEFAULT_ID_SUFFIX {
                    let id = if n == 1 { base.clone() } else { format!("{base}_{n}") };
                    if let Some(run) = create_run(&root, &id)? {
                        claimed = Some(run);
                        break;
                    }
                }
                claimed.ok_or_else(|| CaptureError::SessionExists { path: root.join(&base), session_id: base })?
            }
        };
        let (path, session_id) = claimed;
        Ok(RunDir { path, session_id, logdir: absolute, created: std::sync::Mutex::new(created) })
    }

    /// The absolute log directory.
    pub(crate) fn logdir(&self) -> &Path {
        &self.logdir
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its name, the session id.
    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    /// Removes the directory if it is empty (a no-op otherwise), and then the directories
    /// created for it that are empty.
    pub(crate) fn remove_if_empty(&self) {
        // `remove_dir` fails on a non-empty directory: exactly the check wanted.
        if std::fs::remove_dir(&self.path).is_ok() {
            self.created.lock().unwrap_or_else(|p| p.into_inner()).remove();
        }
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        self.remove_if_empty();
        // A run with files keeps the directories made for it.
        self.created.get_mut().unwrap_or_else(|p| p.into_inner()).0.clear();
    }
}

/// `mkdir root/id`: `None` when something is at that path already; else the run's path
/// and name.
fn create_run(root: &Path, id: &str) -> Result<Option<(PathBuf, String)>, CaptureError> {
    let path = root.join(id);
    match std::fs::create_dir(&path) {
        Ok(()) => Ok(Some((path, id.to_string()))),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(CaptureError::io(path, e)),
    }
}

/// Creates `path` as a directory (remembered in `created`), or checks that what is there
/// is a directory and not a symbolic link.
fn ensure_real_dir(path: &Path, created: &mut Created) -> Result<(), CaptureError> {
    match created.dir(path) {
        Ok(true) => return Ok(()),
        Ok(false) => {}
        Err(e) => return Err(CaptureError::io(path, e)),
    }
    let file_type = std::fs::symlink_metadata(path).map_err(|e| CaptureError::io(path, e))?.file_type();
    let what = if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_dir() {
        return Ok(());
    } else {
        "not a directory"
    };
    Err(CaptureError::UnsafeDirectory { path: path.to_path_buf(), what })
}

/// Writes `data` as `dir/name`, which must not exist: through a temporary file of its
/// own, published with a rename that does not replace (see the module docs). `name` is a
/// plain file name. Blocking: call it on a blocking thread.
pub(crate) fn write_new_file(dir: &Path, name: &str, data: &[u8]) -> Result<PathBuf, CaptureError> {
    let target = dir.join(name);
    let io = |e| CaptureError::io(&target, e);
    let prefix = format!(".{name}.{}.", std::process::id());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".part").rand_bytes(8);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // As `fs::write` would (the umask applies); tempfile's default is owner-only.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // On any early return the temporary file is dropped, which deletes it.
    let mut temp = builder.tempfile_in(dir).map_err(io)?;
    temp.write_all(data).map_err(io)?;
    temp.as_file().sync_all().map_err(io)?;
    match temp.persist_noclobber(&target) {
        Ok(_) => Ok(target),
        Err(e) if e.error.kind() == ErrorKind::AlreadyExists => Err(CaptureError::FileExists { path: target }),
        Err(e) => Err(io(e.error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Barrier};

    #[test]
    fn session_ids_are_plain_names() {
        for good in ["run1", "2026_11_22_03_02_20", "a.b-c_d", "X", &"a".repeat(MAX_SESSION_ID_LEN)] {
            assert!(validate_session_id(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("", "empty"),
            (".", "current or the parent"),
            ("..", "current or the parent"),
            ("../x", "path separator"),
            ("a/b", "path separator"),
            ("a\\b", "path separator"),
            ("a\0b", "NUL"),
            (".hidden", "starts with '.'"),
            ("-rf", "starts with '-'"),
            ("a b", "other than letters"),
            ("été", "other than letters"),
            ("a:b", "other than letters"),
            (&"a".repeat(MAX_SESSION_ID_LEN + 1), "too long"),
        ] {
            let message = validate_session_id(bad).unwrap_err().to_string();
            assert!(message.contains(why), "{bad:?}: {message}");
        }
        let long = validate_session_id(&"z".repeat(10_000)).unwrap_err().to_string();
        assert!(long.len() < 400, "the message echoes a bounded prefix: {} bytes", long.len());
    }

    #[test]
    fn an_existing_run_is_never_reused() {
        let logdir = tempfile::tempdir().unwrap();
        let first = RunDir::claim(logdir.path(), Some("r"), SystemTime::now()).unwrap();
        std::fs::write(first.path().join("h.xplane.pb"), b"x").unwrap();
        let error = RunDir::claim(logdir.path(), Some("r"), SystemTime::now()).unwrap_err();
        assert!(matches!(error, CaptureError::SessionExists { .. }), "{error:?}");
        assert!(error.to_string().contains("choose another session id"), "{error}");
        // Default ids: the same second gets distinct runs.
        let now = SystemTime::now();
        let a = RunDir::claim(logdir.path(), None, now).unwrap();
        let b = RunDir::claim(logdir.path(), None, now).unwrap();
        assert_ne!(a.path(), b.path());
        assert_eq!(b.session_id(), format!("{}_2", a.session_id()));
        // Empty runs go away with their claim, runs with files stay.
        let (a_path, first_path) = (a.path().to_path_buf(), first.path().to_path_buf());
        drop((a, b, first));
        assert!(!a_path.exists());
        assert!(first_path.join("h.xplane.pb").exists());
    }

    /// A claim that saves nothing leaves nothing: the run and every directory it created
    /// (a missing log directory and its parents, `plugins`, `plugins/profile`) go, and
    /// never a directory it did not create or one with something in it.
    #[test]
    fn a_run_that_saves_nothing_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let listing = |dir: &Path| {
            let mut names: Vec<String> = walk(dir).into_iter().map(|p| p.display().to_string()).collect();
            names.sort();
            names
        };
        // A log directory (and its parent) that did not exist.
        let logdir = tmp.path().join("new/logs");
        drop(RunDir::claim(&logdir, Some("r"), SystemTime::now()).unwrap());
        assert!(listing(tmp.path()).is_empty(), "{:?}", listing(tmp.path()));
        // An existing, empty log directory stays; what was made in it goes.
        std::fs::create_dir(tmp.path().join("mine")).unwrap();
        let run = RunDir::claim(&tmp.path().join("mine"), None, SystemTime::now()).unwrap();
        run.remove_if_empty();
        drop(run);
        assert_eq!(listing(tmp.path()), ["mine"]);
        // Another run beside it keeps `plugins/profile`; a run with a file keeps everything.
        let first = RunDir::claim(&logdir, Some("a"), SystemTime::now()).unwrap();
        let second = RunDir::claim(&logdir, Some("b"), SystemTime::now()).unwrap();
        drop(first);
        assert!(second.path().is_dir() && logdir.join("plugins/profile").is_dir());
        std::fs::write(second.path().join("h.xplane.pb"), b"x").unwrap();
        drop(second);
        assert!(logdir.join("plugins/profile/b/h.xplane.pb").is_file());
        assert!(!logdir.join("plugins/profile/a").exists());
    }

    /// Every path under `dir`, relative to it.
    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(dir).unwrap().to_path_buf());
            if entry.file_type().unwrap().is_dir() {
                out.extend(walk(&path).into_iter().map(|p| path.strip_prefix(dir).unwrap().join(p)));
            }
        }
        out
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_are_never_followed() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        let logdir = tempfile::tempdir().unwrap();
        let root = logdir.path().join("plugins/profile");
        std::fs::create_dir_all(&root).unwrap();
        // A session id naming a link (to a directory, or dangling) is an existing run.
        symlink(outside.path(), root.join("link")).unwrap();
        symlink(outside.path().join("nothing"), root.join("dangling")).unwrap();
        for id in ["link", "dangling"] {
            let error = RunDir::claim(logdir.path(), Some(id), SystemTime::now()).unwrap_err();
            assert!(matches!(error, CaptureError::SessionExists { .. }), "{id}: {error:?}");
        }
        // `plugins/profile` or `plugins` as a link: refused.
        std::fs::remove_dir_all(logdir.path().join("plugins")).unwrap();
        std::fs::create_dir(logdir.path().join("plugins")).unwrap();
        symlink(outside.path(), &root).unwrap();
        let error = RunDir::claim(logdir.path(), Some("r"), SystemTime::now()).unwrap_err();
        assert!(matches!(error, CaptureError::UnsafeDirectory { what: "a symbolic link", .. }), "{error:?}");
        std::fs::remove_file(&root).unwrap();
        std::fs::remove_dir(logdir.path().join("plugins")).unwrap();
        symlink(outside.path(), logdir.path().join("plugins")).unwrap();
        let error = RunDir::claim(logdir.path(), None, SystemTime::now()).unwrap_err();
        assert!(matches!(error, CaptureError::UnsafeDirectory { .. }), "{error:?}");
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was written through a link");
        // A file there is refused too.
        std::fs::remove_file(logdir.path().join("plugins")).unwrap();
        std::fs::write(logdir.path().join("plugins"), b"").unwrap();
        let error = RunDir::claim(logdir.path(), None, SystemTime::now()).unwrap_err();
        assert!(matches!(error, CaptureError::UnsafeDirectory { what: "not a directory", .. }), "{error:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_file_name_is_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("target"), dir.path().join("h.xplane.pb")).unwrap();
        let error = write_new_file(dir.path(), "h.xplane.pb", b"data").unwrap_err();
        assert!(matches!(error, CaptureError::FileExists { .. }), "{error:?}");
        assert!(!outside.path().join("target").exists());
    }

    /// Many writers of one name at once: exactly one wins, the file holds its bytes
    /// whole, the others are told, and no temporary file is left.
    #[test]
    fn concurrent_writers_never_overwrite() {
        const WRITERS: usize = 32;
        let dir = tempfile::tempdir().unwrap();
        let barrier = Arc::new(Barrier::new(WRITERS));
        let results: Vec<(usize, Result<PathBuf, CaptureError>)> = (0..WRITERS)
            .map(|i| {
                let (dir, barrier) = (dir.path().to_path_buf(), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let data = vec![i as u8; 64 << 10];
                    barrier.wait();
                    (i, write_new_file(&dir, "h.xplane.pb", &data))
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        let winners: Vec<usize> = results.iter().filter(|(_, r)| r.is_ok()).map(|(i, _)| *i).collect();
        assert_eq!(winners.len(), 1, "{results:?}");
        for (_, result) in &results {
            if let Err(e) = result {
                assert!(matches!(e, CaptureError::FileExists { .. }), "{e:?}");
                assert!(e.to_string().contains("exists already: not overwriting it"), "{e}");
            }
        }
        assert_eq!(std::fs::read(dir.path().join("h.xplane.pb")).unwrap(), vec![winners[0] as u8; 64 << 10]);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("h.xplane.pb")], "no temporary file is left");
    }
}
