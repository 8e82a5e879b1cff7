//! Many concurrent mixed requests against one service: every tool, each host and
//! `ALL_HOSTS`, forced recomputes (`use_saved_result=false`), the trace routes, under a
//! cache bound small enough that entries are evicted and recomputed while others wait on
//! them. A watchdog fails the test if any request takes longer than a bound (a deadlock
//! would otherwise hang the test run): this is the regression test for the pool
//! deadlock where waiting requests blocked rayon workers that the owners of their
//! flights needed.

use oxprof_api::http::{NoAssets, Service, ServiceOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A two-host run: the V100 GPU pair when the external data is there (the run the
/// deadlock was found on), else two committed refkit profiles.
fn two_host_run(dir: &Path) -> (String, [String; 2]) {
    let external = repo_root().join("../shared/testdata/external/openxla-xprof/demo/plugins/profile/GPU-multi-worker");
    let run = dir.join("plugins/profile/stress");
    std::fs::create_dir_all(&run).unwrap();
    let hosts = ["34.83.195.179_6003", "34.83.195.180_6003"];
    if external.is_dir() {
        for host in hosts {
            std::fs::copy(external.join(format!("{host}.xplane.pb")), run.join(format!("{host}.xplane.pb"))).unwrap();
        }
        return ("stress".into(), hosts.map(String::from));
    }
    let profiles = repo_root().join("testdata/profiles");
    let sources = [
        profiles.join("tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz"),
        profiles.join("jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"),
    ];
    for (host, source) in ["h1", "h2"].iter().zip(sources) {
        std::fs::copy(source, run.join(format!("{host}.xplane.pb.gz"))).unwrap();
    }
    ("stress".into(), ["h1".into(), "h2".into()])
}

const TOOLS: [&str; 12] = [
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "kernel_stats",
    "pod_viewer",
    "op_profile",
    "hlo_stats",
    "roofline_model",
    "trace_viewer@",
    "memory_profile",
    "tf_data_bottleneck_analysis",
    "module_list",
];

/// A small deterministic generator (no dependency, same sequence on every run).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

fn urls(run: &str, hosts: &[String; 2], rng: &mut Rng) -> String {
    let host = match rng.below(3) {
        0 => hosts[0].as_str(),
        1 => hosts[1].as_str(),
        _ => "ALL_HOSTS",
    };
    let refresh = if rng.below(5) == 0 { "&use_saved_result=false" } else { "" };
    match rng.below(8) {
        0 => format!("/oxprof/api/trace/tracks?run={run}&host={host}"),
        1 => format!("/oxprof/api/trace/window?run={run}&host={host}&width=300"),
        2 => format!("/run_tools?run={run}"),
        _ => {
            let tool = TOOLS[rng.below(TOOLS.len())];
            format!("/data?run={run}&tag={}&host={host}{refresh}", tool.replace('@', "%40"))
        }
    }
}

#[test]
fn concurrent_mixed_requests_never_hang() {
    let dir = tempfile::tempdir().unwrap();
    let (run, hosts) = two_host_run(dir.path());
    // 8 MB: far less than the decoded profiles and analyses of both hosts, so entries are
    // evicted and recomputed while other requests wait on them.
    let service = Arc::new(
        Service::new(ServiceOptions { cache_bytes: 8 << 20, ..ServiceOptions::new(dir.path()) }, Arc::new(NoAssets))
            .unwrap(),
    );
    const THREADS: usize = 12;
    const REQUESTS_PER_THREAD: usize = 12;
    const BOUND: Duration = Duration::from_secs(120);
    // Per thread: the request it is waiting for, and since when.
    type InFlight = Vec<Option<(Instant, String)>>;
    let started: Arc<Mutex<InFlight>> = Arc::new(Mutex::new(vec![None; THREADS]));
    let done = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(AtomicU64::new(0));

    // The watchdog: a request running longer than BOUND means a hang; fail loudly and
    // end the process rather than hang the test run.
    let watchdog = {
        let (started, done) = (started.clone(), done.clone());
        std::thread::spawn(move || {
            while done.load(Ordering::SeqCst) < THREADS {
                std::thread::sleep(Duration::from_millis(200));
                let slots = started.lock().unwrap();
                for (slot, request) in slots.iter().enumerate() {
                    if let Some((at, url)) = request
                        && at.elapsed() > BOUND
                    {
                        eprintln!("HANG: thread {slot} has waited {:?} for {url}", at.elapsed());
                        std::process::exit(101);
                    }
                }
            }
        })
    };

    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (service, started, done, answered, run, hosts) =
                (service.clone(), started.clone(), done.clone(), answered.clone(), run.clone(), hosts.clone());
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                for _ in 0..REQUESTS_PER_THREAD {
                    let url = urls(&run, &hosts, &mut rng);
                    started.lock().unwrap()[t] = Some((Instant::now(), url.clone()));
                    let (path, query) = url.split_once('?').unwrap();
                    let response = service.handle("GET", path, query);
                    started.lock().unwrap()[t] = None;
                    // Every answer is a real one: a body, or a JSON error that is not ours.
                    assert!(response.status < 500, "{url}: {} {}", response.status, response.body_text());
                    answered.fetch_add(1, Ordering::SeqCst);
                }
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    watchdog.join().unwrap();
    assert_eq!(answered.load(Ordering::SeqCst), (THREADS * REQUESTS_PER_THREAD) as u64);
    let stats = service.cache_stats();
    assert_eq!(stats.in_flight, 0, "{stats:?}");
    assert!(stats.bytes <= stats.limit_bytes, "{stats:?}");
}

/// The reported hang: three concurrent cold requests on a fresh service (a host's
/// overview, the other host's kernel stats, framework op stats of both), twelve times.
#[test]
fn three_cold_requests_on_a_fresh_service_finish() {
    let dir = tempfile::tempdir().unwrap();
    let (run, hosts) = two_host_run(dir.path());
    for attempt in 0..12 {
        let service = Service::new(ServiceOptions::new(dir.path()), Arc::new(NoAssets)).unwrap();
        let requests = [
            format!("run={run}&tag=overview_page&host={}", hosts[0]),
            format!("run={run}&tag=kernel_stats&host={}", hosts[1]),
            format!("run={run}&tag=framework_op_stats&host=ALL_HOSTS"),
        ];
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            for query in &requests {
                let (service, tx) = (&service, tx.clone());
                s.spawn(move || tx.send((query.clone(), service.handle("GET", "/data", query).status)).unwrap());
            }
            for _ in 0..requests.len() {
                match rx.recv_timeout(Duration::from_secs(120)) {
                    Ok((query, status)) => assert_eq!(status, 200, "attempt {attempt}: {query}"),
                    Err(_) => {
                        eprintln!("HANG: attempt {attempt}: three cold requests did not finish in 120 s");
                        std::process::exit(101);
                    }
                }
            }
        });
    }
}
