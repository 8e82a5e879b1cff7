//! Odd but decodable input never makes an analysis panic: random byte changes to a real
//! profile (those that still decode) go through grouping, OpStats and every tool; random
//! byte changes to real HLO modules go through the HLO tools.

use oxprof_xprof::op_stats::convert::{StepSelection, combine_hosts, xspace_to_op_stats};
use oxprof_xprof::tools;
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
    for (i, name) in ["tf_custom_loop", "jax_train", "tf_memory"].iter().cycle().take(count).enumerate() {
        let mut bytes = fixture(name);
        // A few bytes changed in place: values, ids and lengths, mostly still decodable.
        for _ in 0..1 + rng.next() % 6 {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        let Ok(space) = oxprof_xspace::decode_xspace(&bytes) else { continue };
        let result = std::panic::catch_unwind(|| {
            let host = xspace_to_op_stats(&space);
            for steps in [StepSelection::All, StepSelection::DropIncomplete] {
                let op_stats = combine_hosts(std::slice::from_ref(&host), steps);
                let _ = tools::overview_page::overview_page(&op_stats);
                let _ = tools::input_pipeline::input_pipeline_analyzer(&op_stats);
                let _ = tools::framework_op_stats::framework_op_stats(&op_stats);
                let _ = tools::pod_viewer::pod_viewer(&op_stats);
                let _ = tools::kernel_stats::kernel_stats(&op_stats);
                let _ = tools::hlo_stats::hlo_stats(&op_stats);
                let _ = tools::roofline_model::roofline_model(&op_stats);
                for grouping in [None, Some("category"), Some("program")] {
                    let grouping = tools::op_profile::Grouping::from_param(grouping);
                    let _ = tools::op_profile::op_profile(&op_stats, grouping);
                }
            }
            let _ = tools::memory_profile::memory_profile(&space).map(|p| p.to_json_string());
            let _ = tools::tf_data::tf_data_bottleneck_analysis([("vm".to_string(), &space)]);
            // The trace (index, XProf's JSON, one LOD window) on every tenth mutation: it
            // is the slowest part in a debug build.
            if i % 10 == 0 {
                let groups = oxprof_grouping::group_events(&space);
                let index = oxprof_trace::TraceIndex::build_grouped(&space, "vm", &groups);
                let host = oxprof_trace::xprof::HostTrace { space: &space, groups: &groups, index: &index };
                let _ = oxprof_trace::xprof::trace_viewer_json(&[host], &Default::default());
                let lod = oxprof_trace::lod::LodHost { space: &space, groups: &groups, index: &index };
                let _ = oxprof_trace::lod::window(&lod, &Default::default());
            }
        });
        assert!(result.is_ok(), "mutation {i} of {name} panicked in the analysis");
        analysed += 1;
    }
    eprintln!("{analysed} of {count} mutated profiles decoded and were analysed without a panic");
    assert!(analysed > 0);
}

/// Random byte changes to the real HLO modules of the JAX fixture never make the HLO tools
/// panic: each mutated module is served as a run's side-car `*.hlo_proto.pb` and asked for
/// `memory_viewer` (JSON and timeline), every `graph_viewer` form around a node that
/// existed before the change, and `module_list`. Errors are fine; panics are not.
///
/// `OXPROF_HLO_MUTATIONS=n` mutations (default 40), `OXPROF_HLO_MUTATION_MODULES=k` smallest
/// modules (default 2), `OXPROF_HLO_MUTATION_XSPACE=file` another profile's modules.
#[test]
fn mutated_hlo_modules_never_panic_in_the_hlo_tools() {
    use oxprof_api::data::{DataRequest, data};
    use oxprof_hlo::{decode_hlo_proto, hlo_proto_bytes};

    let count: usize = std::env::var("OXPROF_HLO_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let modules: usize = std::env::var("OXPROF_HLO_MUTATION_MODULES").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let source = std::env::var_os("OXPROF_HLO_MUTATION_XSPACE")
        .map_or_else(|| fixture("jax_train"), |p| std::fs::read(p).unwrap());
    let space = oxprof_xspace::decode_xspace(&source).unwrap();
    // The smallest modules with a few instructions keep this fast in debug builds.
    let mut originals: Vec<(Vec<u8>, String)> = hlo_proto_bytes(&space)
        .into_iter()
        .filter_map(|(_, bytes)| {
            let module = decode_hlo_proto(bytes).ok()?;
            let entry = module.computations.iter().find(|c| c.name == module.entry_computation_name)?;
            let node = entry.instructions.iter().find(|i| i.opcode != "parameter")?.name.clone();
            Some((bytes.to_vec(), node))
        })
        .collect();
    originals.sort_by_key(|(bytes, _)| bytes.len());
    originals.truncate(modules);
    assert!(!originals.is_empty(), "the JAX fixture carries HLO modules");

    let logdir = tempfile::tempdir().unwrap();
    let run = logdir.path().join("plugins/profile/r");
    std::fs::create_dir_all(&run).unwrap();
    // Discovery needs a host file; the side-car module is what the HLO tools read.
    std::fs::write(run.join("vm.xplane.pb"), oxprof_testkit::XSpaceBuilder::new().hostname("vm").to_bytes()).unwrap();
    let mut rng = Rng(0x0b1e_55ed_4a11_0c8d);
    let (mut decodable, mut answered) = (0, 0);
    for i in 0..count {
        let (original, node) = &originals[i % originals.len()];
        let mut bytes = original.clone();
        for _ in 0..1 + rng.next() % 6 {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes[at] = rng.next() as u8;
        }
        std::fs::write(run.join("m.hlo_proto.pb"), &bytes).unwrap();
        decodable += usize::from(decode_hlo_proto(&bytes).is_ok());
        let mut requests = vec![
            ("module_list", vec![]),
            ("memory_viewer", vec![("module_name", "m")]),
            ("memory_viewer", vec![("module_name", "m"), ("view_memory_allocation_timeline", "1")]),
        ];
        for kind in ["short_txt", "long_txt", "me_graph", "adj_nodes", "graph", "dot", "pbtxt"] {
            requests.push(("graph_viewer", vec![("module_name", "m"), ("type", kind), ("node_name", node.as_str())]));
        }
        for (tool, params) in requests {
            let request = DataRequest {
                params: params.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect(),
                ..oxprof_api::registry::request(tool).unwrap()
            };
            let result = std::panic::catch_unwind(|| data(&run, &request).is_ok());
            assert!(result.is_ok(), "mutation {i}: {tool} {params:?} panicked");
            answered += usize::from(result.unwrap());
        }
    }
    eprintln!("{count} mutated HLO modules ({decodable} decodable): {answered} answers, no panic");
    assert!(decodable > 0 && answered > 0);
}
