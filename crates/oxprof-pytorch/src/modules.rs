//! PyTorch modules (`pytorch_modules`): torch-tb-profiler 0.4.3's module view. The
//! `nn.Module` hierarchy comes from the `python_function` events' `Python id` / `Python
//! parent id` links (the Python call tree, keeping only module forwards: each module's
//! parent is the nearest module above it); identical root subtrees are shown once. Each
//! module is listed with the statistics of all its calls (by name and `Python module id`,
//! wherever it sits in the hierarchy): calls, direct child operators, host total and self
//! time, device total and self time (self: its direct child operators' device time, as
//! torch-tb-profiler counts it), and the mean duration (device if any, else host).
//!
//! PyTorch Lightning's `[pl][module]` events (torch-tb-profiler's other module view) are
//! not read.

use super::parse::{NodeKind, Parsed, PythonFn};
use super::us;
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Deepest module nesting followed (a corrupt parent chain cannot recurse forever).
const MAX_DEPTH: usize = 512;

/// One module of the hierarchy with its statistics.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ModuleStats {
    /// Module name without torch-tb-profiler's `nn.Module: ` prefix (`Linear_0`).
    pub name: String,
    /// `Python module id`.
    pub module_id: i64,
    /// Calls (module nodes of the operator trees with this name and id).
    pub occurrences: u64,
    /// Plain operators directly under its calls.
    pub operators: u64,
    /// Host time of its calls, µs.
    pub host_total_us: f64,
    /// Host time not in child operators, modules or runtime calls, µs.
    pub host_self_us: f64,
    /// Device time of all it launched, µs.
    pub device_total_us: f64,
    /// Device time of its direct child operators, µs.
    pub device_self_us: f64,
    /// Mean device time per call, or mean host time when it launched nothing, µs.
    pub mean_us: f64,
    /// Child modules, in the order torch-tb-profiler finds them.
    pub children: Vec<ModuleStats>,
}

/// The module view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PytorchModules {
    /// Root modules by name, each with its subtree.
    pub modules: Vec<ModuleStats>,
    /// oxprof's notes.
    pub notes: Vec<String>,
}

type Key = Option<i64>;

/// Keys in first-insertion order with a value each (Python's dict, as the reference uses it).
struct OrderedMap<V> {
    order: Vec<Key>,
    values: FxHashMap<Key, V>,
}

impl<V> OrderedMap<V> {
    fn new() -> Self {
        OrderedMap { order: Vec::new(), values: FxHashMap::default() }
    }

    fn entry_or(&mut self, k: Key, v: impl FnOnce() -> V) -> &mut V {
        if !self.values.contains_key(&k) {
            self.order.push(k);
        }
        self.values.entry(k).or_insert_with(v)
    }
}

/// A module of the hierarchy before its statistics: the python_function it was found at.
struct HierarchyNode {
    event: usize,
    children: Vec<HierarchyNode>,
}

/// torch-tb-profiler's `_build_module_hierarchy`: walk up from every leaf of the Python
/// call tree, linking each module to the next module above it; roots are modules with none.
fn build_hierarchy(fns: &[PythonFn], truncated: &mut u64) -> Vec<HierarchyNode> {
    let mut by_id: FxHashMap<Key, usize> = FxHashMap::default();
    for (i, f) in fns.iter().enumerate() {
        by_id.insert(f.id, i);
    }
    // Which ids have children, keys in the order Python's dict gets them.
    let mut has_children: OrderedMap<bool> = OrderedMap::new();
    for f in fns {
        has_children.entry_or(f.id, || false);
        *has_children.entry_or(f.parent, || false) = true;
    }
    let leaves = has_children.order.iter().filter(|k| !has_children.values[*k]);

    // Module id → parent module id (None: a root), in first-seen order.
    let mut parent_of: OrderedMap<Option<Key>> = OrderedMap::new();
    let mut seen: FxHashSet<(Key, Option<usize>)> = FxHashSet::default();
    for leaf in leaves {
        let mut at = by_id.get(leaf).copied();
        let mut current: Option<usize> = None;
        while let Some(e) = at {
            let id = fns[e].id;
            if fns[e].module.is_some() {
                if let Some(c) = current {
                    *parent_of.entry_or(fns[c].id, || None) = Some(id);
                }
                current = Some(e);
                parent_of.entry_or(id, || None);
            }
            if !seen.insert((id, current)) {
                break;
            }
            at = by_id.get(&fns[e].parent).copied();
        }
    }
    let mut children_of: FxHashMap<Key, Vec<Key>> = FxHashMap::default();
    for child in &parent_of.order {
        if let Some(parent) = parent_of.values[child] {
            children_of.entry(parent).or_default().push(*child);
        }
    }
    fn grow(
        id: Key,
        depth: usize,
        fns: &[PythonFn],
        by_id: &FxHashMap<Key, usize>,
        children_of: &FxHashMap<Key, Vec<Key>>,
        truncated: &mut u64,
    ) -> Option<HierarchyNode> {
        let event = *by_id.get(&id)?;
        fns[event].module.as_ref()?;
        let mut node = HierarchyNode { event, children: Vec::new() };
        for &c in children_of.get(&id).map(Vec::as_slice).unwrap_or_default() {
            if depth >= MAX_DEPTH {
                *truncated += 1;
                continue;
            }
            node.children.extend(grow(c, depth + 1, fns, by_id, children_of, truncated));
        }
        Some(node)
    }
    parent_of
        .order
        .iter()
        .filter(|k| parent_of.values[*k].is_none())
        .filter_map(|&root| grow(root, 0, fns, &by_id, &children_of, truncated))
        .collect()
}

/// Per (name, module id): occurrences, operators, host total/self, device total/self.
#[derive(Default, Clone, Copy)]
struct Agg {
    occurrences: u64,
    operators: u64,
    host_total: f64,
    host_self: f64,
    device_total: f64,
    device_self: f64,
}

/// torch-tb-profiler's `_aggregate_modules` over the module nodes of every tree.
fn aggregate(p: &Parsed) -> FxHashMap<(&str, i64), Agg> {
    let mut out: FxHashMap<(&str, i64), Agg> = FxHashMap::default();
    let mut todo: Vec<usize> = p.roots.iter().flat_map(|&r| p.children(r)).collect();
    while let Some(n) = todo.pop() {
        let node = &p.nodes[n];
        if node.kind == NodeKind::Module {
            let a = out.entry((p.text(node.name), node.module_id())).or_default();
            a.occurrences += 1;
            a.operators += p.children(n).filter(|&c| p.nodes[c].is_listed_operator()).count() as u64;
            a.host_total += node.duration();
            let times = &p.node_times[n];
            a.host_self += times.host_self;
            a.device_total += times.device_total;
            a.device_self += times.device_self;
        }
        todo.extend(p.children(n));
    }
    out
}

impl PytorchModules {
    /// The module view of the parsed run.
    pub fn from_parsed(p: &Parsed) -> PytorchModules {
        let mut notes = Vec::new();
        let mut truncated = 0;
        let hierarchy = build_hierarchy(&p.python_fns, &mut truncated);
        let aggs = aggregate(p);
        if hierarchy.is_empty() || aggs.is_empty() {
            notes.push(
                "no nn.Module events: profile with torch.profiler.profile(with_stack=True) (Kineto then writes \
                 python_function events with a `Python module id` for each module's forward)"
                    .into(),
            );
            return PytorchModules { modules: Vec::new(), notes };
        }
        let mut missing = 0u64;
        let mut modules = Vec::new();
        // Identical root subtrees once (torch-tb-profiler keeps a set of them).
        let mut shapes: FxHashMap<(String, i64, Vec<u32>), u32> = FxHashMap::default();
        let mut kept: FxHashSet<u32> = FxHashSet::default();
        for root in &hierarchy {
            let shape = intern(root, &p.python_fns, &mut shapes);
            if kept.insert(shape) {
                modules.push(stats(root, &p.python_fns, &aggs, &mut missing));
            }
        }
        // By name, stably (the reference's order among equal names is its set's).
        modules.sort_by(|a, b| a.name.cmp(&b.name));
        if missing > 0 {
            notes.push(format!(
                "{missing} modules of the hierarchy have no call in the operator trees (their events overlap \
                 others on their thread): shown with zero time"
            ));
        }
        if truncated > 0 {
            notes.push(format!("{truncated} modules nested deeper than {MAX_DEPTH} levels left out"));
        }
        if p.unnested > 0 {
            notes.push(format!(
                "{} events overlap their parent on a thread without nesting: left out of the trees, as \
                 torch-tb-profiler leaves them",
                p.unnested
            ));
        }
        PytorchModules { modules, notes }
    }
}

/// A structural id of a subtree: equal ids, equal (name, module id, children) trees.
fn intern(n: &HierarchyNode, fns: &[PythonFn], shapes: &mut FxHashMap<(String, i64, Vec<u32>), u32>) -> u32 {
    let children: Vec<u32> = n.children.iter().map(|c| intern(c, fns, shapes)).collect();
    let (name, id) = fns[n.event].module.clone().unwrap_or_default();
    let next = shapes.len() as u32;
    *shapes.entry((name, id, children)).or_insert(next)
}

fn stats(n: &HierarchyNode, fns: &[PythonFn], aggs: &FxHashMap<(&str, i64), Agg>, missing: &mut u64) -> ModuleStats {
    let (name, id) = fns[n.event].module.clone().unwrap_or_default();
    let a = aggs.get(&(name.as_str(), id)).copied().unwrap_or_else(|| {
        *missing += 1;
        Agg::default()
    });
    let calls = a.occurrences.max(1) as f64;
    let mean_device = a.device_total / calls;
    ModuleStats {
        name: name.replace("nn.Module: ", ""),
        module_id: id,
        occurrences: a.occurrences,
        operators: a.operators,
        host_total_us: a.host_total,
        host_self_us: a.host_self,
        device_total_us: a.device_total,
        device_self_us: a.device_self,
        mean_us: if mean_device > 0.0 { mean_device } else { a.host_total / calls },
        children: n.children.iter().map(|c| stats(c, fns, aggs, missing)).collect(),
    }
}

impl Report for PytorchModules {
    fn xprof_body(&self) -> XprofBody {
        super::tables_body(&self.tables())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut t = Table::new("modules")
            .title("Modules")
            .rows_described("nn.Module hierarchy, depth first (children under their parent)", None)
            .column("depth", "Depth", ColumnKind::Integer, NumberFormat::Shortest)
            .column("path", "Path", ColumnKind::Text, NumberFormat::Shortest)
            .column("name", "Module", ColumnKind::Text, NumberFormat::Shortest)
            .column("module_id", "Module id", ColumnKind::Integer, NumberFormat::Shortest)
            .column("occurrences", "Calls", ColumnKind::Integer, NumberFormat::Shortest)
            .column("operators", "Operators", ColumnKind::Integer, NumberFormat::Shortest)
            .column("host_total_us", "Host total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("host_self_us", "Host self (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("device_total_us", "Device total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("device_self_us", "Device self (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
            .column("mean_us", "Mean (µs)", ColumnKind::Number, NumberFormat::Fixed(1));
        // Depth first without recursion: (module, depth, parent path).
        let mut todo: Vec<(&ModuleStats, usize, String)> =
            self.modules.iter().rev().map(|m| (m, 0, String::new())).collect();
        while let Some((m, depth, parent)) = todo.pop() {
            let path = if parent.is_empty() { m.name.clone() } else { format!("{parent} / {}", m.name) };
            t.push_row(vec![
                CellValue::Int(depth as i64),
                CellValue::Text(path.clone()),
                CellValue::Text(m.name.clone()),
                CellValue::Int(m.module_id),
                CellValue::Int(m.occurrences as i64),
                CellValue::Int(m.operators as i64),
                us(m.host_total_us),
                us(m.host_self_us),
                us(m.device_total_us),
                us(m.device_self_us),
                us(m.mean_us),
            ]);
            todo.extend(m.children.iter().rev().map(|c| (c, depth + 1, path.clone())));
        }
        vec![t]
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
