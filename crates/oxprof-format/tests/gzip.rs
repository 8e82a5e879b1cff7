//! Gzip profiles from disk: inflated into an anonymous mapping sized by the gzip trailer
//! (whose consumed pages the decoder drops), or into the heap when the trailer is short
//! (several members) — either way the same model as inflating the bytes in memory, and
//! the same caps.

use flate2::Compression;
use flate2::write::GzEncoder;
use oxprof_format::{LoadError, LoadLimits, decode_bytes, load_xspace_with};
use oxprof_xspace::encode_xspace;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The demo's PyTorch trace: 0.75 MB gzip, 9.8 MB inflated (past the 1 MiB below which
/// a plain read is used).
fn demo_trace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/demo/pytorch_a100_ddp/nccl_data.pt.trace.json.gz")
}

fn inflated(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    std::io::copy(&mut flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap()), &mut out).unwrap();
    out
}

fn gzip(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for part in parts {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(part).unwrap();
        out.extend(encoder.finish().unwrap());
    }
    out
}

fn load(path: &Path) -> Result<Vec<u8>, LoadError> {
    load_xspace_with(path, &LoadLimits::default(), &|_| true).map(|space| encode_xspace(&space))
}

#[test]
fn a_gzip_file_loads_as_its_inflated_bytes_decode() {
    let path = demo_trace();
    let json = inflated(&path);
    assert!(json.len() > 1 << 20);
    let expected = encode_xspace(&decode_bytes(Path::new("trace.pt.trace.json"), &json).unwrap());
    assert_eq!(load(&path).unwrap(), expected, "one member: the trailer's size");

    // Two members: the trailer announces only the second, shorter one; the rest of the
    // input continues into the heap.
    let dir = tempfile::tempdir().unwrap();
    let (head, tail) = json.split_at(json.len() - (300 << 10));
    let two = dir.path().join("two.pt.trace.json.gz");
    std::fs::write(&two, gzip(&[head, tail])).unwrap();
    assert_eq!(load(&two).unwrap(), expected, "two members");
    // A short first member and a long second: the trailer over-announces the whole.
    let (head, tail) = json.split_at(300 << 10);
    std::fs::write(&two, gzip(&[head, tail])).unwrap();
    assert_eq!(load(&two).unwrap(), expected, "the trailer over-announces");
}

#[test]
fn a_gzip_file_past_its_cap_is_refused_whatever_its_trailer_says() {
    let json = inflated(&demo_trace());
    let dir = tempfile::tempdir().unwrap();
    let limits = LoadLimits::default().with_max_profile_bytes(4 << 20);
    // The trailer of the last member says 1.5 MiB (within the cap), the whole is 9.8 MB.
    let (head, tail) = json.split_at(json.len() - (3 << 19));
    let path = dir.path().join("long.pt.trace.json.gz");
    std::fs::write(&path, gzip(&[head, tail])).unwrap();
    let e = load_xspace_with(&path, &limits, &|_| true).unwrap_err();
    assert!(matches!(e, LoadError::LimitExceeded { .. }), "{e}");
    // A truncated file is a gzip error naming the file, not a panic.
    let bytes = std::fs::read(demo_trace()).unwrap();
    let cut = dir.path().join("cut.pt.trace.json.gz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let e = load(&cut).unwrap_err().to_string();
    assert!(e.contains("cut.pt.trace.json.gz"), "{e}");
}
