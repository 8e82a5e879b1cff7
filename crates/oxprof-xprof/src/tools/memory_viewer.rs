//! `memory_viewer`: XProf's replay of an HLO module's buffer assignment
//! (`hlo_proto_to_memory_visualization_utils.cc`) into its `PreprocessResult` JSON: the
//! heap size over the heap simulator's program order, the peak and what is live at it,
//! the buffers with indefinite lifetime, and the blocks of the allocation timeline.
//!
//! The replay walks the heap simulator trace of one memory color:
//!
//! ```text
//! event:      ALLOC a   ALLOC b   SHARE c→a   FREE a   FREE c   FREE b
//! heap size:  0         |a|       |a|+|b|     same     same     |b|      0
//!                                  (c reuses a's memory: a is freed when its last sharer is)
//! ```
//!
//! Each event first records the heap size *before* it, so `heap_sizes` has one entry per
//! event plus the final size. Buffers with indefinite lifetime (parameters, outputs,
//! constants) are outside the simulation; their allocations' sizes are added to every
//! point of the curve.
//!
//! Where XProf's current source and the XProf 2.24.2 release differ, this follows the
//! release's outputs (all recorded references match): thread-local allocations are
//! neither indefinite nor counted in the total; a canonical buffer whose memory a sharer
//! reuses after its FREE keeps the span it had at that FREE; sharers get their own
//! timeline blocks; only allocations the heap simulator traced get a timeline frame.

use oxprof_hlo::print_shape_with_layout;
use oxprof_hlo::{
    BufferAllocation, BufferAssignment, HloInstruction, HloModule, LogicalBuffer, Shape, StackFrameIndex,
    heap_event_kind, primitive,
};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};

use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use serde_json::Value;

/// Buffers smaller than this are merged into one "small" heap object (`kSmallBufferSize`).
pub const SMALL_BUFFER_SIZE: i64 = 16 * 1024;

/// Bytes per pointer in a tuple's index table (XLA's default pointer size).
const POINTER_SIZE: i64 = 8;

/// Width and height, in points, of the allocation timeline drawing.
const TIMELINE_EXTENT: f64 = 4096.0;

/// Graphviz points per inch, and the drawing's box margin.
const POINTS_PER_INCH: f64 = 72.0;
const GRAPH_MARGIN_POINTS: f64 = 0.02 * POINTS_PER_INCH;
/// Arial heuristics: line height and average character width per point of font size.
const FONT_HEIGHT_SCALE: f64 = 1.2;
const FONT_WIDTH_SCALE: f64 = 0.55;
const ELLIPSIS: &str = "...";
/// Font size of a block: this share of its height, clamped.
const FONT_SIZE_TO_HEIGHT: f64 = 0.6;
const MIN_FONT_SIZE: f64 = 8.0;
const MAX_FONT_SIZE: f64 = 14.0;

/// Colors of heap objects and timeline blocks; XProf's frontend uses the same palette.
const BUFFER_COLORS: [&str; 209] = [
    "#e91e63", "#2196f3", "#81c784", "#4dd0e1", "#3f51b5", "#e53935", "#ff9100", "#b39ddb", "#90a4ae", "#26c6da",
    "#ad1457", "#03a9f4", "#2196f3", "#c2185b", "#795548", "#f9a825", "#00bfa5", "#880e4f", "#d500f9", "#ce93d8",
    "#ec407a", "#4caf50", "#ff8f00", "#ffca28", "#ab47bc", "#00e5ff", "#ff9800", "#40c4ff", "#1e88e5", "#9fa8da",
    "#bf360c", "#00b8d4", "#f57f17", "#64b5f6", "#e040fb", "#ffab91", "#4caf50", "#01579b", "#66bb6a", "#ef9a9a",
    "#558b2f", "#fb8c00", "#ff4081", "#00e676", "#388e3c", "#424242", "#6d4c41", "#c62828", "#616161", "#00897b",
    "#448aff", "#0d47a1", "#607d8b", "#673ab7", "#00c853", "#2e7d32", "#ffa726", "#5e35b1", "#ba68c8", "#8d6e63",
    "#00bcd4", "#ff6f00", "#f4511e", "#ff1744", "#9e9e9e", "#d81b60", "#4a148c", "#26a69a", "#689f38", "#7b1fa2",
    "#b0bec5", "#304ffe", "#f48fb1", "#ffd600", "#ffb74d", "#8bc34a", "#303f9f", "#5d4037", "#80cbc4", "#ffcc80",
    "#00acc1", "#3e2723", "#ff5252", "#ff7043", "#e91e63", "#ea80fc", "#e65100", "#d84315", "#212121", "#ff5722",
    "#1976d2", "#2962ff", "#bdbdbd", "#3949ab", "#69f0ae", "#d50000", "#ffd740", "#c0ca33", "#ff6e40", "#00b0ff",
    "#2979ff", "#e64a19", "#7c4dff", "#607d8b", "#009688", "#ffb300", "#c51162", "#ffc400", "#29b6f6", "#3d5afe",
    "#76ff03", "#cddc39", "#b388ff", "#5c6bc0", "#9e9d24", "#7cb342", "#ef5350", "#fdd835", "#ef6c00", "#4fc3f7",
    "#6200ea", "#004d40", "#ff8a65", "#ffab00", "#80deea", "#0097a7", "#7e57c2", "#ff6d00", "#1565c0", "#455a64",
    "#ffc107", "#4527a0", "#ff5722", "#f44336", "#f57c00", "#827717", "#a5d6a7", "#82b1ff", "#9c27b0", "#ff80ab",
    "#e1bee7", "#78909c", "#311b92", "#00695c", "#4e342e", "#3f51b5", "#651fff", "#9e9e9e", "#81d4fa", "#f8bbd0",
    "#b71c1c", "#0091ea", "#673ab7", "#a1887f", "#4db6ac", "#ffa000", "#6a1b9a", "#43a047", "#bcaaa4", "#546e7a",
    "#aeea00", "#e57373", "#ffccbc", "#006064", "#fbc02d", "#ffeb3b", "#8bc34a", "#039be5", "#8e24aa", "#80d8ff",
    "#009688", "#9ccc65", "#512da8", "#ffc107", "#757575", "#0277bd", "#ff3d00", "#33691e", "#03a9f4", "#00838f",
    "#ff8a80", "#283593", "#f50057", "#1a237e", "#90caf9", "#9c27b0", "#aa00ff", "#aed581", "#afb42b", "#9575cd",
    "#d32f2f", "#64dd17", "#f44336", "#795548", "#cddc39", "#ff9e80", "#7986cb", "#dd2c00", "#0288d1", "#ff9800",
    "#263238", "#00796b", "#42a5f5", "#8c9eff", "#1b5e20", "#ffab40", "#536dfe", "#00bcd4", "#f06292",
];

/// Options of one memory viewer request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryViewerOptions {
    /// Memory color (memory space) to show; 0 is the device's main memory.
    pub memory_color: i64,
    /// Buffers below this size are merged into one heap object.
    pub small_buffer_size: i64,
}

impl Default for MemoryViewerOptions {
    fn default() -> Self {
        MemoryViewerOptions { memory_color: 0, small_buffer_size: SMALL_BUFFER_SIZE }
    }
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}
fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}
fn is_empty_str(v: &str) -> bool {
    v.is_empty()
}

/// Proto3 JSON writes int64 values as strings, and omits zeros.
fn int64_json(v: i64) -> Option<String> {
    (v != 0).then(|| v.to_string())
}

/// `tensorflow.profiler.SourceInfo`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceInfo {
    /// File.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub file_name: String,
    /// Line (-1 when unknown).
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub line_number: i32,
    /// `file:line:column` per frame, innermost first.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub stack_frame: String,
}

/// `HeapObject`: one bar of the "buffers at peak" charts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeapObject {
    /// Color number (always written: it is a oneof member).
    pub numbered: i32,
    /// `name: shape # tf_op`, or `small (<16384 bytes)`.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub label: String,
    /// Logical buffer id (-1 for the small-buffer object).
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub logical_buffer_id: i32,
    /// Size in MiB.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub logical_buffer_size_mib: f64,
    /// Size without layout padding, in MiB.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub unpadded_shape_mib: f64,
    /// Defining instruction, with the shape index when not empty (`name{0,1}`).
    #[serde(skip_serializing_if = "is_empty_str")]
    pub instruction_name: String,
    /// Shape with layout.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub shape_string: String,
    /// Framework op (`metadata.op_name`).
    #[serde(skip_serializing_if = "is_empty_str")]
    pub tf_op_name: String,
    /// Allocation category (`Parameter`, `Output`, `Thread-local`, `Constant`, `Temporary`).
    #[serde(skip_serializing_if = "is_empty_str")]
    pub group_name: String,
    /// Opcode of the defining instruction.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub op_code: String,
    /// Source location, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_info: Option<SourceInfo>,
}

/// `BufferSpan`: first and last event index of a buffer's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferSpan {
    /// First event.
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub start: i32,
    /// Last event.
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub limit: i32,
}

/// `LogicalBuffer` of an indefinite allocation.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalBufferEntry {
    /// Id (int64: a JSON string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Shape with layout.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub shape: String,
    /// Size in MiB.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub size_mib: f64,
    /// Defining instruction.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub hlo_name: String,
    /// Shape index (int64s: JSON strings).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shape_index: Vec<String>,
}

/// `BufferAllocation` with indefinite lifetime.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocationEntry {
    /// Allocation index (int64: a JSON string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Size in MiB.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub size_mib: f64,
    /// `entry computation parameter`, `may-be live out`, `reusable`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
    /// Logical buffers placed in it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logical_buffers: Vec<LogicalBufferEntry>,
    /// The shape all its logical buffers share, if they do.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub common_shape: String,
}

/// `BufferBlockProto`: one rectangle of the allocation timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BufferBlock {
    /// Logical buffer id (-1 for an allocation's frame).
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub logical_buffer_id: i32,
    /// Name.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub name: String,
    /// Offset in bytes (y).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub offset: f64,
    /// Size in bytes (height).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub size: f64,
    /// First event (x).
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub start_step: i32,
    /// Last event.
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub end_step: i32,
    /// Framework op.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub tf_op_name: String,
    /// Allocation category.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub category: String,
    /// Source location.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_info: Option<SourceInfo>,
    /// Shape with layout.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub shape_string: String,
    /// Unpadded size in bytes.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub unpadded_size: f64,
    /// Fill color.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub color: String,
}

/// XProf's `PreprocessResult`, fields in proto field-number order as XProf's JSON writes
/// them; zero values are omitted as proto3 JSON does.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreprocessResult {
    /// Heap size (MiB) before each event, plus the final size.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub heap_sizes: Vec<f64>,
    /// Same without padding.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpadded_heap_sizes: Vec<f64>,
    /// Heap objects at the peak, in program order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_heap: Vec<HeapObject>,
    /// Heap objects at the peak, largest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_heap_by_size: Vec<HeapObject>,
    /// Life span of every simulated buffer, by logical buffer id.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub logical_buffer_spans: BTreeMap<i32, BufferSpan>,
    /// Position in `max_heap_by_size` of each `max_heap` entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub max_heap_to_by_size: Vec<i32>,
    /// Position in `max_heap` of each `max_heap_by_size` entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_size_to_max_heap: Vec<i32>,
    /// Module name.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub module_name: String,
    /// Entry computation name.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub entry_computation_name: String,
    /// Peak heap size (MiB), indefinite allocations included.
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub peak_heap_mib: f64,
    /// Unpadded heap size at the peak (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub peak_unpadded_heap_mib: f64,
    /// Event index of the peak.
    #[serde(skip_serializing_if = "is_zero_i32")]
    pub peak_heap_size_position: i32,
    /// Entry parameters (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub entry_computation_parameters_mib: f64,
    /// Non-reusable allocations (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub non_reusable_mib: f64,
    /// Maybe-live-out allocations (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub maybe_live_out_mib: f64,
    /// Allocations with indefinite lifetime.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub indefinite_lifetimes: Vec<AllocationEntry>,
    /// All allocations of the color (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub total_buffer_allocation_mib: f64,
    /// Indefinite allocations of the color (MiB).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub indefinite_buffer_allocation_mib: f64,
    /// Instruction of each event (empty after the last).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hlo_instruction_names: Vec<String>,
    /// Largest scoped VMEM allocation (MiB; memory color 1 only).
    #[serde(skip_serializing_if = "is_zero_f64")]
    pub max_scoped_vmem_allocation_mib: f64,
    /// Instruction making it.
    #[serde(skip_serializing_if = "is_empty_str")]
    pub max_scoped_vmem_instruction_name: String,
    /// Blocks of the allocation timeline.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub buffer_blocks: Vec<BufferBlock>,
    /// The allocation timeline as a Graphviz (neato) drawing; not part of the JSON (XProf
    /// writes its empty entry URL there), see [`timeline_html`].
    #[serde(skip)]
    pub allocation_timeline_dot: String,
}

impl Report for PreprocessResult {
    /// XProf's body: the proto JSON of `PreprocessResult` (keys sorted, as the value
    /// prints them).
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(json_of(self).to_string())
    }

    /// The result's serde form, which is XProf's proto JSON (the UI reads it as it is).
    fn to_json(&self) -> Value {
        json_of(self)
    }

    /// The module's peak: its figures, and the buffers live at it, largest first.
    fn tables(&self) -> Vec<Table> {
        use oxprof_report::{ColumnKind::*, NumberFormat::*};
        let mut table = Table::new("peak_buffers")
            .fact("module_name", self.module_name.as_str())
            .fact("peak_heap_mib", format!("{:.2}", self.peak_heap_mib))
            .fact("peak_unpadded_heap_mib", format!("{:.2}", self.peak_unpadded_heap_mib))
            .fact("entry_computation_parameters_mib", format!("{:.2}", self.entry_computation_parameters_mib))
            .fact("maybe_live_out_mib", format!("{:.2}", self.maybe_live_out_mib))
            .fact("total_buffer_allocation_mib", format!("{:.2}", self.total_buffer_allocation_mib))
            .rows_described("buffers live at the peak, largest first", Some(PEAK_BUFFERS_SHOWN))
            .column("buffer", "Buffer", Text, Shortest)
            .column("size_mib", "Size (MiB)", Number, Fixed(2))
            .column("unpadded_mib", "Unpadded (MiB)", Number, Fixed(2))
            .column("instruction", "Instruction", Text, Shortest)
            .column("op_code", "Op code", Text, Shortest)
            .column("category", "Category", Text, Shortest)
            .column("framework_op", "Framework op", Text, Shortest);
        for object in &self.max_heap_by_size {
            table.push_row(vec![
                CellValue::Text(object.label.clone()),
                CellValue::Number(object.logical_buffer_size_mib),
                CellValue::Number(object.unpadded_shape_mib),
                CellValue::Text(object.instruction_name.clone()),
                CellValue::Text(object.op_code.clone()),
                CellValue::Text(object.group_name.clone()),
                CellValue::Text(object.tf_op_name.clone()),
            ]);
        }
        vec![table]
    }

    fn xprof_body_json(&self) -> Option<Value> {
        Some(json_of(self))
    }
}

/// Buffers listed for people (the report has them all).
const PEAK_BUFFERS_SHOWN: usize = 50;

/// `BytesToMiB`.
fn mib(bytes: i64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// `BufferAllocationStruct::IsIndefinite`: lives for the whole program. XProf 2.24.2
/// leaves thread-local allocations out (its outputs show them neither as indefinite
/// lifetimes nor in the peak), unlike the later source that adds `is_thread_local`.
fn is_indefinite(a: &BufferAllocation) -> bool {
    a.is_entry_computation_parameter || a.is_constant || a.maybe_live_out
}

/// `IsReusable`.
fn is_reusable(a: &BufferAllocation) -> bool {
    !a.is_thread_local && !a.is_tuple
}

/// `BufferAllocationStruct::category`.
fn category(a: &BufferAllocation) -> &'static str {
    if a.is_entry_computation_parameter {
        "Parameter"
    } else if a.maybe_live_out {
        "Output"
    } else if a.is_thread_local {
        "Thread-local"
    } else if a.is_constant {
        "Constant"
    } else {
        "Temporary"
    }
}

/// `ResolveShapeIndex`: the subshape at the *last* element of the index of the top-level
/// tuple (XProf's historical behaviour), else the whole shape.
fn resolve_shape_index<'a>(shape: &'a Shape, index: &[i64]) -> &'a Shape {
    index.last().and_then(|&i| usize::try_from(i).ok()).and_then(|i| shape.tuple_shapes.get(i)).unwrap_or(shape)
}

/// `ShapeUtil::GetSubshape` along the whole index (the shape itself if the index leaves
/// the tuple tree).
fn subshape<'a>(shape: &'a Shape, index: &[i64]) -> &'a Shape {
    let mut s = shape;
    for &i in index {
        match usize::try_from(i).ok().and_then(|i| s.tuple_shapes.get(i)) {
            Some(sub) => s = sub,
            None => return shape,
        }
    }
    s
}

/// Size of a shape without layout padding: elements × element size for arrays, a pointer
/// per element for tuples.
fn unpadded_byte_size(shape: &Shape) -> i64 {
    if shape.is_tuple() {
        POINTER_SIZE.saturating_mul(shape.tuple_shapes.len() as i64)
    } else if shape.element_type == primitive::TOKEN {
        0
    } else if shape.element_type == primitive::OPAQUE_TYPE {
        POINTER_SIZE
    } else {
        shape.elements().saturating_mul(primitive::byte_size(shape.element_type))
    }
}

fn shape_description(shape: &Shape) -> String {
    let mut out = String::new();
    print_shape_with_layout(shape, &mut out);
    out
}

/// `GetSourceInfo` on an instruction proto: the metadata's file and line with the stack
/// when there is a file, else the innermost stack frame's `file:line`, else nothing.
fn source_info(instr: &HloInstruction, index: Option<&StackFrameIndex>) -> Option<SourceInfo> {
    let stack = index.map(|i| build_stack_frames(i, instr.metadata.stack_frame_id)).unwrap_or_default();
    let md = &instr.metadata;
    if !md.source_file.is_empty() {
        return Some(SourceInfo { file_name: md.source_file.clone(), line_number: md.source_line, stack_frame: stack });
    }
    let first = stack.split('\n').next().unwrap_or("");
    let parts: Vec<&str> = first.split(':').collect();
    if stack.is_empty() || parts.len() < 2 {
        return None;
    }
    let file = parts.first().copied().unwrap_or("");
    if file.is_empty() {
        return None;
    }
    let line = parts.get(1).and_then(|l| l.parse::<i32>().ok()).unwrap_or(-1);
    Some(SourceInfo { file_name: file.to_string(), line_number: line, stack_frame: stack })
}

/// `BuildStackFrames`: `file:line:column` per frame from `frame_id` (1-based) outwards,
/// joined by newlines; unknown files are empty and unknown numbers -1.
fn build_stack_frames(index: &StackFrameIndex, mut frame_id: i32) -> String {
    let mut lines: Vec<String> = Vec::new();
    let at = |id: i32| usize::try_from(id).ok().and_then(|i| i.checked_sub(1));
    while frame_id > 0 && lines.len() <= index.stack_frames.len() {
        let Some(&(location_id, parent)) = at(frame_id).and_then(|i| index.stack_frames.get(i)) else { break };
        frame_id = parent;
        let (mut file, mut line, mut column) = ("", -1, -1);
        if let Some(&(file_id, _, l, c)) = at(location_id).and_then(|i| index.file_locations.get(i)) {
            line = l;
            column = c;
            if let Some(f) = at(file_id).and_then(|i| index.file_names.get(i)) {
                file = f;
            }
        }
        lines.push(format!("{file}:{line}:{column}"));
    }
    lines.join("\n")
}

/// A logical buffer placed in an allocation (`LogicalBufferStruct`), with the replay's
/// reference count, sharing link and life span.
struct BufferState<'a> {
    proto: &'a LogicalBuffer,
    allocation: usize,
    instruction: &'a HloInstruction,
    offset: i64,
    shape: &'a Shape,
    unpadded_size: i64,
    span: Option<(u64, u64)>,
    ref_count: i64,
    /// Slot of the buffer whose memory this one shares.
    canonical: Option<usize>,
}

impl BufferState<'_> {
    fn name_with_shape_index(&self) -> String {
        let index = &self.proto.shape_index;
        if index.is_empty() {
            self.instruction.name.clone()
        } else {
            let parts: Vec<String> = index.iter().map(i64::to_string).collect();
            format!("{}{{{}}}", self.instruction.name, parts.join(","))
        }
    }
}

/// The buffer assignment indexed as `HloProtoBufferWrapper` indexes it.
struct Wrapper<'a> {
    module: &'a HloModule,
    assignment: &'a BufferAssignment,
    /// Allocations, one per index (a repeated index replaces the earlier one in place).
    allocations: Vec<&'a BufferAllocation>,
    /// Heap simulator trace of each allocation (same positions as `allocations`).
    trace_of_allocation: Vec<Option<usize>>,
    buffers: Vec<BufferState<'a>>,
    slot_by_id: HashMap<i64, usize>,
}

/// Longest sharing chain followed (guards against cycles in bad data).
const MAX_CHAIN: usize = 1 << 16;

impl<'a> Wrapper<'a> {
    fn new(module: &'a HloModule, assignment: &'a BufferAssignment) -> Wrapper<'a> {
        let mut instruction_by_id: HashMap<i64, &HloInstruction> = HashMap::new();
        for computation in &module.computations {
            for instruction in &computation.instructions {
                instruction_by_id.insert(instruction.id, instruction);
            }
        }
        let mut proto_by_id: HashMap<i64, &LogicalBuffer> = HashMap::new();
        for buffer in &assignment.logical_buffers {
            proto_by_id.insert(buffer.id, buffer);
        }
        let mut allocations: Vec<&BufferAllocation> = Vec::new();
        let mut position_by_index: HashMap<i64, usize> = HashMap::new();
        let mut buffers: Vec<BufferState> = Vec::new();
        let mut slot_by_id: HashMap<i64, usize> = HashMap::new();
        for allocation in &assignment.buffer_allocations {
            let position = *position_by_index.entry(allocation.index).or_insert_with(|| {
                allocations.push(allocation);
                allocations.len() - 1
            });
            if let Some(slot) = allocations.get_mut(position) {
                *slot = allocation;
            }
            for &(id, offset, _) in &allocation.assigned {
                let Some(proto) = proto_by_id.get(&id).copied() else { continue };
                let Some(instruction) = instruction_by_id.get(&proto.instruction_id).copied() else { continue };
                let state = BufferState {
                    proto,
                    allocation: position,
                    instruction,
                    offset,
                    shape: resolve_shape_index(&instruction.shape, &proto.shape_index),
                    unpadded_size: unpadded_byte_size(subshape(&instruction.shape, &proto.shape_index)),
                    span: None,
                    ref_count: 0,
                    canonical: None,
                };
                match slot_by_id.get(&id) {
                    Some(&slot) => {
                        if let Some(existing) = buffers.get_mut(slot) {
                            *existing = state;
                        }
                    }
                    None => {
                        slot_by_id.insert(id, buffers.len());
                        buffers.push(state);
                    }
                }
            }
        }
        let mut trace_of_allocation = vec![None; allocations.len()];
        for (i, trace) in assignment.heap_simulator_traces.iter().enumerate() {
            let Some(first) = trace.events.first() else { continue };
            let Some(&slot) = slot_by_id.get(&first.buffer_id) else { continue };
            if let Some(position) = buffers.get(slot).map(|b| b.allocation)
                && let Some(t) = trace_of_allocation.get_mut(position)
            {
                *t = Some(i);
            }
        }
        Wrapper { module, assignment, allocations, trace_of_allocation, buffers, slot_by_id }
    }

    /// Positions of the allocations of a color, in order.
    fn allocations_of(&self, color: i64) -> Vec<usize> {
        (0..self.allocations.len()).filter(|&i| self.allocations.get(i).is_some_and(|a| a.color == color)).collect()
    }

    fn allocation(&self, position: usize) -> Option<&'a BufferAllocation> {
        self.allocations.get(position).copied()
    }

    fn slot(&self, id: i64) -> Option<usize> {
        self.slot_by_id.get(&id).copied()
    }

    /// `GetHeapSimulatorTraceId`: the trace of the color's first temporary allocation that
    /// has one, else the trace with most events of that color.
    fn heap_simulator_trace_id(&self, color: i64) -> Option<usize> {
        for position in self.allocations_of(color) {
            let Some(a) = self.allocation(position) else { continue };
            if is_indefinite(a) {
                continue;
            }
            if let Some(Some(t)) = self.trace_of_allocation.get(position) {
                return Some(*t);
            }
        }
        let mut best = None;
        let mut best_count = 0usize;
        for (i, trace) in self.assignment.heap_simulator_traces.iter().enumerate() {
            let count = trace
                .events
                .iter()
                .filter(|e| {
                    self.slot(e.buffer_id).and_then(|s| self.buffers.get(s)).is_some_and(|b| b.proto.color == color)
                })
                .count();
            if count > best_count {
                best = Some(i);
                best_count = count;
            }
        }
        best
    }

    /// `get_canonical_buffer`: the end of the sharing chain.
    fn root(&self, mut slot: usize) -> usize {
        for _ in 0..MAX_CHAIN {
            match self.buffers.get(slot).and_then(|b| b.canonical) {
                Some(next) => slot = next,
                None => break,
            }
        }
        slot
    }

    /// `inc`: counts a reference on the root of the chain.
    fn inc(&mut self, slot: usize) -> i64 {
        let root = self.root(slot);
        self.buffers.get_mut(root).map_or(0, |b| {
            b.ref_count += 1;
            b.ref_count
        })
    }

    /// `dec`.
    fn dec(&mut self, slot: usize) -> i64 {
        let root = self.root(slot);
        self.buffers.get_mut(root).map_or(0, |b| {
            b.ref_count -= 1;
            b.ref_count
        })
    }
}

/// `HeapSimulatorStats`: the replay's running state and results.
#[derive(Default)]
struct SimulatorStats {
    heap_size: i64,
    unpadded_heap_size: i64,
    peak_heap_size: i64,
    peak_unpadded_heap_size: i64,
    /// Live canonical buffer ids in program order.
    live: Vec<i64>,
    peak_live: Vec<i64>,
    heap_timeline: Vec<i64>,
    unpadded_timeline: Vec<i64>,
    name_timeline: Vec<String>,
    peak_position: i64,
    seen_buffers: HashSet<usize>,
    seen_allocations: HashSet<usize>,
    canonical_to_display: HashMap<i64, i64>,
    peak_canonical_to_display: HashMap<i64, i64>,
    event_count: u64,
}

impl SimulatorStats {
    fn last_index(&self) -> u64 {
        (self.heap_timeline.len() as u64).wrapping_sub(1)
    }

    /// `IncreaseMemoryUsage`.
    fn increase(&mut self, wrapper: &mut Wrapper, slot: usize, init_span: bool) {
        let last = self.last_index();
        let event_count = self.event_count;
        let Some(buffer) = wrapper.buffers.get_mut(slot) else { return };
        self.live.push(buffer.proto.id);
        self.heap_size += buffer.proto.size;
        self.unpadded_heap_size += buffer.unpadded_size;
        if self.heap_size > self.peak_heap_size {
            self.peak_heap_size = self.heap_size;
            self.peak_position = last as i64;
            self.peak_unpadded_heap_size = self.unpadded_heap_size;
            self.peak_live = self.live.clone();
            self.peak_canonical_to_display = self.canonical_to_display.clone();
        }
        if init_span {
            buffer.span = Some((last, event_count.wrapping_sub(1)));
        }
    }

    /// `DecreaseMemoryUsage`.
    fn decrease(&mut self, wrapper: &mut Wrapper, slot: usize) -> Result<(), String> {
        let Some(buffer) = wrapper.buffers.get(slot) else { return Ok(()) };
        let id = buffer.proto.id;
        self.live.retain(|&b| b != id);
        self.heap_size -= buffer.proto.size;
        if self.heap_size < 0 {
            return Err(format!("Heap size should be non-negative, but get: {}", self.heap_size));
        }
        self.unpadded_heap_size -= buffer.unpadded_size;
        Ok(())
    }
}

/// `ProcessHeapSimulatorTrace`: replays the color's trace (nothing when it has none).
fn process_heap_simulator_trace(wrapper: &mut Wrapper, color: i64, stats: &mut SimulatorStats) -> Result<(), String> {
    let Some(trace_id) = wrapper.heap_simulator_trace_id(color) else { return Ok(()) };
    let assignment = wrapper.assignment;
    let Some(trace) = assignment.heap_simulator_traces.get(trace_id) else { return Ok(()) };
    stats.event_count = trace.events.len() as u64;
    for event in &trace.events {
        stats.heap_timeline.push(stats.heap_size);
        stats.unpadded_timeline.push(stats.unpadded_heap_size);
        stats.name_timeline.push(event.instruction_name.clone());
        let Some(slot) = wrapper.slot(event.buffer_id) else { continue };
        stats.seen_buffers.insert(slot);
        if let Some(b) = wrapper.buffers.get(slot) {
            stats.seen_allocations.insert(b.allocation);
        }
        match event.kind {
            heap_event_kind::ALLOC => {
                wrapper.inc(slot);
                stats.increase(wrapper, slot, true);
            }
            heap_event_kind::FREE => {
                let ref_count = wrapper.dec(slot);
                if ref_count < 0 {
                    return Err(format!("Buffer {}is freed multiple times.", event.buffer_id));
                }
                let last = stats.last_index();
                if ref_count == 0 {
                    // The memory is released. The canonical buffer's life ends here unless
                    // a sharer reused its memory after it was freed: then the canonical
                    // life ended at that earlier release and the sharer's ends at its own
                    // FREE (XProf 2.24.2's spans).
                    let root = wrapper.root(slot);
                    stats.decrease(wrapper, root)?;
                    let root_id = wrapper.buffers.get(root).map_or(0, |b| b.proto.id);
                    if !stats.canonical_to_display.contains_key(&root_id)
                        && let Some(span) = wrapper.buffers.get_mut(root).and_then(|b| b.span.as_mut())
                    {
                        span.1 = last;
                    }
                }
                // A sharer's own life ends when it is freed.
                if let Some(b) = wrapper.buffers.get_mut(slot)
                    && b.canonical.is_some()
                    && let Some(span) = b.span.as_mut()
                {
                    span.1 = last;
                }
            }
            heap_event_kind::SHARE_WITH => {
                let Some(canonical) = wrapper.slot(event.share_with_canonical_id) else { continue };
                if let Some(b) = wrapper.buffers.get_mut(slot) {
                    b.canonical = Some(canonical);
                }
                let ref_count = wrapper.inc(canonical);
                if ref_count == 1 {
                    let root = wrapper.root(canonical);
                    let root_id = wrapper.buffers.get(root).map_or(0, |b| b.proto.id);
                    stats.canonical_to_display.insert(root_id, event.buffer_id);
                    let span = (stats.last_index(), stats.event_count.wrapping_sub(1));
                    if let Some(b) = wrapper.buffers.get_mut(slot) {
                        b.span = Some(span);
                    }
                    stats.increase(wrapper, root, false);
                }
            }
            other => return Err(format!("Unhandled event kind: {other}")),
        }
    }
    stats.heap_timeline.push(stats.heap_size);
    stats.unpadded_timeline.push(stats.unpadded_heap_size);
    stats.name_timeline.push(String::new());
    if stats.seen_allocations.len() != 1 {
        return Err(format!(
            "All heap simulation should work out of a single buffer allocation, actual seen_buffer_allocations.size():{}",
            stats.seen_allocations.len()
        ));
    }
    Ok(())
}

/// `PeakUsageSnapshot`: the heap objects live at the peak.
struct PeakSnapshot {
    objects: Vec<HeapObject>,
    indefinite_bytes: i64,
    small_bytes: i64,
    next_color: i32,
    color_of_buffer: HashMap<i64, i32>,
    small_buffer_size: i64,
}

impl PeakSnapshot {
    fn add(&mut self, wrapper: &Wrapper, slot: usize) {
        let Some(buffer) = wrapper.buffers.get(slot) else { return };
        if buffer.proto.size < self.small_buffer_size {
            self.small_bytes += buffer.proto.size;
            return;
        }
        self.color_of_buffer.insert(buffer.proto.id, self.next_color);
        let shape = shape_description(buffer.shape);
        let instr = buffer.instruction;
        let category = wrapper.allocation(buffer.allocation).map_or("", category);
        self.objects.push(HeapObject {
            numbered: self.next_color,
            label: format!("{}: {} # {}", instr.name, shape, instr.metadata.op_name),
            logical_buffer_id: buffer.proto.id as i32,
            logical_buffer_size_mib: mib(buffer.proto.size),
            unpadded_shape_mib: mib(buffer.unpadded_size),
            instruction_name: buffer.name_with_shape_index(),
            shape_string: shape,
            tf_op_name: instr.metadata.op_name.clone(),
            group_name: category.to_string(),
            op_code: instr.opcode.clone(),
            source_info: source_info(instr, wrapper.module.stack_frame_index.as_ref()),
        });
        self.next_color += 1;
    }
}

/// `LogicalBuffersWithIndefiniteLifetime`: per indefinite allocation of the color, its
/// largest logical buffer (first of equal sizes; none if all are empty).
fn indefinite_buffers(wrapper: &Wrapper, color: i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for position in wrapper.allocations_of(color) {
        let Some(allocation) = wrapper.allocation(position) else { continue };
        if !is_indefinite(allocation) {
            continue;
        }
        let mut best = None;
        let mut best_size = 0i64;
        for &(id, _, _) in &allocation.assigned {
            let Some(slot) = wrapper.slot(id) else { continue };
            let Some(b) = wrapper.buffers.get(slot) else { continue };
            // Sizes compare as size_t in XProf: negative sizes are huge.
            if (b.proto.size as u64) > (best_size as u64) {
                best_size = b.proto.size;
                best = Some(slot);
            }
        }
        if let Some(slot) = best {
            out.push((position, slot));
        }
    }
    out
}

/// `NoteSpecialAllocations` plus the indefinite-lifetime table.
fn note_special_allocations(wrapper: &Wrapper, color: i64, result: &mut PreprocessResult) {
    let (mut parameters, mut non_reusable, mut live_out, mut total, mut indefinite) = (0i64, 0i64, 0i64, 0i64, 0i64);
    for position in wrapper.allocations_of(color) {
        let Some(a) = wrapper.allocation(position) else { continue };
        // `ComputeTotalAllocationBytes` leaves thread-local allocations out.
        if !a.is_thread_local {
            total += a.size;
        }
        if a.is_entry_computation_parameter {
            parameters += a.size;
        }
        if !is_reusable(a) {
            non_reusable += a.size;
        }
        if a.maybe_live_out {
            live_out += a.size;
        }
        if is_indefinite(a) {
            indefinite += a.size;
            result.indefinite_lifetimes.push(allocation_entry(wrapper, a));
        }
    }
    result.entry_computation_parameters_mib = mib(parameters);
    result.non_reusable_mib = mib(non_reusable);
    result.maybe_live_out_mib = mib(live_out);
    result.total_buffer_allocation_mib = mib(total);
    result.indefinite_buffer_allocation_mib = mib(indefinite);
}

/// `Convert(BufferAllocationProto)`.
fn allocation_entry(wrapper: &Wrapper, a: &BufferAllocation) -> AllocationEntry {
    let mut attributes = Vec::new();
    if a.is_entry_computation_parameter {
        attributes.push("entry computation parameter".to_string());
    }
    if a.maybe_live_out {
        attributes.push("may-be live out".to_string());
    }
    if is_reusable(a) {
        attributes.push("reusable".to_string());
    }
    let logical_buffers: Vec<LogicalBufferEntry> = a
        .assigned
        .iter()
        .map(|&(id, _, size)| {
            let mut entry = LogicalBufferEntry {
                id: int64_json(id),
                shape: String::new(),
                size_mib: mib(size),
                hlo_name: String::new(),
                shape_index: Vec::new(),
            };
            if let Some(b) = wrapper.slot(id).and_then(|s| wrapper.buffers.get(s)) {
                entry.hlo_name = b.instruction.name.clone();
                entry.shape_index = b.proto.shape_index.iter().map(i64::to_string).collect();
                entry.shape = shape_description(b.shape);
            }
            entry
        })
        .collect();
    let common_shape = match logical_buffers.split_first() {
        Some((first, rest)) if rest.iter().all(|b| b.shape == first.shape) => first.shape.clone(),
        _ => String::new(),
    };
    AllocationEntry { id: int64_json(a.index), size_mib: mib(a.size), attributes, logical_buffers, common_shape }
}

/// `ComputeMaxScopedAllocationBytes`: the largest `used_scoped_memory_configs` entry of
/// the color in any instruction's backend config (memory color 1 only).
fn max_scoped_allocation(module: &HloModule, color: i64) -> (i64, String) {
    if color != 1 {
        return (0, String::new());
    }
    let as_i64 = |v: Option<&serde_json::Value>| -> i64 {
        match v {
            Some(serde_json::Value::Number(n)) => n.as_i64().unwrap_or(0),
            Some(serde_json::Value::String(s)) => s.parse().unwrap_or(0),
            _ => 0,
        }
    };
    let mut best = (0i64, String::new());
    for computation in &module.computations {
        for instruction in &computation.instructions {
            let Ok(json) = serde_json::from_slice::<serde_json::Value>(&instruction.backend_config) else { continue };
            let Some(configs) = json.get("used_scoped_memory_configs").and_then(|v| v.as_array()) else { continue };
            for entry in configs {
                if as_i64(entry.get("memory_space")) == color {
                    let size = as_i64(entry.get("size"));
                    if size > best.0 {
                        best = (size, instruction.name.clone());
                    }
                }
            }
        }
    }
    best
}

/// Sorts heap objects largest first with the element moves of libstdc++'s `std::sort`, so
/// equal sizes end up where XProf puts them.
fn sort_by_size_desc(order: &mut [usize], objects: &[HeapObject]) {
    let key = |i: usize| objects.get(i).map_or(0.0, |o| o.logical_buffer_size_mib);
    std_sort(order, &|a: &usize, b: &usize| key(*a) > key(*b));
}

/// The allocation timeline's blocks (`ConvertAllocationTimeline`; the DOT drawing is
/// not produced, XProf's JSON replaces it by an empty URL).
fn allocation_timeline(wrapper: &Wrapper, color: i64, colors: &HashMap<i64, i32>, result: &mut PreprocessResult) {
    let positions = wrapper.allocations_of(color);
    let traces = &wrapper.assignment.heap_simulator_traces;
    let mut offsets: Vec<i64> = Vec::new();
    let (mut total_y, mut total_x) = (0i64, 0usize);
    for &position in &positions {
        let Some(a) = wrapper.allocation(position) else { continue };
        if is_indefinite(a) {
            continue;
        }
        let Some(Some(trace)) = wrapper.trace_of_allocation.get(position) else { continue };
        offsets.push(total_y);
        total_y += a.size;
        if let Some(t) = traces.get(*trace) {
            total_x = total_x.max(t.events.len());
        }
    }
    if total_y == 0 || total_x == 0 {
        return;
    }
    let scale_x = TIMELINE_EXTENT / total_x as f64;
    let scale_y = TIMELINE_EXTENT / total_y as f64;
    let mut node_id = 0usize;
    // `add_rect` numbers only the rectangles that are drawn (at least a point each way).
    let drawn = |width: u64, height: i64| !((width as f64) * scale_x < 1.0 || (height as u64 as f64) * scale_y < 1.0);
    let mut rects: Vec<String> = Vec::new();
    // `add_rect`: a fixed-size box centred on the block, sizes in inches.
    let mut add_rect = |node_id: usize,
                        x: u64,
                        y: u64,
                        width: u64,
                        height: u64,
                        tooltip: &str,
                        color: &str,
                        label: &str| {
        let (w, h) = (width as f64 * scale_x, height as f64 * scale_y);
        let (cx, cy) = ((x as f64 + width as f64 / 2.0) * scale_x, (y as f64 + height as f64 / 2.0) * scale_y);
        let fontsize = (h * FONT_SIZE_TO_HEIGHT).clamp(MIN_FONT_SIZE, MAX_FONT_SIZE);
        let label = fitting_label(label, w, h, fontsize);
        rects.push(format!(
            "\"{node_id}\" [tooltip=\"{tooltip}\", pos=\"{cx:.2},{cy:.2}!\", width=\"{:.4}\", height=\"{:.4}\", fixedsize=true, color=\"{color}\", fontsize={fontsize:.1}, label=\"{label}\"];",
            w / POINTS_PER_INCH,
            h / POINTS_PER_INCH
        ));
    };
    let mut next_offset = 0usize;
    for &position in &positions {
        let Some(a) = wrapper.allocation(position) else { continue };
        if is_indefinite(a) {
            continue;
        }
        // XProf 2.24.2 draws only the allocations the heap simulator traced (no frames
        // for thread-local ones), so the offsets stay aligned.
        if !matches!(wrapper.trace_of_allocation.get(position), Some(Some(_))) {
            continue;
        }
        let offset = offsets.get(next_offset).copied().unwrap_or(0);
        next_offset += 1;
        result.buffer_blocks.push(BufferBlock {
            logical_buffer_id: -1,
            name: category(a).to_string(),
            offset: offset as f64,
            size: a.size as f64,
            start_step: 0,
            end_step: total_x as i32,
            tf_op_name: String::new(),
            category: category(a).to_string(),
            source_info: None,
            shape_string: String::new(),
            unpadded_size: 0.0,
            color: "#ffffff".to_string(),
        });
        if drawn(total_x as u64, a.size) {
            let tooltip =
                format!("buffer_allocation_id:{}\nsize:{}\nbuffer_counts:{}\n", a.index, a.size, a.assigned.len());
            add_rect(node_id, 0, offset as u64, total_x as u64, a.size as u64, &tooltip, "#ffffffff", "");
            node_id += 1;
        }
        for &(id, _, _) in &a.assigned {
            let Some(b) = wrapper.slot(id).and_then(|s| wrapper.buffers.get(s)) else { continue };
            let Some(span) = b.span else { continue };
            let width = span.1.wrapping_sub(span.0);
            let y = offset.wrapping_add(b.offset);
            let mut color = BUFFER_COLORS[node_id % BUFFER_COLORS.len()];
            if let Some(&c) = colors.get(&b.proto.id) {
                color = BUFFER_COLORS[(c as usize) % BUFFER_COLORS.len()];
            }
            let instr = b.instruction;
            result.buffer_blocks.push(BufferBlock {
                logical_buffer_id: b.proto.id as i32,
                name: b.name_with_shape_index(),
                offset: y as u64 as f64,
                size: b.proto.size as u64 as f64,
                start_step: span.0 as i32,
                end_step: span.1 as i32,
                tf_op_name: instr.metadata.op_name.clone(),
                category: wrapper.allocation(b.allocation).map_or("", category).to_string(),
                source_info: source_info(instr, wrapper.module.stack_frame_index.as_ref()),
                shape_string: shape_description(b.shape),
                unpadded_size: b.unpadded_size as u64 as f64,
                color: color.to_string(),
            });
            if drawn(width, b.proto.size) {
                let tooltip = format!(
                    "buffer_id:{}\nhlo_op:{}\nshape:{}\nsize:{}\nunpadded_size:{}\noffset:{}\nspan:({},{})",
                    b.proto.id,
                    instr.name,
                    shape_description(b.shape),
                    b.proto.size,
                    b.unpadded_size,
                    b.offset,
                    span.0,
                    span.1
                );
                add_rect(node_id, span.0, y as u64, width, b.proto.size as u64, &tooltip, color, &instr.name);
                node_id += 1;
            }
        }
    }
    result.allocation_timeline_dot = format!(
        "graph G {{\n epsilon=0.5 \n inputscale=72 \n node [shape=box,style=filled,fontname=\"Arial\",margin=\"0.02,0.02\"];\n  {}\n}}",
        rects.join("\n")
    );
}

/// `GetFittingLabel`: the label if it fits the box at the font size, else cut with `...`,
/// else nothing.
fn fitting_label(label: &str, width: f64, height: f64, fontsize: f64) -> String {
    if label.is_empty() {
        return String::new();
    }
    let char_width = FONT_WIDTH_SCALE * fontsize;
    let usable_height = height - 2.0 * GRAPH_MARGIN_POINTS;
    let usable_width = width - 2.0 * GRAPH_MARGIN_POINTS;
    if usable_height < FONT_HEIGHT_SCALE * fontsize || usable_width < char_width {
        return String::new();
    }
    let max_chars = (usable_width / char_width) as usize;
    if label.len() <= max_chars {
        return label.to_string();
    }
    if max_chars > ELLIPSIS.len() {
        let mut cut = max_chars - ELLIPSIS.len();
        while !label.is_char_boundary(cut) {
            cut -= 1;
        }
        return format!("{}{ELLIPSIS}", &label[..cut]);
    }
    String::new()
}

/// XProf's page drawing the allocation timeline (`RenderTimelineGraph`: the DOT in its
/// Graphviz-in-the-browser HTML, neato layout), or its "no timeline" page.
pub fn timeline_html(result: &PreprocessResult) -> String {
    if result.allocation_timeline_dot.is_empty() {
        return NO_TIMELINE_HTML.to_string();
    }
    super::graphviz_html::wrap_dot_in_html(&result.allocation_timeline_dot, "neato")
}

const NO_TIMELINE_HTML: &str = "<html><body style=\"font-family: sans-serif; padding: 20px;\"><h2>No memory allocation timeline available</h2><p>There is no memory activity data to display for this timeline.</body></html>";

/// `ConvertHloProtoToPreprocessResult`: the memory viewer's data for one module and
/// memory color. Errors carry XProf's messages (a trace freeing a buffer twice, a heap
/// going negative, a trace spanning several allocations).
pub fn preprocess(
    module: &HloModule,
    assignment: &BufferAssignment,
    options: MemoryViewerOptions,
) -> Result<PreprocessResult, String> {
    let color = options.memory_color;
    let mut wrapper = Wrapper::new(module, assignment);
    let mut stats = SimulatorStats::default();
    process_heap_simulator_trace(&mut wrapper, color, &mut stats)
        .map_err(|e| format!("Failed to process heap simulator trace: {e}"))?;

    let mut snapshot = PeakSnapshot {
        objects: Vec::new(),
        indefinite_bytes: 0,
        small_bytes: 0,
        next_color: 0,
        color_of_buffer: HashMap::new(),
        small_buffer_size: options.small_buffer_size,
    };
    for (position, slot) in indefinite_buffers(&wrapper, color) {
        snapshot.indefinite_bytes += wrapper.allocation(position).map_or(0, |a| a.size);
        if color == 0 {
            snapshot.add(&wrapper, slot);
        }
    }
    for &id in &stats.peak_live {
        let display = stats.peak_canonical_to_display.get(&id).copied().unwrap_or(id);
        let Some(slot) = wrapper.slot(display) else { break };
        snapshot.add(&wrapper, slot);
    }
    if snapshot.small_bytes != 0 {
        snapshot.objects.push(HeapObject {
            numbered: snapshot.next_color,
            label: format!("small (<{} bytes)", options.small_buffer_size),
            logical_buffer_id: -1,
            logical_buffer_size_mib: mib(snapshot.small_bytes),
            unpadded_shape_mib: 0.0,
            instruction_name: String::new(),
            shape_string: String::new(),
            tf_op_name: String::new(),
            group_name: String::new(),
            op_code: String::new(),
            source_info: None,
        });
        snapshot.next_color += 1;
    }

    let mut result = PreprocessResult {
        module_name: module.name.clone(),
        entry_computation_name: module.entry_computation_name.clone(),
        ..Default::default()
    };
    let mut by_size: Vec<usize> = (0..snapshot.objects.len()).collect();
    sort_by_size_desc(&mut by_size, &snapshot.objects);
    let mut to_by_size = vec![0i32; by_size.len()];
    for (rank, &object) in by_size.iter().enumerate() {
        if let Some(slot) = to_by_size.get_mut(object) {
            *slot = rank as i32;
        }
    }
    result.max_heap_to_by_size = to_by_size;
    result.by_size_to_max_heap = by_size.iter().map(|&i| i as i32).collect();
    result.max_heap_by_size = by_size.iter().filter_map(|&i| snapshot.objects.get(i).cloned()).collect();
    result.max_heap = snapshot.objects;

    let add = mib(snapshot.indefinite_bytes);
    result.heap_sizes = stats.heap_timeline.iter().map(|&b| mib(b) + add).collect();
    result.unpadded_heap_sizes = stats.unpadded_timeline.iter().map(|&b| mib(b) + add).collect();
    result.hlo_instruction_names = stats.name_timeline.clone();
    result.peak_heap_mib = mib(stats.peak_heap_size) + add;
    result.peak_unpadded_heap_mib = mib(stats.peak_unpadded_heap_size) + add;
    result.peak_heap_size_position = stats.peak_position as i32;
    for &slot in &stats.seen_buffers {
        let Some(b) = wrapper.buffers.get(slot) else { continue };
        if let Some((start, limit)) = b.span {
            result
                .logical_buffer_spans
                .insert(b.proto.id as i32, BufferSpan { start: start as i32, limit: limit as i32 });
        }
    }
    note_special_allocations(&wrapper, color, &mut result);
    let (scoped, scoped_name) = max_scoped_allocation(module, color);
    if scoped > 0 {
        result.max_scoped_vmem_allocation_mib = mib(scoped);
        result.max_scoped_vmem_instruction_name = scoped_name;
    }
    allocation_timeline(&wrapper, color, &snapshot.color_of_buffer, &mut result);
    Ok(result)
}

/// Below this many elements libstdc++'s `std::sort` finishes with insertion sort.
const SORT_THRESHOLD: usize = 16;

/// libstdc++'s `std::sort` (introsort: median-of-three quicksort down to 16 elements, then
/// one insertion sort), moving elements exactly as it does so that ties land in the same
/// places. The heap-sort fallback for a too deep recursion is replaced by a stable sort
/// (it needs 2·log2(n) bad pivots in a row). Scans are bounds-checked, so an inconsistent
/// comparator cannot run past the slice.
pub(crate) fn std_sort<T: Copy>(v: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let depth = 2 * (usize::BITS - 1 - n.leading_zeros()) as usize;
    introsort_loop(v, 0, n, depth, less);
    final_insertion_sort(v, less);
}

fn introsort_loop<T: Copy>(
    v: &mut [T],
    first: usize,
    mut last: usize,
    mut depth: usize,
    less: &dyn Fn(&T, &T) -> bool,
) {
    while last - first > SORT_THRESHOLD {
        if depth == 0 {
            if let Some(part) = v.get_mut(first..last) {
                part.sort_by(|a, b| {
                    if less(a, b) {
                        std::cmp::Ordering::Less
                    } else if less(b, a) {
                        std::cmp::Ordering::Greater
                    } else {
                        std::cmp::Ordering::Equal
                    }
                });
            }
            return;
        }
        depth -= 1;
        let cut = partition_pivot(v, first, last, less);
        introsort_loop(v, cut, last, depth, less);
        last = cut;
    }
}

fn partition_pivot<T: Copy>(v: &mut [T], first: usize, last: usize, less: &dyn Fn(&T, &T) -> bool) -> usize {
    let mid = first + (last - first) / 2;
    move_median_to_first(v, first, first + 1, mid, last - 1, less);
    unguarded_partition(v, first + 1, last, first, less)
}

fn move_median_to_first<T: Copy>(
    v: &mut [T],
    result: usize,
    a: usize,
    b: usize,
    c: usize,
    less: &dyn Fn(&T, &T) -> bool,
) {
    let lt = |x: usize, y: usize| match (v.get(x), v.get(y)) {
        (Some(p), Some(q)) => less(p, q),
        _ => false,
    };
    let pick = if lt(a, b) {
        if lt(b, c) {
            b
        } else if lt(a, c) {
            c
        } else {
            a
        }
    } else if lt(a, c) {
        a
    } else if lt(b, c) {
        c
    } else {
        b
    };
    if result < v.len() && pick < v.len() {
        v.swap(result, pick);
    }
}

fn unguarded_partition<T: Copy>(
    v: &mut [T],
    mut first: usize,
    mut last: usize,
    pivot: usize,
    less: &dyn Fn(&T, &T) -> bool,
) -> usize {
    let Some(&p) = v.get(pivot) else { return first };
    loop {
        while first < v.len() && v.get(first).is_some_and(|x| less(x, &p)) {
            first += 1;
        }
        if last == 0 {
            return first;
        }
        last -= 1;
        while last > 0 && v.get(last).is_some_and(|x| less(&p, x)) {
            last -= 1;
        }
        if first >= last {
            return first;
        }
        v.swap(first, last);
        first += 1;
    }
}

/// `__unguarded_linear_insert`: moves `v[at]` left past greater elements.
fn linear_insert<T: Copy>(v: &mut [T], mut at: usize, less: &dyn Fn(&T, &T) -> bool) {
    let Some(&value) = v.get(at) else { return };
    while at > 0 {
        let Some(&prev) = v.get(at - 1) else { break };
        if !less(&value, &prev) {
            break;
        }
        if let Some(slot) = v.get_mut(at) {
            *slot = prev;
        }
        at -= 1;
    }
    if let Some(slot) = v.get_mut(at) {
        *slot = value;
    }
}

/// `__insertion_sort` on `v[..end]`: an element smaller than the first is rotated to the
/// front, others are inserted linearly.
fn insertion_sort<T: Copy>(v: &mut [T], end: usize, less: &dyn Fn(&T, &T) -> bool) {
    for i in 1..end.min(v.len()) {
        let (Some(&x), Some(&front)) = (v.get(i), v.first()) else { break };
        if less(&x, &front) {
            if let Some(part) = v.get_mut(0..=i) {
                part.rotate_right(1);
            }
        } else {
            linear_insert(v, i, less);
        }
    }
}

fn final_insertion_sort<T: Copy>(v: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    if v.len() > SORT_THRESHOLD {
        insertion_sort(v, SORT_THRESHOLD, less);
        for i in SORT_THRESHOLD..v.len() {
            linear_insert(v, i, less);
        }
    } else {
        insertion_sort(v, v.len(), less);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_hlo::{HeapSimulatorEvent, HeapSimulatorTrace, HloComputation};

    fn instruction(name: &str, id: i64, elements: i64) -> HloInstruction {
        HloInstruction {
            name: name.into(),
            opcode: if id == 1 { "parameter".into() } else { "fusion".into() },
            id,
            shape: Shape { element_type: primitive::F32, dimensions: vec![elements], ..Default::default() },
            ..Default::default()
        }
    }

    fn buffer(id: i64, instruction_id: i64, size: i64) -> LogicalBuffer {
        LogicalBuffer { id, size, instruction_id, ..Default::default() }
    }

    fn event(kind: i32, buffer_id: i64, share_with: i64) -> HeapSimulatorEvent {
        HeapSimulatorEvent {
            kind,
            buffer_id,
            share_with_canonical_id: share_with,
            instruction_name: format!("i{buffer_id}"),
            ..Default::default()
        }
    }

    /// A parameter (16 KiB, indefinite) and a 64 KiB temporary allocation whose trace is
    ///
    /// ```text
    /// event        0 ALLOC a  1 ALLOC b  2 FREE a  3 SHARE c→a  4 FREE c  5 FREE b
    /// heap before  0          32K        64K       32K          64K       32K      (end 0)
    /// a: [0,2]   b: [1,5]   c reuses a's memory: [3,4]; the peak (64K) is first reached
    /// at event 1 with a and b live.
    /// ```
    fn example() -> (HloModule, BufferAssignment) {
        let module = HloModule {
            name: "m".into(),
            entry_computation_name: "main".into(),
            computations: vec![HloComputation {
                name: "main".into(),
                instructions: vec![
                    instruction("p", 1, 4096),
                    instruction("a", 2, 8192),
                    instruction("b", 3, 8192),
                    instruction("c", 4, 8192),
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let assignment = BufferAssignment {
            logical_buffers: vec![
                buffer(10, 1, 16384),
                buffer(11, 2, 32768),
                buffer(12, 3, 32768),
                buffer(13, 4, 32768),
            ],
            buffer_allocations: vec![
                BufferAllocation {
                    index: 0,
                    size: 16384,
                    is_entry_computation_parameter: true,
                    assigned: vec![(10, 0, 16384)],
                    ..Default::default()
                },
                BufferAllocation {
                    index: 1,
                    size: 65536,
                    assigned: vec![(11, 0, 32768), (12, 32768, 32768), (13, 0, 32768)],
                    ..Default::default()
                },
            ],
            heap_simulator_traces: vec![HeapSimulatorTrace {
                events: vec![
                    event(heap_event_kind::ALLOC, 11, 0),
                    event(heap_event_kind::ALLOC, 12, 0),
                    event(heap_event_kind::FREE, 11, 0),
                    event(heap_event_kind::SHARE_WITH, 13, 11),
                    event(heap_event_kind::FREE, 13, 0),
                    event(heap_event_kind::FREE, 12, 0),
                ],
                ..Default::default()
            }],
        };
        (module, assignment)
    }

    #[test]
    fn replays_the_heap_and_snapshots_the_peak() {
        let (module, assignment) = example();
        let r = preprocess(&module, &assignment, MemoryViewerOptions::default()).unwrap();
        let kib = |k: f64| k / 1024.0;
        let expected: Vec<f64> = [0.0, 32.0, 64.0, 32.0, 64.0, 32.0, 0.0].iter().map(|&k| kib(k) + kib(16.0)).collect();
        assert_eq!(r.heap_sizes, expected);
        assert_eq!(r.peak_heap_mib, kib(80.0));
        assert_eq!(r.peak_heap_size_position, 1);
        assert_eq!(r.hlo_instruction_names, ["i11", "i12", "i11", "i13", "i13", "i12", ""]);
        // The parameter first, then the buffers live at the peak in program order.
        let ids: Vec<i32> = r.max_heap.iter().map(|o| o.logical_buffer_id).collect();
        assert_eq!(ids, [10, 11, 12]);
        assert_eq!(r.max_heap[0].group_name, "Parameter");
        assert_eq!(r.max_heap[1].label, "a: f32[8192] # ");
        // Largest first; equal sizes keep their order.
        assert_eq!(r.by_size_to_max_heap, [1, 2, 0]);
        assert_eq!(r.max_heap_to_by_size, [2, 0, 1]);
        // a ends at its FREE; c, reusing a's memory, lives from its SHARE to its FREE.
        let span = |id: i32| r.logical_buffer_spans.get(&id).copied().map(|s| (s.start, s.limit));
        assert_eq!((span(11), span(12), span(13)), (Some((0, 2)), Some((1, 5)), Some((3, 4))));
        assert_eq!(r.indefinite_lifetimes.len(), 1);
        assert_eq!(r.indefinite_lifetimes[0].attributes, ["entry computation parameter", "reusable"]);
        assert_eq!((r.total_buffer_allocation_mib, r.indefinite_buffer_allocation_mib), (kib(80.0), kib(16.0)));
        // One frame for the temporary allocation, then its buffers.
        let blocks: Vec<(i32, i32, i32)> =
            r.buffer_blocks.iter().map(|b| (b.logical_buffer_id, b.start_step, b.end_step)).collect();
        assert_eq!(blocks, [(-1, 0, 6), (11, 0, 2), (12, 1, 5), (13, 3, 4)]);
    }

    #[test]
    fn bad_traces_are_errors_not_panics() {
        let (module, mut assignment) = example();
        assignment.heap_simulator_traces[0].events.push(event(heap_event_kind::FREE, 12, 0));
        let err = preprocess(&module, &assignment, MemoryViewerOptions::default()).unwrap_err();
        assert!(err.contains("freed multiple times"), "{err}");
        // A buffer sharing with itself (a cycle) and unknown ids are tolerated.
        let (module, mut assignment) = example();
        assignment.heap_simulator_traces[0].events.insert(0, event(heap_event_kind::SHARE_WITH, 12, 12));
        assignment.heap_simulator_traces[0].events.push(event(heap_event_kind::ALLOC, 999, 0));
        let _ = preprocess(&module, &assignment, MemoryViewerOptions::default());
        // No buffer assignment at all: just the module's names.
        let r = preprocess(&module, &BufferAssignment::default(), MemoryViewerOptions::default()).unwrap();
        assert_eq!((r.module_name.as_str(), r.heap_sizes.len()), ("m", 0));
    }

    #[test]
    fn sorts_ties_like_libstdcxx() {
        // `std::sort` (GCC 13) of these keys, largest first, moves the indices so:
        let keys = [3, 1, 3, 2, 2, 5, 1, 3, 4, 4, 2, 1, 5, 3, 2, 1, 4, 3, 2, 5, 1, 1, 3, 2, 4, 5, 3, 2, 1, 4];
        let mut order: Vec<usize> = (0..keys.len()).collect();
        std_sort(&mut order, &|a: &usize, b: &usize| keys[*a] > keys[*b]);
        let expected = [
            25, 19, 12, 5, 24, 16, 9, 8, 29, 7, 13, 0, 17, 2, 26, 22, 10, 27, 4, 14, 3, 18, 23, 15, 28, 21, 20, 11, 6,
            1,
        ];
        assert_eq!(order, expected);
        // Short inputs are sorted stably (insertion sort).
        let mut small = vec![0usize, 1, 2, 3];
        std_sort(&mut small, &|a: &usize, b: &usize| [1, 2, 1, 2][*a] > [1, 2, 1, 2][*b]);
        assert_eq!(small, [1, 3, 0, 2]);
    }
}
