//! `oxprof pod plan|partial|combine` on a generated 3-host pod: the plan lists every host,
//! each host's partial is written to a new file (never over an existing one), the pod's
//! combine replaces only an earlier combine, and `oxprof data` answers the pod result as it
//! answers the hosts' files; a corrupt host file fails its partial with one line naming it.

mod common;

use common::oxprof;
use oxprof_testkit::pod::{PodSpec, write_pod};
use serde_json::Value;
use std::path::Path;

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn a_pod_result_made_by_the_commands_answers_as_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = PodSpec { hosts: 3, steps: 3, ops_per_step: 64, ..PodSpec::new(3) };
    let summary = write_pod(&spec, &tmp.path().join("gen")).unwrap();
    let run_dir = summary.run_dir.clone();

    let plan = oxprof(&["pod", "plan", s(&run_dir), "--format", "json"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let hosts = plan["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);

    let pod = tmp.path().join("pod");
    std::fs::create_dir(&pod).unwrap();
    for host in hosts {
        let name = host["host"].as_str().unwrap();
        let out = pod.join(format!("{name}.oxpartial"));
        let made = oxprof(&["pod", "partial", host["source"].as_str().unwrap(), "--out", s(&out), "--format", "json"]);
        assert_eq!(made.code, 0, "{}", made.stderr);
        let made: Value = serde_json::from_str(&made.stdout).unwrap();
        assert_eq!(made["host"], name);
        assert_eq!(made["source_bytes"], host["bytes"]);
        assert!(std::fs::read(&out).unwrap().starts_with(b"oxprof-artifact host-partial 2\n"));
    }
    // Never over an existing file.
    let again = pod.join("tpu-pod-host-000.oxpartial");
    let before = std::fs::read(&again).unwrap();
    let refused = oxprof(&["pod", "partial", hosts[1]["source"].as_str().unwrap(), "--out", s(&again)]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("oxprof does not overwrite files"), "{}", refused.stderr);
    assert_eq!(std::fs::read(&again).unwrap(), before);

    for tool in ["overview_page", "pod_viewer", "megascale_stats"] {
        let files = oxprof(&["data", tool, s(&run_dir), "--host", "ALL_HOSTS"]);
        let partials = oxprof(&["data", tool, s(&pod), "--host", "ALL_HOSTS"]);
        assert_eq!(files.code, 0, "{}", files.stderr);
        assert_eq!(partials.code, 0, "{}", partials.stderr);
        assert!(files.stdout == partials.stdout, "{tool}: the pod result answers differently");
    }

    // The combine, twice (the second replaces the first), then the same answers.
    for _ in 0..2 {
        let combined = oxprof(&["pod", "combine", s(&pod), "--format", "json"]);
        assert_eq!(combined.code, 0, "{}", combined.stderr);
        let combined: Value = serde_json::from_str(&combined.stdout).unwrap();
        assert_eq!(combined["hosts"], 3);
    }
    let files = oxprof(&["data", "input_pipeline_analyzer", s(&run_dir), "--host", "ALL_HOSTS"]);
    let combined = oxprof(&["data", "input_pipeline_analyzer", s(&pod), "--host", "ALL_HOSTS"]);
    assert!(files.stdout == combined.stdout);

    // A file oxprof did not write is never replaced by a combine.
    let foreign = tmp.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::copy(pod.join("tpu-pod-host-000.oxpartial"), foreign.join("h.oxpartial")).unwrap();
    std::fs::write(foreign.join("ALL_HOSTS.oxcombined"), b"my notes").unwrap();
    let refused = oxprof(&["pod", "combine", s(&foreign)]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("is not an oxprof pod-combined file"), "{}", refused.stderr);
    assert_eq!(std::fs::read(foreign.join("ALL_HOSTS.oxcombined")).unwrap(), b"my notes");

    // Nor is a link, even to an earlier combine: the file it points to stays as it was.
    #[cfg(unix)]
    {
        let linked = tmp.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::fs::copy(pod.join("tpu-pod-host-000.oxpartial"), linked.join("h.oxpartial")).unwrap();
        let target = tmp.path().join("earlier.oxcombined");
        std::fs::copy(pod.join("ALL_HOSTS.oxcombined"), &target).unwrap();
        std::os::unix::fs::symlink(&target, linked.join("ALL_HOSTS.oxcombined")).unwrap();
        let before = std::fs::read(&target).unwrap();
        let refused = oxprof(&["pod", "combine", s(&linked)]);
        assert_ne!(refused.code, 0);
        assert!(refused.stderr.contains("is not a file oxprof wrote"), "{}", refused.stderr);
        assert_eq!(std::fs::read(&target).unwrap(), before);
        // `pod partial --force` replaces a link itself, never the file it points to.
        let out = linked.join("partial-link.oxpartial");
        std::os::unix::fs::symlink(&target, &out).unwrap();
        let forced = oxprof(&["pod", "partial", hosts[0]["source"].as_str().unwrap(), "--out", s(&out), "--force"]);
        assert_eq!(forced.code, 0, "{}", forced.stderr);
        assert!(!std::fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), before);
    }
}

#[test]
fn a_corrupt_host_fails_its_partial_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.xplane.pb");
    std::fs::write(&bad, b"\x0a\xff\xff\xff\x0fnot an xspace").unwrap();
    let out = tmp.path().join("bad.oxpartial");
    let failed = oxprof(&["pod", "partial", s(&bad), "--out", s(&out)]);
    assert_ne!(failed.code, 0);
    assert_eq!(failed.stderr.trim().lines().count(), 1, "{}", failed.stderr);
    assert!(failed.stderr.contains("bad.xplane.pb"), "{}", failed.stderr);
    assert!(!out.exists());
    let missing = oxprof(&["pod", "partial", s(&tmp.path().join("gone.xplane.pb")), "--out", s(&out)]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("gone.xplane.pb"), "{}", missing.stderr);
}

/// `oxprof pod run` hands the job to spark-submit with this oxprof for the executors. A
/// STAND-IN spark-submit (a shell script recording its arguments) checks the command it
/// composes; the real cluster runs it in scripts/ci/test-spark-pod.sh.
#[cfg(unix)]
#[test]
fn pod_run_hands_the_job_to_spark_submit() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let record = tmp.path().join("args");
    let submit = tmp.path().join("spark-submit");
    std::fs::write(&submit, format!("#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nexit 3\n", record.display())).unwrap();
    std::fs::set_permissions(&submit, std::fs::Permissions::from_mode(0o755)).unwrap();
    let job = tmp.path().join("spark.py");
    std::fs::write(&job, "# the job\n").unwrap();
    let out = oxprof(&[
        "pod",
        "run",
        "s3://bucket/run",
        "/tmp/out-dir",
        "--master",
        "spark://127.0.0.1:7077",
        "--conf",
        "spark.executor.memory=512m",
        "--spark-submit",
        s(&submit),
        "--job",
        s(&job),
        "--",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 3, "spark-submit's exit code: {}", out.stderr);
    let args = std::fs::read_to_string(&record).unwrap();
    let args: Vec<&str> = args.lines().collect();
    let bin = env!("CARGO_BIN_EXE_oxprof");
    assert_eq!(
        args,
        [
            "--master",
            "spark://127.0.0.1:7077",
            "--conf",
            "spark.executor.memory=512m",
            s(&job),
            "s3://bucket/run",
            "/tmp/out-dir",
            "--oxprof",
            bin,
            "--format",
            "json"
        ]
    );
    // A setting without "=" is refused before spark-submit runs.
    std::fs::remove_file(&record).unwrap();
    let bad_conf = oxprof(&[
        "pod",
        "run",
        "d",
        "o",
        "--conf",
        "spark.executor.memory",
        "--spark-submit",
        s(&submit),
        "--job",
        s(&job),
    ]);
    assert_ne!(bad_conf.code, 0);
    assert!(bad_conf.stderr.contains("a Spark setting is KEY=VALUE"), "{}", bad_conf.stderr);
    assert!(!record.exists(), "spark-submit ran");
    let missing = oxprof(&["pod", "run", "d", "o", "--spark-submit", s(&tmp.path().join("nope")), "--job", s(&job)]);
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("install Apache Spark or pyspark"), "{}", missing.stderr);
}
