//! The OpStats family's per-host artifact: a host's analysis (OpStats, step database,
//! advice), computed once per file and kept by the session ([`HostArtifact`]), read from
//! the persistent cache when it holds it, or from the trace viewer's model when that is in
//! memory; and the OpStats the OpStats tools read, combined over the selected hosts
//! ([`op_stats_of`]: step selection and notes in one place).

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::persist;
use crate::request::{DataRequest, select_hosts};
use crate::session::{FileCounts, HostArtifact, Session};
use crate::tool::{Computation, DeviceTool, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use crate::trace::HostTraceData;
use oxprof_format::HostFile;
use oxprof_model::XSpace;
use oxprof_xprof::inference::HostInferenceStats;
use oxprof_xprof::op_stats::OpStats;
use oxprof_xprof::op_stats::convert::{
    HostAnalysis, HostsCombiner, StepSelection, xspace_to_op_stats, xspace_to_op_stats_grouped,
};
use oxprof_xprof::tools::{
    framework_op_stats::FrameworkOpStats, hlo_stats::HloStats, input_pipeline::InputPipelineAnalysis,
    kernel_stats::KernelStats, op_profile, pod_viewer::PodViewer, roofline_model::RooflineModel,
};
use std::sync::Arc;

impl HostArtifact for HostAnalysis {
    fn compute(session: &Session, file: &HostFile) -> Result<HostAnalysis, ApiError> {
        analysis_of(session, file, true)
    }

    /// Its JSON size, a close proxy for its heap size.
    fn weight(&self) -> usize {
        /// Counts bytes written and keeps none.
        struct Count(usize);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        // Serializing plain data into a counter cannot fail; a failure would only
        // undercharge this entry.
        let _ = serde_json::to_writer(&mut count, &self.op_stats);
        count.0 + self.advice.iter().map(String::len).sum::<usize>() + 256
    }

    fn count(counts: &mut FileCounts, computed: bool) {
        if computed {
            counts.analyses_computed += 1;
        } else {
            counts.analyses_found += 1;
        }
    }
}

/// A host's analysis (`alone`: the request's only host, whose model may be unmapped off
/// the request's path).
fn analysis_of(session: &Session, file: &HostFile, alone: bool) -> Result<HostAnalysis, ApiError> {
    if crate::pod::is_partial(&file.path) {
        // A pod result's host: its partial holds the analysis, computed where its file is.
        session.count_with(|c| c.analyses_from_disk += 1);
        return Ok(crate::pod::read_partial(session, file)?.analysis);
    }
    let persisted = session.persisted(file, persist::ANALYSIS_ENTRY, "");
    if let Some(analysis) = persisted.read().and_then(|bytes| persist::decode_analysis(&bytes)) {
        session.count_with(|c| c.analyses_from_disk += 1);
        return Ok(analysis);
    }
    if let Some(trace) = session.host_artifact_in_memory::<HostTraceData>(file) {
        // The trace viewer's model and grouping are the ones OpStats needs: no second
        // decode, and no second model beside the one the cache holds.
        session.count_with(|c| c.analyses_from_trace += 1);
        let analysis = xspace_to_op_stats_grouped(&trace.space, &trace.groups);
        persisted.write(|| persist::encode_analysis(&analysis));
        return Ok(analysis);
    }
    let space = session.load(file, &|_| true)?;
    let analysis = xspace_to_op_stats(&space);
    if alone {
        // Unmapping ~100 MB of tables takes a while: not on the request's path.
        rayon::spawn(move || drop(space));
    } else {
        // The next host is decoded next: its model must not meet this one in memory.
        drop(space);
    }
    persisted.write(|| persist::encode_analysis(&analysis));
    Ok(analysis)
}

/// Each host's OpStats analysis (loaded and converted once per file and kept).
pub fn host_analyses(
    session: &Session,
    files: &[&HostFile],
    refresh: bool,
) -> Result<Vec<Arc<HostAnalysis>>, ApiError> {
    session.host_artifacts_with(files, refresh, |file| analysis_of(session, file, files.len() == 1))
}

/// `file`'s OpStats analysis from `space`, its model the caller already decoded (with
/// every line), kept like [`host_analyses`]' so the tools that follow find it instead of
/// decoding the file a second time (`oxprof export` builds the model tables and the tool
/// tables from one decode).
pub fn host_analysis_of_decoded(
    session: &Session,
    file: &HostFile,
    space: &XSpace,
) -> Result<Arc<HostAnalysis>, ApiError> {
    let analyses = session.host_artifacts_with(&[file], false, |file| {
        let analysis = xspace_to_op_stats(space);
        session.persisted(file, persist::ANALYSIS_ENTRY, "").write(|| persist::encode_analysis(&analysis));
        Ok(analysis)
    })?;
    analyses.into_iter().next().ok_or(ApiError::Panicked)
}

/// Each host's OpStats analysis handed to `fold` in file order, as [`host_analyses`]
/// computes them but a batch of hosts at a time: an analysis the session's cache does not
/// keep is dropped once folded, so a many-host answer holds the hosts being analysed and
/// what `fold` keeps of the others, never every host's analysis at once.
pub(crate) fn fold_host_analyses(
    session: &Session,
    files: &[&HostFile],
    refresh: bool,
    mut fold: impl FnMut(usize, &HostAnalysis),
) -> Result<(), ApiError> {
    let alone = files.len() == 1;
    session.fold_host_artifacts_with(files, refresh, |file| analysis_of(session, file, alone), |i, a| fold(i, &a))
}

/// The selected hosts' OpStats combined with `steps`: the typed entry point beside the
/// rows (comparisons and `oxprof explain` read OpStats directly).
pub fn combined_op_stats(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    steps: StepSelection,
) -> Result<OpStats, ApiError> {
    let files = select_hosts(run, host)?;
    let mut combiner = HostsCombiner::new(steps);
    fold_host_analyses(session, &files, false, |_, analysis| combiner.add(analysis))?;
    Ok(combiner.finish())
}

/// The OpStats of the selected hosts combined, with oxprof's notes and the hosts'
/// inference statistics.
pub(crate) struct Combined {
    /// The combined OpStats.
    pub op_stats: OpStats,
    /// Notes on the hosts and on the device tools.
    pub notes: Vec<String>,
    /// Each selected host's inference requests and batches, in host order.
    pub inference: Vec<HostInferenceStats>,
}

/// The OpStats the OpStats tools read: each host's analysis (kept by the session as its
/// cache allows), folded into the combine as it comes with the step database the tool
/// reads, and oxprof's notes on the hosts and on the device tools; and the hosts'
/// inference statistics. Only the hosts being analysed are held whole; of the others the
/// combine keeps their step databases (which it can only align once every host is in).
pub(crate) fn op_stats_of(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
    steps: StepSelection,
    device: Option<DeviceTool>,
) -> Result<Combined, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let mut combiner = HostsCombiner::new(steps);
    let mut notes: Vec<String> = crate::pod::pod_notes(session, run);
    let mut inference = Vec::with_capacity(files.len());
    fold_host_analyses(session, &files, refresh, |i, analysis| {
        notes.extend(host_notes(&files[i].host, analysis));
        inference.push(analysis.inference.clone());
        combiner.add(analysis);
    })?;
    let op_stats = combiner.finish();
    notes.extend(oxprof_xprof::tools::hlo_stats::device_tool_notes(request.tool.name(), device, &op_stats));
    Ok(Combined { op_stats, notes, inference })
}

fn host_notes(host: &str, analysis: &HostAnalysis) -> Vec<String> {
    analysis.advice.iter().map(|a| format!("{host}: {a}")).collect()
}

/// This family's rows of the registry (`input_pipeline_analyzer`, `framework_op_stats`, `op_profile`, `hlo_stats`, `roofline_model`, `kernel_stats`, `pod_viewer`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::INPUT_PIPELINE_ANALYZER,
        aliases: &["input_pipeline"],
        title: "Input pipeline analyzer",
        summary: "whether steps wait for input, and which input ops cost the most",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "input_pipeline_analyzer",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::DropIncomplete,
            report: |op_stats, _| Box::new(InputPipelineAnalysis::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(6),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::FRAMEWORK_OP_STATS,
        aliases: &["tensorflow_stats"],
        title: "Framework op stats",
        summary: "time per framework (TensorFlow/JAX) op on host and device",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "framework_op_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(FrameworkOpStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(14),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::OP_PROFILE,
        aliases: &["hlo_op_profile"],
        title: "Op profile",
        summary: "device time of XLA ops by program or category, with FLOP rate and bandwidth",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "op_profile",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, params| {
                let grouping = op_profile::Grouping::from_param(params.get("group_by").map(String::as_str));
                Box::new(op_profile::OpProfile::from_op_stats(op_stats, grouping))
            },
        }),
        reference: Reference::Xprof,
        menu: Some(4),
        device: Some(DeviceTool::XlaOps),
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::HLO_STATS,
        aliases: &["hlo_op_stats"],
        title: "HLO op stats",
        summary: "every HLO op with its time, FLOP rate, bandwidth and bound",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "hlo_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(HloStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(17),
        device: Some(DeviceTool::XlaOps),
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::ROOFLINE_MODEL,
        aliases: &[],
        title: "Roofline model",
        summary: "ops against the device's compute and memory roofs",
        family: Family::OpStats,
        hosts: Hosts::Each,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "roofline_model",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(RooflineModel::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(11),
        device: Some(DeviceTool::XlaOps),
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::KERNEL_STATS,
        aliases: &[],
        title: "GPU kernel stats",
        summary: "GPU kernels with their launch shapes, occupancy and time",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::WithGpu,
        offered: Offered::AsXprof,
        page: "kernel_stats",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(KernelStats::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(8),
        device: Some(DeviceTool::Kernels),
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::POD_VIEWER,
        aliases: &[],
        title: "Pod viewer",
        summary: "each step on each core, with its bottleneck and breakdown",
        family: Family::OpStats,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "pod_viewer",
        content_type: JSON,
        compute: Some(Computation::OpStats {
            steps: StepSelection::All,
            report: |op_stats, _| Box::new(PodViewer::from_op_stats(op_stats)),
        }),
        reference: Reference::Xprof,
        menu: Some(13),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
