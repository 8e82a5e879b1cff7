//! The `oxprof` binary end to end: inspect output against XProf's own protobuf counts, bad
//! input of every kind (clear one-line errors, exit code 2, no panic, no hang), and
//! snapshots of the help and of a human-readable report.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{Output, oxprof, repo_root};

/// Plane and line counts of `oxprof inspect --json` for one host, shaped like the
/// references.
fn counts_of_host(host: &Value) -> Value {
    let planes: Vec<Value> = host["planes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            serde_json::json!({
                "id": p["id"], "name": p["name"], "events": p["events"],
                "event_metadata": p["event_metadata"], "stat_metadata": p["stat_metadata"],
                "lines": p["lines"].as_array().unwrap().iter()
                    .map(|l| serde_json::json!({"id": l["id"], "name": l["name"], "events": l["events"]}))
                    .collect::<Vec<_>>(),
            })
        })
        .collect();
    Value::Array(planes)
}

#[test]
fn inspect_counts_equal_xprof_protobuf_counts_on_refkit_fixtures() {
    let fixtures = std::fs::read_dir(repo_root().join("testdata/profiles")).unwrap();
    let mut checked = 0;
    for dir in fixtures.flatten() {
        let dir = dir.path();
        let reference: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("xplane_summary.json")).unwrap()).unwrap();
        let out = oxprof(&["inspect", "--json", dir.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let host = &report["runs"][0]["hosts"][0];
        let expected: Vec<Value> = reference[0]["planes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                serde_json::json!({
                    "id": p["id"], "name": p["name"], "events": p["num_events"],
                    "event_metadata": p["num_event_metadata"], "stat_metadata": p["num_stat_metadata"],
                    "lines": p["lines"].as_array().unwrap().iter()
                        .map(|l| serde_json::json!({"id": l["id"], "name": l["name"], "events": l["num_events"]}))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        assert_eq!(counts_of_host(host), Value::Array(expected), "{}", dir.display());
        assert_eq!(host["hostnames"], reference[0]["hostnames"]);
        checked += 1;
    }
    assert!(checked >= 5);
}

#[test]
fn inspect_counts_equal_xprof_protobuf_counts_on_external_profiles() {
    let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    if !external.is_dir() {
        eprintln!("SKIP: {} is absent; third-party profiles not checked", external.display());
        return;
    }
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_root().join("testdata/external-counts/counts.json")).unwrap(),
    )
    .unwrap();
    for (rel, expected) in reference.as_object().unwrap() {
        let file = external.join(rel);
        let out = oxprof(&["inspect", "--json", file.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{rel}: {}", out.stderr);
        let report: Value = serde_json::from_str(&out.stdout).unwrap();
        let host = &report["runs"][0]["hosts"][0];
        assert_eq!(counts_of_host(host), expected["planes"], "{rel}");
        assert_eq!(host["hostnames"], expected["hostnames"], "{rel}");
    }
}

#[test]
fn a_multi_host_run_lists_every_host() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("plugins/profile/2026_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    let src = repo_root().join("testdata/profiles/jax_train");
    let gz = find_gz(&src);
    std::fs::copy(&gz, run.join("worker0.xplane.pb.gz")).unwrap();
    std::fs::copy(&gz, run.join("worker1.xplane.pb.gz")).unwrap();
    let out = oxprof(&["inspect", "--json", tmp.path().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let hosts: Vec<&str> =
        report["runs"][0]["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["worker0", "worker1"]);
    assert_eq!(report["runs"][0]["run"], "2026_01_01_00_00_00");
}

fn find_gz(dir: &Path) -> PathBuf {
    for entry in walk(dir) {
        if entry.to_string_lossy().ends_with(".xplane.pb.gz") {
            return entry;
        }
    }
    panic!("no fixture under {}", dir.display());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

fn real_profile_bytes() -> Vec<u8> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let gz = find_gz(&repo_root().join("testdata/profiles/tf_custom_loop"));
    flate2::read::GzDecoder::new(std::fs::File::open(gz).unwrap()).read_to_end(&mut bytes).unwrap();
    bytes
}

/// Asserts a clear one-line error on stderr that names `file`, and exit code 2.
fn assert_bad_input(out: &Output, file: &str, mentions: &str) {
    assert_eq!(out.code, 2, "stdout: {}\nstderr: {}", out.stdout, out.stderr);
    let line = out.stderr.lines().find(|l| l.contains(file)).unwrap_or_else(|| {
        panic!("no error line naming {file}: {}", out.stderr);
    });
    assert!(line.starts_with("oxprof: "), "{line}");
    assert!(line.to_lowercase().contains(mentions), "expected {mentions:?} in {line:?}");
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::File::create(path).unwrap().write_all(bytes).unwrap();
}

#[test]
fn bad_input_gives_one_clear_line_and_exit_code_2() {
    let tmp = tempfile::tempdir().unwrap();
    let real = real_profile_bytes();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty.xplane.pb", Vec::new(), "empty"),
        ("truncated.xplane.pb", real[..real.len() / 2].to_vec(), "incomplete"),
        ("random.xplane.pb", (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect(), "xplane.pb"),
        (
            "garbage.xplane.pb.gz",
            {
                let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
                gz.extend_from_slice(b"this is not deflate data at all");
                gz
            },
            "gzip",
        ),
        // JSON that is no trace (a trace's content would decide over the name).
        ("text.xplane.pb", b"{\"hello\": []}".to_vec(), "not"),
    ];
    for (name, bytes, mentions) in cases {
        let path = tmp.path().join(name);
        write(&path, &bytes);
        let out = oxprof(&["inspect", path.to_str().unwrap()]);
        assert_bad_input(&out, name, mentions);
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {}", out.stderr);
    }
}

#[test]
fn a_directory_without_profiles_explains_the_layout() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("logs/plugins/profile/empty_run")).unwrap();
    let out = oxprof(&["inspect", tmp.path().to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no profiles found"), "{}", out.stderr);
    assert!(out.stderr.contains("plugins/profile/<session>/<host>.xplane.pb"), "{}", out.stderr);
    let missing = tmp.path().join("does-not-exist");
    let out = oxprof(&["inspect", missing.to_str().unwrap()]);
    assert_bad_input(&out, "does-not-exist", "cannot read");
}

#[test]
fn an_unreadable_file_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    // /proc/self/mem is a regular file whose read at offset 0 fails, even for root.
    let link = tmp.path().join("unreadable.xplane.pb");
    std::os::unix::fs::symlink("/proc/self/mem", &link).unwrap();
    let out = oxprof(&["inspect", link.to_str().unwrap()]);
    assert_bad_input(&out, "unreadable.xplane.pb", "cannot read");
}

#[test]
fn a_bad_host_next_to_good_ones_is_reported_and_the_good_ones_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("plugins/profile/run1");
    std::fs::create_dir_all(&run).unwrap();
    write(&run.join("good.xplane.pb"), &real_profile_bytes());
    write(&run.join("zero.xplane.pb"), &[]);
    let out = oxprof(&["inspect", "--json", tmp.path().to_str().unwrap()]);
    assert_bad_input(&out, "zero.xplane.pb", "empty");
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    let hosts = report["runs"][0]["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    assert_eq!(hosts[0]["host"], "good");
    assert!(hosts[0]["planes"].as_array().unwrap().len() >= 2);
    assert_eq!(hosts[1]["host"], "zero");
    assert!(hosts[1]["error"].as_str().unwrap().contains("empty"));
}

#[test]
fn help_is_stable() {
    let out = oxprof(&["--help"]);
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("help", out.stdout);
    let out = oxprof(&["inspect", "--help"]);
    insta::assert_snapshot!("inspect_help", out.stdout);
}

#[test]
fn inspect_text_report_is_stable() {
    let out = oxprof(&["inspect", "testdata/profiles/tf_custom_loop"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("inspect_tf_custom_loop", out.stdout);
}

/// The README's headless command: the input-pipeline verdict of the bundled demo profile.
#[test]
fn readme_demo_is_stable() {
    let out = oxprof(&["data", "input_pipeline_analyzer", "testdata/profiles/tf_custom_loop", "--format", "md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("Your program is HIGHLY input-bound"), "{}", out.stdout);
    insta::assert_snapshot!("readme_demo", out.stdout);
}

#[test]
fn data_csv_and_json_agree_with_xprof_formats() {
    let out = oxprof(&["data", "framework_op_stats", "testdata/profiles/tf_custom_loop", "--format", "csv"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let expected =
        std::fs::read_to_string(repo_root().join("testdata/profiles/tf_custom_loop/xprof_out/framework_op_stats.csv"))
            .unwrap();
    assert_eq!(out.stdout, expected, "CSV differs from XProf's /data_csv");
    let out = oxprof(&["data", "pod_viewer", "testdata/profiles/tf_custom_loop", "--host", "vm"]);
    let body: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(body["podStatsSequence"]["podStatsMap"].as_array().is_some_and(|s| s.len() == 30), "{}", out.stdout);
}

#[test]
fn data_errors_are_clear() {
    let out = oxprof(&["data", "no_such_tool", "testdata/profiles/tf_custom_loop"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown tool"), "{}", out.stderr);
    let out = oxprof(&["data", "overview_page", "testdata/profiles/tf_custom_loop", "--host", "nope"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no host named \"nope\"") && out.stderr.contains("vm"), "{}", out.stderr);
    let out = oxprof(&["data", "overview_page", "testdata/profiles/tf_keras_fit", "--format", "md"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("No steps found"), "{}", out.stdout);
    // XProf's step analysis of a PyTorch trace points to the PyTorch views, not to
    // TensorFlow/JAX step markers.
    let trace = "testdata/kineto/train/worker0.1795643806114107950.pt.trace.json.gz";
    let out = oxprof(&["data", "overview_page", trace, "--format", "md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("PyTorch profiler trace") && out.stdout.contains("pytorch_overview"), "{}", out.stdout);
    assert!(!out.stdout.contains("Wrap each training step"), "{}", out.stdout);
}

/// memory_profile in Markdown: the allocator's peak and the allocations live at it.
#[test]
fn memory_profile_markdown_shows_the_peak_and_live_allocations() {
    let out = oxprof(&["data", "memory_profile", "testdata/profiles/tf_memory", "--format", "md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("## bfc_cpu_allocator_for_gpu\n\n- **peak_heap_usage_mib**: 49.00\n"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("25 of 25 allocations live at the peak"), "{}", out.stdout);
    assert!(
        out.stdout.contains("| AssignSubVariableOp_3 | 4.00 | 4.00 | 1 | temp | float | [1024,1024] |"),
        "{}",
        out.stdout
    );
}

/// A tool with an empty table (kernel_stats of a CPU profile) says so in Markdown mode instead of
/// printing nothing; pod_viewer's proto JSON becomes a step × core table.
#[test]
fn markdown_without_a_table_says_so() {
    let out = oxprof(&["data", "kernel_stats", "testdata/profiles/tf_custom_loop", "--format", "md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("no table to show as Markdown; --format json"), "{}", out.stderr);
    let out = oxprof(&["data", "pod_viewer", "testdata/profiles/tf_custom_loop", "--format", "md"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("| Step | Core | Host | Step time (µs) | Bottleneck | Device compute |"),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.matches("| vm |").count(), 30, "{}", out.stdout);
    // The trace viewer's events are no table at all.
    for format in ["md", "csv"] {
        let out = oxprof(&["data", "trace_viewer@", "testdata/profiles/tf_custom_loop", "--format", format]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains("trace_viewer@'s output has no table") && out.stderr.contains("--format json"),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn serve_help_is_stable() {
    let out = oxprof(&["serve", "--help"]);
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("serve_help", out.stdout);
}

/// `oxprof serve` end to end: prints its URL, answers XProf's /runs for the bundled demo
/// (its two CPU runs, the MI300X GPU run and the PyTorch A100 run),
/// and stops cleanly on SIGTERM.
#[test]
fn serve_prints_its_url_and_serves_the_demo() {
    use std::io::{BufRead, BufReader, Read};
    /// Stops the server when an assertion fails before the test stops it.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            // After a clean stop the child is reaped already and this does nothing.
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut guard = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_oxprof"))
            // The persistent analysis cache of these tests, not the user's.
            .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
            .args(["serve", "--port", "0", "--quiet"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let child = &mut guard.0;
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line}"));
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let addr = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    write!(stream, "GET /data/plugin/profile/runs HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        reply.ends_with(
            r#"["tf_custom_loop/2026_11_22_03_01_43", "pytorch_a100_ddp", "mi300x_jax_gemm/jax08_gemm", "jax_train/2026_11_22_03_01_45"]"#
        ),
        "{reply}"
    );
    // SIGTERM to the child we started: a graceful stop with exit code 0.
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        assert!(Instant::now() < deadline, "oxprof serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(0));
}

/// Several processes fill one persistent-cache entry at once; every answer (theirs, a
/// reopening one's, one after a torn entry, one without the cache) is the same, and
/// `oxprof cache info|clear` see the entry.
#[test]
fn processes_share_the_persistent_analysis_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().to_str().unwrap();
    let profile = "testdata/profiles/jax_train";
    let uncached = oxprof(&["data", "overview_page", profile, "--no-cache"]);
    assert_eq!(uncached.code, 0, "{}", uncached.stderr);
    let racing: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_oxprof"))
                .args(["data", "overview_page", profile, "--cache-dir", cache])
                .current_dir(repo_root())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in racing {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), uncached.stdout);
    }
    let info = oxprof(&["cache", "info", "--cache-dir", cache]);
    assert!(info.stdout.contains(": 1 entries"), "{}", info.stdout);
    assert!(info.stdout.contains(&format!("of its build ({})", oxprof_api::BUILD_FINGERPRINT)), "{}", info.stdout);
    assert_eq!(oxprof(&["data", "overview_page", profile, "--cache-dir", cache]).stdout, uncached.stdout);
    // A torn entry (a crash mid-write on a file system without atomic rename) is a miss.
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("v1")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let bytes = std::fs::read(&entries[0]).unwrap();
    std::fs::write(&entries[0], &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(oxprof(&["data", "overview_page", profile, "--cache-dir", cache]).stdout, uncached.stdout);
    let cleared = oxprof(&["cache", "clear", "--cache-dir", cache]);
    assert!(cleared.stdout.contains("removed 1 entries"), "{}", cleared.stdout);
    assert!(oxprof(&["cache", "info", "--cache-dir", cache]).stdout.contains(": 0 entries"));
}

/// `oxprof explain`: the JSON names its schema and ranks the findings; `--fail-on` sets
/// the exit code; the Markdown leads with what bounds the run.
#[test]
fn explain_names_the_bottleneck_and_gates_on_severity() {
    let input_bound = "testdata/profiles/tf_custom_loop";
    let out = oxprof(&["explain", input_bound, "--format", "json", "--no-cache"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let json: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(json["schema"], "oxprof.explain/1");
    assert_eq!(json["bound_by"], "input");
    assert_eq!(json["findings"][0]["id"], "input_bound");
    assert_eq!(json["findings"][0]["severity"], "critical");
    let md = oxprof(&["explain", input_bound, "--no-cache"]);
    assert!(md.stdout.contains("**Bound by input**"), "{}", md.stdout);
    assert_eq!(oxprof(&["explain", input_bound, "--fail-on", "warning", "--no-cache"]).code, 1);
    let healthy = oxprof(&["explain", "testdata/profiles/jax_train", "--fail-on", "warning", "--no-cache"]);
    assert_eq!(healthy.code, 0, "{}", healthy.stdout);
    let missing = oxprof(&["explain", "testdata/no/such/dir"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert_eq!(missing.stderr.lines().count(), 1, "{}", missing.stderr);
}

/// Completions and the man page come from the CLI's definition (every subcommand is in
/// them); `--version` names the build.
#[test]
fn completions_man_page_and_version() {
    let bash = oxprof(&["completions", "bash"]);
    assert_eq!(bash.code, 0, "{}", bash.stderr);
    let man = oxprof(&["man"]);
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(man.stdout.starts_with(".ie"), "{}", &man.stdout[..man.stdout.len().min(200)]);
    assert!(man.stdout.contains(".TH oxprof 1"));
    for command in ["inspect", "data", "explain", "diff", "query", "serve", "cache", "completions", "man"] {
        assert!(bash.stdout.contains(&format!("oxprof,{command})")), "bash completion lacks {command}");
        assert!(man.stdout.contains(command), "man page lacks {command}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = oxprof(&["completions", shell]);
        assert!(out.code == 0 && out.stdout.contains("oxprof"), "{shell}: {}", out.stderr);
    }
    let version = oxprof(&["--version"]);
    assert_eq!(
        version.stdout.trim(),
        format!("oxprof {} (build {})", env!("CARGO_PKG_VERSION"), oxprof_api::BUILD_FINGERPRINT)
    );
    assert_eq!(oxprof(&["completions", "tcsh"]).code, 2);
}

/// A long load draws a progress bar (bytes, speed, ETA) on stderr when it is a terminal
/// (`script` gives the command a pseudo-terminal; the bar shows at once with
/// `OXPROF_PROGRESS_AFTER_MS=0`), and none when stderr is not one.
#[test]
fn progress_bar_only_on_a_terminal() {
    let profile = "testdata/profiles/tf_custom_loop";
    let Ok(script) = which_script() else {
        eprintln!("skipped: no `script` (util-linux) for a pseudo-terminal");
        return;
    };
    let bin = env!("CARGO_BIN_EXE_oxprof");
    let command = format!("{bin} data overview_page {profile} --no-cache --format md");
    let out = Command::new(script)
        .args(["-qec", &command, "/dev/null"])
        .env("OXPROF_PROGRESS_AFTER_MS", "0")
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(terminal.contains("vm.xplane.pb.gz") && terminal.contains("B/s") && terminal.contains("ETA"), "{terminal}");
    assert!(terminal.contains("device_duty_cycle_percent"), "{terminal}");
    let piped = Command::new(bin)
        .args(["data", "overview_page", profile, "--no-cache", "--format", "md"])
        .env("OXPROF_PROGRESS_AFTER_MS", "0")
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(piped.status.success());
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!stderr.contains("B/s") && !stderr.contains("ETA"), "{stderr}");
}

fn which_script() -> Result<PathBuf, ()> {
    ["/usr/bin/script", "/bin/script"].iter().map(PathBuf::from).find(|p| p.exists()).ok_or(())
}

/// A capture counts down its duration on a terminal (a profiler server on 127.0.0.1 that
/// accepts and never answers, so the capture traces for its duration and then fails at
/// its deadline), and draws nothing when stderr is not one.
#[test]
fn capture_counts_down_only_on_a_terminal() {
    let Ok(script) = which_script() else {
        eprintln!("skipped: no `script` (util-linux) for a pseudo-terminal");
        return;
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap().to_string();
    // Holds every connection open without a word until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().take(16).flatten() {
            held.push(stream);
        }
    });
    let logdir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_oxprof");
    let args = format!(
        "capture {address} --duration 1500ms --deadline-margin 1s --retries 0 --logdir {}",
        logdir.path().display()
    );
    let out = Command::new(&script)
        .args(["-qec", &format!("{bin} {args}"), "/dev/null"])
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(terminal.contains(&format!("capturing 1.5 s from {address}")), "{terminal}");
    assert!(terminal.contains("waiting for") && terminal.contains("to send the profile"), "{terminal}");
    let piped = Command::new(bin).args(args.split(' ')).current_dir(repo_root()).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(!stderr.contains("capturing 1.5 s"), "{stderr}");
}
