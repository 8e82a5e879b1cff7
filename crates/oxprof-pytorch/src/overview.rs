//! The PyTorch overview (`pytorch_overview`): torch-tb-profiler's overview view. Each
//! step's time split into Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU
//! Exec and Other (every instant of a step goes to the first role active then, in that
//! order; Other is the rest), the average over steps, per GPU its utilization within the
//! steps, estimated SM efficiency, estimated achieved occupancy and the share of kernel time
//! on Tensor Cores, the devices' properties and torch-tb-profiler's recommendations.

use super::parse::{DeviceProps, NodeKind, Parsed, ROLES, Ty};
use super::ranges::{self, Range};
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, XprofBody, json_of};
use oxprof_wire::datatable::CellValue;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Time of one step (or the average) per role, µs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Breakdown {
    /// Kernels (not collectives).
    pub kernel: f64,
    /// Memory copies.
    pub memcpy: f64,
    /// Memory sets.
    pub memset: f64,
    /// Collectives (NCCL/gloo ops and their kernels).
    pub communication: f64,
    /// CUDA runtime calls.
    pub runtime: f64,
    /// `enumerate(DataLoader)#…__next__`.
    pub data_loader: f64,
    /// Other host operators.
    pub cpu_exec: f64,
    /// Nothing of the above.
    pub other: f64,
    /// The step's length.
    pub total: f64,
}

impl Breakdown {
    fn from_costs(c: &[f64; 9]) -> Breakdown {
        Breakdown {
            kernel: c[0],
            memcpy: c[1],
            memset: c[2],
            communication: c[3],
            runtime: c[4],
            data_loader: c[5],
            cpu_exec: c[6],
            other: c[7],
            total: c[8],
        }
    }

    /// Role values in [`ROLES`] order, then the total.
    pub fn values(&self) -> [f64; 9] {
        [
            self.kernel,
            self.memcpy,
            self.memset,
            self.communication,
            self.runtime,
            self.data_loader,
            self.cpu_exec,
            self.other,
            self.total,
        ]
    }
}

/// One step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// N of `ProfilerStep#N` (`0` for the one step of a run without steps).
    pub name: String,
    /// Start, µs (trace clock).
    pub start_us: f64,
    /// End, µs.
    pub end_us: f64,
    /// Its breakdown.
    pub breakdown: Breakdown,
}

/// One GPU's summary.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GpuSummary {
    /// Device id (the kernels' `device`).
    pub id: i64,
    /// Its properties, when the trace has them.
    pub properties: Option<DeviceProps>,
    /// Fraction of the steps' span with a kernel running.
    pub utilization: f64,
    /// Estimated SM efficiency (blocks per SM, capped at 1, time-weighted over the span).
    pub sm_efficiency: Option<f64>,
    /// Estimated achieved occupancy, % (time-weighted over kernel time in the span).
    pub achieved_occupancy_pct: Option<f64>,
    /// Share of operators' kernel time in Tensor Core kernels.
    pub tensor_core_ratio: Option<f64>,
}

/// The PyTorch overview.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PytorchOverview {
    /// Whether the steps are `ProfilerStep#N` events (else one step spans the host events).
    pub has_profiler_steps: bool,
    /// Trailing steps dropped because the profiler seems to have missed their kernels.
    pub tail_steps_removed: usize,
    /// Steps in order.
    pub steps: Vec<Step>,
    /// The average step.
    pub average: Breakdown,
    /// GPUs that ran kernels.
    pub gpus: Vec<GpuSummary>,
    /// Share of operators' kernel time launched by Tensor Core eligible operators.
    pub tc_eligible_ops_kernel_ratio: f64,
    /// Share of kernel time in Tensor Core kernels (`None` without kernels).
    pub tc_used_ratio: Option<f64>,
    /// torch-tb-profiler's recommendations (HTML links as it writes them).
    pub recommendations: Vec<String>,
    /// oxprof's notes.
    pub notes: Vec<String>,
}

impl PytorchOverview {
    /// Computes the overview from a parsed run.
    pub fn from_parsed(p: &Parsed) -> PytorchOverview {
        let spans: Vec<Range> = p.steps.iter().map(|s| (s.1, s.2)).collect();
        let cost_ranges = cost_ranges(&spans, &p.role_ranges);
        let mut steps = Vec::with_capacity(p.steps.len());
        let mut avg = [0.0; 9];
        for (name, start, end) in &p.steps {
            let step = [(*start, *end)];
            let mut costs = [0.0; 9];
            for (i, r) in cost_ranges.iter().enumerate() {
                costs[i] = ranges::sum(&ranges::intersect(&step, ranges::ending_after(r, *start)));
            }
            costs[8] = end - start;
            for (a, c) in avg.iter_mut().zip(costs) {
                *a += c;
            }
            steps.push(Step {
                name: name.clone(),
                start_us: *start,
                end_us: *end,
                breakdown: Breakdown::from_costs(&costs),
            });
        }
        let n = steps.len().max(1) as f64;
        for a in &mut avg {
            *a /= n;
        }
        let average = Breakdown::from_costs(&avg);
        let ops = &p.listed_ops;
        let gpus = gpu_summaries(p, ops);
        let tc_eligible_ops_kernel_ratio = tc_eligible_ops_kernel_ratio(p, ops);
        let tc_used_ratio = if p.role_ranges[0].is_empty() {
            None
        } else {
            let (mut tc, mut all) = (0.0, 0.0);
            for d in p.devices.iter().filter(|d| d.ty == Ty::Kernel) {
                all += d.dur;
                if d.tc_used {
                    tc += d.dur;
                }
            }
            Some(if all > 0.0 { tc / all } else { 0.0 })
        };
        let mut o = PytorchOverview {
            has_profiler_steps: p.has_profiler_steps,
            tail_steps_removed: p.tail_steps_removed,
            steps,
            average,
            gpus,
            tc_eligible_ops_kernel_ratio,
            tc_used_ratio,
            recommendations: Vec::new(),
            notes: Vec::new(),
        };
        o.recommendations = recommendations(p, &o);
        o.notes = notes(p, &o);
        o
    }
}

/// torch-tb-profiler's `Statistics.create_from_range`: each role gets the time of its
/// ranges not taken by an earlier role (the first role, Kernel, all of its time), and
/// Other what is left of the steps.
fn cost_ranges(steps: &[Range], roles: &[Vec<Range>]) -> Vec<Vec<Range>> {
    let mut out = Vec::with_capacity(roles.len() + 1);
    let mut slots: Vec<Range> = Vec::new();
    for role in roles {
        let range = if slots.is_empty() {
            slots = ranges::merge(steps.to_vec());
            role.clone()
        } else {
            ranges::intersect(&slots, role)
        };
        slots = ranges::subtract(&slots, &range);
        out.push(range);
    }
    out.push(slots);
    out
}

fn gpu_summaries(p: &Parsed, ops: &[usize]) -> Vec<GpuSummary> {
    let Some(first) = p.steps.first() else { return Vec::new() };
    let (span_start, span_end) = (first.1, p.steps.last().map_or(first.2, |s| s.2));
    let span = [(span_start, span_end)];
    let total = span_end - span_start;
    // Tensor Core share of the operators' kernels, per device.
    let mut tc: std::collections::BTreeMap<i64, (f64, f64)> = Default::default();
    let mut has_kernel = false;
    for &op in ops {
        for rt in p.node_runtimes(op) {
            for d in p.runtime_devices(rt) {
                let k = &p.devices[d];
                if k.ty != Ty::Kernel {
                    continue;
                }
                has_kernel = true;
                let Some(dev) = k.kernel.device else { continue };
                let e = tc.entry(dev).or_default();
                let dur = k.end - k.start;
                if k.tc_used {
                    e.0 += dur;
                }
                e.1 += dur;
            }
        }
    }
    let mut out = Vec::new();
    for &gpu in &p.kernel_devices {
        let kernels = || p.devices.iter().filter(move |d| d.ty == Ty::Kernel && d.kernel.device == Some(gpu));
        let busy = ranges::merge(kernels().map(|k| (k.start, k.end)).collect());
        let utilization = ranges::sum(&ranges::intersect(&busy, &span)) / total;
        let bps: Vec<(f64, f64, f64)> = kernels()
            .filter_map(|k| k.kernel.blocks_per_sm.filter(|&b| b > 0.0).map(|b| (k.start, k.end, b)))
            .collect();
        let mut weighted = 0.0;
        let mut any = false;
        for (s, e, v) in ranges::merge_with_value(&bps) {
            let (s, e) = (s.max(span_start), e.min(span_end));
            if s < e {
                weighted += v * (e - s);
                any = true;
            }
        }
        let sm_efficiency = any.then(|| weighted / total);
        let (mut occ, mut occ_time) = (0.0, 0.0);
        for k in kernels() {
            let Some(o) = k.kernel.occupancy.filter(|&o| o >= 0.0) else { continue };
            let (s, e) = (k.start.max(span_start), k.end.min(span_end));
            if s < e {
                occ += o * (e - s);
                occ_time += e - s;
            }
        }
        let tensor_core_ratio = has_kernel.then(|| match tc.get(&gpu) {
            Some(&(t, all)) if all > 0.0 => t / all,
            _ => 0.0,
        });
        out.push(GpuSummary {
            id: gpu,
            properties: p.device_props.iter().find(|d| d.id == gpu).cloned(),
            utilization,
            sm_efficiency,
            achieved_occupancy_pct: (occ_time > 0.0).then(|| occ / occ_time),
            tensor_core_ratio,
        });
    }
    out
}

/// Kernel time launched directly by the lowest Tensor Core eligible operators, over that
/// of all operators.
fn tc_eligible_ops_kernel_ratio(p: &Parsed, ops: &[usize]) -> f64 {
    fn bottom(p: &Parsed, n: usize, out: &mut Vec<usize>) -> bool {
        let before = out.len();
        for c in p.children(n) {
            bottom(p, c, out);
        }
        if p.nodes[n].tc_eligible && out.len() == before {
            out.push(n);
        }
        out.len() > before
    }
    let self_kernel_time = |nodes: &[usize]| -> f64 {
        let mut sum = 0.0;
        for &n in nodes {
            let node = &p.nodes[n];
            for rt in p.node_runtimes(n) {
                if node.kind == NodeKind::Root && p.runtimes[rt].span.is_none() {
                    continue;
                }
                for d in p.runtime_devices(rt) {
                    let k = &p.devices[d];
                    if k.ty == Ty::Kernel {
                        sum += k.end - k.start;
                    }
                }
            }
        }
        sum
    };
    let mut eligible = Vec::new();
    for &root in &p.roots {
        bottom(p, root, &mut eligible);
    }
    let all = self_kernel_time(ops);
    if all > 0.0 { self_kernel_time(&eligible) / all } else { 0.0 }
}

fn href(text: &str, url: &str) -> String {
    format!("<a href=\"{url}\" target=\"_blank\">{text}</a>")
}

/// torch-tb-profiler's `RunProfileData.analyze`.
fn recommendations(p: &Parsed, o: &PytorchOverview) -> Vec<String> {
    let mut out = Vec::new();
    let total = o.average.total;
    let dl = o.average.data_loader / total;
    if dl > 0.05 {
        out.push(format!(
            "This run has high time cost on input data loading. {:.1}% of the step time is in DataLoader. You could \
             try to set num_workers on DataLoader's construction and {}.",
            dl * 100.0,
            href(
                "enable multi-processes on data loading",
                "https://pytorch.org/docs/stable/data.html#single-and-multi-process-data-loading"
            )
        ));
    }
    if p.use_dp && p.used_devices.len() > 1 {
        out.push(format!(
            "It is recommended to {} to do multi-GPU training.",
            href(
                "use DistributedDataParallel instead of DataParallel",
                "https://pytorch.org/docs/stable/notes/cuda.html#cuda-nn-ddp-instead"
            )
        ));
    }
    if p.use_ddp && !p.comm_libs.0 {
        let capable = p.device_props.iter().find_map(|d| match (d.compute_major, d.compute_minor) {
            (Some(major), Some(minor)) => Some(format!("{major}.{minor}").parse::<f64>().unwrap_or(0.0) >= 3.5),
            _ => None,
        });
        if capable == Some(true) {
            out.push(
                "Nccl backend is currently the fastest and highly recommended backend when using DDP for training."
                    .into(),
            );
        }
    }
    let comm = o.average.communication / total;
    if comm > 0.1 {
        // torch-tb-profiler's compression link is a one-element tuple (a trailing comma).
        out.push(format!(
            "This run has high time cost on communication. {:.1}% of the step time is in communication. You could \
             try {} or {} or increase the batch size. Note: Gradient accumulation will increase global effective \
             batch size, which may hurt model convergence and accuracy. For such case, you may want to evaluate {}.",
            comm * 100.0,
            href("Gradient Compression", "('https://pytorch.org/docs/stable/ddp_comm_hooks.html',)"),
            href(
                "Gradient Accumulation",
                "https://towardsdatascience.com/what-is-gradient-accumulation-in-deep-learning-ec034122cfa"
            ),
            href("LAMB optimizer", "https://nvidia.github.io/apex/optimizers.html#apex.optimizers.FusedLAMB")
        ));
    }
    let low: Vec<i64> = o.gpus.iter().filter(|g| g.utilization < 0.5).map(|g| g.id).collect();
    if let Some(first) = low.first() {
        // Word for word as torch-tb-profiler joins them (`0, 1and 2`; `has` only for one digit).
        let mut list = first.to_string();
        for (i, g) in low.iter().enumerate().skip(1) {
            if i == low.len() - 1 {
                list.push_str(&format!("and {g}"));
            } else {
                list.push_str(&format!(", {g}"));
            }
        }
        let has = if list.len() == 1 { "has" } else { "have" };
        out.push(format!(
            "GPU {list} {has} low utilization. You could try to increase batch size to improve. Note: Increasing \
             batch size may affect the speed and stability of model convergence."
        ));
    }
    let first_major = p.device_props.first().and_then(|d| d.compute_major);
    if first_major.is_some_and(|m| m >= 7) && o.tc_used_ratio == Some(0.0) && o.tc_eligible_ops_kernel_ratio > 0.0 {
        out.push(format!(
            "Kernels with {}% time are launched by Tensor Cores eligible operators. You could enable {} to speedup by \
             using FP16.",
            (o.tc_eligible_ops_kernel_ratio * 100.0).round_ties_even(),
            href("Automatic Mixed Precision", "https://pytorch.org/docs/stable/amp.html")
        ));
    }
    if let Some(text) = memory_recommendation(p) {
        out.push(text);
    }
    out
}

/// torch-tb-profiler's memory rule: the first GPU (in the order of its first `[memory]`
/// record) whose peak allocated bytes pass 90 % of its `totalGlobalMem` (the trace's
/// `deviceProperties[id]`). Deliberate difference: 0.4.3 means to skip the CPU but tests
/// device type −1 (the CPU is 0), so it compares the CPU's peak with
/// `deviceProperties[-1]` (the last GPU's memory); oxprof leaves the CPU out.
fn memory_recommendation(p: &Parsed) -> Option<String> {
    if p.device_props.is_empty() {
        return None;
    }
    let mut peaks: Vec<(usize, f64)> = Vec::new();
    for r in &p.memory {
        let Some(id) = r.device.as_deref().and_then(|d| d.strip_prefix("GPU")).and_then(|d| d.parse::<usize>().ok())
        else {
            continue;
        };
        let i = match peaks.iter().position(|(d, _)| *d == id) {
            Some(i) => i,
            None => {
                peaks.push((id, 0.0));
                peaks.len() - 1
            }
        };
        if !r.total_allocated.is_nan() {
            peaks[i].1 = peaks[i].1.max(r.total_allocated);
        }
    }
    peaks.into_iter().find_map(|(id, peak)| {
        let total = p.device_props.get(id)?.memory_bytes? as f64;
        (peak > total * 0.9).then(|| {
            format!(
                "Device memory usage is at the limit of device memory capacity ({:.1}% of {:.1}GB on GPU{id}). To get \
                 better value of your GPU or to use larger batch size for training, please refer to {} or {}.",
                peak / total * 100.0,
                total / 1024.0 / 1024.0 / 1024.0,
                href("Gradient Checkpoint", "https://pytorch.org/docs/stable/checkpoint.html"),
                href("Automatic Mixed Precision", "https://pytorch.org/docs/stable/amp.html")
            )
        })
    })
}

fn notes(p: &Parsed, o: &PytorchOverview) -> Vec<String> {
    let mut out = Vec::new();
    if !o.has_profiler_steps {
        out.push(
            "no steps found: the trace has no ProfilerStep#N events, so the whole run is one step \"0\". Call \
             prof.step() once per training iteration inside torch.profiler.profile(schedule=...) to get steps."
                .into(),
        );
    }
    if o.tail_steps_removed > 0 {
        out.push(format!(
            "the last {} step(s) were left out: the profiler seems to have missed kernels they launched (as \
             torch-tb-profiler does)",
            o.tail_steps_removed
        ));
    }
    if o.gpus.is_empty() {
        out.push("no GPU kernels in this trace: the GPU summary is empty (a CPU-only run)".into());
    }
    if p.unnested > 0 {
        out.push(format!(
            "{} host event(s) overlap an enclosing event on their thread without nesting; left out of the operator \
             tree (as torch-tb-profiler does)",
            p.unnested
        ));
    }
    if p.skipped_no_category > 0 {
        out.push(format!("{} event(s) without a category were skipped", p.skipped_no_category));
    }
    out
}

impl PytorchOverview {
    fn step_table(&self) -> Table {
        let mut t = Table::new("step_breakdown")
            .title("Step time breakdown (µs)")
            .rows_described("rows: the steps, then their average", None)
            .column("step", "Step", ColumnKind::Text, NumberFormat::Shortest);
        for role in ROLES {
            let id = role.to_ascii_lowercase().replace(' ', "_");
            t = t.column(&id, role, ColumnKind::Number, NumberFormat::Fixed(1));
        }
        t = t.column("total", "Total", ColumnKind::Number, NumberFormat::Fixed(1));
        for s in &self.steps {
            let mut row = vec![CellValue::Text(s.name.clone())];
            row.extend(s.breakdown.values().into_iter().map(CellValue::Number));
            t.push_row(row);
        }
        let mut row = vec![CellValue::Text("Average".into())];
        row.extend(self.average.values().into_iter().map(CellValue::Number));
        t.push_row(row);
        t
    }

    fn gpu_table(&self) -> Table {
        let mut t = Table::new("gpus")
            .title("GPU summary")
            .column("gpu", "GPU", ColumnKind::Integer, NumberFormat::Shortest)
            .column("name", "Name", ColumnKind::Text, NumberFormat::Shortest)
            .column("memory_gb", "Memory (GB)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("compute_capability", "Compute capability", ColumnKind::Text, NumberFormat::Shortest)
            .column("sm_count", "SMs", ColumnKind::Integer, NumberFormat::Shortest)
            .column("utilization", "GPU utilization", ColumnKind::Number, NumberFormat::Percent(2))
            .column("sm_efficiency", "Est. SM efficiency", ColumnKind::Number, NumberFormat::Percent(2))
            .column("achieved_occupancy", "Est. achieved occupancy (%)", ColumnKind::Number, NumberFormat::Fixed(2))
            .column(
                "tensor_core_ratio",
                "Kernel time using Tensor Cores",
                ColumnKind::Number,
                NumberFormat::Percent(2),
            );
        let opt = |v: Option<f64>| v.map_or(CellValue::Null, CellValue::Number);
        for g in &self.gpus {
            let props = g.properties.clone().unwrap_or_default();
            let cc = match (props.compute_major, props.compute_minor) {
                (Some(a), Some(b)) => CellValue::Text(format!("{a}.{b}")),
                _ => CellValue::Null,
            };
            t.push_row(vec![
                CellValue::Int(g.id),
                props.name.map_or(CellValue::Null, CellValue::Text),
                opt(props.memory_bytes.map(|m| m as f64 / 1024.0 / 1024.0 / 1024.0)),
                cc,
                props.sm_count.map_or(CellValue::Null, CellValue::Int),
                CellValue::Number(g.utilization),
                opt(g.sm_efficiency),
                opt(g.achieved_occupancy_pct),
                opt(g.tensor_core_ratio),
            ]);
        }
        t
    }
}

impl Report for PytorchOverview {
    fn xprof_body(&self) -> XprofBody {
        super::tables_body(&self.tables())
    }

    fn to_json(&self) -> Value {
        json_of(self)
    }

    fn tables(&self) -> Vec<Table> {
        let mut rec = Table::new("recommendations").title("Performance recommendations").column(
            "recommendation",
            "Recommendation",
            ColumnKind::Text,
            NumberFormat::Shortest,
        );
        for r in &self.recommendations {
            rec.push_row(vec![CellValue::Text(r.clone())]);
        }
        let mut tables = vec![self.step_table()];
        if !self.gpus.is_empty() {
            tables.push(self.gpu_table());
        }
        tables.push(rec);
        tables
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}
