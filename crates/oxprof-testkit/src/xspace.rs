//! Building XSpace files in tests: the model's name-level builder
//! ([`oxprof_model::ModelBuilder`], exact timestamps) written out by the encoder, so tests
//! exercise the same decoder as real profiles; hostile inputs ([`bombs`]); the committed
//! profiles ([`fixtures`]).
//!
//! ```
//! use oxprof_testkit::XSpaceBuilder;
//! // python  |-- train 0 --------|
//! //            |- matmul -|
//! let bytes = XSpaceBuilder::new()
//!     .plane("/host:CPU", |p| {
//!         p.line(1, "python", 1_000, |l| {
//!             l.event("train", 0, 100).stat("step_num", 0i64).stat("_r", 1i64);
//!             l.event("matmul", 10, 50);
//!         });
//!     })
//!     .to_bytes();
//! let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
//! assert_eq!(space.event_count(), 2);
//! ```

pub use oxprof_model::{EventSketch as EventBuilder, LineSketch as LineBuilder, PlaneSketch as PlaneBuilder, Value};
use oxprof_model::{ModelBuilder, XSpace};

/// Builds an XSpace and writes it as protobuf bytes.
#[derive(Debug, Default)]
pub struct XSpaceBuilder {
    model: ModelBuilder,
}

impl XSpaceBuilder {
    /// An empty XSpace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a plane (its id is its position unless set with [`PlaneBuilder::id`]).
    pub fn plane(mut self, name: &str, build: impl FnOnce(&mut PlaneBuilder)) -> Self {
        self.model = self.model.plane(name, build);
        self
    }

    /// Adds a host name.
    pub fn hostname(mut self, name: &str) -> Self {
        self.model = self.model.hostname(name);
        self
    }

    /// Adds an error message.
    pub fn error(mut self, text: &str) -> Self {
        self.model = self.model.error(text);
        self
    }

    /// Adds a warning message.
    pub fn warning(mut self, text: &str) -> Self {
        self.model = self.model.warning(text);
        self
    }

    /// The model as built (what decoding [`XSpaceBuilder::to_bytes`] gives back).
    pub fn space(&self) -> &XSpace {
        self.model.space()
    }

    /// The serialized XSpace.
    pub fn to_bytes(&self) -> Vec<u8> {
        oxprof_xspace::encode_xspace(self.model.space())
    }
}

/// Hostile inputs for tests of [`oxprof_model::LoadLimits`]: bytes that cost far more to decode
/// than their size, written as raw protobuf (the builder would take too long for millions
/// of items). Each is valid protobuf, so only the limits stop it.
pub mod bombs {
    use std::io::Write;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// A length-delimited field.
    fn field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
        varint(number << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    /// A varint field.
    fn field_varint(number: u64, value: u64, out: &mut Vec<u8>) {
        varint(number << 3, out);
        varint(value, out);
    }

    /// `n` empty planes named `/device:GPU:<i>` (about 19 bytes each).
    pub fn empty_planes(n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n * 20);
        let mut plane = Vec::new();
        for i in 0..n {
            plane.clear();
            field(2, format!("/device:GPU:{i}").as_bytes(), &mut plane);
            field(1, &plane, &mut out);
        }
        out
    }

    /// One `/host:CPU` plane with `n` empty lines (2 bytes each).
    pub fn empty_lines(n: usize) -> Vec<u8> {
        let mut plane = Vec::with_capacity(2 * n + 16);
        field(2, b"/host:CPU", &mut plane);
        for _ in 0..n {
            field(3, &[], &mut plane);
        }
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One `/host:CPU` plane with `n` empty event metadata entries (2 bytes each).
    pub fn empty_metadata(n: usize) -> Vec<u8> {
        let mut plane = Vec::with_capacity(2 * n + 16);
        field(2, b"/host:CPU", &mut plane);
        for _ in 0..n {
            field(4, &[], &mut plane);
        }
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One `/host:CPU` line of `n` events, each naming an event metadata id the file
    /// lacks (a placeholder entry each, for about 5 bytes on the wire).
    pub fn unknown_metadata_ids(n: usize) -> Vec<u8> {
        let mut line = Vec::with_capacity(6 * n + 16);
        let mut event = Vec::new();
        for i in 0..n {
            event.clear();
            field_varint(1, i as u64 + 1, &mut event);
            field(4, &event, &mut line);
        }
        let mut plane = Vec::with_capacity(line.len() + 32);
        field(2, b"/host:CPU", &mut plane);
        field(3, &line, &mut plane);
        let mut out = Vec::with_capacity(plane.len() + 8);
        field(1, &plane, &mut out);
        out
    }

    /// One event on a `/host:CPU` line with `count` `compressed_str_value` stats, each
    /// inflating to `each` bytes of `a` (about `each / 1000` bytes on the wire).
    pub fn compressed_strings(count: usize, each: usize) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let chunk = vec![b'a'; 1 << 20];
        let mut left = each;
        while left > 0 {
            let n = left.min(chunk.len());
            let _ = gz.write_all(&chunk[..n]);
            left -= n;
        }
        let compressed = gz.finish().unwrap_or_default();
        let mut event = Vec::new();
        field_varint(1, 1, &mut event);
        let mut stat = Vec::new();
        field_varint(1, 1, &mut stat);
        field(8, &compressed, &mut stat);
        for _ in 0..count {
            field(4, &stat, &mut event);
        }
        let mut line = Vec::new();
        field_varint(1, 1, &mut line);
        field(4, &event, &mut line);
        let (mut event_metadata, mut stat_metadata, mut value) = (Vec::new(), Vec::new(), Vec::new());
        field_varint(1, 1, &mut value);
        field(2, b"e", &mut value);
        field_varint(1, 1, &mut event_metadata);
        field(2, &value, &mut event_metadata);
        value.clear();
        field_varint(1, 1, &mut value);
        field(2, b"s", &mut value);
        field_varint(1, 1, &mut stat_metadata);
        field(2, &value, &mut stat_metadata);
        let mut plane = Vec::new();
        field(2, b"/host:CPU", &mut plane);
        field(3, &line, &mut plane);
        field(4, &event_metadata, &mut plane);
        field(5, &stat_metadata, &mut plane);
        let mut out = Vec::new();
        field(1, &plane, &mut out);
        out
    }

    /// Writes a gzip stream that inflates to `n` zero bytes (about `n / 1000` bytes),
    /// generated on the fly.
    pub fn gzip_of_zeros(n: u64, out: impl Write) -> std::io::Result<()> {
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        let mut left = n;
        while left > 0 {
            let k = left.min(zeros.len() as u64) as usize;
            gz.write_all(&zeros[..k])?;
            left -= k as u64;
        }
        gz.finish()?;
        Ok(())
    }
}

/// The repository's committed profiles, for tests of every crate that reads them.
pub mod fixtures {
    use std::io::Read;
    use std::path::{Path, PathBuf};

    pub use crate::files::repo_root;

    /// The smallest profile a tool can read, encoded:
    /// ```text
    /// /host:CPU  thread  [op 0..10)
    /// ```
    pub fn one_op_profile() -> Vec<u8> {
        crate::XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "thread", 0, |l| {
                    l.event("op", 0, 10);
                });
            })
            .to_bytes()
    }

    /// Every file under `dir` whose name ends with `suffix`, in sorted order, recursively.
    pub fn files_with_suffix(dir: &Path, suffix: &str, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                files_with_suffix(&p, suffix, out);
            } else if p.to_string_lossy().ends_with(suffix) {
                out.push(p);
            }
        }
    }

    /// The committed refkit profiles under `testdata/profiles`, gunzipped: (path, bytes).
    /// Panics (a test's failure) if they are missing or unreadable.
    pub fn committed_profiles() -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        files_with_suffix(&repo_root().join("testdata/profiles"), ".xplane.pb.gz", &mut files);
        assert!(files.len() >= 5, "expected the committed fixtures under testdata/profiles");
        files
            .into_iter()
            .map(|p| {
                let mut bytes = Vec::new();
                let read = std::fs::File::open(&p)
                    .and_then(|f| flate2::read::GzDecoder::new(f).read_to_end(&mut bytes).map(|_| ()));
                if let Err(e) = read {
                    panic!("{}: {e}", p.display());
                }
                (p, bytes)
            })
            .collect()
    }
}

/// Every segment of an error's `source()` chain, as `{:#}` in anyhow prints them: tests of
/// the rule that each error says its cause once.
pub fn error_chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut next = e.source();
    while let Some(s) = next {
        out.push(s.to_string());
        next = s.source();
    }
    out
}
