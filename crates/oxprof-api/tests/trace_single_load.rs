//! Concurrent first requests for one host's trace share a single load: every caller gets
//! the same data (a second load would decode and index the profile again, doubling the CPU
//! and the memory of a large profile).

use std::path::PathBuf;
use std::sync::{Arc, Barrier};

#[test]
fn concurrent_first_requests_share_one_load() {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz");
    // A copy at a path of its own: nothing else in this process has loaded it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vm.xplane.pb.gz");
    std::fs::copy(&fixture, &file).unwrap();
    let session = oxprof_api::session::Session::open_local(&file, Default::default()).unwrap();
    let run = session.run(None).unwrap();
    let host = run.hosts.first().unwrap().clone();
    let host_data = |host| oxprof_api::trace::host_traces(&session, &[host], false).unwrap().pop().unwrap();

    const CALLERS: usize = 4;
    let barrier = Barrier::new(CALLERS);
    let loaded: Vec<Arc<oxprof_api::trace::HostTraceData>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..CALLERS)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    host_data(&host)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let first = &loaded[0];
    assert!(first.index.num_events > 0);
    for other in &loaded[1..] {
        assert!(Arc::ptr_eq(first, other), "each caller loaded the profile on its own");
    }
    // Later requests find it in memory.
    assert!(Arc::ptr_eq(first, &host_data(&host)));
}

/// After the trace viewer has loaded a host, its OpStats tools use that model and grouping
/// (no second decode, no second model in memory) and answer byte for byte as a session that
/// decodes the file for them.
#[test]
fn opstats_after_the_trace_reuse_its_model() {
    use oxprof_api::data::compute;
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles/jax_train");
    let body = |session: &oxprof_api::session::Session, tool: &str| {
        let run = session.run(None).unwrap();
        let request = oxprof_api::registry::request(tool).unwrap();
        compute(session, &run, &request, false).unwrap().xprof_body().text
    };
    let tools = ["overview_page", "framework_op_stats", "input_pipeline_analyzer"];
    let decoding = oxprof_api::session::Session::open_local(&fixture, Default::default()).unwrap();
    let expected: Vec<String> = tools.iter().map(|tool| body(&decoding, tool)).collect();
    assert_eq!(decoding.file_counts().analyses_from_trace, 0);

    let session = oxprof_api::session::Session::open_local(&fixture, Default::default()).unwrap();
    let run = session.run(None).unwrap();
    oxprof_api::trace::host_traces(&session, &[&run.hosts[0]], false).unwrap();
    let answered: Vec<String> = tools.iter().map(|tool| body(&session, tool)).collect();
    assert_eq!(answered, expected);
    let counts = session.file_counts();
    assert_eq!((counts.analyses_from_trace, counts.analyses_computed), (1, 1), "{counts:?}");
}
