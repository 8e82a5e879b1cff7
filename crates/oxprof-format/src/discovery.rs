//! Finding profiles: runs and hosts under a log directory, laid out as XProf expects.
//!
//! ```text
//! <logdir>/[<tb_run>/]plugins/profile/<run>/<host>.xplane.pb
//! <logdir>/<run>/<worker>.<timestamp>.pt.trace.json[.gz]     (torch-tb-profiler's layout)
//! ```
//!
//! PyTorch traces follow torch-tb-profiler: any folder holding `.pt.trace.json[.gz]` files
//! is a run (named by its path under the log directory) and each file a host (its worker:
//! one rank of a distributed job). A log directory may mix both layouts.
//!
//! A run is named `<run>` when `plugins/profile` sits directly in the log directory, else
//! `<tb_run>/<run>`; runs are listed newest first (names sort by timestamp, descending,
//! as XProf lists them). Hosts are the file names without their format's suffix (every
//! format of [`crate::formats::FORMATS`]; `.xplane.pb` above). Unlike XProf, a run
//! directory or a single profile file (of any name: its content decides) may be given
//! directly.

use std::path::{Path, PathBuf};

/// How deep below the log directory `plugins/profile` is searched for.
const MAX_DEPTH: usize = 12;

/// One host's profile file within a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFile {
    /// Host name: the file name without its `.xplane.pb` suffix.
    pub host: String,
    /// The file.
    pub path: PathBuf,
}

/// One profiling session: a directory of per-host files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// `<run>` or `<tb_run>/<run>`, as XProf's run selector shows it.
    pub name: String,
    /// The run directory.
    pub dir: PathBuf,
    /// Hosts sorted by name.
    pub hosts: Vec<HostFile>,
}

/// Everything found under a path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// Runs, newest (greatest name) first.
    pub runs: Vec<Run>,
    /// Directories that could not be read, with the reason; they are skipped.
    pub skipped: Vec<(PathBuf, String)>,
}

impl Discovery {
    /// The run with this name.
    pub fn run(&self, name: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.name == name)
    }
}

/// Why nothing could be discovered.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// The path does not exist or cannot be read.
    #[error("{path}: cannot read: {cause}")]
    Io {
        /// The path given.
        path: PathBuf,
        /// The OS error.
        cause: std::io::Error,
    },
    /// The path holds no profile at all.
    #[error(
        "{0}: no profiles found. Expected <logdir>/[<run>/]plugins/profile/<session>/<host>.xplane.pb, \
         <logdir>/<run>/<worker>.pt.trace.json[.gz] (PyTorch), a session directory holding such files, \
         or one profile file"
    )]
    NoProfiles(PathBuf),
}

/// The host name of a profile file name, if it names a profile of any format oxprof reads
/// (see [`crate::formats::FORMATS`]).
pub fn host_of_file_name(file_name: &str) -> Option<&str> {
    crate::formats::format_of_name(file_name).map(|(_, host)| host)
}

/// Finds runs and hosts under `path` (a log directory, a run directory or one file).
pub fn discover(path: &Path) -> Result<Discovery, DiscoveryError> {
    let meta = std::fs::metadata(path).map_err(|cause| DiscoveryError::Io { path: path.to_path_buf(), cause })?;
    if meta.is_file() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let host = host_of_file_name(name).unwrap_or(name).to_string();
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let run_name = dir_name(&dir);
        return Ok(Discovery {
            runs: vec![Run { name: run_name, dir, hosts: vec![HostFile { host, path: path.to_path_buf() }] }],
            skipped: Vec::new(),
        });
    }
    let mut discovery = Discovery::default();
    // A run directory given directly.
    let direct = hosts_in(path, &mut discovery.skipped);
    if !direct.is_empty() {
        discovery.runs.push(Run { name: dir_name(path), dir: path.to_path_buf(), hosts: direct });
        return Ok(discovery);
    }
    // A log directory: every `X/plugins/profile/<run>/`, and every folder of PyTorch traces.
    let mut trace_dirs = std::collections::BTreeSet::new();
    let mut walker = walkdir::WalkDir::new(path).follow_links(true).max_depth(MAX_DEPTH).into_iter();
    while let Some(entry) = walker.next() {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let at = e.path().map(Path::to_path_buf).unwrap_or_else(|| path.to_path_buf());
                discovery.skipped.push((at, e.to_string()));
                continue;
            }
        };
        if !entry.file_type().is_dir() {
            let name = entry.file_name().to_str().unwrap_or_default();
            if crate::formats::format_of_name(name)
                .is_some_and(|(spec, _)| spec.format == crate::formats::Format::Kineto)
                && let Some(dir) = entry.path().parent()
            {
                trace_dirs.insert(dir.to_path_buf());
            }
            continue;
        }
        let p = entry.path();
        let is_profile_dir = p.file_name().is_some_and(|n| n == "profile")
            && p.parent().and_then(Path::file_name).is_some_and(|n| n == "plugins");
        if !is_profile_dir {
            continue;
        }
        walker.skip_current_dir();
        let tb_run_dir = p.parent().and_then(Path::parent).unwrap_or(path);
        let tb_run =
            tb_run_dir.strip_prefix(path).ok().map(|rel| rel.to_string_lossy().replace('\\', "/")).unwrap_or_default();
        let sessions = match std::fs::read_dir(p) {
            Ok(rd) => rd,
            Err(e) => {
                discovery.skipped.push((p.to_path_buf(), e.to_string()));
                continue;
            }
        };
        for session in sessions.flatten() {
            let dir = session.path();
            if !dir.is_dir() {
                continue;
            }
            let hosts = hosts_in(&dir, &mut discovery.skipped);
            if hosts.is_empty() {
                continue;
            }
            let run = dir_name(&dir);
            let name = if tb_run.is_empty() || tb_run == "." { run } else { format!("{tb_run}/{run}") };
            discovery.runs.push(Run { name, dir, hosts });
        }
    }
    for dir in trace_dirs {
        let hosts = hosts_in(&dir, &mut discovery.skipped);
        if hosts.is_empty() {
            continue;
        }
        let name = match dir.strip_prefix(path).map(|rel| rel.to_string_lossy().replace('\\', "/")) {
            Ok(rel) if !rel.is_empty() => rel,
            _ => dir_name(&dir),
        };
        discovery.runs.push(Run { name, dir, hosts });
    }
    if discovery.runs.is_empty() {
        return Err(DiscoveryError::NoProfiles(path.to_path_buf()));
    }
    discovery.runs.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(discovery)
}

fn dir_name(dir: &Path) -> String {
    let canonical = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    canonical.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| ".".to_string())
}

fn hosts_in(dir: &Path, skipped: &mut Vec<(PathBuf, String)>) -> Vec<HostFile> {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            skipped.push((dir.to_path_buf(), e.to_string()));
            return Vec::new();
        }
    };
    let mut hosts: Vec<HostFile> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let host = host_of_file_name(name.to_str()?)?.to_string();
            let path = e.path();
            path.is_file().then_some(HostFile { host, path })
        })
        .collect();
    hosts.sort_by(|a, b| a.host.cmp(&b.host));
    // Prefer the plain file when both `h.xplane.pb` and `h.xplane.pb.gz` exist.
    hosts.dedup_by(|later, earlier| {
        later.host == earlier.host && {
            if later.path.extension().is_some_and(|e| e != "gz") {
                earlier.path = later.path.clone();
            }
            true
        }
    });
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }

    #[test]
    fn finds_runs_at_root_and_under_tensorboard_runs_newest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        touch(&root.join("plugins/profile/2024_01_01_00_00_00/a.xplane.pb"));
        touch(&root.join("plugins/profile/2024_01_01_00_00_00/b.xplane.pb"));
        touch(&root.join("plugins/profile/2024_01_01_00_00_00/notes.txt"));
        touch(&root.join("train/plugins/profile/2025_02_02_00_00_00/vm.xplane.pb.gz"));
        std::fs::create_dir_all(root.join("plugins/profile/empty_run")).unwrap();
        let d = discover(root).unwrap();
        let names: Vec<_> = d.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["train/2025_02_02_00_00_00", "2024_01_01_00_00_00"]);
        let hosts: Vec<_> = d.runs[1].hosts.iter().map(|h| h.host.as_str()).collect();
        assert_eq!(hosts, ["a", "b"]);
        assert_eq!(d.runs[0].hosts[0].host, "vm");
    }

    #[test]
    fn accepts_a_run_directory_or_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let run = tmp.path().join("my_run");
        touch(&run.join("h1.xplane.pb"));
        let d = discover(&run).unwrap();
        assert_eq!(d.runs.len(), 1);
        assert_eq!(d.runs[0].name, "my_run");
        let d = discover(&run.join("h1.xplane.pb")).unwrap();
        assert_eq!(d.runs[0].hosts[0].host, "h1");
    }

    #[test]
    fn an_empty_directory_explains_the_expected_layout() {
        let tmp = tempfile::tempdir().unwrap();
        let err = discover(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("plugins/profile"), "{err}");
        assert!(discover(&tmp.path().join("missing")).is_err());
    }

    #[test]
    fn host_names_strip_the_suffix() {
        assert_eq!(host_of_file_name("10.0.0.1_8466.xplane.pb"), Some("10.0.0.1_8466"));
        assert_eq!(host_of_file_name("vm.xplane.pb.gz"), Some("vm"));
        assert_eq!(host_of_file_name(".xplane.pb"), None);
        assert_eq!(host_of_file_name("vm.trace.json.gz"), None);
        assert_eq!(host_of_file_name("worker0.1623143089861.pt.trace.json"), Some("worker0.1623143089861"));
    }

    /// torch-tb-profiler's layout: folders of `.pt.trace.json[.gz]` files are runs, files
    /// are workers (ranks); XSpace runs in the same log directory are found too.
    #[test]
    fn pytorch_runs_are_folders_of_traces_beside_xspace_runs() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        touch(&root.join("resnet/worker0.1623143089861.pt.trace.json.gz"));
        touch(&root.join("ddp/nccl/rank0.1700000000000.pt.trace.json"));
        touch(&root.join("ddp/nccl/rank1.1700000000001.pt.trace.json"));
        touch(&root.join("ddp/notes.json"));
        touch(&root.join("jax/plugins/profile/2025_01_01_00_00_00/vm.xplane.pb"));
        let d = discover(root).unwrap();
        let runs: Vec<(&str, Vec<&str>)> =
            d.runs.iter().map(|r| (r.name.as_str(), r.hosts.iter().map(|h| h.host.as_str()).collect())).collect();
        assert_eq!(
            runs,
            [
                ("resnet", vec!["worker0.1623143089861"]),
                ("jax/2025_01_01_00_00_00", vec!["vm"]),
                ("ddp/nccl", vec!["rank0.1700000000000", "rank1.1700000000001"]),
            ]
        );
        // A run folder given directly.
        let d = discover(&root.join("ddp/nccl")).unwrap();
        assert_eq!(d.runs[0].hosts.len(), 2);
    }
}
