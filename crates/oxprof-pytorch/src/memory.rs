//! PyTorch memory (`pytorch_memory`): torch-tb-profiler 0.4.3's memory view, from the
//! `[memory]` instants `profile_memory=True` records (args `Addr`, `Bytes`, `Total
//! Allocated`, `Total Reserved`, `Device Type`, `Device Id`):
//!
//! * per device, allocated and reserved bytes after each allocator event (its memory curve)
//!   and the peak of allocated bytes;
//! * allocation events: each allocation paired with its release by address, with the
//!   operator it happened in, its size and lifetime (its memory events);
//! * per device and operator name: calls, size increase and allocations, own and with
//!   children (its memory statistics).
//!
//! [`attribute`] is its `MemoryParser.find_memory_nodes`: each thread's records walked
//! with that thread's operator tree, both in time order, so each allocation names the
//! innermost operator around it. Times are µs since the first event torch-tb-profiler keeps
//! (its `profiler_start_ts`), sizes bytes, unrounded.

use super::parse::{MemRecord, NO_LINK, Parsed, link};
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One point of a device's memory curve.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct CurvePoint {
    /// µs since the profiler's first event.
    pub time_us: f64,
    /// Bytes allocated (in use) after the event.
    pub allocated_bytes: f64,
    /// Bytes the allocator holds (in use and cached) after the event.
    pub reserved_bytes: f64,
}

/// One allocation (or a release whose allocation was not recorded).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MemoryEvent {
    /// The operator it was allocated in (`<unknown>` when none; `parent (aten::empty…)` when
    /// the innermost is an `aten::empty*`, PyTorch's malloc).
    pub operator: String,
    /// Bytes.
    pub size_bytes: f64,
    /// When allocated, µs since the profiler's first event (`None`: before the trace).
    pub allocation_us: Option<f64>,
    /// When released (`None`: still alive at the end).
    pub release_us: Option<f64>,
    /// Lifetime, µs (`None` unless both ends are in the trace).
    pub duration_us: Option<f64>,
}

/// Memory use of one operator name on one device.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OperatorMemory {
    /// Operator name.
    pub name: String,
    /// Calls of the operator (all devices).
    pub calls: u64,
    /// Bytes allocated minus released, children included.
    pub size_increase_bytes: i64,
    /// Bytes allocated minus released by the operator itself.
    pub self_size_increase_bytes: i64,
    /// Allocations, children included.
    pub allocations: i64,
    /// Allocations by the operator itself.
    pub self_allocations: i64,
    /// Bytes allocated (releases not subtracted), children included.
    pub allocation_bytes: i64,
    /// Bytes allocated by the operator itself.
    pub self_allocation_bytes: i64,
}

/// The memory view of one device (`CPU`, `GPU0`, …).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeviceMemory {
    /// `CPU` or `GPU<id>`.
    pub device: String,
    /// Most bytes allocated at once (`None` when no event says).
    pub peak_allocated_bytes: Option<f64>,
    /// Allocated and reserved bytes after each event, in time order.
    pub curve: Vec<CurvePoint>,
    /// Allocations with their release: released ones in release order, then those never
    /// released, then releases of allocations before the trace.
    pub events: Vec<MemoryEvent>,
    /// By operator name.
    pub operators: Vec<OperatorMemory>,
}

/// The memory view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PytorchMemory {
    /// Devices by name (`CPU` first, then `GPU0`, …).
    pub devices: Vec<DeviceMemory>,
    /// `[memory]` events in the trace.
    pub records: u64,
    /// Of them, on a device type torch-tb-profiler does not show (not CPU or CUDA).
    pub other_device: u64,
    /// Of them, inside no operator (their bytes count on the curve, not for any operator).
    pub unattributed: u64,
    /// oxprof's notes.
    pub notes: Vec<String>,
}

/// torch-tb-profiler's `find_memory_nodes` and `get_preprocessed_records`: tie each record to
/// the innermost node around it on its thread; allocations name their operator (and its
/// parent), releases take their allocation's.
pub(crate) fn attribute(p: &mut Parsed) {
    p.mem_visited = vec![false; p.nodes.len()];
    if p.memory.is_empty() {
        return;
    }
    let root_of: FxHashMap<u32, usize> = p.root_threads.iter().copied().zip(p.roots.iter().copied()).collect();
    let mut by_thread: FxHashMap<u32, Vec<usize>> = FxHashMap::default();
    for (i, r) in p.memory.iter().enumerate() {
        by_thread.entry(r.thread).or_default().push(i);
    }
    let mut unattributed = 0u64;
    for (thread, records) in by_thread {
        let mut current = root_of.get(&thread).copied();
        if let Some(root) = current {
            p.mem_visited[root] = true;
        }
        // (node, the child being visited) above `current`.
        let mut stack: Vec<(usize, usize)> = Vec::new();
        // The child of `current` to look at next ([`NO_LINK`]: none left).
        let mut child = current.map_or(NO_LINK, |n| p.nodes[n].first_child);
        let mut k = 0usize;
        while k < records.len() {
            let ri = records[k];
            let ts = p.memory[ri].ts;
            let Some(mut node) = current else {
                unattributed += 1;
                k += 1;
                continue;
            };
            if ts < p.nodes[node].start {
                unattributed += 1;
                k += 1;
                continue;
            }
            if ts >= p.nodes[node].end {
                match stack.pop() {
                    Some((parent, visited)) => {
                        current = Some(parent);
                        child = p.nodes[visited].next_sibling;
                    }
                    None => current = None,
                }
                continue;
            }
            while let Some(c) = link(child) {
                if ts < p.nodes[c].start {
                    break;
                } else if ts >= p.nodes[c].end {
                    child = p.nodes[c].next_sibling;
                } else {
                    p.mem_visited[c] = true;
                    stack.push((node, c));
                    node = c;
                    child = p.nodes[c].first_child;
                }
            }
            current = Some(node);
            if p.nodes[node].is_listed_operator() {
                p.mem_ops.entry(node).or_default().push(ri);
                let r = &mut p.memory[ri];
                if r.bytes > 0 {
                    r.op = Some(node);
                    r.parent = stack.last().map(|&(n, _)| n);
                }
            } else {
                unattributed += 1;
            }
            k += 1;
        }
    }
    p.mem_unattributed = unattributed;
    // Releases name the operator of their allocation (the latest at that address).
    let mut live: FxHashMap<i64, usize> = FxHashMap::default();
    for i in 0..p.memory.len() {
        let Some(addr) = p.memory[i].addr else { continue };
        if p.memory[i].bytes > 0 {
            live.insert(addr, i);
        } else if let Some(a) = live.remove(&addr) {
            let (op, parent) = (p.memory[a].op, p.memory[a].parent);
            p.memory[i].op = op;
            p.memory[i].parent = parent;
        }
    }
}

/// Python's dict of live entries in insertion order (a re-inserted key keeps its place, a
/// deleted one loses it): the order torch-tb-profiler lists unpaired events in.
#[derive(Default)]
struct InsertionOrder {
    order: Vec<(i64, Option<usize>)>,
    at: FxHashMap<i64, usize>,
}

impl InsertionOrder {
    fn insert(&mut self, key: i64, value: usize) {
        match self.at.get(&key) {
            Some(&slot) => self.order[slot].1 = Some(value),
            None => {
                self.at.insert(key, self.order.len());
                self.order.push((key, Some(value)));
            }
        }
    }

    fn remove(&mut self, key: i64) -> Option<usize> {
        let slot = self.at.remove(&key)?;
        self.order[slot].1.take()
    }

    fn values(&self) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().filter_map(|&(_, v)| v)
    }
}

impl PytorchMemory {
    /// The memory view of a parsed run.
    pub fn from_parsed(p: &Parsed) -> PytorchMemory {
        let start = p.profiler_start;
        let mut devices: std::collections::BTreeMap<String, DeviceMemory> = Default::default();
        let other_device = p.memory.iter().filter(|r| r.device.is_none()).count() as u64;

        // Peaks (`get_peak_memory`: every record) and curves (`get_memory_curve`: records with
        // an address and both totals).
        for r in &p.memory {
            let Some(name) = &r.device else { continue };
            if !r.total_allocated.is_nan() {
                let d = device(&mut devices, name);
                d.peak_allocated_bytes = Some(d.peak_allocated_bytes.unwrap_or(0.0).max(r.total_allocated));
            }
            if r.addr.is_some() && !r.total_allocated.is_nan() && !r.total_reserved.is_nan() {
                device(&mut devices, name).curve.push(CurvePoint {
                    time_us: r.ts - start,
                    allocated_bytes: r.total_allocated,
                    reserved_bytes: r.total_reserved,
                });
            }
        }

        // Events (`get_memory_events`): allocations paired with releases by address.
        let label = |r: &MemRecord| -> String {
            let name = r.op.map_or("<unknown>", |o| p.text(p.nodes[o].name));
            match r.parent {
                Some(parent) if name.starts_with("aten::empty") => format!("{} ({name})", p.text(p.nodes[parent].name)),
                _ => name.to_string(),
            }
        };
        let mut alloc = InsertionOrder::default();
        let mut free = InsertionOrder::default();
        for (i, r) in p.memory.iter().enumerate() {
            let Some(addr) = r.addr else { continue };
            if r.bytes > 0 {
                alloc.insert(addr, i);
            } else if let Some(a) = alloc.remove(addr) {
                let a = &p.memory[a];
                if let Some(name) = &a.device {
                    device(&mut devices, name).events.push(MemoryEvent {
                        operator: label(a),
                        size_bytes: -(r.bytes as f64),
                        allocation_us: Some(a.ts - start),
                        release_us: Some(r.ts - start),
                        duration_us: Some(r.ts - a.ts),
                    });
                }
            } else {
                free.insert(addr, i);
            }
        }
        for i in alloc.values() {
            let r = &p.memory[i];
            if let Some(name) = &r.device {
                device(&mut devices, name).events.push(MemoryEvent {
                    operator: label(r),
                    size_bytes: r.bytes as f64,
                    allocation_us: Some(r.ts - start),
                    release_us: None,
                    duration_us: None,
                });
            }
        }
        for i in free.values() {
            let r = &p.memory[i];
            if let Some(name) = &r.device {
                device(&mut devices, name).events.push(MemoryEvent {
                    operator: label(r),
                    size_bytes: -(r.bytes as f64),
                    allocation_us: None,
                    release_us: Some(r.ts - start),
                    duration_us: None,
                });
            }
        }

        // Statistics (`get_memory_statistics`) by device and operator name.
        for (name, rows) in statistics(p) {
            device(&mut devices, &name).operators = rows;
        }

        let mut notes = Vec::new();
        if p.memory.is_empty() {
            notes.push(
                "no memory events in this trace: record with torch.profiler.profile(profile_memory=True) to see memory"
                    .into(),
            );
        } else if p.memory.iter().all(|r| r.addr.is_none()) {
            notes.push(
                "memory events without addresses (PyTorch before 1.10): no curve and no allocation events, only statistics"
                    .into(),
            );
        }
        if other_device > 0 {
            notes.push(format!("{other_device} memory events on devices other than CPU and CUDA are left out"));
        }
        if p.mem_unattributed > 0 {
            notes.push(format!(
                "{} of {} memory events are inside no operator: they count on the curves, not for any operator",
                p.mem_unattributed,
                p.memory.len()
            ));
        }
        PytorchMemory {
            devices: devices.into_values().collect(),
            records: p.memory.len() as u64,
            other_device,
            unattributed: p.mem_unattributed,
            notes,
        }
    }
}

/// [self increase, self allocation size, self allocations, increase, allocation size, allocations]
type Metrics = [i64; 6];

/// torch-tb-profiler's `MemorySnapshot.get_memory_statistics` (whole run): per device and
/// operator name, own metrics of each visited operator plus its visited subtree's, summed
/// over the operator's nodes; calls count the operators the walk reached.
fn statistics(p: &Parsed) -> Vec<(String, Vec<OperatorMemory>)> {
    let mut per_node: FxHashMap<usize, FxHashMap<&str, Metrics>> = FxHashMap::default();
    let mut calls: FxHashMap<&str, u64> = FxHashMap::default();
    for &root in &p.roots {
        // Post-order over the subtrees of the root's children.
        let mut todo: Vec<(usize, bool)> = p.children(root).map(|c| (c, false)).collect();
        todo.reverse();
        while let Some((n, done)) = todo.pop() {
            let node = &p.nodes[n];
            let is_op = node.is_listed_operator();
            if !done {
                if is_op {
                    *calls.entry(p.text(node.name)).or_default() += 1;
                }
                if !p.mem_visited.get(n).copied().unwrap_or(false) {
                    continue;
                }
                if is_op {
                    let mine = per_node.entry(n).or_default();
                    for &ri in p.mem_ops.get(&n).map_or(&[][..], Vec::as_slice) {
                        let r = &p.memory[ri];
                        let Some(dev) = r.device.as_deref() else { continue };
                        let m = mine.entry(dev).or_default();
                        m[0] += r.bytes;
                        m[3] += r.bytes;
                        if r.bytes > 0 {
                            m[1] += r.bytes;
                            m[2] += 1;
                            m[4] += r.bytes;
                            m[5] += 1;
                        }
                    }
                }
                todo.push((n, true));
                let first = todo.len();
                todo.extend(p.children(n).map(|c| (c, false)));
                todo[first..].reverse();
                continue;
            }
            // Children done: add their totals.
            let mut add: Vec<(&str, Metrics)> = Vec::new();
            for c in p.children(n) {
                if let Some(m) = per_node.get(&c) {
                    add.extend(m.iter().map(|(&d, &v)| (d, v)));
                }
            }
            if !add.is_empty() {
                let mine = per_node.entry(n).or_default();
                for (d, v) in add {
                    let m = mine.entry(d).or_default();
                    for i in 3..6 {
                        m[i] += v[i];
                    }
                }
            }
        }
    }
    let mut by_name: std::collections::BTreeMap<&str, std::collections::BTreeMap<&str, Metrics>> = Default::default();
    for (&n, devices) in &per_node {
        if !p.nodes[n].is_listed_operator() {
            continue;
        }
        for (&d, v) in devices {
            let m = by_name.entry(d).or_default().entry(p.text(p.nodes[n].name)).or_default();
            for i in 0..6 {
                m[i] += v[i];
            }
        }
    }
    by_name
        .into_iter()
        .map(|(device, ops)| {
            let rows = ops
                .into_iter()
                .filter(|(_, m)| m.iter().any(|&v| v != 0))
                .map(|(name, m)| OperatorMemory {
                    name: name.to_string(),
                    calls: calls.get(name).copied().unwrap_or(0),
                    size_increase_bytes: m[3],
                    self_size_increase_bytes: m[0],
                    allocations: m[5],
                    self_allocations: m[2],
                    allocation_bytes: m[4],
                    self_allocation_bytes: m[1],
                })
                .collect();
            (device.to_string(), rows)
        })
        .collect()
}

fn device<'a>(devices: &'a mut std::collections::BTreeMap<String, DeviceMemory>, name: &str) -> &'a mut DeviceMemory {
    devices.entry(name.to_string()).or_insert_with(|| DeviceMemory {
        device: name.to_string(),
        peak_allocated_bytes: None,
        curve: Vec::new(),
        events: Vec::new(),
        operators: Vec::new(),
    })
}

fn opt(v: Option<f64>) -> CellValue {
    v.map_or(CellValue::Null, CellValue::Number)
}

impl Report for PytorchMemory {
    fn xprof_body(&self) -> XprofBody {
        super::tables_body(&self.tables())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut summary = Table::new("devices")
            .title("Memory by device")
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("peak_allocated_bytes", "Peak allocated (bytes)", ColumnKind::Number, NumberFormat::Fixed(0))
            .column("curve_points", "Curve points", ColumnKind::Integer, NumberFormat::Shortest)
            .column("events", "Allocation events", ColumnKind::Integer, NumberFormat::Shortest)
            .column("operators", "Operators", ColumnKind::Integer, NumberFormat::Shortest)
            .fact("memory_events", self.records.to_string());
        let mut curve = Table::new("curve")
            .title("Allocated and reserved memory over time")
            .rows_described("points, by device and time", Some(20))
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("time_us", "Time (µs)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("allocated_bytes", "Allocated (bytes)", ColumnKind::Number, NumberFormat::Fixed(0))
            .column("reserved_bytes", "Reserved (bytes)", ColumnKind::Number, NumberFormat::Fixed(0));
        let mut events = Table::new("events")
            .title("Allocation events")
            .rows_described("allocations, by device, released ones in release order", Some(50))
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("operator", "Operator", ColumnKind::Text, NumberFormat::Shortest)
            .column("size_bytes", "Size (bytes)", ColumnKind::Number, NumberFormat::Fixed(0))
            .column("allocation_us", "Allocation time (µs)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("release_us", "Release time (µs)", ColumnKind::Number, NumberFormat::Fixed(3))
            .column("duration_us", "Duration (µs)", ColumnKind::Number, NumberFormat::Fixed(3));
        let mut operators = Table::new("operators")
            .title("Memory by operator")
            .rows_described("operators, by device, most self size increase first", Some(100))
            .column("device", "Device", ColumnKind::Text, NumberFormat::Shortest)
            .column("name", "Operator", ColumnKind::Text, NumberFormat::Shortest)
            .column("calls", "Calls", ColumnKind::Integer, NumberFormat::Shortest)
            .column("size_increase_bytes", "Size increase (bytes)", ColumnKind::Integer, NumberFormat::Shortest)
            .column(
                "self_size_increase_bytes",
                "Self size increase (bytes)",
                ColumnKind::Integer,
                NumberFormat::Shortest,
            )
            .column("allocations", "Allocations", ColumnKind::Integer, NumberFormat::Shortest)
            .column("self_allocations", "Self allocations", ColumnKind::Integer, NumberFormat::Shortest)
            .column("allocation_bytes", "Allocation size (bytes)", ColumnKind::Integer, NumberFormat::Shortest)
            .column(
                "self_allocation_bytes",
                "Self allocation size (bytes)",
                ColumnKind::Integer,
                NumberFormat::Shortest,
            );
        for d in &self.devices {
            let dev = || CellValue::Text(d.device.clone());
            summary.push_row(vec![
                dev(),
                opt(d.peak_allocated_bytes),
                CellValue::Int(d.curve.len() as i64),
                CellValue::Int(d.events.len() as i64),
                CellValue::Int(d.operators.len() as i64),
            ]);
            for c in &d.curve {
                curve.push_row(vec![
                    dev(),
                    CellValue::Number(c.time_us),
                    CellValue::Number(c.allocated_bytes),
                    CellValue::Number(c.reserved_bytes),
                ]);
            }
            for e in &d.events {
                events.push_row(vec![
                    dev(),
                    CellValue::Text(e.operator.clone()),
                    CellValue::Number(e.size_bytes),
                    opt(e.allocation_us),
                    opt(e.release_us),
                    opt(e.duration_us),
                ]);
            }
            let mut ops: Vec<&OperatorMemory> = d.operators.iter().collect();
            ops.sort_by(|a, b| b.self_size_increase_bytes.cmp(&a.self_size_increase_bytes).then(a.name.cmp(&b.name)));
            for o in ops {
                operators.push_row(vec![
                    dev(),
                    CellValue::Text(o.name.clone()),
                    CellValue::Int(o.calls as i64),
                    CellValue::Int(o.size_increase_bytes),
                    CellValue::Int(o.self_size_increase_bytes),
                    CellValue::Int(o.allocations),
                    CellValue::Int(o.self_allocations),
                    CellValue::Int(o.allocation_bytes),
                    CellValue::Int(o.self_allocation_bytes),
                ]);
            }
        }
        vec![summary, curve, events, operators]
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
