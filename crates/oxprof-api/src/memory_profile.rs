//! The `memory_profile` tool: allocator activity of the selected hosts.

use crate::ApiError;
use crate::data::{DataRequest, DataResponse};
use std::path::Path;

/// Tools answered here (XProf's names).
pub const TOOLS: &[&str] = &["memory_profile"];

/// Answers a data request for one of [`TOOLS`].
pub fn data(_path: &Path, tool: &str, _request: &DataRequest) -> Result<DataResponse, ApiError> {
    Err(ApiError::NotYetAvailable { tool: tool.to_string() })
}
