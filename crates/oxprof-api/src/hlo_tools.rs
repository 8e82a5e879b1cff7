//! Tools over one HLO module of a run: `memory_viewer`, `graph_viewer`, `module_list`.
//!
//! XProf keeps a run's HLO modules as `<module>.hlo_proto.pb` files in the run directory:
//! side-car files written by the framework, or, when there are none, files it extracts
//! from the `Hlo Proto` stats of every host's `/host:metadata` plane, named
//! `<module name>(<program id>)` (or a single empty `NO_MODULE` when the run has no HLO).
//! oxprof reads the same sources without writing anything: side-car files when the run
//! has any, else the protos inside the profiles.
//!
//! Module names come from the request (`module_name`, the frontend also sends it as
//! `host`); only names of modules that exist in the run are accepted, so a request can
//! never make oxprof read a file outside the run directory.

use crate::ApiError;
use crate::catalog::ServedRun;
use crate::request::Answer;
use crate::request::{DataRequest, DataResponse, with_notes};
use crate::session::Session;
use crate::tool::{Computation, Family, Hosts, JSON, Listed, Offered, Reference, Tool, ToolId};
use oxprof_hlo::{
    BufferAssignment, HloModule, decode_buffer_assignment, decode_hlo_proto, decode_module_extras, hlo_proto_bytes,
};
use oxprof_report::Report;
use oxprof_xprof::tools::graph_viewer::{self, TextKind};
use oxprof_xprof::tools::memory_viewer::{self, MemoryViewerOptions};

/// Suffix of XProf's per-module files in a run directory.
pub const HLO_PROTO_SUFFIX: &str = ".hlo_proto.pb";

/// The module name XProf lists for a run without HLO.
pub const NO_MODULE: &str = "NO_MODULE";

/// Where a module's `xla.HloProto` bytes are.
enum Source {
    /// A side-car file in the run directory, by its base name without suffix.
    File,
    /// Inside the profiles (already read).
    Bytes(Vec<u8>),
    /// The empty proto XProf writes for a run without HLO.
    Empty,
}

/// A run's HLO modules, as XProf names them.
struct ModuleSet {
    modules: Vec<(String, Source)>,
}

/// Lists the run's modules: side-car `*.hlo_proto.pb` files if there are any, else the
/// protos in the profiles (`name(program_id)`, first host first, first occurrence wins),
/// else `NO_MODULE`. Names are sorted (XProf lists them in directory order).
fn module_set(session: &Session, run: &ServedRun) -> Result<ModuleSet, ApiError> {
    let mut modules: Vec<(String, Source)> = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&run.dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let Some(module) = name.strip_suffix(HLO_PROTO_SUFFIX) else { continue };
            if module.is_empty() || !entry.path().is_file() {
                continue;
            }
            modules.push((module.to_string(), Source::File));
        }
    }
    let _admission = session.admit();
    if modules.is_empty() {
        for host in &run.hosts {
            // The protos are metadata: no plane's events are needed.
            let space = session.load(host, &|_| false)?;
            for (program_id, bytes) in hlo_proto_bytes(&space) {
                // `HloModuleNameWithProgramId`; undecodable protos are skipped, as XProf does.
                let Ok(module) = decode_hlo_proto(bytes) else { continue };
                let name = format!("{}({program_id})", module.name);
                if !modules.iter().any(|(n, _)| *n == name) {
                    modules.push((name, Source::Bytes(bytes.to_vec())));
                }
            }
        }
    }
    if modules.is_empty() {
        modules.push((NO_MODULE.to_string(), Source::Empty));
    }
    modules.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(ModuleSet { modules })
}

impl ModuleSet {
    fn names(&self) -> Vec<&str> {
        self.modules.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The proto bytes of a module that exists; reading a side-car file only by a name
    /// taken from the directory listing.
    fn bytes(&self, run: &ServedRun, name: &str) -> Result<Vec<u8>, ApiError> {
        let Some((listed, source)) = self.modules.iter().find(|(n, _)| n == name) else {
            return Err(ApiError::BadParameter {
                name: "module_name".into(),
                reason: format!("no HLO module {name:?} in run {:?}; modules: {}", run.name, self.names().join(", ")),
            });
        };
        match source {
            Source::Bytes(bytes) => Ok(bytes.clone()),
            Source::Empty => Ok(Vec::new()),
            Source::File => {
                let path = run.dir.join(format!("{listed}{HLO_PROTO_SUFFIX}"));
                std::fs::read(&path).map_err(|e| ApiError::BadParameter {
                    name: "module_name".into(),
                    reason: format!("cannot read {}: {e}", path.display()),
                })
            }
        }
    }

    /// `GetHloProtoByProgramId`: the first module (in name order) whose name contains the
    /// program id.
    fn by_program_id(&self, program_id: &str) -> Option<&str> {
        self.modules.iter().map(|(n, _)| n.as_str()).find(|n| n.contains(program_id))
    }
}

/// A decoded module with its buffer assignment; `None` module for an empty proto.
struct LoadedModule {
    module: Option<HloModule>,
    assignment: Option<BufferAssignment>,
    bytes: Vec<u8>,
}

fn load_module(set: &ModuleSet, run: &ServedRun, name: &str) -> Result<LoadedModule, ApiError> {
    let bytes = set.bytes(run, name)?;
    let bad = |e: oxprof_hlo::DecodeError| ApiError::BadParameter {
        name: "module_name".into(),
        reason: format!("HLO module {name:?} does not decode: {e}"),
    };
    let module = decode_hlo_proto(&bytes).map_err(bad)?;
    let assignment = decode_buffer_assignment(&bytes).map_err(bad)?;
    // An empty proto (XProf's `NO_MODULE`) has no module at all.
    let module = (!(module.name.is_empty() && module.computations.is_empty())).then_some(module);
    Ok(LoadedModule { module, assignment, bytes })
}

fn param<'a>(request: &'a DataRequest, name: &str) -> Option<&'a str> {
    request.params.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// Which module a request names: `module_name`, else `program_id` (substring of a module
/// name), else — with `by_node` (`graph_viewer`) — the module holding `node_name`.
fn requested_module<'s>(
    set: &'s ModuleSet,
    run: &ServedRun,
    request: &DataRequest,
    by_node: bool,
) -> Result<&'s str, ApiError> {
    if let Some(name) = param(request, "module_name") {
        return set.names().into_iter().find(|n| *n == name).ok_or_else(|| ApiError::BadParameter {
            name: "module_name".into(),
            reason: format!("no HLO module {name:?} in run {:?}; modules: {}", run.name, set.names().join(", ")),
        });
    }
    if let Some(program_id) = param(request, "program_id") {
        return set.by_program_id(program_id).ok_or_else(|| ApiError::BadParameter {
            name: "program_id".into(),
            reason: format!("HLO proto file containing program ID {program_id} not found in run {:?}", run.name),
        });
    }
    if by_node && let Some(node) = param(request, "node_name") {
        for name in set.names() {
            let Ok(loaded) = load_module(set, run, name) else { continue };
            let holds = loaded
                .module
                .as_ref()
                .is_some_and(|m| m.computations.iter().any(|c| c.instructions.iter().any(|i| i.name == node)));
            if holds {
                return Ok(name);
            }
        }
        return Err(ApiError::BadParameter {
            name: "node_name".into(),
            reason: format!("HLO proto file containing node name {node} not found in run {:?}", run.name),
        });
    }

    Err(ApiError::BadParameter { name: "module_name".into(), reason: "Can not load hlo proto from options.".into() })
}

/// [`crate::registry::Compute`] of `module_list`: the run's module names, comma-separated.
pub(crate) fn module_list(
    session: &Session,
    run: &ServedRun,
    _request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    let set = module_set(session, run)?;
    Ok(DataResponse { content_type: "text/plain", body: set.names().join(","), json: None, notes: Vec::new() }
        .into_report())
}

/// [`crate::registry::Compute`] of `memory_viewer` ([`memory_viewer::PreprocessResult`]).
pub(crate) fn memory_viewer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Box<dyn Report>, ApiError> {
    memory_viewer_report(&module_set(session, run)?, run, request)
}

/// The row computation of `graph_viewer`: the module's text or graph, or with `type=pb`
/// the module's `xla.HloProto` bytes (a binary body).
pub(crate) fn graph_viewer(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
    _refresh: bool,
) -> Result<Answer, ApiError> {
    if request.params.get("type").is_some_and(|t| t == "pb") {
        return Ok(Answer::bytes(graph_viewer_proto_bytes(session, run, request)?));
    }
    let set = module_set(session, run)?;
    Ok(Answer::Report(graph_viewer_data(&set, run, request)?.into_report()))
}

fn memory_viewer_report(set: &ModuleSet, run: &ServedRun, request: &DataRequest) -> Result<Box<dyn Report>, ApiError> {
    let name = requested_module(set, run, request, false)?;
    let loaded = load_module(set, run, name)?;
    // `memory_space` that is not a number reads as 0, as in XProf.
    let memory_color = param(request, "memory_space").and_then(|v| v.parse::<i32>().ok()).unwrap_or(0);
    let timeline = param(request, "view_memory_allocation_timeline").is_some_and(|v| v != "0" && v != "false");
    let options = MemoryViewerOptions { memory_color: i64::from(memory_color), ..Default::default() };
    let mut notes = Vec::new();
    let empty_module = HloModule::default();
    let module = loaded.module.as_ref().unwrap_or(&empty_module);
    if loaded.module.is_none() {
        notes.push(format!("run {:?} has no HLO module", run.name));
    } else if loaded.assignment.is_none() {
        notes.push(format!("HLO module {name:?} carries no buffer assignment"));
    }
    let assignment = loaded.assignment.unwrap_or_default();
    let result = memory_viewer::preprocess(module, &assignment, options).map_err(|reason| ApiError::BadParameter {
        name: "module_name".into(),
        reason: format!("Failed to convert HLO proto to memory viewer result: {reason}"),
    })?;
    if timeline {
        return Ok(DataResponse {
            content_type: "text/html",
            body: memory_viewer::timeline_html(&result),
            json: None,
            notes,
        }
        .into_report());
    }
    Ok(with_notes(Box::new(result), notes))
}

fn graph_viewer_data(set: &ModuleSet, run: &ServedRun, request: &DataRequest) -> Result<DataResponse, ApiError> {
    let Some(kind) = param(request, "type") else {
        return Err(ApiError::BadParameter {
            name: "type".into(),
            reason: "Graph viewer must provide a type option.".into(),
        });
    };
    let name = requested_module(set, run, request, true)?;
    let loaded = load_module(set, run, name)?;
    let text_kind = match kind {
        "short_txt" => TextKind::Short,
        "long_txt" => TextKind::Long,
        "me_graph" => TextKind::Metadata,
        "pbtxt" | "pb" if loaded.module.is_none() && loaded.assignment.is_none() && loaded.bytes.is_empty() => {
            // An empty proto prints and serializes to nothing.
            return Ok(DataResponse {
                content_type: "application/octet-stream",
                body: String::new(),
                json: None,
                notes: vec![format!("run {:?} has no HLO module", run.name)],
            });
        }
        "adj_nodes" => {
            let Some(module) = loaded.module.as_ref() else {
                return Err(ApiError::BadParameter {
                    name: "module_name".into(),
                    reason: "No HLO module found in the HLO proto".into(),
                });
            };
            let node = param(request, "node_name").unwrap_or("");
            let body = graph_viewer::adjacent_nodes(module, node)
                .map_err(|reason| ApiError::BadParameter { name: "node_name".into(), reason })?;
            let json = serde_json::from_str(&body).ok();
            return Ok(DataResponse { content_type: "text/plain", body, json, notes: Vec::new() });
        }
        "graph" | "dot" => return graph_data(&loaded, request, kind),
        "pbtxt" => {
            let body = graph_viewer::proto_text(&loaded.bytes).map_err(|reason| ApiError::BadParameter {
                name: "module_name".into(),
                reason: format!("Unable to convert to xla.HloProto pbtxt representation: {reason}"),
            })?;
            return Ok(DataResponse { content_type: "application/octet-stream", body, json: None, notes: Vec::new() });
        }
        "pb" => {
            // XProf answers the proto's bytes (`SerializeAsString`, equal to the stored
            // bytes up to the order of map entries). A `DataResponse` body is text:
            // binary bodies are served by [`graph_viewer_proto_bytes`].
            return match String::from_utf8(loaded.bytes.clone()) {
                Ok(body) => Ok(DataResponse { content_type: "application/octet-stream", body, json: None, notes: Vec::new() }),
                Err(_) => Err(ApiError::NotYetAvailable {
                    tool: "graph_viewer (type=pb: a binary body; oxprof_api::hlo_tools::graph_viewer_proto_bytes serves it)".into(),
                }),
            };
        }
        "json" | "custom_call" => {
            return Err(ApiError::NotYetAvailable { tool: format!("graph_viewer (type={kind})") });
        }
        other => {
            return Err(ApiError::BadParameter {
                name: "type".into(),
                reason: format!("Unknown graph viewer type option: {other}"),
            });
        }
    };
    let Some(module) = loaded.module.as_ref() else {
        return Err(ApiError::BadParameter {
            name: "module_name".into(),
            reason: "No HLO module found in the HLO proto".into(),
        });
    };
    let show_metadata = param(request, "show_metadata").is_some_and(|v| v != "0" && v != "false");
    let extras = decode_module_extras(&loaded.bytes).unwrap_or_default();
    let text = graph_viewer::module_text(module, &extras, text_kind, show_metadata)
        .map_err(|reason| ApiError::BadParameter { name: "module_name".into(), reason })?;
    let content_type = if text_kind == TextKind::Metadata { "text/plain" } else { "application/octet-stream" };
    Ok(DataResponse { content_type, body: text, json: None, notes: Vec::new() })
}

/// `type=graph` (XProf: the DOT of a node's neighbourhood, wrapped in an HTML page for
/// `format=html`, bare for `format=dot`) and oxprof's `type=dot` (the bare DOT as plain
/// text, for oxprof's UI). Parameters as XProf's frontend sends them: `node_name`,
/// `graph_width` (digits, else 3), `show_metadata=true`, `merge_fusion=true`.
fn graph_data(loaded: &LoadedModule, request: &DataRequest, kind: &str) -> Result<DataResponse, ApiError> {
    let Some(module) = loaded.module.as_ref() else {
        return Err(ApiError::BadParameter {
            name: "module_name".into(),
            reason: "No HLO module found in the HLO proto".into(),
        });
    };
    let flag = |name: &str| param(request, name).is_some_and(|v| v == "true" || v == "1");
    let radius = param(request, "graph_width")
        .filter(|v| v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(3);
    let options = graph_viewer::DotRenderOptions {
        radius,
        show_backend_config: flag("show_metadata"),
        show_fusion_subcomputations: !flag("merge_fusion"),
    };
    let format = if kind == "dot" { "dot" } else { param(request, "format").unwrap_or("html") };
    if format != "html" && format != "dot" {
        return Err(ApiError::BadParameter {
            name: "format".into(),
            reason: format!(
                "graph format {format:?} is not served (XProf: \"Can't render as URL; no URL renderer was registered.\"); use html or dot"
            ),
        });
    }
    let node = param(request, "node_name").unwrap_or("");
    let dot = graph_viewer::graph_dot(module, node, options)
        .map_err(|reason| ApiError::BadParameter { name: "node_name".into(), reason })?;
    if format == "dot" {
        return Ok(DataResponse { content_type: "text/plain", body: dot, json: None, notes: Vec::new() });
    }
    Ok(DataResponse { content_type: "text/html", body: graph_viewer::graph_html(&dot), json: None, notes: Vec::new() })
}

/// `graph_viewer` with `type=pb`: the module's `xla.HloProto` bytes, as stored in the run
/// (XProf re-serializes the parsed proto: the same bytes up to the order of map entries,
/// which its C++ serializer does not fix). Empty for a run without HLO (`NO_MODULE`).
pub fn graph_viewer_proto_bytes(
    session: &Session,
    run: &ServedRun,
    request: &DataRequest,
) -> Result<Vec<u8>, ApiError> {
    let set = module_set(session, run)?;
    let name = requested_module(&set, run, request, true)?;
    Ok(load_module(&set, run, name)?.bytes)
}

/// This family's rows of the registry (`memory_viewer`, `graph_viewer`, `module_list`).
pub(crate) const ROWS: &[Tool] = &[
    Tool {
        id: ToolId::MEMORY_VIEWER,
        aliases: &[],
        title: "Memory viewer",
        summary: "an HLO module's buffers over its program order (module_name=...)",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::WithHlo,
        offered: Offered::AsXprof,
        page: "memory_viewer",
        content_type: JSON,
        compute: Some(Computation::Custom(memory_viewer)),
        reference: Reference::Xprof,
        menu: Some(10),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::GRAPH_VIEWER,
        aliases: &[],
        title: "Graph viewer",
        summary: "an HLO module as text or as a graph around one op (module_name=..., type=...)",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::WithHlo,
        offered: Offered::AsXprof,
        page: "graph_viewer",
        content_type: "text/plain",
        compute: Some(Computation::Answer(graph_viewer)),
        reference: Reference::Xprof,
        menu: Some(3),
        device: None,
        defaults: &[],
        superseded_by: None,
    },
    Tool {
        id: ToolId::MODULE_LIST,
        aliases: &[],
        title: "HLO module list",
        summary: "the run's HLO module names, comma-separated",
        family: Family::Hlo,
        hosts: Hosts::Each,
        listed: Listed::Never,
        offered: Offered::No,
        page: "generic",
        content_type: "text/plain",
        compute: Some(Computation::Custom(module_list)),
        reference: Reference::Own("crates/oxprof-api/tests/golden_hlo_tools.rs"),
        menu: None,
        device: None,
        defaults: &[],
        superseded_by: None,
    },
];
