//! `oxprof query` and `oxprof export` end to end: snapshots of answers on a committed
//! fixture in every text format, the REPL, one-line errors with exit code 2 for bad or
//! writing SQL, and an export whose files are where Hive partitioning puts them.

use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::{oxprof, oxprof_with_stdin, repo_root};

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

// ---- Hostile SQL (issue 38): through the server's route and `oxprof query` -------------

/// A running `oxprof serve` with its stderr captured (killed when dropped).
struct Served {
    child: std::process::Child,
    addr: String,
}

impl Served {
    fn start(path: &std::path::Path, extra: &[&str]) -> Served {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
            .args(["serve"])
            .arg(path)
            .args(["--port", "0", "--quiet", "--no-cache"])
            .args(extra)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let url = line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line}"));
        let addr = url.trim_start_matches("http://").trim_end_matches('/').to_string();
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        Served { child, addr }
    }

    /// `GET target`: the status, the headers (lowercase names) and the body.
    fn get(&self, target: &str) -> (u16, Vec<(String, String)>, String) {
        use std::io::Read;
        let mut stream = std::net::TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(120))).unwrap();
        let request = format!("GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr);
        // A server that closes early (a refused request line) may reset the rest.
        let _ = stream.write_all(request.as_bytes());
        let mut reply = Vec::new();
        let _ = stream.read_to_end(&mut reply);
        let reply = String::from_utf8_lossy(&reply).into_owned();
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        let mut lines = head.lines();
        let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        (status, headers, body.to_string())
    }

    /// `/oxprof/api/query?sql=…`: the status and the JSON answer.
    fn query(&self, sql: &str) -> (u16, serde_json::Value) {
        let (status, headers, body) = self.get(&format!("/oxprof/api/query?sql={}", encode(sql)));
        let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v == "chunked");
        let json = if chunked { &body[body.find('{').unwrap_or(0)..=body.rfind('}').unwrap_or(0)] } else { &body };
        (status, serde_json::from_str(json).unwrap_or(serde_json::Value::Null))
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Form encoding, as browsers send a query (a space is `+`): a 2,500-term UNION stays
/// under the server's URL limit, as in the attack.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b' ' => "+".to_string(),
            _ if b.is_ascii_alphanumeric() => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn union(terms: usize) -> String {
    format!("SELECT 1{}", " UNION ALL SELECT 1".repeat(terms - 1))
}

fn doubling(levels: usize) -> String {
    let mut ctes = vec!["a0 AS (SELECT 1 AS x)".to_string()];
    for i in 1..=levels {
        ctes.push(format!("a{i} AS (SELECT x FROM a{0} UNION ALL SELECT x FROM a{0})", i - 1));
    }
    format!("WITH {} SELECT count(*) FROM a{levels}", ctes.join(", "))
}

/// Issue 38's hostile queries: before, the 2,500-term union aborted `oxprof serve` (3,000
/// terms `oxprof query`), `lpad(…, 1e9)` aborted both, `repeat('x', 2^31-1)` built 4 GB and
/// the doubling CTE planned for 41 s. Now each is a one-line 400 (exit 2) at once, and the
/// server stays up.
#[test]
fn hostile_queries_are_one_line_400s_through_the_route_and_the_cli() {
    let mut server = Served::start(std::path::Path::new(JAX), &["--cache-mb", "64"]);
    let cases = [
        (union(2_500), "UNION/INTERSECT/EXCEPT terms"),
        (union(3_000), "UNION/INTERSECT/EXCEPT terms"),
        (format!("SELECT 1{}", "+1".repeat(12_000)), "nested too deeply"),
        (doubling(20), "too large to plan"),
        (
            "SELECT sum(length(lpad(CAST(value AS VARCHAR), 1000000000))) FROM range(8)".to_string(),
            "lpad() would build",
        ),
        ("SELECT length(repeat('x', 2147483647))".to_string(), "repeat() would build"),
        (
            "SELECT length(string_agg(repeat(CAST(value AS VARCHAR), 1000000), ',')) FROM range(100)".to_string(),
            // The server's --cache-mb 64 refuses the strings before they are aggregated.
            "string_agg()|--cache-mb",
        ),
    ];
    for (sql, says) in &cases {
        let (status, answer) = server.query(sql);
        assert_eq!(status, 400, "{says}: {answer}");
        let error = answer["error"].as_str().unwrap_or_default();
        let says_it = |text: &str| says.split('|').any(|s| text.contains(s));
        assert!(says_it(error) && !error.contains('\n'), "{says}: {error}");
        assert!(server.alive(), "{says}: the server died");
        let cli = oxprof(&["query", sql, JAX]);
        assert_eq!(cli.code, 2, "{says}: {}", cli.stderr);
        assert!(says_it(&cli.stderr) && cli.stderr.lines().count() == 1, "{says}: {}", cli.stderr);
    }
    // A query within the limits still answers.
    let (status, answer) = server.query(&format!("SELECT count(*) AS n FROM ({})", union(400)));
    assert_eq!((status, &answer["rows"]), (200, &serde_json::json!([[400]])), "{answer}");
}

/// `--sql-memory` and `--timeout` bound `oxprof query` (the server's are 1 GiB and 20 s).
#[test]
fn oxprof_query_has_a_memory_and_a_time_limit() {
    let grouped = "SELECT value % 3000000 AS k, count(*) FROM range(6000000) GROUP BY k ORDER BY 2 DESC LIMIT 1";
    let out = oxprof(&["query", grouped, JAX, "--sql-memory", "16MiB"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("SQL memory limit of 16 MiB") && out.stderr.contains("--sql-memory"), "{}", out.stderr);
    let endless = "WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) FROM t";
    let out = oxprof(&["query", endless, JAX, "--timeout", "1"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("ran longer than the 1 s limit") && out.stderr.contains("--timeout"), "{}", out.stderr);
}

/// Before: SQL of 64 KiB or more got hyper's bare 414 (no body, none of the security
/// headers). Now the service's answer: a one-line JSON error and every header.
#[test]
fn sql_past_the_url_limit_gets_the_services_414() {
    let server = Served::start(std::path::Path::new(JAX), &[]);
    let sql = format!("SELECT '{}'", "x".repeat(70_000));
    let (status, headers, body) = server.get(&format!("/oxprof/api/query?sql={}", encode(&sql)));
    assert_eq!(status, 414, "{headers:?} {body}");
    for name in
        ["content-security-policy", "x-content-type-options", "referrer-policy", "x-frame-options", "cache-control"]
    {
        assert!(headers.iter().any(|(k, _)| k == name), "{name} missing: {headers:?}");
    }
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["status"], 414);
    assert!(answer["error"].as_str().unwrap().contains("64 KiB"), "{answer}");
    // The server answers the next request as usual.
    let (status, _, _) = server.get("/oxprof/api/info");
    assert_eq!(status, 200);
}

/// Before: after any SQL query, SIGTERM panicked ("Cannot drop a runtime…") and exited 2.
#[test]
fn sigterm_after_a_query_exits_cleanly() {
    let mut server = Served::start(std::path::Path::new(JAX), &[]);
    let (status, answer) = server.query("SELECT count(*) FROM slice");
    assert_eq!(status, 200, "{answer}");
    Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    let status = server.child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(server.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Before: concurrent first queries of one view failed "already exists" (40 of 48 on fresh
/// servers), and the route answered 500 for profile errors (413/422 on `/data`); one bad
/// host failed SQL over the whole run. `/oxprof/api/info` did not show the engine's memory.
#[test]
fn the_route_shares_one_engine_and_answers_profile_errors_as_data_does() {
    let server = Served::start(std::path::Path::new(JAX), &["--cache-mb", "64"]);
    let answers: Vec<(u16, serde_json::Value)> = std::thread::scope(|s| {
        let server = &server;
        let asks: Vec<_> = (0..24)
            .map(|i| s.spawn(move || server.query(&format!("SELECT count(*) + {i} AS n FROM step_ops"))))
            .collect();
        asks.into_iter().map(|a| a.join().unwrap()).collect()
    });
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
    }
    let (_, _, info) = server.get("/oxprof/api/info");
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["memory"]["sql"]["limit_bytes"], 1u64 << 30, "{info}");
    assert_eq!(info["memory"]["sql"]["bytes"], 0, "{info}");
    assert!(info["cache"]["bytes"].as_u64().unwrap() > 0, "{info}");

    // A run with a host that is not a profile: its rows are left out with a warning; the bad
    // host alone answers as /data does (422).
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("plugins/profile/2024_01_01_00_00_00");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::copy(
        repo_root().join(JAX).join("plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"),
        run.join("good.xplane.pb.gz"),
    )
    .unwrap();
    std::fs::write(run.join("bad.xplane.pb"), b"\x0a\xff\xff\xff\xff\x0fnot a profile").unwrap();
    let server = Served::start(dir.path(), &[]);
    let (status, answer) = server.query("SELECT host, count(*) AS n FROM slice GROUP BY host");
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["rows"].as_array().unwrap().len(), 1, "{answer}");
    let warnings = answer["warnings"].as_array().unwrap();
    assert!(warnings.len() == 1 && warnings[0].as_str().unwrap().starts_with("host bad of run "), "{answer}");
    let (status, answer) = server.query("SELECT count(*) FROM slice WHERE host = 'bad'");
    let (data_status, _, _) =
        server.get("/data/plugin/profile/data?run=2024_01_01_00_00_00&tag=overview_page&host=bad");
    assert_eq!((status, data_status), (422, 422), "{answer}");
    // `oxprof query`: the rows, and the warning on stderr.
    let cli = oxprof(&["query", "SELECT count(*) AS n FROM slice", dir.path().to_str().unwrap(), "--format", "csv"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    assert!(cli.stderr.starts_with("oxprof: warning: host bad of run "), "{}", cli.stderr);
}
