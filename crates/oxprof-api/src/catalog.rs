//! What a session may read: the runs under its root, rescanned cheaply, and confined to
//! the root (no run, host or session path can name a file outside it, symlinks included).
//! Also XProf's per-run listings: `/run_tools` (tool availability from the first host's
//! planes), `/hosts` (with `ALL_HOSTS` where XProf offers it).

use crate::ApiError;
use oxprof_format::{HostFile, ProfileStore};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A run the session serves: its files all lie inside the root.
#[derive(Debug, Clone)]
pub struct ServedRun {
    /// The run name as `/runs` lists it.
    pub name: String,
    /// The run directory.
    pub dir: PathBuf,
    /// Host files, sorted by host name.
    pub hosts: Vec<HostFile>,
}

impl ServedRun {
    /// The host file named `host`.
    pub fn host(&self, host: &str) -> Option<&HostFile> {
        self.hosts.iter().find(|h| h.host == host)
    }
}

/// One scan of the root.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// Runs, newest (greatest name) first, as XProf sorts them.
    pub runs: Vec<ServedRun>,
    /// What was skipped and why (unreadable directories, files outside the root).
    pub skipped: Vec<String>,
    /// Why nothing was found, when nothing was.
    pub empty_reason: Option<String>,
}

/// The served root and its latest scan.
pub struct Catalog {
    store: Arc<dyn ProfileStore>,
    root: PathBuf,
    canonical_root: PathBuf,
    root_is_file: bool,
    confine: bool,
    /// The latest scan and when it began (its files are as of then, or later).
    latest: Mutex<Option<(Instant, Arc<Snapshot>)>>,
    /// Held while a throttled rescan runs, so that callers arriving meanwhile share it.
    scanning: Mutex<()>,
}

/// A request for an unknown run rescans at most this often (new runs otherwise appear on
/// the next `/runs`); so does `/runs` of a remote root, whose listing costs requests.
const MIN_RESCAN_INTERVAL: Duration = Duration::from_secs(2);

impl Catalog {
    /// A catalog of `store`'s root (a log directory, a run directory or one profile file);
    /// `confine`: leave out runs with files that resolve outside a local root (a remote
    /// store's names cannot point outside it).
    pub fn new(store: Arc<dyn ProfileStore>, confine: bool) -> std::io::Result<Catalog> {
        let root = store.root().to_path_buf();
        let (canonical_root, root_is_file, confine) = match store.local_root() {
            Some(local) => {
                let canonical = local.canonicalize()?;
                let is_file = canonical.is_file();
                (canonical, is_file, confine)
            }
            None => (root.clone(), false, false),
        };
        Ok(Catalog {
            store,
            root,
            canonical_root,
            root_is_file,
            confine,
            latest: Mutex::new(None),
            scanning: Mutex::new(()),
        })
    }

    /// The root as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Scans the root now.
    pub fn rescan(&self) -> Arc<Snapshot> {
        // Stamped when the scan began: a remote store's listed sizes and ETags are trusted
        // for as long as the scan is (oxprof-objstore's `STAT_FRESH`), so a reused
        // snapshot never sends a HEAD per host.
        let began = Instant::now();
        let snapshot = Arc::new(self.scan(None));
        let mut latest = self.latest.lock().unwrap_or_else(|p| p.into_inner());
        if latest.as_ref().is_none_or(|(at, _)| *at <= began) {
            *latest = Some((began, snapshot.clone()));
        }
        snapshot
    }

    /// The runs as `/runs` lists them: a local root rescanned on every call (a directory
    /// walk is cheap, and a run written a moment ago shows at once); a remote root (an
    /// object store, whose listing is paginated requests) at most every
    /// [`MIN_RESCAN_INTERVAL`], the rescan throttle of unknown runs, so that repeated
    /// calls within it send no request and new runs appear after it.
    pub fn refreshed(&self) -> Arc<Snapshot> {
        if self.store.local_root().is_some() { self.rescan() } else { self.throttled() }
    }

    /// The latest scan if younger than [`MIN_RESCAN_INTERVAL`], else a new one; callers
    /// arriving while it runs wait for it and share it rather than scan again.
    fn throttled(&self) -> Arc<Snapshot> {
        let recent = || {
            self.latest
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .filter(|(at, _)| at.elapsed() < MIN_RESCAN_INTERVAL)
                .map(|(_, s)| s.clone())
        };
        if let Some(snapshot) = recent() {
            return snapshot;
        }
        let _one_scan = self.scanning.lock().unwrap_or_else(|p| p.into_inner());
        recent().unwrap_or_else(|| self.rescan())
    }

    /// The latest scan (scanning if there is none yet).
    pub fn current(&self) -> Arc<Snapshot> {
        let latest = self.latest.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|(_, s)| s.clone());
        latest.unwrap_or_else(|| self.rescan())
    }

    fn latest_is_old(&self) -> bool {
        self.latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_none_or(|(at, _)| at.elapsed() >= MIN_RESCAN_INTERVAL)
    }

    /// The run named `name` (`None`: the newest). A name not in the latest scan triggers
    /// one rescan (rate-limited) before answering 404.
    pub fn find_run(&self, name: Option<&str>) -> Result<ServedRun, ApiError> {
        let lookup = |s: &Snapshot| match name {
            None => s.runs.first().cloned(),
            Some(n) => s.runs.iter().find(|r| r.name == n).cloned(),
        };
        if let Some(run) = lookup(&self.current()) {
            return Ok(run);
        }
        if self.latest_is_old()
            && let Some(run) = lookup(&self.throttled())
        {
            return Ok(run);
        }
        Err(match name {
            // Why the scan found nothing (a store's 403 or 404, say), when it knows.
            None => ApiError::NotFound(
                self.current().empty_reason.clone().unwrap_or_else(|| "no profiles found under the served path".into()),
            ),
            Some(n) => ApiError::UnknownRun {
                name: n.to_string(),
                available: self.current().runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", "),
            },
        })
    }

    /// Runs of XProf's `session_path` (one run directory) or `run_path` (a directory of
    /// run directories) parameter, both confined to the root.
    pub fn scoped_runs(
        &self,
        session_path: Option<&str>,
        run_path: Option<&str>,
    ) -> Result<Option<Snapshot>, ApiError> {
        let scoped = session_path.filter(|s| !s.is_empty()).or(run_path.filter(|s| !s.is_empty()));
        if scoped.is_some() && self.store.local_root().is_none() {
            return Err(ApiError::BadParameter {
                name: if session_path.is_some() { "session_path" } else { "run_path" }.into(),
                reason: "only supported when a local directory is served".into(),
            });
        }
        if let Some(raw) = session_path.filter(|s| !s.is_empty()) {
            let dir = self.confine("session_path", raw)?;
            let mut snapshot = self.scan_direct_run(&dir);
            snapshot.runs.retain(|r| r.dir == dir);
            return Ok(Some(snapshot));
        }
        if let Some(raw) = run_path.filter(|s| !s.is_empty()) {
            let dir = self.confine("run_path", raw)?;
            let mut snapshot = Snapshot::default();
            let entries = std::fs::read_dir(&dir).map_err(|_| not_inside("run_path"))?;
            for entry in entries.flatten() {
                let sub = entry.path();
                if sub.is_dir() {
                    let found = self.scan_direct_run(&sub);
                    snapshot.runs.extend(found.runs.into_iter().filter(|r| r.dir == sub));
                    snapshot.skipped.extend(found.skipped);
                }
            }
            snapshot.runs.sort_by(|a, b| b.name.cmp(&a.name));
            return Ok(Some(snapshot));
        }
        Ok(None)
    }

    /// Resolves a client-given directory (relative to the root, or absolute) and checks
    /// that, with every symlink resolved, it is a directory inside the root. Every failure
    /// answers the same, so a client cannot learn whether a path outside the root exists.
    fn confine(&self, param: &str, raw: &str) -> Result<PathBuf, ApiError> {
        if raw.contains('\0') {
            return Err(ApiError::BadParameter { name: param.into(), reason: "contains a NUL byte".into() });
        }
        if self.root_is_file {
            return Err(ApiError::BadParameter {
                name: param.into(),
                reason: "not supported when a single file is served".into(),
            });
        }
        let given = Path::new(raw);
        let joined = if given.is_absolute() { given.to_path_buf() } else { self.canonical_root.join(given) };
        match joined.canonicalize() {
            Ok(resolved) if resolved.starts_with(&self.canonical_root) && resolved.is_dir() => Ok(resolved),
            _ => Err(not_inside(param)),
        }
    }

    fn scan_direct_run(&self, dir: &Path) -> Snapshot {
        self.scan(Some(dir))
    }

    /// Runs under `at` (the root when `None`), confined.
    fn scan(&self, at: Option<&Path>) -> Snapshot {
        match self.store.discover(at) {
            Ok(d) => self.confined(d.runs.into_iter().map(|r| (r.name, r.dir, r.hosts)).collect(), d.skipped),
            Err(e) => Snapshot { empty_reason: Some(self.redact(&e.to_string())), ..Snapshot::default() },
        }
    }

    /// `message` with the root's absolute path taken out (paths under it become relative).
    pub fn redact(&self, message: &str) -> String {
        let mut out = message.to_string();
        if self.store.local_root().is_none() {
            // A remote store's URL is the user's own name for it, not a local path.
            return out;
        }
        for root in [&self.canonical_root, &self.root] {
            let root = root.display().to_string();
            if root.is_empty() || root == "." {
                continue;
            }
            out = out.replace(&format!("{root}/"), "").replace(&root, ".");
        }
        out
    }

    /// A path as responses may show it: relative to the root (responses never carry
    /// absolute paths), or only its file name when it lies elsewhere.
    pub fn shown(&self, path: &Path) -> String {
        let relative = path.strip_prefix(&self.root).or_else(|_| path.strip_prefix(&self.canonical_root));
        match relative {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        }
    }

    /// Keeps the runs whose every host file lies inside the root (symlinks resolved).
    fn confined(&self, runs: Vec<(String, PathBuf, Vec<HostFile>)>, skipped: Vec<(PathBuf, String)>) -> Snapshot {
        let mut snapshot = Snapshot {
            skipped: skipped.into_iter().map(|(p, why)| format!("{}: {why}", self.shown(&p))).collect(),
            ..Snapshot::default()
        };
        let mut outside_runs = 0;
        for (name, dir, hosts) in runs {
            let outside = hosts.iter().find(|h| {
                self.confine
                    && !h.path.canonicalize().is_ok_and(|c| {
                        if self.root_is_file { c == self.canonical_root } else { c.starts_with(&self.canonical_root) }
                    })
            });
            if let Some(host) = outside {
                snapshot
                    .skipped
                    .push(format!("run {name:?}: {} resolves outside the served path", self.shown(&host.path)));
                outside_runs += 1;
                continue;
            }
            snapshot.runs.push(ServedRun { name, dir, hosts });
        }
        if snapshot.runs.is_empty() && snapshot.empty_reason.is_none() {
            // Say why in the headline: a logdir of symlinks is a common layout.
            snapshot.empty_reason = Some(if outside_runs > 0 {
                format!(
                    "no profiles inside the served path: {outside_runs} run(s) have profile files that are symlinks \
                     to outside it, which oxprof serve does not follow; start it with --follow-symlinks to serve them"
                )
            } else {
                "no profiles found inside the served path".to_string()
            });
        }
        snapshot
    }
}

/// The one answer for a `session_path` / `run_path` that is not a readable directory
/// inside the root, whatever the reason.
fn not_inside(param: &str) -> ApiError {
    ApiError::NotFound(format!("{param}: no such directory inside the served directory"))
}

/// XProf's `/module_list` when the run directory holds `*.hlo_proto.pb` files: their
/// module names, comma-joined, in sorted file-name order.
pub fn hlo_proto_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_suffix(".hlo_proto.pb").map(str::to_string))
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A local directory seen as a remote store (no local root), counting its listings.
    struct Listed {
        inner: oxprof_format::LocalStore,
        listings: std::sync::atomic::AtomicUsize,
    }

    impl ProfileStore for Listed {
        fn root(&self) -> &Path {
            self.inner.root()
        }
        fn discover(&self, at: Option<&Path>) -> Result<oxprof_format::Discovery, oxprof_format::DiscoveryError> {
            self.listings.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.discover(at)
        }
        fn stat(&self, file: &Path) -> Result<oxprof_format::FileStat, oxprof_format::LoadError> {
            self.inner.stat(file)
        }
        fn read_range(&self, file: &Path, range: std::ops::Range<u64>) -> Result<Vec<u8>, oxprof_format::LoadError> {
            self.inner.read_range(file, range)
        }
    }

    /// `/runs` of a remote root within the rescan interval lists once, however many
    /// callers (at once or one after another), and an unknown run asks no new listing
    /// then; a local root is rescanned on every call. (The real S3 server's count of LIST
    /// requests, and new runs after the interval: `scripts/ci/test-objstore.sh`.)
    #[test]
    fn remote_roots_are_listed_at_most_once_per_rescan_interval() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("plugins/profile/run_1");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("h.xplane.pb"), b"").unwrap();
        let store =
            Arc::new(Listed { inner: oxprof_format::LocalStore::new(dir.path()), listings: Default::default() });
        let catalog = Arc::new(Catalog::new(store.clone(), true).unwrap());
        let began = Instant::now();
        let callers: Vec<_> = (0..4)
            .map(|_| {
                let catalog = catalog.clone();
                std::thread::spawn(move || catalog.refreshed().runs.len())
            })
            .collect();
        for caller in callers {
            assert_eq!(caller.join().unwrap(), 1);
        }
        for _ in 0..5 {
            assert_eq!(catalog.refreshed().runs[0].name, "run_1");
        }
        assert!(catalog.find_run(Some("run_2")).is_err());
        let listings = store.listings.load(std::sync::atomic::Ordering::SeqCst);
        // Only when the calls took less than the interval (no timing assertion).
        if began.elapsed() < MIN_RESCAN_INTERVAL {
            assert_eq!(listings, 1);
        }
        let local = Catalog::new(Arc::new(oxprof_format::LocalStore::new(dir.path())), true).unwrap();
        assert_eq!(local.refreshed().runs.len(), 1);
        std::fs::create_dir_all(dir.path().join("plugins/profile/run_2")).unwrap();
        std::fs::write(dir.path().join("plugins/profile/run_2/h.xplane.pb"), b"").unwrap();
        assert_eq!(local.refreshed().runs.len(), 2);
    }
}
