//! Pods computed apart: the plan a distributed job follows (one task per host, [`plan`]),
//! one host's partial result computed from its profile ([`partial_of`]) and a pod result's
//! own combine of every host ([`combine_pod`]). The files and what reads them are
//! `crate::partial`'s, re-exported here.
//!
//! A pod result directory holds one partial per host and the manifest; discovery lists it
//! as a run whose hosts are the partials. The multi-host tools answer from the partials
//! through the same combines as from the hosts' files (a partial's analysis is the one the
//! session computes, round-tripped exactly), so Spark executors that compute partials apart
//! and one machine that reads every file give byte-identical answers. Tools that need a
//! host's events refuse a partial host and say where its profile is.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::op_stats::fold_hosts;
pub use crate::partial::{
    COMBINED_FILE, COMBINED_KIND, COMBINED_VERSION, HostPartial, PARTIAL_KIND, PARTIAL_VERSION, artifact_kind,
    decode_partial, encode_partial, is_partial,
};
use crate::partial::{CombinedParts, encode_combined, megascale_facts, read_partial, stamps, this_oxprof};
pub use crate::pod_source::{FailedHost, MANIFEST_FILE, MANIFEST_FORMAT, ManifestHost, PodManifest};
use crate::session::Session;
use crate::tool::Features;
use oxprof_format::HostFile;
use oxprof_xprof::op_stats::PerCoreStepInfo;
use oxprof_xprof::op_stats::convert::{StepSelection, xspace_to_op_stats};
use oxprof_xprof::tools::megascale::{HostMegascale, megascale_stats_of};
use serde::{Deserialize, Serialize};

/// `file`'s partial, from one decode of the host's profile (every line).
pub fn compute_partial(session: &Session, file: &HostFile) -> Result<HostPartial, ApiError> {
    if is_partial(&file.path) {
        return read_partial(session, file);
    }
    let source_bytes = session.store().stat(&file.path)?.size;
    let _admission = session.admit();
    let space = session.load(file, &|_| true)?;
    let mut analysis = xspace_to_op_stats(&space);
    // XProf's per-core all-reduce lists were 99 % of a TPU host's partial (1 024 per core
    // and step on the generated pod): their exact summary is what the combine reads.
    analysis.op_stats.step_db.step_sequence.iter_mut().for_each(PerCoreStepInfo::summarise_all_reduces);
    Ok(HostPartial {
        host: file.host.clone(),
        source: file.path.to_string_lossy().into_owned(),
        source_bytes,
        written_by: this_oxprof(),
        analysis,
        megascale: HostMegascale::of(&space),
        features: Features::of(&space),
    })
}

/// What a distributed job computes/// What a distributed job computes: one task per host of a run.
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
            source: absolute_source(&h.path),
            bytes: session.store().stat(&h.path).ok().map(|s| s.size),
        })
        .collect();
    Ok(PodPlan { run: run.name, hosts })
}

/// A host file as a task takes it and pod.json keeps it: a URL as it is, a local path made
/// absolute (a relative one would mean another folder to each process that reads it, and
/// nothing to a server opening the pod result later).
fn absolute_source(path: &std::path::Path) -> String {
    let text = path.to_string_lossy();
    if oxprof_objstore::is_url(&text) {
        return text.into_owned();
    }
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).to_string_lossy().into_owned()
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

/// Every host of the pod result `run` combined, for each step selection, and
/// `megascale_stats` of every host: the bytes of its [`COMBINED_FILE`].
pub fn combine_pod(session: &Session, run: &ServedRun) -> Result<Vec<u8>, ApiError> {
    let partials = stamps(session, run).ok_or_else(|| ApiError::BadParameter {
        name: "path".into(),
        reason: format!("{}: not a pod result (its hosts are not all .oxpartial files)", run.dir.display()),
    })?;
    let files: Vec<&HostFile> = run.hosts.iter().collect();
    let all = fold_hosts(session, &files, false, StepSelection::All)?;
    let complete = fold_hosts(session, &files, false, StepSelection::DropIncomplete)?;
    let hosts = megascale_facts(session, &files)?;
    let (megascale, megascale_notes) = megascale_stats_of(hosts.iter().map(|(h, f)| (*h, f)), true);
    Ok(encode_combined(CombinedParts {
        partials,
        all_steps: (all.op_stats, all.notes),
        complete_steps: (complete.op_stats, complete.notes),
        inference: complete.inference,
        megascale: (megascale, megascale_notes),
    }))
}
