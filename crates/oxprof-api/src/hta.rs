//! The HTA tools (`hta_distributed`, `hta_gpu_idle`): Holistic Trace Analysis' numbers on
//! a PyTorch run, each rank one host (file) of the run (shape in
//! `oxprof_pytorch::hta`). Every selected host is loaded whole (host threads and GPU
//! streams) once per session, together with the PyTorch views' parse
//! (`crate::pytorch::host_hta`): HTA's rows of it are reduced to what both tools derive
//! from each rank alone (`oxprof_pytorch::hta::parts`) and dropped with the model; a
//! request assembles the kept parts of the selected ranks. Each rank's steps and parts are
//! also kept in the persistent cache, so a later process answers without reading the
//! traces. A selection whose step filter differs from a rank's own reads that rank's rows
//! again, once: the parts it derives are kept too.
//!
//! Ranks are `distributedInfo.rank` of each trace; a trace without one takes its
//! position in the run (and a note says so).

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist::{HTA_RANK_ENTRY, KeptRank};
use crate::pytorch::{HtaRank, PytorchFile, host_hta};
use crate::request::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_format::HostFile;
use oxprof_pytorch::hta::distributed::HtaDistributed;
use oxprof_pytorch::hta::gpu_idle::HtaGpuIdle;
use oxprof_pytorch::hta::parts::{RankParts, RankView, filter_applies};
use oxprof_pytorch::hta::trace::{ProfilerStep, RankTrace};
use oxprof_report::Report;
use std::sync::Arc;

/// One selected rank: loaded in this session, or as an earlier process kept it in the
/// persistent cache (its steps and parts only).
enum Ranked {
    Loaded(Arc<HtaRank>),
    Kept(Box<KeptRank<'static>>),
}

impl Ranked {
    /// `distributedInfo.rank`, −1 when the trace names none.
    fn rank(&self) -> i64 {
        match self {
            Ranked::Loaded(r) => r.rank,
            Ranked::Kept(k) => k.rank,
        }
    }

    fn steps(&self) -> &[ProfilerStep] {
        match self {
            Ranked::Loaded(r) => &r.steps,
            Ranked::Kept(k) => &k.steps,
        }
    }

    /// The parts computed on load, filtered as the rank alone calls for.
    fn parts(&self) -> &RankParts {
        match self {
            Ranked::Loaded(r) => &r.parts,
            Ranked::Kept(k) => &k.parts,
        }
    }
}

/// The selected hosts' ranks (each read once per session with the PyTorch views' parse, or
/// kept on disk by an earlier one), each with its number in the report and its parts
/// filtered as the selection calls for, and notes on how ranks were chosen.
struct Selection<'r> {
    files: Vec<&'r HostFile>,
    ranks: Vec<Ranked>,
    numbers: Vec<i64>,
    /// Parts computed again for this selection (`None`: the kept ones fit).
    recomputed: Vec<Option<RankParts>>,
    notes: Vec<String>,
}

impl Selection<'_> {
    fn views(&self) -> Vec<RankView<'_>> {
        self.ranks
            .iter()
            .zip(&self.files)
            .zip(&self.numbers)
            .zip(&self.recomputed)
            .map(|(((r, file), &rank), again)| RankView {
                rank,
                host: &file.host,
                steps: r.steps(),
                parts: again.as_ref().unwrap_or(r.parts()),
            })
            .collect()
    }
}

/// Each file's rank: from this session's memory, else (unless refreshing) from the
/// persistent cache, else loaded (the files to load read side by side, as one lookup).
fn ranks_of(session: &Session, files: &[&HostFile], refresh: bool) -> Result<Vec<Ranked>, ApiError> {
    let mut ranks: Vec<Option<Ranked>> = files
        .iter()
        .map(|file| {
            if refresh || session.host_artifact_in_memory::<PytorchFile>(file).is_some() {
                return None;
            }
            let kept = session.persisted(file, HTA_RANK_ENTRY, "").read().and_then(|b| KeptRank::decode(&b))?;
            Some(Ranked::Kept(Box::new(kept)))
        })
        .collect();
    let from_disk = ranks.iter().flatten().count() as u64;
    session.count_with(|c| c.hta_ranks_from_disk += from_disk);
    let missing: Vec<usize> = (0..files.len()).filter(|&i| ranks[i].is_none()).collect();
    let loaded = host_hta(session, &missing.iter().map(|&i| files[i]).collect::<Vec<_>>(), refresh)?;
    for (i, rank) in missing.into_iter().zip(loaded) {
        ranks[i] = Some(Ranked::Loaded(rank));
    }
    Ok(ranks.into_iter().flatten().collect())
}

fn select<'r>(
    session: &Session,
    run: &'r ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Selection<'r>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let ranks = ranks_of(session, &files, refresh)?;
    let mut notes = Vec::new();
    let unnamed: Vec<&str> =
        ranks.iter().zip(&files).filter(|(r, _)| r.rank() < 0).map(|(_, f)| f.host.as_str()).collect();
    if !unnamed.is_empty() && ranks.len() > 1 {
        notes.push(format!(
            "no distributedInfo.rank in {}: ranks there are the host's position in the run",
            unnamed.join(", ")
        ));
    }
    let numbers: Vec<i64> =
        ranks.iter().enumerate().map(|(i, r)| if r.rank() < 0 { i as i64 } else { r.rank() }).collect();
    let mut seen = std::collections::BTreeMap::new();
    for (file, &rank) in files.iter().zip(&numbers) {
        if let Some(first) = seen.insert(rank, file.host.clone()) {
            notes.push(format!("{} and {first} both say rank {rank}: both rows are kept", file.host));
        }
    }
    // The kept parts are filtered as each rank alone calls for; ranks whose selection calls
    // otherwise (their step names differ) take parts filtered the other way.
    let applied = filter_applies(ranks.iter().map(|r| r.parts().step_names.as_slice()));
    // One rank at a time: each may read a multi-GB trace again.
    let recomputed: Vec<Option<RankParts>> = ranks
        .iter()
        .zip(&files)
        .map(|(r, file)| {
            (r.parts().filtered != applied).then(|| parts_other_way(session, file, r, applied, refresh)).transpose()
        })
        .collect::<Result<_, _>>()?;
    Ok(Selection { files, ranks, numbers, recomputed, notes })
}

/// The persistent cache's name for a rank's parts filtered (or not) by a selection.
fn other_way_key(filtered: bool) -> &'static str {
    if filtered { "parts-filtered" } else { "parts-unfiltered" }
}

/// A rank's parts filtered as `applied` says, which its own are not (a selection whose
/// ranks together name a different number of steps): kept with the rank in memory, else
/// in the persistent cache, else computed from the rank's rows read again from the trace
/// (the session keeps only what was derived from them) and then kept in both.
fn parts_other_way(
    session: &Session,
    file: &HostFile,
    rank: &Ranked,
    applied: bool,
    refresh: bool,
) -> Result<RankParts, ApiError> {
    // Held while the parts are made: a request at the same time waits for them instead of
    // reading the trace a second time. Only a requesting thread waits (see
    // `crate::session`); on the pool (whose threads the holder's work may need) a request
    // finding it held makes the parts itself.
    let mut memo = match rank {
        Ranked::Loaded(r) if rayon::current_thread_index().is_none() => {
            Some(r.other_way.lock().unwrap_or_else(|p| p.into_inner()))
        }
        Ranked::Loaded(r) => match r.other_way.try_lock() {
            Ok(held) => Some(held),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        },
        Ranked::Kept(_) => None,
    };
    if let Some(parts) = memo.as_deref().and_then(Option::as_ref) {
        return Ok(parts.clone());
    }
    let slot = session.persisted(file, HTA_RANK_ENTRY, other_way_key(applied));
    let kept = (!refresh)
        .then(|| slot.read())
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<RankParts>(&bytes).ok())
        .filter(|parts| parts.filtered == applied);
    let parts = match kept {
        Some(parts) => {
            session.count_with(|c| c.hta_parts_from_disk += 1);
            parts
        }
        None => {
            let space = session.load(file, &|_| true)?;
            let trace = RankTrace::from_space(&space, &file.host, -1);
            rayon::spawn(move || drop(space));
            let parts = RankParts::compute(&trace, applied);
            session.count_with(|c| c.hta_parts_recomputed += 1);
            if slot.is_active() {
                slot.write(|| serde_json::to_vec(&parts).unwrap_or_default());
            }
            parts
        }
    };
    if let Some(memo) = memo.as_deref_mut() {
        *memo = Some(parts.clone());
    }
    Ok(parts)
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
