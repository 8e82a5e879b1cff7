//! Odd but decodable input never makes an analysis panic: random byte changes to a real
//! profile (those that still decode) go through grouping, OpStats and every tool.

use oxprof_analysis::op_stats::convert::{StepSelection, combine_hosts, xspace_to_op_stats};
use oxprof_analysis::tools;
use std::io::Read;
use std::path::PathBuf;

/// xorshift64*: deterministic, so a failure reproduces from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn fixture(name: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name);
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(".xplane.pb.gz") {
                let mut bytes = Vec::new();
                flate2::read::GzDecoder::new(std::fs::File::open(&p).unwrap()).read_to_end(&mut bytes).unwrap();
                return bytes;
            }
        }
    }
    panic!("no fixture {name}");
}

#[test]
fn mutated_profiles_never_panic_in_any_tool() {
    let count: usize = std::env::var("OXPROF_ANALYSIS_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let mut rng = Rng(0x005e_ed0f_0a1a_2b3c);
    let mut analysed = 0;
    for (i, name) in ["tf_custom_loop", "jax_train"].iter().cycle().take(count).enumerate() {
        let mut bytes = fixture(name);
        // A few bytes changed in place: values, ids and lengths, mostly still decodable.
        for _ in 0..1 + rng.next() % 6 {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        let Ok(space) = oxprof_format::decode_xspace(&bytes) else { continue };
        let result = std::panic::catch_unwind(|| {
            let host = xspace_to_op_stats(&space);
            for steps in [StepSelection::All, StepSelection::DropIncomplete] {
                let op_stats = combine_hosts(std::slice::from_ref(&host), steps);
                let _ = tools::overview_page::overview_page(&op_stats);
                let _ = tools::input_pipeline::input_pipeline_analyzer(&op_stats);
                let _ = tools::framework_op_stats::framework_op_stats(&op_stats);
                let _ = tools::pod_viewer::pod_viewer(&op_stats);
            }
        });
        assert!(result.is_ok(), "mutation {i} of {name} panicked in the analysis");
        analysed += 1;
    }
    eprintln!("{analysed} of {count} mutated profiles decoded and were analysed without a panic");
    assert!(analysed > 0);
}
