//! Fuzzes the XSpace decoder end to end: arbitrary bytes (plain or gzip) through
//! `decode_bytes`, then a walk over the whole decoded model so that every lazy accessor
//! (string resolution, stat columns, placeholders, occurrences) runs on what it produced,
//! and a field-by-field comparison with prost on every input prost accepts (which also
//! encodes the decoded model and decodes it again: the result must be equal); the partial
//! decode that skips some planes' lines is walked too.
//!
//! Fails on any panic (index out of range, overflow with debug assertions, a broken model
//! invariant checked below), on a timeout, or on running out of memory.

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::hint::black_box;
use walk_model::walk_space;

mod walk_model;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    match oxprof_format::decode_bytes(Path::new("fuzz-input"), data) {
        Ok(space) => walk_space(&space),
        // Errors must format (they name the file and the broken message).
        Err(e) => {
            black_box(e.to_string());
            black_box(e.path());
        }
    }
    // A partial decode (lines of planes with odd-length names skipped) walks the same way.
    if let Ok(space) = oxprof_xspace::decode_xspace_lines_of(data, &oxprof_model::KeepPages, &|p| p.len() % 2 == 0) {
        walk_space(&space);
    }
    // Whatever prost (the reference protobuf decoder) accepts must decode identically, and
    // round-trip through the encoder.
    if let Err(diff) = oxprof_testkit::crosscheck(data) {
        panic!("oxprof and prost disagree: {diff}");
    }
});
