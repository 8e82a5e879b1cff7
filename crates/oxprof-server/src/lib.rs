//! oxprof's HTTP server: XProf-compatible routes and the web UI (thin: binding, compression,
//! static files embedded at build time, blocking work off the async threads, graceful
//! shutdown; the request → response logic lives in `oxprof_api::http`).

mod assets;
mod demo;
#[cfg(feature = "sql")]
mod query;
mod too_long;

use axum::Router;
use axum::body::Body as AxumBody;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use oxprof_api::http::{Body, Guard, HttpResponse, Request as ApiRequest, Service, ServiceOptions};
use std::io::{self, Write as _};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;

pub use oxprof_api::http::DEFAULT_CACHE_BYTES;

/// Where the embedded web UI came from at build time (`ui/dist`, or the placeholder page).
pub fn ui_source() -> &'static str {
    assets::source()
}

/// Default port of `oxprof serve`.
pub const DEFAULT_PORT: u16 = 8791;

/// What to serve and where.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// A log directory, run directory or profile file; `None` serves the bundled demo.
    pub path: Option<PathBuf>,
    /// Address to bind (loopback unless told otherwise).
    pub bind: IpAddr,
    /// Port (0: any free port).
    pub port: u16,
    /// Bound of the in-memory response cache, in bytes.
    pub cache_bytes: usize,
    /// Log one line per request to stderr.
    pub log_requests: bool,
    /// Further `Host` names to answer besides loopback names and the bound address
    /// (`--allow-host`).
    pub allow_hosts: Vec<String>,
    /// What `/capture_profile` may connect to and how much it may do at once
    /// (loopback targets only unless `--capture-allow` adds more).
    pub capture_policy: oxprof_capture::CapturePolicy,
    /// Input budgets of every profile read (`--max-profile-bytes`).
    pub limits: oxprof_api::LoadLimits,
    /// Serve runs whose files are symlinks to outside the path (`--follow-symlinks`).
    pub follow_symlinks: bool,
    /// The persistent analysis cache (`None`: none).
    pub disk_cache: Option<std::sync::Arc<oxprof_api::DiskCache>>,
    /// Pages that may show the UI in a frame (CSP `frame-ancestors` sources; see
    /// `oxprof_api::http::ServiceOptions::frame_ancestors`). Empty: none may.
    pub frame_ancestors: Vec<String>,
    /// Places a pod result's hosts' own profiles may be read from (`--pod-sources`).
    pub pod_sources: Vec<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            path: None,
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: DEFAULT_PORT,
            cache_bytes: DEFAULT_CACHE_BYTES,
            log_requests: false,
            allow_hosts: Vec::new(),
            capture_policy: oxprof_capture::CapturePolicy::loopback_only(),
            limits: oxprof_api::LoadLimits::default(),
            follow_symlinks: false,
            disk_cache: None,
            frame_ancestors: Vec::new(),
            pod_sources: Vec::new(),
        }
    }
}

/// How long a stopping server lets requests in flight finish before it stops anyway
/// (their work is abandoned with the process).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// A server running on a tokio runtime.
pub struct RunningServer {
    /// The bound address (the real port when 0 was asked).
    pub addr: SocketAddr,
    /// The directory served (the demo's temporary directory for the demo).
    pub root: PathBuf,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<io::Result<()>>,
    // Keeps the demo's extracted files alive as long as the server runs.
    _demo: Option<tempfile::TempDir>,
}

impl RunningServer {
    /// `http://addr/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops accepting connections, lets requests in flight finish for at most
    /// [`SHUTDOWN_GRACE`], and returns (a request still running then is dropped).
    pub async fn shutdown(mut self) -> io::Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await {
            Ok(result) => result.map_err(io::Error::other)?,
            Err(_) => {
                self.task.abort();
                Ok(())
            }
        }
    }

    /// Waits until the server stops (after Ctrl-C / SIGTERM when started by [`serve_blocking`]).
    pub async fn wait(mut self) -> io::Result<()> {
        (&mut self.task).await.map_err(io::Error::other)?
    }
}

/// Binds and starts serving (on the current tokio runtime).
pub async fn start(options: ServeOptions) -> io::Result<RunningServer> {
    start_with(options, std::future::pending()).await
}

async fn start_with(
    options: ServeOptions,
    external_stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> io::Result<RunningServer> {
    let (root, demo_dir) = match &options.path {
        Some(path) => (path.clone(), None),
        None => {
            let dir = demo::extract()?;
            (dir.path().to_path_buf(), Some(dir))
        }
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::new(options.bind, options.port)).await.map_err(|e| {
        if e.kind() == io::ErrorKind::AddrInUse {
            io::Error::new(e.kind(), format!("port {} is in use (pass --port 0 for any free port)", options.port))
        } else {
            e
        }
    })?;
    let addr = listener.local_addr()?;
    let guard = options.allow_hosts.iter().fold(Guard::loopback().bound_to(addr.ip()), |g, h| g.allow_host(h));
    let service_options = ServiceOptions {
        root: root.clone(),
        cache_bytes: options.cache_bytes,
        demo: demo_dir.is_some(),
        guard,
        limits: options.limits.clone(),
        follow_symlinks: options.follow_symlinks,
        disk_cache: options.disk_cache.clone(),
        frame_ancestors: options.frame_ancestors.clone(),
        pod_sources: options.pod_sources.clone(),
    };
    let ui: Arc<dyn oxprof_api::http::Assets> = match std::env::var_os("OXPROF_UI_DIR") {
        Some(dir) => Arc::new(assets::FromDir::load(std::path::Path::new(&dir))?),
        None => Arc::new(assets::Embedded),
    };
    let service =
        Service::new(service_options, ui).map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", root.display())))?;
    // Captures go into `<logdir>/plugins/profile/<session>/`: only offered when a log
    // directory is served (not the demo, a single file or a run directory).
    let service = match capture_logdir(&root, demo_dir.is_some()) {
        Some(logdir) => {
            let capture = oxprof_capture::route::CaptureService::new(logdir, options.capture_policy.clone());
            service.with_capture(Box::new(move |query| {
                let params = query.unique_pairs().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
                let answer = capture.handle_blocking(&params);
                HttpResponse::json(answer.status, &answer.body)
            }))
        }
        None => service,
    };
    #[cfg(feature = "sql")]
    let service = with_sql_routes(service);
    let service = with_explain_route(service);
    // Requests hyper refuses itself (a URL past 64 KiB) get the service's headers too.
    let listener = too_long::Listener::new(listener, &service);
    let service = Arc::new(service);
    let state = AppState { service, log_requests: options.log_requests, in_flight: Default::default() };
    // The fastest gzip level: a trace body of a few MB compresses ~4× faster than at the
    // default level and only a little larger (loopback and LAN are not the bottleneck).
    let compression = CompressionLayer::new().gzip(true).quality(CompressionLevel::Fastest);
    let app = Router::new().fallback(handle).with_state(state).layer(compression);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let stop = async move {
        tokio::select! {
            _ = rx => {}
            _ = external_stop => {}
        }
    };
    let task = tokio::spawn(async move { axum::serve(listener, app).with_graceful_shutdown(stop).await });
    Ok(RunningServer { addr, root, shutdown: Some(tx), task, _demo: demo_dir })
}

/// Runs a server until Ctrl-C or SIGTERM; `on_ready` gets it once it listens (to print
/// the URL). After the signal, requests in flight get [`SHUTDOWN_GRACE`] to finish; then
/// this returns whatever they are doing (the process exits and their work with it).
pub fn serve_blocking(options: ServeOptions, on_ready: impl FnOnce(&RunningServer)) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = start_with(options, async {
            let _ = stop_rx.await;
        })
        .await?;
        // Signal handlers are in place before the URL is printed: a SIGTERM sent by whoever
        // read the URL must stop the server gracefully, not kill it with the default action.
        let signal = shutdown_signal()?;
        on_ready(&server);
        signal.await;
        let _ = stop_tx.send(());
        server.shutdown().await
    });
    // Blocking threads still computing must not keep the process alive.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

/// Installs the Ctrl-C and SIGTERM handlers now; the returned future ends on either.
fn shutdown_signal() -> io::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    })
}

#[derive(Clone)]
struct AppState {
    service: Arc<Service>,
    log_requests: bool,
    /// Requests being answered on blocking threads.
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

/// Requests answered at once (each on a blocking thread); more get 503 at once, so a flood
/// of slow requests cannot take every thread and leave the server unable to answer.
pub const MAX_REQUESTS_IN_FLIGHT: usize = 256;

/// Counts a request in flight until dropped.
struct InFlight(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Every request: hand it to the API on a blocking thread.
async fn handle(State(state): State<AppState>, request: Request) -> Response {
    let started = Instant::now();
    let in_flight = InFlight(state.in_flight.clone());
    if state.in_flight.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= MAX_REQUESTS_IN_FLIGHT {
        let mut busy = to_axum(HttpResponse {
            status: 503,
            content_type: "application/json",
            headers: vec![("Retry-After", "1".to_string())],
            body: Body::Static(
                br#"{"error": "the server is answering too many requests at once; try again", "status": 503}"#,
            ),
        });
        busy.headers_mut().insert(axum::http::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        return busy;
    }
    let method = request.method().as_str().to_string();
    let path = request.uri().path().to_string();
    let query = request.uri().query().unwrap_or("").to_string();
    let (host, origin, token, fetch_site) = {
        let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
        // HTTP/2 carries the host as the URI's authority.
        let host = header("host").or_else(|| request.uri().authority().map(|a| a.to_string()));
        (host, header("origin"), header(oxprof_api::http::TOKEN_HEADER), header("sec-fetch-site"))
    };
    drop(request);
    let service = state.service.clone();
    let (m, p, q) = (method.clone(), path.clone(), query.clone());
    let answered = tokio::task::spawn_blocking(move || {
        let request = ApiRequest {
            method: &m,
            path: &p,
            query: &q,
            host: host.as_deref(),
            origin: origin.as_deref(),
            token: token.as_deref(),
            fetch_site: fetch_site.as_deref(),
        };
        let response = service.handle_request(&request);
        drop(in_flight);
        response
    })
    .await;
    let response = match answered {
        Ok(response) => response,
        Err(_) => internal_error(),
    };
    if state.log_requests {
        let sep = if query.is_empty() { "" } else { "?" };
        let size = match response.body {
            Body::Stream(_) => "streamed".to_string(),
            _ => format!("{} B", response.body.as_bytes().len()),
        };
        // A request may carry a URL's secrets in its query (a store URL as a parameter).
        let (path, query) = (oxprof_api::http::redact(&path), oxprof_api::http::redact_query(&query));
        let _ = writeln!(
            std::io::stderr(),
            "{method} {path}{sep}{query} {} {size} {:.1} ms",
            response.status,
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    to_axum(response)
}

fn internal_error() -> HttpResponse {
    // The API never panics out of `handle`; this covers a failed blocking task.
    let body = br#"{"error": "internal error", "status": 500}"#;
    HttpResponse { status: 500, content_type: "application/json", headers: Vec::new(), body: Body::Static(body) }
}

fn to_axum(response: HttpResponse) -> Response {
    let body = match response.body {
        Body::Static(bytes) => AxumBody::from(bytes::Bytes::from_static(bytes)),
        Body::Shared(bytes) => AxumBody::from(bytes::Bytes::from_owner(bytes)),
        Body::Stream(_) => match response.body.take_stream() {
            Some(writer) => streamed(writer),
            None => AxumBody::empty(),
        },
    };
    let mut out = Response::new(body);
    *out.status_mut() = StatusCode::from_u16(response.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = out.headers_mut();
    headers.insert(axum::http::header::CONTENT_TYPE, HeaderValue::from_static(response.content_type));
    for (name, value) in response.headers {
        // `from_bytes` accepts canonical case and stores the lowercase name.
        if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value)) {
            headers.append(name, value);
        }
    }
    out
}

/// Pieces of a streamed body in flight at once: with ~1 MB pieces, the memory a slow
/// client can pin.
const STREAM_PIECES_IN_FLIGHT: usize = 4;

/// A body written on a blocking thread while it is sent: the writer blocks when the
/// client reads slowly, and stops (its next write fails) when the client goes away.
fn streamed(writer: oxprof_api::data::BodyWriter) -> AxumBody {
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(STREAM_PIECES_IN_FLIGHT);
    tokio::task::spawn_blocking(move || {
        let mut sink = ChannelWriter { tx };
        // An error here means the client went away: nothing left to do.
        let _ = writer.write_to(&mut sink);
    });
    let pieces = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|piece| (Ok::<_, io::Error>(piece), rx))
    });
    AxumBody::from_stream(pieces)
}

/// `io::Write` into the channel of a streamed body.
struct ChannelWriter {
    tx: tokio::sync::mpsc::Sender<bytes::Bytes>,
}

impl io::Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tx
            .blocking_send(bytes::Bytes::copy_from_slice(buf))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The log directory captures are written to, when `root` is one: a directory that is not
/// itself a run (holds no `.xplane.pb` file directly) and not the bundled demo.
fn capture_logdir(root: &std::path::Path, demo: bool) -> Option<PathBuf> {
    if demo || !root.is_dir() {
        return None;
    }
    let is_run = std::fs::read_dir(root).ok()?.flatten().any(|entry| {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz")
    });
    (!is_run).then(|| root.to_path_buf())
}

/// `/oxprof/api/explain?run=&host=`: what bounds a run (`oxprof explain`'s JSON, schema
/// `oxprof.explain/1`), from the service's session (its cached analyses).
fn with_explain_route(service: Service) -> Service {
    service.with_route(
        "/explain",
        Box::new(|service, q| {
            let (run, host) = service.run_and_host(q)?;
            let explanation = oxprof_explain::explain(service.session(), &run, host.as_deref())?;
            // Plain data: serializing it cannot fail (a non-finite number becomes null).
            let value = serde_json::to_value(&explanation).unwrap_or_default();
            Ok(HttpResponse::json(200, &value))
        }),
    )
}

/// SQL over the served runs (`/oxprof/api/query`, `/query/schema`), read through the
/// service's session.
#[cfg(feature = "sql")]
fn with_sql_routes(service: Service) -> Service {
    let query_route = Arc::new(query::QueryRoute::new());
    let schema_route = query_route.clone();
    service
        .with_route("/query", Box::new(move |service, q| query_route.query(service, q)))
        .with_route("/query/schema", Box::new(move |_, _| Ok(schema_route.schema())))
}
