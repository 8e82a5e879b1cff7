//! The tools, in one table: every other place that needs to know a tool (the CLI's help
//! and parser, `/run_tools`, `/hosts`, `/oxprof/api/info`, the UI's Tools menu, the answer
//! path, the golden tests) reads it from here ([`tools`], [`find`], [`resolve`]).
//!
//! Each family module declares its own rows (`ROWS`, of [`crate::tool::Tool`]) beside the
//! computations they name; the registry concatenates them in XProf's listing order, as
//! DataFusion's `register_all` gathers its function families. Adding a tool is one
//! analysis module (a typed report implementing `oxprof_report::Report`), one row in its
//! family's `ROWS`, an id in `oxprof_report::ToolId` and, for a page of its own, one UI
//! page (`ui/src/pages/`, registered under the row's `page`); `tests/registry.rs` fails
//! when a row is missing from any of those places.

use crate::request::DataRequest;
pub use crate::tool::*;
use oxprof_model::XSpace;
use oxprof_model::schema::{
    GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, METADATA_PLANE_NAME, StatType, TPU_PLANE_PREFIX,
};
use serde_json::Value;
use std::sync::LazyLock;

/// XProf's `GetAvailableToolNames` order (then oxprof's own tools, then the tools XProf
/// names by URL only): the order of [`tools`], which is the id table's own.
const LISTING_ORDER: &[ToolId] = ToolId::ALL;

/// Every family's rows, in [`LISTING_ORDER`] (rows of ids it does not name last).
static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let families: &[&[Tool]] = &[
        crate::trace::ROWS,
        crate::inference::ROWS,
        crate::op_stats::ROWS,
        crate::memory_profile::ROWS,
        crate::hlo_tools::ROWS,
        crate::counters::ROWS,
        crate::tf_data::ROWS,
        crate::pytorch::ROWS,
        crate::hta::ROWS,
        #[cfg(feature = "example-tool")]
        crate::example_tool::ROWS,
    ];
    let mut tools: Vec<Tool> = families.iter().copied().flatten().copied().collect();
    let place = |t: &Tool| LISTING_ORDER.iter().position(|id| *id == t.id).unwrap_or(usize::MAX);
    tools.sort_by_key(place);
    tools
});

/// Every tool, in the order of XProf's `GetAvailableToolNames` (then oxprof's own, then
/// the tools XProf names that oxprof does not compute): each family module's rows.
pub fn tools() -> &'static [Tool] {
    &TOOLS
}

/// The row of the tool `id` names (`None`: a declared id whose module is not built in).
pub fn row(id: ToolId) -> Option<&'static Tool> {
    tools().iter().find(|t| t.id == id)
}

/// The tool `name` names (its name or an alias; XProf's trailing `^` ignored): where the
/// edges (the CLI, HTTP, Python, the agent verbs) turn a string into a tool.
pub fn find(name: &str) -> Option<&'static Tool> {
    let name = name.trim_end_matches('^');
    tools().iter().find(|t| t.is(name))
}

/// Why a name is not a tool oxprof computes: the one line the CLI and Python both show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolNameError {
    /// No tool has that name or alias.
    #[error("unknown tool {name:?}; the tools are {}", available_names().join(", "))]
    Unknown {
        /// The name given.
        name: String,
    },
    /// A tool XProf has that oxprof does not compute yet.
    #[error("{name:?} ({title}) is not computed by this version of oxprof")]
    NotComputed {
        /// The tool's name.
        name: &'static str,
        /// Its title.
        title: &'static str,
    },
}

/// The names of the tools oxprof computes, in [`tools`] order.
pub fn available_names() -> Vec<&'static str> {
    tools().iter().filter(|t| t.available()).map(Tool::name).collect()
}

/// The tool `name` names (its name or an alias), if oxprof computes it.
pub fn resolve(name: &str) -> Result<&'static Tool, ToolNameError> {
    match find(name) {
        Some(tool) if tool.available() => Ok(tool),
        Some(tool) => Err(ToolNameError::NotComputed { name: tool.name(), title: tool.title }),
        None => Err(ToolNameError::Unknown { name: name.to_string() }),
    }
}

/// A request for the tool `name` names (its name or an alias), if oxprof computes it: the
/// newest run, every host, no parameters. The edges' way from a name to a request.
pub fn request(name: &str) -> Result<DataRequest, ToolNameError> {
    resolve(name).map(|tool| DataRequest::new(tool.id))
}

/// What a run's first host offers, for [`Listed`] and [`Offered`] (a pod's partials carry
/// it: a pod result lists its tools without the hosts' files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Features {
    gpu: bool,
    hlo: bool,
    megascale: bool,
    counters: bool,
    host_plane: bool,
    pytorch: bool,
}

impl Features {
    /// Read from the first host's XSpace: plane names and metadata, and the lines of TPU
    /// planes only (their counters).
    pub fn of(first_host: &XSpace) -> Features {
        Features {
            gpu: first_host.planes_with_prefix(GPU_PLANE_PREFIX).next().is_some(),
            hlo: first_host
                .planes
                .iter()
                .filter(|p| p.name == METADATA_PLANE_NAME)
                .any(|p| p.stat_metadata_of_type(StatType::HloProto).is_some()),
            megascale: first_host
                .plane(HOST_THREADS_PLANE_NAME)
                .is_some_and(|p| p.event_metadata().iter().any(|m| p.str(m.name).starts_with("MegaScale:"))),
            counters: first_host
                .planes_with_prefix(TPU_PLANE_PREFIX)
                .any(|p| p.lines.iter().any(|line| line.events(p).any(|e| e.stat(StatType::CounterValue).is_some()))),
            host_plane: first_host.plane(HOST_THREADS_PLANE_NAME).is_some(),
            pytorch: oxprof_pytorch::is_pytorch(first_host),
        }
    }

    fn lists(&self, listed: Listed) -> bool {
        match listed {
            Listed::Always => true,
            Listed::WithGpu => self.gpu,
            Listed::WithHlo => self.hlo,
            Listed::WithMegascale => self.megascale,
            Listed::WithCounters => self.counters,
            Listed::Never => false,
        }
    }
}

/// The tools XProf's `GetAvailableToolNames` lists for a run with these features, in its order.
pub fn xprof_listed(features: &Features) -> Vec<&'static str> {
    tools().iter().filter(|t| features.lists(t.listed)).map(Tool::name).collect()
}

/// The tools oxprof's UI offers for a run with these features.
pub fn offered(features: &Features) -> Vec<&'static Tool> {
    TOOLS
        .iter()
        .filter(|t| match t.offered {
            Offered::AsXprof => t.available() && features.lists(t.listed),
            Offered::Always => t.available() && features.host_plane,
            Offered::PyTorch => t.available() && features.pytorch,
            Offered::No => false,
        })
        .collect()
}

/// The registry as JSON (`/oxprof/api/info`).
pub fn to_json() -> Value {
    Value::Array(
        TOOLS
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name(),
                    "aliases": t.aliases,
                    "title": t.title,
                    "summary": t.summary,
                    "family": t.family,
                    "hosts": t.hosts,
                    "page": t.page,
                    "content_type": t.content_type,
                    "available": t.available(),
                    "reference": t.reference,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id has exactly one row, and the listing order names every row once.
    #[test]
    fn every_id_has_one_row_in_listing_order() {
        let rows: Vec<&str> = tools().iter().map(Tool::name).collect();
        let listed: Vec<&str> = LISTING_ORDER.iter().map(|id| id.name()).collect();
        assert_eq!(rows, listed);
        let mut ids: Vec<&str> = ToolId::ALL.iter().map(|id| id.name()).collect();
        let mut sorted_rows = rows.clone();
        ids.sort_unstable();
        sorted_rows.sort_unstable();
        assert_eq!(ids, sorted_rows);
    }

    /// No two rows share an id (a declared one included), and each id finds its row.
    #[test]
    fn each_row_is_found_by_its_id() {
        for tool in tools() {
            assert!(std::ptr::eq(row(tool.id).unwrap(), tool), "{}", tool.name());
            assert_eq!(tools().iter().filter(|t| t.id == tool.id).count(), 1, "{}", tool.name());
        }
        assert!(row(ToolId::declared("no_such_tool")).is_none());
    }

    #[test]
    fn names_resolve_to_tools_or_say_why_not() {
        assert_eq!(resolve("tensorflow_stats").map(|t| t.id), Ok(ToolId::FRAMEWORK_OP_STATS));
        assert_eq!(resolve("overview_page^").map(|t| t.id), Ok(ToolId::OVERVIEW_PAGE));
        let unknown = resolve("nope").unwrap_err().to_string();
        assert!(
            unknown.starts_with("unknown tool \"nope\"; the tools are trace_viewer@, overview_page, "),
            "{unknown}"
        );
        // Tools XProf has and oxprof lacks are named as such, not listed as choices.
        for tool in tools().iter().filter(|t| t.family == Family::NotYet) {
            assert!(!unknown.contains(tool.name()), "{unknown}");
            assert_eq!(
                resolve(tool.name()).unwrap_err().to_string(),
                format!("{:?} ({}) is not computed by this version of oxprof", tool.name(), tool.title)
            );
        }
    }
}
