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

#[test]
fn query_help() {
    let out = oxprof(&["query", "--help"]);
    assert_eq!(out.code, 0);
    insta::assert_snapshot!("query_help", out.stdout);
}
