//! The PyTorch views on hand-built traces (what `oxprof-kineto` makes of a Kineto trace:
//! categories as event-metadata stats, args as event stats).

use super::kernels::PytorchKernelStats;
use super::memory::PytorchMemory;
use super::modules::PytorchModules;
use super::operators::PytorchOpStats;
use super::overview::PytorchOverview;
use super::parse;
use oxprof_model::{ModelBuilder, Value, XSpace};
use oxprof_report::Report;

const US: i64 = 1_000_000;

/// The categories of [`two_steps`]' host events.
fn host_categories(p: &mut oxprof_model::PlaneSketch) {
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
}

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
            host_categories(p);
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

/// `profile_memory` on one thread: `[memory]` instants (allocations +, releases −) inside
/// and outside operators (times in µs; CPU unless marked GPU0):
///
/// ```text
/// host   0    5    10   12   20  25 27 30  35  40        50   55
///        |aten::linear-----------------------------|
///                  |aten::empty-|  |aten::add-|
///             +A100    +B200          +C50  −A100         −B200 −D8
///                                     GPU0                 (no op) (D never allocated)
/// ```
fn memory_trace() -> XSpace {
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            for name in ["aten::linear", "aten::empty", "aten::add"] {
                p.event_metadata_stat(name, "category", "cpu_op");
            }
            p.event_metadata_stat("[memory]", "category", "cpu_instant_event");
            p.event_metadata_stat("[memory]", "ph", "i");
            p.line(1, "python", 0, |l| {
                l.event("aten::linear", 0, 40 * US);
                l.event("aten::empty", 10 * US, 10 * US);
                l.event("aten::add", 25 * US, 10 * US);
                // (µs, address, bytes, device type, device id, total allocated, reserved)
                for (t, addr, bytes, dtype, did, allocated, reserved) in [
                    (5, 0xA, 100, 0, -1, 100, 1024),
                    (12, 0xB, 200, 0, -1, 300, 1024),
                    (27, 0xC, 50, 1, 0, 50, 512),
                    (30, 0xA, -100, 0, -1, 200, 1024),
                    (50, 0xB, -200, 0, -1, 0, 1024),
                    (55, 0xD, -8, 0, -1, 0, 1024),
                ] {
                    l.event("[memory]", t * US, 0)
                        .stat("Addr", Value::I64(addr))
                        .stat("Bytes", Value::I64(bytes))
                        .stat("Device Type", Value::I64(dtype))
                        .stat("Device Id", Value::I64(did))
                        .stat("Total Allocated", Value::I64(allocated))
                        .stat("Total Reserved", Value::I64(reserved));
                }
            });
        })
        .build()
        .unwrap()
}

#[test]
fn memory_curves_peaks_and_events_pair_allocations_with_releases() {
    let m = PytorchMemory::from_parsed(&parse(&memory_trace()));
    assert_eq!((m.records, m.other_device, m.unattributed), (6, 0, 2));
    let names: Vec<&str> = m.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(names, ["CPU", "GPU0"]);
    let (cpu, gpu) = (&m.devices[0], &m.devices[1]);
    assert_eq!((cpu.peak_allocated_bytes, gpu.peak_allocated_bytes), (Some(300.0), Some(50.0)));
    let curve: Vec<(f64, f64, f64)> =
        cpu.curve.iter().map(|c| (c.time_us, c.allocated_bytes, c.reserved_bytes)).collect();
    assert_eq!(
        curve,
        [(5.0, 100.0, 1024.0), (12.0, 300.0, 1024.0), (30.0, 200.0, 1024.0), (50.0, 0.0, 1024.0), (55.0, 0.0, 1024.0)]
    );
    type Row<'a> = (&'a str, f64, Option<f64>, Option<f64>, Option<f64>);
    let events: Vec<Row> = cpu
        .events
        .iter()
        .map(|e| (e.operator.as_str(), e.size_bytes, e.allocation_us, e.release_us, e.duration_us))
        .collect();
    // Released ones in release order; B is named by aten::empty's parent (PyTorch's malloc);
    // D's release has no allocation.
    assert_eq!(
        events,
        [
            ("aten::linear", 100.0, Some(5.0), Some(30.0), Some(25.0)),
            ("aten::linear (aten::empty)", 200.0, Some(12.0), Some(50.0), Some(38.0)),
            ("<unknown>", 8.0, None, Some(55.0), None),
        ]
    );
    let [c] = gpu.events.as_slice() else { panic!("{:?}", gpu.events) };
    assert_eq!(
        (c.operator.as_str(), c.size_bytes, c.allocation_us, c.release_us),
        ("aten::add", 50.0, Some(27.0), None)
    );
}

#[test]
fn memory_by_operator_counts_own_and_children_per_device() {
    let m = PytorchMemory::from_parsed(&parse(&memory_trace()));
    let row = |device: usize, name: &str| {
        let r = m.devices[device].operators.iter().find(|r| r.name == name).unwrap();
        (
            r.calls,
            r.size_increase_bytes,
            r.self_size_increase_bytes,
            r.allocations,
            r.self_allocations,
            r.allocation_bytes,
            r.self_allocation_bytes,
        )
    };
    // linear: +100 itself; empty's +200 and add's −100 below it.
    assert_eq!(row(0, "aten::linear"), (1, 200, 100, 2, 1, 300, 100));
    assert_eq!(row(0, "aten::empty"), (1, 200, 200, 1, 1, 200, 200));
    // A release counts where it happens, not where the bytes were allocated.
    assert_eq!(row(0, "aten::add"), (1, -100, -100, 0, 0, 0, 0));
    assert_eq!(row(1, "aten::add"), (1, 50, 50, 1, 1, 50, 50));
    assert_eq!(row(1, "aten::linear"), (1, 50, 0, 1, 0, 50, 0));
    assert_eq!(m.devices[1].operators.len(), 2);
}

#[test]
fn memory_without_events_says_how_to_record_them() {
    let m = PytorchMemory::from_parsed(&parse(&two_steps()));
    assert!(m.devices.is_empty());
    assert!(m.notes.iter().any(|n| n.contains("profile_memory=True")), "{:?}", m.notes);
}

/// A module hierarchy on one thread (µs); python_function ids in brackets, parents after `^`:
///
/// ```text
///  0 5 10   20 25 35 40 45 50 55   70 80 85 90 95 100
///  |ProfilerStep#1-----------------------------------|
///    |main.py: main [1]----------------------------|
///      |nn.Module: Sequential_0 [2^1]---------|
///           |Linear_0 [3^2]|   |seq.py: forward [4^2]|
///              |aten::linear|     |Linear_1 [5^4]|
///                                    |aten::linear|
/// ```
/// Linear_1 sits under a plain Python function under Sequential_0: still its child module.
fn module_trace() -> XSpace {
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            p.event_metadata_stat("ProfilerStep#1", "category", "user_annotation");
            p.event_metadata_stat("aten::linear", "category", "cpu_op");
            for name in [
                "main.py: main",
                "nn.Module: Sequential_0",
                "nn.Module: Linear_0",
                "seq.py: forward",
                "nn.Module: Linear_1",
            ] {
                p.event_metadata_stat(name, "category", "python_function");
            }
            p.line(1, "python", 0, |l| {
                l.event("ProfilerStep#1", 0, 100 * US);
                l.event("main.py: main", 5 * US, 90 * US).stat("Python id", Value::I64(1));
                l.event("nn.Module: Sequential_0", 10 * US, 80 * US)
                    .stat("Python id", Value::I64(2))
                    .stat("Python parent id", Value::I64(1))
                    .stat("Python module id", Value::I64(0));
                l.event("nn.Module: Linear_0", 20 * US, 20 * US)
                    .stat("Python id", Value::I64(3))
                    .stat("Python parent id", Value::I64(2))
                    .stat("Python module id", Value::I64(0));
                l.event("aten::linear", 25 * US, 10 * US).stat("External id", Value::I64(1));
                l.event("seq.py: forward", 45 * US, 40 * US)
                    .stat("Python id", Value::I64(4))
                    .stat("Python parent id", Value::I64(2));
                l.event("nn.Module: Linear_1", 50 * US, 30 * US)
                    .stat("Python id", Value::I64(5))
                    .stat("Python parent id", Value::I64(4))
                    .stat("Python module id", Value::I64(1));
                l.event("aten::linear", 55 * US, 15 * US).stat("External id", Value::I64(2));
            });
        })
        .build()
        .unwrap()
}

#[test]
fn modules_nest_through_plain_python_functions_with_their_host_times() {
    let m = PytorchModules::from_parsed(&parse(&module_trace()));
    assert!(m.notes.is_empty(), "{:?}", m.notes);
    assert_eq!(m.modules.len(), 1);
    let seq = &m.modules[0];
    assert_eq!((seq.name.as_str(), seq.module_id, seq.occurrences, seq.operators), ("Sequential_0", 0, 1, 0));
    // Host self: 80 minus its child modules' 20 and 30 (plain Python functions are no nodes).
    assert_eq!((seq.host_total_us, seq.host_self_us, seq.device_total_us, seq.mean_us), (80.0, 30.0, 0.0, 80.0));
    let children: Vec<(&str, i64, u64, f64, f64)> = seq
        .children
        .iter()
        .map(|c| (c.name.as_str(), c.module_id, c.operators, c.host_total_us, c.host_self_us))
        .collect();
    assert_eq!(children, [("Linear_0", 0, 1, 20.0, 10.0), ("Linear_1", 1, 1, 30.0, 15.0)]);
    let t = &m.tables()[0];
    let paths: Vec<String> = t.rows.iter().map(|r| format!("{:?}", r[1])).collect();
    assert_eq!(paths.len(), 3);
    assert!(paths[2].contains("Sequential_0 / Linear_1"), "{paths:?}");
}

#[test]
fn modules_without_module_events_say_how_to_record_them() {
    let m = PytorchModules::from_parsed(&parse(&two_steps()));
    assert!(m.modules.is_empty());
    assert!(m.notes[0].contains("with_stack=True"), "{:?}", m.notes);
}

/// One operator allocating on GPU0 (peak 60 bytes) on a GPU with `total` bytes of memory.
fn gpu_memory_trace(total: i64) -> XSpace {
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            p.stat(
                "deviceProperties",
                format!(
                    r#"[{{"id": 0, "name": "T", "totalGlobalMem": {total}, "computeMajor": 8, "computeMinor": 0}}]"#
                ),
            );
            p.event_metadata_stat("aten::empty", "category", "cpu_op");
            p.event_metadata_stat("[memory]", "category", "cpu_instant_event");
            p.event_metadata_stat("[memory]", "ph", "i");
            p.line(1, "python", 0, |l| {
                l.event("aten::empty", 0, 10 * US);
                for (t, bytes, allocated) in [(2, 60, 60), (4, -60, 0)] {
                    l.event("[memory]", t * US, 0)
                        .stat("Addr", Value::I64(0xA))
                        .stat("Bytes", Value::I64(bytes))
                        .stat("Device Type", Value::I64(1))
                        .stat("Device Id", Value::I64(0))
                        .stat("Total Allocated", Value::I64(allocated))
                        .stat("Total Reserved", Value::I64(64));
                }
            });
        })
        .build()
        .unwrap()
}

#[test]
fn memory_near_the_device_capacity_is_a_recommendation() {
    // 60 of 64 bytes: 93.75 % > 90 %.
    let o = PytorchOverview::from_parsed(&parse(&gpu_memory_trace(64)));
    let rec = o.recommendations.iter().find(|r| r.starts_with("Device memory usage")).expect("memory recommendation");
    assert!(rec.contains("(93.8% of 0.0GB on GPU0)"), "{rec}");
    assert!(rec.contains(
        "<a href=\"https://pytorch.org/docs/stable/checkpoint.html\" target=\"_blank\">Gradient Checkpoint</a>"
    ));
    // 60 of 100 bytes: none.
    let o = PytorchOverview::from_parsed(&parse(&gpu_memory_trace(100)));
    assert!(!o.recommendations.iter().any(|r| r.starts_with("Device memory usage")), "{:?}", o.recommendations);
}

/// An event of [`two_steps_in`]: name, start µs, duration µs, External id, correlation id
/// (-1: none).
type EventRow = (&'static str, i64, i64, i64, i64);

/// [`two_steps`] with every line's events given to the model in `order` (the importer
/// writes them sorted by start; a space from elsewhere may not be).
fn two_steps_in(order: fn(&mut Vec<EventRow>)) -> XSpace {
    let mut host = vec![
        ("ProfilerStep#1", 0, 100, 10, -1),
        ("aten::mm", 10, 30, 1, -1),
        ("cudaLaunchKernel", 20, 5, 1, 7),
        ("aten::relu", 50, 10, 2, -1),
        ("ProfilerStep#2", 100, 100, 11, -1),
        ("aten::add", 115, 15, 3, -1),
        ("cudaLaunchKernel", 120, 5, 3, 8),
    ];
    let mut gpu = vec![("sm80_xmma_gemm", 30, 40, 1, 7), ("add_kernel", 130, 20, 3, 8), ("add_kernel", 152, 2, 3, 8)];
    order(&mut host);
    order(&mut gpu);
    let events = |l: &mut oxprof_model::LineSketch<'_>, events: &[EventRow]| {
        for &(name, start, dur, ext, corr) in events {
            let mut e = l.event(name, start * US, dur * US).stat("External id", Value::I64(ext));
            if corr >= 0 {
                e = e.stat("correlation_id", Value::I64(corr));
            }
            if name == "aten::mm" {
                e.stat("Input Dims", "[[2, 3], [3, 4]]");
            }
        }
    };
    ModelBuilder::new()
        .plane("/host:CPU", |p| {
            host_categories(p);
            p.line(1, "python", 0, |l| events(l, &host));
        })
        .plane("/device:GPU:0", |p| {
            p.event_metadata_stat("sm80_xmma_gemm", "category", "kernel");
            p.event_metadata_stat("add_kernel", "category", "kernel");
            p.line(7, "Stream #7(Compute)", 0, |l| events(l, &gpu));
        })
        .build()
        .unwrap()
}

/// The parse walks events by start whatever order the model holds them in: lines out of
/// order (sorted instead of merged) give the same views.
#[test]
fn lines_out_of_start_order_parse_as_sorted_ones() {
    let views = |space: &XSpace| {
        let p = parse(space);
        [
            PytorchOverview::from_parsed(&p).to_json(),
            PytorchOpStats::from_parsed(&p).to_json(),
            PytorchKernelStats::from_parsed(&p).to_json(),
        ]
    };
    let sorted = views(&two_steps_in(|_| {}));
    assert_eq!(views(&two_steps_in(|events| events.reverse())), sorted);
    assert_eq!(views(&two_steps_in(|events| events.rotate_left(3))), sorted);
    let overview = &sorted[0];
    assert_eq!(overview["steps"].as_array().map(Vec::len), Some(2), "{overview}");
}

/// The per-event rows of the parse stay small: tens of millions of them on a multi-GB
/// trace (lists are links, kernels share their launch facts).
#[test]
fn the_parse_rows_stay_small() {
    use crate::parse::{Device, Node, Runtime};
    let sizes = (std::mem::size_of::<Node>(), std::mem::size_of::<Runtime>(), std::mem::size_of::<Device>());
    assert!(sizes.0 <= 56 && sizes.1 <= 56 && sizes.2 <= 56, "node, runtime, device: {sizes:?}");
}
