//! Finding profiles: runs and hosts under a log directory, laid out as XProf expects.
//!
//! ```text
//! <logdir>/[<tb_run>/]plugins/profile/<run>/<host>.xplane.pb
//! <logdir>/<run>/<worker>.<timestamp>.pt.trace.json[.gz]     (torch-tb-profiler's layout)
//! ```
//!
//! PyTorch traces follow torch-tb-profiler: any folder holding `.pt.trace.json[.gz]` files
//! is a run (named by its path under the log directory) and each file a host (its worker:
//! one rank of a distributed job). So is a folder of `.xplane.pb[.gz]` files outside
//! `plugins/profile`, and a folder of `.json[.gz]` files whose content is a PyTorch trace
//! (other names, as HTA's and TraceLens's test traces have: at most [`MAX_SNIFFED`] such
//! files are opened per discovery, the rest are counted in `skipped`). A log directory may
//! mix these layouts. What is passed over is listed in `skipped` with the reason: a session
//! of `plugins/profile` without an `.xplane.pb` (TensorBoard's older per-tool files), a
//! profile file that cannot be opened, the JSON files beyond the limit.
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

/// How many `.json[.gz]` files without a profile suffix one discovery opens to look at
/// their first bytes (a log directory is rescanned on every listing of its runs).
pub const MAX_SNIFFED: usize = 512;

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

/// The suffix of a pod's per-host partial result (`<host>.oxpartial`, written by `oxprof
/// pod partial`): a host of a pod result directory, listed as a host like a profile file
/// (it is not a profile: only the multi-host tools read it).
pub const POD_PARTIAL_SUFFIX: &str = ".oxpartial";

/// The host name of a profile file name, if it names a profile of any format oxprof reads
/// (see [`crate::formats::FORMATS`]) or a pod's partial ([`POD_PARTIAL_SUFFIX`]).
pub fn host_of_file_name(file_name: &str) -> Option<&str> {
    crate::formats::format_of_name(file_name)
        .map(|(_, host)| host)
        .or_else(|| file_name.strip_suffix(POD_PARTIAL_SUFFIX).filter(|host| !host.is_empty()))
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
    let direct = hosts_in(path, &[], &mut discovery.skipped);
    if !direct.is_empty() {
        discovery.runs.push(Run { name: dir_name(path), dir: path.to_path_buf(), hosts: direct });
        return Ok(discovery);
    }
    // A log directory: every `X/plugins/profile/<run>/`, and every other folder holding
    // profile files (by name, or PyTorch traces by content).
    let mut trace_dirs = std::collections::BTreeSet::new();
    let mut by_content: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> = std::collections::BTreeMap::new();
    let mut sniffed = 0usize;
    let mut not_sniffed = 0usize;
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
            let Some(dir) = entry.path().parent() else { continue };
            if host_of_file_name(name).is_some() {
                trace_dirs.insert(dir.to_path_buf());
            } else if json_host(name).is_some() {
                if sniffed == MAX_SNIFFED {
                    not_sniffed += 1;
                    continue;
                }
                sniffed += 1;
                match is_pytorch_trace(entry.path()) {
                    Ok(true) => by_content.entry(dir.to_path_buf()).or_default().push(entry.path().to_path_buf()),
                    Ok(false) => {}
                    Err(e) => discovery.skipped.push((entry.path().to_path_buf(), format!("cannot read: {e}"))),
                }
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
            let hosts = hosts_in(&dir, &[], &mut discovery.skipped);
            if hosts.is_empty() {
                if let Some(why) = why_no_profile(&dir) {
                    discovery.skipped.push((dir, why));
                }
                continue;
            }
            let run = dir_name(&dir);
            let name = if tb_run.is_empty() || tb_run == "." { run } else { format!("{tb_run}/{run}") };
            discovery.runs.push(Run { name, dir, hosts });
        }
    }
    if not_sniffed > 0 {
        discovery.skipped.push((
            path.to_path_buf(),
            format!(
                "{not_sniffed} more .json file(s) not examined: discovery opens at most {MAX_SNIFFED} files without a \
                 profile suffix; name PyTorch traces *.pt.trace.json[.gz] to have them listed whatever their number"
            ),
        ));
    }
    trace_dirs.extend(by_content.keys().cloned());
    for dir in trace_dirs {
        let found = by_content.get(&dir).map_or(&[][..], Vec::as_slice);
        let hosts = hosts_in(&dir, found, &mut discovery.skipped);
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

/// The hosts of a run directory: its files named as profiles, and `by_content` (files of
/// the directory recognised by their content, named by their file name without `.json[.gz]`).
fn hosts_in(dir: &Path, by_content: &[PathBuf], skipped: &mut Vec<(PathBuf, String)>) -> Vec<HostFile> {
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
    hosts.extend(by_content.iter().filter_map(|path| {
        let host = json_host(path.file_name()?.to_str()?)?;
        Some(HostFile { host: host.to_string(), path: path.clone() })
    }));
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

/// The host name of a `.json[.gz]` file without a profile suffix (a candidate for
/// recognition by content).
fn json_host(file_name: &str) -> Option<&str> {
    let host = file_name.strip_suffix(".json.gz").or_else(|| file_name.strip_suffix(".json"))?;
    (!host.is_empty()).then_some(host)
}

/// Whether a file's first bytes (gunzipped) are a PyTorch profiler trace: a Chrome trace
/// with Kineto's `schemaVersion` or PyTorch's events (`cpu_op`, `External id`) in them.
/// Other Chrome traces (XProf's trace viewer exports beside a profile) are not runs.
fn is_pytorch_trace(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut head = Vec::with_capacity(crate::formats::SNIFF_BYTES);
    std::fs::File::open(path)?.take(crate::formats::SNIFF_BYTES as u64).read_to_end(&mut head)?;
    let Some(detected) = crate::formats::detect(&head) else { return Ok(false) };
    if detected.format != crate::formats::Format::Kineto {
        return Ok(false);
    }
    let content = if detected.gzip { crate::formats::gunzip_head(&head) } else { head };
    let has = |needle: &[u8]| content.windows(needle.len()).any(|w| w == needle);
    Ok(has(b"\"schemaVersion\"") || has(b"\"cpu_op\"") || has(b"\"External id\""))
}

/// Why a session directory of `plugins/profile` lists no host, when it holds files: the
/// formats read and a few of the files it has (None when it is empty or unreadable).
fn why_no_profile(dir: &Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    if names.is_empty() {
        return None;
    }
    names.sort();
    let count = names.len();
    let shown = names.iter().take(3).map(String::as_str).collect::<Vec<_>>().join(", ");
    let more = if count > 3 { format!(" and {} more", count - 3) } else { String::new() };
    Some(format!(
        "no profile oxprof reads (.xplane.pb, .pt.trace.json; .gz too) among its {count} file(s): {shown}{more} \
         (per-tool files such as overview_page.pb are TensorBoard's older profile plugin's; capture again to get \
         .xplane.pb)"
    ))
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
        assert_eq!(host_of_file_name("tpu-host-007.oxpartial"), Some("tpu-host-007"));
        assert_eq!(host_of_file_name(".oxpartial"), None);
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

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    const TRACE: &[u8] =
        br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}]}"#;

    /// A folder of mixed traces (HTA's and TraceLens's test data): PyTorch traces of any
    /// `.json[.gz]` name are found by content, loose `.xplane.pb` folders are runs, and a
    /// session of `plugins/profile` without an `.xplane.pb` is listed as skipped with why.
    #[test]
    fn a_folder_of_mixed_traces_lists_every_profile_and_says_what_it_skips() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(&root.join("hta/trace_filter/sampled_rank-0.json.gz"), &gzip(TRACE));
        write(&root.join("hta/trace_filter/sampled_rank-1.json"), TRACE);
        write(&root.join("tracelens/h100/bert__1016001.json.gz"), &gzip(TRACE));
        write(&root.join("tracelens/h100/results.json"), br#"{"kernels": 3}"#);
        write(&root.join("MANIFEST.json"), b"[1, 2]");
        // XProf's trace viewer export (a Chrome trace, not PyTorch's) beside a profile.
        write(&root.join("jax/xprof_out/trace_viewer.json.gz"), &gzip(br#"{"displayTimeUnit":"ns","traceEvents":[]}"#));
        touch(&root.join("xprof/test_xplanes/tpu_inference_2.xplane.pb"));
        touch(&root.join("kineto/samples/worker0.1623143089861.pt.trace.json.gz"));
        touch(&root.join("demo/plugins/profile/GPU-multi-worker/10.0.0.1_6003.xplane.pb"));
        touch(&root.join("demo/plugins/profile/GPU-input-bound/localhost.overview_page.pb"));
        touch(&root.join("demo/plugins/profile/GPU-input-bound/localhost.input_pipeline.pb"));
        std::fs::create_dir_all(root.join("demo/plugins/profile/empty")).unwrap();
        let d = discover(root).unwrap();
        let runs: Vec<(&str, Vec<&str>)> =
            d.runs.iter().map(|r| (r.name.as_str(), r.hosts.iter().map(|h| h.host.as_str()).collect())).collect();
        assert_eq!(
            runs,
            [
                ("xprof/test_xplanes", vec!["tpu_inference_2"]),
                ("tracelens/h100", vec!["bert__1016001"]),
                ("kineto/samples", vec!["worker0.1623143089861"]),
                ("hta/trace_filter", vec!["sampled_rank-0", "sampled_rank-1"]),
                ("demo/GPU-multi-worker", vec!["10.0.0.1_6003"]),
            ]
        );
        assert_eq!(d.runs[3].hosts[0].path, root.join("hta/trace_filter/sampled_rank-0.json.gz"));
        assert_eq!(d.skipped.len(), 1, "{:?}", d.skipped);
        let (dir, why) = &d.skipped[0];
        assert_eq!(dir, &root.join("demo/plugins/profile/GPU-input-bound"));
        assert!(why.contains("no profile oxprof reads") && why.contains("localhost.input_pipeline.pb"), "{why}");
        // A folder of content-recognised traces given directly.
        let d = discover(&root.join("hta/trace_filter")).unwrap();
        assert_eq!(d.runs.len(), 1);
        assert_eq!(d.runs[0].hosts.len(), 2);
    }

    /// Recognition by content opens at most MAX_SNIFFED files per discovery; the rest are
    /// counted in `skipped`, with the way to have them listed.
    #[test]
    fn json_files_beyond_the_limit_are_counted_not_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for i in 0..MAX_SNIFFED + 3 {
            write(&root.join(format!("many/t{i:04}.json")), TRACE);
        }
        let d = discover(root).unwrap();
        assert_eq!(d.runs.len(), 1);
        assert_eq!(d.runs[0].hosts.len(), MAX_SNIFFED);
        assert_eq!(d.skipped.len(), 1, "{:?}", d.skipped);
        assert!(d.skipped[0].1.starts_with("3 more .json file(s) not examined"), "{:?}", d.skipped);
    }
}
