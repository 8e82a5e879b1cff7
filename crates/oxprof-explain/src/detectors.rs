//! The bottleneck detectors, as registered checks: each has an id and a title and reads a
//! run's [`Facts`], answering a [`Finding`] (severity, the time at stake per step, the
//! evidence, what to do next, the command that shows more) or nothing.
//!
//! Thresholds are shares of the average step: a finding costs at least [`NOTICE`] of it
//! to be raised at all, and becomes critical past [`BOUNDS`].

use crate::facts::{Category, Facts, OpFact};
use crate::hlo::HloKind;
use crate::{Finding, Severity};

/// A registered check.
#[derive(Debug, Clone, Copy)]
pub struct Detector {
    /// Its id (the findings' `id`).
    pub id: &'static str,
    /// What it looks for.
    pub title: &'static str,
    /// The check.
    pub check: fn(&Facts) -> Option<Finding>,
}

/// Every detector, in the order they run (findings are ranked afterwards).
pub const DETECTORS: &[Detector] = &[
    Detector { id: "input_bound", title: "steps wait for input", check: input_bound },
    Detector { id: "host_bound", title: "the host keeps the device waiting", check: host_bound },
    Detector { id: "launch_overhead", title: "many tiny kernels: launch overhead", check: launch_overhead },
    Detector { id: "sync_points", title: "host-device synchronizations in the step", check: sync_points },
    Detector { id: "communication", title: "communication not hidden behind compute", check: communication },
    Detector { id: "compilation", title: "compiling inside steps", check: compilation },
    Detector { id: "idle", title: "time no one can account for", check: idle },
    Detector { id: "stragglers", title: "one host or rank slower than the others", check: stragglers },
    Detector { id: "memory_near_capacity", title: "memory peak near capacity", check: memory_near_capacity },
    Detector { id: "tensor_cores_unused", title: "Tensor Cores left unused", check: tensor_cores_unused },
    Detector { id: "hlo_unfused", title: "reshapes and dynamic-update-slices outside fusions", check: hlo_unfused },
    Detector { id: "hlo_layout_copies", title: "copies and transposes that change layouts", check: hlo_layout_copies },
    Detector { id: "hlo_converts", title: "element type converts (f32 <-> bf16 round trips)", check: hlo_converts },
    Detector { id: "gpu_idle", title: "GPU idle between kernels, by cause (HTA)", check: gpu_idle },
    Detector { id: "memory_fragmentation", title: "memory reserved but unusable", check: memory_fragmentation },
    Detector { id: "matrix_units_underused", title: "MXU / Tensor Cores underused", check: matrix_units_underused },
];

/// The least share of the step worth a finding.
pub const NOTICE: f64 = 10.0;
/// The share past which a cause bounds the run.
pub const BOUNDS: f64 = 40.0;

fn severity(percent: f64) -> Severity {
    if percent >= BOUNDS { Severity::Critical } else { Severity::Warning }
}

fn ms(value: f64) -> String {
    if value >= 100.0 { format!("{value:.0} ms") } else { format!("{value:.2} ms") }
}

fn op_line(op: &OpFact) -> String {
    format!("{} ({}, {} calls, {} per step)", op.name, op.side, op.calls, ms(op.self_ms_per_step))
}

/// A finding for one category's share of the step, when it is at least `notice` percent
/// (evidence starts with the share; the caller adds the rest).
fn category_finding(facts: &Facts, id: &'static str, category: Category, notice: f64, title: &str) -> Option<Finding> {
    let share = facts.share(category);
    if share.percent < notice {
        return None;
    }
    Some(Finding {
        id,
        title: title.to_string(),
        severity: severity(share.percent),
        time_at_stake_ms: share.ms,
        percent_of_step: share.percent,
        evidence: vec![format!(
            "{} of the {} step is {} ({:.1}%)",
            ms(share.ms),
            ms(facts.step_time_ms),
            category.label(),
            share.percent
        )],
        suggestion: String::new(),
        see: String::new(),
    })
}

fn input_bound(facts: &Facts) -> Option<Finding> {
    let mut finding = category_finding(facts, "input_bound", Category::Input, NOTICE, "Steps wait for input")?;
    finding.evidence.extend(facts.input_ops.iter().take(3).map(|op| format!("input op {}", op_line(op))));
    let (suggestion, see) = if let Some(loader) = &facts.data_loader {
        finding.evidence.push(format!(
            "{}: {:.1} fetches per step, {} per step",
            loader.name,
            loader.calls_per_step,
            ms(loader.ms_per_step)
        ));
        if loader.workers {
            finding.evidence.push(
                "the training process waits for DataLoader workers: they preprocess slower than the step consumes"
                    .into(),
            );
            (
                "make the workers keep up: more num_workers (up to the free cores), a larger prefetch_factor, \
                 persistent_workers=True, and cheaper per-sample work (decode once and cache, move augmentation to \
                 the GPU)",
                "oxprof events PATH --name DataLoader --aggregate",
            )
        } else {
            finding.evidence.push(
                "loading and preprocessing run in the training process (num_workers=0): the GPU waits for them".into(),
            );
            (
                "load in worker processes: DataLoader(num_workers>0, pin_memory=True, persistent_workers=True), or \
                 cache preprocessed data",
                "oxprof events PATH --name DataLoader --aggregate",
            )
        }
    } else if facts.kind == "pytorch" {
        (
            "feed the GPU faster: DataLoader(num_workers>0, pin_memory=True, persistent_workers=True, prefetch_factor), \
             move decoding/augmentation off the training process, or cache preprocessed data",
            "oxprof data pytorch_overview PATH --format md",
        )
    } else {
        (
            "overlap input with compute: dataset.prefetch(tf.data.AUTOTUNE), map(num_parallel_calls=AUTOTUNE), \
             cache() after expensive steps, and read the input ops table for the slowest stage",
            "oxprof data input_pipeline_analyzer PATH --format md",
        )
    };
    finding.suggestion = suggestion.into();
    finding.see = see.into();
    Some(finding)
}

fn host_bound(facts: &Facts) -> Option<Finding> {
    // Without a device, the host's work is the compute (counted as such).
    facts.device.as_ref()?;
    let mut finding =
        category_finding(facts, "host_bound", Category::Host, NOTICE, "The host keeps the device waiting")?;
    finding.evidence.extend(
        facts.top_ops.iter().filter(|op| op.side == "host").take(3).map(|op| format!("host op {}", op_line(op))),
    );
    let device = facts.share(Category::DeviceCompute).percent;
    finding.evidence.push(format!("device compute is {device:.1}% of the step"));
    finding.suggestion = "do less on the host per step: compile the step (tf.function(jit_compile=True), jax.jit, \
                          torch.compile or CUDA graphs), fuse small ops, and move Python work out of the loop"
        .into();
    finding.see = if facts.kind == "pytorch" {
        "oxprof data pytorch_op_stats PATH --format md"
    } else {
        "oxprof data framework_op_stats PATH --format md"
    }
    .into();
    Some(finding)
}

fn launch_overhead(facts: &Facts) -> Option<Finding> {
    let launches = facts.launches.as_ref()?;
    let runtime = facts.share(Category::KernelLaunch);
    let tiny = launches.mean_kernel_us < 20.0 && launches.kernels_per_step >= 200.0;
    if runtime.percent < NOTICE && !tiny {
        return None;
    }
    let stake = runtime.ms.max(0.0);
    Some(Finding {
        id: "launch_overhead",
        title: "Many tiny kernels: the step pays their launch overhead".into(),
        severity: severity(runtime.percent),
        time_at_stake_ms: stake,
        percent_of_step: runtime.percent,
        evidence: vec![
            format!(
                "{:.0} kernels per step, {:.1} µs each on average",
                launches.kernels_per_step, launches.mean_kernel_us
            ),
            format!("the CUDA runtime's calls take {} per step ({:.1}%)", ms(runtime.ms), runtime.percent),
        ],
        suggestion: "launch fewer, larger kernels: torch.compile (mode=\"reduce-overhead\" adds CUDA graphs), fused \
                     optimizers (foreach/fused=True), larger batches"
            .into(),
        see: "oxprof data pytorch_kernel_stats PATH --format md".into(),
    })
}

fn sync_points(facts: &Facts) -> Option<Finding> {
    // The GPU work a synchronization waits for is the host's to lose only with a GPU.
    facts.device.as_ref()?;
    // `aten::item` runs `aten::_local_scalar_dense` inside it: counted once.
    let has_item = facts.sync_ops.iter().any(|op| op.name == "aten::item");
    let outer = |op: &&OpFact| !(has_item && op.name == "aten::_local_scalar_dense");
    let total: f64 = facts.sync_ops.iter().filter(outer).map(|op| op.self_ms_per_step).sum();
    let percent = if facts.step_time_ms > 0.0 { 100.0 * total / facts.step_time_ms } else { 0.0 };
    let calls_per_step: f64 =
        facts.sync_ops.iter().filter(outer).map(|op| op.calls as f64).sum::<f64>() / facts.steps.max(1) as f64;
    if facts.sync_ops.is_empty() || (percent < NOTICE / 2.0 && calls_per_step < 1.0) {
        return None;
    }
    let mut evidence: Vec<String> = facts.sync_ops.iter().take(3).map(op_line).collect();
    evidence.push(format!("{calls_per_step:.1} synchronizing calls per step, {} per step in them", ms(total)));
    Some(Finding {
        id: "sync_points",
        title: "The step synchronizes the host with the GPU".into(),
        severity: if percent >= NOTICE { severity(percent) } else { Severity::Info },
        time_at_stake_ms: total,
        percent_of_step: percent,
        evidence,
        suggestion: "keep values on the GPU inside the step: avoid .item(), .cpu(), printing or logging tensors, and \
                     data-dependent shapes (nonzero, masked_select); log every N steps instead"
            .into(),
        see: "oxprof data pytorch_op_stats PATH --format md".into(),
    })
}

fn communication(facts: &Facts) -> Option<Finding> {
    let mut finding = category_finding(
        facts,
        "communication",
        Category::Communication,
        15.0,
        "Communication is not hidden behind compute",
    )?;
    finding.suggestion = "overlap collectives with compute (DDP bucket sizes, gradient accumulation, FSDP prefetch; \
                          XLA's async collectives), and check the interconnect's bandwidth"
        .into();
    finding.see = if facts.kind == "pytorch" {
        "oxprof data hta_distributed PATH --format md"
    } else {
        "oxprof data overview_page PATH --format md"
    }
    .into();
    Some(finding)
}

fn compilation(facts: &Facts) -> Option<Finding> {
    let mut finding = category_finding(
        facts,
        "compilation",
        Category::Compilation,
        5.0,
        "Steps compile (recompilation inside the loop)",
    )?;
    if let Some(compile) = &facts.torch_compile {
        finding.evidence.push(format!("{} steps compiled (torch.compile)", compile.steps_compiling));
        finding
            .evidence
            .extend(compile.top.iter().map(|(name, total)| format!("{name}: {} in the profile", ms(*total))));
        if compile.max_recompile > 0 {
            finding.evidence.push(format!("a compiled region was recompiled {} times", compile.max_recompile));
        }
        finding.suggestion = "stop torch.compile recompiling: keep input shapes fixed (pad) or mark them dynamic \
                              (torch._dynamo.mark_dynamic, dynamic=True), keep Python scalars and module attributes \
                              constant, and read why with TORCH_LOGS=recompiles"
            .into();
        finding.see = "oxprof events PATH --name \"dynamo_timed\" --aggregate".into();
        return Some(finding);
    }
    finding.suggestion = "keep shapes and Python values fixed between steps (pad batches, mark static arguments) so \
                          the step compiles once"
        .into();
    finding.see = "oxprof data input_pipeline_analyzer PATH --format md".into();
    Some(finding)
}

fn idle(facts: &Facts) -> Option<Finding> {
    let mut finding = category_finding(facts, "idle", Category::Idle, 20.0, "Much of the step is idle or unaccounted")?;
    finding.suggestion = "look at the trace around a slow step for gaps: host work the profiler did not trace, waits \
                          on other hosts, or Python between steps"
        .into();
    finding.see = "oxprof serve PATH (trace viewer)".into();
    Some(finding)
}

fn stragglers(facts: &Facts) -> Option<Finding> {
    if facts.per_host.len() < 2 {
        return None;
    }
    let mut times: Vec<f64> = facts.per_host.iter().map(|h| h.step_time_ms).filter(|t| *t > 0.0).collect();
    if times.len() < 2 {
        return None;
    }
    times.sort_by(f64::total_cmp);
    // The lower median: with two hosts, the faster one.
    let median = times[(times.len() - 1) / 2];
    let slowest = facts.per_host.iter().max_by(|a, b| a.step_time_ms.total_cmp(&b.step_time_ms))?;
    let excess = slowest.step_time_ms - median;
    if median <= 0.0 || slowest.step_time_ms < 1.2 * median {
        return None;
    }
    let percent = 100.0 * excess / slowest.step_time_ms;
    Some(Finding {
        id: "stragglers",
        title: format!("{} is a straggler", slowest.host),
        severity: severity(percent),
        time_at_stake_ms: excess,
        percent_of_step: percent,
        evidence: vec![
            format!("{} takes {} per step; the median host {}", slowest.host, ms(slowest.step_time_ms), ms(median)),
            format!(
                "hosts: {}",
                facts
                    .per_host
                    .iter()
                    .map(|h| format!("{} {}", h.host, ms(h.step_time_ms)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ],
        suggestion: "the others wait for it at every collective: compare its input pipeline and host with theirs \
                     (uneven data shards, a busy or throttled machine)"
            .into(),
        see: format!("oxprof explain PATH --host {}", slowest.host),
    })
}

fn memory_near_capacity(facts: &Facts) -> Option<Finding> {
    let peak = facts.memory.iter().filter(|m| m.capacity_bytes > 0).max_by(|a, b| {
        (a.peak_bytes as f64 / a.capacity_bytes as f64).total_cmp(&(b.peak_bytes as f64 / b.capacity_bytes as f64))
    })?;
    let percent = 100.0 * peak.peak_bytes as f64 / peak.capacity_bytes as f64;
    if percent < 90.0 {
        return None;
    }
    let mut evidence = vec![format!(
        "{}: peak {:.1} MiB of {:.1} MiB ({percent:.1}%)",
        peak.name,
        peak.peak_bytes as f64 / 1048576.0,
        peak.capacity_bytes as f64 / 1048576.0
    )];
    if let Some(f) = peak.fragmentation.filter(|f| *f > 0.0) {
        evidence.push(format!("fragmentation at the peak {:.0}%", 100.0 * f));
    }
    Some(Finding {
        id: "memory_near_capacity",
        title: "Memory peak near capacity".into(),
        severity: Severity::Warning,
        time_at_stake_ms: 0.0,
        percent_of_step: 0.0,
        evidence,
        suggestion: "a larger batch or model will not fit: free tensors earlier, use mixed precision, rematerialize \
                     activations, or shard"
            .into(),
        see: "oxprof data memory_profile PATH --format md".into(),
    })
}

fn tensor_cores_unused(facts: &Facts) -> Option<Finding> {
    let tc = facts.tensor_cores.as_ref()?;
    if tc.eligible_ratio < 0.3 || tc.used_ratio >= 0.5 * tc.eligible_ratio {
        return None;
    }
    let compute = facts.share(Category::DeviceCompute);
    let stake = compute.ms * (tc.eligible_ratio - tc.used_ratio).max(0.0) / 2.0;
    Some(Finding {
        id: "tensor_cores_unused",
        title: "Tensor Cores left unused".into(),
        severity: Severity::Info,
        time_at_stake_ms: stake,
        percent_of_step: if facts.step_time_ms > 0.0 { 100.0 * stake / facts.step_time_ms } else { 0.0 },
        evidence: vec![format!(
            "{:.0}% of kernel time is in ops that could use Tensor Cores, {:.0}% used them",
            100.0 * tc.eligible_ratio,
            100.0 * tc.used_ratio
        )],
        suggestion: if facts.kind == "pytorch" {
            "use mixed precision (torch.autocast with bf16/fp16) or TF32 (torch.backends.cuda.matmul.allow_tf32)"
        } else {
            "use mixed precision: bf16/fp16 parameters and activations (JAX: dtype=jnp.bfloat16; Keras: \
             mixed_precision.set_global_policy(\"mixed_float16\")), or TF32 for f32 matmuls"
        }
        .into(),
        see: if facts.kind == "pytorch" {
            "oxprof data pytorch_kernel_stats PATH --format md"
        } else {
            "oxprof data kernel_stats PATH --format md"
        }
        .into(),
    })
}

/// The GPU's idle time on its busiest stream, split by HTA's causes. A symptom whose cause
/// other findings name (input, host, launches, syncs): informational, ranked after them, and
/// its suggestion follows the largest cause.
fn gpu_idle(facts: &Facts) -> Option<Finding> {
    let idle = facts.gpu_idle.as_ref()?;
    let whole = step_or_total_ms(facts);
    if whole <= 0.0 {
        return None;
    }
    let percent = 100.0 * idle.idle_ms_per_step / whole;
    if percent < NOTICE {
        return None;
    }
    let causes = [("host wait", idle.host_wait_ms), ("kernel wait", idle.kernel_wait_ms), ("other", idle.other_ms)];
    let (largest, _) = causes.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let suggestion = match largest {
        "host wait" => {
            "the host launches late: look at the host-side findings (input, host ops, synchronizations) and \
                        cut the host's work per step (torch.compile, CUDA graphs, DataLoader workers)"
        }
        "kernel wait" => {
            "back-to-back kernels pay launch gaps: fewer, larger kernels (torch.compile, fused \
                          optimizers, CUDA graphs)"
        }
        _ => {
            "the stream waits on something else: synchronizations, events or other streams (copies, collectives); \
              look at the trace around the gaps"
        }
    };
    Some(Finding {
        id: "gpu_idle",
        title: format!("The GPU idles {percent:.0}% of the step, mostly {largest}"),
        severity: Severity::Info,
        time_at_stake_ms: idle.idle_ms_per_step,
        percent_of_step: percent,
        evidence: vec![
            format!(
                "stream {} idles {} per step between its kernels ({} stream(s) with GPU work)",
                idle.stream,
                ms(idle.idle_ms_per_step),
                idle.streams
            ),
            causes
                .iter()
                .map(|(name, value)| {
                    let share = if idle.idle_ms_per_step > 0.0 { 100.0 * value / idle.idle_ms_per_step } else { 0.0 };
                    format!("{name} {} ({share:.0}%)", ms(*value))
                })
                .collect::<Vec<_>>()
                .join(", "),
        ],
        suggestion: suggestion.into(),
        see: "oxprof data hta_gpu_idle PATH --format md".into(),
    })
}

/// The share of an allocator's reserve that held nothing when it last grew, past which a
/// finding is raised (with the reserve at least half the capacity).
pub const FRAGMENTED: f64 = 0.25;

fn memory_fragmentation(facts: &Facts) -> Option<Finding> {
    let worst = facts
        .memory
        .iter()
        .filter(|m| m.capacity_bytes > 0 && 2 * m.peak_bytes >= m.capacity_bytes)
        .filter_map(|m| Some((m, m.fragmentation.filter(|f| *f >= FRAGMENTED)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (memory, fragmentation) = worst;
    let mib = |bytes: f64| bytes / 1048576.0;
    let unusable = fragmentation * memory.peak_bytes as f64;
    let pytorch = facts.kind == "pytorch";
    Some(Finding {
        id: "memory_fragmentation",
        title: "Memory is fragmented: reserved but unusable".into(),
        severity: Severity::Warning,
        time_at_stake_ms: 0.0,
        percent_of_step: 0.0,
        evidence: vec![
            format!(
                "{}: {:.0}% of the {:.1} MiB reserved at the peak held no tensor ({:.1} MiB)",
                memory.name,
                100.0 * fragmentation,
                mib(memory.peak_bytes as f64),
                mib(unusable)
            ),
            format!(
                "the peak reserve is {:.0}% of the {:.1} MiB capacity",
                100.0 * memory.peak_bytes as f64 / memory.capacity_bytes as f64,
                mib(memory.capacity_bytes as f64)
            ),
        ],
        suggestion: if pytorch {
            "let the caching allocator reuse memory: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, allocate \
             same-sized buffers (pad variable shapes), and avoid holding many short-lived tensors of changing sizes"
        } else {
            "keep buffer sizes stable between steps (pad variable shapes) and free large temporaries early"
        }
        .into(),
        see: if pytorch {
            "oxprof data pytorch_memory PATH --format md"
        } else {
            "oxprof data memory_profile PATH --format md"
        }
        .into(),
    })
}

/// XProf's precision statement (16-bit ops under 10 % of the device's compute) and the
/// TPU's MXU counters (under 25 % utilization): the matrix units run at a fraction of their
/// rate. Informational: how much faster bf16 would be depends on the model.
fn matrix_units_underused(facts: &Facts) -> Option<Finding> {
    let units = facts.matrix_units.as_ref()?;
    let low_precision = units.compute_16bit_percent < 10.0;
    let low_mxu = units.mxu_utilization_percent.is_some_and(|u| u < 25.0);
    let compute = facts.share(Category::DeviceCompute);
    if !(low_precision || low_mxu) || compute.percent < NOTICE {
        return None;
    }
    let stake = compute.ms / 2.0;
    let mut evidence = vec![format!(
        "{:.1}% of the device's compute time is in 16-bit ops; compute is {:.1}% of the step",
        units.compute_16bit_percent, compute.percent
    )];
    if let Some(u) = units.mxu_utilization_percent {
        evidence.push(format!("MXU utilization {u:.1}% (performance counters)"));
    }
    Some(Finding {
        id: "matrix_units_underused",
        title: "The matrix units (MXU / Tensor Cores) run below their rate".into(),
        severity: Severity::Info,
        time_at_stake_ms: stake,
        percent_of_step: if facts.step_time_ms > 0.0 { 100.0 * stake / facts.step_time_ms } else { 0.0 },
        evidence,
        suggestion: "compute in bf16 where precision allows (JAX: bf16 params and activations or \
                     jax.default_matmul_precision; Keras: mixed_precision.set_global_policy(\"mixed_bfloat16\")), \
                     and keep matmul dimensions multiples of 128 (TPU) or 8/16 (GPU)"
            .into(),
        see: "oxprof data overview_page PATH --format md".into(),
    })
}

/// The time a share of the step is measured against: the average step, or the profile's
/// whole breakdown when it has no steps.
fn step_or_total_ms(facts: &Facts) -> f64 {
    if facts.step_time_ms > 0.0 { facts.step_time_ms } else { facts.breakdown.iter().map(|s| s.ms).sum() }
}

/// A finding for one kind of top-level HLO instruction when its time is at least
/// [`NOTICE`] of the step: the instructions that cost most are the evidence.
fn hlo_finding(facts: &Facts, kind: HloKind, id: &'static str, title: &str) -> Option<Finding> {
    let family = facts.hlo.iter().find(|f| f.kind == kind)?;
    let whole = step_or_total_ms(facts);
    if whole <= 0.0 {
        return None;
    }
    // Op times are over every step marker, the step XProf's average of complete steps:
    // never more than the whole step.
    let stake = family.ms_per_step.min(whole);
    let percent = 100.0 * stake / whole;
    if percent < NOTICE {
        return None;
    }
    let mut evidence = vec![format!(
        "{} top-level {} take {} of the {} step ({percent:.1}%)",
        family.instructions,
        match kind {
            HloKind::Unfused => "reshapes / dynamic-update-slices",
            HloKind::Layout => "copies / transposes",
            HloKind::Convert => "converts",
        },
        ms(stake),
        ms(whole)
    )];
    if family.round_trips > 0 {
        evidence.push(format!("{} of them convert back what a convert before them converted", family.round_trips));
    }
    evidence.extend(family.top.iter().take(3).map(|op| {
        format!(
            "{} in {}: {} {} ({} calls, {} per step)",
            op.name,
            op.module,
            op.opcode,
            op.detail,
            op.calls,
            ms(op.ms_per_step)
        )
    }));
    let see = match family.top.first() {
        Some(op) => format!("oxprof hlo PATH --module {} --instruction {}", op.module, op.name),
        None => "oxprof hlo PATH".to_string(),
    };
    Some(Finding {
        id,
        title: title.to_string(),
        severity: severity(percent),
        time_at_stake_ms: stake,
        percent_of_step: percent,
        evidence,
        suggestion: String::new(),
        see,
    })
}

fn hlo_unfused(facts: &Facts) -> Option<Finding> {
    let mut finding =
        hlo_finding(facts, HloKind::Unfused, "hlo_unfused", "Reshapes and dynamic-update-slices run outside fusions")?;
    finding.suggestion = "let XLA fuse them: update buffers in place (donate them: jax.jit(donate_argnums=...)), \
                          avoid reshapes that change the physical layout between ops, and check that XLA_FLAGS does \
                          not disable fusion passes"
        .into();
    Some(finding)
}

fn hlo_layout_copies(facts: &Facts) -> Option<Finding> {
    let mut finding =
        hlo_finding(facts, HloKind::Layout, "hlo_layout_copies", "Copies and transposes change layouts in the step")?;
    finding.suggestion = "keep one layout end to end: transpose weights once outside the step, express transposes \
                          as dot_general/einsum dimension numbers instead of .T or swapaxes, and donate buffers so \
                          outputs need no copy"
        .into();
    Some(finding)
}

fn hlo_converts(facts: &Facts) -> Option<Finding> {
    let mut finding = hlo_finding(facts, HloKind::Convert, "hlo_converts", "Element type converts cost time")?;
    finding.suggestion = "pick each value's dtype once (parameters and activations in bf16, or a mixed-precision \
                          policy) and remove astype round trips (f32 -> bf16 -> f32 loses precision and costs two \
                          passes over memory)"
        .into();
    Some(finding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::{MatrixUnits, Share};
    use crate::hlo::{HloFamily, HloOpFact};

    /// A CPU run of 10 ms steps, all compute, with `kind` taking `ms` of each step.
    fn facts(kind: HloKind, ms: f64, round_trips: usize) -> Facts {
        Facts {
            kind: "xspace",
            hosts: vec!["vm".into()],
            device: None,
            steps: 10,
            step_time_ms: 10.0,
            step_time_max_ms: 10.0,
            breakdown: vec![Share { category: Category::DeviceCompute, ms: 10.0, percent: 100.0 }],
            top_ops: Vec::new(),
            input_ops: Vec::new(),
            sync_ops: Vec::new(),
            launches: None,
            tensor_cores: None,
            matrix_units: None,
            memory: Vec::new(),
            per_host: Vec::new(),
            gpu_idle: None,
            data_loader: None,
            torch_compile: None,
            hlo: vec![HloFamily {
                kind,
                instructions: 2,
                ms_per_step: ms,
                round_trips,
                top: vec![HloOpFact {
                    module: "jit_step".into(),
                    name: "wrapped_convert.1".into(),
                    opcode: "convert".into(),
                    detail: "f32[8] from bf16 (round trip)".into(),
                    calls: 10,
                    ms_per_step: ms / 2.0,
                }],
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn matrix_units_underused_reads_precision_and_mxu_counters() {
        let mut f = facts(HloKind::Convert, 0.0, 0);
        f.device = Some("TPU".into());
        // All 32-bit: XProf's precision statement.
        f.matrix_units = Some(MatrixUnits { compute_16bit_percent: 2.0, mxu_utilization_percent: None });
        let found = matrix_units_underused(&f).unwrap();
        assert_eq!((found.severity, found.time_at_stake_ms), (Severity::Info, 5.0));
        // bf16, but the counters say the MXU idles.
        f.matrix_units = Some(MatrixUnits { compute_16bit_percent: 90.0, mxu_utilization_percent: Some(12.0) });
        let found = matrix_units_underused(&f).unwrap();
        assert!(found.evidence.iter().any(|e| e.contains("MXU utilization 12.0%")), "{found:?}");
        // bf16 and busy matrix units, or no compute to speak of: nothing.
        f.matrix_units = Some(MatrixUnits { compute_16bit_percent: 90.0, mxu_utilization_percent: Some(60.0) });
        assert_eq!(matrix_units_underused(&f), None);
        f.matrix_units = Some(MatrixUnits { compute_16bit_percent: 2.0, mxu_utilization_percent: None });
        f.breakdown = vec![Share { category: Category::Idle, ms: 10.0, percent: 100.0 }];
        assert_eq!(matrix_units_underused(&f), None);
    }

    #[test]
    fn hlo_detectors_fire_on_their_own_kind_past_the_notice_share() {
        let cases =
            [(HloKind::Unfused, DETECTORS[10]), (HloKind::Layout, DETECTORS[11]), (HloKind::Convert, DETECTORS[12])];
        for (kind, detector) in cases {
            assert!(detector.id.starts_with("hlo_"), "{}", detector.id);
            let check = detector.check;
            let found = check(&facts(kind, 5.0, 1)).unwrap_or_else(|| panic!("{kind:?}"));
            assert_eq!(found.severity, Severity::Critical, "{found:?}");
            assert!((found.percent_of_step - 50.0).abs() < 1e-9, "{found:?}");
            assert_eq!(found.see, "oxprof hlo PATH --module jit_step --instruction wrapped_convert.1");
            assert!(found.evidence.iter().any(|e| e.contains("wrapped_convert.1")), "{found:?}");
            // Below the notice share, or another kind: nothing.
            assert_eq!(check(&facts(kind, 0.5, 0)), None, "{kind:?}");
            let other = if kind == HloKind::Convert { HloKind::Layout } else { HloKind::Convert };
            assert_eq!(check(&facts(other, 5.0, 0)), None, "{kind:?}");
        }
        // Over the step (op times over every step marker): at most the whole step.
        let all = hlo_unfused(&facts(HloKind::Unfused, 12.0, 0)).unwrap();
        assert_eq!((all.time_at_stake_ms, all.percent_of_step), (10.0, 100.0));
        let converts = hlo_converts(&facts(HloKind::Convert, 2.0, 1)).unwrap();
        assert_eq!(converts.severity, Severity::Warning);
        assert!(converts.evidence.iter().any(|e| e.contains("1 of them convert back")), "{converts:?}");
    }
}
