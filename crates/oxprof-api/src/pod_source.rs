//! A pod result's manifest (`pod.json`) and the per-host drill-down it allows: where a
//! partial host's own profile is and whether a session may read it.
//!
//! A pod result names each host's profile as the job read it: a path on the machines that
//! ran it or an object-store URL. The name comes from a file anyone could have written, so
//! it is read only when it lies inside the session's root (a logdir holding both the run and
//! its pod result) or inside a place the operator allowed (`--pod-sources`): a local path
//! by its canonical form (links resolved, so a link cannot lead out), a URL by its prefix
//! at a `/` boundary, without `.`/`..` segments, queries or fragments. Anything else is
//! refused with a line saying what to allow.

use crate::ApiError;
use oxprof_format::{HostFile, ProfileStore};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The pod result directory's manifest.
pub const MANIFEST_FILE: &str = "pod.json";
/// The manifest's `format` field.
pub const MANIFEST_FORMAT: &str = "oxprof-pod";

/// A pod result directory's `pod.json`, as the job that computed it wrote it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: String,
    /// The manifest's version (1).
    pub version: u32,
    /// Where the hosts' profiles were read (the plan's source).
    pub source: String,
    /// The run of that source.
    pub run: String,
    /// What computed the partials (e.g. `{"kind": "spark", "master": …, "executors": 2}`).
    pub engine: serde_json::Value,
    /// The hosts whose partials are in the directory.
    pub hosts: Vec<ManifestHost>,
    /// The hosts whose partials could not be computed.
    pub failed: Vec<FailedHost>,
}

/// A host of a [`PodManifest`] with its partial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ManifestHost {
    /// The host's name.
    pub host: String,
    /// Its profile (path or URL).
    pub source: String,
    /// Its partial's file name in the directory.
    pub partial: String,
    /// The profile's size.
    pub source_bytes: Option<u64>,
    /// The partial's size.
    pub partial_bytes: Option<u64>,
    /// Seconds its task took.
    pub seconds: Option<f64>,
    /// Peak resident memory of the process that computed it.
    pub peak_rss_bytes: Option<u64>,
}

/// A host of a [`PodManifest`] without a partial, and why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FailedHost {
    /// The host's name.
    pub host: String,
    /// Its profile (path or URL).
    pub source: String,
    /// The error its task reported (one line).
    pub error: String,
}

/// The largest manifest read (a few hundred bytes per host).
const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The pod result manifest in `dir`, read through `store` (`None`: none, too large, or not
/// a manifest).
pub(crate) fn read_manifest(store: &dyn ProfileStore, dir: &Path) -> Option<PodManifest> {
    let path = dir.join(MANIFEST_FILE);
    let size = store.stat(&path).ok()?.size;
    if size > MAX_MANIFEST_BYTES {
        return None;
    }
    serde_json::from_slice(&store.read_range(&path, 0..size).ok()?).ok()
}

/// Where a partial host's profile may be read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SourcePlace {
    /// Inside the session's own root: its store reads it.
    Root,
    /// Inside this `--pod-sources` entry.
    Allowed(String),
}

/// Where the profile of `file` (a partial host of the pod result that `store` holds) is, as
/// its pod.json names it, and the place that allows reading it: the store's root or one of
/// `allowed` (`--pod-sources`).
pub(crate) fn host_source(
    store: &dyn ProfileStore,
    allowed: &[String],
    file: &HostFile,
) -> Result<(SourcePlace, PathBuf), ApiError> {
    let without_events = || ApiError::PodHostWithoutEvents { host: file.host.clone(), path: file.path.clone() };
    let dir = file.path.parent().ok_or_else(without_events)?;
    let partial_name = file.path.file_name().map(|n| n.to_string_lossy().into_owned()).ok_or_else(without_events)?;
    let manifest = read_manifest(store, dir).ok_or_else(without_events)?;
    let entry = manifest.hosts.iter().find(|h| h.partial == partial_name).ok_or_else(without_events)?;
    let refused =
        |reason: String| ApiError::PodHostSource { host: file.host.clone(), profile: entry.source.clone(), reason };
    let source = entry.source.as_str();
    let own_root = store.root().to_string_lossy().into_owned();
    if within(source, &own_root).map_err(&refused)? {
        return Ok((SourcePlace::Root, PathBuf::from(source)));
    }
    for place in allowed {
        if within(source, place).map_err(&refused)? {
            return Ok((SourcePlace::Allowed(place.clone()), PathBuf::from(source)));
        }
    }
    let places: Vec<&str> = std::iter::once(own_root.as_str()).chain(allowed.iter().map(String::as_str)).collect();
    Err(refused(format!(
        "lies outside {}; to read it, serve or open the pod result with --pod-sources naming the place the job read \
         (e.g. --pod-sources {})",
        places.join(" and "),
        suggested_place(&manifest, source)
    )))
}

/// What `--pod-sources` would allow `source`: the job's source (a run or logdir) when it
/// holds `source`, else `source`'s folder.
fn suggested_place(manifest: &PodManifest, source: &str) -> String {
    if !manifest.source.is_empty() && within(source, &manifest.source).unwrap_or(false) {
        return manifest.source.clone();
    }
    match source.rfind('/') {
        Some(at) if at > 0 => source[..at].to_string(),
        _ => source.to_string(),
    }
}

/// Whether `source` lies inside `root` (`Err`: `source` itself is not something oxprof
/// reads for a pod host, whatever the root).
fn within(source: &str, root: &str) -> Result<bool, String> {
    let source_is_url = oxprof_objstore::is_url(source);
    if source_is_url {
        let (_, address) = source.split_once("://").unwrap_or(("", source));
        if source.contains(['?', '#']) || address.split('/').any(|segment| segment == "." || segment == "..") {
            return Err("is not a plain object URL (it has a query, a fragment or a . or .. segment)".into());
        }
    } else if !Path::new(source).is_absolute() {
        return Err("is a relative path, which says nothing about where it is".into());
    }
    if oxprof_objstore::is_url(root) != source_is_url {
        return Ok(false);
    }
    if source_is_url {
        let root = root.trim_end_matches('/');
        return Ok(source.strip_prefix(root).is_some_and(|rest| rest.starts_with('/')));
    }
    // Links resolved on both sides: a link inside the root cannot lead a read out of it.
    let Ok(canonical_root) = std::fs::canonicalize(root) else { return Ok(false) };
    match std::fs::canonicalize(source) {
        Ok(source) => Ok(source.starts_with(&canonical_root)),
        // Gone since the job read it: inside by its name alone (the read then says it is
        // missing), which a `..` could not bend.
        Err(_) => {
            let source = Path::new(source);
            let plain = source.components().all(|c| !matches!(c, std::path::Component::ParentDir));
            Ok(plain && (source.starts_with(root) || source.starts_with(&canonical_root)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_inside_their_prefix_only() {
        assert_eq!(within("s3://b/logs/run/h.xplane.pb", "s3://b/logs"), Ok(true));
        assert_eq!(within("s3://b/logs/run/h.xplane.pb", "s3://b/logs/"), Ok(true));
        assert_eq!(within("s3://b/logsx/h.xplane.pb", "s3://b/logs"), Ok(false));
        assert_eq!(within("s3://other/logs/h.xplane.pb", "s3://b/logs"), Ok(false));
        assert_eq!(within("gs://b/logs/h.xplane.pb", "s3://b/logs"), Ok(false));
        assert_eq!(within("s3://b/logs/h.xplane.pb", "/tmp"), Ok(false));
        for bad in ["s3://b/logs/../secret.pb", "s3://b/logs/./h.pb", "s3://b/logs/h.pb?x=1", "s3://b/logs/h.pb#f"] {
            assert!(within(bad, "s3://b/logs").is_err(), "{bad}");
        }
        assert!(within("logs/h.xplane.pb", "/").is_err());
    }

    #[test]
    fn local_paths_are_inside_their_root_with_links_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("run/h.xplane.pb"), b"x").unwrap();
        std::fs::write(outside.join("secret.pb"), b"x").unwrap();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        let r = s(&root);
        assert_eq!(within(&s(&root.join("run/h.xplane.pb")), &r), Ok(true));
        assert_eq!(within(&s(&outside.join("secret.pb")), &r), Ok(false));
        assert_eq!(within(&s(&root.join("run/../../outside/secret.pb")), &r), Ok(false));
        assert_eq!(within(&s(&root.join("run/missing.pb")), &r), Ok(true));
        assert_eq!(within(&s(&root.join("run/../../outside/missing.pb")), &r), Ok(false));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.join("secret.pb"), root.join("run/link.pb")).unwrap();
            assert_eq!(within(&s(&root.join("run/link.pb")), &r), Ok(false));
        }
    }
}
