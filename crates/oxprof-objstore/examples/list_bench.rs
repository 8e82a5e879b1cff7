//! Listing speed: a logdir's runs discovered through [`RemoteStore`] (one listing), `N`
//! times, printing seconds and runs per call. Used by `scripts/bench/objstore.sh` to put
//! the listing beside the server's `/runs`.
//!
//! ```text
//! cargo run --release -p oxprof-objstore --example list_bench -- s3://bucket/logdir [N]
//! ```

use oxprof_format::ProfileStore;
use oxprof_objstore::{RemoteOptions, RemoteStore};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let url = args.next().expect("usage: list_bench URL [N]");
    let times: usize = args.next().map_or(3, |n| n.parse().expect("N is a number"));
    let store = RemoteStore::open(&url, &RemoteOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    for _ in 0..times {
        let start = Instant::now();
        let listed = store.list(&store.location().prefix).unwrap_or_else(|e| panic!("{e}"));
        let listing = start.elapsed().as_secs_f64();
        let found = store.discover(None).unwrap_or_else(|e| panic!("{e}"));
        let total = start.elapsed().as_secs_f64();
        println!(
            "{} objects listed in {listing:.3} s; listing + runs again: {} runs in {:.3} s",
            listed.len(),
            found.runs.len(),
            total - listing
        );
    }
}
