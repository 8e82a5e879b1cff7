//! Tools over one HLO module of a host: `memory_viewer`, `graph_viewer`, `module_list`.

use crate::ApiError;
use crate::data::{DataRequest, DataResponse};
use std::path::Path;

/// Tools answered here (XProf's names).
pub const TOOLS: &[&str] = &["memory_viewer", "graph_viewer", "module_list"];

/// Answers a data request for one of [`TOOLS`].
pub fn data(_path: &Path, tool: &str, _request: &DataRequest) -> Result<DataResponse, ApiError> {
    Err(ApiError::NotYetAvailable { tool: tool.to_string() })
}
