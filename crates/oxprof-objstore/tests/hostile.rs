//! A hostile HTTP/WebDAV server on 127.0.0.1 against [`RemoteStore`]: answers that lie
//! about their length or never end (an object's, an error's), a PROPFIND that never ends, directory trees as wide or
//! as deep as a server cares to make them, redirects to another origin. Each case ends in a
//! result or one line of error, with bounded memory and bounded bytes taken from the server.
//!
//! The client runs in a child process (this test binary again, test `child`) watched by its
//! parent: killed past [`RSS_KILL`] of resident memory or [`CHILD_DEADLINE`], and its peak
//! (`VmHWM`) must stay under [`RSS_BUDGET`]. The server is plain threads over
//! `std::net` (each answer written by hand, as a hostile server would), bounded in what it
//! sends ([`MAX_ENDLESS`]) and stopped when the test ends.
//!
//! For measuring a build of the CLI by hand, `serve_for_a_while` (ignored) serves one case
//! (`OXPROF_HOSTILE_SERVE=<case>`) for a minute and prints its URL.

use oxprof_format::{LoadLimits, ProfileStore};
use oxprof_objstore::{RemoteOptions, RemoteStore};
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Resident memory the client may reach in any case (the issue's bound).
const RSS_BUDGET: u64 = 512 << 20;
/// Resident memory at which the watchdog kills the client.
const RSS_KILL: u64 = 1 << 30;
/// How long a client may take before it is killed (a safety net, not an assertion).
const CHILD_DEADLINE: Duration = Duration::from_secs(120);
/// Most bytes one endless answer sends before the server closes it.
const MAX_ENDLESS: u64 = 2 << 30;

/// The hostile server.
mod hostile {
    use super::*;

    pub use oxprof_testkit::http::Request;
    use oxprof_testkit::http::read_request;

    /// An answer.
    pub enum Reply {
        /// A status, headers and a body (with its true `Content-Length` unless the headers
        /// give one); the connection stays open.
        Full { status: u16, headers: Vec<(String, String)>, body: Vec<u8> },
        /// A status and headers, then `body`, then `fill` again and again until the client
        /// goes away or [`MAX_ENDLESS`] bytes are sent; then the connection closes.
        Endless { status: u16, headers: Vec<(String, String)>, body: Vec<u8>, fill: Vec<u8> },
    }

    pub type Respond = dyn Fn(&Request, u16) -> Reply + Send + Sync;

    /// A server on a loopback port, answering with `respond(request, its own port)`.
    pub struct Server {
        pub port: u16,
        sent: Arc<AtomicU64>,
        requests: Arc<AtomicU64>,
        stop: Arc<AtomicBool>,
    }

    impl Server {
        pub fn start(respond: impl Fn(&Request, u16) -> Reply + Send + Sync + 'static) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let port = listener.local_addr().unwrap().port();
            let (sent, requests, stop) = (Arc::default(), Arc::default(), Arc::new(AtomicBool::new(false)));
            let server =
                Server { port, sent: Arc::clone(&sent), requests: Arc::clone(&requests), stop: Arc::clone(&stop) };
            let respond: Arc<Respond> = Arc::new(respond);
            std::thread::spawn(move || {
                // Stops with the test, or after ten minutes whatever happens.
                let until = Instant::now() + Duration::from_secs(600);
                while !stop.load(Ordering::Relaxed) && Instant::now() < until {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (respond, sent, requests, stop) =
                                (Arc::clone(&respond), Arc::clone(&sent), Arc::clone(&requests), Arc::clone(&stop));
                            std::thread::spawn(move || {
                                let _ = serve(stream, port, &*respond, &sent, &requests, &stop);
                            });
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            });
            server
        }

        pub fn url(&self, path: &str) -> String {
            format!("http://127.0.0.1:{}{path}", self.port)
        }

        /// Body bytes written so far (what the kernel took; a closed client stops it).
        pub fn sent(&self) -> u64 {
            self.sent.load(Ordering::Relaxed)
        }

        pub fn requests(&self) -> u64 {
            self.requests.load(Ordering::Relaxed)
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn serve(
        stream: TcpStream,
        port: u16,
        respond: &Respond,
        sent: &AtomicU64,
        requests: &AtomicU64,
        stop: &AtomicBool,
    ) -> std::io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        let mut reader = BufReader::new(stream.try_clone()?);
        let mut out = stream;
        while let Some(request) = read_request(&mut reader)? {
            if let Some(n) = request.header("content-length").and_then(|n| n.parse::<u64>().ok()) {
                std::io::copy(&mut (&mut reader).take(n), &mut std::io::sink())?;
            }
            requests.fetch_add(1, Ordering::Relaxed);
            let head = |status: u16, headers: &[(String, String)], length: Option<usize>, close: bool| {
                let mut head = format!("HTTP/1.1 {status} Hostile\r\n");
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                if let Some(length) =
                    length.filter(|_| !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("content-length")))
                {
                    head.push_str(&format!("Content-Length: {length}\r\n"));
                }
                if close {
                    head.push_str("Connection: close\r\n");
                }
                head.push_str("\r\n");
                head
            };
            match respond(&request, port) {
                Reply::Full { status, headers, body } => {
                    out.write_all(head(status, &headers, Some(body.len()), false).as_bytes())?;
                    if request.method != "HEAD" {
                        out.write_all(&body)?;
                        sent.fetch_add(body.len() as u64, Ordering::Relaxed);
                    }
                }
                Reply::Endless { status, headers, body, fill } => {
                    out.write_all(head(status, &headers, None, true).as_bytes())?;
                    out.write_all(&body)?;
                    let mut total = body.len() as u64;
                    sent.fetch_add(total, Ordering::Relaxed);
                    while total < MAX_ENDLESS && !stop.load(Ordering::Relaxed) {
                        out.write_all(&fill)?;
                        total += fill.len() as u64;
                        sent.fetch_add(fill.len() as u64, Ordering::Relaxed);
                    }
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

use hostile::{Reply, Request, Server};

fn header(name: &str, value: impl ToString) -> (String, String) {
    (name.to_string(), value.to_string())
}

/// A one-plane profile (`/host:CPU  thread  [op 0..10)`).
fn profile() -> Vec<u8> {
    oxprof_testkit::fixtures::one_op_profile()
}

/// An honest answer to a HEAD: the object's size and ETag.
fn head_of(size: u64) -> Reply {
    Reply::Full {
        status: 200,
        headers: vec![
            header("Content-Length", size),
            header("ETag", "\"e1\""),
            header("Last-Modified", "Sat, 01 Jan 2022 00:00:00 GMT"),
        ],
        body: Vec::new(),
    }
}

fn not_found() -> Reply {
    Reply::Full { status: 404, headers: Vec::new(), body: b"no".to_vec() }
}

/// A PROPFIND answer: `(href, is a directory)` entries (files 1 KB).
fn multistatus(entries: &[(String, bool)]) -> Vec<u8> {
    let mut xml = String::from(r#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#);
    for (href, dir) in entries {
        xml.push_str(&entry(href, *dir));
    }
    xml.push_str("</multistatus>");
    xml.into_bytes()
}

fn entry(href: &str, dir: bool) -> String {
    let kind = if dir {
        "<resourcetype><collection/></resourcetype>".to_string()
    } else {
        "<resourcetype/><getcontentlength>1000</getcontentlength>".to_string()
    };
    format!(
        "<response><href>{href}</href><propstat><prop><getlastmodified>Sat, 01 Jan 2022 00:00:00 GMT</getlastmodified>\
         {kind}</prop><status>HTTP/1.1 200 OK</status></propstat></response>"
    )
}

fn dav(body: Vec<u8>) -> Reply {
    Reply::Full { status: 207, headers: vec![header("Content-Type", "application/xml")], body }
}

/// What the client in the child process did.
#[derive(Debug)]
struct Outcome {
    /// `Ok(summary)` or `Err(message)`; `None` when it died or was killed first.
    result: Option<Result<String, String>>,
    /// Its peak resident memory (the child's `VmHWM`, or the watchdog's highest reading).
    peak: u64,
    /// Why the watchdog killed it, if it did.
    killed: Option<String>,
    /// Everything it printed to stderr (for failures).
    stderr: String,
}

/// Runs `op` (`discover`, or `load` of `url`) in a child process with `env`, under the
/// watchdog.
fn in_child(op: &str, url: &str, env: &[(&str, &str)]) -> Outcome {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("OXPROF_HOSTILE_CHILD", op)
        .env("OXPROF_HOSTILE_URL", url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let pid = child.id();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let (mut watched_peak, mut killed) = (0u64, None);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| status_kb(&s, "VmRSS:"))
            .unwrap_or(0);
        watched_peak = watched_peak.max(rss);
        if rss > RSS_KILL {
            killed = Some(format!("resident memory {} MiB", rss >> 20));
        } else if started.elapsed() > CHILD_DEADLINE {
            killed = Some(format!("still running after {CHILD_DEADLINE:?}"));
        }
        if killed.is_some() {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let result = stdout.lines().find_map(|line| {
        let rest = line.strip_prefix("OUTCOME ")?;
        Some(match rest.split_once(' ') {
            Some(("ok", summary)) => Ok(summary.to_string()),
            Some((_, message)) => Err(message.to_string()),
            None => Err(String::new()),
        })
    });
    let reported = stdout.lines().find_map(|l| l.strip_prefix("PEAK ")?.parse::<u64>().ok()).unwrap_or(0);
    Outcome { result, peak: reported.max(watched_peak), killed, stderr }
}

/// A `kB` field of `/proc/…/status`, in bytes.
fn status_kb(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok().map(|kb| kb << 10)
}

/// The client side, when this binary runs as a child of [`in_child`]; nothing otherwise.
#[test]
fn child() {
    let (Ok(op), Ok(url)) = (std::env::var("OXPROF_HOSTILE_CHILD"), std::env::var("OXPROF_HOSTILE_URL")) else {
        return;
    };
    let result =
        RemoteStore::open(&url, &RemoteOptions::default()).map_err(|e| e.to_string()).and_then(|store| {
            match op.as_str() {
                "discover" => store
                    .discover(None)
                    .map(|d| {
                        format!("{} runs, {} hosts", d.runs.len(), d.runs.iter().map(|r| r.hosts.len()).sum::<usize>())
                    })
                    .map_err(|e| e.to_string()),
                _ => store
                    .load(Path::new(&url), &LoadLimits::default(), &|_| true)
                    .map(|space| format!("{} planes", space.planes.len()))
                    .map_err(|e| e.to_string()),
            }
        });
    // On lines of their own (libtest has written `test child ... ` before them).
    match result {
        Ok(summary) => println!("\nOUTCOME ok {summary}"),
        // Newlines shown as such: the parent checks there are none.
        Err(message) => println!("\nOUTCOME err {}", message.replace('\n', "\\n")),
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    println!("PEAK {}", status_kb(&status, "VmHWM:").unwrap_or(0));
}

/// The outcome's error: one line, within the memory budget.
fn one_line_error(outcome: &Outcome) -> String {
    let message = match &outcome.result {
        Some(Err(message)) => message.clone(),
        other => panic!("expected an error, got {other:?} (killed: {:?}); stderr:\n{}", outcome.killed, outcome.stderr),
    };
    assert!(!message.contains("\\n") && !message.is_empty(), "not one line: {message}");
    within_budget(outcome);
    message
}

/// The outcome's success, within the memory budget.
fn success(outcome: &Outcome) -> String {
    let summary = match &outcome.result {
        Some(Ok(summary)) => summary.clone(),
        other => panic!("expected success, got {other:?} (killed: {:?}); stderr:\n{}", outcome.killed, outcome.stderr),
    };
    within_budget(outcome);
    summary
}

fn within_budget(outcome: &Outcome) {
    assert!(outcome.killed.is_none(), "killed: {:?}", outcome.killed);
    assert!(outcome.peak < RSS_BUDGET, "peak resident memory {} MiB", outcome.peak >> 20);
}

/// Bytes the server may have sent beyond what the client asked for: what loopback socket
/// buffers take before a client that stopped reading closes.
const SLACK: u64 = 32 << 20;

/// A server that ignores `Range` and answers every GET with the whole object under a
/// `Content-Length` of 64 GiB, then goes on sending: the object is read, and nothing past it.
#[test]
fn a_get_that_ignores_range_and_states_64_gib_reads_only_the_object() {
    let bytes = profile();
    let size = bytes.len() as u64;
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "HEAD" => head_of(size),
        _ => Reply::Endless {
            status: 200,
            headers: vec![header("Content-Length", 64u64 << 30), header("ETag", "\"e1\"")],
            body: bytes.clone(),
            fill: vec![0; 64 << 10],
        },
    });
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[]);
    assert_eq!(success(&outcome), "1 planes");
    assert!(server.sent() < size + SLACK, "the server sent {} MiB", server.sent() >> 20);
}

/// A 206 with the range asked for under a `Content-Length` of 64 GiB, then more and more:
/// read to the range's end.
#[test]
fn a_206_that_goes_on_past_its_range_is_read_to_the_range() {
    let bytes = profile();
    let size = bytes.len() as u64;
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "HEAD" => head_of(size),
        _ => Reply::Endless {
            status: 206,
            headers: vec![
                header("Content-Range", format!("bytes 0-{}/{size}", size - 1)),
                header("Content-Length", 64u64 << 30),
                header("ETag", "\"e1\""),
            ],
            body: bytes.clone(),
            fill: vec![0; 64 << 10],
        },
    });
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[]);
    assert_eq!(success(&outcome), "1 planes");
    assert!(server.sent() < size + SLACK, "the server sent {} MiB", server.sent() >> 20);
}

/// An error answer (403) without a length that never ends: read to the budget of answers
/// that are not an object's bytes, then one line says so.
#[test]
fn an_error_body_without_length_that_never_ends_stops_at_its_budget() {
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "HEAD" => head_of(1 << 20),
        _ => Reply::Endless { status: 403, headers: Vec::new(), body: Vec::new(), fill: vec![b'x'; 64 << 10] },
    });
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[]);
    let message = one_line_error(&outcome);
    assert!(message.contains("/logs/h.xplane.pb") && message.contains("larger than 16 MiB"), "{message}");
    assert!(server.sent() < (16 << 20) + SLACK, "the server sent {} MiB", server.sent() >> 20);
}

/// A PROPFIND whose answer never ends: cut at the listing budget, one line naming it.
#[test]
fn an_endless_propfind_stops_at_the_listing_budget() {
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "PROPFIND" => Reply::Endless {
            status: 207,
            headers: vec![header("Content-Type", "application/xml")],
            body: br#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#.to_vec(),
            fill: (0..64).map(|i| entry(&format!("/logs/f{i}.xplane.pb"), false)).collect::<String>().into_bytes(),
        },
        _ => not_found(),
    });
    let outcome = in_child("discover", &server.url("/logs"), &[]);
    let message = one_line_error(&outcome);
    assert!(message.contains("larger than 16 MiB") && message.contains("OXPROF_OBJSTORE_MAX_LIST_MB"), "{message}");
    assert!(server.sent() < (16 << 20) + SLACK, "the server sent {} MiB", server.sent() >> 20);
}

/// A WebDAV server whose every directory holds 300 more.
fn fan_out_server() -> Server {
    Server::start(move |request: &Request, _| match request.method.as_str() {
        "PROPFIND" => {
            let dir = request.path.trim_end_matches('/').to_string();
            let mut entries = vec![(format!("{dir}/"), true)];
            entries.extend((0..300).map(|i| (format!("{dir}/d{i}/"), true)));
            dav(multistatus(&entries))
        }
        _ => not_found(),
    })
}

/// Every directory holds 300 more: the walk stops at the entry budget.
#[test]
fn a_wide_fan_out_stops_at_the_entry_budget() {
    let server = fan_out_server();
    let outcome = in_child("discover", &server.url("/logs"), &[("OXPROF_OBJSTORE_MAX_LISTED", "20000")]);
    let message = one_line_error(&outcome);
    assert!(message.contains("more than 20000 entries") && message.contains("OXPROF_OBJSTORE_MAX_LISTED"), "{message}");
    // Levels 1 and 2 (300 directories listed), and no more than the budget's worth of level 3.
    assert!(server.requests() < 1 + 300 + 20_000 / 300 + 16, "{} PROPFINDs", server.requests());
}

/// The same fan-out under the default entry budget (a million entries, thousands of
/// PROPFINDs): the walk ends at its time budget instead of outliving the request.
#[test]
fn a_wide_fan_out_under_the_default_entry_budget_ends_at_the_time_budget() {
    let server = fan_out_server();
    let outcome = in_child("discover", &server.url("/logs"), &[("OXPROF_OBJSTORE_MAX_LIST_SECONDS", "2")]);
    let message = one_line_error(&outcome);
    assert!(
        message.contains("listing took more than 2 s") && message.contains("OXPROF_OBJSTORE_MAX_LIST_SECONDS"),
        "{message}"
    );
}

/// Each directory holds one more, without end: the walk stops at the depth budget instead of
/// answering as if the tree ended there.
#[test]
fn a_deep_chain_of_directories_stops_at_the_depth_budget() {
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "PROPFIND" => {
            let dir = request.path.trim_end_matches('/').to_string();
            dav(multistatus(&[(format!("{dir}/"), true), (format!("{dir}/d/"), true)]))
        }
        _ => not_found(),
    });
    let outcome = in_child("discover", &server.url("/logs"), &[]);
    let message = one_line_error(&outcome);
    assert!(message.contains("more than 12 levels") && message.contains("OXPROF_OBJSTORE_MAX_DEPTH"), "{message}");
    assert!(server.requests() <= 13, "{} PROPFINDs", server.requests());
}

/// A tree deeper than the budget is listed when the budget is raised.
#[test]
fn a_deep_tree_is_listed_within_a_raised_depth_budget() {
    let server = Server::start(move |request: &Request, _| match request.method.as_str() {
        "PROPFIND" => {
            let dir = request.path.trim_end_matches('/').to_string();
            let depth = dir.matches("/d").count();
            if depth < 14 {
                dav(multistatus(&[(format!("{dir}/"), true), (format!("{dir}/d/"), true)]))
            } else {
                // A PyTorch trace: a run at any depth.
                dav(multistatus(&[(format!("{dir}/"), true), (format!("{dir}/w.pt.trace.json"), false)]))
            }
        }
        _ => not_found(),
    });
    let outcome = in_child("discover", &server.url("/logs"), &[("OXPROF_OBJSTORE_MAX_DEPTH", "20")]);
    assert_eq!(success(&outcome), "1 runs, 1 hosts");
}

/// A profile served honestly by a second server (another origin): counts its requests.
fn elsewhere() -> Server {
    let bytes = profile();
    Server::start(move |request: &Request, _| match request.method.as_str() {
        "HEAD" => head_of(bytes.len() as u64),
        "GET" => Reply::Full { status: 200, headers: vec![header("ETag", "\"e1\"")], body: bytes.clone() },
        _ => not_found(),
    })
}

/// A server that redirects every request to the same path on `port`.
fn redirecting_to(port: u16) -> Server {
    Server::start(move |request: &Request, _| Reply::Full {
        status: 302,
        headers: vec![header("Location", format!("http://127.0.0.1:{port}{}", request.path))],
        body: Vec::new(),
    })
}

/// A redirect to another origin is not followed: not one request reaches it.
#[test]
fn a_redirect_to_another_origin_is_refused() {
    let other = elsewhere();
    let server = redirecting_to(other.port);
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[]);
    let message = one_line_error(&outcome);
    let origin = format!("http://127.0.0.1:{}", other.port);
    assert!(message.contains(&origin) && message.contains("OXPROF_OBJSTORE_ALLOW_REDIRECTS"), "{message}");
    assert_eq!(other.requests(), 0);
    // Listing too.
    let outcome = in_child("discover", &server.url("/logs"), &[]);
    assert!(one_line_error(&outcome).contains(&origin));
    assert_eq!(other.requests(), 0);
}

/// A redirect to an origin the user allowed is followed.
#[test]
fn a_redirect_to_an_allowed_origin_is_followed() {
    let other = elsewhere();
    let server = redirecting_to(other.port);
    let origin = format!("http://127.0.0.1:{}", other.port);
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[("OXPROF_OBJSTORE_ALLOW_REDIRECTS", &origin)]);
    assert_eq!(success(&outcome), "1 planes");
    assert!(other.requests() > 0);
}

/// A redirect within the server's own origin is followed.
#[test]
fn a_redirect_within_the_origin_is_followed() {
    let bytes = profile();
    let server = Server::start(move |request: &Request, port| match (request.method.as_str(), request.path.as_str()) {
        ("HEAD", "/real/h.xplane.pb") => head_of(bytes.len() as u64),
        ("GET", "/real/h.xplane.pb") => Reply::Full {
            status: if request.header("range").is_some() { 206 } else { 200 },
            headers: vec![
                header("ETag", "\"e1\""),
                header("Content-Range", format!("bytes 0-{}/{}", bytes.len() - 1, bytes.len())),
            ],
            body: bytes.clone(),
        },
        _ => Reply::Full {
            status: 307,
            headers: vec![header("Location", format!("http://127.0.0.1:{port}/real/h.xplane.pb"))],
            body: Vec::new(),
        },
    });
    let outcome = in_child("load", &server.url("/logs/h.xplane.pb"), &[]);
    assert_eq!(success(&outcome), "1 planes");
}

/// A password or a signature in the logdir's URL is in no error.
#[test]
fn secrets_in_the_url_are_in_no_error() {
    let server = Server::start(|_: &Request, _| not_found());
    let url = format!("http://alice:s3cret@127.0.0.1:{}/logs/h.xplane.pb?sig=t0ken&X-Amz-Signature=f00", server.port);
    let outcome = in_child("load", &url, &[]);
    let message = one_line_error(&outcome);
    for secret in ["s3cret", "t0ken", "f00"] {
        assert!(!message.contains(secret), "{secret} in {message}");
    }
    assert!(message.contains(&format!("127.0.0.1:{}/logs/h.xplane.pb", server.port)), "{message}");
    let url = format!("http://alice:s3cret@127.0.0.1:{}/logs?token=t0ken", server.port);
    let message = one_line_error(&in_child("discover", &url, &[]));
    assert!(!message.contains("s3cret") && !message.contains("t0ken"), "{message}");
}

/// Serves one case for a minute, for measuring a build of the CLI by hand:
/// `OXPROF_HOSTILE_SERVE=<case> cargo test -p oxprof-objstore --test hostile -- --ignored --exact serve_for_a_while --nocapture`
/// (cases: lying-length, long-206, endless-error, endless-propfind, wide, deep, redirect).
#[test]
#[ignore]
fn serve_for_a_while() {
    let Ok(case) = std::env::var("OXPROF_HOSTILE_SERVE") else { return };
    let bytes = profile();
    let size = bytes.len() as u64;
    let other = elsewhere();
    let other_port = other.port;
    let server = Server::start(move |request: &Request, port| match (case.as_str(), request.method.as_str()) {
        ("redirect", _) => Reply::Full {
            status: 302,
            headers: vec![header("Location", format!("http://127.0.0.1:{other_port}{}", request.path))],
            body: Vec::new(),
        },
        (_, "HEAD") if case == "endless-error" => head_of(1 << 20),
        (_, "HEAD") => head_of(size),
        ("lying-length", "GET") => Reply::Endless {
            status: 200,
            headers: vec![header("Content-Length", 64u64 << 30)],
            body: bytes.clone(),
            fill: vec![0; 64 << 10],
        },
        ("long-206", "GET") => Reply::Endless {
            status: 206,
            headers: vec![
                header("Content-Range", format!("bytes 0-{}/{size}", size - 1)),
                header("Content-Length", 64u64 << 30),
            ],
            body: bytes.clone(),
            fill: vec![0; 64 << 10],
        },
        ("endless-error", "GET") => {
            Reply::Endless { status: 403, headers: Vec::new(), body: Vec::new(), fill: vec![b'x'; 64 << 10] }
        }
        ("endless-propfind", "PROPFIND") => Reply::Endless {
            status: 207,
            headers: Vec::new(),
            body: br#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#.to_vec(),
            fill: (0..64).map(|i| entry(&format!("/logs/f{i}.xplane.pb"), false)).collect::<String>().into_bytes(),
        },
        ("wide" | "deep", "PROPFIND") => {
            let dir = request.path.trim_end_matches('/').to_string();
            let width = if case == "wide" { 300 } else { 1 };
            let mut entries = vec![(format!("{dir}/"), true)];
            entries.extend((0..width).map(|i| (format!("{dir}/d{i}/"), true)));
            dav(multistatus(&entries))
        }
        _ => {
            let _ = port;
            not_found()
        }
    });
    println!("serving {} (other origin {}) for 60 s", server.url("/logs"), other.url("/"));
    std::thread::sleep(Duration::from_secs(60));
}
