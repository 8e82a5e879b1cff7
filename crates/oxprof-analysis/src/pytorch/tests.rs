//! The PyTorch views on hand-built traces (what `oxprof-kineto` makes of a Kineto trace:
//! categories as event-metadata stats, args as event stats).

use super::kernels::PytorchKernelStats;
use super::operators::PytorchOpStats;
use super::overview::PytorchOverview;
use super::parse;
use oxprof_model::{ModelBuilder, Value, XSpace};

const US: i64 = 1_000_000;

/// Two steps on one thread, a GEMM and an add kernel on stream 7 (times in µs):
///
/// ```text
/// host   0         10   20 25 30  40  50  60       100      115 120 125 130      200
///        |ProfilerStep#1-----------------------------|ProfilerStep#2--------------|
///                  |aten::mm (ext 1)----|  |relu|              |aten::add (ext 3)|
///                       |rt|  corr 7                               |rt| corr 8
/// GPU:0 stream 7                |sm80_xmma_gemm 30..70|                  |add 130..150|
/// ```
fn two_steps() -> XSpace {
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            for (name, cat) in [
                ("ProfilerStep#1", "user_annotation"),
                ("ProfilerStep#2", "user_annotation"),
                ("aten::mm", "cpu_op"),
                ("aten::relu", "cpu_op"),
                ("aten::add", "cpu_op"),
                ("cudaLaunchKernel", "cuda_runtime"),
            ] {
                p.event_metadata_stat(name, "category", cat);
            }
            p.line(1, "python", 0, |l| {
                l.event("ProfilerStep#1", 0, 100 * US).stat("External id", Value::I64(10));
                l.event("aten::mm", 10 * US, 30 * US)
                    .stat("External id", Value::I64(1))
                    .stat("Input Dims", "[[2, 3], [3, 4]]");
                l.event("cudaLaunchKernel", 20 * US, 5 * US)
                    .stat("External id", Value::I64(1))
                    .stat("correlation_id", Value::I64(7));
                l.event("aten::relu", 50 * US, 10 * US).stat("External id", Value::I64(2));
                l.event("ProfilerStep#2", 100 * US, 100 * US).stat("External id", Value::I64(11));
                l.event("aten::add", 115 * US, 15 * US).stat("External id", Value::I64(3));
                l.event("cudaLaunchKernel", 120 * US, 5 * US)
                    .stat("External id", Value::I64(3))
                    .stat("correlation_id", Value::I64(8));
            });
        })
        .plane("/device:GPU:0", |p| {
            p.event_metadata_stat("sm80_xmma_gemm", "category", "kernel");
            p.event_metadata_stat("add_kernel", "category", "kernel");
            p.line(7, "Stream #7(Compute)", 0, |l| {
                l.event("sm80_xmma_gemm", 30 * US, 40 * US)
                    .stat("device", Value::I64(0))
                    .stat("correlation_id", Value::I64(7))
                    .stat("External id", Value::I64(1))
                    .stat("blocks per SM", Value::F64(0.5))
                    .stat("est. achieved occupancy %", Value::I64(50))
                    .stat("grid", "[1, 2, 1]")
                    .stat("block", "[128, 1, 1]")
                    .stat("registers per thread", Value::I64(32));
                l.event("add_kernel", 130 * US, 20 * US)
                    .stat("device", Value::I64(0))
                    .stat("correlation_id", Value::I64(8))
                    .stat("External id", Value::I64(3))
                    .stat("blocks per SM", Value::F64(2.0))
                    .stat("est. achieved occupancy %", Value::I64(25));
            });
        })
        .build()
        .unwrap()
}

#[test]
fn step_breakdown_gives_each_instant_to_the_first_active_role() {
    let o = PytorchOverview::from_parsed(&parse(&two_steps()));
    assert!(o.has_profiler_steps);
    let names: Vec<&str> = o.steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["1", "2"]);
    // Step 1: kernel 30..70; runtime 20..25; CPU 10..20 and 25..30 (relu is under the
    // kernel); the rest is Other.
    let b = o.steps[0].breakdown.values();
    assert_eq!(b, [40.0, 0.0, 0.0, 0.0, 5.0, 0.0, 15.0, 40.0, 100.0]);
    // Step 2: kernel 130..150, runtime 120..125, CPU 115..120 and 125..130.
    let b = o.steps[1].breakdown.values();
    assert_eq!(b, [20.0, 0.0, 0.0, 0.0, 5.0, 0.0, 10.0, 65.0, 100.0]);
    assert_eq!(o.average.values(), [30.0, 0.0, 0.0, 0.0, 5.0, 0.0, 12.5, 52.5, 100.0]);
}

#[test]
fn gpu_summary_weights_by_time_within_the_steps() {
    let o = PytorchOverview::from_parsed(&parse(&two_steps()));
    let [gpu] = o.gpus.as_slice() else { panic!("{:?}", o.gpus) };
    assert_eq!(gpu.id, 0);
    // 60 µs of kernels in the 200 µs of the steps.
    assert_eq!(gpu.utilization, 0.3);
    // Blocks per SM 0.5 for 40 µs, 2 (capped at 1) for 20 µs, over 200 µs.
    assert_eq!(gpu.sm_efficiency, Some(0.2));
    assert_eq!(gpu.achieved_occupancy_pct, Some((50.0 * 40.0 + 25.0 * 20.0) / 60.0));
    // The GEMM (xmma_gemm) uses Tensor Cores: 40 of 60 µs.
    assert_eq!(gpu.tensor_core_ratio, Some(40.0 / 60.0));
    assert_eq!(o.tc_eligible_ops_kernel_ratio, 40.0 / 60.0);
    assert_eq!(o.tc_used_ratio, Some(40.0 / 60.0));
    assert_eq!(o.recommendations.len(), 1, "{:?}", o.recommendations);
    assert!(o.recommendations[0].starts_with("GPU 0 has low utilization."), "{:?}", o.recommendations);
}

#[test]
fn operators_own_their_runtimes_and_the_kernels_those_launched() {
    let ops = PytorchOpStats::from_parsed(&parse(&two_steps()));
    let row = |name: &str| ops.by_name.iter().find(|r| r.name == name).unwrap().clone();
    let mm = row("aten::mm");
    assert_eq!((mm.calls, mm.host_total_us, mm.host_self_us), (1, 30.0, 25.0));
    assert_eq!((mm.device_total_us, mm.device_self_us, mm.tc_self_us), (40.0, 40.0, 40.0));
    assert!(mm.tc_eligible);
    let add = row("aten::add");
    assert_eq!((add.host_self_us, add.device_self_us, add.tc_total_us), (10.0, 20.0, 0.0));
    assert!(!add.tc_eligible);
    // Steps are not operators; most device self time first.
    let names: Vec<&str> = ops.by_name.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["aten::mm", "aten::add", "aten::relu"]);
    let shapes: Vec<&str> = ops.by_name_input.iter().filter_map(|r| r.input_shape.as_deref()).collect();
    assert_eq!(shapes, ["[[2, 3], [3, 4]]", "[]", "[]"]);
    assert!(ops.by_name_stack.is_empty());
}

#[test]
fn kernels_by_name_and_by_launching_operator() {
    let k = PytorchKernelStats::from_parsed(&parse(&two_steps()));
    let names: Vec<(&str, bool, u64, f64)> =
        k.by_name.iter().map(|r| (r.name.as_str(), r.tensor_cores_used, r.calls, r.total_us)).collect();
    assert_eq!(names, [("sm80_xmma_gemm", true, 1, 40.0), ("add_kernel", false, 1, 20.0)]);
    assert_eq!((k.by_name[0].mean_blocks_per_sm, k.by_name[0].mean_occupancy_pct), (0.5, 50.0));
    let gemm = &k.by_name_op[0];
    assert_eq!(
        (gemm.operator.as_str(), gemm.grid.as_str(), gemm.block.as_str()),
        ("aten::mm", "[1, 2, 1]", "[128, 1, 1]")
    );
    assert_eq!((gemm.registers_per_thread, gemm.op_tc_eligible), (32, true));
    assert_eq!(k.by_name_op[1].operator, "aten::add");
    assert_eq!(k.by_name_op[1].grid, "None");
}

/// A CPU-only trace without `ProfilerStep#N` (µs):
///
/// ```text
/// host  5        15  20        30
///       |aten::linear--|
///        |aten::linear|          a lone same-named child: merged into its parent
///                       |aten::relu|
/// ```
#[test]
fn without_steps_one_step_spans_the_host_events_and_a_note_says_why() {
    let space = ModelBuilder::new()
        .plane("/host:CPU", |p| {
            p.event_metadata_stat("aten::linear", "category", "cpu_op");
            p.event_metadata_stat("aten::relu", "category", "cpu_op");
            p.line(1, "python", 0, |l| {
                l.event("aten::linear", 5 * US, 10 * US);
                l.event("aten::linear", 6 * US, 8 * US);
                l.event("aten::relu", 20 * US, 10 * US);
            });
        })
        .build()
        .unwrap();
    let p = parse(&space);
    let o = PytorchOverview::from_parsed(&p);
    assert!(!o.has_profiler_steps);
    assert_eq!((o.steps.len(), o.steps[0].name.as_str()), (1, "0"));
    assert_eq!(o.steps[0].breakdown.values(), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 20.0, 5.0, 25.0]);
    assert!(o.gpus.is_empty());
    assert!(o.notes.iter().any(|n| n.starts_with("no steps found") && n.contains("prof.step()")), "{:?}", o.notes);
    let ops = PytorchOpStats::from_parsed(&p);
    let linear = ops.by_name.iter().find(|r| r.name == "aten::linear").unwrap();
    assert_eq!((linear.calls, linear.host_total_us, linear.host_self_us), (1, 10.0, 10.0));
    let k = PytorchKernelStats::from_parsed(&p);
    assert!(k.by_name.is_empty() && k.tc_used_ratio.is_none());
    assert!(!k.notes.is_empty());
}

#[test]
fn python_reprs_of_json_args() {
    let mut s = String::new();
    super::parse::py_repr(&serde_json::json!([[1, 2], [], "a'b", "c", null, true, 1.5]), &mut s);
    assert_eq!(s, r#"[[1, 2], [], "a'b", 'c', None, True, 1.5]"#);
}
