//! The synthetic pod generator (`oxprof_testkit::pod`) through oxprof's answer path: a small
//! pod (8 hosts of 4 TensorCores, 6 steps of 256 ops, a straggler at host 6 running 1.5× as
//! long, a slow-input host at host 2 waiting an extra 60% of its compute time) answers with
//! the facts planted in it, and the same spec writes the same bytes.

use oxprof_api::catalog::ServedRun;
use oxprof_api::data::{compute, open_run};
use oxprof_api::request::DataRequest;
use oxprof_api::session::Session;
use oxprof_testkit::pod::{PodError, PodSpec, host_bytes, write_pod};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::OnceLock;

const STRAGGLER: (usize, f64) = (6, 1.5);
const SLOW_INPUT: (usize, f64) = (2, 0.6);

fn spec() -> PodSpec {
    PodSpec {
        hosts: 8,
        steps: 6,
        ops_per_step: 256,
        stragglers: vec![STRAGGLER],
        slow_input_hosts: vec![SLOW_INPUT],
        ..PodSpec::new(8)
    }
}

/// The pod, written once for every test here, and a session over it.
fn pod() -> &'static (tempfile::TempDir, Session, ServedRun) {
    static POD: OnceLock<(tempfile::TempDir, Session, ServedRun)> = OnceLock::new();
    POD.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let summary = write_pod(&spec(), dir.path()).unwrap();
        assert_eq!(summary.files.len(), 8);
        let (session, run) = open_run(dir.path(), None).unwrap();
        (dir, session, run)
    })
}

/// XProf's JSON body of `tool` for `host`.
fn answer(tool: &str, host: &str) -> Value {
    let (_, session, run) = pod();
    let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
    let report = compute(session, run, &request, false).unwrap_or_else(|e| panic!("{tool} {host}: {e}"));
    report.xprof_body_json().unwrap_or_else(|| panic!("{tool} {host}: no JSON body"))
}

/// A table-level property of the first DataTable in `body` that has it.
fn property(body: &Value, name: &str) -> String {
    let tables = body.as_array().map_or_else(|| vec![body], |a| a.iter().collect());
    tables.iter().find_map(|t| t["p"][name].as_str()).unwrap_or_else(|| panic!("no {name} in {body:.300}")).to_string()
}

#[test]
fn overview_of_all_hosts_covers_every_host_and_has_a_step_time() {
    let overview = answer("overview_page", "ALL_HOSTS");
    assert_eq!(property(&overview, "host_count"), "8");
    let step_ms: f64 = property(&overview, "steptime_ms_average").parse().unwrap();
    assert!(step_ms > 0.0, "step time {step_ms} ms");
    assert_eq!(property(&overview, "is_training"), "true");
}

/// One host's step times and device compute times (µs), over every core and step.
#[derive(Default)]
struct HostTimes {
    step_us: Vec<f64>,
    compute_us: Vec<f64>,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn pod_viewer_shows_the_straggler_slower_by_about_its_factor() {
    let pod_viewer = answer("pod_viewer", "ALL_HOSTS");
    let mut per_host: BTreeMap<String, HostTimes> = BTreeMap::new();
    let steps = pod_viewer["podStatsSequence"]["podStatsMap"].as_array().unwrap();
    assert_eq!(steps.len(), 6);
    for step in steps {
        for record in step["podStatsPerCore"].as_object().unwrap().values() {
            let host = per_host.entry(record["hostName"].as_str().unwrap().to_string()).or_default();
            host.step_us.push(record["totalDurationUs"].as_f64().unwrap());
            host.compute_us.push(record["stepBreakdownUs"]["1"].as_f64().unwrap());
        }
    }
    let spec = spec();
    assert_eq!(per_host.keys().cloned().collect::<Vec<_>>(), (0..8).map(|h| spec.host_name(h)).collect::<Vec<_>>());
    let times = |h: usize| &per_host[&spec.host_name(h)];
    let normal: Vec<usize> = (0..8).filter(|&h| h != STRAGGLER.0 && h != SLOW_INPUT.0).collect();
    let normal_step = mean(&normal.iter().map(|&h| mean(&times(h).step_us)).collect::<Vec<_>>());
    let normal_compute = mean(&normal.iter().map(|&h| mean(&times(h).compute_us)).collect::<Vec<_>>());
    let step_ratio = mean(&times(STRAGGLER.0).step_us) / normal_step;
    let compute_ratio = mean(&times(STRAGGLER.0).compute_us) / normal_compute;
    assert!((step_ratio - STRAGGLER.1).abs() < 0.1 * STRAGGLER.1, "step time ratio {step_ratio}");
    assert!((compute_ratio - STRAGGLER.1).abs() < 0.05 * STRAGGLER.1, "device compute ratio {compute_ratio}");
    // The other hosts are within a few percent of each other.
    for &h in &normal {
        let ratio = mean(&times(h).step_us) / normal_step;
        assert!((ratio - 1.0).abs() < 0.05, "{}: {ratio}", spec.host_name(h));
    }
}

#[test]
fn input_pipeline_says_the_slow_input_host_is_input_bound_and_a_normal_host_is_not() {
    let spec = spec();
    let slow = property(&answer("input_pipeline_analyzer", &spec.host_name(SLOW_INPUT.0)), "input_conclusion");
    assert!(slow.contains("HIGHLY input-bound"), "{slow}");
    for host in [0, STRAGGLER.0] {
        let normal = property(&answer("input_pipeline_analyzer", &spec.host_name(host)), "input_conclusion");
        assert!(normal.contains("NOT input-bound"), "{normal}");
    }
}

#[test]
fn megascale_stats_lists_the_dcn_collectives() {
    let stats = answer("megascale_stats", &spec().host_name(3));
    let rows = stats[0]["rows"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["c"][0]["v"].as_str().unwrap()).collect();
    for rendezvous in oxprof_testkit::tpu::dcn::COLLECTIVES.iter().map(|c| c.rendezvous) {
        assert!(names.contains(&rendezvous), "{rendezvous} not in {names:?}");
    }
}

#[test]
fn the_same_spec_writes_the_same_bytes_and_another_seed_does_not() {
    // Unrolled layers: the other program shape is deterministic too.
    let spec = PodSpec { hosts: 3, steps: 3, ops_per_step: 64, scan_layers: false, ..spec() };
    let spec = PodSpec { stragglers: vec![(1, 1.5)], slow_input_hosts: vec![(2, 0.6)], ..spec };
    let first = tempfile::tempdir().unwrap();
    let summary = write_pod(&spec, first.path()).unwrap();
    // Written on one thread instead of the pool: the same files.
    let second = tempfile::tempdir().unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let again = pool.install(|| write_pod(&spec, second.path())).unwrap();
    for ((a, _), (b, _)) in summary.files.iter().zip(&again.files) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{}", a.display());
    }
    for (host, (path, size)) in summary.files.iter().enumerate() {
        let bytes = host_bytes(&spec, host).unwrap();
        assert_eq!(bytes.len() as u64, *size);
        assert_eq!(bytes, std::fs::read(path).unwrap(), "{}", path.display());
    }
    let other = host_bytes(&PodSpec { seed: spec.seed + 1, ..spec.clone() }, 0).unwrap();
    assert_ne!(other, host_bytes(&spec, 0).unwrap());
}

#[test]
fn the_generator_never_writes_over_a_file() {
    let spec = PodSpec { hosts: 2, steps: 1, ops_per_step: 8, ..PodSpec::new(2) };
    let dir = tempfile::tempdir().unwrap();
    let run_dir = spec.run_dir(dir.path());
    std::fs::create_dir_all(&run_dir).unwrap();
    let theirs = run_dir.join(format!("{}.xplane.pb", spec.host_name(1)));
    std::fs::write(&theirs, b"someone else's profile").unwrap();
    let err = write_pod(&spec, dir.path()).unwrap_err();
    assert!(matches!(&err, PodError::Exists(p) if *p == theirs), "{err}");
    assert!(err.to_string().contains("exists"), "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"someone else's profile");
}

#[test]
fn specs_outside_the_limits_are_refused_with_what_to_change() {
    for (spec, words) in [
        (PodSpec { hosts: 0, ..PodSpec::new(8) }, "hosts must be"),
        (PodSpec { stragglers: vec![(8, 1.5)], ..PodSpec::new(8) }, "straggler 8:1.5"),
        (PodSpec { stragglers: vec![(1, 0.5)], ..PodSpec::new(8) }, "slowdown 1..="),
        (PodSpec { slow_input_hosts: vec![(1, -1.0)], ..PodSpec::new(8) }, "slow input 1:-1"),
        (PodSpec { ops_per_step: 4, ..PodSpec::new(8) }, "ops per step must be"),
        (PodSpec { run: "../x".into(), ..PodSpec::new(8) }, "one folder name"),
    ] {
        let err = spec.validate().unwrap_err().to_string();
        assert!(err.contains(words), "{err}");
    }
}
