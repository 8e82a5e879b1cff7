//! Writes the synthetic TPU training profiles of `testdata/tpu-synthetic/` (deterministic:
//! no clock, no randomness), in the layout XProf 2.24.2 reads from a TPU host:
//!
//! * `/host:CPU`: MXU and HBM utilization counters (plane stats) and the Python thread with one `train` step marker per step (`_r=1`,
//!   `step_num`), holding the launches of the XLA program (`DoEnqueueProgram` per core: the
//!   host→device link), an `IteratorGetNext` wait and an `InfeedEnqueueTuple` op.
//! * `/device:TPU:<n>` (4 TensorCores per host, 2 per chip): plane stats for the device
//!   type, peak FLOPS and bandwidths and `core_details`; lines `Steps` (one event per step),
//!   `XLA Modules` (the program run, with `run_id`/`queue_id`/`core_type`) and `XLA Ops` (HLO ops whose
//!   event metadata carries category, program/symbol ids, flops and bytes accessed), with
//!   idle gaps so that the duty cycle is below 100%.
//! * `/host:metadata`: the program's `Hlo Proto` (its op names carry `transpose(jvp(...))`,
//!   so XProf marks the run as training).
//!
//! Variants: `training` (2 hosts, device infeed/outfeed ops) and `training_host_input`
//! (1 host, no device infeed: the input wait is on the host, XProf's
//! `MayFixTpuStepAnalysis` case).
//!
//! ```text
//! cargo run -p oxprof-xspace --example gen_tpu_training -- testdata/tpu-synthetic
//! ```
//!
//! One step on core `c` of host `h` (µs from the step start; `j` = per-step jitter):
//!
//! ```text
//! Steps      |------------------------------- step (1500 + j) -----------------------------|
//! Modules    |------------------ jit_train_step(1) (0 .. 1250 + j) ---------------|
//! XLA Ops    |infeed| |fusion.1 (convolution fusion)| |dot.2 (convolution)| |all-reduce.3| |outfeed.4|
//!             0..80+20c+5h  100..600 (holds add.5)     620..880+j   900..1002+10c  1050..1120
//! ```

use oxprof_testkit::tpu::{
    BF16, F32, PS_PER_US, XlaOp, instruction, parameter, shape, tpu_v4_core_stats, wire as hlo, write_gz,
};
use oxprof_testkit::{PlaneBuilder, Value, XSpaceBuilder};
use prost::Message;
use std::path::PathBuf;

const PROGRAM_ID: u64 = 1;
const PROGRAM: &str = "jit_train_step";
/// Start of the profile on every host (ns).
const T0_NS: i64 = 1_700_000_000_000_000_000;
const STEPS: i64 = 6;
const FIRST_STEP: i64 = 100;
const CORES: i64 = 4;
/// Step period on the host (µs).
const PERIOD_US: i64 = 2_000;

/// The HLO ops of the step program.
const OPS: &[XlaOp<'static>] = &[
    XlaOp {
        name: "infeed.0",
        opcode: "infeed",
        category: "infeed",
        tf_op: "jit(train_step)/jit(main)/infeed:",
        symbol_id: 100,
        flops: 0,
        hbm: (0, 4 << 20),
        element_type: BF16,
        dims: &[128, 8192],
    },
    XlaOp {
        name: "fusion.1",
        opcode: "fusion",
        category: "convolution fusion",
        tf_op: "jit(train_step)/jit(main)/jvp(dense)/dot_general:",
        symbol_id: 1,
        flops: 60_000_000_000,
        hbm: (48 << 20, 16 << 20),
        element_type: BF16,
        dims: &[128, 4096],
    },
    XlaOp {
        name: "add.5",
        opcode: "add",
        category: "non-fusion elementwise",
        tf_op: "jit(train_step)/jit(main)/jvp(dense)/add:",
        symbol_id: 5,
        flops: 524_288,
        hbm: (2 << 20, 1 << 20),
        element_type: F32,
        dims: &[128, 4096],
    },
    XlaOp {
        name: "dot.2",
        opcode: "dot",
        category: "convolution",
        tf_op: "jit(train_step)/jit(main)/transpose(jvp(dense))/dot_general:",
        symbol_id: 2,
        flops: 40_000_000_000,
        hbm: (64 << 20, 32 << 20),
        element_type: F32,
        dims: &[4096, 4096],
    },
    XlaOp {
        name: "all-reduce.3",
        opcode: "all-reduce",
        category: "all-reduce",
        tf_op: "jit(train_step)/jit(main)/transpose(jvp(dense))/psum:",
        symbol_id: 3,
        flops: 16_777_216,
        hbm: (32 << 20, 32 << 20),
        element_type: F32,
        dims: &[4096, 4096],
    },
    XlaOp {
        name: "outfeed.4",
        opcode: "outfeed",
        category: "outfeed",
        tf_op: "jit(train_step)/jit(main)/outfeed:",
        symbol_id: 104,
        flops: 0,
        hbm: (1 << 20, 0),
        element_type: F32,
        dims: &[128],
    },
];

/// A profile variant.
struct Variant {
    dir: &'static str,
    hosts: &'static [&'static str],
    /// Infeed and outfeed run on the device (else the host waits for input).
    device_infeed: bool,
}

const VARIANTS: &[Variant] = &[
    Variant { dir: "training", hosts: &["tpu-host-0", "tpu-host-1"], device_infeed: true },
    Variant { dir: "training_host_input", hosts: &["tpu-host-0"], device_infeed: false },
];

/// The step program as an `HloProto` that XLA's `HloModule::CreateFromProto` accepts: a
/// reducer and a fusion computation, then the entry computation whose instructions carry
/// the device ops' names and the JAX op names (the backward pass under `transpose(jvp(...))`).
fn hlo_proto() -> Vec<u8> {
    let act = || shape(F32, &[128, 4096]);
    let scalar = || shape(F32, &[]);
    let with_metadata = |mut i: hlo::HloInstructionProto, op: &str| {
        let tf_op = OPS.iter().find(|o| o.name == op).map_or("", |o| o.tf_op).trim_end_matches(':');
        i.metadata = Some(hlo::OpMetadata {
            op_type: tf_op.rsplit('/').next().unwrap_or("").to_string(),
            op_name: tf_op.to_string(),
            source_file: "train.py".to_string(),
            source_line: 40,
        });
        i
    };
    let reducer = hlo::HloComputationProto {
        name: "region_add".to_string(),
        instructions: vec![
            parameter("x", 20, 0, scalar()),
            parameter("y", 21, 1, scalar()),
            instruction("sum", "add", 22, &[20, 21], scalar()),
        ],
        program_shape: Some(hlo::ProgramShapeProto {
            parameters: vec![scalar(), scalar()],
            result: Some(scalar()),
            parameter_names: vec!["x".into(), "y".into()],
        }),
        id: 2,
        root_id: 22,
        is_fusion_computation: false,
    };
    let fused = hlo::HloComputationProto {
        name: "fused_computation".to_string(),
        instructions: vec![
            parameter("param_0", 30, 0, act()),
            parameter("param_1", 31, 1, act()),
            instruction("multiply.7", "multiply", 32, &[30, 31], act()),
        ],
        program_shape: Some(hlo::ProgramShapeProto {
            parameters: vec![act(), act()],
            result: Some(act()),
            parameter_names: vec!["param_0".into(), "param_1".into()],
        }),
        id: 3,
        root_id: 32,
        is_fusion_computation: true,
    };
    let mut fusion = with_metadata(instruction("fusion.1", "fusion", 1, &[5, 10], act()), "fusion.1");
    fusion.fusion_kind = "kLoop".to_string();
    fusion.called_computation_ids = vec![3];
    let mut dot = with_metadata(instruction("dot.2", "dot", 2, &[1, 11], act()), "dot.2");
    dot.dot_dimension_numbers =
        Some(hlo::DotDimensionNumbers { lhs_contracting_dimensions: vec![1], rhs_contracting_dimensions: vec![0] });
    let mut all_reduce = with_metadata(instruction("all-reduce.3", "all-reduce", 3, &[2], act()), "all-reduce.3");
    all_reduce.called_computation_ids = vec![2];
    let entry = hlo::HloComputationProto {
        name: "main".to_string(),
        instructions: vec![
            parameter("p0", 10, 0, act()),
            parameter("p1", 11, 1, shape(F32, &[4096, 4096])),
            with_metadata(instruction("add.5", "add", 5, &[10, 10], act()), "add.5"),
            fusion,
            dot,
            all_reduce,
        ],
        program_shape: Some(hlo::ProgramShapeProto {
            parameters: vec![act(), shape(F32, &[4096, 4096])],
            result: Some(act()),
            parameter_names: vec!["p0".into(), "p1".into()],
        }),
        id: 1,
        root_id: 3,
        is_fusion_computation: false,
    };
    let host_program_shape = entry.program_shape.clone();
    let proto = hlo::HloProto {
        hlo_module: Some(hlo::HloModuleProto {
            name: PROGRAM.to_string(),
            entry_computation_name: "main".to_string(),
            computations: vec![reducer, fused, entry],
            host_program_shape,
            id: PROGRAM_ID as i64,
            entry_computation_id: 1,
        }),
    };
    proto.encode_to_vec()
}

/// Per-step variation (µs), the same on every host so that steps line up.
fn jitter(step: i64) -> i64 {
    [0, 40, 15, 90, 25, 60][step as usize % 6]
}

fn tpu_plane(p: &mut PlaneBuilder, variant: &Variant, host_index: usize, host: &str, core: i64) {
    p.id(core + 1);
    let chip = core / 2;
    let details = hlo::CoreDetails {
        hostname: host.to_string(),
        device_ordinal: core as u32,
        core_num: (core % 2) as u32,
        local_chip_id: chip as u32,
        global_chip_id: (host_index as i64 * 2 + chip) as u32,
        global_core_id: (host_index as i64 * CORES + core) as u32,
    };
    tpu_v4_core_stats(p, &details);
    let ops: Vec<&XlaOp<'_>> =
        OPS.iter().filter(|op| variant.device_infeed || !matches!(op.opcode, "infeed" | "outfeed")).collect();
    for op in &ops {
        op.declare(p, PROGRAM_ID);
    }
    let long = |name: &str| OPS.iter().find(|o| o.name == name).expect("known op").long_name();
    let step_start = |s: i64| (s * PERIOD_US + 200 + host_index as i64 * 3) * PS_PER_US;
    p.line(1, "Steps", T0_NS, |l| {
        for s in 0..STEPS {
            let dur = (1500 + jitter(s)) * PS_PER_US;
            l.event(&(FIRST_STEP + s).to_string(), step_start(s), dur);
        }
    });
    p.line(2, "XLA Modules", T0_NS, |l| {
        for s in 0..STEPS {
            let run_id = FIRST_STEP + s;
            l.event(&format!("{PROGRAM}({PROGRAM_ID})"), step_start(s), (1250 + jitter(s)) * PS_PER_US)
                .stat("run_id", run_id)
                .stat("replica_id", 0i64)
                .stat("queue_id", 0i64)
                .stat("core_type", 0i64);
        }
    });
    p.line(3, "XLA Ops", T0_NS, |l| {
        for s in 0..STEPS {
            let t = step_start(s);
            let j = jitter(s);
            let us = |v: i64| v * PS_PER_US;
            if variant.device_infeed {
                // Longest on core 3, and on the second host (no ties: XProf's pick of
                // the core with the most infeed among equals follows hash-map order).
                l.event(&long("infeed.0"), t, us(80 + 20 * core + 5 * host_index as i64));
            }
            l.event(&long("fusion.1"), t + us(100), us(500));
            l.event(&long("add.5"), t + us(300), us(120));
            l.event(&long("dot.2"), t + us(620), us(260 + j));
            l.event(&long("all-reduce.3"), t + us(900 + j), us(102 + 10 * core))
                .stat("all_reduce_unique_id", ((host_index as i64) << 16 | (FIRST_STEP + s)) as u64);
            if variant.device_infeed {
                l.event(&long("outfeed.4"), t + us(1050 + j), us(70));
            }
        }
    });
}

fn host_space(variant: &Variant, host_index: usize, host: &str) -> Vec<u8> {
    let mut b = XSpaceBuilder::new().hostname(host);
    b = b.plane("/host:CPU", |p| {
        p.id(0);
        // Hardware counters as the TPU runtime reports them (XProf's "Utilization of TPU
        // Matrix Units" and "HBM Utilization"; ALL_HOSTS shows their mean).
        p.stat("matrix_unit_utilization_percent", 41.5 - 2.5 * host_index as f64);
        p.stat("hbm_utilization_percent", 63.25 - 2.5 * host_index as f64);
        p.line(1, "python", T0_NS, |l| {
            for s in 0..STEPS {
                let t = (s * PERIOD_US + host_index as i64 * 3) * PS_PER_US;
                let us = |v: i64| v * PS_PER_US;
                l.event("train", t, us(1900)).stat("_r", 1i64).stat("step_num", FIRST_STEP + s);
                // Input: the device infeed variant enqueues; the other waits on the host.
                if variant.device_infeed {
                    l.event("infeed_enqueue/InfeedEnqueueTuple:InfeedEnqueueTuple", t + us(10), us(60));
                } else {
                    l.event("IteratorGetNext", t + us(10), us(120 + 30 * (s % 3)));
                }
                l.event("PjitFunction(train_step)", t + us(190), us(20));
                // One program launch per TensorCore: XProf links `DoEnqueueProgram` to the
                // `XLA Modules` event with the same (device ordinal, queue, run id, core type).
                for core in 0..CORES {
                    l.event("DoEnqueueProgram", t + us(192 + 4 * core), us(3))
                        .stat("device_ordinal", core)
                        .stat("queue_id", 0i64)
                        .stat("run_id", FIRST_STEP + s)
                        .stat("core_type", 0i64);
                }
            }
        });
    });
    for core in 0..CORES {
        b = b.plane(&format!("/device:TPU:{core}"), |p| tpu_plane(p, variant, host_index, host, core));
    }
    b = b.plane("/host:metadata", |p| {
        p.id(100);
        p.event_metadata_stat(&format!("{PROGRAM}({PROGRAM_ID})"), "Hlo Proto", Value::Bytes(hlo_proto()));
    });
    b = b.plane("Task Environment", |p| {
        p.id(101);
        p.stat("profile_start_time", T0_NS as u64);
        p.stat("profile_stop_time", (T0_NS + STEPS * PERIOD_US * 1000 + 1_000_000) as u64);
    });
    b.to_bytes()
}

fn main() -> std::io::Result<()> {
    let out = std::env::args().nth(1).map_or_else(|| PathBuf::from("testdata/tpu-synthetic"), PathBuf::from);
    for variant in VARIANTS {
        for (i, host) in variant.hosts.iter().enumerate() {
            let path =
                out.join(variant.dir).join("plugins/profile/2026_11_26_00_00_00").join(format!("{host}.xplane.pb.gz"));
            write_gz(&path, &host_space(variant, i, host))?;
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}
