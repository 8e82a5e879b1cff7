//! A pod's per-host partial results: what one host contributes to every multi-host tool
//! ([`HostPartial`]: its OpStats analysis, its DCN collective facts and the features that
//! list a run's tools), their file format (`<host>.oxpartial`, a versioned
//! [`oxprof_wire::artifact`]), the plan a distributed job follows ([`plan`]) and the pod
//! result directory's manifest (`pod.json`, [`PodManifest`]).
//!
//! A pod result directory holds one partial per host and the manifest; discovery lists it
//! as a run whose hosts are the partials. The multi-host tools answer from the partials
//! through the same combines as from the hosts' files (a partial's analysis is the one the
//! session computes, round-tripped exactly), so Spark executors that compute partials apart
//! and one machine that reads every file give byte-identical answers. Tools that need a
//! host's events refuse a partial host and say where its profile is.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist::{AnalysisIn, AnalysisOut, BUILD_FINGERPRINT};
use crate::registry::Features;
use crate::session::Session;
use oxprof_format::HostFile;
use oxprof_format::discovery::POD_PARTIAL_SUFFIX;
use oxprof_format::limits::{Limit, LimitExceeded};
use oxprof_wire::artifact;
use oxprof_xprof::op_stats::convert::{HostAnalysis, xspace_to_op_stats};
use oxprof_xprof::tools::megascale::{HostMegascale, megascale_plane};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The artifact kind of a partial.
pub const PARTIAL_KIND: &str = "host-partial";
/// The partial format this build writes and reads.
pub const PARTIAL_VERSION: u32 = 1;
/// The pod result directory's manifest.
pub const MANIFEST_FILE: &str = "pod.json";
/// The manifest's `format` field.
pub const MANIFEST_FORMAT: &str = "oxprof-pod";

/// One host's contribution to the multi-host tools.
#[derive(Debug)]
pub struct HostPartial {
    /// The host's name.
    pub host: String,
    /// The host's profile as it was named (path or URL).
    pub source: String,
    /// Its size in bytes.
    pub source_bytes: u64,
    /// The oxprof that computed it (`oxprof 0.1.0 (build …)`).
    pub written_by: String,
    /// The host's OpStats analysis (every step), as the session computes it.
    pub analysis: HostAnalysis,
    /// Its DCN collective facts (`megascale_stats`).
    pub megascale: HostMegascale,
    /// What the host offers, which lists a run's tools.
    pub features: Features,
}

#[derive(Serialize)]
struct PartialOut<'a> {
    host: &'a str,
    source: &'a str,
    source_bytes: u64,
    written_by: &'a str,
    analysis: AnalysisOut<'a>,
    megascale: &'a HostMegascale,
    features: &'a Features,
}

#[derive(Deserialize)]
struct PartialIn {
    host: String,
    source: String,
    source_bytes: u64,
    written_by: String,
    analysis: AnalysisIn,
    megascale: HostMegascale,
    features: Features,
}

/// Whether `path` names a pod's partial result.
pub fn is_partial(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(POD_PARTIAL_SUFFIX) && n.len() > POD_PARTIAL_SUFFIX.len())
}

/// Which oxprof this is, as a partial records its writer.
fn this_oxprof() -> String {
    format!("oxprof {} (build {BUILD_FINGERPRINT})", env!("CARGO_PKG_VERSION"))
}

/// `file`'s partial, from one decode of the host's profile (every line).
pub fn compute_partial(session: &Session, file: &HostFile) -> Result<HostPartial, ApiError> {
    if is_partial(&file.path) {
        return read_partial(session, file);
    }
    let source_bytes = session.store().stat(&file.path)?.size;
    let _admission = session.admit();
    let space = session.load(file, &|_| true)?;
    Ok(HostPartial {
        host: file.host.clone(),
        source: file.path.to_string_lossy().into_owned(),
        source_bytes,
        written_by: this_oxprof(),
        analysis: xspace_to_op_stats(&space),
        megascale: HostMegascale::of(&space),
        features: Features::of(&space),
    })
}

/// `partial` as the bytes of a `.oxpartial` file.
pub fn encode_partial(partial: &HostPartial) -> Vec<u8> {
    let out = PartialOut {
        host: &partial.host,
        source: &partial.source,
        source_bytes: partial.source_bytes,
        written_by: &partial.written_by,
        analysis: AnalysisOut::of(&partial.analysis),
        megascale: &partial.megascale,
        features: &partial.features,
    };
    // Serializing plain data into memory cannot fail.
    artifact::encode(PARTIAL_KIND, PARTIAL_VERSION, &out).unwrap_or_default()
}

/// The partial in `bytes` (read from `path`), its JSON within `max_json_bytes`.
pub fn decode_partial(path: &Path, bytes: &[u8], max_json_bytes: u64) -> Result<HostPartial, ApiError> {
    let p: PartialIn = artifact::decode(PARTIAL_KIND, PARTIAL_VERSION, bytes, max_json_bytes)
        .map_err(|cause| ApiError::Partial { path: path.to_path_buf(), cause })?;
    Ok(HostPartial {
        host: p.host,
        source: p.source,
        source_bytes: p.source_bytes,
        written_by: p.written_by,
        analysis: p.analysis.into_analysis(),
        megascale: p.megascale,
        features: p.features,
    })
}

/// A partial host's file read through the session's store, within its profile budget.
pub(crate) fn read_partial(session: &Session, file: &HostFile) -> Result<HostPartial, ApiError> {
    let store = session.store();
    let size = store.stat(&file.path)?.size;
    let allowed = session.limits().max_profile_bytes;
    if size > allowed {
        let exceeded = LimitExceeded { limit: Limit::ProfileBytes, allowed, at_least: size };
        return Err(oxprof_format::LoadError::LimitExceeded { path: file.path.clone(), exceeded }.into());
    }
    let bytes = store.read_range(&file.path, 0..size)?;
    decode_partial(&file.path, &bytes, allowed)
}

/// A host's DCN collective facts: from its partial, or from its profile (metadata and the
/// lines of `/device:TPU:0` only).
pub(crate) fn host_megascale(session: &Session, file: &HostFile) -> Result<HostMegascale, ApiError> {
    if is_partial(&file.path) {
        return Ok(read_partial(session, file)?.megascale);
    }
    let tensor_core_0 = megascale_plane();
    let _admission = session.admit();
    let space = session.load(file, &|plane| plane == tensor_core_0)?;
    Ok(HostMegascale::of(&space))
}

/// What lists a run's tools: its first host's [`Features`], from its partial when the run
/// is a pod result (`lines_of`: the planes whose lines a profile's features need).
pub(crate) fn first_host_features(
    session: &Session,
    first: &HostFile,
    lines_of: &dyn Fn(&str) -> bool,
) -> Result<Features, ApiError> {
    if is_partial(&first.path) {
        return Ok(read_partial(session, first)?.features);
    }
    let _admission = session.admit();
    let space = session.load(first, lines_of)?;
    Ok(Features::of(&space))
}

/// What a distributed job computes: one task per host of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodPlan {
    /// The run.
    pub run: String,
    /// Its hosts, in the run's order.
    pub hosts: Vec<PlannedHost>,
}

/// One host of a [`PodPlan`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedHost {
    /// The host's name.
    pub host: String,
    /// Its profile, as `oxprof pod partial` takes it (a path or an object-store URL).
    pub source: String,
    /// Its size (`None`: it could not be read now; its task will say why).
    pub bytes: Option<u64>,
}

/// The plan of `run` (`None`: the newest) of the session's profiles.
pub fn plan(session: &Session, run: Option<&str>) -> Result<PodPlan, ApiError> {
    let run: ServedRun = session.run(run)?;
    let hosts = run
        .hosts
        .iter()
        .map(|h| PlannedHost {
            host: h.host.clone(),
            source: h.path.to_string_lossy().into_owned(),
            bytes: session.store().stat(&h.path).ok().map(|s| s.size),
        })
        .collect();
    Ok(PodPlan { run: run.name, hosts })
}

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

/// The manifest of `run` when it is a pod result (its hosts are partials) and has one.
pub(crate) fn manifest_of(session: &Session, run: &ServedRun) -> Option<PodManifest> {
    if !run.hosts.iter().any(|h| is_partial(&h.path)) {
        return None;
    }
    let path = run.dir.join(MANIFEST_FILE);
    let store = session.store();
    let size = store.stat(&path).ok()?.size;
    if size > MAX_MANIFEST_BYTES {
        return None;
    }
    serde_json::from_slice(&store.read_range(&path, 0..size).ok()?).ok()
}

/// oxprof's notes on a pod result: the hosts its job could not compute (the answer covers
/// the others).
pub(crate) fn pod_notes(session: &Session, run: &ServedRun) -> Vec<String> {
    let Some(manifest) = manifest_of(session, run) else { return Vec::new() };
    manifest
        .failed
        .iter()
        .map(|f| {
            format!("{}: not in this pod result: its partial could not be computed ({}): {}", f.host, f.source, f.error)
        })
        .collect()
}

/// The partial of the host `host` of the session's newest run (`None`: its only host; a
/// run of several hosts needs one named).
pub fn partial_of(session: &Session, host: Option<&str>) -> Result<HostPartial, ApiError> {
    let run = session.run(None)?;
    let file = match host {
        Some(name) => run.host(name).ok_or_else(|| ApiError::UnknownHost {
            run: run.name.clone(),
            host: name.to_string(),
            available: run.hosts.iter().map(|h| h.host.as_str()).collect::<Vec<_>>().join(", "),
        })?,
        None => match run.hosts.as_slice() {
            [only] => only,
            hosts => {
                return Err(ApiError::BadParameter {
                    name: "host".into(),
                    reason: format!(
                        "{} holds {} hosts; a partial is one host's: name it with --host",
                        session.store().root().display(),
                        hosts.len()
                    ),
                });
            }
        },
    };
    compute_partial(session, file)
}
