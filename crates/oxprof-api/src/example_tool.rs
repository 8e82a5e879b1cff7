//! A tool that exists to prove the registry's promise: adding a tool is one module and one
//! row. Built only with the `example-tool` feature (scripts/ci/test-example-tool.sh), it
//! answers a small binary body, and that script checks it reaches every front-end (the
//! CLI's help and `data`, HTTP, Python and the UI's Tools menu) with no other change.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::{Answer, DataRequest, select_hosts};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, Listed, Offered, Reference, Tool, ToolId};

/// The body's first bytes: not UTF-8, so a front-end that treats it as text is caught.
pub const MAGIC: &[u8] = b"\x00\xffOXPROF-EXAMPLE\n";

/// `MAGIC`, then the selected hosts' names, one per line.
fn example_answer(_: &Session, run: &ServedRun, request: &DataRequest, _: bool) -> Result<Answer, ApiError> {
    let mut bytes = MAGIC.to_vec();
    for file in select_hosts(run, request.host.as_deref())? {
        bytes.extend_from_slice(file.host.as_bytes());
        bytes.push(b'\n');
    }
    Ok(Answer::bytes(bytes))
}

/// The one row.
pub(crate) const ROWS: &[Tool] = &[Tool {
    id: ToolId::declared("example_binary"),
    aliases: &[],
    title: "Example binary tool",
    summary: "A test tool: a binary body naming the hosts (built only with the example-tool feature)",
    family: Family::XSpace,
    hosts: Hosts::EachAndAll,
    listed: Listed::Always,
    offered: Offered::Always,
    page: "raw",
    content_type: "application/octet-stream",
    compute: Some(Computation::Answer(example_answer)),
    reference: Reference::None,
    menu: None,
    device: None,
    defaults: &[],
    superseded_by: None,
}];
