//! Fuzzes the PyTorch (Kineto/Chrome JSON) importer end to end: arbitrary bytes through
//! `sniff` and `import_kineto` within the default budgets, then a walk over the whole model
//! it built, and checks that the model is one the rest of oxprof can use: importing the
//! same bytes again, arriving a few at a time (`import_kineto_incoming`, as a gzip file
//! inflating), gives an equal model or the same error (determinism, and every cut of every
//! token), so does reading it in two halves with the second reader started at an offset
//! the input picks (an element start or any byte: a wrong guess must be dropped), the
//! importer handed back its input front to back, and the XSpace encoder's output decodes
//! to an equal model.
//!
//! Fails on any panic (index out of range, overflow with debug assertions, a broken model
//! invariant), on a timeout, or on running out of memory.

#![no_main]

use libfuzzer_sys::fuzz_target;
use oxprof_model::{Incoming, KeepPages, LoadLimits, ReleasePages};
use std::hint::black_box;
use std::ops::Range;
use std::sync::Mutex;
use walk_model::walk_space;

mod walk_model;

/// Records the ranges the importer releases.
struct Releases(Mutex<Vec<Range<usize>>>);

impl ReleasePages for Releases {
    fn release(&self, range: Range<usize>) {
        self.0.lock().unwrap().push(range);
    }
}

/// The input arriving `chunk` bytes each time the importer asks.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl Incoming for Chunked<'_> {
    fn wait_past(&self, have: usize) -> &[u8] {
        &self.data[..(have + self.chunk).min(self.data.len())]
    }

    fn expected_len(&self) -> usize {
        self.data.len()
    }
}

/// Where the second reader starts: one of the input's `{` (most are element starts of a
/// trace-like input), or any byte.
fn second_reader_at(data: &[u8]) -> Option<usize> {
    let braces = data.iter().filter(|&&b| b == b'{').count();
    let pick = data.len() % 7;
    if braces > 1 && pick != 0 {
        data.iter().enumerate().filter(|(_, b)| **b == b'{').map(|(i, _)| i).nth(1 + pick % (braces - 1))
    } else {
        Some(data.len() / 2)
    }
}

fuzz_target!(|data: &[u8]| {
    let arriving = Chunked { data, chunk: 1 + data.len() % 13 };
    let halves = oxprof_kineto::import_kineto_split_at(data, &KeepPages, &LoadLimits::default(), second_reader_at(data));
    black_box(oxprof_kineto::sniff(data));
    let limits = LoadLimits::default();
    let releases = Releases(Mutex::new(Vec::new()));
    match oxprof_kineto::import_kineto(data, &releases, &limits) {
        Ok(space) => {
            walk_space(&space);
            let ranges = releases.0.into_inner().unwrap();
            assert!(ranges.iter().all(|r| r.start <= r.end && r.end <= data.len()), "{ranges:?}");
            assert!(ranges.windows(2).all(|w| w[0].end <= w[1].end), "released out of order: {ranges:?}");
            let again = oxprof_kineto::import_kineto_incoming(&arriving, &KeepPages, &limits).expect("imports twice");
            if let Some(diff) = oxprof_model::compare::first_difference(&space, &again) {
                panic!("the import of the arriving bytes differs: {diff}");
            }
            assert_eq!(space.diagnostics, again.diagnostics);
            let halves = halves.expect("imports in two halves");
            if let Some(diff) = oxprof_model::compare::first_difference(&space, &halves) {
                panic!("the import in two halves differs: {diff}");
            }
            assert_eq!(space.diagnostics, halves.diagnostics);
            let encoded = oxprof_xspace::encode_xspace(&space);
            let decoded = oxprof_xspace::decode_xspace(&encoded).expect("the encoder's output decodes");
            if let Some(diff) = oxprof_model::compare::first_difference(&space, &decoded) {
                panic!("the XSpace round trip differs: {diff}");
            }
        }
        Err(e) => {
            let again = oxprof_kineto::import_kineto_incoming(&arriving, &KeepPages, &limits);
            assert_eq!(Some(e.to_string()), again.err().map(|e| e.to_string()));
            assert_eq!(Some(e.to_string()), halves.err().map(|e| e.to_string()));
        }
    }
});
