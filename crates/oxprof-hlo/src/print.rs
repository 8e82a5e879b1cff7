//! HLO text of one instruction: XLA's `HloInstruction::ToString` with the print options
//! oxprof needs ([`PrintOptions`]); [`expression`] is XProf's `long_name` of device ops (no
//! metadata, no backend config, operand shapes shown, large constants elided), e.g.
//! `%fusion.3 = bf16[8,128]{1,0} fusion(bf16[8,128]{1,0} %p), kind=kLoop, calls=%fused`.
//!
//! Shapes print with their layouts (`{1,0:T(8,128)S(1)}`), operands with their shapes, and
//! every 5th operand or tuple element is annotated `/*index=5*/`. Instruction attributes
//! follow XLA's order: the instruction kind's own attributes, then called computations,
//! then control predecessors.

use super::graph::{Graph, Node, Opcode};
use crate::{Layout, Literal, Shape, Sharding, WindowDimension, primitive};
use oxprof_wire::cxx_printf::{c_escape, format_g};
use std::fmt::Write as _;

/// XLA cuts expressions longer than this (`kMaxHlolNameSize`).
const MAX_EXPRESSION_SIZE: usize = 1_000_000;

/// Highest dimension number `dim_labels` lays out (XLA's maximum rank is far below).
const MAX_RANK: i64 = 1024;

/// Most literal elements printed (custom-call literals are printed whole by XLA; bad data
/// could claim billions).
const MAX_LITERAL_ELEMENTS: i64 = 1 << 20;

/// Tuple elements and operands carry an index comment every this many entries.
const INDEX_ANNOTATION_INTERVAL: usize = 5;

/// The `HloPrintOptions` oxprof's printers vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrintOptions {
    /// `%` before instruction and computation names.
    pub percent: bool,
    /// Operand shapes before operand names.
    pub operand_shapes: bool,
    /// Constants with more than 10 elements in full (else `{...}`).
    pub large_constants: bool,
    /// `metadata={...}`.
    pub metadata: bool,
    /// `backend_config=...`.
    pub backend_config: bool,
    /// `control-predecessors={...}`.
    pub control_dependencies: bool,
    /// `/*index=5*/` before every 5th operand.
    pub operand_index_annotations: bool,
}

impl PrintOptions {
    /// XProf's `long_name` options (`HloInstruction::ToString` in its HLO wrapper).
    pub const XPROF_EXPRESSION: PrintOptions = PrintOptions {
        percent: true,
        operand_shapes: true,
        large_constants: false,
        metadata: false,
        backend_config: false,
        control_dependencies: true,
        operand_index_annotations: true,
    };
}

/// `UncachedExpression`: the instruction's text, cut at 1 MB.
pub(crate) fn expression(graph: &Graph, node: &Node) -> String {
    let mut out = String::new();
    print_instruction(graph, node, PrintOptions::XPROF_EXPRESSION, &mut out);
    if out.len() > MAX_EXPRESSION_SIZE {
        let mut cut = MAX_EXPRESSION_SIZE;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
    }
    out
}

fn join<T: std::fmt::Display>(items: &[T], separator: &str) -> String {
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        let _ = write!(out, "{item}");
    }
    out
}

/// `Layout::Print`: `{minor_to_major:tiles L(..) #(..) *(..) E(..) S(..) SC(..) P(..) M(..)}`.
fn print_layout(layout: &Layout, out: &mut String) {
    out.push('{');
    out.push_str(&join(&layout.minor_to_major, ","));
    let mut colon = false;
    let mut extra = |out: &mut String, text: &str| {
        if !colon {
            out.push(':');
            colon = true;
        }
        out.push_str(text);
    };
    for tile in &layout.tiles {
        let dims: Vec<String> = tile.iter().map(|&d| if d == -1 { "*".to_string() } else { d.to_string() }).collect();
        extra(out, &format!("T({})", dims.join(",")));
    }
    if layout.tail_padding_alignment_in_elements > 1 {
        extra(out, &format!("L({})", layout.tail_padding_alignment_in_elements));
    }
    if layout.index_primitive_type != primitive::INVALID {
        extra(out, &format!("#({})", primitive::name(layout.index_primitive_type)));
    }
    if layout.pointer_primitive_type != primitive::INVALID {
        extra(out, &format!("*({})", primitive::name(layout.pointer_primitive_type)));
    }
    if layout.element_size_in_bits != 0 {
        extra(out, &format!("E({})", layout.element_size_in_bits));
    }
    if layout.memory_space != 0 {
        extra(out, &format!("S({})", layout.memory_space));
    }
    for (dimension, indices) in &layout.split_configs {
        extra(out, &format!("SC({dimension}:{})", join(indices, ",")));
    }
    if let Some(physical) = &layout.physical_shape {
        let mut text = String::from("P(");
        print_shape(physical, &mut text);
        text.push(')');
        extra(out, &text);
    }
    if layout.dynamic_shape_metadata_prefix_bytes > 0 {
        extra(out, &format!("M({})", layout.dynamic_shape_metadata_prefix_bytes));
    }
    out.push('}');
}

/// `ShapeUtil::PrintHumanStringWithLayout`: `f32[8,<=16]{1,0}`, `(a, b, /*index=5*/f)`;
/// scalars print no empty `{}` layout.
pub fn print_shape(shape: &Shape, out: &mut String) {
    if shape.is_tuple() {
        out.push('(');
        for (i, element) in shape.tuple_shapes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
                if i % INDEX_ANNOTATION_INTERVAL == 0 {
                    let _ = write!(out, "/*index={i}*/");
                }
            }
            print_shape(element, out);
        }
        out.push(')');
        return;
    }
    out.push_str(primitive::name(shape.element_type));
    if !shape.is_array() {
        return;
    }
    out.push('[');
    for (i, dim) in shape.dimensions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if shape.is_dynamic_dimension.get(i).copied().unwrap_or(false) {
            out.push_str("<=");
        }
        let _ = write!(out, "{dim}");
    }
    out.push(']');
    if let Some(layout) = &shape.layout {
        let mut text = String::new();
        print_layout(layout, &mut text);
        if !(shape.dimensions.is_empty() && text == "{}") {
            out.push_str(&text);
        }
    }
}

/// `RoundTripFpToString`: `%.{digits10}g`, or `%.{max_digits10}g` when that does not read
/// back as the same value; `nan`, `inf`, `-inf` as C prints them.
fn round_trip_float(value: f64, digits10: usize, max_digits10: usize, same: impl Fn(f64) -> bool) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if value.is_infinite() {
        return if value < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let short = format_g(value, digits10);
    if short.parse::<f64>().is_ok_and(&same) { short } else { format_g(value, max_digits10) }
}

/// One element of a literal, as `Literal::Print` shows it.
fn literal_element(literal: &Literal, index: usize) -> String {
    let le16 = |bytes: &[u8]| -> Option<u16> {
        let b = bytes.get(index * 2..index * 2 + 2)?;
        Some(u16::from_le_bytes([*b.first()?, *b.get(1)?]))
    };
    let missing = || "?".to_string();
    match literal.shape.element_type {
        primitive::PRED => literal.preds.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::S8 => literal.s8s.get(index).map_or_else(missing, |&v| (v as i8).to_string()),
        primitive::U8 => literal.u8s.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::S16 => le16(&literal.s16s).map_or_else(missing, |v| (v as i16).to_string()),
        primitive::U16 => le16(&literal.u16s).map_or_else(missing, |v| v.to_string()),
        primitive::S32 => literal.s32s.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::U32 => literal.u32s.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::S64 => literal.s64s.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::U64 => literal.u64s.get(index).map_or_else(missing, |v| v.to_string()),
        primitive::F32 => literal
            .f32s
            .get(index)
            .map_or_else(missing, |&v| round_trip_float(f64::from(v), 6, 9, |p| p as f32 == v || v.is_nan())),
        primitive::F64 => literal.f64s.get(index).map_or_else(missing, |&v| round_trip_float(v, 15, 17, |p| p == v)),
        primitive::BF16 => le16(&literal.bf16s).map_or_else(missing, |bits| {
            let v = f32::from_bits(u32::from(bits) << 16);
            round_trip_float(f64::from(v), 2, 4, |p| bf16_round(p as f32) == bits)
        }),
        primitive::F16 => le16(&literal.f16s).map_or_else(missing, |bits| {
            let v = f16_to_f32(bits);
            round_trip_float(f64::from(v), 3, 5, |p| f32_to_f16(p as f32) == bits)
        }),
        primitive::C64 => match (literal.c64s.get(2 * index), literal.c64s.get(2 * index + 1)) {
            (Some(&re), Some(&im)) => format!(
                "({}, {})",
                round_trip_float(f64::from(re), 6, 9, |p| p as f32 == re),
                round_trip_float(f64::from(im), 6, 9, |p| p as f32 == im)
            ),
            _ => missing(),
        },
        primitive::C128 => match (literal.c128s.get(2 * index), literal.c128s.get(2 * index + 1)) {
            (Some(&re), Some(&im)) => {
                format!(
                    "({}, {})",
                    round_trip_float(re, 15, 17, |p| p == re),
                    round_trip_float(im, 15, 17, |p| p == im)
                )
            }
            _ => missing(),
        },
        _ => missing(),
    }
}

/// bfloat16 bits of a float, rounded to nearest even.
fn bf16_round(v: f32) -> u16 {
    let bits = v.to_bits();
    if v.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounding = 0x7fff + ((bits >> 16) & 1);
    (bits.wrapping_add(rounding) >> 16) as u16
}

fn f16_to_f32(bits: u16) -> f32 {
    let sign = u32::from(bits >> 15) << 31;
    let exponent = u32::from((bits >> 10) & 0x1f);
    let mantissa = u32::from(bits & 0x3ff);
    let magnitude = match exponent {
        0 => (mantissa as f32) * 2f32.powi(-24),
        0x1f => {
            if mantissa == 0 {
                f32::INFINITY
            } else {
                f32::NAN
            }
        }
        _ => f32::from_bits(((exponent + 112) << 23) | (mantissa << 13)),
    };
    f32::from_bits(magnitude.to_bits() | sign)
}

fn f32_to_f16(v: f32) -> u16 {
    // Exact enough for the round-trip check of printed constants.
    let bits = v.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    if v.is_nan() {
        return sign | 0x7e00;
    }
    let abs = v.abs();
    if abs >= 65520.0 {
        return sign | 0x7c00;
    }
    if abs < 2f32.powi(-24) * 0.5 {
        return sign;
    }
    if abs < 2f32.powi(-14) {
        return sign | (abs / 2f32.powi(-24)).round_ties_even() as u16;
    }
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    let mut half = ((exponent as u32) << 10) | (mantissa >> 13);
    let rest = mantissa & 0x1fff;
    if rest > 0x1000 || (rest == 0x1000 && half & 1 == 1) {
        half += 1;
    }
    sign | half as u16
}

/// `Literal::PrintWithoutShapeOneline` for arrays: `3`, `{1, 2}`, `{ { 1, 2 }, { 3, 4 } }`.
pub(crate) fn print_literal(literal: &Literal, out: &mut String) {
    let dims = &literal.shape.dimensions;
    if !(0..=MAX_LITERAL_ELEMENTS).contains(&literal.shape.elements()) || dims.iter().any(|&d| d < 0) {
        out.push_str("{...}");
        return;
    }
    if dims.is_empty() {
        out.push_str(&literal_element(literal, 0));
        return;
    }
    fn rec(literal: &Literal, dims: &[i64], depth: usize, offset: &mut usize, out: &mut String) {
        let Some(&size) = dims.get(depth) else { return };
        let last = depth + 1 == dims.len();
        if last {
            out.push('{');
            for i in 0..size.max(0) {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&literal_element(literal, *offset));
                *offset += 1;
            }
            out.push('}');
        } else {
            out.push_str("{ ");
            for i in 0..size.max(0) {
                if i > 0 {
                    out.push_str(", ");
                }
                rec(literal, dims, depth + 1, offset, out);
            }
            out.push_str(" }");
        }
    }
    let mut offset = 0;
    rec(literal, dims, 0, &mut offset, out);
}

/// `window_util::ToString`: `size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=..`.
fn window_string(window: &[WindowDimension]) -> String {
    let mut out = String::new();
    let field = |out: &mut String, heading: &str, value: &dyn Fn(&WindowDimension) -> String| {
        out.push_str(heading);
        out.push('=');
        for (i, d) in window.iter().enumerate() {
            if i > 0 {
                out.push('x');
            }
            out.push_str(&value(d));
        }
    };
    if !window.is_empty() {
        field(&mut out, "size", &|d| d.size.to_string());
    }
    if window.iter().any(|d| d.stride != 1) {
        field(&mut out, " stride", &|d| d.stride.to_string());
    }
    if window.iter().any(|d| d.padding_low != 0 || d.padding_high != 0) {
        field(&mut out, " pad", &|d| format!("{}_{}", d.padding_low, d.padding_high));
    }
    if window.iter().any(|d| d.base_dilation != 1) {
        field(&mut out, " lhs_dilate", &|d| d.base_dilation.to_string());
    }
    if window.iter().any(|d| d.window_dilation != 1) {
        field(&mut out, " rhs_dilate", &|d| d.window_dilation.to_string());
    }
    if window.iter().any(|d| d.window_reversal) {
        field(&mut out, " rhs_reversal", &|d| if d.window_reversal { "1".into() } else { "0".into() });
    }
    out
}

/// `ConvolutionDimensionNumbersToString`: `b01f_01io->b01f`.
fn dim_labels(node: &Node) -> Option<String> {
    let d = node.hlo.convolution_dimension_numbers.as_ref()?;
    let labels = |a: i64, a_label: &str, b: i64, b_label: &str, spatial: &[i64]| -> String {
        // Dimension numbers beyond any real rank (bad data) are not laid out.
        let len = spatial.iter().copied().chain([a, b]).max().unwrap_or(0).clamp(0, MAX_RANK) as usize + 1;
        let mut v = vec!["?".to_string(); len];
        for (i, &s) in spatial.iter().enumerate() {
            if let Some(slot) = usize::try_from(s).ok().and_then(|s| v.get_mut(s)) {
                *slot = i.to_string();
            }
        }
        if let Some(slot) = usize::try_from(a).ok().and_then(|s| v.get_mut(s)) {
            *slot = a_label.into();
        }
        if let Some(slot) = usize::try_from(b).ok().and_then(|s| v.get_mut(s)) {
            *slot = b_label.into();
        }
        v.concat()
    };
    Some(format!(
        "{}_{}->{}",
        labels(d.input_batch_dimension, "b", d.input_feature_dimension, "f", &d.input_spatial_dimensions),
        labels(
            d.kernel_input_feature_dimension,
            "i",
            d.kernel_output_feature_dimension,
            "o",
            &d.kernel_spatial_dimensions
        ),
        labels(d.output_batch_dimension, "b", d.output_feature_dimension, "f", &d.output_spatial_dimensions)
    ))
}

/// `PrecisionToString` names of `xla.PrecisionConfig.Precision`.
fn precision_name(p: i32) -> &'static str {
    match p {
        0 => "default",
        1 => "high",
        2 => "highest",
        3 => "packed_nibble",
        _ => "unknown",
    }
}

/// `operand_precision={high,default}` when any is not DEFAULT (and the algorithm, when
/// set).
fn precision_attributes(node: &Node, attrs: &mut Vec<String>) {
    if node.hlo.operand_precision.iter().any(|&p| p != 0) {
        let names: Vec<&str> = node.hlo.operand_precision.iter().map(|&p| precision_name(p)).collect();
        attrs.push(format!("operand_precision={{{}}}", names.join(",")));
    }
    if node.hlo.precision_algorithm != 0 {
        attrs.push(format!("algorithm={}", algorithm_name(node.hlo.precision_algorithm)));
    }
}

/// `AlgorithmToString` of `xla.PrecisionConfig.Algorithm`.
fn algorithm_name(a: i32) -> String {
    let name = match a {
        1 => "ANY_F8_ANY_F8_F32",
        2 => "ANY_F8_ANY_F8_F32_FAST_ACCUM",
        3 => "ANY_F8_ANY_F8_ANY",
        4 => "ANY_F8_ANY_F8_ANY_FAST_ACCUM",
        5 => "F16_F16_F16",
        6 => "F16_F16_F32",
        7 => "BF16_BF16_BF16",
        8 => "BF16_BF16_F32",
        9 => "BF16_BF16_F32_X3",
        10 => "BF16_BF16_F32_X6",
        11 => "TF32_TF32_F32",
        12 => "TF32_TF32_F32_X3",
        13 => "F32_F32_F32",
        14 => "F64_F64_F64",
        15 => "BF16_BF16_F32_X9",
        _ => "UNSET",
    };
    let lower = name.to_ascii_lowercase();
    format!("dot_{lower}")
}

fn braces(v: &[i64]) -> String {
    format!("{{{}}}", join(v, ","))
}

/// `ReplicaGroupsToString` / `IotaReplicaGroupList::ToString`.
fn replica_groups_string(node: &Node) -> String {
    if let Some(iota) = &node.hlo.iota_replica_groups {
        let mut out = format!(
            "[{},{}]<={}",
            iota.num_replica_groups,
            iota.num_devices_per_group,
            format_args!("[{}]", join(&iota.reshape_dims, ","))
        );
        let identity = iota.transpose_perm.iter().enumerate().all(|(i, &p)| p as usize == i);
        if !identity {
            let _ = write!(out, "T({})", join(&iota.transpose_perm, ","));
        }
        return out;
    }
    let groups: Vec<String> = node.hlo.replica_groups.iter().map(|g| braces(g)).collect();
    format!("{{{}}}", groups.join(","))
}

/// `CustomCallApiVersion_Name`.
fn api_version_name(v: i32) -> &'static str {
    match v {
        1 => "API_VERSION_ORIGINAL",
        2 => "API_VERSION_STATUS_RETURNING",
        3 => "API_VERSION_STATUS_RETURNING_UNIFIED",
        4 => "API_VERSION_TYPED_FFI",
        _ => "API_VERSION_UNSPECIFIED",
    }
}

/// `output_to_operand_aliasing={{0}: (1, {})}`.
fn aliasing_string(aliasing: &[(Vec<i64>, i64, Vec<i64>)]) -> String {
    let parts: Vec<String> = aliasing
        .iter()
        .map(|(output, operand, operand_index)| format!("{}: ({operand}, {})", braces(output), braces(operand_index)))
        .collect();
    format!("output_to_operand_aliasing={{{}}}", parts.join(", "))
}

/// The default comparison type of an element type (`Comparison::DefaultComparisonType`).
fn default_comparison_type(element_type: i32) -> &'static str {
    match element_type {
        primitive::F16 | primitive::F32 | primitive::F64 | primitive::BF16 | primitive::C64 | primitive::C128 => {
            "FLOAT"
        }
        19 | 28 | 20 | 23 | 29 | 24 | 25 | 32 | 33 => "FLOAT",
        primitive::S8 | primitive::S16 | primitive::S32 | primitive::S64 | 30 | 26 | 21 => "SIGNED",
        _ => "UNSIGNED",
    }
}

/// The kind-specific attributes (`PrintExtraAttributesImpl`), in XLA's order.
fn kind_attributes(graph: &Graph, node: &Node, attrs: &mut Vec<String>) {
    let h = &node.hlo;
    let name = h.opcode.as_str();
    match node.op {
        Opcode::Fusion => {
            attrs.push(format!("kind={}", h.fusion_kind));
            if !h.output_operand_aliasing.is_empty() {
                attrs.push(aliasing_string(&h.output_operand_aliasing));
            }
        }
        Opcode::Broadcast
        | Opcode::Reduce
        | Opcode::Transpose
        | Opcode::Concatenate
        | Opcode::Map
        | Opcode::ReduceScatter
        | Opcode::AllGather
        | Opcode::AllGatherStart => {
            if matches!(node.op, Opcode::ReduceScatter | Opcode::AllGather | Opcode::AllGatherStart) {
                collective_attributes(node, attrs);
            }
            if !(node.op == Opcode::Map && h.dimensions.is_empty()) {
                attrs.push(format!("dimensions={}", braces(&h.dimensions)));
            }
            if matches!(node.op, Opcode::AllGather | Opcode::AllGatherStart) && h.use_global_device_ids {
                attrs.push("use_global_device_ids=true".into());
            }
        }
        Opcode::Sort => {
            attrs.push(format!("dimensions={}", braces(&h.dimensions)));
            if h.is_stable {
                attrs.push("is_stable=true".into());
            }
        }
        Opcode::Iota => attrs.push(format!("iota_dimension={}", h.dimensions.first().copied().unwrap_or(0))),
        Opcode::GetTupleElement => attrs.push(format!("index={}", h.tuple_index)),
        Opcode::Slice => {
            let omit_stride = h.slice_dimensions.iter().all(|&(_, _, stride)| stride == 1);
            let parts: Vec<String> = h
                .slice_dimensions
                .iter()
                .map(
                    |&(start, limit, stride)| {
                        if omit_stride { format!("[{start}:{limit}]") } else { format!("[{start}:{limit}:{stride}]") }
                    },
                )
                .collect();
            attrs.push(format!("slice={{{}}}", parts.join(", ")));
        }
        Opcode::DynamicSlice => attrs.push(format!("dynamic_slice_sizes={}", braces(&h.dynamic_slice_sizes))),
        Opcode::Compare => {
            attrs.push(format!("direction={}", h.comparison_direction));
            let operand_type = graph.operand(node, 0).map_or(primitive::INVALID, |o| o.hlo.shape.element_type);
            if !h.comparison_type.is_empty() && h.comparison_type != default_comparison_type(operand_type) {
                attrs.push(format!("type={}", h.comparison_type));
            }
        }
        Opcode::Dot => {
            // `DotDimensionNumbersToString` is one attribute.
            if let Some(d) = &h.dot_dimension_numbers {
                let mut parts = Vec::new();
                if !d.lhs_batch_dimensions.is_empty() {
                    parts.push(format!("lhs_batch_dims={}", braces(&d.lhs_batch_dimensions)));
                }
                parts.push(format!("lhs_contracting_dims={}", braces(&d.lhs_contracting_dimensions)));
                if !d.rhs_batch_dimensions.is_empty() {
                    parts.push(format!("rhs_batch_dims={}", braces(&d.rhs_batch_dimensions)));
                }
                parts.push(format!("rhs_contracting_dims={}", braces(&d.rhs_contracting_dimensions)));
                attrs.push(parts.join(", "));
            }
            precision_attributes(node, attrs);
        }
        Opcode::Convolution => {
            if let Some(window) = h.window.as_ref().filter(|w| !w.is_empty()) {
                attrs.push(format!("window={{{}}}", window_string(window)));
            }
            if let Some(labels) = dim_labels(node) {
                attrs.push(format!("dim_labels={labels}"));
            }
            if h.feature_group_count > 1 {
                attrs.push(format!("feature_group_count={}", h.feature_group_count));
            }
            if h.batch_group_count > 1 {
                attrs.push(format!("batch_group_count={}", h.batch_group_count));
            }
            precision_attributes(node, attrs);
        }
        Opcode::ReduceWindow | Opcode::SelectAndScatter => {
            if let Some(window) = &h.window {
                attrs.push(format!("window={{{}}}", window_string(window)));
            }
        }
        Opcode::CustomCall => {
            if let Some(window) = h.window.as_ref().filter(|w| !w.is_empty()) {
                attrs.push(format!("window={{{}}}", window_string(window)));
            }
            if let Some(labels) = dim_labels(node) {
                attrs.push(format!("dim_labels={labels}"));
            }
            if h.feature_group_count > 1 {
                attrs.push(format!("feature_group_count={}", h.feature_group_count));
            }
            if h.batch_group_count > 1 {
                attrs.push(format!("batch_group_count={}", h.batch_group_count));
            }
            attrs.push(format!("custom_call_target=\"{}\"", c_escape(&h.custom_call_target)));
            if !h.operand_shapes_with_layout.is_empty() {
                let mut text = String::from("operand_layout_constraints={");
                for (i, s) in h.operand_shapes_with_layout.iter().enumerate() {
                    if i > 0 {
                        text.push_str(", ");
                    }
                    print_shape(s, &mut text);
                }
                text.push('}');
                attrs.push(text);
            }
            if h.custom_call_has_side_effect {
                attrs.push("custom_call_has_side_effect=true".into());
            }
            if !h.output_operand_aliasing.is_empty() {
                attrs.push(aliasing_string(&h.output_operand_aliasing));
            }
            if let Some(literal) = &h.literal {
                let mut text = String::from("literal=");
                print_literal(literal, &mut text);
                attrs.push(text);
            }
            match h.custom_call_schedule {
                1 => attrs.push("schedule=SCHEDULE_LATEST".into()),
                2 => attrs.push("schedule=SCHEDULE_EARLIEST".into()),
                _ => {}
            }
            if h.custom_call_api_version > 1 {
                attrs.push(format!("api_version={}", api_version_name(h.custom_call_api_version)));
            }
        }
        Opcode::AllReduce | Opcode::AllReduceStart => {
            collective_attributes(node, attrs);
            if h.use_global_device_ids {
                attrs.push("use_global_device_ids=true".into());
            }
        }
        Opcode::ReducePrecision => {
            attrs.push(format!("exponent_bits={}", h.exponent_bits));
            attrs.push(format!("mantissa_bits={}", h.mantissa_bits));
        }
        Opcode::TopK => {
            attrs.push(format!("k={}", h.k));
            if h.largest {
                attrs.push("largest=true".into());
            }
        }
        Opcode::Gather => {
            if let Some(g) = &h.gather_dimension_numbers {
                let mut parts = vec![
                    format!("offset_dims={}", braces(&g.offset_dims)),
                    format!("collapsed_slice_dims={}", braces(&g.collapsed_slice_dims)),
                    format!("start_index_map={}", braces(&g.start_index_map)),
                ];
                if !g.operand_batching_dims.is_empty() {
                    parts.push(format!("operand_batching_dims={}", braces(&g.operand_batching_dims)));
                    parts.push(format!("start_indices_batching_dims={}", braces(&g.start_indices_batching_dims)));
                }
                parts.push(format!("index_vector_dim={}", g.index_vector_dim));
                attrs.push(parts.join(", "));
            }
            attrs.push(format!("slice_sizes={}", braces(&h.gather_slice_sizes)));
            if h.indices_are_sorted {
                attrs.push("indices_are_sorted=true".into());
            }
        }
        Opcode::Scatter => {
            if let Some(s) = &h.scatter_dimension_numbers {
                let mut parts = vec![
                    format!("update_window_dims={}", braces(&s.update_window_dims)),
                    format!("inserted_window_dims={}", braces(&s.inserted_window_dims)),
                    format!("scatter_dims_to_operand_dims={}", braces(&s.scatter_dims_to_operand_dims)),
                ];
                if !s.input_batching_dims.is_empty() {
                    parts.push(format!("input_batching_dims={}", braces(&s.input_batching_dims)));
                    parts.push(format!("scatter_indices_batching_dims={}", braces(&s.scatter_indices_batching_dims)));
                }
                parts.push(format!("index_vector_dim={}", s.index_vector_dim));
                attrs.push(parts.join(", "));
            }
            if h.indices_are_sorted {
                attrs.push("indices_are_sorted=true".into());
            }
            if h.unique_indices {
                attrs.push("unique_indices=true".into());
            }
        }
        _ => match name {
            "pad" => {
                if let Some(p) = &h.padding_config {
                    let parts: Vec<String> =
                        p.iter()
                            .map(|&(low, high, interior)| {
                                if interior != 0 { format!("{low}_{high}_{interior}") } else { format!("{low}_{high}") }
                            })
                            .collect();
                    attrs.push(format!("padding={}", parts.join("x")));
                }
            }
            "reverse" => attrs.push(format!("dimensions={}", braces(&h.dimensions))),
            "rng" => attrs.push(format!("distribution={}", distribution_name(h.distribution))),
            "rng-bit-generator" => attrs.push(format!("algorithm={}", rng_algorithm_name(h.rng_algorithm))),
            "all-to-all" | "collective-permute" | "collective-permute-start" | "collective-broadcast" => {
                collective_attributes(node, attrs);
                if name == "all-to-all" && !h.dimensions.is_empty() {
                    attrs.push(format!("dimensions={}", braces(&h.dimensions)));
                }
            }
            "send" | "recv" | "send-done" | "recv-done" => {
                if h.channel_id > 0 {
                    attrs.push(format!("channel_id={}", h.channel_id));
                }
                if h.is_host_transfer {
                    attrs.push("is_host_transfer=true".into());
                }
            }
            "copy-start" if h.is_cross_program_prefetch => {
                attrs.push(format!("cross_program_prefetch_index={}", h.cross_program_prefetch_index));
            }
            "batch-norm-training" | "batch-norm-inference" | "batch-norm-grad" => {
                attrs.push(format!("epsilon={}", format_g(f64::from(h.epsilon), 6)));
                attrs.push(format!("feature_index={}", h.feature_index));
            }
            "fft" => {
                attrs.push(format!("fft_type={}", fft_type_name(h.fft_type)));
                attrs.push(format!("fft_length={}", braces(&h.fft_length)));
            }
            _ => {}
        },
    }
}

/// `channel_id=N, replica_groups=...` of collectives.
fn collective_attributes(node: &Node, attrs: &mut Vec<String>) {
    if node.hlo.channel_id > 0 {
        attrs.push(format!("channel_id={}", node.hlo.channel_id));
    }
    attrs.push(format!("replica_groups={}", replica_groups_string(node)));
}

fn distribution_name(d: i32) -> &'static str {
    match d {
        1 => "rng_uniform",
        2 => "rng_normal",
        _ => "rng_default",
    }
}

fn rng_algorithm_name(a: i32) -> &'static str {
    match a {
        1 => "rng_three_fry",
        2 => "rng_philox",
        _ => "rng_default",
    }
}

fn fft_type_name(t: i32) -> &'static str {
    match t {
        1 => "IFFT",
        2 => "RFFT",
        3 => "IRFFT",
        _ => "FFT",
    }
}

/// `HloSharding::Print` (no metadata): `{replicated}`, `{maximal device=1}`,
/// `{devices=[2,1,4]<=[8] last_tile_dim_replicate}`, tuples as `{a, b}`.
fn print_sharding(s: &Sharding, out: &mut String) {
    const MAXIMAL: i32 = 1;
    const TUPLE: i32 = 2;
    const MANUAL: i32 = 4;
    const UNKNOWN: i32 = 5;
    let shard_group = |out: &mut String| {
        if let Some((id, kind)) = s.shard_group {
            let _ = write!(out, " {} {id}", if kind == 1 { "shard_like" } else { "shard_as" });
        }
    };
    match s.kind {
        TUPLE => {
            out.push('{');
            for (i, element) in s.tuple_shardings.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                    if i % INDEX_ANNOTATION_INTERVAL == 0 {
                        let _ = write!(out, "/*index={i}*/");
                    }
                }
                print_sharding(element, out);
            }
            out.push('}');
        }
        MAXIMAL => {
            let _ = write!(out, "{{maximal device={}", s.tile_assignment_devices.first().copied().unwrap_or(0));
            shard_group(out);
            out.push('}');
        }
        MANUAL | UNKNOWN => {
            out.push_str(if s.kind == MANUAL { "{manual" } else { "{unknown" });
            shard_group(out);
            out.push('}');
        }
        3 => {
            let _ = write!(out, "{{devices=[{}]", join(&s.tile_assignment_dimensions, ","));
            if s.iota_reshape_dims.is_empty() {
                out.push_str(&join(&s.tile_assignment_devices, ","));
            } else {
                let _ = write!(out, "<=[{}]", join(&s.iota_reshape_dims, ","));
                let identity = s.iota_transpose_perm.iter().enumerate().all(|(i, &p)| p as usize == i);
                if !identity {
                    let _ = write!(out, "T({})", join(&s.iota_transpose_perm, ","));
                }
            }
            if s.replicate_on_last_tile_dim {
                out.push_str(" last_tile_dim_replicate");
            }
            if !s.last_tile_dims.is_empty() {
                let names: Vec<&str> = s
                    .last_tile_dims
                    .iter()
                    .map(|&t| match t {
                        4 => "manual",
                        1 => "maximul",
                        0 => "replicated",
                        _ => "error_type.",
                    })
                    .collect();
                let _ = write!(out, " last_tile_dims={{{}}}", names.join(", "));
            }
            shard_group(out);
            out.push('}');
        }
        _ => {
            out.push_str("{replicated");
            shard_group(out);
            out.push('}');
        }
    }
}

/// `OpMetadataToString`: the set fields, space-separated.
fn metadata_string(md: &crate::OpMetadata) -> String {
    let mut parts = Vec::new();
    if !md.op_type.is_empty() {
        parts.push(format!("op_type=\"{}\"", c_escape(&md.op_type)));
    }
    if !md.op_name.is_empty() {
        parts.push(format!("op_name=\"{}\"", c_escape(&md.op_name)));
    }
    if !md.source_file.is_empty() {
        parts.push(format!("source_file=\"{}\"", c_escape(&md.source_file)));
    }
    if md.source_line != 0 {
        parts.push(format!("source_line={}", md.source_line));
    }
    if md.source_end_line != 0 {
        parts.push(format!("source_end_line={}", md.source_end_line));
    }
    if md.source_column != 0 {
        parts.push(format!("source_column={}", md.source_column));
    }
    if md.source_end_column != 0 {
        parts.push(format!("source_end_column={}", md.source_end_column));
    }
    if !md.deduplicated_name.is_empty() {
        parts.push(format!("deduplicated_name=\"{}\"", c_escape(&md.deduplicated_name)));
    }
    if md.stack_frame_id != 0 {
        parts.push(format!("stack_frame_id={}", md.stack_frame_id));
    }
    if !md.scheduling_name.is_empty() {
        parts.push(format!("scheduling_name=\"{}\"", c_escape(&md.scheduling_name)));
    }
    parts.join(" ")
}

/// Whether text lexes as a JSON object (XLA then prints a backend config unquoted).
fn lexes_as_json_dict(text: &str) -> bool {
    let t = text.trim();
    t.starts_with('{') && t.ends_with('}')
}

/// `HloInstruction::ExtraAttributesToString`: the kind's own attributes, then (when
/// `subcomputations`) the called computations by name, sharding, frontend attributes and
/// (when `control_dependencies`) control predecessors.
pub(crate) fn extra_attributes(
    graph: &Graph,
    node: &Node,
    percent: bool,
    subcomputations: bool,
    control_dependencies: bool,
) -> Vec<String> {
    let h = &node.hlo;
    let mut attrs = Vec::new();
    kind_attributes(graph, node, &mut attrs);
    let pct = if percent { "%" } else { "" };
    let comp_name = |c: usize| graph.comps.get(c).map_or("", |c| c.name.as_str());
    match node.op {
        _ if !subcomputations => {}
        Opcode::While => {
            // `called_computations()` of a while is {body, condition}.
            if let (Some(&body), Some(&cond)) = (node.called.first(), node.called.get(1)) {
                attrs.push(format!("condition={pct}{}", comp_name(cond)));
                attrs.push(format!("body={pct}{}", comp_name(body)));
            }
        }
        Opcode::SelectAndScatter => {
            if let (Some(&select), Some(&scatter)) = (node.called.first(), node.called.get(1)) {
                attrs.push(format!("select={pct}{}", comp_name(select)));
                attrs.push(format!("scatter={pct}{}", comp_name(scatter)));
            }
        }
        Opcode::Conditional => {
            let pred = graph.operand(node, 0).is_some_and(|o| o.hlo.shape.element_type == primitive::PRED);
            if pred {
                if let (Some(&t), Some(&f)) = (node.called.first(), node.called.get(1)) {
                    attrs.push(format!("true_computation={pct}{}", comp_name(t)));
                    attrs.push(format!("false_computation={pct}{}", comp_name(f)));
                }
            } else {
                let names: Vec<String> = node.called.iter().map(|&c| format!("{pct}{}", comp_name(c))).collect();
                attrs.push(format!("branch_computations={{{}}}", names.join(", ")));
            }
        }
        Opcode::Call
        | Opcode::Map
        | Opcode::ReduceWindow
        | Opcode::Reduce
        | Opcode::AllReduce
        | Opcode::ReduceScatter
        | Opcode::AllReduceStart
        | Opcode::Scatter
        | Opcode::TopK
        | Opcode::Sort => {
            if let Some(&c) = node.called.first() {
                attrs.push(format!("to_apply={pct}{}", comp_name(c)));
            }
            if node.op == Opcode::Call && h.is_composite {
                attrs.push("is_composite=true".into());
            }
        }
        Opcode::CustomCall => {
            if !node.called.is_empty() {
                let names: Vec<String> = node.called.iter().map(|&c| format!("{pct}{}", comp_name(c))).collect();
                attrs.push(format!("called_computations={{{}}}", names.join(", ")));
            }
        }
        _ => {
            if !node.called.is_empty() {
                let names: Vec<String> = node.called.iter().map(|&c| format!("{pct}{}", comp_name(c))).collect();
                attrs.push(format!("calls={}", names.join(", ")));
            }
        }
    }
    if let Some(sharding) = &h.sharding {
        let mut text = String::from("sharding=");
        print_sharding(sharding, &mut text);
        attrs.push(text);
    }
    if !h.frontend_attributes.is_empty() {
        let parts: Vec<String> = h.frontend_attributes.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        attrs.push(format!("frontend_attributes={{{}}}", parts.join(",")));
    }
    if control_dependencies && !node.control_preds.is_empty() {
        let names: Vec<String> =
            node.control_preds.iter().filter_map(|&p| graph.node(p)).map(|p| format!("{pct}{}", p.hlo.name)).collect();
        attrs.push(format!("control-predecessors={{{}}}", names.join(", ")));
    }
    attrs
}

/// `HloInstruction::Print` with the given options.
pub fn print_instruction(graph: &Graph, node: &Node, options: PrintOptions, out: &mut String) {
    let h = &node.hlo;
    let pct = if options.percent { "%" } else { "" };
    out.push_str(pct);
    out.push_str(&h.name);
    out.push_str(" = ");
    print_shape(&h.shape, out);
    out.push(' ');
    out.push_str(&h.opcode);
    out.push('(');
    match node.op {
        Opcode::Constant => {
            let small = h.shape.is_array() && (options.large_constants || h.shape.elements() <= 10);
            match &h.literal {
                Some(literal) if small => print_literal(literal, out),
                _ => out.push_str("{...}"),
            }
        }
        Opcode::Parameter => {
            let _ = write!(out, "{}", h.parameter_number);
        }
        _ => {
            for (i, &operand) in node.operands.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                    if options.operand_index_annotations && i % INDEX_ANNOTATION_INTERVAL == 0 {
                        let _ = write!(out, "/*index={i}*/");
                    }
                }
                match graph.node(operand) {
                    Some(o) => {
                        if options.operand_shapes {
                            print_shape(&o.hlo.shape, out);
                            out.push(' ');
                        }
                        out.push_str(pct);
                        out.push_str(&o.hlo.name);
                    }
                    None => out.push_str("null "),
                }
            }
        }
    }
    out.push(')');
    let mut attrs = extra_attributes(graph, node, options.percent, true, options.control_dependencies);
    // XLA prints metadata only when it names an op, a file or a scheduling name.
    let md = &h.metadata;
    let has_metadata = !md.op_type.is_empty()
        || !md.op_name.is_empty()
        || !md.source_file.is_empty()
        || !md.scheduling_name.is_empty();
    if options.metadata && has_metadata {
        attrs.push(format!("metadata={{{}}}", metadata_string(md)));
    }
    if options.backend_config && !h.backend_config.is_empty() {
        // The XLA behind XProf 2.24.2 reads GPU backend configs into its own
        // `GpuBackendConfig`, which has no `wait_on_operation_queues`: an empty one newer
        // compilers write is dropped when the config is printed again.
        let config = String::from_utf8_lossy(&h.backend_config).replace("\"wait_on_operation_queues\":[],", "");
        if lexes_as_json_dict(&config) {
            attrs.push(format!("backend_config={config}"));
        } else {
            attrs.push(format!("backend_config=\"{}\"", c_escape(&config)));
        }
    }
    for attr in attrs {
        out.push_str(", ");
        out.push_str(&attr);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_style_general_format() {
        assert_eq!(format_g(1.0, 6), "1");
        assert_eq!(format_g(0.00048828125, 6), "0.000488281");
        assert_eq!(format_g(0.00048828125, 9), "0.00048828125");
        assert_eq!(format_g(1e-5, 6), "1e-05");
        assert_eq!(format_g(123456789.0, 6), "1.23457e+08");
        assert_eq!(format_g(466688986.0, 9), "466688986");
        assert_eq!(round_trip_float(0.00048828125, 6, 9, |p| p as f32 == 0.00048828125f32), "0.00048828125");
        assert_eq!(round_trip_float(0.1, 6, 9, |p| p as f32 == 0.1f32), "0.1");
    }

    #[test]
    fn shapes_with_layouts() {
        let mut out = String::new();
        let layout = Layout {
            minor_to_major: vec![3, 2, 1, 0],
            tiles: vec![vec![8, 128]],
            memory_space: 5,
            ..Default::default()
        };
        let s = Shape {
            element_type: primitive::F32,
            dimensions: vec![5, 1024, 1024, 256],
            layout: Some(layout),
            ..Default::default()
        };
        print_shape(&s, &mut out);
        assert_eq!(out, "f32[5,1024,1024,256]{3,2,1,0:T(8,128)S(5)}");
        let scalar = Shape { element_type: primitive::BF16, layout: Some(Layout::default()), ..Default::default() };
        out.clear();
        print_shape(&scalar, &mut out);
        assert_eq!(out, "bf16[]");
    }
}
