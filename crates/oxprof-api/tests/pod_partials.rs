//! A pod result directory (one `.oxpartial` per host and the job's `pod.json`) answers the
//! multi-host tools byte for byte as the hosts' own files do: a generated 6-host pod with
//! DCN collectives, a straggler and a slow-input host, each host's partial computed by its
//! own session (as a Spark executor computes it, apart from the others), one host left out
//! as a failed task. Also: a host's events come from the profile pod.json names, only from
//! the places allowed; a damaged or foreign partial is named, and the partial round-trips
//! exactly.

use oxprof_api::ApiError;
use oxprof_api::data::{compute, one_shot_session, open_run};
use oxprof_api::pod::{self, FailedHost, ManifestHost, PodManifest};
use oxprof_api::request::DataRequest;
use oxprof_testkit::pod::{PodSpec, write_pod};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The multi-host tools a pod result answers (issue #42's list).
const TOOLS: [&str; 5] =
    ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "pod_viewer", "megascale_stats"];
/// The host whose task "failed": in neither directory.
const FAILED: &str = "tpu-pod-host-003";

struct Dirs {
    _tmp: tempfile::TempDir,
    /// The generated run (every host), where pod.json says the job read the hosts.
    generated: PathBuf,
    /// The generated hosts but [`FAILED`], as profiles.
    profiles: PathBuf,
    /// Their partials and pod.json.
    pod: PathBuf,
    /// The same with the pod's own combine (`ALL_HOSTS.oxcombined`).
    combined: PathBuf,
}

fn dirs() -> &'static Dirs {
    static DIRS: OnceLock<Dirs> = OnceLock::new();
    DIRS.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let spec = PodSpec {
            hosts: 6,
            steps: 4,
            ops_per_step: 128,
            stragglers: vec![(4, 1.5)],
            slow_input_hosts: vec![(1, 0.6)],
            ..PodSpec::new(6)
        };
        let summary = write_pod(&spec, &tmp.path().join("generated")).unwrap();
        let profiles = tmp.path().join("profiles");
        let pod_dir = tmp.path().join("pod");
        std::fs::create_dir_all(&profiles).unwrap();
        std::fs::create_dir_all(&pod_dir).unwrap();
        let mut manifest = PodManifest {
            format: pod::MANIFEST_FORMAT.into(),
            version: 1,
            source: summary.run_dir.display().to_string(),
            run: "2026_01_01_00_00_00".into(),
            engine: serde_json::json!({"kind": "test"}),
            ..PodManifest::default()
        };
        for (file, _) in &summary.files {
            let name = file.file_name().unwrap().to_str().unwrap();
            let host = name.strip_suffix(".xplane.pb").unwrap();
            if host == FAILED {
                manifest.failed.push(FailedHost {
                    host: host.into(),
                    source: file.display().to_string(),
                    error: "a planted failure".into(),
                });
                continue;
            }
            std::fs::copy(file, profiles.join(name)).unwrap();
            // Each host alone, as an executor sees it.
            let session = one_shot_session(file).unwrap();
            let partial = pod::partial_of(&session, None).unwrap();
            assert_eq!(partial.host, host);
            let bytes = pod::encode_partial(&partial);
            let partial_name = format!("{host}.oxpartial");
            std::fs::write(pod_dir.join(&partial_name), &bytes).unwrap();
            manifest.hosts.push(ManifestHost {
                host: host.into(),
                source: file.display().to_string(),
                partial: partial_name,
                partial_bytes: Some(bytes.len() as u64),
                ..ManifestHost::default()
            });
        }
        std::fs::write(pod_dir.join(pod::MANIFEST_FILE), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();
        let combined = tmp.path().join("combined");
        std::fs::create_dir_all(&combined).unwrap();
        for entry in std::fs::read_dir(&pod_dir).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), combined.join(entry.file_name())).unwrap();
        }
        let (session, run) = open_run(&combined, None).unwrap();
        let bytes = pod::combine_pod(&session, &run).unwrap();
        std::fs::write(combined.join(pod::COMBINED_FILE), bytes).unwrap();
        Dirs { _tmp: tmp, generated: summary.run_dir.clone(), profiles, pod: pod_dir, combined }
    })
}

/// `tool`'s XProf body for `host` of the run in `dir`, and oxprof's notes.
fn answer(dir: &Path, tool: &str, host: &str) -> Result<(String, Vec<String>), ApiError> {
    let (session, run) = open_run(dir, None)?;
    let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
    let report = compute(&session, &run, &request, false)?;
    Ok((report.xprof_body().text, report.notes()))
}

#[test]
fn every_multi_host_tool_answers_from_partials_byte_for_byte() {
    let dirs = dirs();
    for tool in TOOLS {
        let (from_files, _) = answer(&dirs.profiles, tool, "ALL_HOSTS").unwrap();
        let (from_partials, notes) = answer(&dirs.pod, tool, "ALL_HOSTS").unwrap();
        assert!(from_files.len() > 100, "{tool}: {from_files:.200}");
        assert!(from_files == from_partials, "{tool}: the pod result answers differently");
        assert!(
            notes.iter().any(|n| n.starts_with(&format!("{FAILED}: not in this pod result")) && n.contains("a planted failure")),
            "{tool}: {notes:?}"
        );
    }
    // The rows really cover the hosts and the DCN collectives.
    let (overview, _) = answer(&dirs.pod, "overview_page", "ALL_HOSTS").unwrap();
    assert!(overview.contains("\"host_count\":\"5\""), "{overview:.400}");
    let (megascale, _) = answer(&dirs.pod, "megascale_stats", "ALL_HOSTS").unwrap();
    assert!(megascale.contains("rendezvous") || megascale.len() > 200, "{megascale:.400}");
}

/// `tool`'s body for ALL_HOSTS of the run in `dir`, and how many host analyses the answer read.
fn all_hosts_reading(dir: &Path, tool: &str) -> (String, u64) {
    let (session, run) = open_run(dir, None).unwrap();
    let request = DataRequest { host: Some("ALL_HOSTS".into()), ..oxprof_api::registry::request(tool).unwrap() };
    let report = compute(&session, &run, &request, false).unwrap();
    let counts = session.file_counts();
    (report.xprof_body().text, counts.analyses_from_disk + counts.analyses_computed)
}

#[test]
fn the_pods_own_combine_answers_byte_for_byte_with_one_read() {
    let dirs = dirs();
    for tool in TOOLS {
        let (from_files, _) = answer(&dirs.profiles, tool, "ALL_HOSTS").unwrap();
        let (from_combine, analyses_read) = all_hosts_reading(&dirs.combined, tool);
        assert!(from_files == from_combine, "{tool}: the pod's combine answers differently");
        assert_eq!(analyses_read, 0, "{tool}: answered from the partials, not from the combine");
        let (_, notes) = answer(&dirs.combined, tool, "ALL_HOSTS").unwrap();
        assert!(notes.iter().any(|n| n.starts_with(&format!("{FAILED}: not in this pod result"))), "{tool}: {notes:?}");
    }
    let (_, analyses_read) = all_hosts_reading(&dirs.pod, "overview_page");
    assert_eq!(analyses_read, 5, "without a combine, every partial is read");
}

#[test]
fn a_stale_combine_is_ignored() {
    let dirs = dirs();
    let tmp = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&dirs.combined).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), tmp.path().join(entry.file_name())).unwrap();
    }
    // The copies have new modification times: the combine no longer matches them.
    let (from_files, _) = answer(&dirs.profiles, "overview_page", "ALL_HOSTS").unwrap();
    let (body, analyses_read) = all_hosts_reading(tmp.path(), "overview_page");
    assert!(body == from_files);
    assert_eq!(analyses_read, 5, "a stale combine was used");
}

#[test]
fn one_host_of_a_pod_result_answers_as_its_file() {
    let dirs = dirs();
    for tool in ["overview_page", "framework_op_stats", "megascale_stats"] {
        let (from_file, _) = answer(&dirs.profiles, tool, "tpu-pod-host-004").unwrap();
        let (from_partial, _) = answer(&dirs.pod, tool, "tpu-pod-host-004").unwrap();
        assert!(from_file == from_partial, "{tool}");
    }
}

/// `tool`'s body for `host` of the run in `dir`, with pod hosts' profiles allowed from
/// `pod_sources`.
fn answer_with_sources(dir: &Path, tool: &str, host: &str, pod_sources: &[&Path]) -> Result<String, ApiError> {
    let options = oxprof_api::session::SessionOptions {
        pod_sources: pod_sources.iter().map(|p| p.display().to_string()).collect(),
        ..oxprof_api::session::SessionOptions::one_shot()
    };
    let session = oxprof_api::data::local_session(dir, options)?;
    let run = session.run(None)?;
    let request = DataRequest { host: Some(host.into()), ..oxprof_api::registry::request(tool).unwrap() };
    Ok(compute(&session, &run, &request, false)?.xprof_body().text)
}

#[test]
fn a_hosts_events_come_from_the_profile_pod_json_names_when_allowed() {
    let dirs = dirs();
    for tool in ["trace_viewer@", "op_profile"] {
        let from_file = answer_with_sources(&dirs.profiles, tool, "tpu-pod-host-004", &[]).unwrap();
        let drilled = answer_with_sources(&dirs.pod, tool, "tpu-pod-host-004", &[&dirs.generated]).unwrap();
        assert!(from_file.len() > 1000, "{tool}: {from_file:.200}");
        assert!(from_file == drilled, "{tool}: the drill-down answers differently from the host's file");
    }
}

#[test]
fn a_hosts_profile_outside_the_allowed_places_is_refused_and_the_flag_named() {
    let dirs = dirs();
    let err = answer_with_sources(&dirs.pod, "trace_viewer@", "tpu-pod-host-000", &[]).unwrap_err();
    assert!(matches!(err, ApiError::PodHostSource { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("tpu-pod-host-000.xplane.pb lies outside"), "{text}");
    assert!(text.contains(&format!("--pod-sources {}", dirs.generated.display())), "{text}");
    assert_eq!(err.http_status(), 403);
    // Another allowed place is not the host's.
    let err = answer_with_sources(&dirs.pod, "trace_viewer@", "tpu-pod-host-000", &[&dirs.profiles]).unwrap_err();
    assert!(matches!(err, ApiError::PodHostSource { .. }), "{err}");
}

/// A pod result whose pod.json names `source` for its one host (a copy of host 000's partial).
fn pod_naming(source: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let partial = "tpu-pod-host-000.oxpartial";
    std::fs::copy(dirs().pod.join(partial), dir.path().join(partial)).unwrap();
    let manifest = PodManifest {
        format: pod::MANIFEST_FORMAT.into(),
        version: 1,
        hosts: vec![ManifestHost {
            host: "tpu-pod-host-000".into(),
            source: source.into(),
            partial: partial.into(),
            ..ManifestHost::default()
        }],
        ..PodManifest::default()
    };
    std::fs::write(dir.path().join(pod::MANIFEST_FILE), serde_json::to_vec(&manifest).unwrap()).unwrap();
    dir
}

#[test]
fn a_hostile_pod_json_reads_nothing_outside_the_allowed_places() {
    let dirs = dirs();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.xplane.pb");
    std::fs::copy(dirs.profiles.join("tpu-pod-host-000.xplane.pb"), &secret).unwrap();
    let allowed = tempfile::tempdir().unwrap();
    let climbing = format!(
        "{}/../{}",
        allowed.path().display(),
        secret.strip_prefix(allowed.path().parent().unwrap()).unwrap().display()
    );
    let link = allowed.path().join("link.xplane.pb");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    for source in [
        secret.display().to_string(),
        climbing,
        link.display().to_string(),
        "tpu-pod-host-000.xplane.pb".into(),
        // Refused before anything is dialled (a closed loopback port, were it dialled).
        "http://127.0.0.1:9/secret.xplane.pb".into(),
        "s3://bucket/logs/../secret.xplane.pb".into(),
    ] {
        let pod = pod_naming(&source);
        let err = answer_with_sources(pod.path(), "trace_viewer@", "tpu-pod-host-000", &[allowed.path()]).unwrap_err();
        assert!(matches!(err, ApiError::PodHostSource { .. }), "{source}: {err}");
    }
    // The same file inside the allowed place is read.
    std::fs::copy(&secret, allowed.path().join("h.xplane.pb")).unwrap();
    let pod = pod_naming(&allowed.path().join("h.xplane.pb").display().to_string());
    answer_with_sources(pod.path(), "trace_viewer@", "tpu-pod-host-000", &[allowed.path()]).unwrap();
    // A pod.json without the host: the partial's own refusal.
    std::fs::write(pod.path().join(pod::MANIFEST_FILE), b"{}").unwrap();
    let err = answer_with_sources(pod.path(), "trace_viewer@", "tpu-pod-host-000", &[allowed.path()]).unwrap_err();
    assert!(matches!(err, ApiError::PodHostWithoutEvents { .. }), "{err}");
    assert_eq!(err.http_status(), 422);
}

#[test]
fn a_pod_result_lists_its_runs_hosts_and_plan() {
    let session = one_shot_session(&dirs().pod).unwrap();
    let plan = pod::plan(&session, None).unwrap();
    let hosts: Vec<&str> = plan.hosts.iter().map(|h| h.host.as_str()).collect();
    assert_eq!(
        hosts,
        ["tpu-pod-host-000", "tpu-pod-host-001", "tpu-pod-host-002", "tpu-pod-host-004", "tpu-pod-host-005"]
    );
    let session = one_shot_session(&dirs().profiles).unwrap();
    let plan = pod::plan(&session, None).unwrap();
    assert_eq!(plan.hosts.len(), 5);
    assert!(plan.hosts.iter().all(|h| h.bytes.is_some_and(|b| b > 10_000) && h.source.ends_with(".xplane.pb")));
}

#[test]
fn damaged_and_foreign_partials_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let good = std::fs::read(dirs().pod.join("tpu-pod-host-000.oxpartial")).unwrap();
    let mut cut = good.clone();
    cut.truncate(good.len() / 2);
    std::fs::write(tmp.path().join("cut.oxpartial"), &cut).unwrap();
    let err = answer(tmp.path(), "overview_page", "ALL_HOSTS").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("cut.oxpartial: damaged host-partial artifact"), "{message}");
    assert!(message.ends_with("recompute it with `oxprof pod partial` from the host's profile"), "{message}");

    let newer = b"oxprof-artifact host-partial 9\n\x1f\x8b";
    let err = pod::decode_partial(Path::new("h.oxpartial"), newer, 1 << 30).unwrap_err();
    let expected = format!("host-partial format version 9, but this oxprof reads version {}", pod::PARTIAL_VERSION);
    assert!(err.to_string().contains(&expected), "{err}");
    let err = pod::decode_partial(Path::new("h.oxpartial"), b"\x0a\x02hi", 1 << 30).unwrap_err();
    assert!(err.to_string().contains("not an oxprof artifact"), "{err}");
}

#[test]
fn a_partial_round_trips_exactly() {
    let bytes = std::fs::read(dirs().pod.join("tpu-pod-host-002.oxpartial")).unwrap();
    let partial = pod::decode_partial(Path::new("x.oxpartial"), &bytes, 1 << 30).unwrap();
    assert_eq!(pod::encode_partial(&partial), bytes);
    assert!(partial.megascale.has_megascale_events);
    assert!(!partial.megascale.summaries.is_empty());
    assert!(partial.written_by.starts_with("oxprof "), "{}", partial.written_by);
}

/// A partial whose all-reduce summary names a list it does not hold is refused as damaged
/// (no panic, no core silently left out of the input pipeline's split).
#[test]
fn a_partial_naming_a_missing_all_reduce_list_is_damaged() {
    let bytes = std::fs::read(dirs().pod.join("tpu-pod-host-002.oxpartial")).unwrap();
    let mut partial = pod::decode_partial(Path::new("x.oxpartial"), &bytes, 1 << 30).unwrap();
    let step = partial.analysis.op_stats.step_db.step_sequence.iter_mut().find(|s| s.all_reduce_summary.is_some());
    let summary = step.expect("a step with all-reduces").all_reduce_summary.as_mut().unwrap();
    summary.cores.values_mut().next().unwrap().id_list = u32::MAX;
    let err = pod::decode_partial(Path::new("x.oxpartial"), &pod::encode_partial(&partial), 1 << 30).unwrap_err();
    assert!(err.to_string().contains("a core's all-reduce list is not in the file"), "{err}");
}

#[test]
fn a_partial_with_settled_all_reduces_is_damaged() {
    let bytes = std::fs::read(dirs().pod.join("tpu-pod-host-002.oxpartial")).unwrap();
    let mut partial = pod::decode_partial(Path::new("x.oxpartial"), &bytes, 1 << 30).unwrap();
    for summary in
        partial.analysis.op_stats.step_db.step_sequence.iter_mut().filter_map(|s| s.all_reduce_summary.as_mut())
    {
        summary.settle();
    }
    let err = pod::decode_partial(Path::new("x.oxpartial"), &pod::encode_partial(&partial), 1 << 30).unwrap_err();
    assert!(err.to_string().contains("settled sums"), "{err}");
}

#[test]
fn a_refused_host_answers_403_without_local_paths() {
    let dirs = dirs();
    let service = oxprof_api::http::Service::new(
        oxprof_api::http::ServiceOptions::new(&dirs.pod),
        std::sync::Arc::new(oxprof_api::http::NoAssets),
    )
    .unwrap();
    let response =
        service.handle("GET", "/data/plugin/profile/data", "run=pod&tag=trace_viewer%40&host=tpu-pod-host-000");
    assert_eq!(response.status, 403);
    let body = response.body_text();
    assert!(body.contains("--pod-sources") && body.contains("tpu-pod-host-000.xplane.pb"), "{body}");
    let tmp = dirs.generated.parent().unwrap().parent().unwrap().display().to_string();
    assert!(!body.contains(&tmp), "an absolute path in a response: {body}");
}

#[test]
fn concurrent_drill_downs_share_one_session_and_answer_as_the_files() {
    let dirs = dirs();
    let options = oxprof_api::session::SessionOptions {
        pod_sources: vec![dirs.generated.display().to_string()],
        cache_bytes: 64 << 20,
        ..oxprof_api::session::SessionOptions::default()
    };
    let session = oxprof_api::data::local_session(&dirs.pod, options).unwrap();
    let run = session.run(None).unwrap();
    let hosts = ["tpu-pod-host-000", "tpu-pod-host-001", "tpu-pod-host-002"];
    let expected: Vec<String> =
        hosts.iter().map(|h| answer_with_sources(&dirs.profiles, "trace_viewer@", h, &[]).unwrap()).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..6)
            .map(|i| {
                let (session, run, host) = (&session, &run, hosts[i % hosts.len()]);
                scope.spawn(move || {
                    let request = DataRequest {
                        host: Some(host.into()),
                        ..oxprof_api::registry::request("trace_viewer@").unwrap()
                    };
                    compute(session, run, &request, false).unwrap().xprof_body().text
                })
            })
            .collect();
        for (i, worker) in workers.into_iter().enumerate() {
            assert!(worker.join().unwrap() == expected[i % hosts.len()], "request {i} answered differently");
        }
    });
}
