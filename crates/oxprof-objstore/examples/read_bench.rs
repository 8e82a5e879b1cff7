//! Read-path throughput: one object read whole through [`RemoteStore`] (parallel ranged
//! GETs), `N` times, printing MB/s per read. Used by `scripts/bench/objstore.sh`.
//!
//! ```text
//! cargo run --release -p oxprof-objstore --example read_bench -- s3://bucket/key [N] [load]
//! ```
//!
//! With `load`, each round decodes the object into the model instead ([`ProfileStore::load`]:
//! a gzip object inflates while it downloads; `OXPROF_OBJSTORE_NO_OVERLAP=1` downloads it
//! whole first), and a local file given as `LOCAL=path` is decoded the same way for
//! comparison.

use oxprof_format::ProfileStore;
use oxprof_objstore::{RemoteOptions, RemoteStore};
use std::path::Path;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: read_bench URL [N]");
    let times: usize = args.next().map_or(3, |n| n.parse().expect("N is a number"));
    let dir = url.rsplit_once('/').map_or(url.as_str(), |(d, _)| d);
    let decode = args.next().is_some_and(|a| a == "load");
    if decode {
        let limits = oxprof_format::LoadLimits::default();
        let local = std::env::var("LOCAL").ok();
        for _ in 0..times {
            let store = RemoteStore::open(dir, &RemoteOptions::default()).unwrap_or_else(|e| panic!("{e}"));
            let start = Instant::now();
            let space = store.load(Path::new(&url), &limits, &|_| true).unwrap_or_else(|e| panic!("{e}"));
            let remote = start.elapsed().as_secs_f64();
            let local = local.as_ref().map_or(String::new(), |file| {
                let start = Instant::now();
                oxprof_format::load_xspace_with(Path::new(file), &limits, &|_| true).unwrap_or_else(|e| panic!("{e}"));
                format!(", local file {:.3} s", start.elapsed().as_secs_f64())
            });
            println!("decoded {} events: from the store {remote:.3} s{local}", space.event_count());
        }
        return;
    }
    for _ in 0..times {
        // A fresh store each time: no stat or object remembered.
        let store = RemoteStore::open(dir, &RemoteOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let bytes = store.read_range(Path::new(&url), 0..u64::MAX).unwrap_or_else(|e| panic!("{e}"));
        let seconds = start.elapsed().as_secs_f64();
        println!("{} bytes in {seconds:.3} s: {:.0} MB/s", bytes.len(), bytes.len() as f64 / seconds / 1e6);
    }
}
