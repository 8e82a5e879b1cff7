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
    let host_data = |host| session.host_traces(&[host], false).unwrap().pop().unwrap();

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
