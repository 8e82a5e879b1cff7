//! A profile file truncated and rewritten in place while it is being loaded: every load
//! returns a profile or `FileChanged`, and the process survives (mapped files used to
//! raise SIGBUS and kill it).

#![cfg(target_os = "linux")]

use oxprof_format::LoadError;
use oxprof_testkit::XSpaceBuilder;
use std::sync::atomic::{AtomicBool, Ordering};

/// One plane of ~600 KB (many events with a stat each), as a one-plane XSpace.
fn plane_bytes() -> Vec<u8> {
    XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "thread", 1_000, |l| {
                for i in 0..20_000i64 {
                    l.event(&format!("op{}", i % 50), i * 1_000, 500).stat("step_num", i);
                }
            });
        })
        .to_bytes()
}

#[test]
fn loads_survive_a_file_truncated_in_place() {
    let plane = plane_bytes();
    const PLANES: usize = 24;
    let full: Vec<u8> = plane.repeat(PLANES);
    assert!(full.len() >= 8 << 20, "{} bytes", full.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("changing.xplane.pb");
    std::fs::write(&path, &full).unwrap();

    let stop = AtomicBool::new(false);
    let results = std::thread::scope(|s| {
        s.spawn(|| {
            // Truncate the file in place at a plane boundary (what used to raise SIGBUS in
            // loads mapping it), then put a complete copy in its place by renaming: every
            // state a file rests in is a valid XSpace, so a load that sees no change must
            // decode, and one that sees a change must say so.
            let fresh = dir.path().join("fresh.xplane.pb");
            let mut cut = 3;
            while !stop.load(Ordering::Relaxed) {
                cut = (cut * 7 + 5) % PLANES;
                let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                file.set_len((cut * plane.len()) as u64).unwrap();
                std::fs::write(&fresh, &full).unwrap();
                std::fs::rename(&fresh, &path).unwrap();
            }
        });
        // Collected, not asserted here: a panic inside the scope would wait forever for
        // the writer.
        let results: Vec<_> = (0..60).map(|_| oxprof_format::load_xspace(&path)).collect();
        stop.store(true, Ordering::Relaxed);
        results
    });
    let (mut ok, mut changed) = (0, 0);
    for result in results {
        match result {
            Ok(space) => {
                assert!(space.planes.len() <= PLANES);
                assert!(space.planes.iter().all(|p| p.event_count() == 20_000));
                ok += 1;
            }
            Err(LoadError::FileChanged { .. }) => changed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    eprintln!("{ok} loads decoded, {changed} saw the file change");
}
