//! The `tf_data_bottleneck_analysis` tool: tf.data input pipelines of the selected hosts,
//! their slowest calls and bottleneck iterators, as the old TensorBoard profiler served it
//! (three DataTables; shape in `oxprof_xprof::tools::tf_data`). XProf 2.24 no longer
//! serves this tool.
//!
//! Host selection: the old tool read all hosts (no host or `ALL_HOSTS`); `host=h` reads
//! one. Each host is named by its XSpace's first hostname, else by its file name, as XProf
//! did. A host without a `/host:CPU` plane (which XProf refused) is skipped with a note.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_model::schema::HOST_THREADS_PLANE_NAME;
use oxprof_report::Report;
use oxprof_xprof::tools::tf_data::{TfDataStats, combine, host_tf_data_stats};
use rayon::prelude::*;

/// [`crate::registry::Compute`] of `tf_data_bottleneck_analysis`: the selected hosts'
/// [`oxprof_xprof::tools::tf_data::CombinedTfDataStats`].
pub(crate) fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    // Only the host plane's events are read (device planes are often most of a GPU
    // profile); each XSpace is dropped as soon as its statistics exist.
    let _admission = session.admit();
    let per_host: Vec<(String, String, Option<TfDataStats>)> = files
        .par_iter()
        .map(|f| {
            let space = session.load(f, &|plane| plane == HOST_THREADS_PLANE_NAME)?;
            let name = space.hostnames.first().filter(|h| !h.is_empty()).cloned().unwrap_or_else(|| f.host.clone());
            let stats = space.plane(HOST_THREADS_PLANE_NAME).map(host_tf_data_stats);
            Ok((f.host.clone(), name, stats))
        })
        .collect::<Result<_, ApiError>>()?;
    let mut notes = Vec::new();
    let mut hosts: Vec<(String, TfDataStats)> = Vec::new();
    let mut named: Vec<(String, String)> = Vec::new();
    for (file_host, name, stats) in per_host {
        if let Some((first, _)) = named.iter().find(|(_, n)| *n == name) {
            notes.push(format!(
                "{file_host} and {first} both call their host {name:?}: their input pipelines are merged under that \
                 name, as XProf does"
            ));
        }
        named.push((file_host.clone(), name.clone()));
        match stats {
            Some(stats) => hosts.push((name, stats)),
            None => notes.push(format!("{file_host}: no /host:CPU plane; host skipped (XProf refused such a host)")),
        }
    }
    let combined = combine(hosts);
    if !combined.has_tf_data_events() {
        notes.push(
            "no tf.data events: no Iterator::… events on the host threads of the selected hosts, so there is no \
             input pipeline to analyze (TensorFlow records them while a tf.data iterator runs during the capture)"
                .into(),
        );
    }
    Ok(with_notes(Box::new(combined), notes))
}

/// This family's rows of the registry (`tf_data_bottleneck_analysis`).
pub(crate) const ROWS: &[Tool] = &[Tool {
    id: ToolId::TF_DATA_BOTTLENECK_ANALYSIS,
    aliases: &[],
    title: "tf.data bottleneck analysis",
    summary: "tf.data input pipelines, their slowest iterators and advice",
    family: Family::TfData,
    hosts: Hosts::Each,
    listed: Listed::Never,
    offered: Offered::Always,
    page: "tf_data_bottleneck_analysis",
    content_type: JSON,
    compute: Some(Computation::Custom(compute)),
    reference: Reference::Own("crates/oxprof-api/tests/tf_data.rs"),
    menu: None,
    device: None,
    defaults: &[],
    superseded_by: None,
}];
