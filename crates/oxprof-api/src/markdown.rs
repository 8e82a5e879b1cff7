//! Markdown for people (`oxprof data TOOL --format md`), from a report's typed tables
//! (`oxprof_report::Report::tables`) rendered by [`crate::table`]: XProf's
//! DataTables with their properties for the DataTable tools, oxprof's own summaries for
//! the tools whose XProf body is a proto message (`op_profile`: the costliest ops;
//! `memory_profile`: each allocator's peak and what was live at it; `pod_viewer`: each
//! step on each core).

use crate::table::tables_to_markdown;
use oxprof_report::Report;

/// A report as Markdown: `None` when its output has no tables at all (the trace viewer's
/// events, the graph viewer's text), `Some("")` when its tables have nothing to show.
pub fn report_markdown(report: &dyn Report) -> Option<String> {
    let tables = report.tables();
    (!tables.is_empty()).then(|| tables_to_markdown(&tables))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_xprof::op_stats::HardwareType;
    use oxprof_xprof::tools::memory_profile::{
        ActiveAllocation, ActivitySerde, AggregationStats, AllocatorSerde, MemoryActivity, MemoryProfile,
        MemoryProfileSerde, ProfileSummary, SnapshotSerde,
    };
    use oxprof_xprof::tools::op_profile::{Grouping, Node, NodeMetrics, OpProfile, XlaInstruction};
    use oxprof_xprof::tools::pod_viewer::{GenericStepTimeUs, PodCoreStep, PodStep, PodViewer};

    fn node(name: &str, raw_time: f64, children: Vec<Node>) -> Node {
        Node {
            name: name.into(),
            metrics: NodeMetrics { raw_time, ..Default::default() },
            children,
            ..Default::default()
        }
    }

    #[test]
    fn op_profile_lists_groups_and_the_costliest_ops() {
        let op = |name: &str, time: f64| Node {
            name: name.into(),
            xla: Some(XlaInstruction { category: "fusion".into(), ..Default::default() }),
            metrics: NodeMetrics {
                raw_time: time,
                occurrences: 2,
                avg_time_ps: time / 2.0,
                flops: 0.5,
                bandwidth_utils: [0.25, 0.0, 0.0],
                ..Default::default()
            },
            ..Default::default()
        };
        let fusions = node("fusion", 4e6, vec![op("fusion.1", 1e6), op("fusion.2", 3e6)]);
        let profile = OpProfile {
            grouping: Grouping::ByProgram,
            tree: node("by_program", 4e6, vec![node("jit_f(1)", 4e6, vec![fusions])]),
            tree_exclude_idle: Node::default(),
            device_type: HardwareType::Tpu,
            agg_dvfs_time_scale_multiplier: 1.0,
        };
        let md = report_markdown(&profile).unwrap();
        assert!(
            md.starts_with("- **device_type**: TPU\n- **total_time_ms**: 0.004\n- **grouped_by**: program\n"),
            "{md}"
        );
        assert!(md.contains("| jit_f(1) | 100.00% |"), "{md}");
        let big = md.find("| fusion.2 | fusion | jit_f(1) | 75.00% | 2 | 1.500 | 50.0% | 25.0% |").expect(&md);
        assert!(big < md.find("| fusion.1 |").expect(&md), "{md}");
        assert!(md.contains("2 of 2 ops, most time first:"), "{md}");
    }

    #[test]
    fn memory_profile_shows_the_peak_and_what_was_live() {
        let activity = |op: &str, bytes: i64| ActivitySerde {
            activity: MemoryActivity::Allocation,
            requested_bytes: bytes,
            allocation_bytes: bytes,
            address: 0,
            step_id: 0,
            tf_op_name: op.into(),
            region_type: "output".into(),
            data_type: "float".into(),
            tensor_shape: "[4]".into(),
        };
        let peak = AggregationStats {
            peak_bytes_in_use: 3 << 20,
            heap_allocated_bytes: 3 << 20,
            fragmentation: 0.25,
            ..Default::default()
        };
        let allocator = AllocatorSerde {
            summary: ProfileSummary {
                peak_bytes_usage_lifetime: 3 << 20,
                peak_stats: peak,
                peak_stats_time_ps: 2_000_000_000,
                memory_capacity: 1 << 30,
            },
            active_allocations: vec![
                ActiveAllocation { snapshot_index: 0, special_index: -1, num_occurrences: 1 },
                ActiveAllocation { snapshot_index: -1, special_index: 0, num_occurrences: 1 },
            ],
            snapshots: vec![SnapshotSerde { time_offset_ps: 0, stats: peak, activity: activity("small", 1 << 20) }],
            special_allocations: vec![activity("preallocated", 2 << 20)],
            sampled_timeline: Vec::new(),
        };
        let profile: MemoryProfile = MemoryProfileSerde {
            allocators: [("GPU_0_bfc".to_string(), allocator)].into_iter().collect(),
            memory_ids: vec!["GPU_0_bfc".into()],
            num_hosts: 1,
            version: 1,
            hlo_modules: Vec::new(),
        }
        .into();
        let md = report_markdown(&profile).unwrap();
        assert!(md.starts_with("## GPU_0_bfc\n\n- **peak_heap_usage_mib**: 3.00\n- **peak_time_ms**: 2.000\n"), "{md}");
        assert!(md.contains("- **fragmentation**: 25.0%"), "{md}");
        assert!(md.contains("2 of 2 allocations live at the peak, largest first:"), "{md}");
        let first = md.find("| preallocated | 2.00 | 2.00 | 1 | output | float | [4] |").expect(&md);
        assert!(first < md.find("| small | 1.00 |").expect(&md), "{md}");
    }

    #[test]
    fn pod_viewer_has_a_row_per_step_and_core() {
        let core = PodCoreStep {
            core_id: 0,
            host_name: "h".into(),
            step_num: 3,
            total_duration_us: 12.5,
            breakdown: GenericStepTimeUs { device_compute_us: 2.5, input_us: 10.0, ..Default::default() },
            bottleneck: "Input".into(),
        };
        let pods = PodViewer {
            device_type: "TPU".into(),
            steps: vec![PodStep { step_num: 3, cores: vec![core] }],
            warnings: vec![],
        };
        let md = report_markdown(&pods).unwrap();
        assert!(md.starts_with("- **device_type**: TPU\n\n1 of 1 step × core rows:\n\n"), "{md}");
        assert!(
            md.contains("| Step | Core | Host | Step time (µs) | Bottleneck | Device compute | Device to device |"),
            "{md}"
        );
        assert!(md.contains("| 3 | 0 | h | 12.500 | Input | 2.500 | 0.000 | 0.000 | 0.000 | 0.000 | 10.000 |"), "{md}");
    }

    #[test]
    fn empty_outputs_give_nothing_and_bodies_no_tables() {
        let empty = OpProfile {
            grouping: Grouping::ByCategory,
            tree: Node::default(),
            tree_exclude_idle: Node::default(),
            device_type: HardwareType::CpuOnly,
            agg_dvfs_time_scale_multiplier: 0.0,
        };
        assert_eq!(report_markdown(&empty).as_deref(), Some(""));
        assert_eq!(report_markdown(&MemoryProfile::default()).as_deref(), Some(""));
        let body = crate::data::DataResponse {
            content_type: "text/plain",
            body: "m1,m2".into(),
            json: None,
            notes: Vec::new(),
        };
        assert_eq!(report_markdown(&*body.into_report()), None);
    }
}
