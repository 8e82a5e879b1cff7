//! The decoder against real profiles: committed refkit fixtures (TF, Keras, JAX) and, when
//! present, the third-party captures in `../shared/testdata/external/` (GPU, TPU). Every
//! field is compared with prost, the reference protobuf decoder; then thousands of random
//! mutations of real profiles check that bad input never panics and that whatever prost
//! accepts decodes identically.

use oxprof_testkit::crosscheck;
use std::path::PathBuf;

use oxprof_testkit::fixtures::{committed_profiles as fixture_profiles, files_with_suffix, repo_root};

fn external_profiles() -> Option<Vec<PathBuf>> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    if !dir.is_dir() {
        eprintln!("SKIP: {} is absent; third-party profiles not checked", dir.display());
        return None;
    }
    let mut files = Vec::new();
    files_with_suffix(&dir, ".xplane.pb", &mut files);
    Some(files)
}

#[test]
fn fixtures_decode_exactly_like_prost() {
    for (path, bytes) in fixture_profiles() {
        assert_eq!(crosscheck(&bytes), Ok(true), "{}", path.display());
    }
}

#[test]
fn external_profiles_decode_exactly_like_prost() {
    let Some(files) = external_profiles() else { return };
    assert!(!files.is_empty());
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(crosscheck(&bytes), Ok(true), "{}", path.display());
    }
}

#[test]
fn decoded_model_stays_within_one_and_a_half_file_sizes() {
    for (path, bytes) in fixture_profiles() {
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let heap = space.heap_bytes();
        // The budget of the issue: a decoded profile within 1.5x its file size.
        assert!(heap * 2 <= bytes.len() * 3, "{}: model {heap} bytes for a {} byte file", path.display(), bytes.len());
    }
}

#[test]
fn decoding_is_the_same_with_one_thread_or_many() {
    let (_, bytes) = fixture_profiles().swap_remove(1);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let a = one.install(|| oxprof_xspace::decode_xspace(&bytes).unwrap());
    let b = four.install(|| oxprof_xspace::decode_xspace(&bytes).unwrap());
    for (pa, pb) in a.planes.iter().zip(&b.planes) {
        assert_eq!(pa.strings().iter().collect::<Vec<_>>(), pb.strings().iter().collect::<Vec<_>>());
        for (la, lb) in pa.lines.iter().zip(&pb.lines) {
            for (ea, eb) in la.events(pa).zip(lb.events(pb)) {
                assert_eq!(ea.metadata_id(), eb.metadata_id());
                assert_eq!(ea.timestamp_ps(), eb.timestamp_ps());
                let sa: Vec<_> = ea.stats().map(|s| (s.metadata_id(), s.value.to_string())).collect();
                let sb: Vec<_> = eb.stats().map(|s| (s.metadata_id(), s.value.to_string())).collect();
                assert_eq!(sa, sb);
            }
        }
    }
}

#[test]
fn metadata_only_decode_keeps_everything_but_the_skipped_lines() {
    let mut skipped = 0;
    for (path, bytes) in fixture_profiles() {
        let full = oxprof_xspace::decode_xspace(&bytes).unwrap();
        for keep_host in [true, false] {
            let wanted = |name: &str| (name == "/host:CPU") == keep_host;
            let partial = oxprof_xspace::decode_xspace_lines_of(&bytes, &oxprof_model::KeepPages, &wanted).unwrap();
            assert_eq!(full.planes.len(), partial.planes.len(), "{}", path.display());
            for (a, b) in full.planes.iter().zip(&partial.planes) {
                let what = format!("{} {}", path.display(), a.name);
                assert_eq!((a.id, &a.name), (b.id, &b.name));
                assert_eq!(a.event_metadata().len(), b.event_metadata().len(), "{what}");
                assert_eq!(a.stat_metadata().len(), b.stat_metadata().len(), "{what}");
                assert_eq!(a.strings().iter().collect::<Vec<_>>(), b.strings().iter().collect::<Vec<_>>(), "{what}");
                assert_eq!(a.lines_not_decoded(), 0);
                if wanted(&a.name) {
                    assert_eq!(b.lines_not_decoded(), 0, "{what}");
                    let shape =
                        |p: &oxprof_model::XPlane| p.lines.iter().map(|l| (l.id, l.event_count())).collect::<Vec<_>>();
                    assert_eq!(shape(a), shape(b), "{what}");
                } else {
                    assert!(b.lines.is_empty(), "{what}");
                    assert_eq!(b.lines_not_decoded(), a.lines.len(), "{what}");
                    skipped += a.lines.len();
                }
            }
            let hlo = oxprof_hlo::hlo_proto_bytes;
            assert_eq!(hlo(&full), hlo(&partial), "{}", path.display());
        }
    }
    assert!(skipped > 0, "no fixture had lines to skip");
}

/// xorshift64*: a tiny deterministic generator, so failures reproduce from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, original: &[u8]) -> Vec<u8> {
    let mut b = original.to_vec();
    let n = b.len();
    match rng.below(7) {
        0 => {
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(n);
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => {
            let i = rng.below(n);
            let len = rng.below(16).min(n - i);
            for x in &mut b[i..i + len] {
                *x = rng.next() as u8;
            }
        }
        2 => b.truncate(rng.below(n)),
        3 => {
            let i = rng.below(n);
            let len = rng.below(64).min(n - i);
            b.drain(i..i + len);
        }
        4 => {
            let i = rng.below(n);
            let len = rng.below(64).min(n - i);
            let copy = b[i..i + len].to_vec();
            let at = rng.below(n);
            b.splice(at..at, copy);
        }
        5 => {
            // Varint continuation bits and huge lengths.
            let i = rng.below(n);
            b[i] = [0x80, 0xff, 0x7f, 0x00][rng.below(4)];
        }
        _ => {
            let i = rng.below(n);
            b.insert(i, rng.next() as u8);
        }
    }
    b
}

#[test]
fn thousands_of_mutations_never_panic_and_agree_with_prost() {
    let count: usize = std::env::var("OXPROF_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(3000);
    let profiles = fixture_profiles();
    // The two smallest real profiles keep this fast.
    let mut by_size: Vec<_> = profiles.iter().collect();
    by_size.sort_by_key(|(_, b)| b.len());
    let mut rng = Rng(0x0bad_5eed_1234_5678);
    let (mut accepted, mut rejected) = (0, 0);
    for i in 0..count {
        let (path, original) = by_size[i % 2];
        let mutated = mutate(&mut rng, original);
        match oxprof_xspace::decode_xspace(&mutated) {
            Ok(_) => accepted += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                rejected += 1;
            }
        }
        if let Err(diff) = crosscheck(&mutated) {
            panic!("mutation {i} of {}: {diff}", path.display());
        }
        // A decode that skips the host plane's lines must not panic either, and whatever a
        // full decode accepts, it accepts.
        let partial = oxprof_xspace::decode_xspace_lines_of(&mutated, &oxprof_model::KeepPages, &|p| p != "/host:CPU");
        if oxprof_xspace::decode_xspace(&mutated).is_ok() {
            assert!(partial.is_ok(), "mutation {i} of {}: partial decode rejected it", path.display());
        }
    }
    eprintln!("{count} mutations: {accepted} decoded, {rejected} rejected with an error");
    assert!(rejected > 0 && accepted > 0);
}

/// Inputs the fuzzer once flagged, kept so they stay fixed.
#[test]
fn fuzz_regressions_stay_fixed() {
    let dir = repo_root().join("testdata/fuzz-regressions");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        let _ = oxprof_xspace::decode_xspace(&bytes);
        if let Err(diff) = crosscheck(&bytes) {
            panic!("{}: {diff}", entry.path().display());
        }
        n += 1;
    }
    assert!(n > 0);
}
