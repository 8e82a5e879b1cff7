//! The PyTorch tools (`pytorch_overview`, `pytorch_op_stats`, `pytorch_kernel_stats`,
//! `pytorch_memory`, `pytorch_modules`): torch-tb-profiler's overview, operator, kernel, memory and module views of one worker's trace, computed
//! by `oxprof_pytorch` from the whole imported trace (host and GPU planes).
//!
//! The parsed trace is kept by the session (`Session::host_pytorch`): the first view reads
//! the file, the others answer from memory.
//!
//! Host selection: one trace per worker/rank; with several selected (`ALL_HOSTS`, or no
//! host on a run of several ranks) the first is shown and a note names the others.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::data::{DataRequest, select_hosts, with_notes};
use crate::session::Session;
use oxprof_pytorch::{
    kernels::PytorchKernelStats, memory::PytorchMemory, modules::PytorchModules, operators::PytorchOpStats,
    overview::PytorchOverview,
};
use oxprof_report::Report;

/// Which view.
#[derive(Debug, Clone, Copy)]
enum View {
    Overview,
    Operators,
    Kernels,
    Memory,
    Modules,
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
    let parsed = session.host_pytorch(&[*file], refresh)?.into_iter().next().ok_or(ApiError::Panicked)?;
    if !parsed.is_pytorch() {
        notes.push(format!(
            "{}: not a PyTorch profiler trace; these views read Kineto traces (*.pt.trace.json[.gz])",
            file.host
        ));
    }
    let report: Box<dyn Report> = match view {
        View::Overview => Box::new(PytorchOverview::from_parsed(&parsed)),
        View::Operators => Box::new(PytorchOpStats::from_parsed(&parsed)),
        View::Kernels => Box::new(PytorchKernelStats::from_parsed(&parsed)),
        View::Memory => Box::new(PytorchMemory::from_parsed(&parsed)),
        View::Modules => Box::new(PytorchModules::from_parsed(&parsed)),
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
