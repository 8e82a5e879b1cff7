//! The HTA tools (`hta_distributed`, `hta_gpu_idle`): Holistic Trace Analysis' numbers on
//! a PyTorch run, each rank one host (file) of the run (shape in
//! `oxprof_analysis::hta`). Every selected host is loaded whole (host threads and GPU
//! streams) once per session, reduced to HTA's compact event rows together with the
//! PyTorch views' parse (`Session::host_hta`), and its model dropped; requests copy the
//! kept rows.
//!
//! Ranks are `distributedInfo.rank` of each trace; a trace without one takes its
//! position in the run (and a note says so).

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::data::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use oxprof_analysis::hta::distributed::HtaDistributed;
use oxprof_analysis::hta::gpu_idle::HtaGpuIdle;
use oxprof_analysis::hta::trace::RankTrace;
use oxprof_analysis::report::Report;
use rayon::prelude::*;

/// The selected hosts as HTA's rank traces, with notes on how ranks were chosen. Each
/// file's rows come from the session (read once with the PyTorch views' parse); the
/// analyses filter and sort their own copies.
fn rank_traces(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<(Vec<RankTrace>, Vec<String>), ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let cached = session.host_hta(&files, refresh)?;
    let mut out: Vec<RankTrace> = cached.par_iter().map(|t| RankTrace::clone(t)).collect();
    let mut notes = Vec::new();
    let unnamed: Vec<&str> = out.iter().filter(|t| t.rank < 0).map(|t| t.host.as_str()).collect();
    if !unnamed.is_empty() && out.len() > 1 {
        notes.push(format!(
            "no distributedInfo.rank in {}: ranks there are the host's position in the run",
            unnamed.join(", ")
        ));
    }
    for (i, t) in out.iter_mut().enumerate() {
        if t.rank < 0 {
            t.rank = i as i64;
        }
    }
    let mut seen = std::collections::BTreeMap::new();
    for t in &out {
        if let Some(first) = seen.insert(t.rank, t.host.clone()) {
            notes.push(format!("{} and {first} both say rank {}: both rows are kept", t.host, t.rank));
        }
    }
    Ok((out, notes))
}

/// [`crate::registry::Compute`] of `hta_distributed`.
pub(crate) fn compute_distributed(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let (ranks, notes) = rank_traces(session, run, request, refresh)?;
    Ok(with_notes(Box::new(HtaDistributed::compute(ranks)), notes))
}

/// [`crate::registry::Compute`] of `hta_gpu_idle`.
pub(crate) fn compute_gpu_idle(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let (ranks, notes) = rank_traces(session, run, request, refresh)?;
    Ok(with_notes(Box::new(HtaGpuIdle::compute(ranks)), notes))
}
