//! The budgets of `LoadLimits` against hostile files: each bomb the security review found
//! is refused with its limit's error (built at test time, in memory or in a temp dir),
//! and every real profile passes with room to spare.

use oxprof_format::{Allowance, DecodeError, KeepPages, Limit, LoadError, LoadLimits};
use oxprof_testkit::bombs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn decode_limit(bytes: &[u8], limits: &LoadLimits) -> Option<Limit> {
    match oxprof_format::decode_xspace_within(bytes, &KeepPages, &|_| true, limits) {
        Err(DecodeError::LimitExceeded(e)) => {
            assert!(e.at_least > e.allowed, "{e:?}");
            Some(e.limit)
        }
        Err(e) => panic!("expected a limit error, got {e}"),
        Ok(_) => None,
    }
}

fn load_limit(path: &Path, limits: &LoadLimits) -> Result<Limit, String> {
    match oxprof_format::load_xspace_with(path, limits, &|_| true) {
        Err(e @ LoadError::LimitExceeded { .. }) => {
            let message = e.to_string();
            let LoadError::LimitExceeded { exceeded, .. } = e else { unreachable!() };
            assert!(message.contains(exceeded.limit.raise_with()), "{message}");
            assert!(message.ends_with("raise the limit if the file is genuine"), "{message}");
            assert_eq!(message.lines().count(), 1, "{message}");
            Ok(exceeded.limit)
        }
        Err(e) => Err(format!("expected a limit error, got {e}")),
        Ok(_) => Err("expected a limit error, got a profile".into()),
    }
}

#[test]
fn a_gzip_bomb_stops_inflating_at_its_cap() {
    let dir = tempfile::tempdir().unwrap();
    // 256 MiB of zeros in ~260 KB: past the default 64 MiB + 32x allowance.
    let path = dir.path().join("bomb.xplane.pb.gz");
    bombs::gzip_of_zeros(256 << 20, std::fs::File::create(&path).unwrap()).unwrap();
    assert_eq!(load_limit(&path, &LoadLimits::default()), Ok(Limit::InflateRatio));
    // The absolute cap binds first when it is lower, and names its flag.
    let small = LoadLimits::default().with_max_profile_bytes(16 << 20);
    assert_eq!(load_limit(&path, &small), Ok(Limit::InflatedBytes));
    let message = oxprof_format::load_xspace_with(&path, &small, &|_| true).unwrap_err().to_string();
    assert!(
        message.ends_with(
            "bomb.xplane.pb.gz: inflates past 16,777,216 bytes (--max-profile-bytes); raise the limit if the file is genuine"
        ),
        "{message}"
    );
    // The same from memory.
    let bytes = std::fs::read(&path).unwrap();
    let e = oxprof_format::decode_bytes_with(&path, &bytes, &LoadLimits::default()).unwrap_err();
    assert!(matches!(e, LoadError::LimitExceeded { exceeded, .. } if exceeded.limit == Limit::InflateRatio), "{e}");
}

#[test]
fn a_plain_file_larger_than_the_cap_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.xplane.pb");
    std::fs::write(&path, bombs::empty_planes(100_000)).unwrap();
    let limits = LoadLimits::default().with_max_profile_bytes(1 << 20);
    assert_eq!(load_limit(&path, &limits), Ok(Limit::ProfileBytes));
}

#[test]
fn compressed_strings_share_one_budget() {
    // Twelve strings of 16 MiB (the review's had 256 MiB each): 192 MiB, past 64 MiB + 8x.
    let bytes = bombs::compressed_strings(12, 16 << 20);
    assert!(bytes.len() < 1 << 20);
    assert_eq!(decode_limit(&bytes, &LoadLimits::default()), Some(Limit::CompressedStrBytes));
    // Within budget they decode (to one interned string).
    let limits = LoadLimits { compressed_str_bytes: Allowance { base: 200 << 20, per_mib: 0 }, ..Default::default() };
    assert_eq!(decode_limit(&bytes, &limits), None);
}

#[test]
fn many_planes_lines_or_metadata_entries_for_the_size_are_refused() {
    let defaults = LoadLimits::default();
    // The review's bombs: 1 M empty planes in 19 MB, 1 M empty lines in 2 MB.
    assert_eq!(decode_limit(&bombs::empty_planes(1_000_000), &defaults), Some(Limit::Planes));
    assert_eq!(decode_limit(&bombs::empty_lines(1_000_000), &defaults), Some(Limit::Lines));
    assert_eq!(decode_limit(&bombs::empty_metadata(1_000_000), &defaults), Some(Limit::MetadataEntries));
    // Placeholders for metadata ids the file lacks count as metadata entries.
    assert_eq!(decode_limit(&bombs::unknown_metadata_ids(1_000_000), &defaults), Some(Limit::MetadataEntries));
    assert_eq!(decode_limit(&bombs::unknown_metadata_ids(60_000), &defaults), None);
    // Small counts pass: the bases keep tiny files from being refused.
    assert_eq!(decode_limit(&bombs::empty_planes(1_000), &defaults), None);
    assert_eq!(decode_limit(&bombs::empty_lines(16_000), &defaults), None);
    assert_eq!(decode_limit(&bombs::empty_metadata(60_000), &defaults), None);
    // And without limits the same bytes decode.
    assert_eq!(decode_limit(&bombs::empty_lines(1_000_000), &LoadLimits::none()), None);
}

/// Every real profile passes limits ten times tighter than the defaults (four times for
/// inflation), so the defaults have that much headroom at least.
#[test]
fn real_profiles_pass_with_headroom() {
    let tenth = |a: Allowance| Allowance { base: a.base / 10, per_mib: a.per_mib / 10 };
    let d = LoadLimits::default();
    let tight = LoadLimits {
        max_profile_bytes: 64 << 20,
        inflated_bytes: Allowance { base: 0, per_mib: d.inflated_bytes.per_mib / 4 },
        compressed_str_bytes: Allowance { base: 0, per_mib: 0 },
        planes: tenth(d.planes),
        lines: tenth(d.lines),
        metadata_entries: tenth(d.metadata_entries),
        interned_bytes: tenth(d.interned_bytes),
    };
    let mut files = Vec::new();
    for root in [repo_root().join("testdata/profiles"), repo_root().join("../shared/testdata/external")] {
        collect(&root, &mut files);
    }
    assert!(files.len() >= 5);
    for path in files {
        if let Err(e) = oxprof_format::load_xspace_with(&path, &tight, &|_| true) {
            panic!("{e}");
        }
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.to_string_lossy().contains(".xplane.pb") {
            out.push(path);
        }
    }
}
