//! One-shot and run-level entry points over the answer path: sessions for the CLI and
//! tests ([`one_shot_session`], [`open_run`]), a request's whole XProf body ([`data`]) and
//! its report ([`compute`]). The request vocabulary itself lives in [`crate::request`]
//! (re-exported here, where callers have always found it).

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::session::{Session, SessionOptions};
use oxprof_model::LoadLimits;
use oxprof_report::Report;
use std::path::Path;

pub use crate::request::{ALL_HOSTS, BodyReport, BodyWriter, DataRequest, DataResponse, select_hosts, with_notes};

/// Resolves a run under `path` (discovering it afresh).
pub fn select_run(path: &Path, run: Option<&str>) -> Result<ServedRun, ApiError> {
    one_shot_session(path)?.run(run)
}

/// A session for one-shot callers (the CLI, tests): nothing is kept between calls, and
/// runs are not confined to the path (the caller owns the files).
pub fn one_shot_session(path: &Path) -> Result<Session, ApiError> {
    one_shot_session_with(path, LoadLimits::default())
}

/// [`one_shot_session`] with other input budgets (`--max-profile-bytes`).
pub fn one_shot_session_with(path: &Path, limits: LoadLimits) -> Result<Session, ApiError> {
    local_session(path, SessionOptions { limits, ..SessionOptions::one_shot() })
}

/// A session over a local `path` with `options`.
pub fn local_session(path: &Path, options: SessionOptions) -> Result<Session, ApiError> {
    Session::open_path(path, options)
        .map_err(|cause| ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause }))
}

/// A session over `path` that keeps what it computes (within the default bound), and its
/// run `run` (`None`: the newest): for callers asking several questions of one run, such
/// as the trace routes' tests and benchmarks.
pub fn open_run(path: &Path, run: Option<&str>) -> Result<(Session, ServedRun), ApiError> {
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
    let session = Session::open_path(path, options)
        .map_err(|cause| ApiError::Discovery(oxprof_format::DiscoveryError::Io { path: path.to_path_buf(), cause }))?;
    let run = session.run(run)?;
    Ok((session, run))
}

/// Answers a data request for the profiles under `path`, computing everything afresh,
/// with the whole body in memory (tests compare it with XProf's files).
pub fn data(path: &Path, request: &DataRequest) -> Result<DataResponse, ApiError> {
    let session = one_shot_session(path)?;
    let run = session.run(request.run.as_deref())?;
    let report = compute(&session, &run, request, false)?;
    let body = report.xprof_body();
    Ok(DataResponse {
        content_type: body.content_type,
        json: report.xprof_body_json(),
        body: body.text,
        notes: report.notes(),
    })
}

/// The report of a data request ([`crate::answer::answer`] read as a report: a trace's
/// body whole, with no tables; a binary body is an error).
pub fn compute(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    crate::answer::answer(session, run, request, refresh)?.into_report()
}

/// XProf's `/data_csv` of a report: the first DataTable of its JSON body as CSV, or `None`
/// when the body has none.
pub fn xprof_csv(report: &dyn Report) -> Option<String> {
    oxprof_wire::csv::data_csv(&report.xprof_body_json()?)
}
