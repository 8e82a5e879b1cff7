//! The HTA tools (`hta_distributed`, `hta_gpu_idle`): Holistic Trace Analysis' numbers on
//! a PyTorch run, each rank one host (file) of the run (shape in
//! `oxprof_pytorch::hta`). Every selected host is loaded whole (host threads and GPU
//! streams) once per session, reduced to HTA's compact event rows and what both tools
//! derive from each rank alone (`oxprof_pytorch::hta::parts`), together with the PyTorch
//! views' parse (`crate::pytorch::host_hta`), and its model dropped; a request assembles the kept
//! parts of the selected ranks.
//!
//! Ranks are `distributedInfo.rank` of each trace; a trace without one takes its
//! position in the run (and a note says so).

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::pytorch::{HtaRank, host_hta};
use crate::request::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_pytorch::hta::distributed::HtaDistributed;
use oxprof_pytorch::hta::gpu_idle::HtaGpuIdle;
use oxprof_pytorch::hta::parts::{RankParts, RankView, filter_applies};
use oxprof_report::Report;
use rayon::prelude::*;
use std::sync::Arc;

/// The selected hosts' ranks from the session (read once with the PyTorch views' parse),
/// each with its number in the report and its parts filtered as the selection calls for,
/// and notes on how ranks were chosen.
struct Selection {
    ranks: Vec<Arc<HtaRank>>,
    numbers: Vec<i64>,
    /// Parts computed again for this selection (`None`: the kept ones fit).
    recomputed: Vec<Option<RankParts>>,
    notes: Vec<String>,
}

impl Selection {
    fn views(&self) -> Vec<RankView<'_>> {
        self.ranks
            .iter()
            .zip(&self.numbers)
            .zip(&self.recomputed)
            .map(|((r, &rank), again)| RankView {
                rank,
                host: &r.trace.host,
                steps: &r.trace.steps,
                parts: again.as_ref().unwrap_or(&r.parts),
            })
            .collect()
    }
}

fn select(session: &Session, run: &ServedRun, request: &DataRequest, refresh: bool) -> Result<Selection, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let ranks = host_hta(session, &files, refresh)?;
    let mut notes = Vec::new();
    let unnamed: Vec<&str> = ranks.iter().filter(|t| t.trace.rank < 0).map(|t| t.trace.host.as_str()).collect();
    if !unnamed.is_empty() && ranks.len() > 1 {
        notes.push(format!(
            "no distributedInfo.rank in {}: ranks there are the host's position in the run",
            unnamed.join(", ")
        ));
    }
    let numbers: Vec<i64> =
        ranks.iter().enumerate().map(|(i, t)| if t.trace.rank < 0 { i as i64 } else { t.trace.rank }).collect();
    let mut seen = std::collections::BTreeMap::new();
    for (t, &rank) in ranks.iter().zip(&numbers) {
        if let Some(first) = seen.insert(rank, t.trace.host.clone()) {
            notes.push(format!("{} and {first} both say rank {rank}: both rows are kept", t.trace.host));
        }
    }
    // The kept parts are filtered as each rank alone calls for; ranks whose selection calls
    // otherwise (their step names differ) are analysed again.
    let applied = filter_applies(ranks.iter().map(|r| r.parts.step_names.as_slice()));
    let recomputed: Vec<Option<RankParts>> = ranks
        .par_iter()
        .map(|r| (r.parts.filtered != applied).then(|| RankParts::compute(&r.trace, applied)))
        .collect();
    let n = recomputed.iter().filter(|p| p.is_some()).count() as u64;
    session.count_with(|c| c.hta_parts_recomputed += n);
    Ok(Selection { ranks, numbers, recomputed, notes })
}

/// [`crate::registry::Compute`] of `hta_distributed`.
pub(crate) fn compute_distributed(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let selection = select(session, run, request, refresh)?;
    let report = HtaDistributed::from_parts(&selection.views());
    Ok(with_notes(Box::new(report), selection.notes))
}

/// [`crate::registry::Compute`] of `hta_gpu_idle`.
pub(crate) fn compute_gpu_idle(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let selection = select(session, run, request, refresh)?;
    let report = HtaGpuIdle::from_parts(&selection.views());
    Ok(with_notes(Box::new(report), selection.notes))
}

/// This family's rows of the registry (`hta_distributed`, `hta_gpu_idle`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::HTA_DISTRIBUTED,
        aliases: &[],
        title: "Distributed (HTA)",
        summary: "per rank of a PyTorch run: idle/compute/non-compute GPU time, comm-comp overlap, comm kernels, stragglers",
        family: Family::Hta,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "hta_distributed",
        content_type: JSON,
        compute: Some(Computation::Custom(compute_distributed)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hta.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::HTA_GPU_IDLE,
        aliases: &[],
        title: "GPU idle time and launches (HTA)",
        summary: "GPU idle time by cause (host wait, kernel wait, other), kernel launch delays, queue length per stream",
        family: Family::Hta,
        hosts: Hosts::EachAndAll,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "hta_gpu_idle",
        content_type: JSON,
        compute: Some(Computation::Custom(compute_gpu_idle)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hta.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
