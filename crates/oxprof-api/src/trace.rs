//! The trace viewer: XProf's `trace_viewer` / `trace_viewer@` bodies and oxprof's level-of-detail trace API.

use crate::ApiError;
use crate::data::{DataRequest, DataResponse};
use std::path::Path;

/// Tools answered here (XProf's names).
pub const TOOLS: &[&str] = &["trace_viewer", "trace_viewer@"];

/// Answers a data request for one of [`TOOLS`].
pub fn data(_path: &Path, tool: &str, _request: &DataRequest) -> Result<DataResponse, ApiError> {
    Err(ApiError::NotYetAvailable { tool: tool.to_string() })
}
