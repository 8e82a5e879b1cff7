//! Runs and hosts from one flat listing of object names, by the layout rules of
//! `oxprof_format::discovery` (which walks a directory instead):
//!
//! ```text
//! <root>/[<tb_run>/]plugins/profile/<run>/<host>.xplane.pb     run "<run>" or "<tb_run>/<run>"
//! <root>/<dir>/<worker>.pt.trace.json[.gz]                      run "<dir>" (PyTorch)
//! <root>/<host>.xplane.pb                                       the root is one run
//! ```
//!
//! Runs come newest (greatest name) first, hosts sorted by name, and a plain file is
//! preferred over its `.gz` twin, as on disk.

use oxprof_format::formats::{Format, format_of_name};
use oxprof_format::{Discovery, DiscoveryError, HostFile, Run};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How deep below the root `plugins/profile` is looked for (as on disk).
const MAX_DEPTH: usize = 12;

/// Runs and hosts among `names` (paths relative to `root`, `/`-separated), named under
/// `root` (`<root>/<name>`).
pub fn discover_names<'a>(root: &str, names: impl IntoIterator<Item = &'a str>) -> Result<Discovery, DiscoveryError> {
    let root_name = root.rsplit('/').next().unwrap_or(root).to_string();
    // Run directory (relative) → (run name, hosts).
    let mut runs: BTreeMap<String, (String, Vec<HostFile>)> = BTreeMap::new();
    let mut direct: Vec<HostFile> = Vec::new();
    for name in names {
        let parts: Vec<&str> = name.split('/').filter(|p| !p.is_empty()).collect();
        let Some((file, dirs)) = parts.split_last() else { continue };
        let Some((spec, host)) = format_of_name(file) else { continue };
        let host = HostFile { host: host.to_string(), path: PathBuf::from(format!("{root}/{name}")) };
        if dirs.is_empty() {
            direct.push(host);
            continue;
        }
        let profile_at = dirs.windows(2).position(|w| w == ["plugins", "profile"]);
        let run_name = match profile_at {
            // `<tb_run>/plugins/profile/<run>/<file>`: the file sits right in the run directory.
            Some(at) if at + 3 == dirs.len() && at < MAX_DEPTH => {
                let tb_run = dirs[..at].join("/");
                let run = dirs[at + 2];
                if tb_run.is_empty() { run.to_string() } else { format!("{tb_run}/{run}") }
            }
            _ if spec.format == Format::Kineto => dirs.join("/"),
            _ => continue,
        };
        runs.entry(dirs.join("/")).or_insert_with(|| (run_name, Vec::new())).1.push(host);
    }
    let mut discovery = Discovery::default();
    if !direct.is_empty() {
        // A run directory given directly: its own files are the run (as on disk).
        discovery.runs.push(Run { name: root_name, dir: PathBuf::from(root), hosts: sorted(direct) });
        return Ok(discovery);
    }
    for (dir, (name, hosts)) in runs {
        discovery.runs.push(Run { name, dir: PathBuf::from(format!("{root}/{dir}")), hosts: sorted(hosts) });
    }
    if discovery.runs.is_empty() {
        return Err(DiscoveryError::NoProfiles(PathBuf::from(root)));
    }
    discovery.runs.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(discovery)
}

/// Hosts by name, a plain file preferred over its `.gz` twin.
fn sorted(mut hosts: Vec<HostFile>) -> Vec<HostFile> {
    hosts.sort_by(|a, b| a.host.cmp(&b.host).then_with(|| is_gz(a).cmp(&is_gz(b))));
    hosts.dedup_by(|later, earlier| later.host == earlier.host);
    hosts
}

fn is_gz(host: &HostFile) -> bool {
    host.path.extension().is_some_and(|e| e == "gz")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_runs_like_the_directory_walk_does() {
        let names = [
            "plugins/profile/2024_01_01_00_00_00/a.xplane.pb",
            "plugins/profile/2024_01_01_00_00_00/b.xplane.pb",
            "plugins/profile/2024_01_01_00_00_00/b.xplane.pb.gz",
            "plugins/profile/2024_01_01_00_00_00/notes.txt",
            "train/plugins/profile/2025_02_02_00_00_00/vm.xplane.pb.gz",
            "torch/rank0.1700000000.pt.trace.json",
            "plugins/profile/2024_01_01_00_00_00/deeper/x.xplane.pb",
        ];
        let d = discover_names("s3://b/logs", names).unwrap();
        let runs: Vec<_> = d.runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(runs, ["train/2025_02_02_00_00_00", "torch", "2024_01_01_00_00_00"]);
        let hosts: Vec<_> = d.runs[2].hosts.iter().map(|h| h.path.to_str().unwrap()).collect();
        assert_eq!(
            hosts,
            [
                "s3://b/logs/plugins/profile/2024_01_01_00_00_00/a.xplane.pb",
                "s3://b/logs/plugins/profile/2024_01_01_00_00_00/b.xplane.pb"
            ]
        );
        assert_eq!(d.runs[2].dir, PathBuf::from("s3://b/logs/plugins/profile/2024_01_01_00_00_00"));
        assert_eq!(d.runs[1].hosts[0].host, "rank0.1700000000");
    }

    #[test]
    fn a_run_directory_is_its_own_run_and_nothing_is_an_error() {
        let d = discover_names("gs://b/runs/r1", ["h1.xplane.pb", "h0.xplane.pb"]).unwrap();
        assert_eq!(d.runs.len(), 1);
        assert_eq!(d.runs[0].name, "r1");
        assert_eq!(d.runs[0].hosts[0].host, "h0");
        assert!(matches!(discover_names("gs://b/x", ["a.txt"]), Err(DiscoveryError::NoProfiles(_))));
    }
}
