//! The server over real sockets (127.0.0.1, any free port): the bundled demo, gzip,
//! security headers, JSON errors, raw traversal paths, single-flight over concurrent
//! connections, graceful shutdown.

use oxprof_api::registry::ToolId;
use oxprof_server::{ServeOptions, start};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body, gunzipped when it was sent compressed.
    fn text(&self) -> String {
        if self.header("content-encoding") == Some("gzip") {
            let mut out = String::new();
            flate2::read::GzDecoder::new(&self.body[..]).read_to_string(&mut out).unwrap();
            out
        } else {
            String::from_utf8(self.body.clone()).unwrap()
        }
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.text()).unwrap()
    }
}

/// A minimal HTTP/1.1 client: one request per connection.
fn request(addr: SocketAddr, method: &str, target: &str, gzip: bool) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let encoding = if gzip { "Accept-Encoding: gzip\r\n" } else { "" };
    write!(stream, "{method} {target} HTTP/1.1\r\nHost: {addr}\r\n{encoding}Connection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("end of headers");
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked")) {
        body = dechunk(&body);
    }
    Reply { status, headers, body }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = data.windows(2).position(|w| w == b"\r\n").unwrap();
        let size_text = std::str::from_utf8(&data[..line_end]).unwrap();
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        data = &data[line_end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn options(path: Option<PathBuf>) -> ServeOptions {
    ServeOptions { path, port: 0, ..ServeOptions::default() }
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

#[test]
fn serves_the_bundled_demo_with_gzip_and_security_headers_then_shuts_down() {
    let rt = runtime();
    let server = rt.block_on(start(options(None))).unwrap();
    let addr = server.addr;
    assert!(addr.ip().is_loopback(), "loopback by default");
    let demo_dir = server.root.clone();
    assert!(demo_dir.is_dir());

    let runs = request(addr, "GET", "/data/plugin/profile/runs", true);
    assert_eq!(runs.status, 200);
    assert_eq!(
        runs.text(),
        r#"["tf_custom_loop/2026_11_22_03_01_43", "pytorch_a100_ddp", "mi300x_jax_gemm/jax08_gemm", "jax_train/2026_11_22_03_01_45"]"#
    );
    // The GPU run: a real MI300X XSpace, so the GPU tools are offered.
    let gpu = request(addr, "GET", "/oxprof/api/run?run=mi300x_jax_gemm%2Fjax08_gemm", true);
    assert_eq!(gpu.status, 200);
    assert!(gpu.text().contains("\"kernel_stats\""), "{}", gpu.text());
    let kernels = request(
        addr,
        "GET",
        "/data/plugin/profile/data?run=mi300x_jax_gemm%2Fjax08_gemm&tag=kernel_stats&host=tw003",
        true,
    );
    assert_eq!(kernels.status, 200);
    assert!(kernels.text().contains("Cijk_"), "MI300X GEMM kernels in kernel_stats");
    // The PyTorch run: a real A100 DDP trace, imported from Kineto JSON, with its NCCL kernels.
    let torch = request(addr, "GET", "/oxprof/api/run?run=pytorch_a100_ddp", true);
    assert_eq!(torch.status, 200);
    assert!(torch.text().contains("\"kernel_stats\""), "{}", torch.text());
    let kernels =
        request(addr, "GET", "/data/plugin/profile/data?run=pytorch_a100_ddp&tag=kernel_stats&host=nccl_data", true);
    assert_eq!(kernels.status, 200);
    assert!(kernels.text().contains("ncclKernel_AllReduce"), "A100 NCCL kernels in kernel_stats");

    let url = "/data/plugin/profile/data?run=tf_custom_loop%2F2026_11_22_03_01_43&tag=overview_page&host=vm";
    let data = request(addr, "GET", url, true);
    assert_eq!(data.status, 200);
    assert_eq!(data.header("content-encoding"), Some("gzip"));
    assert_eq!(data.header("content-type"), Some("application/json"));
    assert!(data.header("content-security-policy").unwrap().contains("default-src 'self'"));
    assert_eq!(data.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(data.header("referrer-policy"), Some("no-referrer"));
    let request_body = oxprof_api::data::DataRequest {
        host: Some("vm".into()),
        ..oxprof_api::data::DataRequest::new(ToolId::OVERVIEW_PAGE)
    };
    let cli = oxprof_api::data::data(&repo_root().join("testdata/profiles/tf_custom_loop"), &request_body).unwrap();
    assert_eq!(data.text(), cli.body, "served body = oxprof data body");
    // Without Accept-Encoding the body is plain.
    let plain = request(addr, "GET", url, false);
    assert_eq!(plain.header("content-encoding"), None);
    assert_eq!(plain.text(), cli.body);

    let index = request(addr, "GET", "/?run=jax_train%2F2026_11_22_03_01_45&tool=overview_page&host=vm", true);
    assert_eq!(index.status, 200);
    assert!(index.header("content-type").unwrap().starts_with("text/html"));

    rt.block_on(server.shutdown()).unwrap();
    assert!(TcpStream::connect(addr).is_err(), "no longer listening");
    assert!(!demo_dir.exists(), "the demo's temporary directory is removed");
}

#[test]
fn errors_are_json_and_raw_traversal_paths_are_refused() {
    let rt = runtime();
    let server = rt.block_on(start(options(Some(repo_root().join("testdata/profiles"))))).unwrap();
    let addr = server.addr;
    let bad = request(addr, "GET", "/data/plugin/profile/data?run=..%2F..%2Fetc&tag=overview_page", true);
    assert_eq!(bad.status, 400);
    assert_eq!(bad.header("content-type"), Some("application/json"));
    assert_eq!(bad.json()["status"], 400);
    let unknown = request(addr, "GET", "/data/plugin/profile/data?tag=no_such_tool", true);
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"].as_str().unwrap().contains("no_such_tool"));
    for target in
        ["/../../etc/passwd", "/..%2F..%2Fetc%2Fpasswd", "/%2e%2e/%2e%2e/etc/passwd", "/assets/../../Cargo.toml"]
    {
        let reply = request(addr, "GET", target, true);
        assert!(matches!(reply.status, 400 | 404), "{target}: {}", reply.status);
        assert!(!reply.text().contains("root:"), "{target}");
    }
    let post = request(addr, "POST", "/data/plugin/profile/runs", true);
    assert_eq!(post.status, 405);
    rt.block_on(server.shutdown()).unwrap();
}

#[test]
fn concurrent_connections_share_one_computation() {
    let logdir = tempfile::tempdir().unwrap();
    let dest = logdir.path().join("plugins/profile/r/vm.xplane.pb.gz");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    let source =
        repo_root().join("testdata/profiles/tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz");
    std::fs::copy(source, &dest).unwrap();
    let rt = runtime();
    let server = rt.block_on(start(options(Some(logdir.path().to_path_buf())))).unwrap();
    let addr = server.addr;
    let bodies: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(move || request(addr, "GET", "/data?run=r&tag=framework_op_stats&host=vm", true).text()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    let info = request(addr, "GET", "/oxprof/api/info", true).json();
    // One response computed (the others joined it or hit it) from one analysis of the file.
    assert_eq!(info["cache"]["computations"], 2, "{info}");
    assert_eq!(info["cache"]["hits"], 5, "{info}");
    assert_eq!(info["files"]["analyses_computed"], 1, "{info}");
    rt.block_on(server.shutdown()).unwrap();
}

#[test]
fn a_missing_path_is_a_clear_error() {
    let rt = runtime();
    let err = rt.block_on(start(options(Some(PathBuf::from("/no/such/logdir"))))).err().unwrap();
    assert!(err.to_string().contains("/no/such/logdir"), "{err}");
}

/// A whole trace (`resolution=0`) of more events than a body is built for is written
/// while it is sent (chunked), with the same bytes as the one-shot computation.
#[test]
fn a_large_trace_body_is_streamed() {
    use oxprof_testkit::XSpaceBuilder;
    let logdir = tempfile::tempdir().unwrap();
    let dest = logdir.path().join("plugins/profile/big/vm.xplane.pb");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    // 150,000 events on four threads (above oxprof_api::trace::STREAM_EVENTS).
    let space = XSpaceBuilder::new().plane("/host:CPU", |p| {
        for line in 0..4 {
            p.line(line, &format!("thread {line}"), 0, |l| {
                for i in 0..37_500i64 {
                    l.event(if i % 3 == 0 { "op_a" } else { "op_b" }, i * 2_000_000, 1_000_000);
                }
            });
        }
    });
    std::fs::write(&dest, space.to_bytes()).unwrap();
    let rt = runtime();
    let server = rt.block_on(start(options(Some(logdir.path().to_path_buf())))).unwrap();
    let reply = request(server.addr, "GET", "/data?run=big&tag=trace_viewer%40&host=vm&resolution=0", false);
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"), "streamed, not built whole");
    let one_shot = oxprof_api::data::DataRequest {
        host: Some("vm".into()),
        params: [("resolution".to_string(), "0".to_string())].into(),
        ..oxprof_api::data::DataRequest::new(ToolId::TRACE_VIEWER_STREAMING)
    };
    let expected = oxprof_api::data::data(logdir.path(), &one_shot).unwrap().body;
    assert!(expected.len() > 10 << 20, "{} bytes", expected.len());
    assert!(reply.text() == expected, "streamed body differs from the one-shot body");
    // Without `resolution`, XProf's server default (8000) applies (a trace this small is
    // not downsampled by XProf's rule, so the events are the same).
    let default = request(server.addr, "GET", "/data?run=big&tag=trace_viewer%40&host=vm", false);
    assert_eq!(default.status, 200);
    let at_8000 = oxprof_api::data::DataRequest {
        params: [("resolution".to_string(), "8000".to_string())].into(),
        ..one_shot.clone()
    };
    assert!(default.text() == oxprof_api::data::data(logdir.path(), &at_8000).unwrap().body);
    rt.block_on(server.shutdown()).unwrap();
}

/// `/oxprof/api/explain`: the explanation `oxprof explain --format json` prints, for a run
/// and host the request names; a bad host name is a 400 and an unknown run a 404.
#[test]
fn the_explain_route_answers_as_the_cli() {
    let rt = runtime();
    let dir = repo_root().join("testdata/profiles/tf_custom_loop");
    let server = rt.block_on(start(options(Some(dir.clone())))).unwrap();
    let addr = server.addr;
    let reply = request(addr, "GET", "/oxprof/api/explain", true);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let json = reply.json();
    assert_eq!(json["schema"], "oxprof.explain/1");
    assert_eq!(json["findings"][0]["id"], "input_bound");
    let session = oxprof_api::data::one_shot_session(&dir).unwrap();
    let run = session.run(None).unwrap();
    let cli = serde_json::to_value(oxprof_explain::explain(&session, &run, None).unwrap()).unwrap();
    assert_eq!(json, cli);
    assert_eq!(request(addr, "GET", "/oxprof/api/explain?host=..%2Fx", true).status, 400);
    assert_eq!(request(addr, "GET", "/oxprof/api/explain?run=no_such_run", true).status, 404);
    rt.block_on(server.shutdown()).unwrap();
}
