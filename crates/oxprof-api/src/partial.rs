//! A pod's per-host partial results as files, and what reads them: one host's contribution
//! to every multi-host tool ([`HostPartial`]: its OpStats analysis, its DCN collective facts
//! and the features that list a run's tools) in `<host>.oxpartial` (a versioned
//! [`oxprof_wire::artifact`]), the pod result directory's manifest (`pod.json`,
//! [`PodManifest`]) and its own combine of every host (`ALL_HOSTS.oxcombined`). The
//! answering modules read partials through it; `crate::pod` computes and writes them.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist::{AnalysisIn, AnalysisOut, BUILD_FINGERPRINT};
use crate::pod_source::{PodManifest, read_manifest};
use crate::session::Session;
use crate::tool::Features;
use oxprof_format::HostFile;
use oxprof_format::limits::{Limit, LimitExceeded};
use oxprof_wire::artifact;
use oxprof_xprof::inference::HostInferenceStats;
use oxprof_xprof::op_stats::OpStats;
use oxprof_xprof::op_stats::convert::{HostAnalysis, StepSelection};
use oxprof_xprof::tools::megascale::{HostMegascale, MegascaleStats, megascale_plane};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The artifact kind of a partial.
pub const PARTIAL_KIND: &str = "host-partial";
/// The partial format this build writes and reads (2: all-reduces as their exact summary,
/// `AllReduceSummary`, instead of XProf's per-core lists).
pub const PARTIAL_VERSION: u32 = 2;

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
    oxprof_format::discovery::is_pod_partial(path)
}

/// Which oxprof this is, as a partial records its writer.
pub(crate) fn this_oxprof() -> String {
    format!("oxprof {} (build {BUILD_FINGERPRINT})", env!("CARGO_PKG_VERSION"))
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
    let damaged = |cause| ApiError::Partial { path: path.to_path_buf(), cause };
    let p: PartialIn = artifact::decode(PARTIAL_KIND, PARTIAL_VERSION, bytes, max_json_bytes).map_err(damaged)?;
    let analysis = p.analysis.into_analysis();
    let steps = &analysis.op_stats.step_db.step_sequence;
    if let Some(step) = steps.iter().find(|s| s.all_reduce_summary.as_ref().is_some_and(|a| !a.is_consistent())) {
        let cause = format!("step {}: a core's all-reduce list is not in the file", step.step_num);
        return Err(damaged(artifact::ArtifactError::Damaged { kind: PARTIAL_KIND.into(), cause }));
    }
    // A partial is merged with others: its all-reduces must be ids, not settled sums.
    if let Some(step) = steps.iter().find(|s| s.all_reduce_summary.as_ref().is_some_and(|a| a.is_settled())) {
        let cause =
            format!("step {}: its all-reduces are settled sums, which only a combine of every host has", step.step_num);
        return Err(damaged(artifact::ArtifactError::Damaged { kind: PARTIAL_KIND.into(), cause }));
    }
    Ok(HostPartial {
        host: p.host,
        source: p.source,
        source_bytes: p.source_bytes,
        written_by: p.written_by,
        analysis,
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

/// The DCN collective facts of `files` in order, up to and with the first host without
/// DCN collectives (XProf answers the empty table there: the hosts after it need not be read).
pub(crate) fn megascale_facts<'f>(
    session: &Session,
    files: &[&'f HostFile],
) -> Result<Vec<(&'f str, HostMegascale)>, ApiError> {
    let mut hosts = Vec::with_capacity(files.len());
    for file in files {
        let facts = host_megascale(session, file)?;
        let without_dcn = !facts.has_megascale_events;
        hosts.push((file.host.as_str(), facts));
        if without_dcn {
            break;
        }
    }
    Ok(hosts)
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

/// The manifest of `run` when it is a pod result (its hosts are partials) and has one.
pub(crate) fn manifest_of(session: &Session, run: &ServedRun) -> Option<PodManifest> {
    if !run.hosts.iter().any(|h| is_partial(&h.path)) {
        return None;
    }
    read_manifest(session.store(), &run.dir)
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

/// The file a pod result's own combine of every host is kept in (`oxprof pod combine`).
pub const COMBINED_FILE: &str = "ALL_HOSTS.oxcombined";
/// The artifact kind of [`COMBINED_FILE`].
pub const COMBINED_KIND: &str = "pod-combined";
/// The combined format this build writes and reads (2: all-reduces summarised, as in
/// partials; 3: each core's all-reduce sums settled, the ids dropped).
pub const COMBINED_VERSION: u32 = 3;

/// Which partial a combine read: a changed, added or removed partial makes it stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PartialStamp {
    host: String,
    size: u64,
    modified_ns: u64,
}

/// One step selection's combine of every host.
#[derive(Serialize, Deserialize)]
struct SelectionCombined {
    op_stats: OpStats,
    /// Each host's advice, `host: advice`, in host order.
    notes: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct CombinedFile {
    partials: Vec<PartialStamp>,
    all_steps: SelectionCombined,
    complete_steps: SelectionCombined,
    inference: Vec<HostInferenceStats>,
    megascale: MegascaleStats,
    megascale_notes: Vec<String>,
}

/// A pod result's combine of every host, as its job computed it once.
pub(crate) struct PodCombined(CombinedFile);

impl PodCombined {
    /// The combined OpStats and host notes of `steps`, with the hosts' inference statistics.
    pub(crate) fn into_selection(self, steps: StepSelection) -> (OpStats, Vec<String>, Vec<HostInferenceStats>) {
        let file = self.0;
        let chosen = match steps {
            StepSelection::All => file.all_steps,
            StepSelection::DropIncomplete => file.complete_steps,
        };
        (chosen.op_stats, chosen.notes, file.inference)
    }

    /// `megascale_stats` of every host, with its notes.
    pub(crate) fn into_megascale(self) -> (MegascaleStats, Vec<String>) {
        (self.0.megascale, self.0.megascale_notes)
    }
}

/// The stamps of `run`'s partials (`None`: one cannot be read, or a host is not a partial).
pub(crate) fn stamps(session: &Session, run: &ServedRun) -> Option<Vec<PartialStamp>> {
    run.hosts
        .iter()
        .map(|h| {
            if !is_partial(&h.path) {
                return None;
            }
            let stat = session.store().stat(&h.path).ok()?;
            Some(PartialStamp { host: h.host.clone(), size: stat.size, modified_ns: stat.modified_ns })
        })
        .collect()
}

/// Every host combined once: what [`COMBINED_FILE`] holds, as its bytes.
pub(crate) struct CombinedParts {
    /// The partials it was computed from ([`stamps`]).
    pub partials: Vec<PartialStamp>,
    /// Every step, and each host's advice.
    pub all_steps: (OpStats, Vec<String>),
    /// Complete steps, and each host's advice.
    pub complete_steps: (OpStats, Vec<String>),
    /// Each host's inference statistics.
    pub inference: Vec<HostInferenceStats>,
    /// `megascale_stats` of every host, and its notes.
    pub megascale: (MegascaleStats, Vec<String>),
}

/// `parts` as the bytes of a [`COMBINED_FILE`].
pub(crate) fn encode_combined(mut parts: CombinedParts) -> Vec<u8> {
    // Nothing merges into a combine of every host: each core's all-reduce sums are final.
    for op_stats in [&mut parts.all_steps.0, &mut parts.complete_steps.0] {
        op_stats
            .step_db
            .step_sequence
            .iter_mut()
            .filter_map(|s| s.all_reduce_summary.as_mut())
            .for_each(|a| a.settle());
    }
    let file = CombinedFile {
        partials: parts.partials,
        all_steps: SelectionCombined { op_stats: parts.all_steps.0, notes: parts.all_steps.1 },
        complete_steps: SelectionCombined { op_stats: parts.complete_steps.0, notes: parts.complete_steps.1 },
        inference: parts.inference,
        megascale: parts.megascale.0,
        megascale_notes: parts.megascale.1,
    };
    // Serializing plain data into memory cannot fail.
    artifact::encode(COMBINED_KIND, COMBINED_VERSION, &file).unwrap_or_default()
}

/// The pod result's [`COMBINED_FILE`] when there is one and it was computed from the
/// partials the run holds now (else the answer combines the partials itself).
pub(crate) fn combined_of(session: &Session, run: &ServedRun) -> Option<PodCombined> {
    let now = stamps(session, run)?;
    let path = run.dir.join(COMBINED_FILE);
    let store = session.store();
    let size = store.stat(&path).ok()?.size;
    let allowed = session.limits().max_profile_bytes;
    if size > allowed {
        return None;
    }
    let bytes = store.read_range(&path, 0..size).ok()?;
    let file: CombinedFile = artifact::decode(COMBINED_KIND, COMBINED_VERSION, &bytes, allowed).ok()?;
    (file.partials == now).then_some(PodCombined(file))
}

/// The kind of oxprof artifact `head` (a file's first bytes) starts, if it is one.
pub fn artifact_kind(head: &[u8]) -> Option<String> {
    artifact::header(head).ok().map(|(kind, _, _)| kind.to_string())
}
