//! `oxprof query` and `oxprof export` end to end: snapshots of answers on a committed
//! fixture in every text format, the REPL, one-line errors with exit code 2 for bad or
//! writing SQL, and an export whose files are where Hive partitioning puts them.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn oxprof_with_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "oxprof {args:?} panicked: {stderr}");
    Output { code: out.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr }
}

fn oxprof(args: &[&str]) -> Output {
    oxprof_with_stdin(args, "")
}

const JAX: &str = "testdata/profiles/jax_train";
const TOP: &str =
    "SELECT name, count(*) AS n, sum(dur) AS total_ns FROM slice GROUP BY name ORDER BY total_ns DESC, name LIMIT 5";

#[test]
fn query_formats() {
    for format in ["table", "csv", "json"] {
        let out = oxprof(&["query", TOP, JAX, "--format", format]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        insta::assert_snapshot!(format!("query_top_{format}"), out.stdout);
    }
    let out = oxprof(&["query", "SELECT host, step_num, step_time_ms FROM steps ORDER BY step_num LIMIT 3", JAX]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("query_steps", out.stdout);
    let out = oxprof(&["query", "SELECT * FROM top_ops_per_step WHERE rank = 1 ORDER BY step LIMIT 3", JAX]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn query_parquet_is_a_parquet_file() {
    let out = Command::new(env!("CARGO_BIN_EXE_oxprof"))
        .args(["query", TOP, JAX, "--format", "parquet"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(&out.stdout[..4], b"PAR1");
    assert_eq!(&out.stdout[out.stdout.len() - 4..], b"PAR1");
}

#[test]
fn bad_sql_is_one_line_and_exit_2() {
    let cases = [
        ("SELEC 1", "bad_syntax"),
        ("COPY (SELECT 1) TO '/tmp/oxprof-copy.csv'", "copy"),
        ("SELECT * FROM no_such_table", "unknown_table"),
        ("SELECT no_such_column FROM slice", "unknown_column"),
    ];
    for (sql, name) in cases {
        let out = oxprof(&["query", sql, JAX]);
        assert_eq!(out.code, 2, "{sql}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{sql}: {}", out.stderr);
        assert!(out.stdout.is_empty());
        insta::assert_snapshot!(format!("query_error_{name}"), out.stderr);
    }
    assert!(!std::path::Path::new("/tmp/oxprof-copy.csv").exists());
}

#[test]
fn repl_answers_each_statement() {
    let out = oxprof_with_stdin(
        &["query", "--repl", JAX],
        "SELECT count(*) AS hosts FROM hosts;\nSELEC 1;\nSELECT run IS NOT NULL AS ok\n  FROM runs;\n",
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("repl_stdout", out.stdout);
    assert!(out.stderr.contains("error: "), "{}", out.stderr);
}

#[test]
fn export_writes_hive_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("ds");
    let out = oxprof(&["export", JAX, "--to", "parquet", target.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let mut files = Vec::new();
    let mut stack = vec![target.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                files.push(e.path().strip_prefix(&target).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    files.sort();
    insta::assert_snapshot!("export_files", files.join("\n"));
    // Into the same directory again: refused, nothing replaced.
    let again = oxprof(&["export", JAX, "--to", "parquet", target.to_str().unwrap()]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("not empty"), "{}", again.stderr);
}

/// `--hosts-at-once`: hosts read one after the other or side by side answer alike; 0 is
/// refused in one line.
#[test]
fn hosts_at_once_answers_alike() {
    const RUN: &str = "testdata/tpu-synthetic/megascale";
    const SQL: &str = "SELECT host, name, count(*) AS n, sum(dur) AS total FROM slice GROUP BY host, name ORDER BY host, total DESC, name";
    let one = oxprof(&["query", SQL, RUN]);
    assert_eq!(one.code, 0, "{}", one.stderr);
    assert!(one.stdout.matches("host").count() > 3, "{}", one.stdout);
    for n in ["2", "3", "8"] {
        let many = oxprof(&["query", SQL, RUN, "--hosts-at-once", n]);
        assert_eq!((many.code, &many.stdout), (0, &one.stdout), "--hosts-at-once {n}: {}", many.stderr);
    }
    let zero = oxprof(&["query", SQL, RUN, "--hosts-at-once", "0"]);
    assert_eq!(zero.code, 2);
    assert!(zero.stderr.contains("--hosts-at-once"), "{}", zero.stderr);
}

#[test]
fn query_help() {
    let out = oxprof(&["query", "--help"]);
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("query_help", out.stdout);
}

/// `oxprof serve`'s SQL route answers through the served session as `oxprof query` does,
/// with projected, host-filtered and limited scans, and bad SQL is HTTP 400.
#[test]
fn the_servers_query_route_answers_as_the_cli() {
    use std::io::{BufRead, BufReader, Read};
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut guard = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_oxprof"))
            .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
            .args(["serve", JAX, "--port", "0", "--quiet"])
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut stdout = BufReader::new(guard.0.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line}"));
    let addr = url.trim_start_matches("http://").trim_end_matches('/').to_string();
    let get = |sql: &str| -> (String, serde_json::Value) {
        let encoded: String = sql
            .bytes()
            .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
            .collect();
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        write!(stream, "GET /oxprof/api/query?sql={encoded} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
            .unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).unwrap();
        let status = reply.lines().next().unwrap_or("").to_string();
        let body = reply.split("\r\n\r\n").nth(1).unwrap_or("");
        // Chunked or not, the JSON object is the part between the outer braces.
        let json = &body[body.find('{').unwrap_or(0)..=body.rfind('}').unwrap_or(0)];
        (status, serde_json::from_str(json).unwrap_or(serde_json::Value::Null))
    };
    for sql in [
        "SELECT count(*) AS n FROM slice",
        "SELECT name, count(*) AS n, sum(dur) AS total FROM slice GROUP BY name ORDER BY total DESC, name LIMIT 5",
        "SELECT count(*) AS n FROM slice WHERE host = 'no such host'",
    ] {
        let (status, answer) = get(sql);
        assert!(status.starts_with("HTTP/1.1 200"), "{sql}: {status} {answer}");
        let cli = oxprof(&["query", sql, JAX, "--format", "json"]);
        assert_eq!(cli.code, 0, "{}", cli.stderr);
        let cli: serde_json::Value = serde_json::from_str(&cli.stdout).unwrap();
        let columns: Vec<&str> =
            answer["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        // The CLI's JSON rows as the route's arrays (the CLI leaves NULLs out).
        let expected: Vec<serde_json::Value> = cli
            .as_array()
            .unwrap()
            .iter()
            .map(|row| columns.iter().map(|c| row.get(*c).cloned().unwrap_or(serde_json::Value::Null)).collect())
            .collect();
        assert_eq!(answer["rows"].as_array().unwrap(), &expected, "{sql}");
        // Asked again: the same answer (from the session's response cache).
        assert_eq!(get(sql), (status, answer), "{sql} repeated");
    }
    // Bad SQL is a 400, again when repeated (a failure is not kept).
    for _ in 0..2 {
        let (status, answer) = get("SELEC 1");
        assert!(status.starts_with("HTTP/1.1 400"), "{status} {answer}");
    }
}
