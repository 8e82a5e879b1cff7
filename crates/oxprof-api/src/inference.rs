//! Inference runs: the `inference_profile` tool and the overview page with its inference
//! latency table. Each host's requests and batches come with its analysis (kept by the
//! session with the OpStats); they are combined over the selected hosts in run order, as
//! XProf's `ConvertMultiXSpaceToInferenceStats` numbers hosts.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::op_stats::op_stats_of;
use crate::request::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_report::Report;
use oxprof_xprof::inference::{
    HostInferenceStats, InferenceStats, combine, inference_latency, profile::InferenceProfile,
};
use oxprof_xprof::op_stats::convert::StepSelection;
use oxprof_xprof::tools::overview_page::OverviewPage;

/// The selected hosts' inference statistics (in host order), combined and regrouped by model.
fn combined(hosts: Vec<HostInferenceStats>) -> InferenceStats {
    let hosts: Vec<HostInferenceStats> = hosts
        .into_iter()
        .enumerate()
        .map(|(i, mut host)| {
            let id = i32::try_from(i).unwrap_or(i32::MAX);
            host.host_id = id;
            host.request_details.iter_mut().for_each(|r| r.host_id = id);
            host.batch_details.iter_mut().for_each(|b| b.host_id = id);
            host
        })
        .collect();
    combine(&hosts)
}

/// [`crate::registry::Compute`] of `inference_profile` (parameters `request_column` and
/// `batch_column` choose the column the percentiles sample, as XProf's).
pub(crate) fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let mut hosts = Vec::with_capacity(files.len());
    crate::op_stats::fold_host_analyses(session, &files, refresh, |_, a| hosts.push(a.inference.clone()))?;
    let param = |name: &str| request.params.get(name).map_or("", String::as_str);
    let profile = InferenceProfile::new(combined(hosts), param("request_column"), param("batch_column"));
    let mut notes = Vec::new();
    if profile.stats.per_model.values().all(|m| m.request_details.is_empty() && m.batch_details.is_empty()) {
        notes.push(
            "no inference requests found: XProf counts as requests the serving events (SessionRun, \
             BatchingSessionRun, TfrtModelRun, ServingModelRun) and TraceMes with _r=-1, or _r=1 named \
             ModelServerRequest_*; batches are ProcessBatch events"
                .to_string(),
        );
    }
    Ok(with_notes(Box::new(profile), notes))
}

/// [`crate::registry::Compute`] of `overview_page`: the OpStats tools' path (incomplete
/// steps dropped), plus the inference latency table for runs that do not train.
pub(crate) fn overview(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let all = op_stats_of(session, run, request, refresh, StepSelection::DropIncomplete, None)?;
    let mut page = OverviewPage::from_op_stats(&all.op_stats);
    if !all.op_stats.run_environment.is_training {
        page.inference_latency = inference_latency(&combined(all.inference));
    }
    Ok(with_notes(Box::new(page), all.notes))
}

/// This family's rows of the registry (`overview_page`, `inference_profile`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::OVERVIEW_PAGE,
        aliases: &[],
        title: "Overview",
        summary: "step time and its breakdown, top ops, run environment and recommendations",
        family: Family::OpStats,
        hosts: Hosts::AllOnly,
        listed: Listed::Always,
        offered: Offered::AsXprof,
        page: "overview_page",
        content_type: JSON,
        // The OpStats path plus the inference latency table (`crate::inference`).
        compute: Some(Computation::Custom(overview)),
        reference: Reference::Xprof,
        menu: Some(0),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::INFERENCE_PROFILE,
        aliases: &[],
        title: "Inference profile",
        summary: "requests and batches of inference (serving) runs: latency percentiles, batching, breakdown",
        family: Family::OpStats,
        hosts: Hosts::EachAndAll,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "inference_profile",
        content_type: JSON,
        compute: Some(Computation::Custom(compute)),
        reference: Reference::Xprof,
        menu: Some(18),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
