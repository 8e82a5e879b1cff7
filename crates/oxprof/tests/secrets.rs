//! A password or a signature a user typed into a logdir URL is in no output of oxprof: not
//! the CLI's error line, not any served route's body, not the request log. The logdir is
//! a WebDAV server on 127.0.0.1 (threads in this test, stopped with it) that lists one
//! run and refuses to hand out its profile (403), so that every route that reads the
//! profile fails with an error naming its URL.

use oxprof_testkit::http::{Request, read_request};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What must never be printed or answered.
const SECRETS: &[&str] = &["s3cret", "t0ken", "f00"];

/// The logdir's server: `/logs/plugins/profile/run1/h.xplane.pb` listed, every read of it
/// refused. Stops when dropped.
struct Dav {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl Dav {
    fn start() -> Dav {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(300);
            while !stopped.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((stream, _)) => {
                        std::thread::spawn(move || {
                            let _ = answer(stream);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Dav { port, stop }
    }
}

impl Drop for Dav {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn answer(stream: TcpStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(Request { method, path, .. }) = read_request(&mut reader)? {
        let (status, body) = match method.as_str() {
            "PROPFIND" => {
                let dir = path.trim_end_matches('/');
                let child = match dir {
                    "/logs" => Some(("/logs/plugins/", true)),
                    "/logs/plugins" => Some(("/logs/plugins/profile/", true)),
                    "/logs/plugins/profile" => Some(("/logs/plugins/profile/run1/", true)),
                    "/logs/plugins/profile/run1" => Some(("/logs/plugins/profile/run1/h.xplane.pb", false)),
                    _ => None,
                };
                let mut xml = String::from(r#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#);
                xml.push_str(&entry(&format!("{dir}/"), true));
                if let Some((href, dir)) = child {
                    xml.push_str(&entry(href, dir));
                }
                xml.push_str("</multistatus>");
                ("207 Multi-Status", xml)
            }
            _ => ("403 Forbidden", "no".to_string()),
        };
        let body = if method == "HEAD" { String::new() } else { body };
        write!(out, "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len())?;
    }
    Ok(())
}

fn entry(href: &str, dir: bool) -> String {
    let kind = if dir {
        "<resourcetype><collection/></resourcetype>"
    } else {
        "<resourcetype/><getcontentlength>1000</getcontentlength>"
    };
    format!(
        "<response><href>{href}</href><propstat><prop><getlastmodified>Sat, 01 Jan 2022 00:00:00 GMT\
         </getlastmodified>{kind}</prop><status>HTTP/1.1 200 OK</status></propstat></response>"
    )
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} in {what}: {text}");
    }
}

/// `oxprof ARGS`: exit code and stderr.
fn oxprof(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/secrets-cache"))
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn the_cli_prints_no_secret_of_a_url() {
    let dav = Dav::start();
    let logdir = format!("http://alice:s3cret@127.0.0.1:{}/logs?sig=t0ken", dav.port);
    let file =
        format!("http://alice:s3cret@127.0.0.1:{}/logs/plugins/profile/run1/h.xplane.pb?X-Amz-Signature=f00", dav.port);
    for args in [
        vec!["data", "overview_page", &logdir],
        vec!["data", "overview_page", &file],
        vec!["inspect", &file],
        // Not a store's error: the CLI's own line still hides what looks like a credential.
        vec!["data", "overview_page", "/nonexistent/logs?token=t0ken"],
    ] {
        let (code, stderr) = oxprof(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_no_secret(&format!("{args:?}"), &stderr);
        assert!(stderr.contains("***"), "{args:?}: {stderr}");
    }
}

/// One request to the server at `addr`: status and body.
fn get(addr: SocketAddr, target: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(stream, "GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map_or(String::new(), |(_, b)| b.to_string());
    (status, body)
}

#[test]
fn served_routes_and_the_request_log_carry_no_secret_of_a_url() {
    let dav = Dav::start();
    let logdir = format!("http://alice:s3cret@127.0.0.1:{}/logs?sig=t0ken", dav.port);
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/secrets-cache"))
        .args(["serve", &logdir, "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let addr: SocketAddr = loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "oxprof serve did not print its URL");
        // "serving LOGDIR at http://ADDR/": the server's own address is the last URL.
        if let Some(at) = line.rfind("http://")
            && let Some(end) = line[at + 7..].find('/')
        {
            break line[at + 7..at + 7 + end].parse().unwrap();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let one = "run=run1&tag=overview_page&host=h";
    let routes = [
        "/data/plugin/profile/runs".to_string(),
        "/data/plugin/profile/run_tools?run=run1".into(),
        "/data/plugin/profile/hosts?run=run1&tag=overview_page".into(),
        format!("/data/plugin/profile/data?{one}"),
        "/data/plugin/profile/data_csv?run=run1&tag=framework_op_stats&host=h".into(),
        "/data/plugin/profile/module_list?run=run1".into(),
        "/oxprof/api/info".into(),
        "/oxprof/api/runs".into(),
        "/oxprof/api/run?run=run1".into(),
        format!("/oxprof/api/notes?{one}"),
        "/oxprof/api/diff?run=run1&run_b=run1".into(),
        "/oxprof/api/query?run=run1&sql=SELECT%201".into(),
        "/oxprof/api/query?run=run1&sql=SELECT%20count(*)%20FROM%20slice".into(),
        "/oxprof/api/trace/tracks?run=run1&host=h".into(),
        // Secrets in the request's own query: answered, and logged without them.
        "/oxprof/api/runs?from=http%3A%2F%2Fbob%3As3cret%40h%2Fx&token=t0ken".into(),
    ];
    let mut errors = 0;
    for route in &routes {
        let (status, body) = get(addr, route);
        assert!(status != 0, "{route}: no answer");
        assert_no_secret(&format!("the body of {route} ({status})"), &body);
        errors += usize::from(status >= 400);
    }
    // The routes that read the profile failed, each naming its URL.
    assert!(errors >= 8, "{errors} errors");
    let _ = child.kill();
    let _ = child.wait();
    let log = log.join().unwrap();
    assert!(log.lines().count() >= routes.len(), "{log}");
    assert_no_secret("the request log", &log);
}
