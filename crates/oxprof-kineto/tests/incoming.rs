//! Importing a trace while its bytes arrive (`import_kineto_incoming`) gives the model and
//! diagnostics of importing it whole, wherever the arrivals cut it: inside strings, escapes,
//! surrogate pairs, numbers, literals, skipped arrays and between events.

use oxprof_model::compare::first_difference;
use oxprof_model::{Incoming, KeepPages, LoadLimits, XSpace};
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes that arrive `chunk` at a time, each time the importer asks for more.
struct Chunked<'a> {
    bytes: &'a [u8],
    chunk: usize,
    asked: AtomicUsize,
}

impl Incoming for Chunked<'_> {
    fn wait_past(&self, have: usize) -> &[u8] {
        self.asked.fetch_add(1, Ordering::Relaxed);
        &self.bytes[..(have + self.chunk).min(self.bytes.len())]
    }

    fn expected_len(&self) -> usize {
        self.bytes.len()
    }
}

fn whole(bytes: &[u8]) -> Result<XSpace, String> {
    oxprof_kineto::import_kineto(bytes, &KeepPages, &LoadLimits::default()).map_err(|e| e.to_string())
}

fn incoming(bytes: &[u8], chunk: usize) -> (Result<XSpace, String>, usize) {
    let source = Chunked { bytes, chunk, asked: AtomicUsize::new(0) };
    let space = oxprof_kineto::import_kineto_incoming(&source, &KeepPages, &LoadLimits::default());
    (space.map_err(|e| e.to_string()), source.asked.load(Ordering::Relaxed))
}

fn assert_same_in_chunks(what: &str, bytes: &[u8], chunks: &[usize]) {
    let expected = whole(bytes);
    for &chunk in chunks {
        let (got, asked) = incoming(bytes, chunk);
        // Each arrival was asked for about once: no busy re-asking at the end.
        assert!(asked <= bytes.len() / chunk + 3, "{what} chunk {chunk}: asked {asked} times");
        match (&expected, &got) {
            (Ok(a), Ok(b)) => {
                assert_eq!(first_difference(a, b), None, "{what} chunk {chunk}");
                let diag = |s: &XSpace| s.diagnostics.iter().collect::<Vec<_>>();
                assert_eq!(diag(a), diag(b), "{what} chunk {chunk}");
                assert_eq!(a.event_count(), b.event_count(), "{what} chunk {chunk}");
            }
            (a, b) => assert_eq!(a.as_ref().err(), b.as_ref().err(), "{what} chunk {chunk}"),
        }
    }
}

/// Every cut of small traces with every hard token: escapes (a surrogate pair split after
/// its first half), `NaN`/`-Infinity`, literals, nested args skipped whole, top-level
/// metadata before and after the events, a trailing comma.
#[test]
fn every_cut_of_tricky_traces_imports_as_the_whole() {
    let traces = [
        r#"{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100", "numSms": 108}],
  "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm \"q\" \u00e9 \ud83d\ude00 \ud800x", "pid": 1, "tid": 7,
   "ts": 1000.125, "dur": 12.5, "args": {"Input Dims": [[2, 3], [3, {"a": "]}"}]], "flag": true,
   "none": null, "off": false, "nan": NaN, "neg": -Infinity, "big": 1.5e300, "esc": "a\\b\/c\n"}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": "1090", "dur": 8,
   "args": {"correlation": 42, "grid": [1, 2, 3]}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 7, "ts": 1001, "s": "t",
   "args": {"Bytes": 512, "Total Allocated": 1024, "Device Id": -1}},
  ],
  "traceName": "x", "baseTimeNanoseconds": 1700000000000000000, "displayTimeUnit": "ms"}
"#,
        // The bare-array form, cut off by a killed process.
        r#"[{"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 1}, {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
 {"ph": "X", "name": "b", "pid": 1, "tid": 2, "ts": 2, "dur": 1e1}, {"ph": "X", "name": "c", "pid""#,
        // Garbage after a few events: a corrupt tail.
        r#"{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 2} x ]}"#,
        // Not a trace at all.
        r#"{"traceEvents": 5}"#,
        "  \n ",
    ];
    for (i, text) in traces.iter().enumerate() {
        let chunks: Vec<usize> = (1..=17).chain([64, 4096]).collect();
        assert_same_in_chunks(&format!("trace {i}"), text.as_bytes(), &chunks);
    }
}

/// The recorded PyTorch traces (`testdata/kineto/`) and the mixed GPU trace, in arrivals of
/// a few sizes (the loader's are ~1 MiB).
#[test]
fn recorded_traces_import_as_the_whole_in_any_arrivals() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![dir.join("tests/data/mixed.json")];
    for entry in walk(&dir.join("../../testdata/kineto")) {
        files.push(entry);
    }
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let raw = std::fs::read(&file).unwrap();
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).unwrap();
            out
        } else {
            raw
        };
        let what = file.display().to_string();
        let small = if bytes.len() < 64 << 10 { vec![1, 3] } else { vec![] };
        let chunks: Vec<usize> = small.into_iter().chain([977, 65_521, 1 << 20]).collect();
        assert_same_in_chunks(&what, &bytes, &chunks);
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else if path.to_string_lossy().contains(".pt.trace.json") {
            out.push(path);
        }
    }
    out.sort();
    out
}
