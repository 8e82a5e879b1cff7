//! The bounded verbs (`top`, `steps`, `tool`, `runs`, `events`, `hlo`, `allocations`) and
//! `oxprof mcp` end to end through
//! the binary: snapshots of their Markdown, every verb's default answer within its byte
//! budget on every real profile, the budget's cut said at the end, errors as one line
//! (exit 2), and an MCP session over stdio whose tool results equal the CLI's JSON.
//! (`scripts/mcp-client-check.py` drives the same server with the official Python SDK.)

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{oxprof, repo_root};

fn ok(args: &[&str]) -> String {
    let out = oxprof(args);
    assert_eq!(out.code, 0, "oxprof {args:?}: {}", out.stderr);
    out.stdout
}

#[test]
fn top_ops_is_stable() {
    insta::assert_snapshot!(
        "top_ops_tf_custom_loop",
        ok(&["top", "ops", "testdata/profiles/tf_custom_loop", "--limit", "5"])
    );
}

#[test]
fn top_by_another_column_with_an_offset_is_stable() {
    let args =
        ["top", "ops", "testdata/profiles/tf_keras_fit", "--by", "occurrences", "--offset", "10", "--limit", "3"];
    insta::assert_snapshot!("top_ops_by_occurrences_offset", ok(&args));
}

#[test]
fn pytorch_operators_and_steps_are_stable() {
    insta::assert_snapshot!(
        "top_operators_kineto_train",
        ok(&["top", "operators", "testdata/kineto/train", "--limit", "5"])
    );
    insta::assert_snapshot!("steps_kineto_train", ok(&["steps", "testdata/kineto/train"]));
}

#[test]
fn steps_and_runs_are_stable() {
    insta::assert_snapshot!("steps_tf_custom_loop", ok(&["steps", "testdata/profiles/tf_custom_loop", "--limit", "5"]));
    insta::assert_snapshot!("runs_diff_logdir", ok(&["runs", "testdata/diff"]));
}

#[test]
fn tool_is_stable_and_json_is_typed() {
    let md = ok(&["tool", "overview_page", "testdata/profiles/tf_custom_loop", "--limit", "2"]);
    insta::assert_snapshot!("tool_overview_page_tf_custom_loop", md);
    let json: Value =
        serde_json::from_str(&ok(&["tool", "kernel_stats", "testdata/profiles/tf_custom_loop", "--format", "json"]))
            .unwrap();
    assert_eq!(json["tool"], "kernel_stats");
    assert_eq!(json["host"], "ALL_HOSTS");
    assert!(json["tables"][0]["columns"].as_array().is_some_and(|c| !c.is_empty()), "{json}");
}

#[test]
fn verb_help_is_stable() {
    insta::assert_snapshot!("top_help", ok(&["top", "--help"]));
    insta::assert_snapshot!("mcp_help", ok(&["mcp", "--help"]));
}

/// Profiles every verb is tried on: the committed real ones, and the third-party GPU
/// captures when they are there.
fn real_profiles() -> Vec<PathBuf> {
    let root = repo_root();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(root.join("testdata/profiles"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .chain([root.join("testdata/kineto/train"), root.join("testdata/kineto/ddp"), root.join("testdata/diff")])
        .collect();
    let external = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/testdata/external"));
    let gpu = [
        "pytorch-kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "openxla-xprof/demo/plugins/profile/GPU-multi-worker",
        "AMD-AGI-TraceLens/tests/traces/mi300/jax08_attention/tw003.xplane.pb",
    ];
    if external.is_dir() {
        paths.extend(gpu.iter().map(|p| external.join(p)).filter(|p| p.exists()));
    } else {
        eprintln!("SKIP: {} is absent; third-party GPU profiles not tried", external.display());
    }
    paths.sort();
    paths
}

/// The default budget of every verb (`oxprof_agent::DEFAULT_BUDGET`).
const BUDGET: usize = 16 << 10;

#[test]
fn every_verb_answers_within_its_budget_on_real_profiles() {
    let verbs: [&[&str]; 13] = [
        &["events", "--name", "."],
        &["events", "--name", ".", "--aggregate"],
        &["hlo"],
        &["allocations"],
        &["top", "ops"],
        &["top", "kernels"],
        &["top", "hlo"],
        &["top", "operators"],
        &["steps"],
        &["tool", "overview_page"],
        &["tool", "framework_op_stats"],
        &["tool", "input_pipeline_analyzer"],
        &["runs"],
    ];
    let mut largest = (0, String::new());
    for path in real_profiles() {
        let path = path.to_str().unwrap();
        for verb in verbs {
            for format in ["md", "json"] {
                let args: Vec<&str> = verb.iter().copied().chain([path, "--format", format]).collect();
                let out = oxprof(&args);
                if out.code != 0 {
                    // A verb that does not apply to this profile says so in one line.
                    assert_eq!(out.code, 2, "oxprof {args:?}: {}", out.stderr);
                    assert_eq!(out.stderr.lines().count(), 1, "oxprof {args:?}: {}", out.stderr);
                    continue;
                }
                assert!(out.stdout.len() <= BUDGET, "oxprof {args:?}: {} bytes", out.stdout.len());
                if format == "md" {
                    let last = out.stdout.lines().last().unwrap_or_default();
                    assert!(
                        ["All ", "Rows ", "No tables", "Left out: "].iter().any(|start| last.starts_with(start)),
                        "oxprof {args:?} ends with {last:?}"
                    );
                }
                if out.stdout.len() > largest.0 {
                    largest = (out.stdout.len(), args.join(" "));
                }
            }
        }
    }
    eprintln!("largest answer: {} bytes ({})", largest.0, largest.1);
}

#[test]
fn a_small_budget_cuts_rows_and_says_how_to_get_them() {
    let md = ok(&["top", "ops", "testdata/profiles/tf_keras_fit", "--limit", "100", "--budget", "4KiB"]);
    assert!(md.len() <= 4096, "{} bytes", md.len());
    let last = md.lines().last().unwrap();
    assert!(last.contains("more rows (the byte budget was reached: --budget raises it): --offset "), "{last}");
    let json: Value = serde_json::from_str(&ok(&[
        "top",
        "ops",
        "testdata/profiles/tf_keras_fit",
        "--limit",
        "100",
        "--budget",
        "4KiB",
        "--format",
        "json",
    ]))
    .unwrap();
    let table = &json["table"];
    let shown = table["rows"].as_array().unwrap().len();
    assert!(shown < 100 && shown > 0, "{shown}");
    assert_eq!(table["total_rows"], 313);
    let left_out = table["left_out"].as_str().unwrap();
    assert!(
        left_out.starts_with(&format!("{} more rows", 313 - shown)) && left_out.ends_with(&format!("--offset {shown}")),
        "{left_out}"
    );
}

#[test]
fn verb_errors_are_one_line() {
    let out = oxprof(&["top", "ops", "testdata/profiles/tf_custom_loop", "--by", "nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("oxprof: bad argument by: framework_op_stats has no column \"nope\"; sort by one of rank, "),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1);
    let out = oxprof(&["tool", "trace_viewer", "testdata/profiles/tf_custom_loop"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no tables") && out.stderr.contains("oxprof data trace_viewer"), "{}", out.stderr);
    let out = oxprof(&["steps", "testdata/profiles/tf_custom_loop", "--run", "nope"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no run named \"nope\""), "{}", out.stderr);
    let out = oxprof(&["top", "ops", "testdata/profiles/tf_custom_loop", "--budget", "10"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("bad argument budget"), "{}", out.stderr);
}

/// One MCP session over stdio, line-delimited JSON-RPC, every read bounded.
struct Mcp {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    next_id: u64,
}

impl Mcp {
    fn start(path: &str) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
            .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
            .args(["mcp", path])
            .current_dir(repo_root())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut mcp = Mcp { child, stdin, lines, next_id: 1 };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "verbs.rs", "version": "0"}}),
        );
        assert!(init["serverInfo"]["name"].is_string(), "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (60 s at most) for its response's result.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {method} within 60 s"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The JSON of a tool result's text, which equals its structured content.
fn tool_json(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["structuredContent"], text);
    text
}

#[test]
fn mcp_over_stdio_answers_as_the_cli_does() {
    let path = "testdata/profiles/tf_custom_loop";
    let mut mcp = Mcp::start(path);
    let tools = mcp.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["allocations", "diff", "events", "explain", "hlo", "list_runs", "query", "steps", "tool", "top"]
    );
    for tool in tools["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        // Every result has its schema (explain's: `oxprof.explain/1`).
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    }
    let explain_tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "explain").unwrap();
    let properties = &explain_tool["outputSchema"]["properties"];
    assert!(properties["findings"].is_object() && properties["facts"].is_object(), "{explain_tool}");
    let diff_tool = tools["tools"].as_array().unwrap().iter().find(|t| t["name"] == "diff").unwrap();
    let properties = &diff_tool["outputSchema"]["properties"];
    assert!(properties["gates"].is_object() && properties["tripped"].is_object(), "{diff_tool}");
    let cli_json = |args: &[&str]| -> Value {
        let args: Vec<&str> = args.iter().copied().chain(["--format", "json"]).collect();
        serde_json::from_str(&ok(&args)).unwrap()
    };
    let top = mcp.call("top", json!({"what": "ops", "limit": 4, "offset": 2}));
    assert_eq!(tool_json(&top), cli_json(&["top", "ops", path, "--limit", "4", "--offset", "2"]));
    let steps = mcp.call("steps", json!({}));
    assert_eq!(tool_json(&steps), cli_json(&["steps", path]));
    let tool = mcp.call("tool", json!({"tool": "overview_page", "limit": 3}));
    assert_eq!(tool_json(&tool), cli_json(&["tool", "overview_page", path, "--limit", "3"]));
    let explain = mcp.call("explain", json!({}));
    assert_eq!(tool_json(&explain), cli_json(&["explain", path]));
    let runs = mcp.call("list_runs", json!({}));
    assert_eq!(tool_json(&runs), cli_json(&["runs", path]));
    let events = mcp.call("events", json!({"name": "^Iterator", "aggregate": true, "limit": 5}));
    assert_eq!(tool_json(&events), cli_json(&["events", path, "--name", "^Iterator", "--aggregate", "--limit", "5"]));
    let hlo = mcp.call("hlo", json!({}));
    assert_eq!(tool_json(&hlo), cli_json(&["hlo", path]));
    let allocations = mcp.call("allocations", json!({"limit": 3}));
    assert_eq!(tool_json(&allocations), cli_json(&["allocations", path, "--limit", "3"]));
    // A failed call is a tool error with the CLI's line.
    let bad = mcp.call("top", json!({"what": "ops", "by": "nope"}));
    assert_eq!(bad["isError"], true, "{bad}");
    let cli = oxprof(&["top", "ops", path, "--by", "nope"]);
    assert_eq!(format!("oxprof: {}\n", bad["content"][0]["text"].as_str().unwrap()), cli.stderr);
    // The runs are resources.
    let resources = mcp.request("resources/list", json!({}));
    let uri = resources["resources"][0]["uri"].as_str().unwrap().to_string();
    assert!(uri.starts_with("oxprof://run/"), "{resources}");
    let read = mcp.request("resources/read", json!({"uri": uri}));
    let run: Value = serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(run["hosts"], json!(["vm"]));
}

#[test]
fn mcp_query_and_diff_equal_the_cli() {
    let logdir = "testdata/diff";
    let mut mcp = Mcp::start(logdir);
    let sql = "SELECT run, COUNT(*) AS steps FROM steps GROUP BY run ORDER BY run";
    let answer = tool_json(&mcp.call("query", json!({"sql": sql})));
    let names: Vec<&str> =
        answer["table"]["columns"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    let rows: Vec<Value> = answer["table"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            Value::Object(names.iter().zip(row.as_array().unwrap()).map(|(n, v)| (n.to_string(), v.clone())).collect())
        })
        .collect();
    let cli: Value = serde_json::from_str(&ok(&["query", sql, logdir, "--format", "json"])).unwrap();
    assert_eq!(Value::Array(rows), cli);
    let (a, b) = ("slow_b32/2026_11_25_20_43_50", "fast_b32/2026_11_25_20_43_54");
    let diff = mcp.call("diff", json!({"run_a": a, "run_b": b, "limit": 5}));
    let text: Value = serde_json::from_str(diff["content"][0]["text"].as_str().unwrap()).unwrap();
    let cli: Value = serde_json::from_str(&ok(&[
        "diff", logdir, logdir, "--run-a", a, "--run-b", b, "--limit", "5", "--format", "json",
    ]))
    .unwrap();
    assert_eq!(text, cli);
    let default = mcp.call("diff", json!({"run_a": a, "run_b": b}));
    assert!(default["content"][0]["text"].as_str().unwrap().len() <= BUDGET);
}

/// One raw HTTP/1.1 request on `/mcp` of `address` with the `Host` header `host` and
/// `headers` (each ending in CRLF): the status code, the response's headers and its body.
fn mcp_request(address: &str, method: &str, host: &str, headers: &str, body: &str) -> (u16, String, String) {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    write!(
        stream,
        "{method} /mcp HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    (status, head.to_string(), rest.to_string())
}

/// One POST on `/mcp` with `host` and maybe an `Origin`; the status code and the body.
fn http_post(address: &str, host: &str, origin: Option<&str>, body: &str) -> (u16, String) {
    let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
    let (status, _, body) = mcp_request(address, "POST", host, &origin, body);
    (status, body)
}

/// `oxprof mcp testdata/profiles/tf_custom_loop --http 0 EXTRA…`, killed when dropped (a
/// failed assertion leaves no server behind).
struct McpHttp {
    child: std::process::Child,
    /// `127.0.0.1:PORT`.
    address: String,
}

impl McpHttp {
    fn start(extra: &[&str]) -> McpHttp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_oxprof"))
            .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
            .args(["mcp", "testdata/profiles/tf_custom_loop", "--http", "0"])
            .args(extra)
            .current_dir(repo_root())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, banner) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = send.send(line);
        });
        let mut server = McpHttp { child, address: String::new() };
        let line = banner.recv_timeout(Duration::from_secs(60)).expect("no banner within 60 s");
        let url = line.trim().rsplit(' ').next().unwrap();
        let address = url.trim_start_matches("http://").trim_end_matches("/mcp").to_string();
        assert!(address.starts_with("127.0.0.1:"), "{line}");
        server.address = address;
        server
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An MCP `initialize` request.
fn mcp_initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "verbs.rs", "version": "0"}}})
    .to_string()
}

#[test]
fn mcp_over_http_refuses_foreign_hosts_and_origins() {
    let server = McpHttp::start(&[]);
    let (address, init) = (&server.address, mcp_initialize());
    let (status, body) = http_post(address, address, None, &init);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("serverInfo"), "{body}");
    let (status, body) = http_post(address, address, Some("https://evil.example"), &init);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("cross-origin request from \"https://evil.example\" refused"), "{body}");
    let (status, body) = http_post(address, "evil.example", None, &init);
    assert_eq!(status, 403, "{body}");
}

#[test]
fn mcp_over_http_refuses_sessions_past_its_cap() {
    let server = McpHttp::start(&["--max-sessions", "2"]);
    let (address, init) = (&server.address, mcp_initialize());
    for _ in 0..2 {
        let (status, body) = http_post(address, address, None, &init);
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = http_post(address, address, None, &init);
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body,
        "2 MCP sessions are open, the most this server keeps (--max-sessions 2): close one (DELETE /mcp with its \
         Mcp-Session-Id) or raise --max-sessions\n"
    );
}

/// One MCP exchange over HTTP: `method` (`POST` or `DELETE`) on `/mcp` with the session
/// header when given; the status, the `Mcp-Session-Id` it answers, and the JSON-RPC message
/// (the `data:` line of an event stream, or the plain body).
fn mcp_exchange(address: &str, method: &str, session: Option<&str>, body: &str) -> (u16, Option<String>, String) {
    let session_header = session.map(|s| format!("Mcp-Session-Id: {s}\r\n")).unwrap_or_default();
    let headers = format!("{session_header}MCP-Protocol-Version: 2025-06-18\r\n");
    let (status, head, rest) = mcp_request(address, method, address, &headers, body);
    let id = head.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id").then(|| value.trim().to_string())
    });
    let message = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|l| l.starts_with('{'))
        .map_or_else(|| rest.clone(), str::to_string);
    (status, id, message)
}

/// Twelve agents at once against a server that keeps six sessions: each opens a session
/// (retrying while the cap refuses it with its one-line 503), calls `explain` and closes
/// its session. Every agent gets its answer, equal to the others', nothing hangs, and the
/// closed sessions free their slots (a fresh session opens at the end).
#[test]
fn mcp_over_http_serves_concurrent_agents_within_its_session_cap() {
    let server = McpHttp::start(&["--max-sessions", "6"]);
    let address = server.address.clone();
    let deadline = Instant::now() + Duration::from_secs(240);
    let agents: Vec<_> = (0..12)
        .map(|agent| {
            let address = address.clone();
            std::thread::spawn(move || {
                let mut refused = 0;
                let session = loop {
                    let (status, id, body) = mcp_exchange(&address, "POST", None, &mcp_initialize());
                    match status {
                        200 => break id.unwrap_or_else(|| panic!("agent {agent}: no session id: {body}")),
                        503 => {
                            assert!(body.contains("--max-sessions 6"), "agent {agent}: {body}");
                            refused += 1;
                            assert!(Instant::now() < deadline, "agent {agent}: no session before the deadline");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        _ => panic!("agent {agent}: initialize answered {status}: {body}"),
                    }
                };
                let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
                let (status, _, body) = mcp_exchange(&address, "POST", Some(&session), &initialized);
                assert!(status == 202 || status == 200, "agent {agent}: {status} {body}");
                let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "explain", "arguments": {}}})
                .to_string();
                let (status, _, body) = mcp_exchange(&address, "POST", Some(&session), &call);
                assert_eq!(status, 200, "agent {agent}: {body}");
                let message: Value =
                    serde_json::from_str(&body).unwrap_or_else(|e| panic!("agent {agent}: {e}: {body}"));
                let text = message["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
                assert!(text.contains("input_bound"), "agent {agent}: {body}");
                let (status, _, body) = mcp_exchange(&address, "DELETE", Some(&session), "");
                assert!(status == 200 || status == 202 || status == 204, "agent {agent}: close {status} {body}");
                (text, refused)
            })
        })
        .collect();
    let answers: Vec<(String, u32)> = agents.into_iter().map(|a| a.join().unwrap()).collect();
    assert!(answers.iter().all(|(text, _)| *text == answers[0].0), "agents got different answers");
    // Every slot is free again: a new session opens at once.
    let (status, id, body) = mcp_exchange(&address, "POST", None, &mcp_initialize());
    assert_eq!(status, 200, "{body}");
    assert!(id.is_some(), "{body}");
}

fn json_of(args: &[&str]) -> Value {
    let args: Vec<&str> = args.iter().copied().chain(["--format", "json"]).collect();
    serde_json::from_str(&ok(&args)).unwrap()
}

/// The column `name` of a verb's table rows.
fn column<'a>(table: &'a Value, name: &str) -> Vec<&'a Value> {
    let i = table["columns"].as_array().unwrap().iter().position(|c| c["name"] == name).unwrap();
    table["rows"].as_array().unwrap().iter().map(|r| &r[i]).collect()
}

#[test]
fn events_are_listed_in_a_window_and_aggregated_by_name() {
    // A real JAX profile: XLA:CPU runs each unfused convert as a thunk, 10 steps.
    let path = "testdata/explain/jax_converts";
    let all = json_of(&["events", path, "--name", "^wrapped_convert", "--aggregate"]);
    let table = &all["table"];
    let counts = column(table, "count");
    assert!(!counts.is_empty(), "{all}");
    assert!(counts.iter().all(|c| c.as_i64() == Some(10)), "{all}");
    for (total, own) in column(table, "total_ms").iter().zip(column(table, "self_ms")) {
        assert!(own.as_f64().unwrap() <= total.as_f64().unwrap() + 1e-9, "{all}");
    }
    let matched = all["matched"].as_u64().unwrap();
    assert_eq!(matched, 10 * counts.len() as u64);
    // Listed: in time order, bounded, saying what is left out.
    let listed = json_of(&["events", path, "--name", "^wrapped_convert", "--limit", "3"]);
    let starts: Vec<f64> = column(&listed["table"], "start_ms").iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(starts.len(), 3);
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    assert!(listed["table"]["left_out"].as_str().unwrap().starts_with(&format!("{} more rows", matched - 3)));
    // A window holds fewer of them.
    let end = format!("{}", starts[2]);
    let window = json_of(&["events", path, "--name", "^wrapped_convert", "--start-ms", "0", "--end-ms", &end]);
    let in_window = window["matched"].as_u64().unwrap();
    assert!((3..matched).contains(&in_window), "{in_window} of {matched}");
    // PyTorch traces are read the same way.
    let torch = json_of(&["events", "testdata/kineto/train", "--name", "^aten::", "--aggregate", "--limit", "3"]);
    assert!(torch["matched"].as_u64().unwrap() > 0, "{torch}");
    assert!(column(&torch["table"], "name").iter().all(|n| n.as_str().unwrap().starts_with("aten::")), "{torch}");
}

#[test]
fn an_events_regex_over_its_budget_is_one_line() {
    let huge = r"(\w{200}){200}";
    let out = oxprof(&["events", "testdata/explain/jax_converts", "--name", huge]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.starts_with("oxprof: bad argument name: not a regex within 1048576 bytes"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let long = "a".repeat(5000);
    let out = oxprof(&["events", "testdata/explain/jax_converts", "--name", &long]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("more than 4096"), "{}", out.stderr);
}

#[test]
fn hlo_lists_modules_prints_a_module_and_an_instructions_neighbourhood() {
    let path = "testdata/explain/jax_converts";
    let modules = json_of(&["hlo", path]);
    let names: Vec<String> =
        column(&modules["table"], "module").iter().map(|m| m.as_str().unwrap().to_string()).collect();
    let module = names.iter().find(|m| m.starts_with("jit_step(")).unwrap_or_else(|| panic!("{modules}"));
    let text = json_of(&["hlo", path, "--module", module, "--limit", "500"]);
    let lines: Vec<&str> = column(&text["table"], "text").iter().map(|t| t.as_str().unwrap()).collect();
    assert!(lines[0].starts_with("HloModule jit_step"), "{lines:?}");
    let convert = lines
        .iter()
        .filter(|l| l.contains(" fusion(") && l.contains("wrapped_convert"))
        .find_map(|l| l.trim().strip_prefix('%').or(Some(l.trim()))?.split(' ').next())
        .unwrap_or_else(|| panic!("{lines:?}"));
    let near = json_of(&["hlo", path, "--module", module, "--instruction", convert, "--depth", "2"]);
    let relations: Vec<&str> = column(&near["table"], "relation").iter().map(|r| r.as_str().unwrap()).collect();
    assert_eq!(relations[0], "instruction", "{near}");
    assert!(relations.contains(&"operand") && relations.contains(&"user"), "{near}");
    let distances: Vec<i64> = column(&near["table"], "distance").iter().map(|d| d.as_i64().unwrap()).collect();
    assert!(distances.iter().all(|d| *d <= 2) && distances.contains(&2), "{distances:?}");
    let out = oxprof(&["hlo", path, "--module", module, "--instruction", "nope"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no instruction \"nope\""), "{}", out.stderr);
    let out = oxprof(&["hlo", path, "--module", "nope"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no HLO module \"nope\""), "{}", out.stderr);
}

#[test]
fn allocations_are_those_live_at_the_peak_largest_first() {
    let xspace = json_of(&["allocations", "testdata/profiles/tf_memory"]);
    assert_eq!(xspace["tool"], "memory_profile");
    let tables = xspace["tables"].as_array().unwrap();
    assert!(!tables.is_empty(), "{xspace}");
    for table in tables {
        let sizes: Vec<f64> = column(table, "allocation_mib").iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(!sizes.is_empty() && sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
    }
    let torch = json_of(&["allocations", "testdata/kineto/train"]);
    assert_eq!(torch["tool"], "pytorch_memory");
    for table in torch["tables"].as_array().unwrap() {
        let sizes: Vec<f64> = column(table, "size_mib").iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(sizes.windows(2).all(|w| w[0] >= w[1]), "{sizes:?}");
        let peak = table["facts"].as_array().unwrap().iter().find(|f| f[0] == "peak_time_ms").unwrap();
        let peak: f64 = peak[1].as_str().unwrap().parse().unwrap();
        for (at, released) in column(table, "allocation_ms").iter().zip(column(table, "release_ms")) {
            assert!(at.as_f64().is_none_or(|a| a <= peak + 1e-3), "{table}");
            assert!(released.as_f64().is_none_or(|r| r > peak - 1e-3), "{table}");
        }
    }
}
