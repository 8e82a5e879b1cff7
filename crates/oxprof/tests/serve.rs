//! `oxprof serve` as a user runs it (the real binary, loopback, any free port): it stops
//! within seconds of SIGTERM whatever is in flight, and it survives a soak of random
//! valid requests, hostile parameters and profiles changing under it — no hang, no
//! crash, memory under a bound. `OXPROF_SOAK_SECONDS` sets the soak's length (default 40).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// A running `oxprof serve` (killed when dropped).
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(root: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
            // The persistent analysis cache of these tests, not the user's.
            .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
            .arg("serve")
            .arg(root)
            .args(["--port", "0", "--quiet"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut seen = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            let mut byte = [0u8; 1];
            if stdout.read(&mut byte).unwrap_or(0) == 0 || Instant::now() > deadline {
                panic!("oxprof serve did not print its URL: {}", String::from_utf8_lossy(&seen));
            }
            seen.push(byte[0]);
            let text = String::from_utf8_lossy(&seen);
            if let Some(at) = text.find("http://")
                && let Some(end) = text[at + 7..].find('/')
            {
                break text[at + 7..at + 7 + end].parse().unwrap();
            }
        };
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        Server { child, addr }
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Peak and current resident memory in kB (`VmHWM`, `VmRSS`).
    fn memory_kb(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    fn token(&self) -> String {
        let page = request(self.addr, "GET", "/", &[], Duration::from_secs(30)).unwrap().1;
        let at = page.find("name=\"oxprof-token\" content=\"").expect("token in the page") + 29;
        page[at..at + 32].to_string()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request; `None` when no complete answer came within `timeout`.
fn request(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, timeout).ok()?;
    stream.set_read_timeout(Some(timeout)).ok()?;
    stream.set_write_timeout(Some(timeout)).ok()?;
    let mut head = format!("{method} {target} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let status = String::from_utf8_lossy(&raw[..split]).split(' ').nth(1)?.parse().ok()?;
    Some((status, String::from_utf8_lossy(&raw[split + 4..]).into_owned()))
}

fn copy_profile(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

fn refkit(name: &str) -> PathBuf {
    let dir = repo_root().join("testdata/profiles").join(name);
    let run = std::fs::read_dir(dir.join("plugins/profile")).unwrap().next().unwrap().unwrap().path();
    run.join("vm.xplane.pb.gz")
}

/// A plain (memory-mapped, ≥ 1 MiB) profile: the case where a file truncated while it is
/// read used to kill the server (SIGBUS).
fn write_plain_profile(path: &Path) {
    use oxprof_testkit::XSpaceBuilder;
    let space = XSpaceBuilder::new().plane("/host:CPU", |p| {
        for line in 0..4 {
            p.line(line, &format!("thread {line}"), 0, |l| {
                for i in 0..20_000i64 {
                    l.event(if i % 2 == 0 { "step" } else { "op" }, i * 1_000_000, 500_000).stat("step_num", i);
                }
            });
        }
    });
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let bytes = space.to_bytes();
    assert!(bytes.len() > 1 << 20, "{} bytes", bytes.len());
    std::fs::write(path, bytes).unwrap();
}

/// A profiler port that accepts connections and never answers.
fn silent_peer() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepting = listener.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in accepting.incoming().flatten() {
            held.push(conn);
        }
    });
    (listener, addr)
}

fn sigterm(child: &Child) {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
}

#[test]
fn sigterm_stops_the_server_within_seconds_even_with_work_in_flight() {
    let logdir = tempfile::tempdir().unwrap();
    copy_profile(&refkit("jax_train"), &logdir.path().join("plugins/profile/r/vm.xplane.pb.gz"));
    let mut server = Server::start(logdir.path(), &[]);
    let token = server.token();
    let (_peer, peer) = silent_peer();
    let addr = server.addr;
    // A capture of a profiler that never answers: in flight for a long time.
    let target = format!("/capture_profile?service_addr={peer}&duration=60000&session_id=hang");
    let in_flight = std::thread::spawn(move || {
        request(addr, "POST", &target, &[("X-Oxprof-Token", &token)], Duration::from_secs(90))
    });
    std::thread::sleep(Duration::from_millis(800));
    assert!(server.alive());
    let asked = Instant::now();
    sigterm(&server.child);
    let deadline = asked + Duration::from_secs(5);
    while server.alive() {
        assert!(Instant::now() < deadline, "oxprof serve still running 5 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("stopped {:?} after SIGTERM", asked.elapsed());
    let _ = in_flight.join();
}

/// The response head of `GET target` (status line and headers), lowercase.
fn response_head(addr: SocketAddr, target: &str) -> String {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(30)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    text.split("\r\n\r\n").next().unwrap_or_default().to_string()
}

/// `--frame-ancestors SOURCE` lets those pages frame the UI (CSP `frame-ancestors`, no
/// `X-Frame-Options`); without it none may; a source that would break the header is
/// refused before the server starts, naming the flag. (Before: no such option, the UI
/// could not be framed by TensorBoard's tab.)
#[test]
fn frame_ancestors_lets_the_named_pages_frame_the_ui() {
    let logdir = tempfile::tempdir().unwrap();
    copy_profile(&refkit("jax_train"), &logdir.path().join("plugins/profile/r/vm.xplane.pb.gz"));

    let plain = Server::start(logdir.path(), &[]);
    let head = response_head(plain.addr, "/");
    assert!(head.contains("frame-ancestors 'none'"), "{head}");
    assert!(head.contains("x-frame-options: deny"), "{head}");

    let framed =
        Server::start(logdir.path(), &["--frame-ancestors", "'self'", "--frame-ancestors", "http://127.0.0.1:6006"]);
    for target in ["/", "/oxprof/api/runs"] {
        let head = response_head(framed.addr, target);
        assert!(head.starts_with("http/1.1 200"), "{head}");
        let csp = head.lines().find(|l| l.starts_with("content-security-policy:")).unwrap_or_default();
        assert!(csp.ends_with("frame-ancestors 'self' http://127.0.0.1:6006"), "{csp}");
        assert!(!head.contains("x-frame-options"), "{head}");
    }

    let refused = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .arg("serve")
        .arg(logdir.path())
        .args(["--port", "0", "--frame-ancestors", "'self'; script-src *"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--frame-ancestors") && stderr.contains("not a CSP frame-ancestors source"), "{stderr}");
    assert!(refused.stdout.is_empty(), "{}", String::from_utf8_lossy(&refused.stdout));
}

/// Hundreds of captures of a profiler that never answers: a few run, the rest are refused
/// at once (429), and every other route keeps answering meanwhile.
#[test]
fn a_flood_of_hanging_captures_does_not_freeze_the_server() {
    let logdir = tempfile::tempdir().unwrap();
    copy_profile(&refkit("jax_train"), &logdir.path().join("plugins/profile/r/vm.xplane.pb.gz"));
    let server = Server::start(logdir.path(), &[]);
    let token = server.token();
    let (_peer, peer) = silent_peer();
    let addr = server.addr;
    let statuses = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for i in 0..300 {
            let (token, statuses) = (&token, &statuses);
            s.spawn(move || {
                let target = format!("/capture_profile?service_addr={peer}&duration=20000&session_id=flood{i}");
                let answer = request(addr, "POST", &target, &[("X-Oxprof-Token", token)], Duration::from_secs(120));
                statuses.lock().unwrap().push(answer.map(|(status, _)| status));
            });
        }
        // While they hang, the server answers other requests at once.
        std::thread::sleep(Duration::from_millis(500));
        for _ in 0..5 {
            let asked = Instant::now();
            let (status, _) = request(addr, "GET", "/data/plugin/profile/runs", &[], Duration::from_secs(5)).unwrap();
            assert_eq!(status, 200);
            assert!(asked.elapsed() < Duration::from_secs(2), "/runs took {:?} during the flood", asked.elapsed());
            std::thread::sleep(Duration::from_millis(200));
        }
        let refused = statuses.lock().unwrap().iter().filter(|s| **s == Some(429)).count();
        assert!(refused >= 250, "{refused} of 300 refused so far");
    });
}

/// A small deterministic generator (the same soak on every run).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const TOOLS: [&str; 14] = [
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "kernel_stats",
    "pod_viewer",
    "op_profile",
    "hlo_stats",
    "roofline_model",
    "trace_viewer%40",
    "trace_viewer",
    "memory_profile",
    "memory_viewer",
    "tf_data_bottleneck_analysis",
    "graph_viewer",
];

const HOSTILE: [&str; 12] = [
    "&resolution=18446744073709551615",
    "&start_time_ms=-1e308&end_time_ms=1e308",
    "&exact_limit=18446744073709551615&width=4294967295",
    "&limit=99999999999999999999",
    "&session_path=..%2F..%2F..%2Fetc",
    "&run_path=%2Fetc",
    "&module_name=..%2F..%2Fx",
    "&group_by=%00",
    "&event_name=%FF%FE",
    "&search_prefix=%",
    "&tracks=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,99999999999",
    "&type=pb&node_name=%25%25%25",
];

#[test]
fn soak_random_requests_hostile_parameters_and_changing_files() {
    let seconds: u64 = std::env::var("OXPROF_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(40);
    let logdir = tempfile::tempdir().unwrap();
    let root = logdir.path();
    let profile = |run: &str, host: &str| root.join(format!("plugins/profile/{run}/{host}.xplane.pb"));
    copy_profile(&refkit("tf_custom_loop"), &profile("a", "h1").with_extension("pb.gz"));
    copy_profile(&refkit("jax_train"), &profile("a", "h2").with_extension("pb.gz"));
    copy_profile(&refkit("tf_memory"), &profile("b", "vm").with_extension("pb.gz"));
    write_plain_profile(&profile("c", "big"));
    // Bombs: a gzip file inflating to 1 GiB, a million empty lines, oversized compressed strings.
    {
        use oxprof_testkit::bombs;
        let gz = profile("d", "gzip").with_extension("pb.gz");
        std::fs::create_dir_all(gz.parent().unwrap()).unwrap();
        bombs::gzip_of_zeros(1 << 30, std::fs::File::create(&gz).unwrap()).unwrap();
        std::fs::write(profile("d", "lines"), bombs::empty_lines(1_000_000)).unwrap();
        std::fs::write(profile("d", "strings"), bombs::compressed_strings(4, 256 << 20)).unwrap();
    }
    let gpu = repo_root().join("../shared/testdata/external/openxla-xprof/demo/plugins/profile/GPU-multi-worker");
    if gpu.is_dir() {
        for host in ["34.83.195.179_6003", "34.83.195.180_6003"] {
            copy_profile(&gpu.join(format!("{host}.xplane.pb")), &profile("gpu", host));
        }
    }
    const CACHE_MB: u64 = 64;
    let mut server = Server::start(root, &["--cache-mb", &CACHE_MB.to_string()]);
    let token = server.token();
    let addr = server.addr;
    let stop_at = Instant::now() + Duration::from_secs(seconds);
    const CLIENTS: usize = 6;
    const REQUEST_BOUND: Duration = Duration::from_secs(60);

    let results: Vec<(usize, usize)> = std::thread::scope(|s| {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let token = token.clone();
                s.spawn(move || {
                    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ ((c as u64 + 1) * 0x9E37_79B9));
                    let (mut sent, mut errors) = (0, 0);
                    while Instant::now() < stop_at {
                        let run = rng.pick(&["a", "b", "c", "d", "gpu", "nope", "a%2F..%2F.."]);
                        let host = rng.pick(&[
                            "h1",
                            "h2",
                            "vm",
                            "big",
                            "gzip",
                            "lines",
                            "strings",
                            "ALL_HOSTS",
                            "34.83.195.179_6003",
                            "x%00",
                        ]);
                        let tool = rng.pick(&TOOLS);
                        let mut target = match rng.below(10) {
                            0 => format!("/oxprof/api/trace/window?run={run}&host={host}&width=800"),
                            1 => format!("/oxprof/api/trace/search?run={run}&host={host}&prefix=st"),
                            2 => format!("/oxprof/api/trace/aggregate?run={run}&host={host}"),
                            3 => format!("/hosts?run={run}&tag={tool}"),
                            4 => format!("/run_tools?run={run}"),
                            5 => "/runs?".to_string(),
                            _ => format!("/data?run={run}&tag={tool}&host={host}"),
                        };
                        if rng.below(4) == 0 {
                            target.push_str(rng.pick(&HOSTILE));
                        }
                        if rng.below(8) == 0 {
                            target.push_str("&use_saved_result=false");
                        }
                        let (method, headers): (&str, Vec<(&str, &str)>) = match rng.below(20) {
                            // DNS rebinding: a foreign Host is refused.
                            0 => ("GET", vec![("Host", "evil.example:80")]),
                            // Another site's page.
                            1 => ("GET", vec![("Sec-Fetch-Site", "cross-site")]),
                            // Captures: without a token, to a foreign target, to nothing.
                            2 => {
                                target = "/capture_profile?service_addr=10.9.8.7:6009&duration=100".into();
                                ("POST", vec![("X-Oxprof-Token", token.as_str())])
                            }
                            3 => {
                                target = "/capture_profile?service_addr=127.0.0.1:1&duration=100&num_retry=0".into();
                                ("POST", vec![])
                            }
                            _ => ("GET", vec![]),
                        };
                        let started = Instant::now();
                        match request(addr, method, &target, &headers, REQUEST_BOUND) {
                            Some((status, body)) => {
                                assert!(
                                    status != 500 || !body.contains("panicked"),
                                    "{method} {target}: {status} {body}"
                                );
                                assert!(!body.contains(root.to_str().unwrap()), "{target} shows the root path: {body}");
                                match headers.first() {
                                    Some(("Host", _)) | Some(("Sec-Fetch-Site", _)) => {
                                        assert_eq!(status, 403, "{target} with {headers:?}")
                                    }
                                    _ if method == "POST" => assert!(status == 403, "{target}: {status} {body}"),
                                    _ => {}
                                }
                                errors += usize::from(status >= 500);
                            }
                            None => panic!("{method} {target}: no answer within {:?}", started.elapsed()),
                        }
                        sent += 1;
                    }
                    (sent, errors)
                })
            })
            .collect();
        // Meanwhile, profiles change under the server: truncated in place, rewritten,
        // replaced by garbage, restored.
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let big = profile("c", "big");
        let pristine = std::fs::read(&big).unwrap();
        let mut peak_kb = 0;
        while Instant::now() < stop_at {
            match rng.below(4) {
                0 => {
                    let file = std::fs::OpenOptions::new().write(true).open(&big).unwrap();
                    file.set_len((pristine.len() / (2 + rng.below(8))) as u64).unwrap();
                }
                1 => std::fs::write(&big, &pristine).unwrap(),
                2 => std::fs::write(&big, vec![0x0a; 1 + rng.below(3 << 20)]).unwrap(),
                _ => {
                    // Rewritten in place: the same inode, other bytes.
                    let mut file = std::fs::OpenOptions::new().write(true).truncate(true).open(&big).unwrap();
                    file.write_all(&pristine[..pristine.len() / 2]).unwrap();
                    file.write_all(&pristine[pristine.len() / 2..]).unwrap();
                }
            }
            std::thread::sleep(Duration::from_millis(50 + rng.below(200) as u64));
            assert!(server.alive(), "the server died");
            peak_kb = peak_kb.max(server.memory_kb().1);
        }
        let results = clients.into_iter().map(|c| c.join().unwrap()).collect();
        eprintln!("peak RSS seen {} MB", peak_kb / 1024);
        results
    });
    assert!(server.alive(), "the server died");
    let sent: usize = results.iter().map(|r| r.0).sum();
    let (hwm_kb, _) = server.memory_kb();
    eprintln!("soak: {sent} requests in {seconds} s, peak RSS {} MB", hwm_kb / 1024);
    // The cache bound plus the working sets of the requests in flight (the bombs are
    // refused within their budgets).
    assert!(hwm_kb < 512 * 1024, "peak RSS {} MB", hwm_kb / 1024);
    // Each bomb is refused with the budget it hits (413), without taking the server down.
    for host in ["gzip", "lines", "strings"] {
        let (status, body) =
            request(addr, "GET", &format!("/data?run=d&tag=overview_page&host={host}"), &[], REQUEST_BOUND).unwrap();
        assert_eq!(status, 413, "{host}: {body}");
    }
    // Still answering normally.
    let (status, _) = request(addr, "GET", "/data?run=a&tag=overview_page&host=h1", &[], REQUEST_BOUND).unwrap();
    assert_eq!(status, 200);
}
