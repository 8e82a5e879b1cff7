//! oxprof's HTTP API as a function: (method, path, query) → status, headers, body.
//!
//! [`Service::handle`] answers XProf's routes (under `/data/plugin/profile` and at the
//! root path, as XProf does), oxprof's own `/oxprof/api/...` routes, and the web UI's
//! static files (with a single-page-app fallback for deep links). The server crate only
//! binds sockets, compresses and moves bytes; everything a client can observe (routing,
//! parameter checks, status codes, bodies, security headers) is decided here and tested
//! without sockets.
//!
//! Safety rules enforced here (the threat model is in API.md, "Security"):
//! * every request's `Host` must be a loopback name, the bound address, or one allowed
//!   with `--allow-host` (a DNS-rebinding page cannot read profiles through its own name);
//! * API routes refuse browsers' cross-site requests (`Sec-Fetch-Site: cross-site`), so
//!   another web page cannot make the server work for it;
//! * state-changing routes are POST only, with this process's token (the UI reads it from
//!   the page) and, when a browser sends one, a same-origin `Origin`;
//! * no page of another origin may show the UI in a frame (clickjacking), unless the
//!   host program names the pages that may ([`ServiceOptions::frame_ancestors`]: Python's
//!   `oxprof.serve` lets loopback notebook pages);
//! * no response carries an absolute path (errors name files relative to the root);
//! * names from the client (`run`, `host`, `tag`, `module_name`) are checked, then only
//!   looked up among what discovery found: they are never joined to a path;
//! * `session_path` / `run_path` are resolved (symlinks included) and must lie inside the
//!   served root; discovered runs whose files resolve outside it are not served;
//! * bad parameters → 400, unknown run/host/tool → 404, both with a JSON `{"error": …}`;
//!   a panic while answering becomes a 500 JSON body without internals.

mod diff;
mod guard;
mod query;

pub use crate::catalog::ServedRun;
pub use crate::session::DEFAULT_CACHE_BYTES;
pub use crate::tool_lists::{available_tools, available_tools_of_file, hosts_for_tool, order_tools};
pub use guard::{Guard, Request, TOKEN_HEADER};
pub use oxprof_flight::CacheStats;
/// Secrets (URL userinfo, signatures, tokens) out of any text a response, a log line or an
/// exception carries: the one redaction function, owned by the crate that owns URLs.
pub use oxprof_objstore::{redact, redact_query};
pub use query::Query;

use crate::ApiError;
use crate::catalog::{self, Catalog};
use crate::registry::{self, Family};
use crate::request::{ALL_HOSTS, BodyWriter, DataRequest};
use crate::session::{Rendered, Served, Session, SessionOptions};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// XProf's route prefix; every XProf route is also answered without it.
pub const XPROF_PREFIX: &str = "/data/plugin/profile";
/// oxprof's own routes.
pub const OXPROF_PREFIX: &str = "/oxprof/api";

/// The Content-Security-Policy of every response: only our own origin; no inline scripts and
/// no `eval`; WebAssembly compilation allowed (`'wasm-unsafe-eval'`: the graph pages lay out
/// graphs with Graphviz compiled to WebAssembly, shipped in our own bundle); inline styles
/// allowed (chart libraries set element styles).
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// Pages served from loopback (any port, HTTP or HTTPS): the `frame-ancestors` sources
/// of a server whose UI a local notebook (Jupyter) shows in an iframe.
pub const LOOPBACK_FRAME_ANCESTORS: &[&str] =
    &["'self'", "http://localhost:*", "http://127.0.0.1:*", "https://localhost:*", "https://127.0.0.1:*"];

/// [`CONTENT_SECURITY_POLICY`] with `frame-ancestors` listing `sources` instead of
/// `'none'` (unchanged when `sources` is empty).
pub fn content_security_policy(sources: &[String]) -> String {
    if sources.is_empty() {
        return CONTENT_SECURITY_POLICY.to_string();
    }
    let base = CONTENT_SECURITY_POLICY.trim_end_matches("frame-ancestors 'none'");
    format!("{base}frame-ancestors {}", sources.join(" "))
}

/// Whether `source` can stand in a `frame-ancestors` list: printable ASCII without
/// spaces, `;` or `,` (which would end the directive or the header value).
pub fn is_frame_source(source: &str) -> bool {
    !source.is_empty() && source.bytes().all(|b| b.is_ascii_graphic() && b != b';' && b != b',')
}

/// A response body: static bytes (embedded assets), shared bytes (cached results), or a
/// body too large to hold, written while it is sent.
#[derive(Debug, Clone)]
pub enum Body {
    /// Bytes compiled into the binary.
    Static(&'static [u8]),
    /// Bytes shared with the cache.
    Shared(Arc<[u8]>),
    /// Written while it is sent ([`Body::take_stream`]); never cached.
    Stream(Arc<std::sync::Mutex<Option<BodyWriter>>>),
}

impl Body {
    /// The bytes (empty for a [`Body::Stream`]).
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Body::Static(b) => b,
            Body::Shared(b) => b,
            Body::Stream(_) => &[],
        }
    }

    /// The writer of a [`Body::Stream`] (once).
    pub fn take_stream(&self) -> Option<BodyWriter> {
        match self {
            Body::Stream(writer) => writer.lock().unwrap_or_else(|p| p.into_inner()).take(),
            _ => None,
        }
    }

    /// The whole body: the bytes, or a stream written into memory (once).
    pub fn to_vec(&self) -> Vec<u8> {
        match self.take_stream() {
            Some(writer) => writer.into_bytes(),
            None => self.as_bytes().to_vec(),
        }
    }
}

/// A response, ready to be written by the server.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// HTTP status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Further headers (security headers included).
    pub headers: Vec<(&'static str, String)>,
    /// The body (uncompressed; the server compresses).
    pub body: Body,
}

impl HttpResponse {
    fn new(status: u16, content_type: &'static str, body: Body) -> Self {
        HttpResponse { status, content_type, headers: Vec::new(), body }
    }

    /// A JSON body (compact, as serde_json writes it).
    pub fn json(status: u16, value: &Value) -> Self {
        Self::bytes(status, "application/json", value.to_string().into_bytes())
    }

    /// A JSON body formatted like Python's `json.dumps(..., sort_keys=True)`, which XProf
    /// uses for its listing routes (`["a", "b"]`, `{"k": v}`).
    fn python_json(value: &Value) -> Self {
        Self::bytes(200, "application/json", oxprof_wire::python_json::dumps_sorted(value).into_bytes())
    }

    /// A body of bytes with its content type.
    pub fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Self {
        Self::new(status, content_type, Body::Shared(body.into()))
    }

    /// The body as UTF-8 text (lossy), for tests and logs (a streamed body is written
    /// into memory by the first call).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body.to_vec()).into_owned()
    }

    /// The body parsed as JSON, if it is JSON (see [`HttpResponse::body_text`]).
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body.to_vec()).ok()
    }

    /// The value of a header set here (first match, case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A request failure with its HTTP status; rendered as `{"error": message, "status": n}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// HTTP status code.
    pub status: u16,
    /// A message for users (never internals such as stack traces).
    pub message: String,
}

impl HttpError {
    /// 400 for a parameter.
    pub fn bad_parameter(name: &str, reason: &str) -> Self {
        HttpError { status: 400, message: format!("bad parameter {name:?}: {reason}") }
    }

    /// 400 with a message.
    pub fn bad_request(message: impl Into<String>) -> Self {
        HttpError { status: 400, message: message.into() }
    }

    /// 404 with a message.
    pub fn not_found(message: impl Into<String>) -> Self {
        HttpError { status: 404, message: message.into() }
    }

    fn internal() -> Self {
        HttpError { status: 500, message: "internal error while answering this request (see the server log)".into() }
    }

    /// The error body. Every error answered goes through here: no secret leaves in one,
    /// however the message was made.
    fn response(&self) -> HttpResponse {
        HttpResponse::json(self.status, &json!({"error": redact(&self.message), "status": self.status}))
    }
}

impl From<ApiError> for HttpError {
    fn from(e: ApiError) -> Self {
        if let ApiError::Http { status, message } = e {
            return HttpError { status, message };
        }
        let status = e.http_status();
        if let Some(message) = pod_source_refusal(&e) {
            return HttpError { status, message };
        }
        // Status 5xx from the API are our own limits (not yet available), safe to show.
        HttpError { status, message: e.to_string() }
    }
}

/// A refused pod host's profile as a response tells it: without the local paths of the
/// places the server may read (responses never carry absolute paths), a local profile by
/// its file name (`oxprof data` says it whole).
fn pod_source_refusal(e: &ApiError) -> Option<String> {
    match e {
        ApiError::Shared(inner) => pod_source_refusal(inner),
        ApiError::PodHostSource { host, profile, .. } => {
            let shown = if oxprof_objstore::is_url(profile) {
                profile.clone()
            } else {
                Path::new(profile).file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            };
            Some(format!(
                "host {host} of a pod result: its profile {shown} (as pod.json names it) is not read: it lies outside \
                 the served path and every place the server was started with (--pod-sources), or is not a plain path \
                 or URL; start the server with --pod-sources naming where the job read the hosts (pod.json's \"source\")"
            ))
        }
        _ => None,
    }
}

/// One embedded static file of the web UI.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    /// The bytes.
    pub bytes: &'static [u8],
    /// Its `Content-Type`.
    pub content_type: &'static str,
}

/// Where the web UI's files come from (the server embeds them in the binary).
pub trait Assets: Send + Sync {
    /// The file at `path` (relative, no leading `/`, e.g. `index.html`, `assets/app.js`).
    fn get(&self, path: &str) -> Option<Asset>;
}

/// No UI at all: a page that says so.
pub struct NoAssets;

impl Assets for NoAssets {
    fn get(&self, path: &str) -> Option<Asset> {
        (path == "index.html").then_some(Asset {
            bytes: b"<!doctype html><meta charset=utf-8><title>oxprof</title><p>The oxprof web UI is not built into this binary. The API is at /data/plugin/profile/runs and /oxprof/api/runs.</p>",
            content_type: "text/html; charset=utf-8",
        })
    }
}

/// Options of a [`Service`].
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// The log directory, run directory or file served.
    pub root: PathBuf,
    /// Bound of every cache of the session together, in bytes.
    pub cache_bytes: usize,
    /// True when serving the bundled demo (reported by `/oxprof/api/info`).
    pub demo: bool,
    /// Which `Host`s, origins and tokens are accepted.
    pub guard: Guard,
    /// Input budgets of every profile read.
    pub limits: oxprof_format::LoadLimits,
    /// Serve runs whose files are symlinks to outside the root (`--follow-symlinks`).
    pub follow_symlinks: bool,
    /// The persistent analysis cache (`--cache-dir`; `None`: `--no-cache`).
    pub disk_cache: Option<Arc<oxprof_diskcache::DiskCache>>,
    /// Pages that may show the UI in a frame: CSP `frame-ancestors` sources such as
    /// [`LOOPBACK_FRAME_ANCESTORS`]. Empty (the default): none may (`frame-ancestors
    /// 'none'` and `X-Frame-Options: DENY`).
    pub frame_ancestors: Vec<String>,
    /// Places a pod result's hosts' own profiles may be read from (see
    /// [`SessionOptions::pod_sources`]).
    pub pod_sources: Vec<String>,
}

impl ServiceOptions {
    /// Default options for `root`: served on loopback only.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        ServiceOptions {
            root: root.into(),
            cache_bytes: DEFAULT_CACHE_BYTES,
            demo: false,
            guard: Guard::loopback(),
            limits: oxprof_format::LoadLimits::default(),
            follow_symlinks: false,
            disk_cache: None,
            frame_ancestors: Vec::new(),
            pod_sources: Vec::new(),
        }
    }
}

pub use crate::registry::DEFAULT_TRACE_RESOLUTION;

/// Answers `/capture_profile` (wired by whoever provides capturing; see [`Service::with_capture`]).
pub type CaptureHandler = dyn Fn(&Query) -> HttpResponse + Send + Sync;

/// The HTTP API over one served root.
pub struct Service {
    options: ServiceOptions,
    /// The runs and every cache (analyses, trace data, rendered bodies), one budget;
    /// shared with extension routes that outlive a request (the SQL engine).
    session: Arc<Session>,
    assets: Arc<dyn Assets>,
    /// `index.html` with this process's token in a `<meta>` element (made at first use).
    index_html: std::sync::OnceLock<Arc<[u8]>>,
    capture: Option<Box<CaptureHandler>>,
    extensions: Vec<(String, Box<ExtensionHandler>)>,
    /// The Content-Security-Policy header of every response.
    csp: String,
}

/// Answers an extra `/oxprof/api/<name>` route (see [`Service::with_route`]). It may use
/// [`Service::resolve_run`] and [`Service::cached`].
pub type ExtensionHandler = dyn Fn(&Service, &Query) -> Result<HttpResponse, HttpError> + Send + Sync;

impl Service {
    /// A service over `options.root`, which must exist (it may hold no profiles yet).
    /// Fails too when a `frame_ancestors` entry is not a CSP source.
    pub fn new(options: ServiceOptions, assets: Arc<dyn Assets>) -> std::io::Result<Service> {
        if let Some(bad) = options.frame_ancestors.iter().find(|s| !is_frame_source(s)) {
            let message = format!("{bad:?} is not a frame-ancestors source (e.g. http://localhost:*)");
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, message));
        }
        let csp = content_security_policy(&options.frame_ancestors);
        let session_options = SessionOptions {
            cache_bytes: options.cache_bytes,
            limits: options.limits.clone(),
            confine_to_root: !options.follow_symlinks,
            disk_cache: options.disk_cache.clone(),
            pod_sources: options.pod_sources.clone(),
        };
        let session = Arc::new(Session::open_path(&options.root, session_options)?);
        Ok(Service {
            options,
            session,
            assets,
            index_html: Default::default(),
            capture: None,
            extensions: Vec::new(),
            csp,
        })
    }

    /// The session: served runs and every cache.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The session, for a route that keeps it beyond one request (its caches, budgets and
    /// load gate stay the service's).
    pub fn shared_session(&self) -> Arc<Session> {
        self.session.clone()
    }

    fn catalog(&self) -> &Catalog {
        self.session.catalog()
    }

    /// Adds a route `/oxprof/api<path>` (e.g. `/trace/events`) answered by `handler`, for
    /// features wired in by the binary (panics inside become 500s like everywhere else).
    pub fn with_route(mut self, path: &str, handler: Box<ExtensionHandler>) -> Self {
        self.extensions.push((path.to_string(), handler));
        self
    }

    /// The run a request names (`run`, checked; optionally within `session_path` /
    /// `run_path`), or 400/404.
    pub fn resolve_run(&self, q: &Query) -> Result<ServedRun, HttpError> {
        self.run_of(q)
    }

    /// A response computed once per `key` for all concurrent callers and kept in the
    /// bounded cache. Include [`Session::fingerprint`] of the run in the key so that rewritten
    /// files are not answered from the cache.
    pub fn cached(
        &self,
        key: &str,
        compute: impl FnOnce() -> Result<(&'static str, Vec<u8>), HttpError>,
    ) -> Result<HttpResponse, HttpError> {
        let rendered = self.session.response(format!("ext\0{key}"), false, || {
            let (content_type, body) =
                compute().map_err(|e| ApiError::Http { status: e.status, message: e.message })?;
            Ok(Rendered { content_type, body: body.into(), notes: Vec::new() })
        })?;
        Ok(HttpResponse::new(200, rendered.content_type, Body::Shared(rendered.body.clone())))
    }

    /// Adds a `/capture_profile` handler (without one the route answers 501).
    pub fn with_capture(mut self, handler: Box<CaptureHandler>) -> Self {
        self.capture = Some(handler);
        self
    }

    /// The served root.
    pub fn root(&self) -> &Path {
        self.catalog().root()
    }

    /// The served root as responses show it: its last component only (no response
    /// carries an absolute path).
    fn root_name(&self) -> String {
        let root = self.root();
        let canonical = root.canonicalize().ok();
        let name = root.file_name().or_else(|| canonical.as_deref().and_then(Path::file_name));
        // A URL's last part may carry its query string (`logs?sig=…`).
        name.map(|n| redact(&n.to_string_lossy()).into_owned()).unwrap_or_else(|| ".".into())
    }

    /// Counters of the session's cache (every kind of entry together).
    pub fn cache_stats(&self) -> CacheStats {
        self.session.cache_stats()
    }

    /// This process's token for state-changing requests (the UI reads it from the page).
    pub fn token(&self) -> &str {
        self.options.guard.token()
    }

    /// Answers a GET-like request from a same-origin page on loopback (tests, tools):
    /// [`Service::handle_request`] with `Host: localhost`. `path` is the URL path (still
    /// percent-encoded), `query` the raw query string without `?`.
    pub fn handle(&self, method: &str, path: &str, query: &str) -> HttpResponse {
        self.handle_request(&Request::new(method, path, query))
    }

    /// Answers one request. Never panics: a panic inside becomes a 500.
    pub fn handle_request(&self, request: &Request<'_>) -> HttpResponse {
        let answered = catch_unwind(AssertUnwindSafe(|| {
            self.options.guard.check(request)?;
            self.route(request)
        }));
        let mut response = match answered {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => self.error_response(error),
            Err(_) => HttpError::internal().response(),
        };
        add_security_headers(&mut response, &self.csp, self.options.frame_ancestors.is_empty());
        response
    }

    /// `error` as this service answers errors (JSON body, security headers), for answers
    /// made outside [`Service::handle_request`]: the server's to a request line too long
    /// to parse.
    pub fn error_answer(&self, error: HttpError) -> HttpResponse {
        let mut response = self.error_response(error);
        add_security_headers(&mut response, &self.csp, self.options.frame_ancestors.is_empty());
        response
    }

    /// An error as JSON, with the root's absolute path taken out of its message.
    fn error_response(&self, error: HttpError) -> HttpResponse {
        HttpError { message: self.catalog().redact(&error.message), ..error }.response()
    }

    fn route(&self, request: &Request<'_>) -> Result<HttpResponse, HttpError> {
        let (method, path, raw_query) = (request.method, request.path, request.query);
        let is_read = method == "GET" || method == "HEAD";
        let route = path.strip_prefix(XPROF_PREFIX).filter(|r| r.is_empty() || r.starts_with('/')).unwrap_or(path);
        let route = if route.len() > 1 { route.trim_end_matches('/') } else { route };
        let route = if route.is_empty() { "/" } else { route };
        let api = |m: &str| -> Result<Query, HttpError> {
            self.options.guard.check_api(request)?;
            if method != m && !(m == "GET" && is_read) {
                return Err(HttpError { status: 405, message: format!("{route} accepts {m} only") });
            }
            Query::parse(raw_query)
        };
        match route {
            "/runs" => self.runs(&api("GET")?),
            "/run_tools" => self.run_tools(&api("GET")?),
            "/hosts" => self.hosts(&api("GET")?),
            "/data" => self.data_route(&api("GET")?),
            "/data_csv" => self.data_csv(&api("GET")?),
            "/module_list" => self.module_list(&api("GET")?),
            "/config" => {
                api("GET")?;
                let hide_capture = self.capture.is_none();
                Ok(HttpResponse::python_json(
                    &json!({"enableTabNameLabel": false, "hideCaptureProfileButton": hide_capture, "srcPathPrefix": null}),
                ))
            }
            "/version" => {
                api("GET")?;
                Ok(HttpResponse::bytes(200, "text/plain", env!("CARGO_PKG_VERSION").as_bytes().to_vec()))
            }
            "/capture_profile" => {
                let q = api("POST")?;
                self.options.guard.check_state_change(request)?;
                match &self.capture {
                    Some(handler) => Ok(handler(&q)),
                    None => Err(HttpError { status: 501, message: "capturing is not available in this server".into() }),
                }
            }
            "/generate_cache" => {
                let q = api("POST")?;
                self.options.guard.check_state_change(request)?;
                self.generate_cache(&q)
            }
            _ if route.starts_with(OXPROF_PREFIX) => self.oxprof_route(&route[OXPROF_PREFIX.len()..], &api("GET")?),
            _ if is_read => self.static_file(route),
            _ => Err(HttpError { status: 405, message: "method not allowed".into() }),
        }
    }

    // ---- XProf routes ----------------------------------------------------------------

    fn runs(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let names: Vec<String> = match self.catalog().scoped_runs(q.get("session_path"), q.get("run_path"))? {
            Some(scoped) => scoped.runs.into_iter().map(|r| r.name).collect(),
            None => self.catalog().refreshed().runs.iter().map(|r| r.name.clone()).collect(),
        };
        Ok(HttpResponse::python_json(&json!(names)))
    }

    /// The run a request names and its host selection (`host`, `ALL_HOSTS` or none: every
    /// host), both checked, for routes the binary adds ([`Service::with_route`]).
    pub fn run_and_host(&self, q: &Query) -> Result<(ServedRun, Option<String>), HttpError> {
        let run = self.run_of(q)?;
        let host = q.get_nonempty("host").filter(|h| *h != ALL_HOSTS);
        if let Some(host) = host {
            query::check_plain_name("host", host)?;
        }
        Ok((run, host.map(str::to_string)))
    }

    /// The run a request names (`run`, optionally within `session_path` / `run_path`).
    fn run_of(&self, q: &Query) -> Result<ServedRun, HttpError> {
        let name = q.get_nonempty("run");
        if let Some(name) = name {
            query::check_run_name("run", name)?;
        }
        match self.catalog().scoped_runs(q.get("session_path"), q.get("run_path"))? {
            Some(scoped) => {
                let found = match name {
                    None => scoped.runs.into_iter().next(),
                    Some(n) => scoped.runs.into_iter().find(|r| r.name == n),
                };
                found.ok_or_else(|| HttpError::not_found(format!("no run named {:?} in that path", name.unwrap_or(""))))
            }
            None => Ok(self.catalog().find_run(name)?),
        }
    }

    fn run_tools(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let run = self.run_of(q)?;
        Ok(HttpResponse::python_json(&self.tools_of(&run)?["xprof"]))
    }

    /// The tools of a run: `xprof`, XProf's `/run_tools` list in its order, and `offered`,
    /// the tools oxprof's UI offers (registry rows), in the same order (cached per run files).
    fn tools_of(&self, run: &ServedRun) -> Result<Value, HttpError> {
        let key = format!("run_tools\0{}", self.session.fingerprint(run));
        let computed = self.session.response(key, false, || {
            let features = match run.hosts.first() {
                // Metadata, and the TPU planes' lines for their counters only.
                Some(first) => crate::partial::first_host_features(&self.session, first, &|plane| {
                    plane.starts_with(oxprof_format::schema::TPU_PLANE_PREFIX)
                })?,
                None => registry::Features::default(),
            };
            let xprof = order_tools(&registry::xprof_listed(&features));
            let offered_names: Vec<&str> = registry::offered(&features).iter().map(|t| t.name()).collect();
            let offered: Vec<Value> = order_tools(&offered_names)
                .iter()
                .filter_map(|name| registry::find(name))
                .map(|t| json!({"name": t.name(), "title": t.title, "page": t.page}))
                .collect();
            let body = json!({"xprof": xprof, "offered": offered});
            Ok(Rendered {
                content_type: "application/json",
                body: body.to_string().into_bytes().into(),
                notes: Vec::new(),
            })
        })?;
        serde_json::from_slice(&computed.body).map_err(|_| HttpError::internal())
    }

    fn hosts(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let run = self.run_of(q)?;
        let tool = q.get_nonempty("tag");
        if let Some(tool) = tool {
            query::check_plain_name("tag", tool)?;
        }
        let hosts: Vec<Value> = hosts_for_tool(&run, tool).into_iter().map(|h| json!({"hostname": h})).collect();
        Ok(HttpResponse::python_json(&Value::Array(hosts)))
    }

    fn module_list(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let run = self.run_of(q)?;
        let files = catalog::hlo_proto_files(&run.dir);
        if !files.is_empty() {
            return Ok(HttpResponse::bytes(200, "text/plain", files.join(",").into_bytes()));
        }
        let request = DataRequest::new(oxprof_report::ToolId::MODULE_LIST);
        let computed = self.computed(&run, &request, false)?;
        Ok(HttpResponse::new(200, "text/plain", Body::Shared(computed.body.clone())))
    }

    /// Checks a data request's parameters and resolves its run.
    fn data_request(&self, q: &Query) -> Result<(ServedRun, DataRequest, bool), HttpError> {
        let tool = q.get_nonempty("tag").ok_or_else(|| HttpError::bad_parameter("tag", "missing (the tool name)"))?;
        query::check_plain_name("tag", tool)?;
        let Some(row) = registry::find(tool) else {
            return Err(HttpError::not_found(format!("unknown tool {tool:?}")));
        };
        if let Some(module) = q.get("module_name") {
            query::check_plain_name("module_name", module)?;
        }
        let run = self.run_of(q)?;
        let host = q.get_nonempty("host");
        if let Some(host) = host {
            query::check_plain_name("host", host)?;
            // XProf's frontend sends an HLO tool's module name as `host`; hlo_tools checks
            // it against the run's modules.
            let module_as_host = row.family == Family::Hlo;
            if host != ALL_HOSTS && run.host(host).is_none() && !module_as_host {
                return Err(HttpError::not_found(format!("no host named {host:?} in run {:?}", run.name)));
            }
        }
        if let Some(hosts) = q.get_nonempty("hosts") {
            for h in hosts.split(',') {
                query::check_plain_name("hosts", h)?;
                if run.host(h).is_none() {
                    return Err(HttpError::not_found(format!("no host named {h:?} in run {:?}", run.name)));
                }
            }
        }
        const NOT_TOOL_PARAMS: [&str; 6] = ["run", "tag", "host", "session_path", "run_path", "use_saved_result"];
        let params: BTreeMap<String, String> = q
            .unique_pairs()
            .filter(|(k, _)| !NOT_TOOL_PARAMS.contains(k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut params = params;
        for (name, value) in row.defaults {
            params.entry(name.to_string()).or_insert_with(|| value.to_string());
        }
        let refresh = !q.bool_arg("use_saved_result", true);
        let request = DataRequest { run: None, tool: row.id, host: host.map(str::to_string), params };
        Ok((run, request, refresh))
    }

    /// The cache key of a data request's result.
    fn data_key(&self, run: &ServedRun, request: &DataRequest) -> String {
        let mut key = format!(
            "data\0{}\0{}\0{}",
            self.session.fingerprint(run),
            request.tool,
            request.host.as_deref().unwrap_or("")
        );
        for (k, v) in &request.params {
            key.push_str(&format!("\0{k}={v}"));
        }
        key
    }

    /// A data request's answer ([`crate::answer::answer`]): a whole body from the cache
    /// or computed once for all concurrent callers, or a large body written while it is
    /// sent.
    fn answered(&self, run: &ServedRun, request: &DataRequest, refresh: bool) -> Result<Served, HttpError> {
        let key = self.data_key(run, request);
        let session = &self.session;
        Ok(session.answered(key, refresh, || crate::answer::answer(session, run, request, refresh))?)
    }

    /// A data request's whole body (a streamed one is refused).
    fn computed(&self, run: &ServedRun, request: &DataRequest, refresh: bool) -> Result<Arc<Rendered>, HttpError> {
        match self.answered(run, request, refresh)? {
            Served::Kept(rendered) => Ok(rendered),
            Served::Streamed { .. } => Err(HttpError::bad_request("this body is too large to read whole")),
        }
    }

    fn data_route(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let (run, request, refresh) = self.data_request(q)?;
        Ok(match self.answered(&run, &request, refresh)? {
            Served::Kept(kept) => HttpResponse::new(200, kept.content_type, Body::Shared(kept.body.clone())),
            Served::Streamed { body, .. } => {
                let content_type = body.content_type();
                let writer = BodyWriter::new(move |sink| body.write_to(sink));
                HttpResponse::new(200, content_type, Body::Stream(Arc::new(std::sync::Mutex::new(Some(writer)))))
            }
        })
    }

    fn data_csv(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        let (run, request, refresh) = self.data_request(q)?;
        let not_csv = || HttpError::bad_request("CSV format not supported for this tool type");
        if registry::row(request.tool).is_some_and(|t| t.family == Family::Trace) {
            return Err(not_csv());
        }
        let computed = self.computed(&run, &request, refresh)?;
        if !computed.content_type.starts_with("application/json") {
            return Err(not_csv());
        }
        let json: Value = serde_json::from_slice(&computed.body).map_err(|_| not_csv())?;
        let csv = oxprof_wire::csv::data_csv(&json).ok_or_else(not_csv)?;
        let mut response = HttpResponse::bytes(200, "text/csv", csv.into_bytes());
        response.headers.push(("Content-Disposition", format!("attachment; filename=\"{}\"", csv_filename(q))));
        Ok(response)
    }

    fn generate_cache(&self, q: &Query) -> Result<HttpResponse, HttpError> {
        // Accepted for XProf compatibility; oxprof computes on demand and caches in memory.
        let session =
            q.get_nonempty("session_path").ok_or_else(|| HttpError::bad_parameter("session_path", "missing"))?;
        self.catalog().scoped_runs(Some(session), None)?;
        Ok(HttpResponse::python_json(&json!({"message": "Cache generation started", "status": "ACCEPTED"}))
            .with_status(202))
    }

    // ---- oxprof routes -----------------------------------------------------------------

    fn oxprof_route(&self, route: &str, q: &Query) -> Result<HttpResponse, HttpError> {
        match route {
            "/progress" => {
                let now = oxprof_format::progress::snapshot().unwrap_or_default();
                Ok(HttpResponse::json(
                    200,
                    &json!({
                        "loads": now.loads,
                        "what": now.what,
                        "total_bytes": now.total_bytes,
                        "done_bytes": now.done_bytes,
                        "elapsed_ms": now.elapsed_ms,
                    }),
                ))
            }
            "/info" => Ok(HttpResponse::json(
                200,
                &json!({
                    "version": env!("CARGO_PKG_VERSION"),
                    "root": self.root_name(),
                    "demo": self.options.demo,
                    "cache": cache_json(&self.cache_stats()),
                    "memory": memory_json(&self.session),
                    "files": file_counts_json(&self.session.file_counts()),
                    "tools": registry::to_json(),
                }),
            )),
            "/runs" => {
                let snapshot = self.catalog().refreshed();
                let runs: Vec<Value> = snapshot.runs.iter().map(|r| run_summary(self.session.store(), r)).collect();
                Ok(HttpResponse::json(
                    200,
                    &json!({
                        "root": self.root_name(),
                        "runs": runs,
                        // Messages of failed listings, which may name a store's URL.
                        "skipped": snapshot.skipped.iter().map(|s| redact(s)).collect::<Vec<_>>(),
                        "empty_reason": if snapshot.runs.is_empty() {
                            snapshot.empty_reason.as_deref().map(|r| redact(r).into_owned())
                        } else {
                            None
                        },
                    }),
                ))
            }
            "/run" => {
                let run = self.run_of(q)?;
                let tools = self.tools_of(&run)?;
                let mut summary = run_summary(self.session.store(), &run);
                summary["tools"] = tools["xprof"].clone();
                summary["offered"] = tools["offered"].clone();
                // The trace viewer's hosts picker says how many hosts one timeline takes.
                summary["trace_view_max_hosts"] = json!(crate::trace::MAX_VIEW_HOSTS);
                Ok(HttpResponse::json(200, &summary))
            }
            "/notes" => {
                let (run, request, refresh) = self.data_request(q)?;
                // A streamed body (a large trace) is not rendered (nor kept) to count it.
                let (notes, content_type, bytes) = match self.answered(&run, &request, refresh)? {
                    Served::Kept(kept) => (kept.notes.clone(), kept.content_type, Some(kept.body.len())),
                    Served::Streamed { body, notes } => (notes, body.content_type(), None),
                };
                Ok(HttpResponse::json(200, &json!({"notes": notes, "content_type": content_type, "bytes": bytes})))
            }
            "/diff" => self.diff_route(q),
            // The trace viewer's level-of-detail routes (crate::trace::route).
            _ if route.starts_with("/trace/") => {
                let run = self.run_of(q)?;
                let get = |k: &str| if k == "run" { None } else { q.get(k).map(str::to_string) };
                let body = crate::trace::route(&self.session, &run, &route["/trace".len()..], &get)?;
                Ok(HttpResponse::bytes(200, "application/json", body.into_bytes()))
            }
            _ => match self.extensions.iter().find(|(path, _)| path == route) {
                Some((_, handler)) => handler(self, q),
                None => Err(HttpError::not_found(format!("no oxprof API route {route:?}"))),
            },
        }
    }

    // ---- static files ------------------------------------------------------------------

    fn static_file(&self, route: &str) -> Result<HttpResponse, HttpError> {
        let relative = route.trim_start_matches('/');
        let relative = if relative.is_empty() || relative == "local" { "index.html" } else { relative };
        if relative == "index.html" {
            return self.index_page();
        }
        if let Some(asset) = self.assets.get(relative) {
            let mut response = HttpResponse::new(200, asset.content_type, Body::Static(asset.bytes));
            // Asset names are not content-hashed: browsers revalidate (no stale UI after an upgrade).
            response.headers.push(("Cache-Control", "no-cache".to_string()));
            return Ok(response);
        }
        // Deep links of the single-page app (plain path segments, no file extension, no
        // escapes) get index.html; anything else that is not an asset is a 404.
        let plain = relative.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_/".contains(&b));
        if plain {
            return self.index_page();
        }
        Err(HttpError::not_found("no such file"))
    }

    /// `index.html`, carrying this process's token.
    fn index_page(&self) -> Result<HttpResponse, HttpError> {
        let Some(index) = self.assets.get("index.html") else {
            return Err(HttpError::not_found("no such file"));
        };
        let page = self.index_html.get_or_init(|| self.options.guard.page_with_token(index.bytes).into());
        let mut response = HttpResponse::new(200, index.content_type, Body::Shared(page.clone()));
        // Asset names are not content-hashed: browsers revalidate (no stale UI after an upgrade).
        response.headers.push(("Cache-Control", "no-cache".to_string()));
        Ok(response)
    }
}

impl HttpResponse {
    fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }
}

/// `csp`: the Content-Security-Policy; `deny_frames`: no page may frame the UI (browsers
/// without CSP's `frame-ancestors` read `X-Frame-Options`, which cannot list pages).
fn add_security_headers(response: &mut HttpResponse, csp: &str, deny_frames: bool) {
    response.headers.push(("Content-Security-Policy", csp.to_string()));
    response.headers.push(("X-Content-Type-Options", "nosniff".to_string()));
    response.headers.push(("Referrer-Policy", "no-referrer".to_string()));
    if deny_frames {
        response.headers.push(("X-Frame-Options", "DENY".to_string()));
    }
    if response.status >= 400 || response.header("Cache-Control").is_none() {
        response.headers.push(("Cache-Control", "no-store".to_string()));
    }
}

fn cache_json(stats: &CacheStats) -> Value {
    json!({
        "entries": stats.entries,
        "in_flight": stats.in_flight,
        "bytes": stats.bytes,
        "limit_bytes": stats.limit_bytes,
        "hits": stats.hits,
        "computations": stats.computations,
        "evictions": stats.evictions,
    })
}

/// Memory held for the session outside its cache (`sql`: the SQL engine's queries), by name.
fn memory_json(session: &Session) -> Value {
    let accounts: serde_json::Map<String, Value> = session
        .memory_accounts()
        .into_iter()
        .map(|a| {
            let value = json!({
                "bytes": a.bytes,
                "limit_bytes": a.limit_bytes,
                "peak_bytes": a.peak_bytes,
                "active": a.active,
            });
            (a.name.to_string(), value)
        })
        .collect();
    Value::Object(accounts)
}

fn file_counts_json(counts: &crate::session::FileCounts) -> Value {
    json!({
        "analyses_computed": counts.analyses_computed,
        "analyses_found": counts.analyses_found,
        "traces_computed": counts.traces_computed,
        "traces_found": counts.traces_found,
        "analyses_from_disk": counts.analyses_from_disk,
        "analyses_from_trace": counts.analyses_from_trace,
        "trace_views_from_disk": counts.trace_views_from_disk,
        "pytorch_computed": counts.pytorch_computed,
        "pytorch_views_from_disk": counts.pytorch_views_from_disk,
        "pytorch_found": counts.pytorch_found,
        "hta_parts_recomputed": counts.hta_parts_recomputed,
        "hta_parts_from_disk": counts.hta_parts_from_disk,
        "hta_ranks_from_disk": counts.hta_ranks_from_disk,
    })
}

fn run_summary(store: &dyn oxprof_format::ProfileStore, run: &ServedRun) -> Value {
    let hosts: Vec<Value> = run
        .hosts
        .iter()
        .map(|h| {
            let stat = store.stat(&h.path).ok();
            let (bytes, modified_ns) = stat.map_or((0, 0), |s| (s.size, s.modified_ns));
            let file = h.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            json!({"name": h.host, "file": file, "bytes": bytes, "modified_unix_ms": modified_ns / 1_000_000})
        })
        .collect();
    json!({"name": run.name, "hosts": hosts})
}

/// XProf's `_generate_csv_filename`: `<tool>_<run>_<host suffix>.csv`, each part reduced
/// to `[A-Za-z0-9_-]`, the host suffix being the part after the last `-`.
fn csv_filename(q: &Query) -> String {
    let safe = |s: &str| {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect::<String>()
    };
    let tool = q.get("tag").unwrap_or("data");
    let run = q.get("run").unwrap_or("");
    let host = q.get("host").unwrap_or("");
    let host_suffix = if host.is_empty() { "" } else { host.rsplit('-').next().unwrap_or("") };
    let parts: Vec<String> = [safe(tool), safe(run), safe(host_suffix)].into_iter().filter(|p| !p.is_empty()).collect();
    format!("{}.csv", parts.join("_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_file_names_follow_xprof() {
        let q = Query::parse("tag=framework_op_stats&run=tf%2F2026_11&host=vm").unwrap();
        assert_eq!(csv_filename(&q), "framework_op_stats_tf_2026_11_vm.csv");
        let q = Query::parse("tag=hlo_stats&run=r&host=worker-3").unwrap();
        assert_eq!(csv_filename(&q), "hlo_stats_r_3.csv");
    }
}
