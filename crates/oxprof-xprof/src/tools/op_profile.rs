//! The op profile tool: the device's HLO ops as a tree (program → category → duplicates
//! → op → fused instructions, or category → … without the program level, or by framework
//! provenance), each node with its time, FLOP utilisation and bandwidth utilisations, with
//! and without IDLE ([`OpProfile`]) → XProf's `op_profile.Profile` proto JSON. Port of
//! `xprof/convert/op_stats_to_op_profile.cc` and `op_profile_builder.cc`.

use crate::op_stats::hardware::parse_hardware_type;
use crate::op_stats::op_metrics_db::{
    children_time_ps, combine_memory_accessed_breakdown, combine_op_metrics, is_idle_op, parse_provenance,
    total_time_ps,
};
use crate::op_stats::{HardwareType, MemoryOperationType, OpMetrics, OpStats, SourceInfo, TpuCoreType};
use crate::tools::op_record::{
    MEMORY_SPACE_HBM, MEMORY_SPACE_ON_CHIP, giga_bytes_per_second_per_core,
    giga_flops_per_second_per_core_normalized_on_dvfs, giga_to_gibi, pico_to_nano, safe_divide, tera_to_giga,
};
use oxprof_grouping::cxx_sort::partial_sort;
use oxprof_report::{Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use oxprof_wire::protobuf_json;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// Children kept per node below the grouping levels (XProf's `op_profile_limit`).
pub const OP_PROFILE_LIMIT: usize = 100;

/// How ops are grouped (`OpProfileGrouping`, request parameter `group_by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// Program, then category (the default).
    #[default]
    ByProgram,
    /// Category only (`group_by=category`).
    ByCategory,
    /// Program, then the framework op path (`group_by=provenance`).
    ByProvenance,
}

impl Grouping {
    /// `GetOpProfileGrouping`: `category`, `provenance`, anything else by program.
    pub fn from_param(group_by: Option<&str>) -> Grouping {
        match group_by {
            Some("category") => Grouping::ByCategory,
            Some("provenance") => Grouping::ByProvenance,
            _ => Grouping::ByProgram,
        }
    }

    fn root_name(self) -> &'static str {
        match self {
            Grouping::ByProgram => "by_program",
            Grouping::ByCategory => "by_category",
            Grouping::ByProvenance => "by_provenance",
        }
    }

    /// The proto field of the tree, with and without IDLE.
    fn fields(self) -> (&'static str, &'static str) {
        match self {
            Grouping::ByProgram => ("byProgram", "byProgramExcludeIdle"),
            Grouping::ByCategory => ("byCategory", "byCategoryExcludeIdle"),
            Grouping::ByProvenance => ("byProvenance", "byProvenanceExcludeIdle"),
        }
    }

    fn requires_program(self) -> bool {
        matches!(self, Grouping::ByProgram | Grouping::ByProvenance)
    }
}

/// `op_profile.Metrics` of a node.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeMetrics {
    /// FLOP utilisation (capped at 1) times the node's share of the total time.
    pub flops: f64,
    /// The same, uncapped.
    pub uncapped_flops: f64,
    /// HBM, on-chip read and on-chip write bandwidth utilisations (capped at 1).
    pub bandwidth_utils: [f64; 3],
    /// Time (ps).
    pub raw_time: f64,
    /// Model FLOPs.
    pub raw_flops: f64,
    /// FLOPs.
    pub bf16_flops: f64,
    /// DVFS-normalised time (ps).
    pub normalized_time_ps: f64,
    /// HBM, on-chip read and on-chip write bytes.
    pub raw_bytes_accessed_array: [f64; 3],
    /// Occurrences.
    pub occurrences: u32,
    /// Time per occurrence (ps).
    pub avg_time_ps: f64,
}

/// `Node.XLAInstruction`: the HLO op a node stands for.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct XlaInstruction {
    /// HLO text.
    pub expression: String,
    /// Framework op.
    pub provenance: String,
    /// HLO category.
    pub category: String,
    /// Set (empty) on multi-op duplicate groups of non-fusion ops, as XProf copies it.
    pub has_layout: bool,
    /// Primitive size in bits.
    pub computation_primitive_size: u32,
    /// Fingerprint.
    pub fingerprint: u64,
    /// Program id.
    pub program_id: u64,
    /// Source location.
    pub source_info: SourceInfo,
    /// Kernel metadata (always "" here, see [`xprof_kernel_metadata`]).
    pub xprof_kernel_metadata: String,
}

/// One node of the tree.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Node {
    /// Program, category, op or group name.
    pub name: String,
    /// Metrics.
    pub metrics: NodeMetrics,
    /// Children after pruning.
    pub children: Vec<Node>,
    /// The HLO op (op nodes and duplicate groups).
    pub xla: Option<XlaInstruction>,
    /// Children before the last pruning.
    pub num_children: i32,
}

/// The `op_profile` report (XProf's `op_profile.Profile`): the two trees of one grouping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpProfile {
    /// The grouping.
    pub grouping: Grouping,
    /// Tree with IDLE.
    pub tree: Node,
    /// Tree without IDLE.
    pub tree_exclude_idle: Node,
    /// The device kind (`ParseHardwareType` of the run's device type).
    pub device_type: HardwareType,
    /// Normalised / raw op time.
    pub agg_dvfs_time_scale_multiplier: f64,
}

/// The `op_profile` tool's JSON body for `op_stats` grouped by `grouping`, as XProf's JSON
/// value.
pub fn op_profile(op_stats: &OpStats, grouping: Grouping) -> Value {
    profile_json(&OpProfile::from_op_stats(op_stats, grouping))
}

/// Ops listed for people (the report has them all).
const TOP_OPS_SHOWN: usize = 50;

impl OpProfile {
    /// The report of `op_stats` grouped by `grouping`, with XProf's child limit.
    pub fn from_op_stats(op_stats: &OpStats, grouping: Grouping) -> OpProfile {
        convert_op_stats_to_op_profile(op_stats, grouping, OP_PROFILE_LIMIT)
    }

    /// The leaves of the tree with IDLE (XLA ops), each with the top-level group it is
    /// under, most time first (ties in depth-first order).
    pub fn ops_by_time(&self) -> Vec<(&Node, &str)> {
        let mut leaves: Vec<(&Node, &str)> = Vec::new();
        for group in &self.tree.children {
            let mut stack = vec![group];
            while let Some(node) = stack.pop() {
                if node.xla.is_some() && node.children.is_empty() {
                    leaves.push((node, group.name.as_str()));
                }
                stack.extend(&node.children);
            }
        }
        leaves.sort_by(|a, b| b.0.metrics.raw_time.total_cmp(&a.0.metrics.raw_time));
        leaves
    }
}

impl Report for OpProfile {
    fn xprof_body(&self) -> XprofBody {
        XprofBody::json(proto_json_text(&profile_json(self)))
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    /// The groups under the root (programs or categories) with their share of the time,
    /// then the XLA ops, most time first, with the FLOP rate and HBM bandwidth
    /// utilizations XProf shows.
    fn tables(&self) -> Vec<Table> {
        use oxprof_report::{ColumnKind::*, NumberFormat::*};
        let total = self.tree.metrics.raw_time;
        let mut groups = Table::new("groups");
        let mut ops = Table::new("ops");
        if total > 0.0 {
            let grouped_by = match self.grouping {
                Grouping::ByProgram => "program",
                Grouping::ByCategory => "category",
                Grouping::ByProvenance => "provenance",
            };
            groups = groups
                .fact("device_type", hardware_type_name(self.device_type))
                .fact("total_time_ms", format!("{:.3}", total / 1e9))
                .fact("grouped_by", grouped_by);
        }
        groups = groups.column("group", "Group", Text, Shortest).column("time_fraction", "Time", Number, Percent(2));
        ops = ops
            .rows_described("ops, most time first", Some(TOP_OPS_SHOWN))
            .column("op", "Op", Text, Shortest)
            .column("category", "Category", Text, Shortest)
            .column("group", "Group", Text, Shortest)
            .column("time_fraction", "Time", Number, Percent(2))
            .column("occurrences", "Occurrences", Integer, Shortest)
            .column("avg_time_us", "Avg time (µs)", Number, Fixed(3))
            .column("flop_rate_utilization", "FLOP rate utilization", Number, Percent(1))
            .column("hbm_bandwidth_utilization", "HBM bandwidth utilization", Number, Percent(1));
        if total <= 0.0 {
            return vec![groups, ops];
        }
        for group in &self.tree.children {
            groups
                .push_row(vec![CellValue::Text(group.name.clone()), CellValue::Number(group.metrics.raw_time / total)]);
        }
        for (op, group) in self.ops_by_time() {
            let m = &op.metrics;
            ops.push_row(vec![
                CellValue::Text(op.name.clone()),
                CellValue::Text(op.xla.as_ref().map_or(String::new(), |x| x.category.clone())),
                CellValue::Text(group.to_string()),
                CellValue::Number(m.raw_time / total),
                CellValue::Int(i64::from(m.occurrences)),
                CellValue::Number(m.avg_time_ps / 1e6),
                CellValue::Number(m.flops),
                CellValue::Number(m.bandwidth_utils[0]),
            ]);
        }
        vec![groups, ops]
    }
}

fn hardware_type_name(hardware: HardwareType) -> &'static str {
    match hardware {
        HardwareType::Unknown => "UNKNOWN_HARDWARE",
        HardwareType::CpuOnly => "CPU_ONLY",
        HardwareType::Gpu => "GPU",
        HardwareType::Tpu => "TPU",
    }
}

/// `ConvertOpStatsToOpProfile`.
pub fn convert_op_stats_to_op_profile(op_stats: &OpStats, grouping: Grouping, limit: usize) -> OpProfile {
    let db = &op_stats.device_op_metrics_db;
    OpProfile {
        grouping,
        tree: build_tree(op_stats, grouping, false, limit),
        tree_exclude_idle: build_tree(op_stats, grouping, true, limit),
        device_type: parse_hardware_type(&op_stats.run_environment.device_type),
        agg_dvfs_time_scale_multiplier: safe_divide(db.normalized_total_op_time_ps as f64, db.total_op_time_ps as f64),
    }
}

/// `xla::ExtractXprofKernelMetadata`: XProf parses the expression as an HLO module and
/// reads the root's `kernel_metadata` frontend attribute; a single instruction never
/// parses as a module, so this is "" (an expression without `xprof_metadata` is "" early).
pub fn xprof_kernel_metadata(_hlo_expression: &str) -> String {
    String::new()
}

/// `BuildOpProfileNodeTree`: every device op (except unsymbolised `region…` ops, and IDLE
/// when excluded) added to a builder, then finalised against the device's peaks.
///
/// XProf 2.24.2 builds (and names) the root even when the database is empty, which is
/// what CPU-only profiles show.
fn build_tree(op_stats: &OpStats, grouping: Grouping, exclude_idle: bool, limit: usize) -> Node {
    let db = &op_stats.device_op_metrics_db;
    let mut builder = Builder::new(grouping, &op_stats.program_id_to_name_map);
    for op in &db.metrics_db {
        if op.name.starts_with("region") || (exclude_idle && is_idle_op(op)) {
            continue;
        }
        builder.add_op(op);
    }
    let perf_env = op_stats.perf_env.clone().unwrap_or_default();
    let peak_gflops = tera_to_giga(perf_env.peak_tera_flops_per_second);
    let peak_bws: Vec<f64> = perf_env.peak_bws_giga_bytes_per_second.iter().map(|&bw| giga_to_gibi(bw)).collect();
    builder.finalize(peak_gflops, &peak_bws, total_time_ps(db, exclude_idle), limit)
}

/// An arena node while building.
#[derive(Default)]
struct BuildNode {
    name: String,
    children: Vec<usize>,
    xla: Option<XlaInstruction>,
    /// The accumulated op metrics (`metrics_` in XProf); `None` for nodes without any.
    acc: Option<OpMetrics>,
    metrics: NodeMetrics,
    num_children: i32,
}

struct CategoryEntry {
    node: usize,
    deduplicated: HashMap<String, usize>,
}

struct ProgramEntry {
    node: usize,
    categories: HashMap<String, CategoryEntry>,
}

/// `OpProfileBuilder` over an arena of nodes (index 0 is the root).
struct Builder<'a> {
    grouping: Grouping,
    program_names: &'a std::collections::BTreeMap<u64, String>,
    nodes: Vec<BuildNode>,
    programs: HashMap<u64, ProgramEntry>,
    categories: HashMap<String, CategoryEntry>,
    /// Categories under provenance leaves, by leaf node.
    provenance_categories: HashMap<usize, HashMap<String, CategoryEntry>>,
    /// Provenance children by parent node and name.
    provenance_children: HashMap<(usize, String), usize>,
}

const ROOT: usize = 0;

/// `UpdateNodeMetrics`: a parent (root, program, provenance) accumulates its ops' self
/// time, and the FLOPs and bytes of innermost ops only.
fn update_node_metrics(child: &OpMetrics, parent: &mut OpMetrics) {
    parent.time_ps = child.self_time_ps.wrapping_add(parent.time_ps);
    parent.normalized_time_ps = child.normalized_time_ps.wrapping_add(parent.normalized_time_ps);
    parent.self_time_ps = child.self_time_ps.wrapping_add(parent.self_time_ps);
    if children_time_ps(child) == 0 {
        parent.flops = child.flops.wrapping_add(parent.flops);
        parent.model_flops = child.model_flops.wrapping_add(parent.model_flops);
        parent.flops_v2 += child.flops_v2;
        parent.model_flops_v2 += child.model_flops_v2;
        parent.bytes_accessed = child.bytes_accessed.wrapping_add(parent.bytes_accessed);
        parent.dma_stall_ps = child.dma_stall_ps.wrapping_add(parent.dma_stall_ps);
        combine_memory_accessed_breakdown(&child.memory_accessed_breakdown, &mut parent.memory_accessed_breakdown);
    }
}

fn is_fusion(category: &str) -> bool {
    category.ends_with(" fusion")
}

/// `PopulateSymbolNode`.
fn symbol_of(op: &OpMetrics) -> XlaInstruction {
    XlaInstruction {
        expression: op.long_name.clone(),
        provenance: op.provenance.clone(),
        category: op.category.clone(),
        has_layout: false,
        computation_primitive_size: op.computation_primitive_size,
        fingerprint: op.fingerprint,
        program_id: op.hlo_module_id,
        source_info: op.source_info.clone().unwrap_or_default(),
        xprof_kernel_metadata: xprof_kernel_metadata(&op.long_name),
    }
}

impl<'a> Builder<'a> {
    fn new(grouping: Grouping, program_names: &'a std::collections::BTreeMap<u64, String>) -> Self {
        let root = BuildNode { name: grouping.root_name().into(), ..Default::default() };
        Builder {
            grouping,
            program_names,
            nodes: vec![root],
            programs: HashMap::new(),
            categories: HashMap::new(),
            provenance_categories: HashMap::new(),
            provenance_children: HashMap::new(),
        }
    }

    fn add_child(&mut self, parent: usize, name: String) -> usize {
        let index = self.nodes.len();
        self.nodes.push(BuildNode { name, ..Default::default() });
        if let Some(p) = self.nodes.get_mut(parent) {
            p.children.push(index);
        }
        index
    }

    fn acc(&mut self, node: usize) -> &mut OpMetrics {
        // Every index handed out exists; the fallback keeps this total.
        if node >= self.nodes.len() {
            self.nodes.resize_with(node + 1, BuildNode::default);
        }
        self.nodes[node].acc.get_or_insert_with(OpMetrics::default)
    }

    /// `GenerateProgramName`: `module(id)`, or `main` for unknown programs.
    fn program_name(&self, program_id: u64) -> String {
        match self.program_names.get(&program_id) {
            Some(name) => format!("{name}({program_id})"),
            None => "main".into(),
        }
    }

    fn program_node(&mut self, program_id: u64) -> usize {
        if let Some(p) = self.programs.get(&program_id) {
            return p.node;
        }
        let name = self.program_name(program_id);
        let node = self.add_child(ROOT, name);
        self.programs.insert(program_id, ProgramEntry { node, categories: HashMap::new() });
        node
    }

    /// `GetOrAddProvenanceParentNode`: walks (creating) the provenance path under the
    /// program (or root), accumulating the op into each node on it.
    fn provenance_leaf(&mut self, op: &OpMetrics, program_node: Option<usize>) -> usize {
        let mut current = program_node.unwrap_or(ROOT);
        for part in parse_provenance(&op.provenance) {
            let key = (current, part);
            let child = match self.provenance_children.get(&key) {
                Some(&c) => c,
                None => {
                    let c = self.add_child(current, key.1.clone());
                    self.provenance_children.insert(key, c);
                    c
                }
            };
            update_node_metrics(op, self.acc(child));
            current = child;
        }
        current
    }

    /// `LookupOrAddCategoryNode` then `LookupOrAddDeduplicatedNode`: the category node
    /// and the duplicate-group node of `op`.
    fn category_and_group(
        &mut self,
        op: &OpMetrics,
        program: Option<u64>,
        provenance_leaf: Option<usize>,
    ) -> (usize, usize) {
        let dedup_name = if op.deduplicated_name.is_empty() { &op.name } else { &op.deduplicated_name };
        let (parent, existing) = match (provenance_leaf, program) {
            (Some(leaf), _) => {
                (leaf, self.provenance_categories.get(&leaf).and_then(|m| m.get(&op.category)).map(|c| c.node))
            }
            (None, Some(id)) => {
                let node = self.programs.get(&id).map_or(ROOT, |p| p.node);
                (node, self.programs.get(&id).and_then(|p| p.categories.get(&op.category)).map(|c| c.node))
            }
            (None, None) => (ROOT, self.categories.get(&op.category).map(|c| c.node)),
        };
        let category_node = match existing {
            Some(node) => node,
            None => {
                let node = self.add_child(parent, op.category.clone());
                let entry = CategoryEntry { node, deduplicated: HashMap::new() };
                match (provenance_leaf, program) {
                    (Some(leaf), _) => {
                        self.provenance_categories.entry(leaf).or_default().insert(op.category.clone(), entry);
                    }
                    (None, Some(id)) => {
                        if let Some(p) = self.programs.get_mut(&id) {
                            p.categories.insert(op.category.clone(), entry);
                        }
                    }
                    (None, None) => {
                        self.categories.insert(op.category.clone(), entry);
                    }
                }
                node
            }
        };
        let existing_group = self
            .category_entry(program, provenance_leaf, &op.category)
            .and_then(|c| c.deduplicated.get(dedup_name).copied());
        let group = match existing_group {
            Some(g) => g,
            None => {
                let g = self.add_child(category_node, dedup_name.clone());
                if let Some(c) = self.category_entry(program, provenance_leaf, &op.category) {
                    c.deduplicated.insert(dedup_name.clone(), g);
                }
                g
            }
        };
        (category_node, group)
    }

    fn category_entry(
        &mut self,
        program: Option<u64>,
        provenance_leaf: Option<usize>,
        category: &str,
    ) -> Option<&mut CategoryEntry> {
        match (provenance_leaf, program) {
            (Some(leaf), _) => self.provenance_categories.get_mut(&leaf)?.get_mut(category),
            (None, Some(id)) => self.programs.get_mut(&id)?.categories.get_mut(category),
            (None, None) => self.categories.get_mut(category),
        }
    }

    /// `AddOpNode`: a leaf for `op` under `parent`, with its fused instructions below.
    fn add_op_node(&mut self, op: &OpMetrics, parent: usize) -> usize {
        let leaf = self.add_child(parent, op.name.clone());
        if let Some(node) = self.nodes.get_mut(leaf) {
            node.xla = Some(symbol_of(op));
        }
        self.insert_fused_instructions(op, leaf);
        leaf
    }

    /// `InsertFusedInstructions`: one node per child op, recursively, each with the
    /// child's own metrics.
    fn insert_fused_instructions(&mut self, op: &OpMetrics, node: usize) {
        let Some(children) = op.children.as_deref() else { return };
        for child in &children.metrics_db {
            let child_node = self.add_child(node, child.name.clone());
            if let Some(n) = self.nodes.get_mut(child_node) {
                n.xla = Some(symbol_of(child));
            }
            combine_op_metrics(child, self.acc(child_node), false);
            if child.children.is_some() {
                self.insert_fused_instructions(child, child_node);
            }
        }
    }

    /// `OpProfileBuilder::AddOp`.
    ///
    /// The root (and the program) accumulate every op via [`update_node_metrics`]. Ops
    /// whose time includes nested ops (while, call, …) stop there unless one of their
    /// children runs on a SparseCore; others get a leaf under category → duplicate group
    /// (IDLE directly under the root), and each of those nodes combines the op's metrics.
    fn add_op(&mut self, op: &OpMetrics) {
        update_node_metrics(op, self.acc(ROOT));
        let mut program = None;
        if !is_idle_op(op) && self.grouping.requires_program() {
            let node = self.program_node(op.hlo_module_id);
            update_node_metrics(op, self.acc(node));
            program = Some((op.hlo_module_id, node));
        }
        let has_children = children_time_ps(op) > 0;
        let has_sparse_core_children = has_children
            && op
                .children
                .as_deref()
                .is_some_and(|c| c.metrics_db.iter().any(|child| child.core_type == TpuCoreType::SparseCore));
        if has_children && !has_sparse_core_children {
            return;
        }
        let grouping_nodes: Vec<usize> = if is_idle_op(op) {
            vec![self.add_op_node(op, ROOT)]
        } else {
            let provenance_leaf = (self.grouping == Grouping::ByProvenance && !op.provenance.is_empty())
                .then(|| self.provenance_leaf(op, program.map(|(_, node)| node)));
            let (category, group) = self.category_and_group(op, program.map(|(id, _)| id), provenance_leaf);
            let leaf = self.add_op_node(op, group);
            vec![category, group, leaf]
        };
        for node in grouping_nodes {
            combine_op_metrics(op, self.acc(node), false);
        }
    }

    /// `Finalize`: metrics of every node, the root's time reset to `total_time_ps`, then
    /// children sorted and pruned (twice, as XProf does) and duplicate groups finalised.
    fn finalize(mut self, peak_gflops: f64, peak_bws: &[f64], total_time_ps: u64, limit: usize) -> Node {
        self.acc(ROOT).time_ps = total_time_ps;
        for node in &mut self.nodes {
            if let Some(acc) = &node.acc {
                node.metrics = node_metrics(acc, peak_gflops, peak_bws, total_time_ps);
            }
        }
        let level = match self.grouping {
            Grouping::ByProgram => 2,
            Grouping::ByCategory => 1,
            Grouping::ByProvenance => 100,
        };
        self.sort_and_prune(ROOT, limit, level);
        self.sort_and_prune(ROOT, limit, level);
        self.finalize_deduplicated(ROOT);
        self.take_tree(ROOT)
    }

    /// `SortAndPruneChildren`: children sorted by time (by FLOPs under fusions), keeping
    /// all of them on the grouping levels and the top `limit` below.
    fn sort_and_prune(&mut self, node: usize, limit: usize, level: i32) {
        let children = match self.nodes.get_mut(node) {
            Some(n) => {
                n.num_children = i32::try_from(n.children.len()).unwrap_or(i32::MAX);
                n.children.clone()
            }
            None => return,
        };
        for &child in &children {
            self.sort_and_prune(child, limit, level - 1);
        }
        let k = if level > 0 { children.len() } else { limit };
        if children.len() <= 1 {
            return;
        }
        let by_flops = self.nodes[node].xla.as_ref().is_some_and(|x| is_fusion(&x.category));
        let nodes = &self.nodes;
        let key = |i: usize| {
            let m = &nodes[i].metrics;
            if by_flops { m.raw_flops } else { m.raw_time }
        };
        let mut order = children;
        let k = k.min(order.len());
        if k > 0 {
            partial_sort(&mut order, k, |a, b| key(*a) > key(*b));
        }
        order.truncate(k);
        self.nodes[node].children = order;
    }

    /// `FinalizeDeduplicatedNodes`: a group (no symbol, all children ops) with one op is
    /// replaced by that op; with several it takes the first op's symbol and is named
    /// "<op> and its duplicate(s)".
    fn finalize_deduplicated(&mut self, node: usize) {
        let Some(n) = self.nodes.get(node) else { return };
        let is_group = !n.children.is_empty()
            && n.xla.is_none()
            && n.children.iter().all(|&c| self.nodes.get(c).is_some_and(|c| c.xla.is_some()));
        if !is_group {
            for child in n.children.clone() {
                self.finalize_deduplicated(child);
            }
            return;
        }
        let first = n.children[0];
        if n.children.len() == 1 {
            let child = std::mem::take(&mut self.nodes[first]);
            self.nodes[node] = child;
            return;
        }
        let top_name = self.nodes[first].name.clone();
        let Some(top) = self.nodes[first].xla.clone() else { return };
        let fusion = is_fusion(&top.category);
        let group_xla = XlaInstruction {
            expression: top.expression,
            category: top.category,
            fingerprint: top.fingerprint,
            program_id: top.program_id,
            source_info: top.source_info,
            xprof_kernel_metadata: top.xprof_kernel_metadata,
            provenance: if fusion { String::new() } else { top.provenance },
            has_layout: !fusion,
            computation_primitive_size: 0,
        };
        let group = &mut self.nodes[node];
        group.name = format!("{top_name} and its duplicate(s)");
        group.xla = Some(group_xla);
    }

    fn take_tree(&mut self, node: usize) -> Node {
        let Some(n) = self.nodes.get_mut(node) else { return Node::default() };
        let children = std::mem::take(&mut n.children);
        let mut out = Node {
            name: std::mem::take(&mut n.name),
            metrics: std::mem::take(&mut n.metrics),
            children: Vec::new(),
            xla: n.xla.take(),
            num_children: n.num_children,
        };
        out.children = children.into_iter().map(|c| self.take_tree(c)).collect();
        out
    }
}

/// `CapUtilization`.
fn cap(utilization: f64) -> f64 {
    utilization.min(1.0)
}

/// `PopulateOpMetricsNode`: a node's displayed metrics from its accumulated op metrics.
///
/// The FLOP utilisation is the DVFS-normalised rate over the peak, weighted by the node's
/// share of `total_time_ps` (the UI divides it back); bandwidth utilisations are HBM
/// (read + write), on-chip read and on-chip write, each over its peak and capped at 1.
fn node_metrics(op: &OpMetrics, peak_gflops: f64, peak_bws: &[f64], total_time_ps: u64) -> NodeMetrics {
    let peak = |index: usize| peak_bws.get(index).copied().unwrap_or(0.0);
    let uncapped = safe_divide(giga_flops_per_second_per_core_normalized_on_dvfs(op), peak_gflops);
    let time_fraction = safe_divide(op.time_ps as f64, total_time_ps as f64);
    let time_ns = pico_to_nano(op.time_ps);
    let gibi_to_giga = |gibi: f64| gibi * ((1u64 << 30) as f64 / 1e9);
    let rate =
        |space: u64, operation: MemoryOperationType| giga_to_gibi(giga_bytes_per_second_per_core(op, space, operation));
    let hbm = rate(MEMORY_SPACE_HBM, MemoryOperationType::Read) + rate(MEMORY_SPACE_HBM, MemoryOperationType::Write);
    let sram_rd = rate(MEMORY_SPACE_ON_CHIP, MemoryOperationType::Read);
    let sram_wr = rate(MEMORY_SPACE_ON_CHIP, MemoryOperationType::Write);
    NodeMetrics {
        flops: cap(uncapped) * time_fraction,
        uncapped_flops: uncapped * time_fraction,
        bandwidth_utils: [
            cap(safe_divide(hbm, peak(0))),
            cap(safe_divide(sram_rd, peak(1))),
            cap(safe_divide(sram_wr, peak(2))),
        ],
        raw_time: op.time_ps as f64,
        raw_flops: op.model_flops_v2,
        bf16_flops: op.flops_v2,
        normalized_time_ps: op.normalized_time_ps as f64,
        raw_bytes_accessed_array: [
            gibi_to_giga(hbm) * time_ns,
            gibi_to_giga(sram_rd) * time_ns,
            gibi_to_giga(sram_wr) * time_ns,
        ],
        occurrences: op.occurrences,
        avg_time_ps: safe_divide(op.time_ps as f64, f64::from(op.occurrences)),
    }
}

/// A proto JSON double: integral values print without a fraction, as protobuf does.
fn proto_double(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        json!(v as i64)
    } else {
        oxprof_wire::datatable::number_json(v)
    }
}

fn metrics_json(m: &NodeMetrics) -> Value {
    json!({
        "flops": proto_double(m.flops),
        "bandwidthUtils": m.bandwidth_utils.iter().map(|&v| proto_double(v)).collect::<Vec<_>>(),
        "rawTime": proto_double(m.raw_time),
        "rawFlops": proto_double(m.raw_flops),
        "rawBytesAccessedArray": m.raw_bytes_accessed_array.iter().map(|&v| proto_double(v)).collect::<Vec<_>>(),
        "occurrences": m.occurrences,
        "avgTimePs": proto_double(m.avg_time_ps),
        "bf16Flops": proto_double(m.bf16_flops),
        "uncappedFlops": proto_double(m.uncapped_flops),
        "normalizedTimePs": proto_double(m.normalized_time_ps),
    })
}

fn xla_json(x: &XlaInstruction) -> Value {
    let mut m = Map::new();
    m.insert("op".into(), json!(""));
    m.insert("expression".into(), json!(x.expression));
    m.insert("provenance".into(), json!(x.provenance));
    m.insert("category".into(), json!(x.category));
    if x.has_layout {
        m.insert("layout".into(), json!({ "dimensions": [] }));
    }
    m.insert("computationPrimitiveSize".into(), json!(x.computation_primitive_size));
    m.insert("fingerprint".into(), json!(x.fingerprint.to_string()));
    m.insert("programId".into(), json!(x.program_id.to_string()));
    m.insert(
        "sourceInfo".into(),
        json!({
            "fileName": x.source_info.file_name,
            "lineNumber": x.source_info.line_number,
            "stackFrame": x.source_info.stack_frame,
        }),
    );
    m.insert("xprofKernelMetadata".into(), json!(x.xprof_kernel_metadata));
    Value::Object(m)
}

/// A node as proto JSON (`always_print_fields_with_no_presence`).
pub fn node_json(node: &Node) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(node.name));
    m.insert("metrics".into(), metrics_json(&node.metrics));
    m.insert("children".into(), Value::Array(node.children.iter().map(node_json).collect()));
    if let Some(x) = &node.xla {
        m.insert("xla".into(), xla_json(x));
    }
    m.insert("numChildren".into(), json!(node.num_children));
    Value::Object(m)
}

/// The profile as XProf's proto JSON.
pub fn profile_json(profile: &OpProfile) -> Value {
    let (with_idle, without_idle) = profile.grouping.fields();
    let mut m = Map::new();
    m.insert(with_idle.into(), node_json(&profile.tree));
    m.insert("deviceType".into(), json!(hardware_type_name(profile.device_type)));
    m.insert(without_idle.into(), node_json(&profile.tree_exclude_idle));
    m.insert("aggDvfsTimeScaleMultiplier".into(), proto_double(profile.agg_dvfs_time_scale_multiplier));
    Value::Object(m)
}

/// The body XProf's server sends for an op profile JSON value (from [`op_profile`]): the
/// protobuf JSON printer's text of the `op_profile.Profile` message, with fields in
/// field-number order, doubles in their shortest round-trip form (integral ones without a
/// fraction, `1e-06` style exponents), and `<`/`>` escaped as `\u003c`/`\u003e`.
pub fn proto_json_text(value: &Value) -> String {
    protobuf_json::print(value, Some(&proto::PROFILE))
}

/// The messages of `plugin/xprof/protobuf/op_profile.proto`: JSON names in field-number
/// order.
mod proto {
    use oxprof_wire::protobuf_json::Field::{Message as Msg, Scalar};
    use oxprof_wire::protobuf_json::Message;

    pub(super) static PROFILE: Message = Message {
        fields: &[
            ("byCategory", Msg(&NODE)),
            ("byProgram", Msg(&NODE)),
            ("deviceType", Scalar),
            ("byCategoryExcludeIdle", Msg(&NODE)),
            ("byProgramExcludeIdle", Msg(&NODE)),
            ("byProvenance", Msg(&NODE)),
            ("byProvenanceExcludeIdle", Msg(&NODE)),
            ("aggDvfsTimeScaleMultiplier", Scalar),
        ],
    };
    static NODE: Message = Message {
        fields: &[
            ("name", Scalar),
            ("metrics", Msg(&METRICS)),
            ("children", Msg(&NODE)),
            ("xla", Msg(&XLA_INSTRUCTION)),
            ("numChildren", Scalar),
        ],
    };
    static METRICS: Message = Message {
        fields: &[
            ("flops", Scalar),
            ("bandwidthUtils", Scalar),
            ("rawTime", Scalar),
            ("rawFlops", Scalar),
            ("rawBytesAccessedArray", Scalar),
            ("occurrences", Scalar),
            ("avgTimePs", Scalar),
            ("bf16Flops", Scalar),
            ("uncappedFlops", Scalar),
            ("normalizedTimePs", Scalar),
        ],
    };
    static XLA_INSTRUCTION: Message = Message {
        fields: &[
            ("op", Scalar),
            ("expression", Scalar),
            ("provenance", Scalar),
            ("category", Scalar),
            ("layout", Msg(&LAYOUT_ANALYSIS)),
            ("computationPrimitiveSize", Scalar),
            ("fingerprint", Scalar),
            ("programId", Scalar),
            ("sourceInfo", Msg(&SOURCE_INFO)),
            ("xprofKernelMetadata", Scalar),
        ],
    };
    static SOURCE_INFO: Message =
        Message { fields: &[("fileName", Scalar), ("lineNumber", Scalar), ("stackFrame", Scalar)] };
    static LAYOUT_ANALYSIS: Message = Message { fields: &[("dimensions", Scalar)] };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::device_op_metrics::device_op_metrics_db;
    use crate::op_stats::environment::{device_planes, run_environment};
    use crate::op_stats::kernel_stats::kernel_stats_db;
    use crate::tools::{hlo_stats, kernel_stats, roofline_model};
    use oxprof_hlo::{CostAnalysis, HloModuleMap};
    use oxprof_hlo::{HloComputation, HloInstruction, HloModule};
    use oxprof_testkit::XSpaceBuilder;

    #[test]
    fn proto_json_text_prints_like_protobuf() {
        // Fields in field-number order per message, integral doubles without a fraction.
        let value = json!({"deviceType": "TPU",
            "byProgram": {"numChildren": 2, "name": "a<b>", "metrics": {"rawTime": 1.0, "flops": 0.25}}});
        assert_eq!(
            proto_json_text(&value),
            r#"{"byProgram":{"name":"a\u003cb\u003e","metrics":{"flops":0.25,"rawTime":1},"numChildren":2},"deviceType":"TPU"}"#
        );
    }

    use oxprof_testkit::hlo::f32_shape as f32s;

    fn instr(name: &str, opcode: &str, id: i64, operands: &[i64]) -> HloInstruction {
        oxprof_testkit::hlo::hlo_instr(name, opcode, id, operands, f32s(&[256]))
    }

    fn param(name: &str, id: i64, number: i64) -> HloInstruction {
        HloInstruction { parameter_number: number, ..instr(name, "parameter", id, &[]) }
    }

    /// Module `jit_f` (program 1): `fusion.1 = multiply(add(x, x), x)` (a loop fusion with
    /// two fused children), `dot.2` and `dot.3` (two dots), `copy.4`.
    fn module() -> HloModule {
        let fused = HloComputation {
            name: "fused_computation".into(),
            id: 10,
            root_id: 3,
            instructions: vec![
                param("p", 1, 0),
                instr("add.0", "add", 2, &[1, 1]),
                instr("mul.0", "multiply", 3, &[2, 1]),
            ],
            ..Default::default()
        };
        let mut fusion = instr("fusion.1", "fusion", 21, &[20]);
        fusion.fusion_kind = "kLoop".into();
        fusion.called_computation_ids = vec![10];
        let dot = |name: &str, id: i64, op_name: &str| {
            let mut d = instr(name, "dot", id, &[20, 20]);
            d.metadata = oxprof_hlo::OpMetadata { op_name: op_name.into(), ..Default::default() };
            d.shape = f32s(&[]);
            d.dot_dimension_numbers = Some(oxprof_hlo::DotDimensionNumbers {
                lhs_contracting_dimensions: vec![0],
                rhs_contracting_dimensions: vec![0],
                ..Default::default()
            });
            d
        };
        let entry = HloComputation {
            name: "main".into(),
            id: 11,
            root_id: 24,
            instructions: vec![
                param("x", 20, 0),
                fusion,
                dot("dot.2", 22, "jit(f)/dot_a"),
                dot("dot.3", 23, "jit(f)/dot_b"),
                instr("copy.4", "copy", 24, &[20]),
            ],
            ..Default::default()
        };
        HloModule {
            name: "jit_f".into(),
            entry_computation_id: 11,
            computations: vec![fused, entry],
            ..Default::default()
        }
    }

    /// OpStats of a one-GPU XSpace, with `module` (when given) as the HLO of program 1.
    fn op_stats_of(bytes: &[u8], module: Option<HloModule>) -> OpStats {
        let space = oxprof_xspace::decode_xspace(bytes).unwrap();
        let map = HloModuleMap::from_modules(module.into_iter().map(|m| (1, m)).collect(), CostAnalysis::Gpu);
        let (planes, _) = device_planes(&space);
        let mut op_stats = OpStats {
            run_environment: run_environment(&space),
            device_op_metrics_db: device_op_metrics_db(&space, None, Some(&map)),
            kernel_stats_db: kernel_stats_db(planes, Some(&map)),
            ..Default::default()
        };
        op_stats.program_id_to_name_map.insert(1, "jit_f".into());
        op_stats
    }

    // Stream #1, one GPU (ns):
    //   0    10        30   40        80   90       130  140   150
    //   |fus k1|  |fus k2 20|  |gemm (dot.2) 40|  |gemm (dot.3) 40|  |copy|  |x|
    //   fusion.1 runs two kernels; the same kernel `gemm` serves dot.2 and dot.3; the
    //   copy kernel has no kernel_details; `x` names an op of a program without HLO.
    fn device_plane() -> Vec<u8> {
        let details = "regs:32 static_shared:0 dynamic_shared:128 grid:8,1,1 block:256,1,1";
        XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(1, "Stream #1", 0, |l| {
                    let mut kernel =
                        |name: &str, start_ns: i64, ns: i64, hlo_op: &str, program: i64, details: Option<&str>| {
                            let e = l
                                .event(name, start_ns * 1000, ns * 1000)
                                .stat("hlo_op", hlo_op)
                                .stat("program_id", program);
                            if let Some(d) = details {
                                e.stat("kernel_details", d);
                            }
                        };
                    kernel("loop_fusion_k1", 0, 10, "fusion.1", 1, Some(details));
                    kernel("loop_fusion_k2", 10, 20, "fusion.1", 1, Some(details));
                    kernel("gemm", 40, 40, "dot.2", 1, Some(details));
                    kernel("gemm", 90, 40, "dot.3", 1, Some(details));
                    kernel("copy_kernel", 140, 10, "copy.4", 1, None);
                    kernel("x_kernel", 150, 10, "x", 2, Some(details));
                });
            })
            .to_bytes()
    }

    fn find<'a>(node: &'a Node, name: &str) -> Option<&'a Node> {
        if node.name == name {
            return Some(node);
        }
        node.children.iter().find_map(|c| find(c, name))
    }

    #[test]
    fn device_plane_through_every_device_tool() {
        let op_stats = op_stats_of(&device_plane(), Some(module()));

        // kernel_stats: `gemm` under two ops is two rows; the copy kernel (no
        // kernel_details) and the kernel of the unknown program are not listed.
        let kernels = kernel_stats::kernel_stats(&op_stats);
        let rows: Vec<(String, String)> = kernels["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["c"][1]["v"].as_str().unwrap().to_string(), r["c"][9]["v"].as_str().unwrap().to_string()))
            .collect();
        let gemm_ops: Vec<&str> = rows.iter().filter(|r| r.0 == "gemm").map(|r| r.1.as_str()).collect();
        assert_eq!(gemm_ops.len(), 2, "{rows:?}");
        assert_ne!(gemm_ops[0], gemm_ops[1]);
        assert!(!rows.iter().any(|r| r.0 == "copy_kernel"), "{rows:?}");
        // Kernels of a program without HLO are still listed (with no op name).
        assert!(rows.contains(&("x_kernel".into(), String::new())), "{rows:?}");
        assert_eq!(kernels["rows"][0]["c"][3]["v"], 128.0);

        // op_profile: program jit_f(1) → categories; on GPU, XProf's OpStats carry no
        // fused instructions, so the fusion is a leaf; the copy without kernel_details is
        // an op all the same.
        let profile = convert_op_stats_to_op_profile(&op_stats, Grouping::ByProgram, OP_PROFILE_LIMIT);
        let program = find(&profile.tree, "jit_f(1)").expect("program node");
        let fusion = find(program, "fusion.1").expect("fusion node");
        assert_eq!(fusion.metrics.occurrences, 2);
        assert_eq!(fusion.metrics.raw_time, 30_000.0);
        assert!(fusion.children.is_empty());
        assert_eq!(fusion.xla.as_ref().map(|x| x.category.as_str()), Some("loop fusion"));
        assert!(find(program, "copy.4").is_some());
        assert!(find(&profile.tree, "x").is_none());
        let by_category = convert_op_stats_to_op_profile(&op_stats, Grouping::ByCategory, OP_PROFILE_LIMIT);
        assert_eq!(by_category.tree.name, "by_category");
        assert!(find(&by_category.tree, "jit_f(1)").is_none());
        assert!(find(&by_category.tree, "fusion.1").is_some());
        // IDLE only in the tree with idle time.
        assert!(find(&profile.tree, "IDLE").is_some());
        assert!(find(&profile.tree_exclude_idle, "IDLE").is_none());

        // hlo_stats: one ranked row per op that ran, no IDLE.
        let hlo = hlo_stats::hlo_stats_records(&op_stats);
        let names: Vec<&str> = hlo.iter().map(|r| r.hlo_expression.as_str()).collect();
        assert_eq!(hlo.len(), 4, "{names:?}");
        assert_eq!(hlo[0].rank.rank, 1);
        assert!(hlo.windows(2).all(|w| w[0].times.total_self_time_in_us >= w[1].times.total_self_time_in_us));

        // roofline_model: program row, then the ops, for both infeed/outfeed settings.
        let roofline = roofline_model::roofline_model_database(&op_stats);
        assert_eq!(roofline.records.len(), 2 * 5);
        assert_eq!(roofline.records[0].hlo_name, "Program");
        assert!(roofline.records[0].include_infeed_outfeed && !roofline.records[5].include_infeed_outfeed);
        assert!(hlo_stats::device_tool_notes("op_profile", Some(hlo_stats::DeviceTool::XlaOps), &op_stats).is_empty());
    }

    #[test]
    fn missing_hlo_protos_degrade_with_a_note() {
        let op_stats = op_stats_of(&device_plane(), None);
        // XProf skips kernels whose HLO op it cannot find: only IDLE is left.
        let profile = convert_op_stats_to_op_profile(&op_stats, Grouping::ByProgram, OP_PROFILE_LIMIT);
        assert_eq!(profile.tree.name, "IDLE", "a root with the IDLE op only is replaced by it, as in XProf");
        assert!(profile.tree_exclude_idle.children.is_empty());
        assert!(hlo_stats::hlo_stats_records(&op_stats).is_empty());
        let notes = hlo_stats::device_tool_notes("hlo_stats", Some(hlo_stats::DeviceTool::XlaOps), &op_stats);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("no HLO"), "{notes:?}");
        assert!(
            hlo_stats::device_tool_notes("kernel_stats", Some(hlo_stats::DeviceTool::Kernels), &op_stats).is_empty()
        );
    }

    #[test]
    fn cpu_only_profile_is_empty_as_in_xprof() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles/jax_train/xprof_out");
        let read =
            |name: &str| -> Value { serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap() };
        let cpu = OpStats {
            run_environment: crate::op_stats::RunEnvironment {
                device_type: "CPU".into(),
                hardware_type: HardwareType::CpuOnly,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(op_profile(&cpu, Grouping::ByProgram), read("op_profile.json"));
        assert_eq!(op_profile(&cpu, Grouping::ByCategory), read("op_profile.by_category.json"));
        assert_eq!(kernel_stats::kernel_stats(&cpu), read("kernel_stats.json"));
        assert_eq!(hlo_stats::hlo_stats(&cpu), read("hlo_stats.json"));
        assert_eq!(roofline_model::roofline_model(&cpu), read("roofline_model.json"));
        assert_eq!(hlo_stats::device_tool_notes("roofline_model", Some(hlo_stats::DeviceTool::XlaOps), &cpu).len(), 1);
    }

    /// A fusion's fused instructions (TPU OpStats carry them, nested ones too) hang below
    /// its op node with their own FLOPs, sorted by FLOPs; the fusion counts once in its
    /// category, and an op whose time includes nested ops (a while loop) only in the root.
    #[test]
    fn fusions_with_children() {
        let child = |name: &str, flops: f64, children: Option<Vec<OpMetrics>>| OpMetrics {
            name: name.into(),
            category: "non-fusion elementwise".into(),
            occurrences: 1,
            model_flops_v2: flops,
            flops_v2: flops,
            children: children.map(|c| Box::new(crate::op_stats::OpMetricsDb { metrics_db: c, ..Default::default() })),
            ..Default::default()
        };
        let fusion = OpMetrics {
            name: "fusion.1".into(),
            long_name: "%fusion.1 = f32[8] fusion(f32[8] %p), kind=kLoop, calls=%fused".into(),
            category: "loop fusion".into(),
            hlo_module_id: 7,
            occurrences: 2,
            time_ps: 1_000_000,
            self_time_ps: 1_000_000,
            flops_v2: 300.0,
            model_flops_v2: 300.0,
            children: Some(Box::new(crate::op_stats::OpMetricsDb {
                metrics_db: vec![
                    child("constant.1", 0.0, None),
                    child("add.1", 100.0, None),
                    child("inner_fusion", 200.0, Some(vec![child("mul.2", 200.0, None)])),
                ],
                ..Default::default()
            })),
            ..Default::default()
        };
        let while_loop = OpMetrics {
            name: "while.1".into(),
            category: "while".into(),
            hlo_module_id: 7,
            occurrences: 1,
            time_ps: 3_000_000,
            self_time_ps: 500_000,
            ..Default::default()
        };
        let mut op_stats = OpStats {
            device_op_metrics_db: crate::op_stats::OpMetricsDb {
                metrics_db: vec![fusion, while_loop],
                total_time_ps: 4_000_000,
                total_op_time_ps: 1_500_000,
                ..Default::default()
            },
            perf_env: Some(crate::op_stats::PerfEnv { peak_tera_flops_per_second: 1e-3, ..Default::default() }),
            ..Default::default()
        };
        op_stats.program_id_to_name_map.insert(7, "jit_g".into());
        let profile = convert_op_stats_to_op_profile(&op_stats, Grouping::ByProgram, OP_PROFILE_LIMIT);
        let program = &profile.tree.children[0];
        assert_eq!(program.name, "jit_g(7)");
        // The while loop adds its self time to the program but has no node of its own.
        assert_eq!(program.metrics.raw_time, 1_500_000.0);
        assert!(find(program, "while.1").is_none());
        let node = find(program, "fusion.1").expect("fusion node");
        let children: Vec<(&str, f64)> = node.children.iter().map(|c| (c.name.as_str(), c.metrics.raw_flops)).collect();
        assert_eq!(children, [("inner_fusion", 200.0), ("add.1", 100.0), ("constant.1", 0.0)]);
        assert_eq!(node.children[0].children[0].name, "mul.2");
        assert_eq!(node.num_children, 3);
        // 300 FLOPs in 1 µs = 0.3 GFLOP/s of a 1 GFLOP/s peak, over 1/4 of the time.
        assert!((node.metrics.flops - 0.3 * 0.25).abs() < 1e-12);
        assert_eq!(profile.tree.metrics.raw_time, 4_000_000.0);
        let json = op_profile(&op_stats, Grouping::ByProgram);
        assert_eq!(json["byProgram"]["children"][0]["name"], "jit_g(7)");
        assert_eq!(json["deviceType"], "UNKNOWN_HARDWARE");
    }

    /// Duplicates of one op (same deduplicated name) become one group named after the
    /// most expensive; a lone op replaces its group; non-fusion groups carry an empty
    /// layout, as XProf copies it.
    #[test]
    fn duplicate_groups() {
        let op = |name: &str, dedup: &str, category: &str, time_ps: u64| OpMetrics {
            name: name.into(),
            deduplicated_name: dedup.into(),
            category: category.into(),
            hlo_module_id: 1,
            occurrences: 1,
            time_ps,
            self_time_ps: time_ps,
            ..Default::default()
        };
        let op_stats = OpStats {
            device_op_metrics_db: crate::op_stats::OpMetricsDb {
                metrics_db: vec![
                    op("copy.1", "copy.3", "data formatting", 10),
                    op("copy.3", "", "data formatting", 30),
                    op("copy.2", "copy.3", "data formatting", 20),
                    op("copy.4", "", "data formatting", 5),
                    op("region_0.1", "", "data formatting", 5),
                ],
                total_time_ps: 100,
                total_op_time_ps: 70,
                ..Default::default()
            },
            ..Default::default()
        };
        let profile = convert_op_stats_to_op_profile(&op_stats, Grouping::ByCategory, OP_PROFILE_LIMIT);
        let category = &profile.tree.children[0];
        assert_eq!(category.name, "data formatting");
        let names: Vec<&str> = category.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["copy.3 and its duplicate(s)", "copy.4"]);
        let group = &category.children[0];
        let members: Vec<&str> = group.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(members, ["copy.3", "copy.2", "copy.1"]);
        assert_eq!(group.metrics.raw_time, 60.0);
        assert!(group.xla.as_ref().is_some_and(|x| x.has_layout));
        // The root's time is the database's total, and its children share it.
        assert_eq!(profile.tree.metrics.raw_time, 100.0);
        // With a limit of 1, the category keeps its top group, and the group its top op;
        // a group left with one op is replaced by it.
        let pruned = convert_op_stats_to_op_profile(&op_stats, Grouping::ByCategory, 1);
        let category = &pruned.tree.children[0];
        assert_eq!(category.num_children, 1);
        let kept: Vec<(&str, i32)> = category.children.iter().map(|c| (c.name.as_str(), c.num_children)).collect();
        assert_eq!(kept, [("copy.3", 0)]);
    }
}
