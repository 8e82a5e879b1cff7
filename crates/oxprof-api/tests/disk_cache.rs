//! The persistent analysis cache through sessions: a later session (a later process)
//! answers every OpStats tool from it byte for byte as a cold one does, and a changed
//! profile is analysed again, never answered from the old entry.

use oxprof_api::DiskCache;
use oxprof_api::data::{DataRequest, compute, local_session};
use oxprof_api::session::SessionOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const PROFILES: &[&str] = &["tf_keras_fit", "tf_custom_loop", "jax_train"];
const OPSTATS_TOOLS: &[&str] =
    &["overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "pod_viewer", "hlo_stats"];

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name)
}

fn session_with(path: &Path, cache: Option<Arc<DiskCache>>) -> oxprof_api::session::Session {
    local_session(path, SessionOptions { disk_cache: cache, ..SessionOptions::one_shot() }).unwrap()
}

fn bodies(session: &oxprof_api::session::Session) -> Vec<String> {
    let run = session.run(None).unwrap();
    OPSTATS_TOOLS
        .iter()
        .map(|tool| {
            let request = DataRequest { tool: tool.to_string(), ..Default::default() };
            compute(session, &run, &request, false).unwrap().xprof_body().text
        })
        .collect()
}

#[test]
fn a_later_session_answers_from_disk_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(DiskCache::open(dir.path(), 1 << 30).unwrap());
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

#[test]
fn a_changed_profile_is_analysed_again() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Arc::new(DiskCache::open(&dir.path().join("cache"), 1 << 30).unwrap());
    let run_dir = dir.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let host_file = |name: &str| {
        let run = oxprof_api::data::one_shot_session(&profile(name)).unwrap().run(None).unwrap();
        run.hosts[0].path.clone()
    };
    let target = run_dir.join("vm.xplane.pb.gz");
    std::fs::copy(host_file("tf_keras_fit"), &target).unwrap();
    let keras = bodies(&session_with(&run_dir, Some(cache.clone())));
    // Another profile in the same place: the old entry must not answer.
    std::fs::copy(host_file("tf_custom_loop"), &target).unwrap();
    let after = session_with(&run_dir, Some(cache.clone()));
    let custom = bodies(&after);
    assert_ne!(custom, keras);
    assert_eq!(custom, bodies(&session_with(&run_dir, None)));
}
