//! XProf's GPU cost model of HLO instructions (`XProfGpuCostAnalysis`): XLA's
//! `HloCostAnalysis` with the `GpuHloCostAnalysis` overrides and XProf's device-FLOPs
//! adjustment, run over a module's entry computation the way `HloModuleWrapper` runs it.
//!
//! Each instruction gets a [`Props`] record (FLOPs, bytes accessed, bytes per operand and
//! output, operand utilizations). XLA keeps these in 32-bit floats and so does this port:
//! sums of large and small terms lose the small ones exactly as XProf's numbers do.
//!
//! The GPU specifics:
//! * elementwise ops cost the clock cycles measured on an RTX A6000 (`sm_86`, XLA's default
//!   profile) per element, 3 when unmeasured;
//! * a fusion's FLOPs weight each fused instruction by its *utilization*: how many times
//!   its values are computed per fusion output, propagated from the root through
//!   non-elementwise consumers (see [`Analysis::fusion_utilizations`]); parameters are read
//!   `min(utilization, 1)` times their size;
//! * reduces read their init values once per output element;
//! * cuDNN convolutions count only the real output (not the scratch buffer); other custom
//!   calls, cuBLAS GEMMs included, have unknown (-1) costs in XProf 2.24.2.

use super::graph::{Graph, Node, Opcode};
use crate::{Shape, primitive};
use std::collections::HashMap;

/// Size of a pointer in a tuple's index table (`kDefaultPointerSize`).
const POINTER_SIZE: i64 = 8;

/// Constants of at most this many elements are immediates, not memory reads
/// (`immediate_constant_max_elements`, 8 on GPU; found by running XProf 2.24.2 on fusions
/// with constants of 2 to 1000 elements).
const IMMEDIATE_CONSTANT_MAX_ELEMENTS: i64 = 8;

/// Most (kernel, output) positions of one spatial dimension a convolution's FLOP count walks.
const MAX_CONVOLUTION_POSITIONS: i64 = 1 << 32;

/// An FMA counts as two FLOPs (`kFmaFlops`).
const FMA_FLOPS: i64 = 2;

/// `ShapeIndex`: a path into nested tuples.
type ShapeIndex = Vec<i64>;

/// `HloCostAnalysis::Properties` of one instruction (or the sum over a computation).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Props {
    pub(crate) flops: f32,
    pub(crate) transcendentals: f32,
    pub(crate) bytes_accessed: f32,
    pub(crate) optimal_seconds: f32,
    pub(crate) utilization: f32,
    /// `kIRSizeKey` (GPU `reserved0`).
    pub(crate) ir_size: f32,
    /// XProf's `device_flops_adjustment`.
    pub(crate) device_flops_adjustment: f32,
    /// `(operand, shape index) -> utilization`.
    pub(crate) operand_utilization: HashMap<(usize, ShapeIndex), f32>,
    /// `(operand, shape index) -> bytes`.
    pub(crate) operand_bytes: HashMap<(usize, ShapeIndex), f32>,
    /// `shape index -> bytes written`.
    pub(crate) output_bytes: HashMap<ShapeIndex, f32>,
}

impl Props {
    fn operand_utilization(&self, operand: usize) -> f32 {
        self.operand_utilization.get(&(operand, Vec::new())).copied().unwrap_or(0.0)
    }
    fn set_operand_utilization(&mut self, operand: usize, value: f32) {
        self.operand_utilization.insert((operand, Vec::new()), value);
    }
    fn operand_bytes(&self, operand: usize) -> f32 {
        self.operand_bytes.get(&(operand, Vec::new())).copied().unwrap_or(0.0)
    }
    fn set_operand_bytes(&mut self, operand: usize, index: ShapeIndex, value: f32) {
        self.operand_bytes.insert((operand, index), value);
    }
    fn output_bytes(&self) -> f32 {
        self.output_bytes.get(&Vec::new()).copied().unwrap_or(0.0)
    }
    fn set_output_bytes(&mut self, index: ShapeIndex, value: f32) {
        self.output_bytes.insert(index, value);
    }

    /// Adds `other` into `self` key by key (`properties_sum_[key] += val`).
    fn accumulate(&mut self, other: &Props) {
        self.flops += other.flops;
        self.transcendentals += other.transcendentals;
        self.bytes_accessed += other.bytes_accessed;
        self.optimal_seconds += other.optimal_seconds;
        self.utilization += other.utilization;
        self.ir_size += other.ir_size;
        self.device_flops_adjustment += other.device_flops_adjustment;
        for (k, v) in &other.operand_utilization {
            *self.operand_utilization.entry(k.clone()).or_insert(0.0) += v;
        }
        for (k, v) in &other.operand_bytes {
            *self.operand_bytes.entry(k.clone()).or_insert(0.0) += v;
        }
        for (k, v) in &other.output_bytes {
            *self.output_bytes.entry(k.clone()).or_insert(0.0) += v;
        }
    }

    /// The keys `GpuHloCostAnalysis::KeyToCopyFromSubcomputation` lets through, scaled:
    /// `current[key] = val * count` for every non-zero key but bytes, utilizations and the
    /// IR size.
    fn copy_scaled_from(&mut self, sub: &Props, count: f32) {
        if sub.flops != 0.0 {
            self.flops = sub.flops * count;
        }
        if sub.transcendentals != 0.0 {
            self.transcendentals = sub.transcendentals * count;
        }
        if sub.optimal_seconds != 0.0 {
            self.optimal_seconds = sub.optimal_seconds * count;
        }
        if sub.device_flops_adjustment != 0.0 {
            self.device_flops_adjustment = sub.device_flops_adjustment * count;
        }
    }
}

/// `ShapeUtil::ByteSizeOf(shape, 8)`: tuples are their index table, tokens 0, opaque a
/// pointer, arrays their elements (packed when the layout gives an element size in bits).
fn byte_size_of(shape: &Shape) -> i64 {
    match shape.element_type {
        primitive::TUPLE => POINTER_SIZE.wrapping_mul(shape.tuple_shapes.len() as i64),
        primitive::TOKEN => 0,
        primitive::OPAQUE_TYPE => POINTER_SIZE,
        t if primitive::is_array_type(t) => {
            let elements = shape.elements();
            match shape.layout.as_ref().map_or(0, |l| l.element_size_in_bits) {
                0 => elements.wrapping_mul(primitive::byte_size(t)),
                bits => elements.wrapping_mul(bits).wrapping_add(7).div_euclid(8),
            }
        }
        _ => 0,
    }
}

/// `LayoutUtil::HasLayout`: arrays need a layout, tuples need one on every element.
fn has_layout(shape: &Shape) -> bool {
    if shape.is_tuple() {
        shape.tuple_shapes.iter().all(has_layout)
    } else if shape.is_array() {
        shape.layout.is_some()
    } else {
        true
    }
}

/// `HloCostAnalysis::GetShapeSize`: 0 without a layout.
fn shape_size(shape: &Shape) -> i64 {
    if has_layout(shape) { byte_size_of(shape) } else { 0 }
}

/// `ShapeUtil::ForEachLeafShape`: the non-tuple subshapes with their indices, in order.
fn leaf_shapes<'s>(shape: &'s Shape, index: &mut ShapeIndex, out: &mut Vec<(&'s Shape, ShapeIndex)>) {
    if shape.is_tuple() {
        for (i, element) in shape.tuple_shapes.iter().enumerate() {
            index.push(i as i64);
            leaf_shapes(element, index, out);
            index.pop();
        }
    } else {
        out.push((shape, index.clone()));
    }
}

fn leaves(shape: &Shape) -> Vec<(&Shape, ShapeIndex)> {
    let mut out = Vec::new();
    leaf_shapes(shape, &mut Vec::new(), &mut out);
    out
}

/// `ShapeUtil::ForEachSubshape`: every subshape, parents before children.
fn subshapes<'s>(shape: &'s Shape, index: &mut ShapeIndex, out: &mut Vec<(&'s Shape, ShapeIndex)>) {
    out.push((shape, index.clone()));
    if shape.is_tuple() {
        for (i, element) in shape.tuple_shapes.iter().enumerate() {
            index.push(i as i64);
            subshapes(element, index, out);
            index.pop();
        }
    }
}

/// Clock cycles per element of elementwise ops on `sm_86` (`hlo_op_profiles_data.h`), by
/// opcode and element type; XLA uses this profile when the device is unknown, as in XProf.
fn sm86_cycles(op: &str, element_type: i32) -> Option<i64> {
    use primitive::*;
    let c = match (op, element_type) {
        ("divide", S8) => 370,
        ("power", S8) => 392,
        ("divide", S16) => 367,
        ("power", S16) => 396,
        ("divide", S32) => 306,
        ("divide", S64) => 918,
        ("power", S64) => 601,
        ("divide", U8) => 306,
        ("power", U8) => 388,
        ("divide", U16) => 302,
        ("power", U16) => 399,
        ("divide", U32) => 115,
        ("divide", U64) => 838,
        ("power", U64) => 604,
        ("cbrt", F16) => 925,
        ("cosine", F16) => 691,
        ("exponential", F16) => 108,
        ("exponential-minus-one", F16) => 396,
        ("log", F16) => 266,
        ("log-plus-one", F16) => 284,
        ("logistic", F16) => 226,
        ("rsqrt", F16) => 97,
        ("sqrt", F16) => 97,
        ("tanh", F16) => 212,
        ("atan2", F16) => 482,
        ("power", F16) => 975,
        ("cbrt", F32) => 867,
        ("cosine", F32) => 662,
        ("exponential", F32) => 86,
        ("exponential-minus-one", F32) => 381,
        ("log", F32) => 244,
        ("log-plus-one", F32) => 262,
        ("logistic", F32) => 176,
        ("rsqrt", F32) => 75,
        ("sine", F32) => 662,
        ("sqrt", F32) => 75,
        ("tanh", F32) => 190,
        ("atan2", F32) => 486,
        ("power", F32) => 925,
        ("cbrt", F64) => 6339,
        ("cosine", F64) => 1717,
        ("exponential", F64) => 1652,
        ("exponential-minus-one", F64) => 1900,
        ("log", F64) => 608,
        ("log-plus-one", F64) => 2073,
        ("logistic", F64) => 2412,
        ("rsqrt", F64) => 698,
        ("sine", F64) => 1789,
        ("sqrt", F64) => 986,
        ("tanh", F64) => 1609,
        ("add", F64) => 97,
        ("atan2", F64) => 3747,
        ("divide", F64) => 2016,
        ("multiply", F64) => 97,
        ("power", F64) => 5511,
        ("subtract", F64) => 97,
        ("exponential", C64) => 1360,
        ("exponential-minus-one", C64) => 1400,
        ("log", C64) => 950,
        ("log-plus-one", C64) => 842,
        ("rsqrt", C64) => 2383,
        ("sqrt", C64) => 3193,
        ("atan2", C64) => 5353,
        ("divide", C64) => 687,
        ("power", C64) => 3351,
        ("cosine", C128) => 6613,
        ("exponential", C128) => 4028,
        ("exponential-minus-one", C128) => 4161,
        ("log", C128) => 7599,
        ("log-plus-one", C128) => 6962,
        ("rsqrt", C128) => 11318,
        ("sine", C128) => 5878,
        ("sqrt", C128) => 15606,
        ("tanh", C128) => 9939,
        ("add", C128) => 97,
        ("atan2", C128) => 39027,
        ("divide", C128) => 7941,
        ("multiply", C128) => 270,
        ("power", C128) => 18205,
        ("subtract", C128) => 97,
        _ => return None,
    };
    Some(c)
}

/// `GetFlopsForElementwiseOp`: cycles per element (3 when unmeasured) times the elements.
fn elementwise_flops(opcode: &str, shape: &Shape) -> i64 {
    const DEFAULT_FLOPS_PER_ELEMENT: i64 = 3;
    let per_element = sm86_cycles(opcode, shape.element_type).unwrap_or(DEFAULT_FLOPS_PER_ELEMENT);
    per_element.wrapping_mul(shape.elements_recursive())
}

/// `HloInstruction::IsElementwise()`.
pub(crate) fn is_elementwise(graph: &Graph, node: &Node) -> bool {
    match node.op {
        Opcode::Constant => true,
        Opcode::Fusion => graph.called_comp(node).is_some_and(|c| {
            c.instrs
                .iter()
                .filter_map(|&i| graph.node(i))
                .all(|n| n.op == Opcode::Parameter || is_elementwise(graph, n))
        }),
        Opcode::Map => {
            let dims = &node.hlo.dimensions;
            dims.is_empty()
                || (dims.len() == node.hlo.shape.rank() && dims.iter().enumerate().all(|(i, &d)| d == i as i64))
        }
        Opcode::DynamicUpdateSlice => false,
        Opcode::BitcastConvert => graph.operand(node, 0).is_some_and(|o| {
            primitive::bit_width(node.hlo.shape.element_type) == primitive::bit_width(o.hlo.shape.element_type)
        }),
        op => op.is_elementwise_op() || node.hlo.opcode == "rng",
    }
}

/// `IsCustomCallToDnnConvolution`.
fn is_dnn_convolution(target: &str) -> bool {
    matches!(
        target,
        "__cudnn$convForward"
            | "__cudnn$convBackwardInput"
            | "__cudnn$convBackwardFilter"
            | "__cudnn$convBiasActivationForward"
            | "__cudnn$convForwardGraph"
    )
}

/// The left contracting dimensions of a GEMM custom call's backend config
/// (`gemm_backend_config.dot_dimension_numbers`); none when there is no config, `None` when
/// the config is not JSON (XLA's `backend_config<GpuBackendConfig>()` fails then).
fn gemm_lhs_contracting_dimensions(backend_config: &[u8]) -> Option<Vec<i64>> {
    if backend_config.is_empty() {
        return Some(Vec::new());
    }
    let json: serde_json::Value = serde_json::from_slice(backend_config).ok()?;
    let dims = &json["gemm_backend_config"]["dot_dimension_numbers"]["lhs_contracting_dimensions"];
    let list = dims.as_array().map(Vec::as_slice).unwrap_or(&[]);
    Some(list.iter().filter_map(|v| v.as_i64().or_else(|| v.as_str().and_then(|s| s.parse().ok()))).collect())
}

/// `HloCostAnalysis::GetDotFlops`.
fn dot_flops(lhs: &Shape, result: &Shape, lhs_contracting: &[i64]) -> i64 {
    // A dimension the operand does not have counts 0 (XProf reports no FLOPs then).
    let reduction_width = lhs_contracting
        .iter()
        .map(|&d| usize::try_from(d).ok().and_then(|d| lhs.dimensions.get(d)).copied().unwrap_or(0))
        .fold(1i64, |acc, d| acc.wrapping_mul(d));
    FMA_FLOPS.wrapping_mul(result.elements()).wrapping_mul(reduction_width)
}

/// `HloCostAnalysis::GetConvolutionFlops`: FMAs over the valid (kernel, output) positions
/// of every spatial dimension.
fn convolution_flops(node: &Node, lhs: &Shape, rhs: &Shape, result: &Shape) -> i64 {
    let Some(d) = &node.hlo.convolution_dimension_numbers else { return 0 };
    let dim = |s: &Shape, i: i64| usize::try_from(i).ok().and_then(|i| s.dimensions.get(i)).copied().unwrap_or(0);
    let input_feature = dim(lhs, d.input_feature_dimension);
    let output_feature = dim(result, d.output_feature_dimension);
    let batch = dim(lhs, d.input_batch_dimension);
    let window = node.hlo.window.clone().unwrap_or_default();
    let mut valid_position_counts: Vec<i64> = Vec::new();
    if window.is_empty() {
        valid_position_counts.push(1);
    }
    for (spatial, w) in window.iter().enumerate() {
        let kernel_limit = d.kernel_spatial_dimensions.get(spatial).map_or(0, |&k| dim(rhs, k));
        let output_limit = d.output_spatial_dimensions.get(spatial).map_or(0, |&k| dim(result, k));
        let input_limit = d.input_spatial_dimensions.get(spatial).map_or(0, |&k| dim(lhs, k));
        if input_limit == output_limit
            && kernel_limit == output_limit
            && input_limit == w.base_dilation
            && w.window_dilation == 1
            && 1.max(input_limit.wrapping_sub(1)) == w.stride
            && w.padding_low == 0
            && w.padding_high == 0
        {
            valid_position_counts.push(input_limit);
            continue;
        }
        if input_limit == 1
            && kernel_limit == output_limit
            && w.window_dilation == 1
            && w.base_dilation == 1
            && w.stride == 1
            && w.padding_high == output_limit.wrapping_sub(1)
            && w.padding_low == output_limit.wrapping_sub(1)
        {
            valid_position_counts.push(output_limit);
            continue;
        }
        let mut count = 0i64;
        // XLA walks every (kernel, output) position; absurd sizes from bad data are skipped.
        if kernel_limit.saturating_mul(output_limit.max(1)) > MAX_CONVOLUTION_POSITIONS {
            valid_position_counts.push(0);
            continue;
        }
        for kernel_index in 0..kernel_limit {
            if w.stride == 1 && w.base_dilation == 1 {
                let base = w.padding_low.wrapping_sub(kernel_index.wrapping_mul(w.window_dilation));
                count = count
                    .wrapping_add(input_limit.wrapping_add(base).min(output_limit).wrapping_sub(base.max(0)).max(0));
                continue;
            }
            for output_index in 0..output_limit {
                let undilated = output_index
                    .wrapping_mul(w.stride)
                    .wrapping_sub(w.padding_low)
                    .wrapping_add(kernel_index.wrapping_mul(w.window_dilation));
                let lhs_index = if w.base_dilation > 1 { undilated / w.base_dilation } else { undilated };
                if undilated != lhs_index.wrapping_mul(w.base_dilation.max(1)) && w.base_dilation > 1 {
                    continue;
                }
                if lhs_index < 0 || lhs_index >= input_limit {
                    continue;
                }
                count = count.wrapping_add(1);
            }
        }
        valid_position_counts.push(count);
    }
    let groups = |g: i64| if g <= 0 { 1 } else { g };
    let product = valid_position_counts.iter().fold(1i64, |a, &b| a.wrapping_mul(b));
    let fma = (input_feature / groups(node.hlo.feature_group_count))
        .wrapping_mul(output_feature)
        .wrapping_mul(batch / groups(node.hlo.batch_group_count))
        .wrapping_mul(product);
    fma.wrapping_mul(FMA_FLOPS)
}

/// `ShapeUtil::TransposeIsBitcast` for `HloInstruction::IsEffectiveBitcast`.
fn transpose_is_bitcast(input: &Shape, output: &Shape, dimensions: &[i64]) -> bool {
    let (Some(input_layout), Some(output_layout)) = (&input.layout, &output.layout) else { return false };
    if input.element_type != output.element_type {
        return false;
    }
    if !input_layout.tiles.is_empty() || !output_layout.tiles.is_empty() {
        return input_layout.tiles == output_layout.tiles
            && compose(dimensions, &output_layout.minor_to_major) == input_layout.minor_to_major;
    }
    compose(dimensions, &output_layout.minor_to_major) == input_layout.minor_to_major
}

/// `ComposePermutations(p1, p2)[i] = p1[p2[i]]`.
fn compose(p1: &[i64], p2: &[i64]) -> Vec<i64> {
    p2.iter().map(|&i| usize::try_from(i).ok().and_then(|i| p1.get(i)).copied().unwrap_or(-1)).collect()
}

/// The cost analysis of one module: properties per instruction (`hlo_properties_`).
pub(crate) struct Analysis<'g> {
    graph: &'g Graph,
    props: Vec<Option<Props>>,
    /// Recursion guard for malformed modules (a computation calling itself).
    depth: usize,
    /// A handler failed: XProf then drops the module's whole cost analysis.
    failed: bool,
    /// Written instead of an out-of-range instruction's properties (never in practice).
    scratch: Props,
}

/// Deepest nesting of called computations followed.
const MAX_DEPTH: usize = 64;

impl<'g> Analysis<'g> {
    /// `InitializeHloCostAnalysis`: visits the entry computation (and, through it, every
    /// computation it calls). `None` when a handler fails (as for an all-reduce over
    /// flattened device ids without replica groups): `HloModuleWrapper` then keeps no cost
    /// analysis for the module.
    pub(crate) fn run(graph: &'g Graph) -> Option<Vec<Option<Props>>> {
        let mut analysis = Analysis {
            graph,
            props: vec![None; graph.nodes.len()],
            depth: 0,
            failed: false,
            scratch: Props::default(),
        };
        analysis.visit_computation(graph.entry);
        (!analysis.failed).then_some(analysis.props)
    }

    fn props(&self, node: usize) -> Option<&Props> {
        self.props.get(node).and_then(Option::as_ref)
    }

    fn props_mut(&mut self, node: usize) -> &mut Props {
        if self.props.len() <= node {
            self.props.resize(node + 1, None);
        }
        match self.props.get_mut(node) {
            Some(slot) => slot.get_or_insert_with(Props::default),
            None => &mut self.scratch,
        }
    }

    /// `HloComputation::Accept`: unreachable roots first (each with its operands, depth
    /// first), then the root; returns the sum of the visited instructions' properties
    /// (`properties_sum_`, what `ProcessSubcomputation` hands back).
    fn visit_computation(&mut self, comp: usize) -> Props {
        let mut sum = Props::default();
        if self.depth >= MAX_DEPTH {
            return sum;
        }
        self.depth += 1;
        let Some(c) = self.graph.comps.get(comp) else {
            self.depth -= 1;
            return sum;
        };
        let mut has_control_successor = vec![false; 0];
        has_control_successor.resize(self.graph.nodes.len(), false);
        for &i in &c.instrs {
            if let Some(n) = self.graph.node(i) {
                for &p in &n.control_preds {
                    if let Some(flag) = has_control_successor.get_mut(p) {
                        *flag = true;
                    }
                }
            }
        }
        let mut starts: Vec<usize> = c
            .instrs
            .iter()
            .copied()
            .filter(|&i| {
                i != c.root
                    && self.graph.node(i).is_some_and(|n| n.users.is_empty())
                    && !has_control_successor.get(i).copied().unwrap_or(false)
            })
            .collect();
        starts.push(c.root);
        let mut state: HashMap<usize, bool> = HashMap::with_capacity(c.instrs.len());
        for start in starts {
            // PostOrderDFS: a node seen once is expanded (operands, then control
            // predecessors, pushed so the first is on top), seen twice it is visited.
            let mut stack = vec![start];
            while let Some(&current) = stack.last() {
                match state.get(&current) {
                    Some(true) => {
                        stack.pop();
                    }
                    Some(false) => {
                        stack.pop();
                        state.insert(current, true);
                        let props = self.visit(current);
                        sum.accumulate(&props);
                    }
                    None => {
                        state.insert(current, false);
                        let Some(n) = self.graph.node(current) else { continue };
                        let first = stack.len();
                        for &child in n.operands.iter().chain(n.control_preds.iter()) {
                            if state.get(&child) != Some(&true) {
                                stack.push(child);
                            }
                        }
                        stack[first..].reverse();
                    }
                }
            }
        }
        self.depth -= 1;
        sum
    }

    /// `Preprocess` + the opcode's handler + `Postprocess` for one instruction; stores and
    /// returns its properties.
    fn visit(&mut self, index: usize) -> Props {
        let graph = self.graph;
        let Some(node) = graph.node(index) else { return Props::default() };
        let mut p = self.preprocess(node);
        self.handle(node, &mut p);
        if node.op != Opcode::CustomCall {
            self.device_flops_adjustment(node, &mut p);
        }
        let stored = self.props_mut(index);
        // Keys the instruction already had (utilizations written by an enclosing
        // fusion's pass run later) are replaced, as `hlo_properties_.emplace` stores a
        // fresh record.
        *stored = p.clone();
        p
    }

    /// `HloCostAnalysis::Preprocess` (+ GPU: IR size 1): bytes = output leaves + operands,
    /// every operand fully used.
    fn preprocess(&self, node: &Node) -> Props {
        let mut p = Props { ir_size: 1.0, ..Default::default() };
        let mut bytes: f32 = 0.0;
        for (leaf, _) in leaves(&node.hlo.shape) {
            bytes += shape_size(leaf) as f32;
        }
        p.set_output_bytes(Vec::new(), bytes);
        for (i, &operand) in node.operands.iter().enumerate() {
            let size = self.graph.node(operand).map_or(0, |o| shape_size(&o.hlo.shape));
            bytes += size as f32;
            p.set_operand_bytes(i, Vec::new(), size as f32);
            p.set_operand_utilization(i, 1.0);
        }
        p.bytes_accessed = bytes;
        p
    }

    /// XProf's `DefaultPostprocess`: 8-bit inputs run at twice, 4-bit at four times the
    /// 16-bit FLOP rate; the difference is the device-FLOPs adjustment.
    fn device_flops_adjustment(&self, node: &Node, p: &mut Props) {
        let model_flops = p.flops;
        let widths: Vec<u32> = node
            .operands
            .iter()
            .filter_map(|&o| self.graph.node(o))
            .map(|o| o.hlo.shape.element_type)
            .filter(|&t| {
                !matches!(t, primitive::INVALID | primitive::TUPLE | primitive::OPAQUE_TYPE | primitive::TOKEN)
            })
            .map(primitive::bit_width)
            .collect();
        let mut rate: u32 = 1;
        if let Some(&max) = widths.iter().max()
            && model_flops != 0.0
        {
            rate = match max {
                8 => 2,
                4 => 4,
                _ => 1,
            };
        }
        p.device_flops_adjustment = model_flops - model_flops / rate as f32;
    }

    fn operand_shape(&self, node: &Node, i: usize) -> Option<&'g Shape> {
        self.graph.operand(node, i).map(|o| &o.hlo.shape)
    }

    /// The opcode handlers (`Handle*`), GPU and XProf overrides included.
    fn handle(&mut self, node: &Node, p: &mut Props) {
        let h = &node.hlo;
        let op = node.op;
        if op.is_elementwise_op() && op != Opcode::Copy {
            p.flops = elementwise_flops(&h.opcode, &h.shape) as f32;
            return;
        }
        match op {
            Opcode::Parameter | Opcode::Constant | Opcode::AfterAll => {
                p.bytes_accessed = 0.0;
                p.set_output_bytes(Vec::new(), 0.0);
                p.optimal_seconds = 0.0;
                if op == Opcode::AfterAll {
                    for i in 0..node.operands.len() {
                        p.set_operand_bytes(i, Vec::new(), 0.0);
                    }
                }
            }
            Opcode::GetTupleElement | Opcode::Bitcast => self.bitcast_like(p),
            Opcode::Transpose => {
                let input = self.operand_shape(node, 0);
                if input.is_some_and(|s| transpose_is_bitcast(s, &h.shape, &h.dimensions)) {
                    self.bitcast_like(p);
                }
            }
            Opcode::Tuple => {
                let size = shape_size(&h.shape) as f32;
                p.bytes_accessed = size;
                p.set_output_bytes(Vec::new(), size);
                for i in 0..node.operands.len() {
                    p.set_operand_bytes(i, Vec::new(), 0.0);
                }
            }
            Opcode::Slice => {
                let out = shape_size(&h.shape);
                let input_elements = self.operand_shape(node, 0).map_or(0, Shape::elements);
                p.bytes_accessed = out.wrapping_mul(2) as f32;
                p.set_output_bytes(Vec::new(), out as f32);
                p.set_operand_bytes(0, Vec::new(), out as f32);
                p.set_operand_utilization(0, (1.0 * h.shape.elements() as f64 / input_elements as f64) as f32);
            }
            Opcode::DynamicSlice => {
                let out = shape_size(&h.shape);
                let indices = self.operand_shape(node, 1).map_or(0, shape_size);
                let input_elements = self.operand_shape(node, 0).map_or(0, Shape::elements);
                p.bytes_accessed = out.wrapping_mul(2).wrapping_add(indices) as f32;
                p.set_output_bytes(Vec::new(), out as f32);
                p.set_operand_bytes(0, Vec::new(), out as f32);
                p.set_operand_bytes(1, Vec::new(), indices as f32);
                p.set_operand_utilization(0, (1.0 * h.shape.elements() as f64 / input_elements as f64) as f32);
            }
            Opcode::DynamicUpdateSlice => {
                let update = self.operand_shape(node, 1).map_or(0, shape_size);
                let indices = self.operand_shape(node, 2).map_or(0, shape_size);
                let update_elements = self.operand_shape(node, 1).map_or(0, Shape::elements);
                let out_elements = h.shape.elements();
                p.bytes_accessed = update.wrapping_mul(2).wrapping_add(indices) as f32;
                p.set_output_bytes(Vec::new(), update as f32);
                p.set_operand_bytes(0, Vec::new(), 0.0);
                p.set_operand_bytes(1, Vec::new(), update as f32);
                p.set_operand_bytes(2, Vec::new(), indices as f32);
                p.set_operand_utilization(
                    0,
                    (1.0 * out_elements.wrapping_sub(update_elements) as f64 / out_elements as f64) as f32,
                );
            }
            Opcode::Dot => {
                let lhs = self.operand_shape(node, 0);
                let contracting = h.dot_dimension_numbers.as_ref().map_or(&[][..], |d| &d.lhs_contracting_dimensions);
                p.flops = lhs.map_or(0, |lhs| dot_flops(lhs, &h.shape, contracting)) as f32;
            }
            Opcode::Convolution => {
                if let (Some(lhs), Some(rhs)) = (self.operand_shape(node, 0), self.operand_shape(node, 1)) {
                    p.flops = convolution_flops(node, lhs, rhs, &h.shape) as f32;
                }
            }
            Opcode::Concatenate => {
                // GPU: a compare and branch per element, 400 when warps may diverge.
                let dim = h.dimensions.first().copied().unwrap_or(0);
                let operand_dim = usize::try_from(dim)
                    .ok()
                    .and_then(|d| self.operand_shape(node, 0).and_then(|s| s.dimensions.get(d)))
                    .copied()
                    .unwrap_or(0);
                let per_element = if dim > 0 && operand_dim & 31 != 0 { 400 } else { 6 };
                p.flops = h.shape.elements_recursive().wrapping_mul(per_element) as f32;
            }
            Opcode::Reduce => self.handle_reduce(node, p),
            Opcode::Map => {
                let sub = self.sub_properties(node, 0);
                p.copy_scaled_from(&sub, h.shape.elements() as f32);
            }
            Opcode::ReduceWindow => self.handle_reduce_window(node, p),
            Opcode::SelectAndScatter => {
                let select = self.sub_properties(node, 0);
                let scatter = self.sub_properties(node, 1);
                let source_elements = self.operand_shape(node, 1).map_or(0, Shape::elements);
                let window_elements =
                    h.window.as_ref().map_or(1, |w| w.iter().fold(1i64, |a, d| a.wrapping_mul(d.size)));
                let select_count = source_elements.wrapping_mul(window_elements.wrapping_sub(1)) as f32;
                p.flops += select.flops * select_count;
                p.transcendentals += select.transcendentals * select_count;
                p.flops += scatter.flops * source_elements as f32;
                p.transcendentals += scatter.transcendentals * source_elements as f32;
            }
            Opcode::Sort => {
                let elements = self.operand_shape(node, 0).map_or(0, Shape::elements);
                let log2_ceiling = if elements <= 1 { 0 } else { 64 - ((elements - 1) as u64).leading_zeros() as i64 };
                p.flops = elements.wrapping_mul(log2_ceiling) as f32;
            }
            Opcode::Fusion => self.handle_fusion(node, p),
            Opcode::Call | Opcode::AsyncStart => {
                if let Some(&c) = node.called.first() {
                    let sub = self.visit_computation(c);
                    *p = sub;
                }
            }
            Opcode::While => {
                // `called_computations()` of a while is {body, condition}.
                let body = node.called.first().map(|&c| self.visit_computation(c)).unwrap_or_default();
                let cond = node.called.get(1).map(|&c| self.visit_computation(c)).unwrap_or_default();
                let mut sum = Props::default();
                sum.accumulate(&body);
                sum.accumulate(&cond);
                *p = sum;
            }
            Opcode::Conditional => {
                let mut branches = node.called.clone().into_iter();
                if let Some(first) = branches.next() {
                    let mut current = self.visit_computation(first);
                    for c in branches {
                        let other = self.visit_computation(c);
                        current.flops = current.flops.max(other.flops);
                        current.transcendentals = current.transcendentals.max(other.transcendentals);
                        current.bytes_accessed = current.bytes_accessed.max(other.bytes_accessed);
                        current.optimal_seconds = current.optimal_seconds.max(other.optimal_seconds);
                        current.device_flops_adjustment =
                            current.device_flops_adjustment.max(other.device_flops_adjustment);
                    }
                    *p = current;
                }
            }
            Opcode::CustomCall => self.handle_custom_call(node, p),
            Opcode::Gather => self.handle_gather(node, p),
            Opcode::Scatter => self.handle_scatter(node, p),
            Opcode::AllReduce => self.handle_all_reduce(node, p),
            Opcode::AllGather => self.handle_all_gather(node, p, false),
            Opcode::AllGatherStart => self.handle_all_gather(node, p, true),
            Opcode::AllReduceStart => {
                // GPU: the bytes transferred, and the reduction's elementwise FLOPs.
                let transferred: i64 = leaves(&h.shape)
                    .iter()
                    .filter(|(s, _)| s.is_array())
                    .fold(0i64, |a, (s, _)| a.wrapping_add(shape_size(s)));
                let root_opcode = self.graph.called_comp(node).and_then(|c| self.graph.node(c.root));
                p.flops = root_opcode.map_or(0, |r| elementwise_flops(&r.hlo.opcode, &h.shape)) as f32;
                p.bytes_accessed = transferred as f32;
            }
            _ => match h.opcode.as_str() {
                "rng" => p.transcendentals = h.shape.elements() as f32,
                "rng-bit-generator" => p.transcendentals = h.shape.elements_recursive() as f32,
                _ => {}
            },
        }
    }

    /// `GpuHloCostAnalysis::HandleAllReduce`: outputs + operands, the reduction's
    /// elementwise FLOPs over the output. The participant count must be computable: over
    /// flattened device ids (a channel id and global device ids) the replica groups cannot
    /// be empty, else the analysis fails.
    fn handle_all_reduce(&mut self, node: &Node, p: &mut Props) {
        let h = &node.hlo;
        if self.num_ranks(node, h.use_global_device_ids).is_none() {
            self.failed = true;
            return;
        }
        let mut subs = Vec::new();
        subshapes(&h.shape, &mut Vec::new(), &mut subs);
        let output_bytes =
            subs.iter().filter(|(s, _)| s.is_array()).fold(0i64, |a, (s, _)| a.wrapping_add(shape_size(s)));
        let mut bytes = output_bytes;
        for &o in &node.operands {
            bytes = bytes.wrapping_add(self.graph.node(o).map_or(0, |o| shape_size(&o.hlo.shape)));
        }
        p.set_output_bytes(Vec::new(), output_bytes as f32);
        p.bytes_accessed = bytes as f32;
        let root = self.graph.called_comp(node).and_then(|c| self.graph.node(c.root));
        p.flops = root.map_or(0, |r| elementwise_flops(&r.hlo.opcode, &h.shape)) as f32;
    }

    /// `HandleBitcast`: no bytes touched.
    fn bitcast_like(&self, p: &mut Props) {
        p.bytes_accessed = 0.0;
        p.set_output_bytes(Vec::new(), 0.0);
        p.set_operand_bytes(0, Vec::new(), 0.0);
        p.optimal_seconds = 0.0;
    }

    /// `ProcessSubcomputation` of called computation `which`.
    fn sub_properties(&mut self, node: &Node, which: usize) -> Props {
        match node.called.get(which) {
            Some(&c) => self.visit_computation(c),
            None => Props::default(),
        }
    }

    /// `HloCostAnalysis::HandleReduce` then `GpuHloCostAnalysis::HandleReduce`: the reducer's
    /// cost per reduced element; bytes = outputs + inputs + each init value read once per
    /// output element.
    fn handle_reduce(&mut self, node: &Node, p: &mut Props) {
        let h = &node.hlo;
        let sub = self.sub_properties(node, 0);
        let output_shape = if h.shape.is_array() { &h.shape } else { h.shape.tuple_shapes.first().unwrap_or(&h.shape) };
        let input_elements = self.operand_shape(node, 0).map_or(0, Shape::elements);
        let reduction_count = input_elements.wrapping_sub(output_shape.elements());
        p.copy_scaled_from(&sub, reduction_count as f32);

        let mut output_bytes: i64 = 0;
        for (leaf, _) in leaves(&h.shape) {
            output_bytes = output_bytes.wrapping_add(shape_size(leaf));
        }
        p.set_output_bytes(Vec::new(), output_bytes as f32);
        let input_count = node.operands.len() / 2;
        let mut bytes = output_bytes;
        for i in 0..input_count {
            bytes = bytes.wrapping_add(p.operand_bytes(i) as i64);
        }
        let output_elements = output_shape.elements();
        for i in input_count..node.operands.len() {
            let init_bytes = output_elements.wrapping_mul(self.operand_shape(node, i).map_or(0, shape_size));
            p.set_operand_bytes(i, Vec::new(), init_bytes as f32);
            p.set_operand_utilization(i, output_elements as f32);
            bytes = bytes.wrapping_add(init_bytes);
        }
        p.bytes_accessed = bytes as f32;
    }

    /// `HloCostAnalysis::HandleReduceWindow`.
    fn handle_reduce_window(&mut self, node: &Node, p: &mut Props) {
        let h = &node.hlo;
        let sub = self.sub_properties(node, 0);
        let window = h.window.clone().unwrap_or_default();
        let mut window_elements = window.iter().fold(1i64, |a, d| a.wrapping_mul(d.size));
        let output_shape = if h.shape.is_array() { &h.shape } else { h.shape.tuple_shapes.first().unwrap_or(&h.shape) };
        let output_elements = output_shape.elements();
        let mut reduction_count = window_elements.wrapping_sub(1).wrapping_mul(output_elements);
        let reduction_dims = window.iter().filter(|d| d.size != 1).count();
        let padded_dims = window.iter().filter(|d| d.padding_low != 0 || d.padding_high != 0).count();
        if reduction_dims == 1 && padded_dims == 1 && h.shape.is_array() {
            let found = window.iter().position(|d| {
                d.size != 1
                    && d.padding_low != 0
                    && d.padding_high != 0
                    && d.padding_low == d.padding_high
                    && d.size == d.padding_low.wrapping_mul(2).wrapping_add(1)
            });
            if let Some(dim) = found {
                let size = h.shape.dimensions.get(dim).copied().unwrap_or(0);
                if window.get(dim).is_some_and(|d| d.padding_low == size.wrapping_sub(1)) {
                    window_elements = size;
                    reduction_count = output_elements
                        .checked_div(window_elements)
                        .unwrap_or(0)
                        .wrapping_add(window_elements.wrapping_sub(1));
                }
            }
        }
        p.copy_scaled_from(&sub, reduction_count as f32);
    }

    /// `HloCostAnalysis::HandleGather`: a copy of the output's size plus the indices.
    fn handle_gather(&self, gather: &Node, p: &mut Props) {
        let out = shape_size(&gather.hlo.shape);
        let indices = self.operand_shape(gather, 1).map_or(0, shape_size);
        let operand_elements = self.operand_shape(gather, 0).map_or(0, Shape::elements);
        p.bytes_accessed = (out * 2 + indices) as f32;
        p.set_operand_bytes(0, Vec::new(), out as f32);
        p.set_operand_bytes(1, Vec::new(), indices as f32);
        p.set_operand_utilization(0, (1.0 * gather.hlo.shape.elements() as f64 / operand_elements as f64) as f32);
        p.set_output_bytes(Vec::new(), out as f32);
    }

    /// `HloCostAnalysis::HandleScatter`: three update-sized accesses plus the indices.
    fn handle_scatter(&mut self, scatter: &Node, p: &mut Props) {
        let n = scatter.operands.len().saturating_sub(1) / 2;
        let mut total_update = 0i64;
        for i in 0..n {
            let update = self.operand_shape(scatter, n + 1 + i).map_or(0, shape_size);
            p.set_operand_bytes(i, Vec::new(), update as f32);
            p.set_operand_bytes(n + 1 + i, Vec::new(), update as f32);
            total_update = total_update.wrapping_add(update);
        }
        let indices = self.operand_shape(scatter, n).map_or(0, shape_size);
        p.set_operand_bytes(n, Vec::new(), indices as f32);
        p.bytes_accessed = total_update.wrapping_mul(3).wrapping_add(indices) as f32;
        p.set_output_bytes(Vec::new(), total_update as f32);
        let elements = self.operand_shape(scatter, n + 1).map_or(0, Shape::elements);
        let sub = self.sub_properties(scatter, 0);
        p.copy_scaled_from(&sub, elements as f32);
    }

    /// `XProfGpuCostAnalysis::HandleCustomCall` over `GpuHloCostAnalysis::HandleCustomCall`:
    /// * cuBLASLt/hipBLASLt matmuls (`__cublas$lt$matmul[$f8]`) get their dot FLOPs from the
    ///   backend config's dimension numbers (bytes stay the operands plus outputs); 8-bit
    ///   (4-bit) operands run at twice (four times) the rate, which XProf subtracts from the
    ///   device FLOPs;
    /// * cuDNN convolutions get their FLOPs and count only the real output;
    /// * every other custom call, the legacy `__cublas$gemm` included, has unknown (-1)
    ///   costs (found by running XProf 2.24.2 on each kind).
    fn handle_custom_call(&mut self, node: &Node, p: &mut Props) {
        let h = &node.hlo;
        if matches!(h.custom_call_target.as_str(), "__cublas$lt$matmul" | "__cublas$lt$matmul$f8") {
            let Some(contracting) = gemm_lhs_contracting_dimensions(&h.backend_config) else {
                self.failed = true;
                return;
            };
            let output = if h.shape.is_tuple() { h.shape.tuple_shapes.first().unwrap_or(&h.shape) } else { &h.shape };
            let lhs = self.operand_shape(node, 0);
            p.flops = lhs.map_or(0, |lhs| dot_flops(lhs, output, &contracting)) as f32;
            let rate: u32 = match lhs.map_or(0, |l| primitive::bit_width(l.element_type)) {
                8 => 2,
                4 => 4,
                _ => 1,
            };
            p.device_flops_adjustment = p.flops - p.flops / rate as f32;
            return;
        }
        if is_dnn_convolution(&h.custom_call_target) {
            let result = if h.shape.is_tuple() { h.shape.tuple_shapes.first().unwrap_or(&h.shape) } else { &h.shape };
            if let (Some(lhs), Some(rhs)) = (self.operand_shape(node, 0), self.operand_shape(node, 1)) {
                p.flops = convolution_flops(node, lhs, rhs, result) as f32;
            }
            if h.shape.is_tuple() {
                let output_size = h.shape.tuple_shapes.first().map_or(0, byte_size_of) as f32;
                p.bytes_accessed -= p.output_bytes();
                p.bytes_accessed += output_size;
                p.set_output_bytes(Vec::new(), output_size);
            }
            return;
        }
        p.optimal_seconds = -1.0;
        p.bytes_accessed = -1.0;
        p.set_output_bytes(Vec::new(), -1.0);
        for i in 0..node.operands.len() {
            p.set_operand_bytes(i, Vec::new(), -1.0);
        }
        p.flops = -1.0;
    }

    /// The number of devices of a collective (`GetPariticipantCountsForReplicaGroups` over
    /// one replica and one partition, the module config XProf loads modules with): the
    /// largest replica group, or everyone when there are no groups; `None` over flattened
    /// device ids without groups (an error in XLA).
    fn num_ranks(&self, node: &Node, use_global_device_ids: bool) -> Option<i64> {
        let h = &node.hlo;
        let has_channel = h.channel_id > 0;
        let flattened = has_channel && use_global_device_ids;
        let cross_replica_and_partition = has_channel && !use_global_device_ids;
        if h.replica_groups.is_empty() {
            if let Some(iota) = &h.iota_replica_groups {
                return Some(iota.num_devices_per_group.max(1));
            }
            if flattened {
                return None;
            }
            return Some(1);
        }
        let largest = h.replica_groups.iter().map(|g| g.len() as i64).max().unwrap_or(1);
        // One partition: a replica-and-partition group counts its replicas once.
        let _ = cross_replica_and_partition;
        Some(largest.max(1))
    }

    /// `GpuHloCostAnalysis::HandleAllGather[Start]`: each rank writes its piece to every
    /// other rank and reads all pieces.
    fn handle_all_gather(&mut self, node: &Node, p: &mut Props, skip_first_element: bool) {
        let h = &node.hlo;
        let Some(ranks) = self.num_ranks(node, h.use_global_device_ids) else {
            self.failed = true;
            return;
        };
        let transferred: i64 = leaves(&h.shape)
            .iter()
            .filter(|(s, index)| s.is_array() && !(skip_first_element && index.first() == Some(&0)))
            .fold(0i64, |a, (s, _)| a.wrapping_add(shape_size(s)));
        let rank_size = transferred.checked_div(ranks).unwrap_or(0);
        let write = rank_size.wrapping_mul(ranks.wrapping_mul(2).wrapping_sub(1));
        let read = rank_size.wrapping_mul(ranks);
        p.bytes_accessed = write.wrapping_add(read) as f32;
    }

    /// `HloCostAnalysis::HandleFusion` with the GPU utilization pass: FLOPs are the
    /// utilization-weighted FLOPs of the fused instructions; bytes are the outputs, the
    /// large constants and each parameter's size times `min(utilization, 1)`.
    fn handle_fusion(&mut self, node: &Node, p: &mut Props) {
        let graph = self.graph;
        let Some(&comp) = node.called.first() else { return };
        let Some(fused) = graph.comps.get(comp) else { return };
        if node.hlo.fusion_kind == "kCustom" {
            for &i in &fused.instrs {
                let Some(n) = graph.node(i) else { continue };
                if n.op == Opcode::Gather {
                    *p = self.preprocess(node);
                    self.handle_gather(n, p);
                    return;
                }
                if n.op == Opcode::Scatter {
                    *p = self.preprocess(node);
                    self.handle_scatter(n, p);
                    return;
                }
            }
        }
        *p = self.visit_computation(comp);
        p.bytes_accessed = 0.0;

        // FusionProcessOutputBytesAccessed.
        let root = fused.root;
        let mut subs = Vec::new();
        subshapes(&node.hlo.shape, &mut Vec::new(), &mut subs);
        for (subshape, shape_index) in &subs {
            if !subshape.is_array() {
                continue;
            }
            let mut root_index = root;
            if shape_index.len() == 1
                && graph.node(root).is_some_and(|r| r.op == Opcode::Tuple)
                && let Some(&k) = shape_index.first()
                && let Some(&element) = graph.node(root).and_then(|r| r.operands.get(k as usize))
            {
                root_index = element;
            }
            if let Some(r) = graph.node(root_index).filter(|r| r.op == Opcode::DynamicUpdateSlice) {
                let size = graph.operand(r, 1).map_or(0, |u| shape_size(&u.hlo.shape)) as f32;
                p.bytes_accessed += size;
                p.set_output_bytes(shape_index.clone(), size);
                self.props_mut(root_index).set_operand_utilization(0, 0.0);
                continue;
            }
            let size = shape_size(subshape) as f32;
            p.bytes_accessed += size;
            p.set_output_bytes(shape_index.clone(), size);
        }
        if node.hlo.shape.is_tuple() {
            p.set_output_bytes(Vec::new(), 0.0);
            let total = propagate_output_size(&node.hlo.shape, &mut Vec::new(), &mut p.output_bytes);
            p.set_output_bytes(Vec::new(), total);
        }

        self.fusion_utilizations(comp, p);

        // FusionCountConstantsMemoryAccess: large constants are read like parameters.
        for &i in &fused.instrs {
            let Some(n) = graph.node(i) else { continue };
            if n.op == Opcode::Constant && n.hlo.shape.elements() > IMMEDIATE_CONSTANT_MAX_ELEMENTS {
                let utilization = self.props(i).map_or(0.0, |q| q.utilization).min(1.0);
                p.bytes_accessed += shape_size(&n.hlo.shape) as f32 * utilization;
            }
        }

        // FusionProcessOperandBytesRead.
        for (i, param) in fused.params.iter().enumerate() {
            let Some(param) = *param else { continue };
            let Some(param_node) = graph.node(param) else { continue };
            let mut operand_size: i64 = 0;
            if !param_node.hlo.shape.is_tuple() {
                operand_size = self.parameter_read_bytes(param);
            } else {
                for (_, leaf_index) in leaves(&param_node.hlo.shape) {
                    let mut gte = param;
                    for &sub in &leaf_index {
                        let found = graph.node(gte).and_then(|g| {
                            g.users.iter().copied().find(|&u| {
                                graph
                                    .node(u)
                                    .is_some_and(|u| u.op == Opcode::GetTupleElement && u.hlo.tuple_index == sub)
                            })
                        });
                        if let Some(found) = found {
                            gte = found;
                        }
                    }
                    let size = self.parameter_read_bytes(gte);
                    operand_size = operand_size.wrapping_add(size);
                    p.set_operand_bytes(i, leaf_index, size as f32);
                }
            }
            p.bytes_accessed += operand_size as f32;
            p.set_operand_bytes(i, Vec::new(), operand_size as f32);
            let utilization = self.props(param).map_or(0.0, |q| q.utilization);
            p.set_operand_utilization(i, utilization);
        }
    }

    /// `GpuHloCostAnalysis::FusionParameterReadBytes`: size × min(utilization, 1), rounded.
    fn parameter_read_bytes(&self, param: usize) -> i64 {
        let utilization = self.props(param).map_or(0.0, |q| q.utilization).min(1.0);
        let size = self.graph.node(param).map_or(0, |n| shape_size(&n.hlo.shape));
        (size as f32 * utilization).round() as i64
    }

    /// `GpuHloCostAnalysis::FusionCalculateUtilizations`.
    ///
    /// Walks the fused computation from the root (reverse post order). Each instruction
    /// is used as often as the *roots* of the elementwise chains it feeds: the fusion root
    /// counts once; a non-elementwise consumer `c` starts a new root at its operand `o`,
    /// used `ceil(u(c) · operand_utilization(c, o) · n(o)) / n(o)` times (`n` = elements).
    ///
    /// ```text
    ///   p ── convert ──┬── reduce ──┐            u(reduce)=1 (root chain)
    ///                  └── subtract ┴── ... root  u(convert) = 1 (reduce's new root)
    ///                                                        + 1 (root chain) = 2
    /// ```
    /// The fusion's FLOPs are Σ u(i) · flops(i) in that order, in 32-bit floats.
    fn fusion_utilizations(&mut self, comp: usize, p: &mut Props) {
        let graph = self.graph;
        let Some(fused) = graph.comps.get(comp) else { return };
        let mut order = graph.post_order(comp);
        order.reverse();
        let mut elementwise_roots: HashMap<usize, Vec<usize>> = HashMap::with_capacity(order.len());
        let mut root_utilization: HashMap<usize, f32> = HashMap::with_capacity(order.len());
        let mut root_ir_size: HashMap<usize, i64> = HashMap::new();
        for &i in &order {
            let q = self.props_mut(i);
            q.utilization = 0.0;
            q.ir_size = 0.0;
            elementwise_roots.insert(i, Vec::new());
            root_utilization.insert(i, 0.0);
        }
        let root = fused.root;
        root_utilization.insert(root, 1.0);
        root_ir_size.insert(root, 1);
        elementwise_roots.insert(root, vec![root]);
        p.flops = 0.0;
        p.ir_size = 0.0;
        for &i in &order {
            let roots = elementwise_roots.get(&i).cloned().unwrap_or_default();
            let (mut utilization, mut ir_size) = (0.0f32, 0.0f32);
            {
                let q = self.props_mut(i);
                for r in &roots {
                    q.utilization += root_utilization.get(r).copied().unwrap_or(0.0);
                    q.ir_size += root_ir_size.get(r).copied().unwrap_or(0) as f32;
                }
                utilization += q.utilization;
                ir_size += q.ir_size;
            }
            let instr_flops = self.props(i).map_or(0.0, |q| q.flops);
            p.flops += utilization * instr_flops;
            p.ir_size += ir_size;
            let Some(n) = graph.node(i) else { continue };
            let passes_roots = is_elementwise(graph, n) || matches!(n.op, Opcode::Tuple | Opcode::GetTupleElement);
            for (operand_index, &operand) in n.operands.iter().enumerate() {
                let operand_roots = elementwise_roots.entry(operand).or_default();
                if passes_roots {
                    for &r in &roots {
                        if !operand_roots.contains(&r) {
                            operand_roots.push(r);
                        }
                    }
                } else {
                    if !operand_roots.contains(&operand) {
                        operand_roots.push(operand);
                    }
                    let operand_utilization = self.props(i).map_or(0.0, |q| q.operand_utilization(operand_index));
                    let mut u = utilization * operand_utilization;
                    let elements = graph.node(operand).map_or(0, |o| o.hlo.shape.elements_recursive());
                    u = if elements == 0 { 0.0 } else { (u * elements as f32).ceil() / elements as f32 };
                    *root_utilization.entry(operand).or_insert(0.0) += u;
                    let entry = root_ir_size.entry(operand).or_insert(0);
                    *entry = (*entry as f32 + ir_size) as i64;
                }
            }
        }
    }
}

/// The tuple part of `FusionProcessOutputBytesAccessed`: a tuple index's bytes are the sum
/// of its elements' (set ones are kept).
fn propagate_output_size(shape: &Shape, index: &mut ShapeIndex, bytes: &mut HashMap<ShapeIndex, f32>) -> f32 {
    let current = bytes.get(index).copied().unwrap_or(0.0);
    if current != 0.0 || !shape.is_tuple() {
        return current;
    }
    let mut total = current;
    for (i, element) in shape.tuple_shapes.iter().enumerate() {
        index.push(i as i64);
        total += propagate_output_size(element, index, bytes);
        index.pop();
    }
    bytes.insert(index.clone(), total);
    total
}

/// `HloCostAnalysis::GetBytesRead(hlo, memory_space)`: operand bytes of the leaves whose
/// layout is in `memory_space`.
pub(crate) fn bytes_read(graph: &Graph, node: &Node, p: &Props, memory_space: i64) -> i64 {
    let mut total: i64 = 0;
    for (i, &operand) in node.operands.iter().enumerate() {
        let Some(o) = graph.node(operand) else { continue };
        for (leaf, index) in leaves(&o.hlo.shape) {
            if leaf.layout.as_ref().is_some_and(|l| l.memory_space == memory_space) {
                let bytes = p.operand_bytes.get(&(i, index)).copied().unwrap_or(0.0);
                total = total.wrapping_add(bytes as i64);
            }
        }
    }
    total
}

/// `HloCostAnalysis::GetBytesWritten(hlo, memory_space)`.
pub(crate) fn bytes_written(node: &Node, p: &Props, memory_space: i64) -> i64 {
    let mut total: i64 = 0;
    for (leaf, index) in leaves(&node.hlo.shape) {
        if leaf.layout.as_ref().is_some_and(|l| l.memory_space == memory_space) {
            total = total.wrapping_add(p.output_bytes.get(&index).copied().unwrap_or(0.0) as i64);
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_xla() {
        let layout = Some(crate::Layout { minor_to_major: vec![0], ..Default::default() });
        let bf16 =
            Shape { element_type: primitive::BF16, dimensions: vec![10], layout: layout.clone(), ..Default::default() };
        assert_eq!(shape_size(&bf16), 20);
        let no_layout = Shape { element_type: primitive::BF16, dimensions: vec![10], ..Default::default() };
        assert_eq!(shape_size(&no_layout), 0);
        let tuple =
            Shape { element_type: primitive::TUPLE, tuple_shapes: vec![bf16.clone(), bf16], ..Default::default() };
        assert_eq!(shape_size(&tuple), 16);
        assert_eq!(
            elementwise_flops(
                "sine",
                &Shape { element_type: primitive::F32, dimensions: vec![4], ..Default::default() }
            ),
            4 * 662
        );
        assert_eq!(
            elementwise_flops(
                "add",
                &Shape { element_type: primitive::BF16, dimensions: vec![4], ..Default::default() }
            ),
            12
        );
    }
}
