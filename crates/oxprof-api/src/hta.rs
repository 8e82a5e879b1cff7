//! The HTA tools (`hta_distributed`, `hta_gpu_idle`): Holistic Trace Analysis' numbers on
//! a PyTorch run, each rank one host (file) of the run (shape in
//! `oxprof_analysis::hta`). Every selected host is loaded whole (host threads and GPU
//! streams), reduced to HTA's compact event rows on a pool thread, and its model dropped
//! before the analysis runs.
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

/// The selected hosts as HTA's rank traces, with notes on how ranks were chosen.
fn rank_traces(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
) -> Result<(Vec<RankTrace>, Vec<String>), ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let _admission = session.admit();
    let traces: Vec<(RankTrace, bool)> = files
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let space = session.load(f, &|_| true)?;
            // A rank the trace does not name gets −1 − position, replaced below.
            let t = RankTrace::from_space(&space, &f.host, -1 - i as i64);
            let named = t.rank >= 0;
            Ok((t, named))
        })
        .collect::<Result<_, ApiError>>()?;
    let mut notes = Vec::new();
    let unnamed: Vec<&str> = traces.iter().filter(|(_, named)| !named).map(|(t, _)| t.host.as_str()).collect();
    if !unnamed.is_empty() && traces.len() > 1 {
        notes.push(format!(
            "no distributedInfo.rank in {}: ranks there are the host's position in the run",
            unnamed.join(", ")
        ));
    }
    let mut out: Vec<RankTrace> = traces.into_iter().map(|(t, _)| t).collect();
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
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let (ranks, notes) = rank_traces(session, run, request)?;
    Ok(with_notes(Box::new(HtaDistributed::compute(ranks)), notes))
}

/// [`crate::registry::Compute`] of `hta_gpu_idle`.
pub(crate) fn compute_gpu_idle(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let (ranks, notes) = rank_traces(session, run, request)?;
    Ok(with_notes(Box::new(HtaGpuIdle::compute(ranks)), notes))
}
