//! PyTorch operators (`pytorch_op_stats`): torch-tb-profiler's operator view. Every plain
//! operator of the threads' operator trees (`cpu_op` events, not steps, modules, data
//! loader or optimizer spans), aggregated by name, by name and input shapes, and by name
//! and call stack when the trace recorded stacks: calls, host total and self time (self:
//! without child operators and runtime calls), device total and self time (self: device
//! activity launched by its own runtime calls), and Tensor Core eligibility and time.

use super::parse::Parsed;
use super::us;
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One aggregated row.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct OpRow {
    /// Operator name.
    pub name: String,
    /// Input shapes as Python prints them (by-shape rows only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input_shape: Option<String>,
    /// The call stack (by-stack rows only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub call_stack: Option<String>,
    /// Calls.
    pub calls: u64,
    /// Host time including children, µs.
    pub host_total_us: f64,
    /// Host time of its own, µs.
    pub host_self_us: f64,
    /// Device time of all it launched, µs.
    pub device_total_us: f64,
    /// Device time it launched itself, µs.
    pub device_self_us: f64,
    /// Whether the operator may use Tensor Cores.
    pub tc_eligible: bool,
    /// Its own Tensor Core kernel time, µs.
    pub tc_self_us: f64,
    /// Tensor Core kernel time including children, µs.
    pub tc_total_us: f64,
}

/// The operator view.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PytorchOpStats {
    /// By name, most device self time first (then host self time).
    pub by_name: Vec<OpRow>,
    /// By name and input shapes.
    pub by_name_input: Vec<OpRow>,
    /// By name and call stack (only operators with a recorded stack).
    pub by_name_stack: Vec<OpRow>,
    /// oxprof's notes.
    pub notes: Vec<String>,
}

impl PytorchOpStats {
    /// Aggregates the parsed run's operators.
    pub fn from_parsed(p: &Parsed) -> PytorchOpStats {
        let ops = &p.listed_ops;
        // Keyed by borrowed names (torch-tb-profiler's `name###shape` keys, without
        // building a string per call).
        let mut by_name: Agg<&str> = Agg::default();
        let mut by_input: Agg<(&str, &str)> = Agg::default();
        let mut by_stack: Agg<(&str, &str)> = Agg::default();
        for &op in ops {
            let n = &p.nodes[op];
            let (name, shape) = (p.text(n.name), p.text(n.shape));
            by_name.add(name, p, op, || (None, None));
            by_input.add((name, shape), p, op, || (Some(shape.to_string()), None));
            if let Some(stack) = p.stack(n).filter(|s| !s.is_empty()) {
                by_stack.add((name, stack), p, op, || (None, Some(stack.to_string())));
            }
        }
        let mut notes = Vec::new();
        if ops.is_empty() {
            notes.push("no operators: the trace has no cpu_op events on its host threads".into());
        }
        if by_stack.rows.is_empty() && !ops.is_empty() {
            notes.push(
                "no call stacks recorded: profile with torch.profiler.profile(with_stack=True) (and a Kineto that \
                 writes `Call stack` args) to group operators by call stack"
                    .into(),
            );
        }
        PytorchOpStats {
            by_name: by_name.finish(),
            by_name_input: by_input.finish(),
            by_name_stack: by_stack.finish(),
            notes,
        }
    }
}

struct Agg<K> {
    index: FxHashMap<K, usize>,
    rows: Vec<OpRow>,
}

impl<K> Default for Agg<K> {
    fn default() -> Self {
        Agg { index: FxHashMap::default(), rows: Vec::new() }
    }
}

impl<K: std::hash::Hash + Eq> Agg<K> {
    /// Adds a call of `op` to the row of `key`; a new row takes its shape and stack from
    /// `extra`.
    fn add(&mut self, key: K, p: &Parsed, op: usize, extra: impl FnOnce() -> (Option<String>, Option<String>)) {
        let n = &p.nodes[op];
        let i = *self.index.entry(key).or_insert_with(|| {
            let (shape, stack) = extra();
            self.rows.push(OpRow {
                name: p.text(n.name).to_string(),
                input_shape: shape,
                call_stack: stack,
                calls: 0,
                host_total_us: 0.0,
                host_self_us: 0.0,
                device_total_us: 0.0,
                device_self_us: 0.0,
                // The first call's eligibility, as torch-tb-profiler keeps it.
                tc_eligible: n.tc_eligible,
                tc_self_us: 0.0,
                tc_total_us: 0.0,
            });
            self.rows.len() - 1
        });
        let r = &mut self.rows[i];
        r.calls += 1;
        r.host_total_us += n.duration();
        let times = &p.node_times[op];
        r.device_total_us += times.device_total;
        r.host_self_us += times.host_self;
        r.device_self_us += times.device_self;
        r.tc_self_us += times.tc_self;
        r.tc_total_us += times.tc_total;
    }

    fn finish(mut self) -> Vec<OpRow> {
        self.rows.sort_by(|a, b| {
            b.device_self_us
                .total_cmp(&a.device_self_us)
                .then(b.host_self_us.total_cmp(&a.host_self_us))
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.input_shape.cmp(&b.input_shape))
                .then_with(|| a.call_stack.cmp(&b.call_stack))
        });
        self.rows
    }
}

fn op_table(name: &str, title: &str, rows: &[OpRow], shape: bool, stack: bool) -> Table {
    let mut t = Table::new(name)
        .title(title)
        .rows_described("operators, most device self time first", Some(200))
        .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest);
    if shape {
        t = t.column("input_shape", "Input shape", ColumnKind::Text, NumberFormat::Shortest);
    }
    if stack {
        t = t.column("call_stack", "Call stack", ColumnKind::Text, NumberFormat::Shortest);
    }
    t = t
        .column("calls", "Calls", ColumnKind::Integer, NumberFormat::Shortest)
        .column("device_self_us", "Device self (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
        .column("device_total_us", "Device total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
        .column("host_self_us", "Host self (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
        .column("host_total_us", "Host total (µs)", ColumnKind::Number, NumberFormat::Fixed(1))
        .column("tc_eligible", "Tensor Cores eligible", ColumnKind::Boolean, NumberFormat::Shortest)
        .column("tc_self_ratio", "Tensor Cores self (%)", ColumnKind::Number, NumberFormat::Percent(1))
        .column("tc_total_ratio", "Tensor Cores total (%)", ColumnKind::Number, NumberFormat::Percent(1));
    for r in rows {
        let mut row = vec![CellValue::Text(r.name.clone())];
        if shape {
            row.push(CellValue::Text(r.input_shape.clone().unwrap_or_default()));
        }
        if stack {
            row.push(CellValue::Text(r.call_stack.clone().unwrap_or_default()));
        }
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        row.extend([
            CellValue::Int(r.calls as i64),
            us(r.device_self_us),
            us(r.device_total_us),
            us(r.host_self_us),
            us(r.host_total_us),
            CellValue::Bool(r.tc_eligible),
            CellValue::Number(ratio(r.tc_self_us, r.device_self_us)),
            CellValue::Number(ratio(r.tc_total_us, r.device_total_us)),
        ]);
        t.push_row(row);
    }
    t
}

impl Report for PytorchOpStats {
    fn xprof_body(&self) -> XprofBody {
        super::tables_body(&self.tables())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut out = vec![
            op_table("by_name", "Operators by name", &self.by_name, false, false),
            op_table("by_name_input", "Operators by name and input shape", &self.by_name_input, true, false),
        ];
        if !self.by_name_stack.is_empty() {
            out.push(op_table("by_name_stack", "Operators by name and call stack", &self.by_name_stack, false, true));
        }
        out
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
