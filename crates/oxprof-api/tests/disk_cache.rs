//! The persistent analysis cache through sessions: a later session (a later process)
//! answers every OpStats tool from it byte for byte as a cold one does, and a changed
//! profile is analysed again, never answered from the old entry.

use oxprof_api::DiskCache;
use oxprof_api::data::{DataRequest, compute, local_session};
use oxprof_api::registry::ToolId;
use oxprof_api::session::SessionOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PROFILES: &[&str] = &["tf_keras_fit", "tf_custom_loop", "jax_train"];
const OPSTATS_TOOLS: &[&str] =
    &["overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "pod_viewer", "hlo_stats"];

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name)
}

/// `name`'s host file (the fixtures have one host each).
fn host_file(name: &str) -> PathBuf {
    let run = oxprof_api::data::one_shot_session(&profile(name)).unwrap().run(None).unwrap();
    run.hosts[0].path.clone()
}

fn session_with(path: &Path, cache: Option<Arc<DiskCache>>) -> oxprof_api::session::Session {
    local_session(path, SessionOptions { disk_cache: cache, ..SessionOptions::one_shot() }).unwrap()
}

fn bodies(session: &oxprof_api::session::Session) -> Vec<String> {
    let run = session.run(None).unwrap();
    OPSTATS_TOOLS
        .iter()
        .map(|tool| {
            let request = oxprof_api::registry::request(tool).unwrap();
            compute(session, &run, &request, false).unwrap().xprof_body().text
        })
        .collect()
}

#[test]
fn a_later_session_answers_from_disk_byte_for_byte() {
    let (_dir, cache) = empty_cache();
    for name in PROFILES {
        let cold = bodies(&session_with(&profile(name), None));
        let first = session_with(&profile(name), Some(cache.clone()));
        assert_eq!(bodies(&first), cold, "{name}: the session that fills the cache");
        // A one-shot session keeps nothing in memory: its later tools already read the disk.
        let counts = first.file_counts();
        assert!(counts.analyses_from_disk < counts.analyses_computed, "{name}: {counts:?}");
        let reopened = session_with(&profile(name), Some(cache.clone()));
        assert_eq!(bodies(&reopened), cold, "{name}: answered from disk");
        let counts = reopened.file_counts();
        assert!(counts.analyses_from_disk > 0, "{name}: {counts:?}");
        assert_eq!(counts.analyses_from_disk, counts.analyses_computed, "{name}: every analysis came from disk");
    }
}

type Opener = fn(&Path, Option<Arc<DiskCache>>) -> oxprof_api::session::Session;

/// What `answer` says of a run holding profile `first`, then of the same file once profile
/// `second` replaced it, both with one persistent cache, and what an uncached session says
/// of `second`; with the session that answered after the change.
fn across_a_replaced_profile<T>(
    first: &str,
    second: &str,
    open: Opener,
    answer: impl Fn(&oxprof_api::session::Session) -> T,
) -> (T, T, T, oxprof_api::session::Session) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(DiskCache::open(&dir.path().join("cache"), 1 << 30).unwrap());
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let target = run_dir.join("vm.xplane.pb.gz");
    std::fs::copy(host_file(first), &target).unwrap();
    let before = answer(&open(&run_dir, Some(cache.clone())));
    // Another profile in the same place: the old entry must not answer.
    std::fs::copy(host_file(second), &target).unwrap();
    let after_session = open(&run_dir, Some(cache));
    let after = answer(&after_session);
    (before, after, answer(&open(&run_dir, None)), after_session)
}

#[test]
fn a_changed_profile_is_analysed_again() {
    let (keras, custom, uncached, _) =
        across_a_replaced_profile("tf_keras_fit", "tf_custom_loop", session_with, bodies);
    assert_ne!(custom, keras);
    assert_eq!(custom, uncached);
}

/// The trace viewer's LOD route through a session (`params`: its query parameters).
fn trace_route(session: &oxprof_api::session::Session, sub: &str, params: &[(&str, String)]) -> String {
    let run = session.run(None).unwrap();
    let get = |k: &str| params.iter().find(|(key, _)| *key == k).map(|(_, v)| v.clone());
    oxprof_api::trace::route(session, &run, sub, &get).unwrap()
}

/// A server-like session: in-memory caches, and the persistent one.
fn server_session(path: &Path, cache: Option<Arc<DiskCache>>) -> oxprof_api::session::Session {
    local_session(path, SessionOptions { disk_cache: cache, ..SessionOptions::default() }).unwrap()
}

/// An empty persistent cache in a new directory.
fn empty_cache() -> (tempfile::TempDir, Arc<DiskCache>) {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(DiskCache::open(dir.path(), 1 << 30).unwrap());
    (dir, cache)
}

/// The one-worker PyTorch run of the fixtures.
fn kineto_train() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kineto/train")
}

/// `tool`'s body and notes in a session (of `host`, else the tool's default selection).
fn ask(session: &oxprof_api::session::Session, tool: &str, host: Option<&str>, refresh: bool) -> (String, Vec<String>) {
    let run = session.run(None).unwrap();
    let mut request = oxprof_api::registry::request(tool).unwrap();
    if let Some(host) = host {
        request.host = Some(host.to_string());
    }
    let (body, notes) = oxprof_api::answer::answer(session, &run, &request, refresh).unwrap().into_body();
    (String::from_utf8(body.into_bytes()).unwrap(), notes)
}

#[test]
fn a_later_session_opens_the_trace_viewer_from_disk_without_decoding() {
    let (_dir, cache) = empty_cache();
    let path = profile("jax_train");
    // What the viewer asks first: the track list, then a window over the whole trace.
    let opening = |session: &oxprof_api::session::Session| {
        let tracks = trace_route(session, "tracks", &[]);
        let list: serde_json::Value = serde_json::from_str(&tracks).unwrap();
        let (start, end) = (list["start_ps"].as_u64().unwrap(), list["end_ps"].as_u64().unwrap());
        let whole = [("start_ps", start.to_string()), ("end_ps", end.to_string()), ("width", "1200".to_string())];
        let zoom = [
            ("start_ps", start.to_string()),
            ("end_ps", (start + (end - start) / 7).to_string()),
            ("width", "1200".to_string()),
        ];
        (tracks, trace_route(session, "window", &whole), zoom)
    };
    let uncached = server_session(&path, None);
    let (tracks, window, zoom) = opening(&uncached);
    let zoomed = trace_route(&uncached, "window", &zoom);

    let first = server_session(&path, Some(cache.clone()));
    assert_eq!(opening(&first).0, tracks);
    assert_eq!(first.file_counts().trace_views_from_disk, 0, "nothing on disk yet");

    let reopened = server_session(&path, Some(cache.clone()));
    let (tracks_again, window_again, _) = opening(&reopened);
    assert_eq!((tracks_again, window_again), (tracks, window), "the same bytes from disk");
    let counts = reopened.file_counts();
    assert_eq!((counts.traces_computed, counts.trace_views_from_disk), (0, 2), "no decode: {counts:?}");
    // A zoom needs the events: decoded once, then the opening views come from memory.
    assert_eq!(trace_route(&reopened, "window", &zoom), zoomed);
    opening(&reopened);
    let counts = reopened.file_counts();
    assert_eq!((counts.traces_computed, counts.trace_views_from_disk), (1, 2), "{counts:?}");
}

#[test]
fn a_changed_profile_never_opens_from_an_old_trace_view() {
    let tracks = |session: &oxprof_api::session::Session| trace_route(session, "tracks", &[]);
    let (before, after, uncached, session) =
        across_a_replaced_profile("jax_train", "tf_custom_loop", server_session, tracks);
    assert_ne!(after, before);
    assert_eq!(after, uncached);
    assert_eq!(session.file_counts().trace_views_from_disk, 0);
}

/// XProf's `trace_viewer@` of the session's one host as its UI asks it (`params` added),
/// with oxprof's notes.
fn trace_viewer_json(session: &oxprof_api::session::Session, params: &[(&str, &str)]) -> (String, Vec<String>) {
    let run = session.run(None).unwrap();
    let mut request = DataRequest::new(ToolId::TRACE_VIEWER_STREAMING);
    request.params.insert("resolution".into(), "8000".into());
    request.params.extend(params.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let (body, notes) = oxprof_api::answer::answer(session, &run, &request, false).unwrap().into_body();
    (String::from_utf8(body.into_bytes()).unwrap(), notes)
}

#[test]
fn a_later_process_answers_trace_viewer_json_from_disk_without_decoding() {
    let (_dir, cache) = empty_cache();
    let path = profile("jax_train");
    let zoom = [("start_time_ms", "0"), ("end_time_ms", "5")];
    let uncached = session_with(&path, None);
    let (whole, zoomed) = (trace_viewer_json(&uncached, &[]), trace_viewer_json(&uncached, &zoom));
    assert_ne!(whole, zoomed);

    // The CLI's one-shot session fills the cache; the next process reads it.
    let first = session_with(&path, Some(cache.clone()));
    assert_eq!(trace_viewer_json(&first, &[]), whole);
    assert_eq!(first.file_counts().trace_views_from_disk, 0, "nothing on disk yet");
    let reopened = session_with(&path, Some(cache.clone()));
    assert_eq!(trace_viewer_json(&reopened, &[]), whole, "the same bytes from disk");
    let counts = reopened.file_counts();
    assert_eq!((counts.traces_computed, counts.trace_views_from_disk), (0, 1), "no decode: {counts:?}");
    // Other parameters are another entry: decoded and rendered, then kept too.
    assert_eq!(trace_viewer_json(&reopened, &zoom), zoomed);
    assert_eq!(reopened.file_counts().traces_computed, 1);
    let again = session_with(&path, Some(cache.clone()));
    assert_eq!((trace_viewer_json(&again, &zoom), trace_viewer_json(&again, &[])), (zoomed, whole));
    assert_eq!((again.file_counts().traces_computed, again.file_counts().trace_views_from_disk), (0, 2));
}

#[test]
fn a_changed_profile_never_answers_trace_viewer_json_from_an_old_entry() {
    let whole = |session: &oxprof_api::session::Session| trace_viewer_json(session, &[]);
    let (before, after, uncached, session) =
        across_a_replaced_profile("jax_train", "tf_custom_loop", session_with, whole);
    assert_ne!(after, before);
    assert_eq!(after, uncached);
    assert_eq!(session.file_counts().trace_views_from_disk, 0);
}

#[test]
fn concurrent_processes_fill_and_read_one_trace_viewer_json_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = profile("jax_train");
    let uncached = trace_viewer_json(&session_with(&path, None), &[]);
    // Four "processes" (each its own cache handle on one directory) race to fill the entry,
    // then each reopens: every answer is the uncached one.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                let cache = Arc::new(DiskCache::open(dir.path(), 1 << 30).unwrap());
                assert_eq!(trace_viewer_json(&session_with(&path, Some(cache.clone())), &[]), uncached);
                let reopened = session_with(&path, Some(cache));
                assert_eq!(trace_viewer_json(&reopened, &[]), uncached);
                assert_eq!(reopened.file_counts().trace_views_from_disk, 1);
            });
        }
    });
}

#[test]
fn damaged_or_oversized_entries_are_misses_never_answers() {
    let (dir, cache) = empty_cache();
    let path = profile("jax_train");
    let uncached = session_with(&path, None);
    let (tv, overview) = (trace_viewer_json(&uncached, &[]), bodies(&uncached));
    let first = session_with(&path, Some(cache.clone()));
    assert_eq!((trace_viewer_json(&first, &[]), bodies(&first)), (tv.clone(), overview.clone()));
    let entries: Vec<PathBuf> = std::fs::read_dir(dir.path().join("v1")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(entries.len() >= 3, "analysis, trace index, trace_viewer@: {entries:?}");
    // Well-formed entries (checksums right) whose payloads are of no kind a reader accepts
    // (a payload in the right layout is trusted: only oxprof writes the cache directory).
    for entry in &entries {
        let key = entry.file_stem().unwrap().to_str().unwrap();
        cache.put(key, b"neither an analysis, a trace index nor a trace body").unwrap();
    }
    let reread = session_with(&path, Some(cache.clone()));
    assert_eq!((trace_viewer_json(&reread, &[]), bodies(&reread)), (tv.clone(), overview.clone()));
    assert_eq!(reread.file_counts().trace_views_from_disk, 0);
    // A 64 MiB file of garbage in place of each entry: refused by its header, not read whole.
    let garbage = vec![0x5a; 64 << 20];
    for entry in std::fs::read_dir(dir.path().join("v1")).unwrap().flatten() {
        std::fs::write(entry.path(), &garbage).unwrap();
    }
    let reread = session_with(&path, Some(cache));
    assert_eq!((trace_viewer_json(&reread, &[]), bodies(&reread)), (tv, overview));
    assert_eq!(reread.file_counts().trace_views_from_disk, 0);
}

/// Two host profiles of one size that differ only in one event's duration (90 ps or
/// `middle_ps`), in the middle of the file: more than 64 KiB from either end.
fn same_size_profiles(middle_ps: i64) -> (Vec<u8>, Vec<u8>) {
    const EVENTS: i64 = 40_000;
    let build = |middle: i64| {
        oxprof_testkit::XSpaceBuilder::new()
            .hostname("vm")
            .plane("/host:CPU", |p| {
                p.line(1, "main", 0, |l| {
                    for i in 0..EVENTS {
                        let name = if i % 2 == 0 { "model/dense/MatMul:MatMul" } else { "model/Relu:Relu" };
                        l.event(name, i * 100, if i == EVENTS / 2 { middle } else { 90 });
                    }
                });
            })
            .to_bytes()
    };
    let (a, b) = (build(90), build(middle_ps));
    assert_eq!(a.len(), b.len());
    let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let block = 64 << 10;
    assert!(!differ.is_empty() && differ.iter().all(|&i| i >= block && i < a.len() - block), "{differ:?}");
    (a, b)
}

/// Edits `file` in place to `to` (only the bytes that differ), then puts its modification
/// time back, so that its size and modification time are as they were.
fn edit_in_place_keeping_mtime(file: &Path, to: &[u8]) {
    use std::os::unix::fs::FileExt;
    let before = std::fs::metadata(file).unwrap();
    let old = std::fs::read(file).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(file).unwrap();
    let first = (0..to.len()).find(|&i| old[i] != to[i]).unwrap();
    let last = (0..to.len()).rfind(|&i| old[i] != to[i]).unwrap();
    f.write_all_at(&to[first..=last], first as u64).unwrap();
    f.set_modified(before.modified().unwrap()).unwrap();
    drop(f);
    let after = std::fs::metadata(file).unwrap();
    assert_eq!((after.len(), after.modified().unwrap()), (before.len(), before.modified().unwrap()));
}

/// A same-size edit in the middle of a profile with its modification time put back (what
/// the old key, size + mtime + the first and last 64 KiB, could not see) is answered anew
/// by a warm session (its memory caches), by a new session over the persistent cache, and
/// by the HTTP service (its rendered responses too).
#[cfg(unix)]
#[test]
fn an_edit_in_the_middle_with_the_mtime_put_back_is_answered_anew() {
    let (a, b) = same_size_profiles(50);
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(DiskCache::open(&dir.path().join("cache"), 1 << 30).unwrap());
    let run_dir = dir.path().join("logs/plugins/profile/run1");
    std::fs::create_dir_all(&run_dir).unwrap();
    let file = run_dir.join("vm.xplane.pb");
    let answers = |session: &oxprof_api::session::Session| {
        let run = session.run(None).unwrap();
        let tool = |tool: &str| {
            let request = oxprof_api::registry::request(tool).unwrap();
            compute(session, &run, &request, false).unwrap().xprof_body().text
        };
        (tool("framework_op_stats"), tool("overview_page"), trace_viewer_json(session, &[]).0)
    };
    let service = || {
        let options = oxprof_api::http::ServiceOptions {
            disk_cache: Some(cache.clone()),
            ..oxprof_api::http::ServiceOptions::new(dir.path().join("logs"))
        };
        oxprof_api::http::Service::new(options, Arc::new(oxprof_api::http::NoAssets)).unwrap()
    };
    let http = |service: &oxprof_api::http::Service| {
        let response = service.handle("GET", "/data/plugin/profile/data", "run=run1&tag=framework_op_stats&host=vm");
        assert_eq!(response.status, 200);
        response.body.to_vec()
    };

    std::fs::write(&file, &b).unwrap();
    let (want_b, want_http_b) = (answers(&session_with(&run_dir, None)), http(&service()));
    std::fs::write(&file, &a).unwrap();
    let want_a = answers(&session_with(&run_dir, None));
    assert_ne!(want_a.0, want_b.0, "the edit changes the numbers");

    let warm = server_session(&run_dir, Some(cache.clone()));
    let warm_service = service();
    assert_eq!(answers(&warm), want_a);
    assert_eq!(answers(&session_with(&run_dir, Some(cache.clone()))), want_a, "from the persistent cache");
    let http_a = http(&warm_service);
    assert_ne!(http_a, want_http_b);

    edit_in_place_keeping_mtime(&file, &b);
    assert_eq!(answers(&warm), want_b, "the warm session's memory");
    assert_eq!(
        answers(&session_with(&run_dir, Some(cache.clone()))),
        want_b,
        "a new session over the persistent cache"
    );
    assert_eq!(http(&warm_service), want_http_b, "the service's rendered responses");
    // And back: the old entries are the right answers again only for the old contents.
    edit_in_place_keeping_mtime(&file, &a);
    assert_eq!(answers(&warm), want_a);
    assert_eq!(answers(&session_with(&run_dir, Some(cache))), want_a);
}

/// An analysis entry replaced by a link to a FIFO: a new session computes the answer
/// (opening the FIFO would have waited for a writer forever) and leaves the link alone.
#[cfg(unix)]
#[test]
fn an_entry_replaced_by_a_link_to_a_fifo_is_a_prompt_miss() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cache");
    let path = profile("jax_train");
    let uncached = bodies(&session_with(&path, None));
    let cache = Arc::new(DiskCache::open(&root, 1 << 30).unwrap());
    assert_eq!(bodies(&session_with(&path, Some(cache))), uncached);
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let entries: Vec<PathBuf> = std::fs::read_dir(root.join("v1")).unwrap().flatten().map(|e| e.path()).collect();
    assert!(!entries.is_empty());
    for entry in &entries {
        std::fs::remove_file(entry).unwrap();
        std::os::unix::fs::symlink(&fifo, entry).unwrap();
    }
    let (done, answered) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let cache = Arc::new(DiskCache::open(&root, 1 << 30).unwrap());
        let _ = done.send(bodies(&session_with(&profile("jax_train"), Some(cache))));
    });
    let got = answered.recv_timeout(std::time::Duration::from_secs(120)).expect("a request hung on a FIFO entry");
    assert_eq!(got, uncached);
    for entry in &entries {
        assert!(std::fs::symlink_metadata(entry).unwrap().file_type().is_symlink(), "{}", entry.display());
    }
}

/// Every PyTorch view of a session's one trace: body and notes.
fn pytorch_views(session: &oxprof_api::session::Session) -> Vec<(String, Vec<String>)> {
    ["pytorch_overview", "pytorch_op_stats", "pytorch_kernel_stats", "pytorch_memory", "pytorch_modules"]
        .iter()
        .map(|tool| ask(session, tool, None, false))
        .collect()
}

#[test]
fn a_later_session_answers_the_pytorch_views_from_disk_without_reading_the_trace() {
    let (_dir, cache) = empty_cache();
    let kineto = kineto_train();
    // A PyTorch trace, and a profile that is not one (its views carry a note saying so).
    for (path, pytorch) in [(kineto, true), (profile("jax_train"), false)] {
        let cold = pytorch_views(&server_session(&path, None));
        let noted = cold.iter().all(|(_, notes)| notes.iter().any(|n| n.contains("not a PyTorch profiler trace")));
        assert_eq!(noted, !pytorch, "{path:?}: {cold:?}");
        let first = server_session(&path, Some(cache.clone()));
        assert_eq!(pytorch_views(&first), cold, "{path:?}: the session that fills the cache");
        assert_eq!(first.file_counts().pytorch_views_from_disk, 0, "{path:?}: nothing on disk yet");
        let reopened = server_session(&path, Some(cache.clone()));
        assert_eq!(pytorch_views(&reopened), cold, "{path:?}: the same bytes and notes from disk");
        let counts = reopened.file_counts();
        assert_eq!((counts.pytorch_computed, counts.pytorch_views_from_disk), (0, 5), "{path:?}: {counts:?}");
        // Asked to refresh, the view reads the trace again.
        assert_eq!(ask(&reopened, "pytorch_overview", None, true).0, cold[0].0);
        assert_eq!(reopened.file_counts().pytorch_computed, 1, "{path:?}");
    }
}

/// The parse of a trace keeps every PyTorch view, not only the one asked: a later process
/// asking any other answers from disk (agents ask one view per command).
#[test]
fn one_view_asked_keeps_every_pytorch_view_on_disk() {
    let (_dir, cache) = empty_cache();
    let path = kineto_train();
    let cold = pytorch_views(&server_session(&path, None));
    ask(&server_session(&path, Some(cache.clone())), "pytorch_op_stats", None, false);
    let reopened = server_session(&path, Some(cache));
    assert_eq!(pytorch_views(&reopened), cold);
    let counts = reopened.file_counts();
    assert_eq!((counts.pytorch_computed, counts.pytorch_views_from_disk), (0, 5), "{counts:?}");
}

/// The keys of a cache's entries (in directory `dir`) whose payload starts with `prefix`.
fn keys_starting(dir: &Path, cache: &DiskCache, prefix: &[u8]) -> Vec<String> {
    std::fs::read_dir(dir.join("v1"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_str().unwrap().to_string())
        .filter(|k| cache.get(k).is_some_and(|b| b.starts_with(prefix)))
        .collect()
}

/// PyTorch view entries that are damaged, or hold another view's report, are misses:
/// the views are computed again, never answered from the wrong bytes.
#[test]
fn damaged_or_swapped_pytorch_view_entries_are_misses() {
    let (dir, cache) = empty_cache();
    let path = kineto_train();
    let cold = pytorch_views(&server_session(&path, None));
    assert_eq!(pytorch_views(&server_session(&path, Some(cache.clone()))), cold);
    let keys = keys_starting(dir.path(), &cache, b"{\"view\"");
    assert_eq!(keys.len(), 5, "one entry per view: {keys:?}");
    // Each entry holds the next one's report (well-formed JSON of another view's type).
    let payloads: Vec<Vec<u8>> = keys.iter().map(|k| cache.get(k).unwrap()).collect();
    for (i, key) in keys.iter().enumerate() {
        cache.put(key, &payloads[(i + 1) % keys.len()]).unwrap();
    }
    let reread = server_session(&path, Some(cache.clone()));
    assert_eq!(pytorch_views(&reread), cold);
    assert_eq!(reread.file_counts().pytorch_views_from_disk, 0, "no view answered from another's bytes");
    for key in &keys {
        cache.put(key, b"{\"is_pytorch\": true, \"report\": 7}").unwrap();
    }
    let reread = server_session(&path, Some(cache));
    assert_eq!(pytorch_views(&reread), cold);
    assert_eq!(reread.file_counts().pytorch_views_from_disk, 0);
}

/// Sessions of several processes asking every PyTorch view at once, over one cache being
/// filled: each answer is the uncached one.
#[test]
fn concurrent_sessions_fill_and_read_the_pytorch_views() {
    let (_dir, cache) = empty_cache();
    let path = kineto_train();
    let cold = pytorch_views(&server_session(&path, None));
    let tools = ["pytorch_overview", "pytorch_op_stats", "pytorch_kernel_stats", "pytorch_memory", "pytorch_modules"];
    std::thread::scope(|scope| {
        for round in 0..3 {
            for (i, tool) in tools.iter().enumerate() {
                let (cache, path, cold) = (cache.clone(), &path, &cold);
                scope.spawn(move || {
                    let session = server_session(path, Some(cache));
                    assert_eq!(ask(&session, tool, None, false), cold[i], "{tool}, round {round}");
                });
            }
        }
    });
    let reread = server_session(&path, Some(cache));
    assert_eq!(pytorch_views(&reread), cold);
    assert_eq!(reread.file_counts().pytorch_computed, 0);
}

/// The HTA tools over every rank of a session's run and over each rank alone: body and notes.
fn hta_answers(session: &oxprof_api::session::Session) -> Vec<(String, Vec<String>)> {
    let run = session.run(None).unwrap();
    let mut hosts: Vec<String> = run.hosts.iter().map(|h| h.host.clone()).collect();
    hosts.push("ALL_HOSTS".into());
    let mut out = Vec::new();
    for tool in ["hta_distributed", "hta_gpu_idle"] {
        for host in &hosts {
            if tool == "hta_distributed" && host != "ALL_HOSTS" {
                continue; // every rank only
            }
            out.push(ask(session, tool, Some(host), false));
        }
    }
    out
}

/// A two-rank PyTorch run with GPU activity (`scripts/gen/explain-evalset.py`), copied into
/// a directory a test may add to.
fn ddp_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/explain/ddp_straggler");
    for entry in std::fs::read_dir(source).unwrap().flatten() {
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    dir
}

#[test]
fn a_later_session_answers_the_hta_tools_from_disk_without_reading_the_traces() {
    let (_dir, cache) = empty_cache();
    let run = ddp_run();
    let cold = hta_answers(&server_session(run.path(), None));
    assert!(cold[0].0.contains("\"ranks\""), "{:?}", cold[0]);
    let first = server_session(run.path(), Some(cache.clone()));
    assert_eq!(hta_answers(&first), cold, "the session that fills the cache");
    assert_eq!((first.file_counts().pytorch_computed, first.file_counts().hta_ranks_from_disk), (2, 0));
    let reopened = server_session(run.path(), Some(cache.clone()));
    assert_eq!(hta_answers(&reopened), cold, "the same bytes and notes from disk");
    let counts = reopened.file_counts();
    assert_eq!(counts.pytorch_computed, 0, "no trace read: {counts:?}");
    assert_eq!(counts.hta_ranks_from_disk, 6, "two ranks for each of three requests: {counts:?}");
    // Asked to refresh, the tool reads the traces again.
    assert_eq!(ask(&reopened, "hta_distributed", None, true).0, cold[0].0);
    assert_eq!(reopened.file_counts().pytorch_computed, 2);

    // And the parse an HTA tool made kept every PyTorch view.
    let views = pytorch_views(&server_session(run.path(), None));
    let reopened = server_session(run.path(), Some(cache.clone()));
    assert_eq!(pytorch_views(&reopened), views);
    assert_eq!((reopened.file_counts().pytorch_computed, reopened.file_counts().pytorch_views_from_disk), (0, 5));

    // A PyTorch view's parse keeps the rank too: the HTA tools then answer from disk.
    let (_views_first, cache) = empty_cache();
    let viewer = server_session(run.path(), Some(cache.clone()));
    for host in viewer.run(None).unwrap().hosts.iter() {
        ask(&viewer, "pytorch_op_stats", Some(&host.host), false);
    }
    let reopened = server_session(run.path(), Some(cache));
    assert_eq!(hta_answers(&reopened)[0], cold[0]);
    assert_eq!(reopened.file_counts().pytorch_computed, 0, "{:?}", reopened.file_counts());
}

/// A rank whose own step filter differs from the selection's (it names no step beside
/// ranks naming four) is read again for its rows; the others stay answered from disk.
#[test]
fn a_rank_whose_filter_differs_is_read_again_once_and_then_comes_from_disk() {
    let (cache_dir, cache) = empty_cache();
    let run = ddp_run();
    let worker0 = std::fs::read_to_string(run.path().join("worker0.1700000000000.pt.trace.json")).unwrap();
    let stepless = worker0.replace("ProfilerStep#", "NotAStep#").replace("\"rank\":0,", "\"rank\":2,");
    std::fs::write(run.path().join("worker2.1700000000002.pt.trace.json"), stepless).unwrap();
    let cold = hta_answers(&server_session(run.path(), None));
    let filling = server_session(run.path(), Some(cache.clone()));
    assert!(hta_answers(&filling) == cold);
    let counts = filling.file_counts();
    assert_eq!(
        (counts.pytorch_computed, counts.hta_parts_recomputed, counts.hta_parts_from_disk),
        (3, 1, 0),
        "the step-less rank's rows read again for the first selection of all ranks only: {counts:?}"
    );
    let reopened = server_session(run.path(), Some(cache.clone()));
    assert_eq!(ask(&reopened, "hta_distributed", Some("ALL_HOSTS"), false), cold[0]);
    let counts = reopened.file_counts();
    assert_eq!(
        (counts.hta_ranks_from_disk, counts.pytorch_computed, counts.hta_parts_recomputed, counts.hta_parts_from_disk),
        (3, 0, 0, 1),
        "three ranks from disk, and the step-less one's parts filtered the other way: {counts:?}"
    );
    assert_eq!(hta_answers(&reopened), cold);
    // Damaged, those parts are a miss: the rank's rows are read again.
    let keys = keys_starting(cache_dir.path(), &cache, b"{\"filtered\"");
    assert_eq!(keys.len(), 1, "one entry of parts filtered the other way: {keys:?}");
    cache.put(&keys[0], b"{\"filtered\": true}").unwrap();
    let reread = server_session(run.path(), Some(cache));
    assert_eq!(ask(&reread, "hta_distributed", Some("ALL_HOSTS"), false), cold[0]);
    let counts = reread.file_counts();
    assert_eq!((counts.hta_ranks_from_disk, counts.hta_parts_recomputed, counts.hta_parts_from_disk), (3, 1, 0));
}

/// Requests at once that need a rank's parts filtered the other way read its trace once:
/// the others wait for those parts, and every answer is the one asked alone.
#[test]
fn concurrent_selections_read_a_rank_again_once() {
    let run = ddp_run();
    let worker0 = std::fs::read_to_string(run.path().join("worker0.1700000000000.pt.trace.json")).unwrap();
    let stepless = worker0.replace("ProfilerStep#", "NotAStep#").replace("\"rank\":0,", "\"rank\":2,");
    std::fs::write(run.path().join("worker2.1700000000002.pt.trace.json"), stepless).unwrap();
    let alone = server_session(run.path(), None);
    let tools = ["hta_distributed", "hta_gpu_idle"];
    let expected: Vec<_> = tools.iter().map(|tool| ask(&alone, tool, Some("ALL_HOSTS"), false)).collect();
    let session = server_session(run.path(), None);
    // Every rank parsed first, so that the requests below meet at the other-way parts.
    for host in session.run(None).unwrap().hosts.iter().map(|h| h.host.clone()) {
        let _ = ask(&session, "pytorch_overview", Some(&host), false);
    }
    std::thread::scope(|scope| {
        for round in 0..6 {
            let (session, expected) = (&session, &expected);
            scope.spawn(move || {
                assert_eq!(
                    ask(session, tools[round % 2], Some("ALL_HOSTS"), false),
                    expected[round % 2],
                    "round {round}"
                );
            });
        }
    });
    let counts = session.file_counts();
    assert_eq!((counts.pytorch_computed, counts.hta_parts_recomputed), (3, 1), "{counts:?}");
}

/// HTA rank entries that are damaged or hold something else are misses: the traces are
/// read again, never answered from the wrong bytes.
#[test]
fn damaged_hta_rank_entries_are_misses() {
    let (cache_dir, cache) = empty_cache();
    let run = ddp_run();
    let cold = hta_answers(&server_session(run.path(), None));
    hta_answers(&server_session(run.path(), Some(cache.clone())));
    let keys = keys_starting(cache_dir.path(), &cache, b"{\"rank\"");
    assert_eq!(keys.len(), 2, "one entry per rank: {keys:?}");
    for (key, damaged) in keys.iter().zip([&b"{\"rank\": 0, \"steps\": []}"[..], b"\x00not json"]) {
        cache.put(key, damaged).unwrap();
    }
    let reread = server_session(run.path(), Some(cache));
    assert_eq!(hta_answers(&reread), cold);
    let counts = reread.file_counts();
    assert_eq!((counts.hta_ranks_from_disk, counts.pytorch_computed), (0, 2), "{counts:?}");
}

/// Sessions of several processes asking the HTA tools and the PyTorch views of a two-rank
/// run at once, over one cache being filled: each answer is the uncached one, and a later
/// session answers all of them without reading a trace.
#[test]
fn concurrent_sessions_fill_and_read_the_hta_ranks_and_views() {
    let (_dir, cache) = empty_cache();
    let run = ddp_run();
    let (hta_cold, views_cold) =
        (hta_answers(&server_session(run.path(), None)), pytorch_views(&server_session(run.path(), None)));
    std::thread::scope(|scope| {
        for round in 0..4 {
            let (cache, path, hta_cold, views_cold) = (cache.clone(), run.path(), &hta_cold, &views_cold);
            scope.spawn(move || {
                let session = server_session(path, Some(cache));
                if round % 2 == 0 {
                    assert_eq!(&hta_answers(&session), hta_cold, "round {round}");
                } else {
                    assert_eq!(&pytorch_views(&session), views_cold, "round {round}");
                }
            });
        }
    });
    let reread = server_session(run.path(), Some(cache));
    assert_eq!((hta_answers(&reread), pytorch_views(&reread)), (hta_cold, views_cold));
    assert_eq!(reread.file_counts().pytorch_computed, 0, "{:?}", reread.file_counts());
}
