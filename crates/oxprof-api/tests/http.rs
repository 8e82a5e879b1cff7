//! The HTTP API without sockets: XProf-compatible routes answered by `Service::handle`
//! over the committed refkit profiles, compared with XProf's own recorded HTTP bodies
//! (`/work/refdata/http_samples`, copied where small) and tool outputs
//! (`testdata/profiles/*/xprof_out`); parameter checks, path confinement (`..`, absolute
//! paths, symlinks, encoded separators), status codes, security headers, caching.

use oxprof_api::data::{DataRequest, data};
use oxprof_api::http::{Asset, Assets, HttpResponse, NoAssets, Service, ServiceOptions};
use oxprof_api::registry::ToolId;
use oxprof_testkit::jsoncmp::{CmpOptions, compare};
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn profiles() -> PathBuf {
    repo_root().join("testdata/profiles")
}

/// The refkit profiles: (directory name, run name as XProf lists it under testdata/profiles).
const PROFILES: [(&str, &str); 5] = [
    ("tf_memory_nobfc", "tf_memory_nobfc/2026_11_22_03_02_11"),
    ("tf_memory", "tf_memory/2026_11_22_03_01_48"),
    ("tf_keras_fit", "tf_keras_fit/train/2026_11_22_03_01_39"),
    ("tf_custom_loop", "tf_custom_loop/2026_11_22_03_01_43"),
    ("jax_train", "jax_train/2026_11_22_03_01_45"),
];

fn service(root: &Path) -> Service {
    Service::new(ServiceOptions::new(root), Arc::new(NoAssets)).unwrap()
}

fn get(service: &Service, url: &str) -> HttpResponse {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    service.handle("GET", path, query)
}

fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn load_json(path: &Path) -> Option<Value> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return serde_json::from_str(&text).ok();
    }
    let gz = std::fs::File::open(path.with_extension("json.gz")).ok()?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz).read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

fn assert_json_error(response: &HttpResponse, status: u16) {
    assert_eq!(response.status, status, "{}", response.body_text());
    assert_eq!(response.content_type, "application/json");
    let body = response.body_json().expect("JSON error body");
    assert_eq!(body["status"], json!(status));
    let message = body["error"].as_str().expect("error message");
    assert!(!message.contains("panicked") && !message.contains("src/"), "leaks internals: {message}");
}

#[test]
fn listing_routes_equal_xprof_bodies() {
    let service = service(&profiles());
    // XProf sorts run names descending and formats with Python's json.dumps.
    let runs = get(&service, "/data/plugin/profile/runs");
    assert_eq!(runs.status, 200);
    assert_eq!(runs.content_type, "application/json");
    let expected: Vec<&str> = PROFILES.iter().map(|(_, run)| *run).collect();
    assert_eq!(
        runs.body_text(),
        format!("[{}]", expected.iter().map(|r| format!("\"{r}\"")).collect::<Vec<_>>().join(", "))
    );
    // The same routes at the root path, as XProf answers them.
    assert_eq!(get(&service, "/runs").body_text(), runs.body_text());
    assert_eq!(get(&service, "/data/plugin/profile/runs/").body_text(), runs.body_text());

    // Bodies XProf 2.24.2's server returned for the same runs (refdata/http_samples).
    let samples = [
        (
            "run_tools?run=tf_keras_fit%2Ftrain%2F2026_11_22_03_01_39",
            r#"["overview_page", "trace_viewer@", "op_profile", "input_pipeline_analyzer", "memory_profile", "roofline_model", "framework_op_stats", "hlo_stats"]"#,
        ),
        (
            "run_tools?run=tf_custom_loop%2F2026_11_22_03_01_43",
            r#"["overview_page", "trace_viewer@", "op_profile", "input_pipeline_analyzer", "memory_profile", "roofline_model", "framework_op_stats", "hlo_stats"]"#,
        ),
        (
            "run_tools?run=jax_train%2F2026_11_22_03_01_45",
            r#"["overview_page", "trace_viewer@", "graph_viewer", "op_profile", "input_pipeline_analyzer", "memory_profile", "memory_viewer", "roofline_model", "framework_op_stats", "hlo_stats"]"#,
        ),
        ("hosts?run=tf_keras_fit%2Ftrain%2F2026_11_22_03_01_39&tag=overview_page", r#"[{"hostname": "vm"}]"#),
        ("hosts?run=jax_train%2F2026_11_22_03_01_45&tag=trace_viewer%40", r#"[{"hostname": "vm"}]"#),
        ("hosts?run=jax_train%2F2026_11_22_03_01_45&tag=memory_viewer", r#"[{"hostname": "vm"}]"#),
        ("version", env!("CARGO_PKG_VERSION")),
    ];
    for (route, body) in samples {
        let response = get(&service, &format!("/data/plugin/profile/{route}"));
        assert_eq!(response.status, 200, "{route}");
        assert_eq!(response.body_text(), body, "{route}");
    }
    // XProf's config body byte for byte once capturing is available.
    let with_capture = Service::new(ServiceOptions::new(profiles()), Arc::new(NoAssets))
        .unwrap()
        .with_capture(Box::new(|_| unreachable!()));
    assert_eq!(
        get(&with_capture, "/data/plugin/profile/config").body_text(),
        r#"{"enableTabNameLabel": false, "hideCaptureProfileButton": false, "srcPathPrefix": null}"#
    );
    assert_eq!(get(&service, "/config").body_json().unwrap()["hideCaptureProfileButton"], json!(true));
}

#[test]
fn run_tools_equal_xprof_tool_names_for_every_refkit_profile() {
    let service = service(&profiles());
    for (name, run) in PROFILES {
        let expected = load_json(&profiles().join(name).join("xprof_out/tool_names.json")).unwrap();
        let expected: Vec<&str> = expected.as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
        let response = get(&service, &format!("/run_tools?run={}", enc(run)));
        assert_eq!(response.status, 200);
        assert_eq!(response.body_json().unwrap(), json!(oxprof_api::http::order_tools(&expected)), "{name}");
    }
}

/// Tools whose outputs are checked against XProf's here (the golden test covers all).
const GOLDEN_TOOLS: [&str; 4] = ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"];

#[test]
fn served_data_equals_oxprof_data_and_xprof_outputs() {
    let service = service(&profiles());
    let mut compared = 0;
    for (name, run) in PROFILES {
        let run_dir = profiles().join(name);
        for tool in &GOLDEN_TOOLS {
            for host in ["vm", "ALL_HOSTS"] {
                let response =
                    get(&service, &format!("/data/plugin/profile/data?run={}&tag={tool}&host={host}", enc(run)));
                assert_eq!(response.status, 200, "{name} {tool} {host}: {}", response.body_text());
                assert_eq!(response.content_type, "application/json");
                // Same bytes as `oxprof data`.
                let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
                let cli = data(&run_dir, &request).unwrap();
                assert_eq!(response.body_text(), cli.body, "{name} {tool} {host}");
                // Same values as XProf.
                let expected = load_json(&run_dir.join(format!("xprof_out/{tool}.json"))).unwrap();
                let options = CmpOptions { unordered: *tool == "pod_viewer", ..Default::default() };
                let report = compare(&expected, &response.body_json().unwrap(), options);
                assert!(report.is_match(), "{name} {tool} {host}: {}", report.summary(5));
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 5 * 4 * 2);
}

#[test]
fn other_tools_are_served_as_oxprof_data_computes_them() {
    // Every other registered tool: whatever `data()` answers (a body, or an error status),
    // the route answers the same.
    let service = service(&profiles());
    let (name, run) = ("jax_train", "jax_train/2026_11_22_03_01_45");
    let registered = oxprof_api::registry::tools().iter().filter(|t| t.available()).map(|t| t.name());
    for tool in registered.filter(|t| !GOLDEN_TOOLS.contains(t)) {
        let response = get(&service, &format!("/data?run={}&tag={}&host=vm", enc(run), enc(tool)));
        let request = DataRequest { host: Some("vm".into()), ..oxprof_api::registry::request(tool).unwrap() };
        match data(&profiles().join(name), &request) {
            Ok(cli) => {
                assert_eq!(response.status, 200, "{tool}");
                assert_eq!(response.content_type, cli.content_type, "{tool}");
                assert_eq!(response.body.as_bytes(), cli.body.as_bytes(), "{tool}");
            }
            Err(e) if e.http_status() == 404 && response.status == 404 => {}
            Err(e) => assert_json_error(&response, e.http_status()),
        }
    }
}

#[test]
fn data_csv_equals_xprof_csv() {
    let service = service(&profiles());
    let run = "tf_custom_loop/2026_11_22_03_01_43";
    for tool in ["framework_op_stats", "input_pipeline_analyzer", "overview_page"] {
        let expected =
            std::fs::read_to_string(profiles().join(format!("tf_custom_loop/xprof_out/{tool}.csv"))).unwrap();
        let response = get(&service, &format!("/data/plugin/profile/data_csv?run={}&tag={tool}&host=vm", enc(run)));
        assert_eq!(response.status, 200, "{tool}");
        assert_eq!(response.content_type, "text/csv");
        assert_eq!(
            response.header("Content-Disposition"),
            Some(format!("attachment; filename=\"{tool}_tf_custom_loop_2026_11_22_03_01_43_vm.csv\"").as_str())
        );
        assert_eq!(response.body_text(), expected, "{tool}");
    }
}

#[test]
fn module_list_is_served() {
    let service = service(&profiles());
    let response = get(&service, "/module_list?run=jax_train%2F2026_11_22_03_01_45");
    if response.status == 501 {
        eprintln!("SKIP: module_list not computed by oxprof-api yet");
        return;
    }
    assert_eq!(response.status, 200);
    // XProf's body (refdata/http_samples/21_module_list_jax_train.body).
    assert_eq!(
        response.body_text(),
        "jit__normal(16),jit__normal(20),jit__normal(8),jit__threefry_seed(2),jit__threefry_split(4),\
         jit_broadcast_in_dim(14),jit_broadcast_in_dim(24),jit_convert_element_type(12),jit_multiply(10),\
         jit_multiply(18),jit_multiply(22),jit_stage(0),jit_stage(28),jit_stage(30),jit_train_step(26),jit_unstack(6)"
    );
}

#[test]
fn bad_parameters_are_400_and_unknown_names_404_with_json_errors() {
    let service = service(&profiles());
    let run = enc("tf_custom_loop/2026_11_22_03_01_43");
    let cases: Vec<(String, u16)> = vec![
        (format!("/data?run={run}&host=vm"), 400),                       // no tag
        (format!("/data?run={run}&tag=overview_page&host=%zz"), 400),    // bad escape
        (format!("/data?run={run}&tag=overview_page&host=%C3%28"), 400), // not UTF-8
        (format!("/data?run={run}&tag=nope&host=vm"), 404),              // unknown tool
        (format!("/data?run={run}&tag=overview_page&host=nope"), 404),   // unknown host
        ("/data?run=nope&tag=overview_page".to_string(), 404),           // unknown run
        ("/run_tools?run=nope".to_string(), 404),
        ("/hosts?run=nope&tag=overview_page".to_string(), 404),
        ("/oxprof/api/nope".to_string(), 404),
        (format!("/data_csv?run={run}&tag=nope"), 404),
    ];
    for (url, status) in cases {
        assert_json_error(&get(&service, &url), status);
    }
    // Methods.
    assert_json_error(&service.handle("POST", "/data/plugin/profile/data", "tag=overview_page"), 405);
    assert_json_error(&service.handle("DELETE", "/", ""), 405);
    assert_json_error(&service.handle("GET", "/data/plugin/profile/generate_cache", ""), 405);
}

#[test]
fn no_request_reads_outside_the_served_path() {
    let outside = tempfile::tempdir().unwrap();
    let secret_run = outside.path().join("secret/plugins/profile/2020_01_01/vm.xplane.pb.gz");
    std::fs::create_dir_all(secret_run.parent().unwrap()).unwrap();
    let source = profiles().join("tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz");
    std::fs::copy(&source, &secret_run).unwrap();

    let logdir = tempfile::tempdir().unwrap();
    let good = logdir.path().join("plugins/profile/good_run/vm.xplane.pb.gz");
    std::fs::create_dir_all(good.parent().unwrap()).unwrap();
    std::fs::copy(&source, &good).unwrap();
    // Symlinks to the outside: a run directory and a host file.
    std::os::unix::fs::symlink(secret_run.parent().unwrap(), logdir.path().join("plugins/profile/linked_run")).unwrap();
    let mixed = logdir.path().join("plugins/profile/mixed_run");
    std::fs::create_dir_all(&mixed).unwrap();
    std::os::unix::fs::symlink(&secret_run, mixed.join("other.xplane.pb.gz")).unwrap();
    std::os::unix::fs::symlink(outside.path(), logdir.path().join("escape")).unwrap();

    let service = service(logdir.path());
    let runs = get(&service, "/runs").body_json().unwrap();
    assert_eq!(runs, json!(["good_run"]), "runs resolving outside the root are not served");
    let listing = get(&service, "/oxprof/api/runs").body_json().unwrap();
    assert_eq!(listing["skipped"].as_array().unwrap().len(), 3, "mixed_run, linked_run, escape/…: {listing}");

    let secret_dir = secret_run.parent().unwrap().display().to_string();
    let attempts = [
        // run names that try to walk
        "/data?run=..%2F..%2Fsecret&tag=overview_page".to_string(),
        "/data?run=good_run%2F..%2F..&tag=overview_page".to_string(),
        "/data?run=%2Fetc&tag=overview_page".to_string(),
        "/data?run=good_run%5C..&tag=overview_page".to_string(),
        "/data?run=linked_run&tag=overview_page".to_string(),
        "/run_tools?run=..".to_string(),
        // hosts
        "/data?run=good_run&tag=overview_page&host=..%2F..%2Fsecret".to_string(),
        "/data?run=good_run&tag=overview_page&host=%2Fetc%2Fpasswd".to_string(),
        "/data?run=good_run&tag=trace_viewer%40&hosts=vm,..%2Fx".to_string(),
        // module names and tags
        "/data?run=good_run&tag=memory_viewer&host=vm&module_name=..%2F..%2Fetc%2Fpasswd".to_string(),
        "/data?run=good_run&tag=graph_viewer&module_name=%2Fetc%2Fpasswd".to_string(),
        "/data?run=good_run&tag=..%2Foverview_page".to_string(),
        // session / run paths
        format!("/runs?session_path={}", enc(&secret_dir)),
        "/runs?session_path=..%2F..%2F..%2Fetc".to_string(),
        "/runs?session_path=escape%2Fsecret%2Fplugins%2Fprofile%2F2020_01_01".to_string(),
        "/runs?run_path=%2F".to_string(),
        format!("/data?session_path={}&run=2020_01_01&tag=overview_page", enc(&secret_dir)),
        "/data?session_path=escape&tag=overview_page".to_string(),
    ];
    for url in attempts {
        let response = get(&service, &url);
        assert!(matches!(response.status, 400 | 404), "{url}: {} {}", response.status, response.body_text());
        assert_json_error(&response, response.status);
    }
    // Encoded separators in the URL path never reach a file either.
    for path in
        ["/..%2F..%2Fetc%2Fpasswd", "/%2e%2e/%2e%2e/etc/passwd", "/../../etc/passwd", "/assets/..%5c..%5cCargo.toml"]
    {
        assert_eq!(get(&service, path).status, 404, "{path}");
    }
    // A session path inside the root works.
    let inside = get(&service, "/runs?session_path=plugins%2Fprofile%2Fgood_run");
    assert_eq!(inside.body_json().unwrap(), json!(["good_run"]));
    let inside = get(&service, "/runs?run_path=plugins%2Fprofile");
    assert_eq!(inside.body_json().unwrap(), json!(["good_run"]), "mixed_run and linked_run stay hidden");
    let data = get(&service, "/data?session_path=plugins%2Fprofile%2Fgood_run&run=good_run&tag=overview_page&host=vm");
    assert_eq!(data.status, 200, "{}", data.body_text());
}

#[test]
fn every_response_carries_security_headers() {
    let service = service(&profiles());
    for url in ["/", "/runs", "/data?tag=nope", "/nope.js", "/oxprof/api/info"] {
        let response = get(&service, url);
        let csp = response.header("Content-Security-Policy").unwrap();
        assert!(csp.contains("default-src 'self'") && csp.contains("script-src 'self' 'wasm-unsafe-eval';"), "{csp}");
        // WebAssembly compilation only: no JavaScript eval, no inline scripts.
        assert!(
            !csp.replace("'wasm-unsafe-eval'", "").contains("unsafe-eval") && !csp.contains("'unsafe-inline'; style")
        );
        assert_eq!(response.header("X-Content-Type-Options"), Some("nosniff"));
        assert_eq!(response.header("Referrer-Policy"), Some("no-referrer"));
    }
}

#[test]
fn frames_are_refused_unless_the_host_program_names_the_pages_that_may() {
    let service = service(&profiles());
    let response = get(&service, "/");
    assert!(response.header("Content-Security-Policy").unwrap().ends_with("frame-ancestors 'none'"));
    assert_eq!(response.header("X-Frame-Options"), Some("DENY"));

    let ancestors = oxprof_api::http::LOOPBACK_FRAME_ANCESTORS.iter().map(|s| s.to_string()).collect();
    let options = ServiceOptions { frame_ancestors: ancestors, ..ServiceOptions::new(profiles()) };
    let embeddable = Service::new(options, Arc::new(NoAssets)).unwrap();
    for url in ["/", "/runs", "/nope.js"] {
        let response = get(&embeddable, url);
        let csp = response.header("Content-Security-Policy").unwrap();
        assert!(
            csp.ends_with(
                "frame-ancestors 'self' http://localhost:* http://127.0.0.1:* https://localhost:* https://127.0.0.1:*"
            ),
            "{csp}"
        );
        assert!(csp.starts_with("default-src 'self'; script-src 'self' 'wasm-unsafe-eval';"), "{csp}");
        assert_eq!(response.header("X-Frame-Options"), None, "{url}");
    }

    // A source that would end the directive (or the header) is refused.
    for bad in ["http://a; script-src *", "http://a,b", "", "http://a\r\nX: y"] {
        let options = ServiceOptions { frame_ancestors: vec![bad.to_string()], ..ServiceOptions::new(profiles()) };
        let error = Service::new(options, Arc::new(NoAssets)).err().unwrap();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput, "{bad:?}");
    }
}

struct PanickingAssets;

impl Assets for PanickingAssets {
    fn get(&self, _: &str) -> Option<Asset> {
        panic!("secret internal detail at src/whatever.rs");
    }
}

#[test]
fn a_panic_becomes_a_500_without_internals() {
    let service = Service::new(ServiceOptions::new(profiles()), Arc::new(PanickingAssets)).unwrap();
    let response = get(&service, "/index.html");
    assert_json_error(&response, 500);
    assert!(!response.body_text().contains("secret"));
    // The service still answers afterwards.
    assert_eq!(get(&service, "/runs").status, 200);
}

struct FakeUi;

impl Assets for FakeUi {
    fn get(&self, path: &str) -> Option<Asset> {
        match path {
            "index.html" => Some(Asset { bytes: b"<html>index</html>", content_type: "text/html; charset=utf-8" }),
            "assets/app-1234.js" => Some(Asset { bytes: b"console.log(1)", content_type: "text/javascript" }),
            _ => None,
        }
    }
}

#[test]
fn static_files_and_single_page_app_deep_links() {
    let service = Service::new(ServiceOptions::new(profiles()), Arc::new(FakeUi)).unwrap();
    for url in
        ["/", "/index.html", "/local", "/?run=jax_train%2F2026&tool=overview_page&host=vm", "/overview/deep/link"]
    {
        let response = get(&service, url);
        assert_eq!(response.status, 200, "{url}");
        // The page carries this process's token for state-changing requests.
        let meta = format!("<meta name=\"oxprof-token\" content=\"{}\">", service.token());
        assert_eq!(response.body_text(), format!("{meta}<html>index</html>"), "{url}");
        assert_eq!(response.header("Cache-Control"), Some("no-cache"));
    }
    let js = get(&service, "/assets/app-1234.js");
    assert_eq!((js.status, js.content_type), (200, "text/javascript"));
    assert_eq!(js.header("Cache-Control"), Some("no-cache"));
    assert_json_error(&get(&service, "/assets/missing.js"), 404);
    // Without a UI, a page says so.
    assert!(get(&service_without_ui(), "/").body_text().contains("not built"));
}

fn service_without_ui() -> Service {
    service(&profiles())
}

#[test]
fn new_runs_appear_without_restart() {
    let logdir = tempfile::tempdir().unwrap();
    let service = service(logdir.path());
    assert_eq!(get(&service, "/runs").body_text(), "[]");
    let info = get(&service, "/oxprof/api/runs").body_json().unwrap();
    assert!(info["empty_reason"].as_str().unwrap().contains("plugins/profile"), "{info}");
    assert_json_error(&get(&service, "/data?tag=overview_page"), 404);
    let source = profiles().join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz");
    for run in ["run_a", "run_b"] {
        let dest = logdir.path().join(format!("plugins/profile/{run}/vm.xplane.pb.gz"));
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&source, &dest).unwrap();
    }
    assert_eq!(get(&service, "/runs").body_json().unwrap(), json!(["run_b", "run_a"]));
    // A run added after the last /runs is found by a data request too.
    let dest = logdir.path().join("plugins/profile/run_c/vm.xplane.pb.gz");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(&source, &dest).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(get(&service, "/hosts?run=run_c").body_text(), r#"[{"hostname": "vm"}]"#);
}

#[test]
fn results_are_cached_and_concurrent_requests_share_one_computation() {
    let logdir = tempfile::tempdir().unwrap();
    let dest = logdir.path().join("plugins/profile/r/vm.xplane.pb.gz");
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(profiles().join("tf_keras_fit/train/plugins/profile/2026_11_22_03_01_39/vm.xplane.pb.gz"), &dest)
        .unwrap();
    let service = service(logdir.path());
    let url = "/data?run=r&tag=overview_page&host=vm";
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| get(&service, url).body_text())).collect();
        let bodies: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(bodies.windows(2).all(|w| w[0] == w[1]));
    });
    // One response (the others joined it) from one analysis of the file: two entries.
    let stats = service.cache_stats();
    assert_eq!((stats.computations, stats.hits), (2, 3), "{stats:?}");
    // Notes come from the same cached result.
    let notes = get(&service, "/oxprof/api/notes?run=r&tag=overview_page&host=vm");
    assert_eq!(notes.status, 200);
    assert!(notes.body_json().unwrap()["notes"].is_array());
    assert_eq!(service.cache_stats().computations, 2);
    // use_saved_result=false recomputes the response and its analysis; a rewritten file
    // is a new key for both.
    get(&service, &format!("{url}&use_saved_result=false"));
    assert_eq!(service.cache_stats().computations, 4);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(profiles().join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"), &dest).unwrap();
    get(&service, url);
    assert_eq!(service.cache_stats().computations, 6);
}

/// The OpStats tools of one host share one conversion of its file: the first request (or
/// the first of concurrent ones, whatever their tools) converts, the others read it.
#[test]
fn op_stats_tools_share_one_analysis_per_host() {
    let logdir = tempfile::tempdir().unwrap();
    let run = logdir.path().join("plugins/profile/r");
    std::fs::create_dir_all(&run).unwrap();
    let source = profiles().join("tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz");
    for host in ["h1", "h2"] {
        std::fs::copy(&source, run.join(format!("{host}.xplane.pb.gz"))).unwrap();
    }
    let service = service(logdir.path());
    let url = |tool: &str, host: &str| format!("/data?run=r&tag={tool}&host={host}");
    // Concurrent first requests for different tools of h1: one conversion.
    let tools = ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer"];
    std::thread::scope(|s| {
        for tool in tools {
            let (service, url) = (&service, url(tool, "h1"));
            s.spawn(move || assert_eq!(get(service, &url).status, 200));
        }
    });
    let counts = service.session().file_counts();
    assert_eq!((counts.analyses_computed, counts.analyses_found), (1, 3), "{counts:?}");
    let stats = service.cache_stats();
    assert!(stats.bytes > 0 && stats.bytes <= stats.limit_bytes, "{stats:?}");
    // Bodies equal the one-shot computation of `oxprof data`.
    for tool in tools {
        let request = DataRequest { host: Some("h1".into()), ..oxprof_api::registry::request(tool).unwrap() };
        assert_eq!(get(&service, &url(tool, "h1")).body_text(), data(&run, &request).unwrap().body, "{tool}");
    }
    // ALL_HOSTS converts only h2; then h2 alone is read from the cache.
    assert_eq!(get(&service, &url("overview_page", "ALL_HOSTS")).status, 200);
    assert_eq!(service.session().file_counts().analyses_computed, 2);
    assert_eq!(get(&service, &url("kernel_stats", "h2")).status, 200);
    assert_eq!(service.session().file_counts().analyses_computed, 2);
    // use_saved_result=false converts again; so does a rewritten file.
    get(&service, &format!("{}&use_saved_result=false", url("hlo_stats", "h1")));
    assert_eq!(service.session().file_counts().analyses_computed, 3);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::copy(
        profiles().join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"),
        run.join("h1.xplane.pb.gz"),
    )
    .unwrap();
    let response = get(&service, &url("roofline_model", "h1"));
    assert_eq!(response.status, 200);
    assert_eq!(service.session().file_counts().analyses_computed, 4);
    let request = DataRequest { host: Some("h1".into()), ..DataRequest::new(ToolId::ROOFLINE_MODEL) };
    assert_eq!(response.body_text(), data(&run, &request).unwrap().body);
}

#[test]
fn a_single_file_or_a_run_directory_can_be_served() {
    let file = profiles().join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz");
    let service = service(&file);
    assert_eq!(get(&service, "/runs").body_json().unwrap(), json!(["2026_11_22_03_01_45"]));
    assert_eq!(get(&service, "/data?tag=overview_page").status, 200);
    assert_json_error(&get(&service, "/runs?session_path=."), 400);
    let service = service_for_dir(file.parent().unwrap());
    assert_eq!(
        get(&service, "/hosts?run=2026_11_22_03_01_45&tag=overview_page").body_text(),
        r#"[{"hostname": "vm"}]"#
    );
}

fn service_for_dir(dir: &Path) -> Service {
    service(dir)
}

fn external(relative: &str) -> Option<PathBuf> {
    let base = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    let path = base.join(relative);
    path.exists().then_some(path)
}

fn external_outputs(relative: &str) -> Option<PathBuf> {
    let base = std::env::var_os("OXPROF_EXTERNAL_XPROF_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external-xprof-out"));
    let path = base.join(relative);
    path.exists().then_some(path)
}

#[test]
fn multi_host_run_lists_and_combines_hosts_like_xprof() {
    let (Some(run_dir), Some(expected)) = (
        external("openxla-xprof/demo/plugins/profile/GPU-multi-worker"),
        external_outputs("openxla-xprof/GPU-multi-worker_two_hosts/xprof_out"),
    ) else {
        eprintln!("SKIP: ../shared/testdata/external (GPU-multi-worker) absent");
        return;
    };
    let service = service(&run_dir);
    assert_eq!(get(&service, "/runs").body_text(), r#"["GPU-multi-worker"]"#);
    let (h1, h2) = ("34.83.195.179_6003", "34.83.195.180_6003");
    let hosts = |tag: &str| get(&service, &format!("/hosts?run=GPU-multi-worker&tag={}", enc(tag))).body_text();
    assert_eq!(hosts("overview_page"), r#"[{"hostname": "ALL_HOSTS"}]"#);
    assert_eq!(
        hosts("framework_op_stats"),
        format!(r#"[{{"hostname": "{h1}"}}, {{"hostname": "{h2}"}}, {{"hostname": "ALL_HOSTS"}}]"#)
    );
    assert_eq!(hosts("trace_viewer@"), format!(r#"[{{"hostname": "{h1}"}}, {{"hostname": "{h2}"}}]"#));
    // Tools from the first host, in the frontend's order.
    let names = load_json(&expected.join(format!("{h1}/tool_names.json"))).unwrap();
    let names: Vec<&str> = names.as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let tools = get(&service, "/run_tools?run=GPU-multi-worker").body_json().unwrap();
    assert_eq!(tools, json!(oxprof_api::http::order_tools(&names)));
    assert!(tools.as_array().unwrap().contains(&json!("kernel_stats")));
    // Combined and per-host data equal XProf's.
    for (host, folder) in [("ALL_HOSTS", "ALL_HOSTS"), (h2, h2)] {
        let response = get(&service, &format!("/data?run=GPU-multi-worker&tag=overview_page&host={host}"));
        assert_eq!(response.status, 200, "{}", response.body_text());
        let golden = load_json(&expected.join(format!("{folder}/overview_page.json"))).unwrap();
        let report = compare(&golden, &response.body_json().unwrap(), CmpOptions::default());
        assert!(report.is_match(), "{host}: {}", report.summary(5));
    }
}

#[test]
fn tpu_run_tools_equal_xprofs_http_body() {
    let Some(file) = external("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb") else {
        eprintln!("SKIP: ../shared/testdata/external (tpu_inference_2) absent");
        return;
    };
    let service = service(&file);
    let run = get(&service, "/runs").body_json().unwrap()[0].as_str().unwrap().to_string();
    // refdata/http_samples/04_run_tools_tpu_inference_2.body
    assert_eq!(
        get(&service, &format!("/run_tools?run={}", enc(&run))).body_text(),
        r#"["overview_page", "trace_viewer@", "graph_viewer", "op_profile", "input_pipeline_analyzer", "memory_profile", "memory_viewer", "roofline_model", "framework_op_stats", "hlo_stats"]"#
    );
    assert_eq!(
        get(&service, &format!("/hosts?run={}&tag=overview_page", enc(&run))).body_text(),
        r#"[{"hostname": "tpu_inference_2"}]"#
    );
}

/// `/run_tools` reads a profile without most of its events: the tools it lists must be
/// those of the whole profile, on every third-party capture (GPU, TPU, AMD).
#[test]
fn tools_from_metadata_equal_tools_from_the_whole_profile() {
    let Some(root) = external("") else {
        eprintln!("SKIP: ../shared/testdata/external absent");
        return;
    };
    fn xspaces(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                xspaces(&path, out);
            } else if path.to_string_lossy().ends_with(".xplane.pb") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    xspaces(&root, &mut files);
    assert!(!files.is_empty());
    for file in files {
        let whole = oxprof_format::load_xspace(&file).unwrap();
        let light = oxprof_api::http::available_tools_of_file(&file).unwrap();
        assert_eq!(light, oxprof_api::http::available_tools(&whole), "{}", file.display());
    }
}

#[test]
fn extension_routes_resolve_runs_and_share_the_cache() {
    use oxprof_api::http::HttpError;
    let service = Service::new(ServiceOptions::new(profiles()), Arc::new(NoAssets)).unwrap().with_route(
        "/echo_run",
        Box::new(|service: &Service, q| {
            let run = service.resolve_run(q)?;
            let key = format!("echo\0{}", service.session().fingerprint(&run));
            service.cached(&key, || {
                if run.name.contains("keras") {
                    return Err(HttpError::bad_request("no keras here"));
                }
                Ok(("application/json", json!({"run": run.name, "hosts": run.hosts.len()}).to_string().into_bytes()))
            })
        }),
    );
    let ok = get(&service, "/oxprof/api/echo_run?run=jax_train%2F2026_11_22_03_01_45");
    assert_eq!(ok.body_json().unwrap(), json!({"run": "jax_train/2026_11_22_03_01_45", "hosts": 1}));
    get(&service, "/oxprof/api/echo_run?run=jax_train%2F2026_11_22_03_01_45");
    assert_eq!(service.cache_stats().computations, 1);
    assert_json_error(&get(&service, "/oxprof/api/echo_run?run=tf_keras_fit%2Ftrain%2F2026_11_22_03_01_39"), 400);
    assert_json_error(&get(&service, "/oxprof/api/echo_run?run=..%2Fx"), 400);
    assert_json_error(&get(&service, "/oxprof/api/echo_run?run=nope"), 404);
    assert!(ok.header("Content-Security-Policy").is_some());
}

#[test]
fn hlo_tools_accept_the_module_name_as_host_like_xprofs_frontend() {
    let service = service(&profiles());
    let run = enc("jax_train/2026_11_22_03_01_45");
    let module = enc("jit_train_step(26)");
    let ok =
        get(&service, &format!("/data?run={run}&tag=memory_viewer&host={module}&module_name={module}&memory_space=0"));
    assert_eq!(ok.status, 200, "{}", ok.body_text());
    // A name that is neither a host nor a module is still refused (by the HLO tools).
    let unknown = get(&service, &format!("/data?run={run}&tag=memory_viewer&host=nope&module_name=nope"));
    assert!((400..500).contains(&unknown.status), "{} {}", unknown.status, unknown.body_text());
    // Other tools still require a real host.
    let overview = get(&service, &format!("/data?run={run}&tag=overview_page&host={module}"));
    assert_eq!(overview.status, 404);
}

#[test]
fn graph_viewer_pb_is_served_as_binary() {
    let service = service(&profiles());
    let run = enc("jax_train/2026_11_22_03_01_45");
    let module = enc("jit_train_step(26)");
    let response =
        get(&service, &format!("/data?run={run}&tag=graph_viewer&host={module}&module_name={module}&type=pb"));
    assert_eq!(response.status, 200, "{}", response.body_text());
    assert_eq!(response.content_type, "application/octet-stream");
    let expected =
        std::fs::read(profiles().join("jax_train/xprof_out/graph_viewer.jit_train_step(26).pb.bin")).unwrap();
    // XProf's C++ serializer orders map entries freely: same length, same bytes as a multiset.
    let mut got = response.body.as_bytes().to_vec();
    assert_eq!(got.len(), expected.len());
    let mut want = expected.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

/// A log directory made of symlinks to elsewhere says so in its headline, and
/// `--follow-symlinks` (ServiceOptions::follow_symlinks) serves it on purpose.
#[test]
fn a_logdir_of_symlinks_says_why_it_is_empty_and_can_be_followed() {
    let outside = tempfile::tempdir().unwrap();
    let real = outside.path().join("vm.xplane.pb.gz");
    std::fs::copy(profiles().join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"), &real).unwrap();
    let logdir = tempfile::tempdir().unwrap();
    let run = logdir.path().join("plugins/profile/linked");
    std::fs::create_dir_all(&run).unwrap();
    std::os::unix::fs::symlink(&real, run.join("vm.xplane.pb.gz")).unwrap();

    let service = service(logdir.path());
    assert_eq!(get(&service, "/runs").body_json().unwrap(), json!([]));
    let listing = get(&service, "/oxprof/api/runs").body_json().unwrap();
    let reason = listing["empty_reason"].as_str().unwrap();
    assert!(reason.contains("symlinks") && reason.contains("--follow-symlinks"), "{reason}");

    let options = ServiceOptions { follow_symlinks: true, ..ServiceOptions::new(logdir.path()) };
    let following = Service::new(options, Arc::new(NoAssets)).unwrap();
    assert_eq!(get(&following, "/runs").body_json().unwrap(), json!(["linked"]));
    assert_eq!(get(&following, "/data?run=linked&tag=overview_page&host=vm").status, 200);
}

/// One bound for every cache: switching runs, hosts and tools (OpStats tools, the trace
/// viewer and its LOD routes, the memory profile) keeps the session's bytes within
/// `cache_bytes` after every request, evicting the least recently used entries.
#[test]
fn the_session_cache_stays_within_its_bound_across_profiles_and_tools() {
    const BOUND: usize = 6 << 20;
    let service =
        Service::new(ServiceOptions { cache_bytes: BOUND, ..ServiceOptions::new(profiles()) }, Arc::new(NoAssets))
            .unwrap();
    let tools = ["overview_page", "framework_op_stats", "hlo_stats", "trace_viewer%40", "memory_profile"];
    let mut largest = 0;
    for _round in 0..2 {
        for (_, run) in PROFILES {
            for tool in tools {
                let response = get(&service, &format!("/data?run={}&tag={tool}&host=vm", enc(run)));
                assert_eq!(response.status, 200, "{run} {tool}: {}", response.body_text());
                let stats = service.cache_stats();
                assert!(stats.bytes <= BOUND, "{run} {tool}: {stats:?}");
                largest = largest.max(stats.bytes);
            }
            let window = get(&service, &format!("/oxprof/api/trace/window?run={}&host=vm&width=200", enc(run)));
            assert_eq!(window.status, 200);
            assert!(service.cache_stats().bytes <= BOUND);
        }
    }
    let stats = service.cache_stats();
    assert!(stats.evictions > 0, "the bound was reached: {stats:?}");
    assert!(largest > BOUND / 2, "the cache was used: {largest} bytes at most");
}

/// The progress route answers when no load runs (and in a process without a tally: the
/// CLI's tests), in the shape the UI reads.
#[test]
fn progress_route_says_no_load_runs() {
    let service = service(&profiles());
    let response = get(&service, "/oxprof/api/progress");
    assert_eq!(response.status, 200);
    let body: serde_json::Value = serde_json::from_str(&response.body_text()).unwrap();
    assert_eq!(body, serde_json::json!({"loads": 0, "what": "", "total_bytes": 0, "done_bytes": 0, "elapsed_ms": 0}));
}
