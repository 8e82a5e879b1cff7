//! A run's facts as the detectors read them, the same shape for XSpace runs (from the
//! combined OpStats: XProf's step breakdown, framework op stats, input ops, allocator
//! peaks) and PyTorch traces (torch-tb-profiler's overview, operators and kernels).

use oxprof_api::ApiError;
use oxprof_api::catalog::ServedRun;
use oxprof_api::op_stats::combined_op_stats;
use oxprof_api::request::select_hosts;
use oxprof_api::session::Session;
use oxprof_format::HostFile;
use oxprof_pytorch::kernels::PytorchKernelStats;
use oxprof_pytorch::operators::PytorchOpStats;
use oxprof_pytorch::overview::{Breakdown, PytorchOverview};
use oxprof_xprof::op_stats::HardwareType;
use oxprof_xprof::op_stats::convert::StepSelection;
use oxprof_xprof::tools::framework_op_stats::FrameworkOpStats;
use oxprof_xprof::tools::input_pipeline::{InputPipelineAnalysis, StepDetails};
use serde::Serialize;

use crate::hlo::{HloFamily, HloScan, HostHlo};
use crate::torch::{DataLoader, GpuIdle, TorchCompile};

/// Where a step's time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Waiting for input (tf.data, infeed, the DataLoader, host-to-device input copies).
    Input,
    /// Host code between device work (framework ops, Python, kernel launch preparation).
    Host,
    /// The CUDA runtime's calls (kernel launches, synchronizations).
    KernelLaunch,
    /// Compute: the device's (kernels, XLA ops), or the host's on a CPU-only run.
    DeviceCompute,
    /// Collectives and device-to-device transfers.
    Communication,
    /// Memory copies and sets.
    MemoryTransfer,
    /// Compiling (XLA, tf.function tracing) inside steps.
    Compilation,
    /// Time the profile cannot attribute (idle or unknown).
    Idle,
    /// Outfeed, output and the rest.
    Other,
}

impl Category {
    /// Its name for people.
    pub fn label(self) -> &'static str {
        match self {
            Category::Input => "input",
            Category::Host => "host",
            Category::KernelLaunch => "kernel launch",
            Category::DeviceCompute => "compute",
            Category::Communication => "communication",
            Category::MemoryTransfer => "memory transfer",
            Category::Compilation => "compilation",
            Category::Idle => "idle / unknown",
            Category::Other => "other",
        }
    }
}

/// One category's share of the average step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Share {
    /// The category.
    pub category: Category,
    /// Milliseconds per step.
    pub ms: f64,
    /// Percentage of the step.
    pub percent: f64,
}

/// One op (or kernel) and its self time.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpFact {
    /// Its name.
    pub name: String,
    /// `device` (a kernel or device op) or `host`.
    pub side: &'static str,
    /// Times it ran in the profile.
    pub calls: u64,
    /// Self time over the profile, ms.
    pub self_ms: f64,
    /// Self time per step, ms (the profile's total over its steps; equal to `self_ms`
    /// without steps).
    pub self_ms_per_step: f64,
}

/// The memory peak of one allocator or device against its capacity.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MemoryPeak {
    /// The allocator or device.
    pub name: String,
    /// Bytes in use at the peak.
    pub peak_bytes: i64,
    /// Bytes it could hold.
    pub capacity_bytes: i64,
    /// Fragmentation at the peak as the allocator reported it (0..1; `None` unknown).
    pub fragmentation: Option<f64>,
}

/// One host's (rank's) average step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostStep {
    /// The host.
    pub host: String,
    /// Its average step time, ms.
    pub step_time_ms: f64,
}

/// Kernel launches per step.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Launches {
    /// Kernels per step.
    pub kernels_per_step: f64,
    /// Their mean duration, µs.
    pub mean_kernel_us: f64,
}

/// Tensor Core use (PyTorch on NVIDIA GPUs).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct TensorCores {
    /// Share of GPU kernel time in ops that could use Tensor Cores (0..1).
    pub eligible_ratio: f64,
    /// Share of GPU kernel time in kernels that used them (0..1).
    pub used_ratio: f64,
}

/// How the device's compute used its matrix units (XSpace GPU and TPU runs).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MatrixUnits {
    /// Share of the device's compute time in 16-bit ops (0..100; XProf's precision
    /// statement suggests 16-bit under 10).
    pub compute_16bit_percent: f64,
    /// The matrix units' utilization from the TPU's performance counters (0..100; `None`
    /// without counters).
    pub mxu_utilization_percent: Option<f64>,
}

/// What the detectors read.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Facts {
    /// `xspace` or `pytorch`.
    pub kind: &'static str,
    /// The hosts read.
    pub hosts: Vec<String>,
    /// The accelerator (`GPU`, `TPU`; `None`: a CPU-only run, where the host's compute is
    /// the model's compute).
    pub device: Option<String>,
    /// Steps found (0: the profile has no step markers).
    pub steps: usize,
    /// The average step, ms.
    pub step_time_ms: f64,
    /// The slowest step, ms.
    pub step_time_max_ms: f64,
    /// The average step by category, largest first.
    pub breakdown: Vec<Share>,
    /// Ops and kernels by self time, largest first (at most 10).
    pub top_ops: Vec<OpFact>,
    /// The input pipeline's ops by self time (XSpace), largest first (at most 5).
    pub input_ops: Vec<OpFact>,
    /// Ops that make the host wait for the device (`aten::item`, …), by self time.
    pub sync_ops: Vec<OpFact>,
    /// Kernel launches (PyTorch).
    pub launches: Option<Launches>,
    /// Tensor Core use (PyTorch on GPUs that have them).
    pub tensor_cores: Option<TensorCores>,
    /// Compute precision and MXU counters (XSpace device runs).
    pub matrix_units: Option<MatrixUnits>,
    /// Memory peaks against capacity.
    pub memory: Vec<MemoryPeak>,
    /// Each host's average step (runs of several hosts or ranks).
    pub per_host: Vec<HostStep>,
    /// Top-level HLO instructions XProf's HLO detectors look at, by kind (XSpace runs with
    /// HLO protos).
    pub hlo: Vec<HloFamily>,
    /// The GPU's idle time by HTA's causes (PyTorch traces with GPU work).
    pub gpu_idle: Option<GpuIdle>,
    /// The DataLoader's fetches (PyTorch traces that show them).
    pub data_loader: Option<DataLoader>,
    /// torch.compile's compiling (PyTorch traces with Dynamo's timers or recompiled regions).
    pub torch_compile: Option<TorchCompile>,
    /// What could not be read.
    pub notes: Vec<String>,
}

impl Facts {
    /// The share of `category` (zero when absent).
    pub fn share(&self, category: Category) -> Share {
        self.breakdown.iter().find(|s| s.category == category).cloned().unwrap_or(Share {
            category,
            ms: 0.0,
            percent: 0.0,
        })
    }
}

/// PyTorch operators that copy a device value to the host and so wait for every kernel
/// queued before them.
pub(crate) const SYNC_OPS: &[&str] =
    &["aten::item", "aten::_local_scalar_dense", "aten::nonzero", "aten::masked_select", "aten::cpu"];

/// Gathers the facts of `run` (`host`: one host; `None`: all).
pub(crate) fn gather(session: &Session, run: &ServedRun, host: Option<&str>) -> Result<Facts, ApiError> {
    let files = select_hosts(run, host)?;
    let Some(first) = files.first() else {
        return Err(ApiError::BadParameter { name: "host".into(), reason: format!("run {} has no hosts", run.name) });
    };
    if is_pytorch(session, first)? { pytorch_facts(session, &files) } else { xspace_facts(session, run, host, &files) }
}

/// Whether `file` is a PyTorch (Kineto) trace, by the format seam's verdict on its first
/// bytes (importing it would read a multi-GB trace twice).
fn is_pytorch(session: &Session, file: &HostFile) -> Result<bool, ApiError> {
    if oxprof_format::discovery::is_pod_partial(&file.path) {
        // A pod result's host: its partial holds an XSpace host's analysis.
        return Ok(false);
    }
    let detected = session.store().detect(&file.path).map_err(ApiError::from)?;
    Ok(detected.format == oxprof_format::Format::Kineto)
}

/// Shares from (category, ms) pairs, merged by category, largest first.
fn shares(parts: &[(Category, f64)], step_ms: f64) -> Vec<Share> {
    let mut out: Vec<Share> = Vec::new();
    for &(category, ms) in parts {
        if !(ms.is_finite() && ms > 0.0) {
            continue;
        }
        match out.iter_mut().find(|s| s.category == category) {
            Some(share) => share.ms += ms,
            None => out.push(Share { category, ms, percent: 0.0 }),
        }
    }
    for share in &mut out {
        share.percent = if step_ms > 0.0 { 100.0 * share.ms / step_ms } else { 0.0 };
    }
    out.sort_by(|a, b| b.ms.total_cmp(&a.ms).then(a.category.cmp(&b.category)));
    out
}

/// Moves up to `ms` into `to` from the categories `from`, in their order (a time the
/// breakdown counted under a cause it does not name): what was moved.
fn move_into(parts: &mut Vec<(Category, f64)>, to: Category, ms: f64, from: &[Category]) -> f64 {
    let mut left = ms;
    for source in from {
        for (_, part) in parts.iter_mut().filter(|(c, _)| c == source) {
            let moved = left.min(*part).max(0.0);
            *part -= moved;
            left -= moved;
        }
    }
    let moved = ms - left;
    if moved > 0.0 {
        parts.push((to, moved));
    }
    moved
}

fn per_step(total_ms: f64, steps: usize) -> f64 {
    if steps > 0 { total_ms / steps as f64 } else { total_ms }
}

fn xspace_facts(
    session: &Session,
    run: &ServedRun,
    host: Option<&str>,
    files: &[&HostFile],
) -> Result<Facts, ApiError> {
    let op_stats = combined_op_stats(session, run, host, StepSelection::DropIncomplete)?;
    let analysis = InputPipelineAnalysis::from_op_stats(&op_stats);
    let device = match op_stats.run_environment.hardware_type {
        HardwareType::Gpu => Some("GPU".to_string()),
        HardwareType::Tpu => Some("TPU".to_string()),
        _ => None,
    };
    // On a CPU-only run the host's compute is the model's compute.
    let host_side = if device.is_some() { Category::Host } else { Category::DeviceCompute };
    let mut notes = Vec::new();
    let (steps, mut parts, max_ms) = match &analysis.step_details {
        StepDetails::Generic(steps) => {
            let n = steps.len().max(1) as f64;
            let sum = |f: &dyn Fn(&oxprof_xprof::tools::input_pipeline::PerGenericStepDetails) -> f64| {
                steps.iter().map(f).sum::<f64>() / n
            };
            let parts = vec![
                (Category::Input, sum(&|s| s.host_wait_input_ms + s.host_to_device_ms)),
                (host_side, sum(&|s| s.host_compute_ms + s.host_prepare_ms)),
                (Category::DeviceCompute, sum(&|s| s.device_compute_ms)),
                (Category::Communication, sum(&|s| s.device_to_device_ms + s.device_collectives_ms)),
                (Category::Compilation, sum(&|s| s.host_compile_ms)),
                (Category::Idle, sum(&|s| s.unknown_time_ms)),
                (Category::Other, sum(&|s| s.output_ms)),
            ];
            let max = steps.iter().map(|s| s.step_time_ms).fold(0.0, f64::max);
            (steps.len(), parts, max)
        }
        StepDetails::Tpu(steps) => {
            let n = steps.len().max(1) as f64;
            let sum = |f: &dyn Fn(&oxprof_xprof::tools::input_pipeline::PerTpuStepDetails) -> f64| {
                steps.iter().map(f).sum::<f64>() / n
            };
            let parts = vec![
                (Category::Input, sum(&|s| s.tc_infeed_time_ms)),
                (Category::DeviceCompute, sum(&|s| s.tc_compute_time_ms)),
                (Category::Communication, sum(&|s| s.all_reduce_compute_time_ms + s.all_reduce_sync_time_ms)),
                (Category::Host, sum(&|s| s.host_transfer_ms)),
                (Category::Idle, sum(&|s| s.tc_idle_time_ms)),
                (Category::Other, sum(&|s| s.tc_outfeed_time_ms)),
            ];
            (steps.len(), parts, analysis.step_time_summary.maximum)
        }
    };
    let step_ms = analysis.step_time_summary.average;
    if steps == 0 {
        notes.push(
            "no steps found (no step markers in the profile): times below are totals over the profile".to_string(),
        );
    }
    let ops = FrameworkOpStats::from_op_stats(&op_stats);
    let mut top_ops: Vec<OpFact> = ops
        .without_idle
        .iter()
        .map(|r| OpFact {
            name: if r.op_name.is_empty() { r.op_type.clone() } else { r.op_name.clone() },
            side: if r.on_device { "device" } else { "host" },
            calls: u64::from(r.times.occurrences),
            self_ms: r.times.total_self_time_in_us / 1000.0,
            self_ms_per_step: per_step(r.times.total_self_time_in_us / 1000.0, steps),
        })
        .collect();
    top_ops.sort_by(|a, b| b.self_ms.total_cmp(&a.self_ms).then(a.name.cmp(&b.name)));
    top_ops.truncate(10);
    let mut input_ops: Vec<OpFact> = analysis
        .input_op_details
        .iter()
        .map(|op| OpFact {
            name: op.op_name.clone(),
            side: "host",
            calls: op.count,
            self_ms: op.self_time_in_ms,
            self_ms_per_step: per_step(op.self_time_in_ms, steps),
        })
        .collect();
    input_ops.sort_by(|a, b| b.self_ms.total_cmp(&a.self_ms).then(a.name.cmp(&b.name)));
    input_ops.truncate(5);
    let mut memory = Vec::new();
    for file in files {
        match oxprof_api::memory_profile::allocator_profile(session, file) {
            Ok(Some(profile)) => {
                for (name, allocator) in &profile.allocators {
                    let summary = &allocator.summary;
                    if summary.memory_capacity > 0 {
                        memory.push(MemoryPeak {
                            name: format!("{} {name}", file.host),
                            peak_bytes: summary.peak_stats.peak_bytes_in_use,
                            capacity_bytes: summary.memory_capacity,
                            fragmentation: Some(summary.peak_stats.fragmentation).filter(|f| f.is_finite()),
                        });
                    }
                }
            }
            Ok(None) => {}
            Err(e) => notes.push(format!("{}: allocator profile not read: {e}", file.host)),
        }
    }
    let mut per_host = Vec::new();
    if files.len() > 1 {
        for file in files {
            let one = combined_op_stats(session, run, Some(&file.host), StepSelection::DropIncomplete)?;
            let step = InputPipelineAnalysis::from_op_stats(&one).step_time_summary.average;
            per_host.push(HostStep { host: file.host.clone(), step_time_ms: step });
        }
    }
    let tensor_cores = gpu_tensor_cores(&op_stats.kernel_stats_db.reports);
    let matrix_units = device.as_ref().and_then(|_| {
        let precision = op_stats.device_op_metrics_db.precision_stats.clone()?;
        let total = precision.compute_16bit_ps.saturating_add(precision.compute_32bit_ps);
        let counters = op_stats.performance_counter_result.as_ref().map(|c| c.matrix_unit_utilization_percent);
        (total > 0).then(|| MatrixUnits {
            compute_16bit_percent: 100.0 * precision.compute_16bit_ps as f64 / total as f64,
            mxu_utilization_percent: counters.filter(|u| *u > 0.0),
        })
    });
    let total_ms = if steps > 0 { step_ms } else { parts.iter().map(|(_, ms)| ms).sum() };
    // The host plane once per host, kept by the session: the HLO protos, XLA:CPU's op
    // times, compiling in steps.
    let mut hlo_scan = HloScan::new(&op_stats);
    let mut compile_ms: Vec<f64> = Vec::new();
    match session.host_artifacts::<HostHlo>(files, false) {
        Ok(hosts) => {
            for (file, host) in files.iter().zip(&hosts) {
                hlo_scan.add(&file.host, host, &mut notes);
                compile_ms.extend_from_slice(&host.compile_ms);
            }
        }
        Err(e) => notes.push(format!("HLO modules and compile events not read: {e}")),
    }
    // Op times are the profile's: per step of the step markers the profile holds (XProf's
    // steps leave out incomplete ones).
    let markers = compile_ms.len() / files.len().max(1);
    let hlo = hlo_scan.finish(if markers > 0 { markers } else { steps });
    // XProf counts JAX's and XLA's compiling on the host as compute: moved to compilation,
    // from the host's side of the step, when XProf found none. The median step's: a
    // program compiled once (in the first step) is warm-up, one compiled in every step is
    // recompilation.
    compile_ms.sort_by(f64::total_cmp);
    let compile_per_step = compile_ms.get(compile_ms.len() / 2).copied().unwrap_or(0.0);
    if compile_per_step > 0.0 && !parts.iter().any(|(c, ms)| *c == Category::Compilation && *ms > 0.0) {
        move_into(&mut parts, Category::Compilation, compile_per_step, &[host_side]);
    }
    Ok(Facts {
        kind: "xspace",
        hosts: files.iter().map(|f| f.host.clone()).collect(),
        device,
        steps,
        step_time_ms: step_ms,
        step_time_max_ms: max_ms,
        breakdown: shares(&parts, total_ms),
        top_ops,
        input_ops,
        sync_ops: Vec::new(),
        launches: None,
        tensor_cores,
        matrix_units,
        memory,
        per_host,
        hlo,
        gpu_idle: None,
        data_loader: None,
        torch_compile: None,
        notes,
    })
}

/// Tensor Core use from XProf's kernel stats (GPU runs): the shares of kernel time in
/// kernels of eligible ops and in kernels that used them, as torch-tb-profiler defines them.
fn gpu_tensor_cores(kernels: &[oxprof_xprof::op_stats::KernelReport]) -> Option<TensorCores> {
    let total: u64 = kernels.iter().map(|k| k.total_duration_ns).sum();
    if total == 0 {
        return None;
    }
    let share = |keep: &dyn Fn(&oxprof_xprof::op_stats::KernelReport) -> bool| {
        kernels.iter().filter(|k| keep(k)).map(|k| k.total_duration_ns).sum::<u64>() as f64 / total as f64
    };
    Some(TensorCores {
        eligible_ratio: share(&|k| k.is_op_tensor_core_eligible),
        used_ratio: share(&|k| k.is_kernel_using_tensor_core),
    })
}

/// `b` by category (`gpu`: the trace has GPUs; without, host operators are the compute).
fn pytorch_parts(b: &Breakdown, gpu: bool) -> Vec<(Category, f64)> {
    vec![
        (Category::Input, b.data_loader / 1000.0),
        (if gpu { Category::Host } else { Category::DeviceCompute }, b.cpu_exec / 1000.0),
        (Category::KernelLaunch, b.runtime / 1000.0),
        (Category::DeviceCompute, b.kernel / 1000.0),
        (Category::Communication, b.communication / 1000.0),
        (Category::MemoryTransfer, (b.memcpy + b.memset) / 1000.0),
        // torch-tb-profiler's "Other": time no traced activity covers (untraced Python,
        // waits).
        (Category::Idle, b.other / 1000.0),
    ]
}

/// Each GPU's memory peak (reserved by the caching allocator) against its capacity.
fn pytorch_memory(parsed: &oxprof_pytorch::Parsed, overview: &PytorchOverview, host: &str) -> Vec<MemoryPeak> {
    let memory = oxprof_pytorch::memory::PytorchMemory::from_parsed(parsed);
    let mut out = Vec::new();
    for device in &memory.devices {
        let Some(id) = device.device.strip_prefix("GPU").and_then(|id| id.trim().parse::<i64>().ok()) else {
            continue;
        };
        let capacity = overview
            .gpus
            .iter()
            .find(|g| g.id == id)
            .and_then(|g| g.properties.as_ref())
            .and_then(|p| p.memory_bytes)
            .unwrap_or(0);
        // The caching allocator grows its reserve only when no cached block fits: what was
        // reserved but not allocated when it last grew is the fragmentation that cost memory.
        let grown = device.curve.iter().fold(None::<&oxprof_pytorch::memory::CurvePoint>, |best, p| match best {
            Some(b) if b.reserved_bytes >= p.reserved_bytes => Some(b),
            _ => Some(p),
        });
        let reserved = grown.map_or(0.0, |p| p.reserved_bytes);
        let fragmentation = grown
            .filter(|p| p.reserved_bytes > 0.0)
            .map(|p| ((p.reserved_bytes - p.allocated_bytes) / p.reserved_bytes).clamp(0.0, 1.0));
        let peak = reserved.max(device.peak_allocated_bytes.unwrap_or(0.0));
        if capacity > 0 && peak > 0.0 {
            out.push(MemoryPeak {
                name: format!("{host} GPU{id}"),
                peak_bytes: peak as i64,
                capacity_bytes: capacity,
                fragmentation,
            });
        }
    }
    out
}

fn pytorch_facts(session: &Session, files: &[&HostFile]) -> Result<Facts, ApiError> {
    let mut notes = Vec::new();
    // Parses and HTA's rows from one lookup (a one-shot session keeps nothing between two).
    let traces = oxprof_api::pytorch::host_pytorch_files(session, files, false)?;
    let parsed: Vec<_> = traces.iter().map(|t| t.parsed().clone()).collect();
    let hta: Vec<_> = traces.iter().map(|t| t.hta().clone()).collect();
    let Some(first) = parsed.first() else { return Err(ApiError::Panicked) };
    if files.len() > 1 {
        notes.push(format!(
            "ops, kernels and memory are {}'s (one rank at a time; choose with --host); step times are every rank's",
            files[0].host
        ));
    }
    let overview = PytorchOverview::from_parsed(first);
    let steps = overview.steps.len();
    let step_ms = overview.average.total / 1000.0;
    let max_ms = overview.steps.iter().map(|s| s.breakdown.total / 1000.0).fold(0.0, f64::max);
    if !overview.has_profiler_steps {
        notes.push("no ProfilerStep# markers: the trace's whole span counts as one step".to_string());
    }
    let operators = PytorchOpStats::from_parsed(first);
    let kernels = PytorchKernelStats::from_parsed(first);
    let step_count = steps.max(1);
    let mut top_ops: Vec<OpFact> = kernels
        .by_name
        .iter()
        .map(|k| OpFact {
            name: k.name.clone(),
            side: "device",
            calls: k.calls,
            self_ms: k.total_us / 1000.0,
            self_ms_per_step: per_step(k.total_us / 1000.0, step_count),
        })
        .chain(operators.by_name.iter().map(|op| OpFact {
            name: op.name.clone(),
            side: "host",
            calls: op.calls,
            self_ms: op.host_self_us / 1000.0,
            self_ms_per_step: per_step(op.host_self_us / 1000.0, step_count),
        }))
        .collect();
    top_ops.sort_by(|a, b| b.self_ms.total_cmp(&a.self_ms).then(a.name.cmp(&b.name)));
    top_ops.truncate(10);
    let mut sync_ops: Vec<OpFact> = operators
        .by_name
        .iter()
        .filter(|op| SYNC_OPS.contains(&op.name.as_str()))
        .map(|op| OpFact {
            name: op.name.clone(),
            side: "host",
            calls: op.calls,
            // The wait is the op's whole host time (its self time is mostly the copy).
            self_ms: op.host_total_us / 1000.0,
            self_ms_per_step: per_step(op.host_total_us / 1000.0, step_count),
        })
        .collect();
    sync_ops.sort_by(|a, b| b.self_ms.total_cmp(&a.self_ms).then(a.name.cmp(&b.name)));
    let calls: u64 = kernels.by_name.iter().map(|k| k.calls).sum();
    let kernel_us: f64 = kernels.by_name.iter().map(|k| k.total_us).sum();
    let launches = (calls > 0).then(|| Launches {
        kernels_per_step: calls as f64 / step_count as f64,
        mean_kernel_us: kernel_us / calls as f64,
    });
    let gpu = !overview.gpus.is_empty();
    let trace = hta.first().ok_or(ApiError::Panicked)?;
    let gpu_idle = if gpu { GpuIdle::from_rows(&trace.parts.idle, step_count) } else { None };
    let data_loader = crate::torch::data_loader(&trace.spans, &trace.steps);
    let torch_compile = crate::torch::torch_compile(&trace.spans, &trace.steps);
    let mut parts = pytorch_parts(&overview.average, gpu);
    let host_side = if gpu { Category::Host } else { Category::DeviceCompute };
    // torch-tb-profiler 0.4.3 drops DataLoader spans written as `user_annotation` (as recent
    // Kineto writes them): their time is in its "Other" or CPU Exec.
    if let Some(loader) = data_loader.as_ref().filter(|_| overview.average.data_loader <= 0.0) {
        move_into(&mut parts, Category::Input, loader.ms_per_step, &[Category::Idle, host_side]);
    }
    if let Some(compile) = torch_compile.as_ref().filter(|c| c.median_step_ms > 0.0) {
        move_into(&mut parts, Category::Compilation, compile.median_step_ms, &[Category::Idle, host_side]);
    }
    let tensor_cores = overview
        .tc_used_ratio
        .map(|used| TensorCores { eligible_ratio: overview.tc_eligible_ops_kernel_ratio, used_ratio: used });
    let mut per_host = Vec::new();
    if files.len() > 1 {
        per_host.push(HostStep { host: files[0].host.clone(), step_time_ms: step_ms });
        for (file, parsed) in files.iter().zip(&parsed).skip(1) {
            let overview = PytorchOverview::from_parsed(parsed);
            per_host.push(HostStep { host: file.host.clone(), step_time_ms: overview.average.total / 1000.0 });
        }
    }
    Ok(Facts {
        kind: "pytorch",
        hosts: files.iter().map(|f| f.host.clone()).collect(),
        device: gpu.then(|| "GPU".to_string()),
        steps,
        step_time_ms: step_ms,
        step_time_max_ms: max_ms,
        breakdown: shares(&parts, step_ms),
        top_ops,
        input_ops: Vec::new(),
        sync_ops,
        launches,
        tensor_cores,
        matrix_units: None,
        memory: pytorch_memory(first, &overview, &files[0].host),
        per_host,
        hlo: Vec::new(),
        gpu_idle,
        data_loader,
        torch_compile,
        notes,
    })
}
