//! A remote logdir whose server stalls in the middle of some objects holds no decode turn:
//! while loads of stalled runs hold every turn the session has, a request for a healthy
//! run of the same store is answered (on a lent turn, and off the pool's threads). The logdir is a WebDAV server on 127.0.0.1
//! (threads in this test, stopped with it): runs `slow0`… answer a GET with the first bytes
//! of their profile and then nothing until the test lets them go; run `fast` answers at
//! once. The assertion is about order (the healthy answer came while the stall was held),
//! not time; the waits have generous bounds only so that a broken build ends.

use oxprof_api::answer::answer;
use oxprof_api::data::DataRequest;
use oxprof_api::registry::ToolId;
use oxprof_api::session::{Session, SessionOptions};
use oxprof_testkit::http::{Request, read_request};
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

/// Runs the server stalls: at least the session's decode turns on any machine (at most 8).
const STALLED_RUNS: usize = 8;

/// A one-plane profile (`/host:CPU  thread  [op 0..10)`).
fn profile() -> Vec<u8> {
    oxprof_testkit::fixtures::one_op_profile()
}

/// What the server and the test share.
#[derive(Default)]
struct Shared {
    /// Let the stalled answers go on.
    release: AtomicBool,
    /// Stalled answers under way (their first bytes sent).
    stalled: AtomicUsize,
    /// Stop serving.
    stop: AtomicBool,
}

struct Server {
    port: u16,
    shared: Arc<Shared>,
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared::default());
        let serving = Arc::clone(&shared);
        let bytes = Arc::new(profile());
        std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(300);
            while !serving.stop.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (shared, bytes) = (Arc::clone(&serving), Arc::clone(&bytes));
                        std::thread::spawn(move || {
                            let _ = answer_connection(stream, &shared, &bytes);
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { port, shared }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.release.store(true, Ordering::Relaxed);
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

fn runs() -> Vec<String> {
    (0..STALLED_RUNS).map(|i| format!("slow{i}")).chain(["fast".to_string()]).collect()
}

fn answer_connection(stream: TcpStream, shared: &Shared, bytes: &[u8]) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(Request { method, path, .. }) = read_request(&mut reader)? {
        let dir = path.trim_end_matches('/');
        let head = format!(
            "Content-Length: {}\r\nETag: \"e1\"\r\nLast-Modified: Sat, 01 Jan 2022 00:00:00 GMT\r\n",
            bytes.len()
        );
        match method.as_str() {
            "PROPFIND" => {
                let children: Vec<(String, bool)> = match dir {
                    "/logs" => vec![("/logs/plugins/".into(), true)],
                    "/logs/plugins" => vec![("/logs/plugins/profile/".into(), true)],
                    "/logs/plugins/profile" => {
                        runs().iter().map(|r| (format!("/logs/plugins/profile/{r}/"), true)).collect()
                    }
                    run if run.starts_with("/logs/plugins/profile/") && !run.ends_with(".pb") => {
                        vec![(format!("{run}/h.xplane.pb"), false)]
                    }
                    _ => Vec::new(),
                };
                let mut xml = String::from(r#"<?xml version="1.0" encoding="utf-8"?><multistatus xmlns="DAV:">"#);
                xml.push_str(&entry(&format!("{dir}/"), true, 0));
                for (href, is_dir) in children {
                    xml.push_str(&entry(&href, is_dir, bytes.len()));
                }
                xml.push_str("</multistatus>");
                write!(out, "HTTP/1.1 207 Multi-Status\r\nContent-Length: {}\r\n\r\n{xml}", xml.len())?;
            }
            "HEAD" => write!(out, "HTTP/1.1 200 OK\r\n{head}\r\n")?,
            "GET" if path.contains("/slow") => {
                // The first bytes, then nothing until the test lets the answer go on.
                write!(out, "HTTP/1.1 200 OK\r\n{head}\r\n")?;
                out.write_all(&bytes[..16])?;
                out.flush()?;
                shared.stalled.fetch_add(1, Ordering::SeqCst);
                let until = Instant::now() + Duration::from_secs(120);
                while !shared.release.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
                out.write_all(&bytes[16..])?;
            }
            "GET" => {
                write!(out, "HTTP/1.1 200 OK\r\n{head}\r\n")?;
                out.write_all(bytes)?;
            }
            _ => write!(out, "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")?,
        }
        out.flush()?;
    }
    Ok(())
}

fn entry(href: &str, dir: bool, size: usize) -> String {
    let kind = if dir {
        "<resourcetype><collection/></resourcetype>".to_string()
    } else {
        format!("<resourcetype/><getcontentlength>{size}</getcontentlength>")
    };
    format!(
        "<response><href>{href}</href><propstat><prop><getlastmodified>Sat, 01 Jan 2022 00:00:00 GMT\
         </getlastmodified>{kind}</prop><status>HTTP/1.1 200 OK</status></propstat></response>"
    )
}

fn overview(session: &Session, run: &str) -> Result<(), String> {
    let served = session.run(Some(run)).map_err(|e| e.to_string())?;
    let request = DataRequest { run: Some(run.to_string()), ..DataRequest::new(ToolId::OVERVIEW_PAGE) };
    answer(session, &served, &request, false).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn a_stalled_server_holds_no_decode_turn() {
    let server = Server::start();
    let url = format!("http://127.0.0.1:{}/logs", server.port);
    let session = Arc::new(Session::open_path(Path::new(&url), SessionOptions::default()).unwrap());
    let names: Vec<String> = session.catalog().rescan().runs.iter().map(|r| r.name.clone()).collect();
    assert_eq!(names.len(), STALLED_RUNS + 1, "{names:?}");

    // As many stalled loads as the session has turns (`max_concurrent_loads`) start and
    // stall, each holding a turn.
    let turns = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8);
    let slow: Vec<_> = (0..turns)
        .map(|i| {
            let session = Arc::clone(&session);
            std::thread::spawn(move || overview(&session, &format!("slow{i}")))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.shared.stalled.load(Ordering::SeqCst) < turns && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(server.shared.stalled.load(Ordering::SeqCst) >= turns, "the stalled loads did not all start");

    // The healthy run is answered while the stall is held.
    let (done, finished) = mpsc::channel();
    let healthy = {
        let session = Arc::clone(&session);
        std::thread::spawn(move || {
            let result = overview(&session, "fast");
            let _ = done.send(());
            result
        })
    };
    let answered_during_stall = finished.recv_timeout(Duration::from_secs(60)).is_ok();
    server.shared.release.store(true, Ordering::Relaxed);
    let healthy = healthy.join().unwrap();
    for thread in slow {
        // Whatever the stalled ones end with (an answer once let go, or a timeout error).
        let _ = thread.join().unwrap();
    }
    assert!(answered_during_stall, "the healthy run waited for the stalled server to go on");
    assert_eq!(healthy, Ok(()));
}
