//! The one path from a tool request to its answer ([`answer`]), shared by every front-end:
//! the CLI's `data`, the HTTP `/data` routes, Python's `Profile.tool` and the agent verbs.
//!
//! An [`Answer`] is either a typed report (tables, the serde form, XProf's body rendered
//! on demand) or a bare [`Body`] (a trace's events, written while they are sent; a binary
//! protobuf). Front-ends write [`Answer::into_body`](crate::request::Answer::into_body) without asking which tool it was.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::registry::{self, Computation};
use crate::request::{DataRequest, with_notes};
use crate::session::Session;

pub use crate::request::Answer;

/// Computes a request's answer by its tool's registry row (`refresh`: recompute what the
/// session keeps).
pub fn answer(session: &Session, run: &ServedRun, request: &DataRequest, refresh: bool) -> Result<Answer, ApiError> {
    let tool = registry::row(request.tool).ok_or_else(|| ApiError::UnknownTool(request.tool.name().to_string()))?;
    let computation = tool.compute.ok_or_else(|| ApiError::NotYetAvailable { tool: tool.name().to_string() })?;
    match computation {
        Computation::OpStats { steps, report } => {
            let combined = crate::op_stats::op_stats_of(session, run, request, refresh, steps, tool.device)?;
            Ok(Answer::Report(with_notes(report(&combined.op_stats, &request.params), combined.notes)))
        }
        Computation::Custom(compute) => Ok(Answer::Report(compute(session, run, request, refresh)?)),
        Computation::Answer(answer) => answer(session, run, request, refresh),
    }
}
