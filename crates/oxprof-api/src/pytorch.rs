//! The PyTorch tools (`pytorch_overview`, `pytorch_op_stats`, `pytorch_kernel_stats`,
//! `pytorch_memory`, `pytorch_modules`): torch-tb-profiler's overview, operator, kernel, memory and module views of one worker's trace, computed
//! by `oxprof_pytorch` from the whole imported trace (host and GPU planes).
//!
//! The parsed trace is kept by the session ([`PytorchFile`], this family's per-host
//! artifact, read with what the HTA tools keep of the rank from one load): the first view
//! reads the file, the others (and the HTA tools) answer from memory.
//!
//! Host selection: one trace per worker/rank; with several selected (`ALL_HOSTS`, or no
//! host on a run of several ranks) the first is shown and a note names the others.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist::{HTA_RANK_ENTRY, KeptRank, PYTORCH_VIEW_ENTRY, Persisted, PytorchViewOut};
use crate::request::{DataRequest, select_hosts, with_notes};
use crate::session::{FileCounts, HostArtifact, Session};
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_format::HostFile;
use oxprof_pytorch::hta::{host_spans::HostSpans, parts::RankParts, trace::ProfilerStep, trace::RankTrace};
use oxprof_pytorch::{
    kernels::PytorchKernelStats, memory::PytorchMemory, modules::PytorchModules, operators::PytorchOpStats,
    overview::PytorchOverview,
};
use oxprof_report::Report;
use std::sync::{Arc, Mutex};

/// One PyTorch trace as both tool families read it: switching between a PyTorch view and an
/// HTA tool on a run answers from memory instead of reading a multi-GB file again.
pub struct PytorchFile {
    parsed: Arc<oxprof_pytorch::Parsed>,
    hta: Arc<HtaRank>,
}

/// One rank as the HTA tools (and explain) read it, from one load with the PyTorch parse:
/// what they derive from HTA's rows, not the rows (millions on a multi-GB trace, dropped
/// with the model).
pub struct HtaRank {
    /// `distributedInfo.rank`, −1 when the trace names none (the caller numbers those).
    pub rank: i64,
    /// The rank's `ProfilerStep#N` events (before the filter), by start.
    pub steps: Vec<ProfilerStep>,
    /// What both HTA tools derive from this rank alone, filtered as the rank's own steps say.
    pub parts: RankParts,
    /// The parts filtered the other way, once a selection of ranks asked for them (read
    /// again from the trace, [`crate::hta`]); locked while they are made, so requests at
    /// once read a multi-GB trace once, not each.
    pub(crate) other_way: Mutex<Option<RankParts>>,
    /// The host spans explain's DataLoader and torch.compile facts read.
    pub spans: HostSpans,
}

impl HtaRank {
    /// What the HTA tools and explain keep of a rank's rows (which go).
    pub fn of_rows(mut trace: RankTrace) -> HtaRank {
        let spans = HostSpans::of_rank(&trace);
        let (rank, steps) = (trace.rank, std::mem::take(&mut trace.steps));
        HtaRank { rank, parts: RankParts::of_own_rank(trace), steps, other_way: Mutex::new(None), spans }
    }

    /// Heap bytes, roughly (what a cache weighs it at).
    fn heap_bytes(&self) -> usize {
        self.steps.capacity() * std::mem::size_of::<ProfilerStep>()
            + self.parts.heap_bytes()
            + self.other_way.lock().map_or(0, |parts| parts.as_ref().map_or(0, RankParts::heap_bytes))
            + self.spans.heap_bytes()
    }
}

impl PytorchFile {
    /// torch-tb-profiler's parse.
    pub fn parsed(&self) -> &Arc<oxprof_pytorch::Parsed> {
        &self.parsed
    }

    /// What the HTA tools keep of the rank.
    pub fn hta(&self) -> &Arc<HtaRank> {
        &self.hta
    }
}

impl HostArtifact for PytorchFile {
    fn compute(session: &Session, file: &HostFile) -> Result<PytorchFile, ApiError> {
        let space = Box::new(session.load(file, &|_| true)?);
        // HTA's rows first, reduced to what its tools and explain read, then the parse:
        // side by side, both sides' rows were alive at once beside the model (0.70x the
        // JSON at the peak on a 2 GB trace; one after the other 0.45x, ~25% slower).
        let hta = Arc::new(HtaRank::of_rows(RankTrace::from_space(&space, &file.host, -1)));
        // The parse's walk frees the model as soon as it has read it, before the trees are
        // built, off the request's path: unmapping takes a while.
        let release = |model: Box<oxprof_model::XSpace>| rayon::spawn(move || drop(model));
        let parsed = oxprof_pytorch::parse_releasing(space, release);
        // Whichever tool read the trace, a later process answers every PyTorch view and
        // both HTA tools from the persistent cache.
        keep_hta_rank(session, file, &hta);
        keep_views(session, file, &parsed);
        Ok(PytorchFile { parsed: Arc::new(parsed), hta })
    }

    fn weight(&self) -> usize {
        self.parsed.heap_bytes() + self.hta.heap_bytes()
    }

    fn count(counts: &mut FileCounts, computed: bool) {
        if computed {
            counts.pytorch_computed += 1;
        } else {
            counts.pytorch_found += 1;
        }
    }
}

/// Each host's PyTorch trace as the PyTorch views read it (parsed once per file, with
/// HTA's rank, and kept, so every view after the first answers without reading the file).
pub fn host_pytorch(
    session: &Session,
    files: &[&HostFile],
    refresh: bool,
) -> Result<Vec<Arc<oxprof_pytorch::Parsed>>, ApiError> {
    Ok(session.host_artifacts::<PytorchFile>(files, refresh)?.into_iter().map(|f| f.parsed.clone()).collect())
}

/// Each host's trace as both families read it, from one artifact lookup: a caller that
/// needs the parse and HTA's rank (explain) reads the file once even in a session that
/// keeps nothing.
pub fn host_pytorch_files(
    session: &Session,
    files: &[&HostFile],
    refresh: bool,
) -> Result<Vec<Arc<PytorchFile>>, ApiError> {
    session.host_artifacts::<PytorchFile>(files, refresh)
}

/// What the HTA tools keep of each host's rank (rank −1 when the trace names none), read
/// with [`host_pytorch`]'s parse from the same load and kept.
pub fn host_hta(session: &Session, files: &[&HostFile], refresh: bool) -> Result<Vec<Arc<HtaRank>>, ApiError> {
    Ok(session.host_artifacts::<PytorchFile>(files, refresh)?.into_iter().map(|f| f.hta.clone()).collect())
}

/// Keeps what the HTA tools assemble of a trace (its rank, steps and parts: kilobytes) in
/// the persistent cache, whichever tool loaded it: a later process answers the HTA tools
/// without reading the trace ([`crate::hta`]).
fn keep_hta_rank(session: &Session, file: &HostFile, hta: &HtaRank) {
    let slot = session.persisted(file, HTA_RANK_ENTRY, "");
    if slot.is_active() && !slot.exists() {
        slot.write(|| {
            KeptRank {
                rank: hta.rank,
                steps: std::borrow::Cow::Borrowed(&hta.steps),
                parts: std::borrow::Cow::Borrowed(&hta.parts),
            }
            .encode()
        });
    }
}

/// Which view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Overview,
    Operators,
    Kernels,
    Memory,
    Modules,
}

/// Keeps every view of a parsed trace in the persistent cache (when there is one and they
/// are not there yet): an agent asks one view per command, and each later process then
/// answers from disk instead of parsing a multi-GB trace again. The views cost a fraction
/// of the parse (about 1 s beside 9–13 s on a 2 GB trace), side by side.
fn keep_views(session: &Session, file: &HostFile, parsed: &oxprof_pytorch::Parsed) {
    use rayon::prelude::*;
    let slots: Vec<(View, Persisted<'_>)> = View::ALL
        .into_iter()
        .map(|v| (v, session.persisted(file, PYTORCH_VIEW_ENTRY, v.name())))
        .filter(|(_, slot)| slot.is_active() && !slot.exists())
        .collect();
    slots.into_par_iter().for_each(|(view, slot)| slot.write(|| view.of(parsed).encode(view, parsed.is_pytorch())));
}

/// One view's typed report.
enum ViewReport {
    Overview(Box<PytorchOverview>),
    Operators(Box<PytorchOpStats>),
    Kernels(Box<PytorchKernelStats>),
    Memory(Box<PytorchMemory>),
    Modules(Box<PytorchModules>),
}

impl View {
    const ALL: [View; 5] = [View::Overview, View::Operators, View::Kernels, View::Memory, View::Modules];

    /// Its name in the persistent cache's key.
    fn name(self) -> &'static str {
        match self {
            View::Overview => "overview",
            View::Operators => "operators",
            View::Kernels => "kernels",
            View::Memory => "memory",
            View::Modules => "modules",
        }
    }

    /// The view of a parsed trace.
    fn of(self, parsed: &oxprof_pytorch::Parsed) -> ViewReport {
        match self {
            View::Overview => ViewReport::Overview(Box::new(PytorchOverview::from_parsed(parsed))),
            View::Operators => ViewReport::Operators(Box::new(PytorchOpStats::from_parsed(parsed))),
            View::Kernels => ViewReport::Kernels(Box::new(PytorchKernelStats::from_parsed(parsed))),
            View::Memory => ViewReport::Memory(Box::new(PytorchMemory::from_parsed(parsed))),
            View::Modules => ViewReport::Modules(Box::new(PytorchModules::from_parsed(parsed))),
        }
    }

    /// The view kept in the persistent cache, with whether the trace was a PyTorch trace
    /// (`None`: not kept, or unreadable: computed again).
    fn read(self, slot: &Persisted<'_>) -> Option<(ViewReport, bool)> {
        fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8], view: View) -> Option<(Box<T>, bool)> {
            let out: PytorchViewOut<T> = serde_json::from_slice(bytes).ok()?;
            (out.view == view.name()).then(|| (Box::new(out.report), out.is_pytorch))
        }
        let bytes = slot.read()?;
        Some(match self {
            View::Overview => decode(&bytes, self).map(|(r, p)| (ViewReport::Overview(r), p))?,
            View::Operators => decode(&bytes, self).map(|(r, p)| (ViewReport::Operators(r), p))?,
            View::Kernels => decode(&bytes, self).map(|(r, p)| (ViewReport::Kernels(r), p))?,
            View::Memory => decode(&bytes, self).map(|(r, p)| (ViewReport::Memory(r), p))?,
            View::Modules => decode(&bytes, self).map(|(r, p)| (ViewReport::Modules(r), p))?,
        })
    }
}

impl ViewReport {
    /// The bytes [`View::read`] reads back.
    fn encode(&self, view: View, is_pytorch: bool) -> Vec<u8> {
        fn encode<T: serde::Serialize>(report: &T, view: View, is_pytorch: bool) -> Vec<u8> {
            serde_json::to_vec(&PytorchViewOut { view: view.name().to_string(), is_pytorch, report })
                .unwrap_or_default()
        }
        match self {
            ViewReport::Overview(r) => encode(r, view, is_pytorch),
            ViewReport::Operators(r) => encode(r, view, is_pytorch),
            ViewReport::Kernels(r) => encode(r, view, is_pytorch),
            ViewReport::Memory(r) => encode(r, view, is_pytorch),
            ViewReport::Modules(r) => encode(r, view, is_pytorch),
        }
    }
}

fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
    view: View,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let Some(file) = files.first() else {
        return Err(ApiError::BadParameter { name: "host".into(), reason: format!("run {} has no traces", run.name) });
    };
    let mut notes = Vec::new();
    if files.len() > 1 {
        let others = files[1..].iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", ");
        notes.push(format!(
            "showing {} only (one worker at a time); also in this run: {others} (choose with host=)",
            file.host
        ));
    }
    // A new process answers a view it answered before from the persistent cache, without
    // reading a multi-GB trace again; a session that holds the parse answers from memory.
    let slot = session.persisted(file, PYTORCH_VIEW_ENTRY, view.name());
    let in_memory = session.host_artifact_in_memory::<PytorchFile>(file).is_some();
    let (report, is_pytorch) = match (!refresh && !in_memory).then(|| view.read(&slot)).flatten() {
        Some(found) => {
            session.count_pytorch_view_from_disk();
            found
        }
        None => {
            let parsed = host_pytorch(session, &[*file], refresh)?.into_iter().next().ok_or(ApiError::Panicked)?;
            // A parse made now kept every view on disk (`keep_views`): the asked one is read
            // back, not computed twice.
            match (!in_memory).then(|| view.read(&slot)).flatten() {
                Some(kept) => kept,
                None => {
                    let report = view.of(&parsed);
                    // A parse kept in memory may outlive its entries (the disk cache's bound).
                    if !slot.exists() {
                        slot.write(|| report.encode(view, parsed.is_pytorch()));
                    }
                    (report, parsed.is_pytorch())
                }
            }
        }
    };
    if !is_pytorch {
        notes.push(format!(
            "{}: not a PyTorch profiler trace; these views read Kineto traces (*.pt.trace.json[.gz])",
            file.host
        ));
    }
    let report: Box<dyn Report> = match report {
        ViewReport::Overview(r) => r,
        ViewReport::Operators(r) => r,
        ViewReport::Kernels(r) => r,
        ViewReport::Memory(r) => r,
        ViewReport::Modules(r) => r,
    };
    Ok(with_notes(report, notes))
}

/// [`crate::registry::Compute`] of `pytorch_overview`.
pub(crate) fn overview(
    s: &Session,
    run: &ServedRun,
    r: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    compute(s, run, r, refresh, View::Overview)
}

/// [`crate::registry::Compute`] of `pytorch_op_stats`.
pub(crate) fn operators(
    s: &Session,
    run: &ServedRun,
    r: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    compute(s, run, r, refresh, View::Operators)
}

/// [`crate::registry::Compute`] of `pytorch_kernel_stats`.
pub(crate) fn kernels(
    s: &Session,
    run: &ServedRun,
    r: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    compute(s, run, r, refresh, View::Kernels)
}

/// [`crate::registry::Compute`] of `pytorch_memory`.
pub(crate) fn memory(
    s: &Session,
    run: &ServedRun,
    r: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    compute(s, run, r, refresh, View::Memory)
}

/// [`crate::registry::Compute`] of `pytorch_modules`.
pub(crate) fn modules(
    s: &Session,
    run: &ServedRun,
    r: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    compute(s, run, r, refresh, View::Modules)
}

/// This family's rows of the registry (`pytorch_overview`, `pytorch_op_stats`, `pytorch_kernel_stats`, `pytorch_memory`, `pytorch_modules`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::PYTORCH_OVERVIEW,
        aliases: &[],
        title: "PyTorch overview",
        summary: "PyTorch step time by Kernel/Memcpy/Memset/Runtime/DataLoader/CPU Exec/Other, GPU summary and recommendations (torch-tb-profiler's overview)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_overview",
        content_type: JSON,
        compute: Some(Computation::Custom(overview)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::PYTORCH_OP_STATS,
        aliases: &[],
        title: "PyTorch operators",
        summary: "PyTorch operators by name, input shapes and call stack: calls, host and device self/total time, Tensor Cores (torch-tb-profiler's operator view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_op_stats",
        content_type: JSON,
        compute: Some(Computation::Custom(operators)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::PYTORCH_KERNEL_STATS,
        aliases: &[],
        title: "PyTorch GPU kernels",
        summary: "GPU kernels by name and launching operator: calls, time, blocks per SM, occupancy, Tensor Cores (torch-tb-profiler's kernel view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        // The kernel stats page shows either body.
        page: "kernel_stats",
        content_type: JSON,
        compute: Some(Computation::Custom(kernels)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::PYTORCH_MEMORY,
        aliases: &[],
        title: "PyTorch memory",
        summary: "PyTorch allocated/reserved memory over time per device, peak, allocation events with operator and lifetime, memory by operator (torch-tb-profiler's memory view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_memory",
        content_type: JSON,
        compute: Some(Computation::Custom(memory)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::PYTORCH_MODULES,
        aliases: &[],
        title: "PyTorch modules",
        summary: "the nn.Module hierarchy with calls, operators, host and device total/self time per module (torch-tb-profiler's module view)",
        family: Family::PyTorch,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::PyTorch,
        page: "pytorch_modules",
        content_type: JSON,
        compute: Some(Computation::Custom(modules)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_torch_tb.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
