//! A profile decoded as it streams in (an object store's download) equals the same
//! profile decoded from memory, plain and gzip, and the raw bytes it hands back are the
//! object's.

use oxprof_format::{LoadLimits, decode_bytes_lines_of, decode_stream_lines_of};
use std::io::{Read, Write};
use std::path::Path;

/// A download that arrives a few bytes at a time.
struct Trickle<'a>(&'a [u8]);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.0.len()).min(7);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// ```text
/// /host:CPU  thread  [matmul 0..10) [relu 10..15)
/// ```
fn profile() -> Vec<u8> {
    oxprof_testkit::XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "thread", 0, |l| {
                l.event("matmul", 0, 10);
                l.event("relu", 10, 5);
            });
        })
        .to_bytes()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn a_streamed_profile_decodes_as_from_memory() {
    let limits = LoadLimits::default();
    for (name, bytes) in [("h.xplane.pb", profile()), ("h.xplane.pb.gz", gzip(&profile()))] {
        let path = Path::new(name);
        let expected = decode_bytes_lines_of(path, &bytes, &limits, &|_| true).unwrap();
        let (head, rest) = bytes.split_at(16);
        let (space, raw) =
            decode_stream_lines_of(path, head.to_vec(), Trickle(rest), bytes.len() as u64, &limits, &|_| true).unwrap();
        assert_eq!(raw, bytes, "{name}: the bytes read");
        assert_eq!(space.event_count(), expected.event_count(), "{name}");
        assert_eq!(space.event_count(), 2, "{name}");
    }
}

#[test]
fn a_stream_that_breaks_is_an_error_not_a_partial_profile() {
    struct Broken;
    impl Read for Broken {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("connection reset"))
        }
    }
    let limits = LoadLimits::default();
    for (name, bytes) in [("h.xplane.pb", profile()), ("h.xplane.pb.gz", gzip(&profile()))] {
        let head = bytes[..16].to_vec();
        let result = decode_stream_lines_of(Path::new(name), head, Broken, bytes.len() as u64, &limits, &|_| true);
        assert!(result.is_err(), "{name}");
    }
}

/// A gzip'd PyTorch trace is imported while it downloads and inflates: the same model as
/// from memory, the object's bytes handed back; a download that breaks part way, or a trace
/// inflating past its cap, is an error.
#[test]
fn a_streamed_pytorch_trace_imports_as_from_memory() {
    let demo =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/demo/pytorch_a100_ddp/nccl_data.pt.trace.json.gz");
    let bytes = std::fs::read(&demo).unwrap();
    let path = Path::new("rank0.pt.trace.json.gz");
    let limits = LoadLimits::default();
    let expected = decode_bytes_lines_of(path, &bytes, &limits, &|_| true).unwrap();
    let (head, rest) = bytes.split_at(4096);
    let (space, raw) =
        decode_stream_lines_of(path, head.to_vec(), Trickle(rest), bytes.len() as u64, &limits, &|_| true).unwrap();
    assert_eq!(raw, bytes);
    assert_eq!(oxprof_model::compare::first_difference(&expected, &space), None);
    assert_eq!(expected.diagnostics, space.diagnostics);

    /// The first half of the download, then a reset connection.
    struct BreaksHalfway<'a>(&'a [u8]);
    impl Read for BreaksHalfway<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Err(std::io::Error::other("connection reset"));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let half = &rest[..rest.len() / 2];
    let broken =
        decode_stream_lines_of(path, head.to_vec(), BreaksHalfway(half), bytes.len() as u64, &limits, &|_| true);
    assert!(broken.unwrap_err().to_string().contains("connection reset"));

    let small = LoadLimits { max_profile_bytes: 1 << 20, ..LoadLimits::default() };
    let capped = decode_stream_lines_of(path, head.to_vec(), Trickle(rest), bytes.len() as u64, &small, &|_| true);
    let message = capped.unwrap_err().to_string();
    assert!(message.contains("max-profile"), "{message}");
}

/// A plain profile of `events` events (over a mapping's worth of bytes from ~40 000).
fn large_profile(events: i64) -> Vec<u8> {
    oxprof_testkit::XSpaceBuilder::new()
        .plane("/host:CPU", |p| {
            p.line(1, "thread", 0, |l| {
                for i in 0..events {
                    l.event(["matmul", "relu", "conv"][(i % 3) as usize], i * 10, 5);
                }
            });
        })
        .to_bytes()
}

#[test]
fn a_spilled_stream_decodes_as_from_memory_and_keeps_its_budget() {
    use oxprof_format::decode_stream_spilled;
    let limits = LoadLimits::default();
    let bytes = large_profile(200_000);
    assert!(bytes.len() > 1 << 20, "{} bytes: not spilled", bytes.len());
    let path = Path::new("s3://b/h.xplane.pb");
    let expected = decode_bytes_lines_of(path, &bytes, &limits, &|_| true).unwrap();
    let (head, rest) = bytes.split_at(64);
    let (space, read) =
        decode_stream_spilled(path, head.to_vec(), std::io::Cursor::new(rest), bytes.len() as u64, &limits, &|_| true)
            .unwrap();
    assert_eq!(read, bytes.len() as u64);
    assert_eq!(space.event_count(), expected.event_count());
    assert_eq!(space.event_count(), 200_000);
    // The small and the gzip ones take the in-memory way, with the same answers.
    for (name, bytes) in [("h.xplane.pb", profile()), ("h.xplane.pb.gz", gzip(&large_profile(200_000)))] {
        let (head, rest) = bytes.split_at(16);
        let (space, read) =
            decode_stream_spilled(Path::new(name), head.to_vec(), Trickle(rest), bytes.len() as u64, &limits, &|_| {
                true
            })
            .unwrap();
        assert_eq!(read, bytes.len() as u64, "{name}");
        assert!(space.event_count() == 2 || space.event_count() == 200_000, "{name}");
    }
    // Over the budget: refused, whatever the stated size.
    let small = LoadLimits { max_profile_bytes: 1 << 20, ..LoadLimits::default() };
    let capped = decode_stream_spilled(path, head.to_vec(), std::io::Cursor::new(rest), 1 << 20, &small, &|_| true);
    let message = capped.unwrap_err().to_string();
    assert!(message.contains("max-profile"), "{message}");
    // Cut short: what arrived is counted, for the caller to see it changed.
    let short = &rest[..rest.len() / 2];
    if let Ok((_, read)) =
        decode_stream_spilled(path, head.to_vec(), std::io::Cursor::new(short), bytes.len() as u64, &limits, &|_| true)
    {
        assert!(read < bytes.len() as u64);
    }
}
