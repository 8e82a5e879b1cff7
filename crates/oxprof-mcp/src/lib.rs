//! `oxprof mcp`: a Model Context Protocol server over one path, built on the official Rust
//! SDK (`rmcp`). Its tools are `oxprof explain` and `oxprof-agent`'s verbs (`list_runs`, `top`,
//! `steps`, `tool`, `events`, `hlo`, `allocations`, `query`, `diff`), their arguments and results described by JSON schemas, their results
//! the JSON `oxprof <verb> --format json` prints; its resources are the path's runs. It is
//! read-only: no tool captures or writes anything.
//!
//! A failed call is an MCP tool error (`isError`) carrying the CLI's one-line message. The
//! transports are stdio ([`serve_stdio`]) and streamable HTTP on loopback ([`serve_http`]),
//! whose requests pass `oxprof serve`'s rules for programs
//! ([`Guard::check_program_client`](oxprof_api::http::Guard::check_program_client): a
//! loopback `Host`, no cross-site fetch, no foreign `Origin`).
//!
//! This crate keeps `rmcp` (and its dependencies) out of the others.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use oxprof_agent as agent;
use oxprof_agent::AgentError;
use oxprof_api::session::{Session, SessionOptions};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Most MCP sessions the HTTP transport keeps open at once by default (`--max-sessions`).
pub const DEFAULT_MAX_HTTP_SESSIONS: usize = 64;

/// What the server serves and within which budgets.
#[derive(Clone)]
pub struct McpOptions {
    /// A log directory, a run directory, or one profile file.
    pub path: PathBuf,
    /// The session's options (input budgets, persistent cache, memory bound).
    pub session: SessionOptions,
    /// How `diff` reads its two runs.
    pub read: oxprof_api::diff::ReadOptions,
    /// Most sessions the HTTP transport keeps open at once (each holds a worker until it
    /// is closed or idles out); a new one beyond them is refused with 503.
    pub max_http_sessions: usize,
}

/// Why the server could not start or stopped early.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The path cannot be read.
    #[error(transparent)]
    Api(#[from] oxprof_api::ApiError),
    /// A socket or the runtime could not be set up.
    #[error("cannot start the MCP server: {0}")]
    Io(#[from] std::io::Error),
    /// The MCP session ended with an error (a broken transport, a bad handshake).
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// What every call reads.
struct Shared {
    path: PathBuf,
    session: Arc<Session>,
    read: oxprof_api::diff::ReadOptions,
    /// The SQL engine, started by the first `query`.
    engine: OnceLock<Result<Arc<oxprof_sql::Engine>, String>>,
}

impl Shared {
    fn engine(&self) -> Result<Arc<oxprof_sql::Engine>, AgentError> {
        self.engine
            .get_or_init(|| {
                oxprof_sql::Engine::new(self.session.clone(), Vec::new(), agent::query_limits())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(AgentError::Sql)
    }
}

/// The MCP server of one path.
#[derive(Clone)]
pub struct OxprofMcp {
    shared: Arc<Shared>,
    tool_router: ToolRouter<OxprofMcp>,
}

/// What a call that panicked answers (a bug; the server goes on).
const INTERNAL_ERROR: &str = "internal error while answering this request; please report it";

impl OxprofMcp {
    /// A server over `options.path` (its runs discovered now).
    pub fn new(options: McpOptions) -> Result<OxprofMcp, McpError> {
        let session = Arc::new(oxprof_api::data::local_session(&options.path, options.session)?);
        let shared = Shared { path: options.path, session, read: options.read, engine: OnceLock::new() };
        Ok(OxprofMcp { shared: Arc::new(shared), tool_router: Self::tool_router() })
    }

    /// Runs `verb` on a blocking thread (verbs decode and compute), its error as the
    /// CLI's one line.
    async fn call<T: Send + 'static>(
        &self,
        verb: impl FnOnce(&Shared) -> Result<T, AgentError> + Send + 'static,
    ) -> Result<T, String> {
        let shared = self.shared.clone();
        match tokio::task::spawn_blocking(move || verb(&shared)).await {
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(_) => Err(INTERNAL_ERROR.to_string()),
        }
    }
}

#[tool_router]
impl OxprofMcp {
    /// `oxprof runs PATH --format json`.
    #[tool(
        description = "List the runs of the served path (newest first) with their hosts. Bounded: limit/offset, budget in bytes (default 16384).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list_runs(
        &self,
        Parameters(args): Parameters<agent::RunsArgs>,
    ) -> Result<Json<agent::RunsResult>, String> {
        self.call(move |s| agent::runs(&s.session, &args)).await.map(Json)
    }

    /// `oxprof top WHAT PATH --format json`.
    #[tool(
        description = "Top rows of a tool's main table, most first: what = ops (framework ops, by total_self_time), kernels (GPU kernels, by total time), hlo (HLO ops, by total_self_time) or operators (PyTorch operators, by self time); `by` picks another numeric column. Bounded: limit (default 20), offset, budget in bytes (default 16384); `left_out` says what was left out.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn top(&self, Parameters(args): Parameters<agent::TopArgs>) -> Result<Json<agent::TopResult>, String> {
        self.call(move |s| agent::top(&s.session, &args)).await.map(Json)
    }

    /// `oxprof steps PATH --format json`.
    #[tool(
        description = "The step list with each step's time breakdown (input pipeline analyzer's steps; PyTorch overview's for a PyTorch trace), in step order. Bounded: limit (default 20), offset, budget.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn steps(&self, Parameters(args): Parameters<agent::StepsArgs>) -> Result<Json<agent::StepsResult>, String> {
        self.call(move |s| agent::steps(&s.session, &args)).await.map(Json)
    }

    /// `oxprof tool TOOL PATH --format json`.
    #[tool(
        description = "Any XProf/oxprof tool's report as tables (e.g. overview_page, input_pipeline_analyzer, framework_op_stats, kernel_stats, hlo_stats, memory_profile, pytorch_overview, hta_gpu_idle), notes first. Bounded: limit rows per table (default 20), offset, budget in bytes.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn tool(&self, Parameters(args): Parameters<agent::ToolArgs>) -> Result<Json<agent::ToolResult>, String> {
        self.call(move |s| agent::tool(&s.session, &args)).await.map(Json)
    }

    /// `oxprof events PATH --name REGEX --format json`.
    #[tool(
        description = "Trace events whose name matches a regex (Rust regex syntax; ^name$ for one name) in a time window (start_ms/end_ms, ms from each host's first event), listed in time order (host, line, start, duration, self time) or, with aggregate=true, one row per name (count, total/self ms, min/avg/max). XSpace and PyTorch alike. Bounded: limit (default 20), offset, budget; `matched` counts every match.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn events(
        &self,
        Parameters(args): Parameters<agent::EventsArgs>,
    ) -> Result<Json<agent::EventsResult>, String> {
        self.call(move |s| agent::events(&s.session, &args)).await.map(Json)
    }

    /// `oxprof hlo PATH [--module M [--instruction I --depth N]] --format json`.
    #[tool(
        description = "HLO of the run: without module, the list of HLO modules (name(program id)); with module, its text one line per row; with module and instruction, the instruction's neighbourhood (operands and users to depth, default 1, at most 16) with each instruction's text. Bounded: limit (default 20), offset, budget.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn hlo(&self, Parameters(args): Parameters<agent::HloArgs>) -> Result<Json<agent::HloResult>, String> {
        self.call(move |s| agent::hlo(&s.session, &args)).await.map(Json)
    }

    /// `oxprof allocations PATH --format json`.
    #[tool(
        description = "The allocations live at the memory peak, largest first, one table per allocator (XProf's memory_profile) or GPU (PyTorch memory events), the peak's time and size in the table's facts. Bounded: limit (default 20), offset, budget.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn allocations(
        &self,
        Parameters(args): Parameters<agent::AllocationsArgs>,
    ) -> Result<Json<agent::AllocationsResult>, String> {
        self.call(move |s| agent::allocations(&s.session, &args)).await.map(Json)
    }

    /// `oxprof query SQL PATH --format json`'s rows, bounded.
    #[tool(
        description = "Run one read-only SQL statement (SELECT/WITH/EXPLAIN) over the profiles: Perfetto-shaped tables (slice, track, args, flow, …) and XProf's tool tables (op_stats, kernels, hlo_ops, steps, …). Within oxprof serve's SQL limits (20 s, 1 GiB, 10000 rows); the answer's rows are bounded by limit (default 20), offset and budget.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn query(&self, Parameters(args): Parameters<agent::QueryArgs>) -> Result<Json<agent::QueryResult>, String> {
        self.call(move |s| {
            let engine = s.engine()?;
            // Every run of the path unless one is named, as `oxprof query PATH` reads them.
            let runs = match &args.run {
                Some(name) => vec![s.session.run(Some(name))?],
                None => s.session.catalog().current().runs.clone(),
            };
            agent::query(&engine, &args, Some(&runs))
        })
        .await
        .map(Json)
    }

    /// `oxprof explain PATH --format json`.
    #[tool(
        description = "What bounds a run, in one answer: its step time and breakdown, top ops, memory, and every registered detector's finding (input-bound steps, host-bound small ops, GPU idle, synchronisation, …) ranked by the time at stake, with evidence, a suggestion and the command that shows more (schema oxprof.explain/1). Start here.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain(
        &self,
        Parameters(args): Parameters<ExplainArgs>,
    ) -> Result<Json<oxprof_explain::Explanation>, String> {
        self.call(move |s| {
            let run = s.session.run(args.run.as_deref())?;
            Ok(oxprof_explain::explain(&s.session, &run, args.host.as_deref())?)
        })
        .await
        .map(Json)
    }

    /// `oxprof diff PATH PATH --run-a A --run-b B --limit N --format json`.
    #[tool(
        description = "Compare two runs of the served path: step time and its breakdown (with a noise test), framework ops, GPU kernels, HLO ops, memory and the input pipeline. The answer is oxprof diff's typed comparison; limit ops per list (default 20, halved until the answer fits budget, said in its notes).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn diff(&self, Parameters(args): Parameters<agent::DiffArgs>) -> Result<Json<agent::DiffReport>, String> {
        self.call(move |s| agent::diff(&s.path, &args, &s.read)).await.map(Json)
    }
}

/// `explain`'s arguments.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ExplainArgs {
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// One host (default: every host of the run).
    pub host: Option<String>,
}

/// A run's resource address.
fn run_uri(name: &str) -> String {
    format!("oxprof://run/{name}")
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for OxprofMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build()).with_instructions(
            "oxprof answers questions about ML profiles (XProf/TensorBoard XSpace, PyTorch traces) under one path. \
             Start with explain (what bounds a run) or list_runs, then steps and top (ops, kernels, hlo, operators), then tool for any report, \
             events for trace events by name, hlo for HLO text and neighbourhoods, allocations for the memory peak, query for SQL and diff to compare two runs. Every answer is bounded and says what it left out \
             and how to get more (limit, offset, budget).",
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let snapshot = self.shared.session.catalog().current();
        let resources: Vec<Resource> = snapshot
            .runs
            .iter()
            .map(|run| {
                Resource::new(run_uri(&run.name), run.name.clone())
                    .with_description(format!("run {} ({} hosts)", run.name, run.hosts.len()))
                    .with_mime_type("application/json")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let not_found = || ErrorData::resource_not_found(format!("no run at {uri}: list_runs lists them"), None);
        let name = uri.strip_prefix("oxprof://run/").ok_or_else(not_found)?;
        let run = self.shared.session.run(Some(name)).map_err(|_| not_found())?;
        let hosts: Vec<&str> = run.hosts.iter().map(|h| h.host.as_str()).collect();
        let text = serde_json::json!({"run": run.name, "hosts": hosts}).to_string();
        let contents = ResourceContents::text(text, uri.clone());
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

/// A runtime for the server (its verbs run on the blocking pool).
fn runtime() -> Result<tokio::runtime::Runtime, McpError> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// Serves `options` over stdin/stdout until the client closes them.
pub fn serve_stdio(options: McpOptions) -> Result<(), McpError> {
    let server = OxprofMcp::new(options)?;
    runtime()?.block_on(async move {
        let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| McpError::Session(e.to_string()))?;
        running.waiting().await.map_err(|e| McpError::Session(e.to_string()))?;
        Ok(())
    })
}

/// The path of the streamable HTTP endpoint.
pub const HTTP_PATH: &str = "/mcp";

/// Serves `options` over streamable HTTP at `http://127.0.0.1:PORT/mcp` (port 0: any free
/// port) until Ctrl-C; `ready` is told the address once the socket listens.
pub fn serve_http(options: McpOptions, port: u16, ready: impl FnOnce(SocketAddr)) -> Result<(), McpError> {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let max_sessions = options.max_http_sessions;
    let server = OxprofMcp::new(options)?;
    runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).await?;
        let address = listener.local_addr()?;
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default().with_cancellation_token(cancel.child_token());
        // The guard below decides; rmcp's own Host check (loopback) would only repeat it.
        config.allowed_hosts = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        let sessions = Arc::new(LocalSessionManager::default());
        let service = StreamableHttpService::new(move || Ok(server.clone()), sessions.clone(), config);
        let gate = Arc::new(Gate {
            guard: oxprof_api::http::Guard::loopback().bound_to(address.ip()),
            sessions,
            max_sessions: max_sessions.max(1),
        });
        let router = axum::Router::new()
            .nest_service(HTTP_PATH, service)
            .layer(axum::middleware::from_fn_with_state(gate, guarded));
        ready(address);
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = tokio::signal::ctrl_c().await;
                cancel.cancel();
            })
            .await?;
        Ok(())
    })
}

/// What every HTTP request passes before MCP reads it.
struct Gate {
    /// `oxprof serve`'s rules for programs.
    guard: oxprof_api::http::Guard,
    /// The open sessions (counted for the cap).
    sessions: Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>,
    /// Most sessions open at once.
    max_sessions: usize,
}

/// `oxprof serve`'s rules for programs, then the cap on open sessions for a request that
/// would open one (a POST without `Mcp-Session-Id`), before any MCP request is read.
async fn guarded(
    axum::extract::State(gate): axum::extract::State<Arc<Gate>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::StatusCode;
    if let Err(refused) = check(&gate.guard, &request) {
        let status = StatusCode::from_u16(refused.status).unwrap_or(StatusCode::FORBIDDEN);
        return axum::response::IntoResponse::into_response((status, refused.message + "\n"));
    }
    let opens = request.method() == axum::http::Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens {
        let open = gate.sessions.sessions.read().await.len();
        if open >= gate.max_sessions {
            let message = format!(
                "{open} MCP sessions are open, the most this server keeps (--max-sessions {}): close one (DELETE {HTTP_PATH} with its Mcp-Session-Id) or raise --max-sessions\n",
                gate.max_sessions
            );
            return axum::response::IntoResponse::into_response((StatusCode::SERVICE_UNAVAILABLE, message));
        }
    }
    next.run(request).await
}

/// The guard's verdict on `request`'s method, path, `Host`, `Origin` and `Sec-Fetch-Site`.
fn check(guard: &oxprof_api::http::Guard, request: &axum::extract::Request) -> Result<(), oxprof_api::http::HttpError> {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    let uri = request.uri();
    let checked = oxprof_api::http::Request {
        method: request.method().as_str(),
        path: uri.path(),
        query: uri.query().unwrap_or_default(),
        host: header("host").or_else(|| uri.authority().map(|a| a.as_str())),
        origin: header("origin"),
        token: None,
        fetch_site: header("sec-fetch-site"),
    };
    guard.check_program_client(&checked)
}
