//! oxprof owns only what it wrote, end to end through the binary: a cache directory
//! holding someone's files is refused (`cache clear`, `cache info`, and every command that
//! would fill it), `cache clear` removes only oxprof's entries, output files are never
//! overwritten without `--force` nor written through a symbolic link, a failed capture
//! leaves no directory behind, and a closed standard output ends every command that writes
//! to it quietly, killed by `SIGPIPE` (a shell's status 141) with no panic and no backtrace.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

const PROFILE: &str = "testdata/profiles/jax_train";

/// `oxprof ARGS` in the repository, with the tests' own cache directory unless `env` says
/// otherwise; `stdout` as given.
fn command(args: &[&str], env: &[(&str, &Path)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_oxprof"));
    command
        .env("OXPROF_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/analysis-cache"))
        .env("RUST_BACKTRACE", "1")
        .args(args)
        .current_dir(repo_root())
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    command
}

/// Waits for `child` at most `limit` (killed after: a hang is a failure).
fn wait(mut child: Child, limit: Duration, what: &str) -> (ExitStatus, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("oxprof {what} hung");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

fn oxprof_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let child = command(args, env).stdout(Stdio::piped()).spawn().unwrap();
    let out = {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "oxprof {args:?} hung");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    };
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "oxprof {args:?} panicked: {stderr}");
    Output { code: out.status.code().unwrap_or(-1), stdout: String::from_utf8_lossy(&out.stdout).into_owned(), stderr }
}

fn oxprof(args: &[&str]) -> Output {
    oxprof_env(args, &[])
}

/// Everything under `dir`, links not followed: path → a file's bytes, a link's target,
/// "dir" or "special".
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
            let what = if kind.is_symlink() {
                format!("link to {}", std::fs::read_link(&path).unwrap().display())
            } else if kind.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if kind.is_file() {
                format!("file {:?}", std::fs::read(&path).unwrap())
            } else {
                "special".to_string()
            };
            out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), what);
        }
    }
    out
}

/// A home directory as users keep them: folders `v1/`, `v2/`, `v10/` of their own,
/// `*.bin` files (one named like a cache entry), a link, a FIFO.
#[cfg(unix)]
fn a_users_home(home: &Path) {
    for (folder, file) in [("v1", "thesis.bin"), ("v2", "photo.jpg"), ("v10", "data.bin")] {
        std::fs::create_dir_all(home.join(folder)).unwrap();
        std::fs::write(home.join(folder).join(file), format!("{folder}'s own")).unwrap();
    }
    std::fs::write(home.join("v1").join(format!("{}.bin", "ab".repeat(16))), b"not a cache entry").unwrap();
    std::fs::write(home.join(".bashrc"), b"export PATH").unwrap();
    std::os::unix::fs::symlink(home.join(".bashrc"), home.join("v1/link.bin")).unwrap();
    assert!(Command::new("mkfifo").arg(home.join("v1/fifo.bin")).status().unwrap().success());
}

#[cfg(unix)]
#[test]
fn a_users_directory_as_the_cache_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir(&home).unwrap();
    a_users_home(&home);
    let before = snapshot(&home);
    let uncached = oxprof(&["data", "overview_page", PROFILE, "--no-cache"]);
    assert_eq!(uncached.code, 0, "{}", uncached.stderr);
    let refused = |out: &Output| {
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
        assert!(out.stderr.contains(&format!("{}: not oxprof's cache directory", home.display())), "{}", out.stderr);
        assert!(out.stderr.contains("--cache-dir") && out.stderr.contains("--no-cache"), "{}", out.stderr);
    };
    // OXPROF_CACHE_DIR=$HOME, and --cache-dir $HOME.
    for (args, env) in [
        (vec!["cache", "clear"], vec![("OXPROF_CACHE_DIR", home.as_path())]),
        (vec!["cache", "info"], vec![("OXPROF_CACHE_DIR", home.as_path())]),
        (vec!["cache", "clear", "--cache-dir", home.to_str().unwrap()], vec![]),
    ] {
        let out = oxprof_env(&args, &env);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        refused(&out);
        assert_eq!(snapshot(&home), before, "{args:?} changed the user's files");
    }
    // A command that would fill the cache answers without it, with one warning.
    let data = oxprof_env(&["data", "overview_page", PROFILE], &[("OXPROF_CACHE_DIR", home.as_path())]);
    assert_eq!(data.code, 0, "{}", data.stderr);
    assert_eq!(data.stdout, uncached.stdout);
    assert!(data.stderr.starts_with("oxprof: warning: "), "{}", data.stderr);
    refused(&data);
    assert_eq!(snapshot(&home), before, "data wrote into the user's directory");
}

#[test]
fn cache_clear_removes_only_oxprofs_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let cache_dir = cache.to_str().unwrap();
    assert_eq!(oxprof(&["data", "overview_page", PROFILE, "--cache-dir", cache_dir]).code, 0);
    // Someone's file in oxprof's directory, named like an entry and not.
    std::fs::write(cache.join("v1").join(format!("{}.bin", "cd".repeat(16))), b"theirs").unwrap();
    std::fs::write(cache.join("v1/notes.txt"), b"theirs").unwrap();
    let cleared = oxprof(&["cache", "clear", "--cache-dir", cache_dir]);
    assert_eq!(cleared.code, 0, "{}", cleared.stderr);
    assert!(cleared.stdout.contains("removed 1 entries"), "{}", cleared.stdout);
    let left: Vec<PathBuf> = snapshot(&cache).into_keys().collect();
    let expected =
        ["CACHEDIR.TAG", "OXPROF-CACHE.TAG", "v1", "v1/cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd.bin", "v1/notes.txt"];
    assert_eq!(left, expected.map(PathBuf::from));
}

/// `convert` and `summary --out` refuse an existing file (before reading the profile) and
/// a symbolic link unless `--force`, and with it replace the link itself, never its target.
#[cfg(unix)]
#[test]
fn output_files_are_never_overwritten_or_written_through_links() {
    let tmp = tempfile::tempdir().unwrap();
    let precious = tmp.path().join("precious.txt");
    std::fs::write(&precious, "keep me").unwrap();
    const INPUT: &str = "testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz";
    assert!(repo_root().join(INPUT).is_file());
    /// A command's arguments writing to OUT.
    type Args = fn(&str) -> Vec<String>;
    let runs: [(&str, Args); 2] = [
        ("convert", |out| ["convert", INPUT, "--to", "chrome-json", out].map(String::from).to_vec()),
        ("summary", |out| ["summary", PROFILE, "--no-cache", "--out", out].map(String::from).to_vec()),
    ];
    for (name, args) in runs {
        let run = |out: &Path, force: bool| {
            let mut args = args(out.to_str().unwrap());
            if force {
                args.push("--force".into());
            }
            oxprof(&args.iter().map(String::as_str).collect::<Vec<_>>())
        };
        // An existing file.
        let existing = tmp.path().join(format!("{name}.json"));
        std::fs::write(&existing, "old").unwrap();
        let out = run(&existing, false);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{name}: {}", out.stderr);
        assert!(out.stderr.contains("exists; oxprof does not overwrite files (--force replaces it)"), "{}", out.stderr);
        assert_eq!(std::fs::read_to_string(&existing).unwrap(), "old");
        let out = run(&existing, true);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert!(std::fs::read_to_string(&existing).unwrap().starts_with('{'), "{name}: replaced");
        // A link to someone's file, and a dangling link.
        let link = tmp.path().join(format!("{name}-link.json"));
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let dangling = tmp.path().join(format!("{name}-dangling.json"));
        let nowhere = tmp.path().join(format!("{name}-nowhere"));
        std::os::unix::fs::symlink(&nowhere, &dangling).unwrap();
        for path in [&link, &dangling] {
            let out = run(path, false);
            assert_eq!(out.code, 2, "{name}: {}", out.stderr);
            assert!(std::fs::symlink_metadata(path).unwrap().file_type().is_symlink());
        }
        let out = run(&link, true);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_file(), "{name}: the link itself replaced");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me", "{name} wrote through a link");
        assert!(!nowhere.exists(), "{name} wrote through a dangling link");
        // A new file: written, and no temporary file left beside it.
        let fresh = tmp.path().join(format!("{name}-new.json"));
        assert_eq!(run(&fresh, false).code, 0);
        assert!(fresh.is_file());
    }
    let names: Vec<String> = snapshot(tmp.path()).into_keys().map(|p| p.display().to_string()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".part")), "{names:?}");
}

/// A loopback address where nothing listens (a port bound and released).
fn dead_address() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

#[test]
fn a_failed_capture_leaves_no_directory_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let existing = tmp.path().join("existing");
    std::fs::create_dir(&existing).unwrap();
    let missing = tmp.path().join("missing/logs");
    for logdir in [&existing, &missing] {
        let out = oxprof(&["capture", &dead_address(), "--logdir", logdir.to_str().unwrap(), "--retries", "0"]);
        assert_eq!(out.code, 2, "{}", out.stderr);
    }
    assert_eq!(snapshot(tmp.path()).into_keys().collect::<Vec<_>>(), [PathBuf::from("existing")]);
}

/// A pipe whose reading end is closed already: the first write to it fails with `EPIPE`.
#[cfg(unix)]
fn closed_pipe() -> Stdio {
    // Close-on-exec (std's pipe): a child another test spawns meanwhile must not inherit
    // the read end, or the pipe stays open and the command's writes succeed.
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    Stdio::from(write)
}

/// Every command that writes to stdout, with its stdin.
fn stdout_commands() -> Vec<(Vec<String>, &'static str)> {
    let dead = dead_address();
    let cache = concat!(env!("CARGO_TARGET_TMPDIR"), "/closed-stdout-cache");
    let (slow, fast) = ("testdata/diff/slow_b32", "testdata/diff/fast_b32");
    let mut commands: Vec<Vec<&str>> = vec![
        vec!["inspect", PROFILE],
        vec!["inspect", PROFILE, "--json"],
        vec!["diff", slow, fast, "--no-cache"],
        vec!["diff", slow, fast, "--no-cache", "--format", "json"],
        vec!["diff", slow, fast, "--no-cache", "--format", "csv"],
        vec!["summary", PROFILE, "--no-cache"],
        vec!["explain", PROFILE, "--no-cache"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["explain", PROFILE, "--no-cache", "--format", "json"],
        vec!["query", "SELECT name FROM slice LIMIT 50000", PROFILE],
        vec!["query", "SELECT name FROM slice LIMIT 50000", PROFILE, "--format", "csv"],
        vec!["query", "SELECT name FROM slice LIMIT 50000", PROFILE, "--format", "json"],
        vec!["query", "SELECT name FROM slice LIMIT 50000", PROFILE, "--format", "parquet"],
        vec!["query", "--repl", PROFILE],
        vec!["cache", "info", "--cache-dir", cache],
        vec!["cache", "clear", "--cache-dir", cache],
        vec!["serve", PROFILE, "--port", "0", "--no-cache"],
        vec!["capture", &dead, "--retries", "0", "--json", "--logdir", concat!(env!("CARGO_TARGET_TMPDIR"), "/c")],
        vec!["data", "trace_viewer@", PROFILE, "--no-cache"],
        vec![
            "data",
            "graph_viewer",
            PROFILE,
            "--no-cache",
            "--param",
            "type=pb",
            "--param",
            "module_name=jit__normal(20)",
        ],
    ];
    for format in ["json", "csv", "md", "report"] {
        commands.push(vec!["data", "framework_op_stats", PROFILE, "--no-cache", "--format", format]);
    }
    commands
        .into_iter()
        .map(|args| {
            let stdin = if args.contains(&"--repl") { "SELECT name FROM slice LIMIT 50000;\n" } else { "" };
            (args.into_iter().map(String::from).collect(), stdin)
        })
        .collect()
}

/// Runs `args` with `stdout` and `stdin`, then checks the ending: killed by SIGPIPE, or
/// (`may_finish`: all of the output fitted in the pipe before it was closed) exit 0; and
/// never a panic, a backtrace or an error message about the pipe.
#[cfg(unix)]
fn check_quiet_end(args: &[String], stdin: &str, stdout: Stdio, read_one_line: bool) {
    use std::os::unix::process::ExitStatusExt;
    let mut child = command(&args.iter().map(String::as_str).collect::<Vec<_>>(), &[])
        .stdin(Stdio::piped())
        .stdout(stdout)
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    if read_one_line {
        // A line, or its first 4 KiB (a JSON body is one long line).
        let mut line = Vec::new();
        BufReader::new(child.stdout.take().unwrap().take(4096)).read_until(b'\n', &mut line).unwrap();
        assert!(!line.is_empty(), "{args:?} wrote nothing");
    }
    let (status, stderr) = wait(child, Duration::from_secs(120), &args.join(" "));
    for bad in ["panicked", "backtrace", "Broken pipe", "broken pipe", "os error 32"] {
        assert!(!stderr.contains(bad), "{args:?}: {bad:?} in {stderr}");
    }
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{args:?} ended with {status:?}: {stderr}");
}

/// Standard output closed before the command writes: every command ends at its first
/// write, killed by SIGPIPE, quietly.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let _ = oxprof(&["cache", "info", "--cache-dir", concat!(env!("CARGO_TARGET_TMPDIR"), "/closed-stdout-cache")]);
    for (args, stdin) in stdout_commands() {
        check_quiet_end(&args, stdin, closed_pipe(), false);
    }
}

/// As `oxprof … | head -1`: one line read, then the pipe closed while the command still
/// writes (outputs of more than a MB, far larger than a pipe's buffer).
#[cfg(unix)]
#[test]
fn stdout_closed_after_one_line_ends_the_command_quietly() {
    for args in [
        vec!["data", "trace_viewer@", PROFILE, "--no-cache"],
        vec!["query", "SELECT * FROM slice", PROFILE, "--format", "csv"],
        vec!["query", "SELECT * FROM slice", PROFILE, "--format", "json"],
    ] {
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        check_quiet_end(&args, "", Stdio::piped(), true);
    }
}

/// Standard error closed (`2>&-` into a pipe nobody reads): commands that write to it (an
/// error line, a note, a warning, a capture's failure) end with their own exit code, never
/// a panic (`eprintln!` panics on a broken pipe and exits 101).
#[cfg(unix)]
#[test]
fn a_closed_stderr_keeps_every_exit_code() {
    let dead = dead_address();
    let logdir = concat!(env!("CARGO_TARGET_TMPDIR"), "/closed-stderr-capture");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        // An error line: the input is missing.
        (vec!["data", "overview_page", "testdata/profiles/no-such-run", "--no-cache"], 2),
        // A note after the body (oxprof's notes go to stderr).
        (vec!["data", "overview_page", "testdata/profiles/tf_custom_loop", "--no-cache", "--format", "json"], 0),
        // Warnings of a query.
        (vec!["query", "SELECT count(*) FROM slice", PROFILE], 0),
        // A capture's failure (the capture library's own line).
        (vec!["capture", &dead, "--retries", "0", "--logdir", logdir], 2),
    ];
    for (args, expected) in cases {
        let child = command(&args, &[]).stdout(Stdio::null()).stderr(closed_pipe()).spawn().unwrap();
        let what = args.join(" ");
        let status = {
            let mut child = child;
            let deadline = Instant::now() + Duration::from_secs(120);
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    break status;
                }
                assert!(Instant::now() < deadline, "{what} did not end");
                std::thread::sleep(Duration::from_millis(20));
            }
        };
        assert_eq!(status.code(), Some(expected), "{what} ended with {status:?}");
    }
}
