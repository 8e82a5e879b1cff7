//! Tests of the HLO module map on hand-built modules (numbers XProf 2.24.2 computed for the
//! same modules) and on odd modules.

use super::*;
use crate::{HloComputation, HloInstruction, Layout, Literal, OpMetadata, Shape, hlo_modules, primitive};

/// An array shape with the default (major-to-minor) layout.
fn array(element_type: i32, dims: &[i64]) -> Shape {
    let minor_to_major = (0..dims.len() as i64).rev().collect();
    Shape {
        element_type,
        dimensions: dims.to_vec(),
        layout: Some(Layout { minor_to_major, ..Default::default() }),
        ..Default::default()
    }
}

fn tuple(elements: Vec<Shape>) -> Shape {
    Shape { element_type: primitive::TUPLE, tuple_shapes: elements, ..Default::default() }
}

fn instr(name: &str, opcode: &str, id: i64, shape: Shape, operands: &[i64]) -> HloInstruction {
    HloInstruction {
        name: name.into(),
        opcode: opcode.into(),
        id,
        shape,
        operand_ids: operands.to_vec(),
        ..Default::default()
    }
}

fn param(name: &str, id: i64, number: i64, shape: Shape) -> HloInstruction {
    HloInstruction { parameter_number: number, ..instr(name, "parameter", id, shape, &[]) }
}

fn computation(name: &str, id: i64, root: i64, instructions: Vec<HloInstruction>) -> HloComputation {
    HloComputation { name: name.into(), id, root_id: root, instructions, ..Default::default() }
}

fn module(computations: Vec<HloComputation>, entry: i64) -> HloModule {
    HloModule { name: "m".into(), entry_computation_id: entry, computations, ..Default::default() }
}

fn gpu_map(m: HloModule) -> HloModuleMap {
    HloModuleMap::from_modules(vec![(1, m)], CostAnalysis::Gpu)
}

fn perf(map: &HloModuleMap, name: &str) -> HloPerformance {
    map.view(1, name).unwrap().performance().unwrap()
}

fn breakdown(p: &HloPerformance) -> Vec<(bool, i64)> {
    p.memory_accessed_breakdown.iter().map(|m| (m.is_read, m.bytes_accessed)).collect()
}

/// A loop fusion `bf16[N] convert(sine(convert(p)))`, N = 8·4096·2048:
///
/// ```text
///   p ─ convert(f32) ─ sine ─ convert(bf16) = root
/// ```
/// sine f32 costs 662 cycles per element on sm_86, converts 3: 668 FLOPs per element, as
/// XProf reports for `jit_sin` on MI300X (`jax08_elementwise`, module 13).
#[test]
fn loop_fusion_flops_use_the_sm86_profile() {
    let n = [8, 4096, 2048];
    let fused = computation(
        "fused_convert",
        10,
        4,
        vec![
            param("p", 1, 0, array(primitive::BF16, &n)),
            instr("c1", "convert", 2, array(primitive::F32, &n), &[1]),
            instr("sin", "sine", 3, array(primitive::F32, &n), &[2]),
            instr("c2", "convert", 4, array(primitive::BF16, &n), &[3]),
        ],
    );
    let mut fusion = instr("loop_convert_fusion", "fusion", 21, array(primitive::BF16, &n), &[20]);
    fusion.fusion_kind = "kLoop".into();
    fusion.called_computation_ids = vec![10];
    let entry = computation("main", 11, 21, vec![param("x", 20, 0, array(primitive::BF16, &n)), fusion]);
    let map = gpu_map(module(vec![fused, entry], 11));
    let p = perf(&map, "loop_convert_fusion");
    let elements = 8 * 4096 * 2048;
    assert_eq!(p.model_flops, 668 * elements);
    assert_eq!(p.device_flops, 668 * elements);
    assert_eq!(p.bytes_accessed, 4 * elements);
    assert_eq!(breakdown(&p), vec![(true, 2 * elements), (false, 2 * elements)]);
    let view = map.view(1, "loop_convert_fusion").unwrap();
    assert_eq!(view.category(), "loop fusion");
    assert_eq!(
        view.expression(),
        "%loop_convert_fusion = bf16[8,4096,2048]{2,1,0} fusion(bf16[8,4096,2048]{2,1,0} %x), kind=kLoop, calls=%fused_convert"
    );
    let children: Vec<&str> = view.fused_children().iter().map(|c| c.name()).collect();
    assert_eq!(children, ["p", "c1", "sin", "c2"]);
}

/// A reduction fusion `f32[M] reduce(convert(p), convert(constant))` over N elements:
///
/// ```text
///   p ─ convert ──────── reduce(max) = root        reduce: 3 · (N − M)
///   constant ─ convert ─┘ (init, read M times)     init convert: 3 · M
/// ```
/// XProf reports 6·N FLOPs (`jax08_attention`, `jit__reduce_max`), which needs the GPU
/// rule that a reduce reads its init value once per output element.
#[test]
fn reduce_init_values_are_used_once_per_output() {
    let (n, m) = ([4, 2048, 2048], [4, 2048]);
    let scalar = |t| array(t, &[]);
    let region = computation(
        "region",
        5,
        3,
        vec![
            param("a", 1, 0, scalar(primitive::F32)),
            param("b", 2, 1, scalar(primitive::F32)),
            instr("max", "maximum", 3, scalar(primitive::F32), &[1, 2]),
        ],
    );
    let mut constant = instr("k", "constant", 12, scalar(primitive::BF16), &[]);
    constant.literal = Some(Literal { shape: scalar(primitive::BF16), bf16s: vec![0x80, 0xff], ..Default::default() });
    let mut reduce = instr("r", "reduce", 15, array(primitive::F32, &m), &[11, 13]);
    reduce.dimensions = vec![2];
    reduce.called_computation_ids = vec![5];
    let fused = computation(
        "fused_reduce",
        6,
        15,
        vec![
            param("p", 10, 0, array(primitive::BF16, &n)),
            instr("c", "convert", 11, array(primitive::F32, &n), &[10]),
            constant,
            instr("ck", "convert", 13, scalar(primitive::F32), &[12]),
            reduce,
        ],
    );
    let mut fusion = instr("input_reduce_fusion", "fusion", 31, array(primitive::F32, &m), &[30]);
    fusion.fusion_kind = "kInput".into();
    fusion.called_computation_ids = vec![6];
    let entry = computation("main", 7, 31, vec![param("a", 30, 0, array(primitive::BF16, &n)), fusion]);
    let map = gpu_map(module(vec![region, fused, entry], 7));
    let p = perf(&map, "input_reduce_fusion");
    assert_eq!(p.model_flops, 6 * 4 * 2048 * 2048);
    assert_eq!(breakdown(&p), vec![(true, 2 * 4 * 2048 * 2048), (false, 4 * 4 * 2048)]);
    assert_eq!(map.view(1, "k").unwrap().expression(), "%k = bf16[] constant(-inf)");
    assert_eq!(map.view(1, "k").unwrap().category(), "non-fusion elementwise");
    assert_eq!(
        map.view(1, "r").unwrap().expression(),
        "%r = f32[4,2048]{1,0} reduce(f32[4,2048,2048]{2,1,0} %c, f32[] %ck), dimensions={2}, to_apply=%region"
    );
}

/// Custom calls: a cuDNN convolution counts its FLOPs and only its real output (no write
/// entry: the tuple's leaves carry no output bytes); a cuBLAS GEMM, like any other custom
/// call, has unknown costs (-1, shown as 0) in XProf 2.24.2 (`jax08_conv`, `jax08_gemm`).
#[test]
fn custom_calls() {
    let lhs = array(primitive::BF16, &[1, 16, 32, 60, 104]);
    let rhs = array(primitive::BF16, &[5120, 16, 1, 2, 2]);
    let out = tuple(vec![array(primitive::BF16, &[1, 5120, 34, 31, 53]), array(primitive::U8, &[7150336])]);
    let mut conv = instr("cudnn-conv.1", "custom-call", 3, out, &[1, 2]);
    conv.custom_call_target = "__cudnn$convForward".into();
    let w = |size, stride| crate::WindowDimension {
        size,
        stride,
        padding_low: 1,
        padding_high: 1,
        window_dilation: 1,
        base_dilation: 1,
        window_reversal: false,
    };
    conv.window = Some(vec![w(1, 1), w(2, 2), w(2, 2)]);
    conv.convolution_dimension_numbers = Some(crate::ConvolutionDimensionNumbers {
        input_batch_dimension: 0,
        input_feature_dimension: 1,
        input_spatial_dimensions: vec![2, 3, 4],
        kernel_input_feature_dimension: 1,
        kernel_output_feature_dimension: 0,
        kernel_spatial_dimensions: vec![2, 3, 4],
        output_batch_dimension: 0,
        output_feature_dimension: 1,
        output_spatial_dimensions: vec![2, 3, 4],
    });
    let mut gemm = instr(
        "custom-call.1",
        "custom-call",
        4,
        tuple(vec![array(primitive::BF16, &[16, 16]), array(primitive::S8, &[64])]),
        &[5, 5],
    );
    gemm.custom_call_target = "__cublas$gemm".into();
    let entry = computation(
        "main",
        9,
        6,
        vec![
            param("a", 1, 0, lhs),
            param("b", 2, 1, rhs),
            conv,
            param("g", 5, 2, array(primitive::BF16, &[16, 16])),
            gemm,
            instr("t", "tuple", 6, tuple(vec![]), &[3, 4]),
        ],
    );
    let map = gpu_map(module(vec![entry], 9));
    let p = perf(&map, "cudnn-conv.1");
    assert_eq!(p.model_flops, 32_715_571_200);
    assert_eq!(p.bytes_accessed, 579_072_000);
    assert_eq!(breakdown(&p), vec![(true, 7_045_120)]);
    assert_eq!(
        map.view(1, "cudnn-conv.1").unwrap().expression(),
        "%cudnn-conv.1 = (bf16[1,5120,34,31,53]{4,3,2,1,0}, u8[7150336]{0}) custom-call(bf16[1,16,32,60,104]{4,3,2,1,0} %a, \
         bf16[5120,16,1,2,2]{4,3,2,1,0} %b), window={size=1x2x2 stride=1x2x2 pad=1_1x1_1x1_1}, \
         dim_labels=bf012_oi012->bf012, custom_call_target=\"__cudnn$convForward\""
    );
    let g = perf(&map, "custom-call.1");
    assert_eq!((g.model_flops, g.device_flops, g.bytes_accessed), (0, 0, 0));
    assert!(g.memory_accessed_breakdown.is_empty());
    assert_eq!(map.view(1, "custom-call.1").unwrap().category(), "custom-call");
}

/// Framework op names, source info from the stack frame index, TPU maps without costs.
#[test]
fn op_names_and_source_info() {
    let mut add = instr("add.1", "add", 3, array(primitive::F32, &[2]), &[1, 1]);
    add.metadata = OpMetadata { op_name: "jit(f)/add".into(), stack_frame_id: 2, ..Default::default() };
    let entry = computation("main", 9, 3, vec![param("a", 1, 0, array(primitive::F32, &[2])), add]);
    let mut m = module(vec![entry], 9);
    m.stack_frame_index = Some(crate::StackFrameIndex {
        file_names: vec!["f.py".into()],
        function_names: vec!["f".into(), "main".into()],
        file_locations: vec![(1, 1, 10, 4), (1, 2, 20, 2)],
        stack_frames: vec![(2, 0), (1, 1)],
    });
    let map = HloModuleMap::from_modules(vec![(1, m)], CostAnalysis::None);
    let add = map.view(1, "add.1").unwrap();
    assert_eq!((add.tf_op_name(), add.op_full_name()), ("jit(f)/add:", "jit(f)/add:"));
    let source = add.source_info();
    assert_eq!((source.file.as_str(), source.line), ("f.py", 10));
    assert_eq!(source.stack_frame, "f.py:10:4\nf.py:20:2\n");
    assert!(add.performance().is_none());
    assert_eq!((add.flops(), add.category()), (0, "non-fusion elementwise"));
    let a = map.view(1, "a").unwrap();
    assert_eq!((a.tf_op_name(), a.op_full_name(), a.source_info().line), ("", ":", -1));
}

/// Bad data never panics: every instruction of the hand-written modules given every opcode
/// (without the attributes it needs), then absurd shapes.
#[test]
fn odd_modules_do_not_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hlo-costs");
    let space = oxprof_xspace::decode_xspace(&std::fs::read(dir.join("hand_fusion.xplane.pb")).unwrap()).unwrap();
    let (modules, _) = hlo_modules(&space);
    let opcodes = [
        "dot",
        "convolution",
        "reduce",
        "fusion",
        "custom-call",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "gather",
        "scatter",
        "while",
        "call",
        "conditional",
        "sort",
        "reduce-window",
        "select-and-scatter",
        "map",
        "all-reduce",
        "all-gather",
        "all-gather-start",
        "all-reduce-start",
        "concatenate",
        "transpose",
        "tuple",
        "get-tuple-element",
        "constant",
        "parameter",
        "compare",
        "bitcast-convert",
        "pad",
        "iota",
        "rng",
        "nonsense",
    ];
    let exercise = |map: &HloModuleMap, module: &HloModule| {
        for c in &module.computations {
            for i in &c.instructions {
                if let Some(v) = map.view(1, &i.name) {
                    let _ = (v.performance(), v.expression().len(), v.category().len(), v.source_info());
                    for child in v.fused_children() {
                        let _ = (child.expression().len(), child.flops());
                    }
                }
            }
        }
    };
    for (_, module) in &modules {
        for opcode in opcodes {
            let mut m = module.clone();
            for c in &mut m.computations {
                for i in &mut c.instructions {
                    i.opcode = opcode.to_string();
                    i.custom_call_target = "__cudnn$convForward".into();
                }
            }
            let map = HloModuleMap::from_modules(vec![(1, m.clone())], CostAnalysis::Gpu);
            exercise(&map, &m);
        }
        let mut m = module.clone();
        for c in &mut m.computations {
            for i in &mut c.instructions {
                i.shape.dimensions = vec![i64::MAX, -5, i64::MIN];
                i.dimensions = vec![i64::MAX, -1];
                i.metadata.stack_frame_id = i32::MIN;
            }
        }
        let map = HloModuleMap::from_modules(vec![(1, m.clone())], CostAnalysis::Gpu);
        exercise(&map, &m);
    }
}
