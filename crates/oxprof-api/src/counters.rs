//! The TPU counter tools and their neighbours that read XSpaces directly (not OpStats):
//! `perf_counters` (every counter event of the selected hosts), `megascale_stats` (DCN
//! collective slack of one host) and `smart_suggestion` (XProf's open-source rule set), as
//! XProf 2.24.2's `ConvertMultiXSpacesToToolData` serves them.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::Answer;
use crate::request::{ALL_HOSTS, DataRequest, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_model::schema::{GPU_PLANE_PREFIX, TPU_PLANE_PREFIX};
use oxprof_report::Report;
use oxprof_wire::perfetto::gzipped;
use oxprof_xprof::tools::dcn_perfetto::{MEGASCALE_PLANE_NAME, dcn_perfetto_trace};
use oxprof_xprof::tools::event_time_fraction::{EventTimeFractions, barrier_cores_report, host_event_time_fractions};
use oxprof_xprof::tools::megascale::megascale_stats_of;
use oxprof_xprof::tools::perf_counters::PerfCounters;
use oxprof_xprof::tools::smart_suggestion::{BARRIER_CORES, mentions_barrier_cores};
use oxprof_xprof::tools::utilization_viewer::UtilizationViewer;

/// [`crate::registry::Compute`] of `perf_counters`: the counter events of every selected
/// host, host after host (`host=ALL_HOSTS` or none: every host, in the run's order).
pub(crate) fn perf_counters(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let mut report = PerfCounters::default();
    for file in files {
        let _admission = session.admit();
        // Counters live on device planes; host-thread lines are never read.
        let space =
            session.load(file, &|plane| plane.starts_with(TPU_PLANE_PREFIX) || plane.starts_with(GPU_PLANE_PREFIX))?;
        report.add_host(&space, &file.host);
    }
    Ok(Box::new(report))
}

/// The host `megascale_stats` is asked for (XProf refuses the tool without one).
fn megascale_host(request: &DataRequest) -> Result<&str, ApiError> {
    match request.host.as_deref() {
        Some(host) if !host.is_empty() => Ok(host),
        _ => Err(ApiError::BadParameter {
            name: "host".into(),
            reason:
                "megascale_stats needs a host (XProf: \"Cannot find host_name from options for megascale_stats tool.\")"
                    .into(),
        }),
    }
}

/// [`crate::registry::Compute`] of `megascale_stats`: XProf's DCN slack table of one host,
/// or of every host combined (`ALL_HOSTS`, occurrence-weighted as XProf's combiner does).
/// As in XProf, a selection where some host has no `MegaScale:` events on `/host:CPU`
/// (XProf's test for DCN collective stats) gets the empty table.
pub(crate) fn megascale_stats(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let host = megascale_host(request)?;
    let files = select_hosts(run, Some(host))?;
    if host == ALL_HOSTS
        && files.len() > 1
        && let Some(pod) = crate::partial::combined_of(session, run)
    {
        let (stats, mut notes) = pod.into_megascale();
        notes.extend(crate::partial::pod_notes(session, run));
        return Ok(with_notes(Box::new(stats), notes));
    }
    // XProf stops at the first selected host without DCN events and answers the empty
    // table (a host alone: its own; ALL_HOSTS: empty if any host has none): so does the
    // combine, and the hosts after that one are not read.
    let hosts = crate::partial::megascale_facts(session, &files)?;
    let (stats, mut notes) = megascale_stats_of(hosts.iter().map(|(host, facts)| (*host, facts)), host == ALL_HOSTS);
    notes.extend(crate::partial::pod_notes(session, run));
    Ok(with_notes(Box::new(stats), notes))
}

/// XProf's server reads `perfetto` as a bool (`.lower() == 'true'`).
fn wants_perfetto(request: &DataRequest) -> bool {
    request.params.get("perfetto").is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The row computation of `megascale_stats`: the DCN slack table ([`megascale_stats`]),
/// or with `perfetto=true` XProf's gzipped Perfetto trace ([`megascale_perfetto`], a
/// binary body).
pub(crate) fn megascale_answer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Answer, ApiError> {
    if wants_perfetto(request) {
        return Ok(Answer::bytes(megascale_perfetto(session, run, request)?));
    }
    Ok(Answer::Report(megascale_stats(session, run, request, refresh)?))
}

/// `megascale_stats` with `perfetto=true`: XProf's Perfetto trace of one host's TPU ops and
/// Megascale collectives, gzipped as XProf sends it (`application/octet-stream`; its HTTP
/// layer gzips the body once more as `Content-Encoding`). For `ALL_HOSTS` XProf answers
/// the combined slack table's JSON instead. `group_tiny_events=false` keeps every tiny
/// op (XProf's trace names the parameter; its 2.24.2 server does not pass it on).
pub fn megascale_perfetto(session: &Session, run: &ServedRun, request: &DataRequest) -> Result<Vec<u8>, ApiError> {
    let host = megascale_host(request)?;
    if host == ALL_HOSTS {
        // XProf 2.24.2 combines the hosts' slack tables and ignores `perfetto` here, still
        // labelling the JSON `application/octet-stream`.
        let mut table = request.clone();
        table.params.remove("perfetto");
        return Ok(megascale_stats(session, run, &table, false)?.xprof_body().text.into_bytes());
    }
    let files = select_hosts(run, Some(host))?;
    let group_tiny = !request.params.get("group_tiny_events").is_some_and(|v| v.eq_ignore_ascii_case("false"));
    let Some(file) = files.first() else {
        return Err(ApiError::Http {
            status: 404,
            message: format!("No Data (megascale_stats: no XSpace of host {host})"),
        });
    };
    let _admission = session.admit();
    // Only TensorCore and Megascale planes are read.
    let space = session.load(file, &|plane| plane.starts_with(TPU_PLANE_PREFIX) || plane == MEGASCALE_PLANE_NAME)?;
    Ok(gzipped(&dcn_perfetto_trace(&space, group_tiny).trace))
}

/// [`crate::registry::Compute`] of `smart_suggestion`: XProf 2.24.2's open-source rule set
/// (only `BarrierCoresRule`) over the selected hosts (`ALL_HOSTS` or none: every host), from
/// the event-time fractions of `barrier-cores` in their steps. Hosts without such events
/// are not decoded past their metadata.
pub(crate) fn smart_suggestion(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let mut fractions = EventTimeFractions::default();
    for file in select_hosts(run, request.host.as_deref())? {
        let _admission = session.admit();
        let metadata = session.load(file, &|_| false)?;
        if !mentions_barrier_cores(&metadata) {
            continue;
        }
        let space = session.load(file, &|_| true)?;
        let hostname = space.hostnames.first().map_or(file.host.as_str(), String::as_str);
        fractions.append(host_event_time_fractions(&space, hostname, BARRIER_CORES));
    }
    Ok(Box::new(barrier_cores_report(&fractions)))
}

/// [`crate::registry::Compute`] of `utilization_viewer`: one host's TPU unit utilization.
/// XProf reads one XSpace; for `ALL_HOSTS` (or no host) it answered with the run's first
/// host in the refkit's recording, which oxprof follows (with a note).
pub(crate) fn utilization_viewer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let Some(file) = files.first() else {
        return Err(ApiError::NotFound(format!("run {:?} has no hosts", run.name)));
    };
    let mut notes = Vec::new();
    if files.len() > 1 {
        notes.push(format!("utilization_viewer reads one host; showing the first, {}", file.host));
    }
    let _admission = session.admit();
    let space = session.load(file, &|plane| plane.starts_with(TPU_PLANE_PREFIX))?;
    let report = UtilizationViewer::from_space(&space);
    if report.rows.is_empty() {
        notes.push(format!(
            "{}: no TPU v6e or v7x plane with a device_id and counter events, so no utilization (XProf answers the empty table)",
            file.host
        ));
    }
    Ok(with_notes(Box::new(report), notes))
}

/// This family's rows of the registry (`megascale_stats`, `perf_counters`, `utilization_viewer`, `smart_suggestion`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::MEGASCALE_STATS,
        aliases: &[],
        title: "Megascale stats",
        summary: "DCN collectives across slices: slack, stalls and bandwidth per rendezvous",
        family: Family::XSpace,
        hosts: Hosts::EachAndAll,
        listed: Listed::WithMegascale,
        offered: Offered::AsXprof,
        page: "megascale_stats",
        content_type: JSON,
        compute: Some(Computation::Answer(megascale_answer)),
        reference: Reference::Xprof,
        menu: Some(19),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::PERF_COUNTERS,
        aliases: &[],
        title: "Perf counters",
        summary: "TPU/GPU performance counter values per chip and sample",
        family: Family::XSpace,
        hosts: Hosts::Each,
        listed: Listed::WithCounters,
        offered: Offered::AsXprof,
        page: "perf_counters",
        content_type: JSON,
        compute: Some(Computation::Custom(perf_counters)),
        reference: Reference::Xprof,
        menu: Some(12),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::UTILIZATION_VIEWER,
        aliases: &[],
        title: "Utilization viewer",
        summary: "TPU v6e unit utilization from counters: scalar, vector, MXU, XLU, HBM, ICI, SparseCore",
        family: Family::XSpace,
        hosts: Hosts::Each,
        listed: Listed::WithCounters,
        offered: Offered::AsXprof,
        page: "utilization_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(utilization_viewer)),
        reference: Reference::Xprof,
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::SMART_SUGGESTION,
        aliases: &[],
        title: "Smart suggestions",
        summary: "XProf's rule-based advice on the run's bottleneck",
        family: Family::XSpace,
        hosts: Hosts::AllOnly,
        listed: Listed::Never,
        offered: Offered::Always,
        page: "smart_suggestion",
        content_type: JSON,
        compute: Some(Computation::Custom(smart_suggestion)),
        reference: Reference::Xprof,
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
