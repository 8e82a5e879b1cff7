//! Fuzzes the SQL entry point: arbitrary text as one statement through `Engine::query`
//! over a committed profile, within the server's budgets (20 s, 1 GiB, 64 KiB of SQL, the
//! shape limits), as `/oxprof/api/query` runs it.
//!
//! Any answer or one-line error is fine; fails on a panic, an abort (a stack overflow, an
//! allocation the pool did not see), a timeout, or running out of memory. The text is
//! also parsed and shape-checked alone (`bounds::check`), which must never fail otherwise
//! than with an error.

#![no_main]

use libfuzzer_sys::fuzz_target;
use oxprof_api::session::SessionOptions;
use oxprof_sql::{Engine, QueryLimits};
use std::hint::black_box;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// One engine for the whole run (as the server keeps one per session).
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/profiles/jax_train");
        let options = SessionOptions { confine_to_root: false, cache_bytes: 64 << 20, ..SessionOptions::default() };
        let session = Arc::new(oxprof_api::data::local_session(std::path::Path::new(profile), options).unwrap());
        let runs = session.catalog().current().runs.clone();
        let limits = QueryLimits {
            max_rows: Some(10_000),
            timeout: Some(Duration::from_secs(5)),
            memory_bytes: 1 << 30,
            ..QueryLimits::default()
        };
        Engine::new(session, runs, limits).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else { return };
    match engine().query(sql) {
        Ok(result) => {
            black_box(result.row_count());
        }
        Err(e) => {
            let text = e.to_string();
            assert!(!text.contains('\n') || text.lines().count() == 1, "not one line: {text}");
            black_box(e.http_status());
        }
    }
});
