//! XProf's HLO module map (`HloModuleMap` of `HloModuleWrapper`s): the HLO modules of a
//! profile by program id, each instruction viewed the way XProf's `HloInstructionWrapper`
//! shows it (category, framework op, source, deduplicated name, HLO text, fused children)
//! and, on GPU profiles, costed by XProf's GPU cost analysis (`crate::cost`).
//!
//! Modules are linked once when the map is built; the cost analysis of a module runs the
//! first time one of its instructions is asked for its performance, and each instruction's
//! strings are computed on first use.

use crate::cost::{self, Analysis, Props};
use crate::graph::{Graph, Node, Opcode};
use crate::print;
use crate::{HloModule, hlo_modules};
use oxprof_model::XSpace;
use oxprof_model::schema::GPU_PLANE_PREFIX;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// `OpSourceInfo` of an HLO instruction.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HloSourceInfo {
    /// Source file.
    pub file: String,
    /// Source line (-1 when unknown).
    pub line: i32,
    /// Stack frames, one per line.
    pub stack_frame: String,
}

/// One entry of an HLO instruction's memory access breakdown (`PerformanceInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HloMemoryAccess {
    /// Read (else write).
    pub is_read: bool,
    /// Memory space (1 = HBM).
    pub memory_space: u64,
    /// Bytes per occurrence.
    pub bytes_accessed: i64,
}

/// The cost analysis of an HLO instruction (`PerformanceInfoWrapper`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HloPerformance {
    /// `DeviceFlops()`.
    pub device_flops: i64,
    /// `ModelFlops()`.
    pub model_flops: i64,
    /// `bytes_accessed()`.
    pub bytes_accessed: i64,
    /// `memory_accessed_breakdown()`.
    pub memory_accessed_breakdown: Vec<HloMemoryAccess>,
}

/// XProf's memory space mapping for GPUs: its HBM (1) is XLA's default memory space (0).
const XPROF_HBM: u64 = 1;
const XLA_DEFAULT_MEMORY_SPACE: i64 = 0;

/// Which cost analysis XProf attaches to the modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CostAnalysis {
    /// None (TPU profiles): FLOPs and bytes are 0, no performance info.
    None,
    /// `XprofGpuCostAnalysis` (GPU profiles).
    Gpu,
}

/// A module shared by the views of its instructions.
struct ModuleCore {
    graph: Graph,
    cost_analysis: CostAnalysis,
    /// Properties per instruction, computed on first use; `None` without a cost analysis
    /// (TPU, or the analysis failed on this module).
    costs: OnceLock<Option<Vec<Option<Props>>>>,
}

impl ModuleCore {
    fn costs(&self) -> Option<&[Option<Props>]> {
        self.costs
            .get_or_init(|| match self.cost_analysis {
                CostAnalysis::Gpu => Analysis::run(&self.graph),
                CostAnalysis::None => None,
            })
            .as_deref()
    }

    fn props(&self, index: usize) -> Option<&Props> {
        self.costs().and_then(|c| c.get(index)).and_then(Option::as_ref)
    }
}

/// One instruction as XProf's `HloInstructionWrapper` presents it.
pub struct InstructionView {
    core: Arc<ModuleCore>,
    index: usize,
    category: OnceLock<String>,
    expression: OnceLock<String>,
    tf_op_name: OnceLock<String>,
    op_full_name: OnceLock<String>,
    children: OnceLock<Vec<InstructionView>>,
}

impl InstructionView {
    /// `HloInstructionWrapper::source_info()`: `<basename of the metadata's source
    /// file>:<source line>`, empty when the metadata names no file.
    pub fn source_info_text(&self) -> String {
        let Some(n) = self.node() else { return String::new() };
        let md = &n.hlo.metadata;
        if md.source_file.is_empty() {
            return String::new();
        }
        let base = md.source_file.rsplit('/').next().unwrap_or(&md.source_file);
        format!("{base}:{}", md.source_line)
    }

    fn new(core: Arc<ModuleCore>, index: usize) -> Self {
        InstructionView {
            core,
            index,
            category: OnceLock::new(),
            expression: OnceLock::new(),
            tf_op_name: OnceLock::new(),
            op_full_name: OnceLock::new(),
            children: OnceLock::new(),
        }
    }

    fn node(&self) -> Option<&Node> {
        self.core.graph.node(self.index)
    }

    /// `flop_count(hlo)` as an int64 (0 without properties).
    fn flop_count(&self) -> i64 {
        self.core.props(self.index).map_or(0, |p| p.flops as i64)
    }

    /// `bytes_accessed(hlo)` as an int64.
    fn bytes_accessed_count(&self) -> i64 {
        self.core.props(self.index).map_or(0, |p| p.bytes_accessed as i64)
    }
}

/// `ValidHloCost`: -1 (unknown) reads as 0.
fn valid_cost(cost: i64) -> i64 {
    if cost == -1 { 0 } else { cost }
}

/// `HloInstruction::ToCategory`: fusions by kind, convolutions with their dilations, data
/// movement as `data formatting`, elementwise ops as `non-fusion elementwise`, else the
/// opcode.
fn category(graph: &Graph, node: &Node) -> String {
    match node.op {
        Opcode::Fusion => match node.hlo.fusion_kind.as_str() {
            "kLoop" => "loop fusion".into(),
            "kInput" => "input fusion".into(),
            "kOutput" => "output fusion".into(),
            "kCustom" => "custom fusion".into(),
            other => other.to_string(),
        },
        Opcode::Transpose | Opcode::Copy | Opcode::Reshape | Opcode::DynamicReshape => "data formatting".into(),
        Opcode::Convolution => {
            let window = node.hlo.window.as_deref().unwrap_or(&[]);
            let mut category = String::from("convolution");
            if window.iter().any(|d| d.base_dilation != 1) {
                category.push_str(" base-dilated");
            }
            if window.iter().any(|d| d.window_dilation != 1) {
                category.push_str(" window-dilated");
            }
            category
        }
        _ if cost::is_elementwise(graph, node) => "non-fusion elementwise".into(),
        _ => node.hlo.opcode.clone(),
    }
}

/// `TraceMeOp(name, type)`: `name:type`.
fn trace_me_op(name: &str, op_type: &str) -> String {
    format!("{name}:{op_type}")
}

/// `TfOpFullname(op_type, op_name)`: empty when both are; `XLA_Args`/`XLA_Retvals` are
/// their own type.
fn tf_op_fullname(op_type: &str, op_name: &str) -> String {
    let mut op_type = op_type;
    if op_type.is_empty() {
        if op_name.is_empty() {
            return String::new();
        }
        if op_name == "XLA_Args" || op_name == "XLA_Retvals" {
            op_type = op_name;
        }
    }
    trace_me_op(op_name, op_type)
}

impl InstructionView {
    /// Instruction name, e.g. `fusion.3`.
    pub fn name(&self) -> &str {
        self.node().map_or("", |n| n.hlo.name.as_str())
    }

    /// XProf's HLO category, e.g. `loop fusion`, `convolution`.
    pub fn category(&self) -> &str {
        self.category.get_or_init(|| self.node().map(|n| category(&self.core.graph, n)).unwrap_or_default())
    }

    /// Whether the opcode is `parameter` or `tuple` (skipped as fusion children).
    pub fn is_parameter_or_tuple(&self) -> bool {
        self.node().is_some_and(|n| matches!(n.op, Opcode::Parameter | Opcode::Tuple))
    }

    /// `TfOpName()`: the framework op name from the instruction's metadata.
    pub fn tf_op_name(&self) -> &str {
        self.tf_op_name.get_or_init(|| {
            self.node().map(|n| tf_op_fullname(&n.hlo.metadata.op_type, &n.hlo.metadata.op_name)).unwrap_or_default()
        })
    }

    /// `op_full_name()`: `op_name:op_type` of the instruction's metadata.
    pub fn op_full_name(&self) -> &str {
        self.op_full_name.get_or_init(|| {
            self.node().map(|n| trace_me_op(&n.hlo.metadata.op_name, &n.hlo.metadata.op_type)).unwrap_or_default()
        })
    }

    /// `DeduplicatedName()`.
    pub fn deduplicated_name(&self) -> &str {
        self.node().map_or("", |n| n.hlo.metadata.deduplicated_name.as_str())
    }

    /// `Expression()`: the HLO text of the instruction.
    pub fn expression(&self) -> &str {
        self.expression.get_or_init(|| self.node().map(|n| print::expression(&self.core.graph, n)).unwrap_or_default())
    }

    /// `GetSourceInfo`: the metadata's file and line (with the stack) when there is a file,
    /// else the stack's innermost `file:line:column` frame, else nothing (line -1).
    pub fn source_info(&self) -> HloSourceInfo {
        let Some(n) = self.node() else { return HloSourceInfo { line: -1, ..Default::default() } };
        let md = &n.hlo.metadata;
        let stack_frame =
            if md.stack_frame_id != 0 { self.core.graph.op_location_stack(md.stack_frame_id) } else { String::new() };
        if !md.source_file.is_empty() {
            return HloSourceInfo { file: md.source_file.clone(), line: md.source_line, stack_frame };
        }
        let first_line = stack_frame.split('\n').next().unwrap_or("");
        let parts: Vec<&str> = first_line.split(':').collect();
        if !stack_frame.is_empty() && parts.len() >= 2 {
            let line = parts.get(1).and_then(|l| l.trim().parse::<i32>().ok()).unwrap_or(-1);
            return HloSourceInfo { file: parts.first().unwrap_or(&"").to_string(), line, stack_frame };
        }
        HloSourceInfo { line: -1, ..Default::default() }
    }

    /// `flops()` (cost analysis).
    pub fn flops(&self) -> u64 {
        self.flop_count() as u64
    }

    /// `bytes_accessed()` (cost analysis).
    pub fn bytes_accessed(&self) -> u64 {
        self.bytes_accessed_count() as u64
    }

    /// `PerformanceInfoWrapper` of the GPU cost analysis.
    pub fn performance(&self) -> Option<HloPerformance> {
        self.core.costs()?;
        let node = self.node()?;
        let props = self.core.props(self.index);
        let flop_count = self.flop_count();
        let adjustment = props.map_or(0, |p| p.device_flops_adjustment as i64);
        let bytes_accessed = valid_cost(self.bytes_accessed_count());
        let mut memory_accessed_breakdown = Vec::new();
        if bytes_accessed > 0
            && let Some(p) = props
        {
            let read = valid_cost(cost::bytes_read(&self.core.graph, node, p, XLA_DEFAULT_MEMORY_SPACE));
            let written = valid_cost(cost::bytes_written(node, p, XLA_DEFAULT_MEMORY_SPACE));
            for (is_read, bytes) in [(true, read), (false, written)] {
                if bytes > 0 {
                    memory_accessed_breakdown.push(HloMemoryAccess {
                        is_read,
                        memory_space: XPROF_HBM,
                        bytes_accessed: bytes,
                    });
                }
            }
        }
        Some(HloPerformance {
            device_flops: valid_cost(flop_count.wrapping_sub(adjustment)),
            model_flops: valid_cost(flop_count),
            bytes_accessed,
            memory_accessed_breakdown,
        })
    }

    /// `FusedChildren()`: the instructions of the fusion's computation, in list order.
    pub fn fused_children(&self) -> &[InstructionView] {
        self.children.get_or_init(|| {
            let graph = &self.core.graph;
            let Some(node) = self.node() else { return Vec::new() };
            if node.op != Opcode::Fusion {
                return Vec::new();
            }
            let Some(&comp) = node.called.first() else { return Vec::new() };
            let Some(c) = graph.comps.get(comp) else { return Vec::new() };
            if c.fusion_instr != Some(self.index) {
                return Vec::new();
            }
            // XProf loads modules without preserving ids: fused children keep proto order.
            c.proto_order.iter().map(|&i| InstructionView::new(Arc::clone(&self.core), i)).collect()
        })
    }
}

/// The instructions of one module, by name (the first of a name wins).
struct ModuleEntry {
    views: Vec<InstructionView>,
    by_name: HashMap<String, usize>,
}

/// XProf's `HloModuleMap`: modules by program id.
#[derive(Default)]
pub struct HloModuleMap {
    modules: HashMap<u64, ModuleEntry>,
}

impl HloModuleMap {
    /// The map of a host's XSpace, as `ConvertXSpaceToOpStats` builds it: every module of
    /// `/host:metadata` that XLA can load, with the GPU cost analysis when the host has GPU
    /// planes (`/device:GPU:*`).
    pub fn from_space(space: &XSpace) -> Self {
        let is_gpu = space.planes.iter().any(|p| p.name.starts_with(GPU_PLANE_PREFIX));
        let (modules, _undecodable) = hlo_modules(space);
        Self::from_modules(modules, if is_gpu { CostAnalysis::Gpu } else { CostAnalysis::None })
    }

    /// The map of decoded modules (`AddHloProto` for each; the first module of a program id
    /// wins, modules XLA would reject are left out).
    pub fn from_modules(modules: Vec<(u64, HloModule)>, cost_analysis: CostAnalysis) -> Self {
        let mut map = HloModuleMap::default();
        for (program_id, module) in modules {
            if map.modules.contains_key(&program_id) {
                continue;
            }
            let Some(graph) = Graph::build(module) else { continue };
            let mut by_name = HashMap::with_capacity(graph.nodes.len());
            for comp in &graph.comps {
                for &i in &comp.instrs {
                    if let Some(n) = graph.node(i) {
                        by_name.entry(n.hlo.name.clone()).or_insert(i);
                    }
                }
            }
            let core = Arc::new(ModuleCore { graph, cost_analysis, costs: OnceLock::new() });
            let views = (0..core.graph.nodes.len()).map(|i| InstructionView::new(Arc::clone(&core), i)).collect();
            map.modules.insert(program_id, ModuleEntry { views, by_name });
        }
        map
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// Whether there are no modules.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The instruction `name` of program `program_id`, viewed as XProf does.
    pub fn view(&self, program_id: u64, name: &str) -> Option<&InstructionView> {
        let module = self.modules.get(&program_id)?;
        module.by_name.get(name).and_then(|&i| module.views.get(i))
    }
}

#[cfg(test)]
mod tests;
