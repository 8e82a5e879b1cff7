//! The `memory_profile` tool: allocator activity of one host, as XProf's
//! `MemoryProfileProcessor` serves it.
//!
//! Host selection follows XProf: the tool reads exactly one XSpace. `host=h` selects that
//! host; no host (or `ALL_HOSTS`) works only when the run has a single host, otherwise the
//! request fails as XProf's does ("expects only 1 XSpace"). A host without a `/host:CPU`
//! plane gets XProf's empty body.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::{ALL_HOSTS, DataRequest, DataResponse, select_hosts, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_format::HostFile;
use oxprof_model::schema::{HOST_THREADS_PLANE_NAME, HostEventType, TPU_PLANE_PREFIX};
use oxprof_report::Report;
use oxprof_xprof::tools::memory_profile::{MemoryProfile, memory_profile};

/// [`crate::registry::Compute`] of `memory_profile`: the host's
/// [`oxprof_xprof::tools::memory_profile::MemoryProfile`], or XProf's empty body for a
/// host without a `/host:CPU` plane.
pub(crate) fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let files = select_hosts(run, request.host.as_deref())?;
    let [file] = files.as_slice() else {
        let hosts = files.iter().map(|f| f.host.as_str()).collect::<Vec<_>>().join(", ");
        return Err(ApiError::BadParameter {
            name: "host".into(),
            reason: format!(
                "memory_profile reads one host (XProf: \"expects only 1 XSpace path but gets {}\"); \
                 choose one of: {hosts} (not {ALL_HOSTS})",
                files.len()
            ),
        });
    };
    // Allocator events live on the host plane and HLO modules on TPU planes; the lines of
    // other device planes (GPU streams) are never read, so they are not decoded.
    let _admission = session.admit();
    let space = session.load(file, &|plane| plane == HOST_THREADS_PLANE_NAME || plane.starts_with(TPU_PLANE_PREFIX))?;
    let Some(profile) = memory_profile(&space) else {
        return Ok(DataResponse {
            content_type: "application/json",
            body: String::new(),
            json: None,
            notes: vec![format!(
                "{}: no /host:CPU plane, so no allocator events (XProf answers an empty body)",
                file.host
            )],
        }
        .into_report());
    };
    drop(space);
    let mut notes = Vec::new();
    if profile.memory_ids.is_empty() {
        notes.push(format!(
            "{}: no MemoryAllocation/MemoryDeallocation events on /host:CPU (TensorFlow records them \
             for its allocators; JAX and most GPU profiles have none)",
            file.host
        ));
    }
    Ok(with_notes(Box::new(profile), notes))
}

/// One host's allocator profile for comparisons (`oxprof diff`, summaries): `None` when the
/// host recorded no allocator events. Whether it did is read from the file's metadata alone
/// (a millisecond), so a profile without them (JAX, most GPU runs) is not decoded a second
/// time after its OpStats.
pub fn allocator_profile(session: &Session, file: &HostFile) -> Result<Option<MemoryProfile>, ApiError> {
    let _admission = session.admit();
    let metadata = session.load(file, &|_| false)?;
    let recorded = metadata.plane(HOST_THREADS_PLANE_NAME).is_some_and(|plane| {
        plane.event_metadata().iter().any(|m| {
            matches!(m.host_event_type, Some(HostEventType::MemoryAllocation | HostEventType::MemoryDeallocation))
        })
    });
    drop(metadata);
    if !recorded {
        return Ok(None);
    }
    let space = session.load(file, &|plane| plane == HOST_THREADS_PLANE_NAME || plane.starts_with(TPU_PLANE_PREFIX))?;
    Ok(memory_profile(&space).filter(|profile| !profile.allocators.is_empty()))
}

/// This family's rows of the registry (`memory_profile`).
pub(crate) const ROWS: &[Tool] = &[Tool {
    id: ToolId::MEMORY_PROFILE,
    aliases: &[],
    title: "Memory profile",
    summary: "allocator memory over time, its peak and what was live at it (one host)",
    family: Family::MemoryProfile,
    hosts: Hosts::Each,
    listed: Listed::Always,
    offered: Offered::AsXprof,
    page: "memory_profile",
    content_type: JSON,
    compute: Some(Computation::Custom(compute)),
    reference: Reference::Xprof,
    menu: Some(9),
    device: None,
    defaults: &[],
    superseded_by: None,
}];
