//! The PyTorch traces recorded for oxprof (`testdata/kineto/`, see its PROVENANCE.md) import
//! with their plain JSON event counts, only the diagnostics explained here, and what an
//! analysis needs: steps, memory events, Python frames, the DDP rank.

use oxprof_model::{DiagnosticKind, KeepPages, LoadLimits, XSpace};
use std::io::Read;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kineto")
}

fn import(rel: &str) -> XSpace {
    let raw = std::fs::read(fixtures().join(rel)).unwrap();
    let mut bytes = Vec::new();
    flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut bytes).unwrap();
    assert!(oxprof_kineto::sniff(&bytes[..bytes.len().min(4096)]), "{rel}");
    oxprof_kineto::import_kineto(&bytes, &KeepPages, &LoadLimits::default()).unwrap()
}

fn counts() -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("counts.json")).unwrap();
    serde_json::from_str::<serde_json::Value>(&text).unwrap().as_object().unwrap().clone()
}

fn find(counts: &serde_json::Map<String, serde_json::Value>, prefix: &str) -> String {
    counts.keys().find(|k| k.starts_with(prefix)).unwrap_or_else(|| panic!("no {prefix} fixture")).clone()
}

#[test]
fn every_fixture_imports_with_its_plain_json_count() {
    let counts = counts();
    assert_eq!(counts.len(), 3);
    for (rel, expected) in &counts {
        let space = import(rel);
        assert_eq!(space.event_count() as u64, expected["events"].as_u64().unwrap(), "{rel}");
        let explained: Vec<(DiagnosticKind, u64)> = if rel.starts_with("train/") {
            // Each record_function (`user_annotation`) starts inside the Python frame that
            // enters it (`_record_function_enter_new`) and outlives it: 8 of them.
            vec![(DiagnosticKind::OverlappingEvents, 8)]
        } else {
            // Two gloo threads share the name "thread N (pt_gloo_runloop)"… on rank 1; on
            // rank 0 a python thread does. Either way two names are equal.
            vec![(DiagnosticKind::DuplicateThreadName, 1)]
        };
        assert_eq!(space.diagnostics.iter().collect::<Vec<_>>(), explained, "{rel}");
    }
}

#[test]
fn the_training_loop_has_steps_memory_events_and_python_frames() {
    let rel = find(&counts(), "train/");
    let space = import(&rel);
    let host = &space.planes[0];
    assert_eq!(host.name, "/host:CPU");
    let mut steps = Vec::new();
    let (mut memory, mut python, mut grouped) = (0, 0, 0);
    for e in host.events() {
        if e.name().starts_with("ProfilerStep#") {
            steps.push(e.stat(oxprof_model::schema::StatType::StepNum).and_then(|s| s.as_i64()));
        }
        if e.name() == "[memory]" {
            memory += 1;
            assert!(e.stats().any(|s| s.name() == "Total Allocated"));
        }
        let category = e.metadata_stats().find(|s| s.name() == "category").and_then(|s| s.as_str());
        python += usize::from(category == Some("python_function"));
        grouped += usize::from(e.stat(oxprof_model::schema::StatType::GroupId).is_some());
    }
    // schedule(wait=1, warmup=1, active=2): steps 2 and 3 are recorded.
    assert_eq!(steps, [Some(2), Some(3)]);
    assert_eq!(memory, 61);
    assert!(python > 1000, "{python}");
    assert!(grouped > 100, "{grouped}");
    assert!(oxprof_model::schema::is_xspace_grouped(&space));
    let stats: Vec<String> = host.stats().map(|s| s.name().to_string()).collect();
    for key in ["with_stack", "profile_memory", "record_shapes", "baseTimeNanoseconds"] {
        assert!(stats.iter().any(|s| s == key), "{key} in {stats:?}");
    }
}

#[test]
fn ddp_ranks_carry_their_rank_and_gloo_collectives() {
    let counts = counts();
    for (rank, prefix) in ["ddp/rank0", "ddp/rank1"].iter().enumerate() {
        let space = import(&find(&counts, prefix));
        let host = &space.planes[0];
        let info = host.stats().find(|s| s.name() == "distributedInfo").and_then(|s| s.as_str()).unwrap().to_string();
        let info: serde_json::Value = serde_json::from_str(&info).unwrap();
        assert_eq!((info["rank"].as_u64(), info["world_size"].as_u64()), (Some(rank as u64), Some(2)));
        assert_eq!(info["backend"], "gloo");
        assert!(host.events().any(|e| e.name() == "gloo:all_reduce"));
    }
}
