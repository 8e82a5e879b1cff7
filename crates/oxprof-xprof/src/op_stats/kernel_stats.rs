//! GPU kernel statistics (`kernel_stats_db`): every kernel launch of the GPU device planes,
//! aggregated by kernel name, launch configuration and framework op, sorted by total time
//! and cut to the top 1000. A port of XProf's `xplane_to_kernel_stats_db.cc`,
//! `kernel_stats_utils.cc` and the kernel callback of `ConvertXSpaceToOpStats`.

use super::device_op_metrics::HloModuleLookup;
use super::hardware::{int_or_uint, str_value};
use super::types::{KernelReport, KernelStatsDb};
use oxprof_grouping::tf_op::parse_tf_op_fullname;
use oxprof_model::schema::{StatType, is_derived_thread_id};
use oxprof_model::{Event, XPlane};
use std::collections::HashMap;

/// At most this many kernels are kept (`kMaxNumOfKernels`).
pub const MAX_KERNELS: usize = 1000;

/// Kernel name fragments of kernels that use Tensor Cores (NVIDIA) or matrix cores (AMD):
/// XProf's `kTensorCoreKernelNamePatterns`, plus the AMD fragments XProf 2.24.2 recognizes
/// (`mfma`, `wmma`, `moe_mxgemm`, `gemm_fusion`; found by probing its converter, they are
/// not in the sources oxprof follows).
const TENSOR_CORE_KERNEL_PATTERNS: &[&str] = &[
    "16816",
    "c1688",
    "conv1x1",
    "conv2d_c1_k1",
    "dgrad_1x1_stride_2x2",
    "direct_group",
    "first_layer_wgrad_kernel",
    "h1688",
    "h884",
    "hmma",
    "i16832",
    "i8816",
    "s884",
    "s1688",
    "xmma_gemm",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_sparse_gemm",
    "xmma_warp_specialized_implicit_gemm",
    "mfma",
    "wmma",
    "moe_mxgemm",
    "gemm_fusion",
    // AMD composable-kernel and hipBLASLt names XProf 2.24.2 counts (found by probing it).
    "gemm_xdl",
    "TileFmhaShape<",
    "TileFmhaBwdShape<",
    "TileGemmShape<",
    "TileFlatmmShape<",
];

/// Whether the name contains `_MI<digits>x<digits>x<digits>`: the matrix instruction shape
/// in AMD Tensile/hipBLASLt kernel names (`Cijk_..._MI16x16x16x1_...`), which XProf 2.24.2
/// treats as Tensor Core use.
fn has_amd_matrix_instruction_shape(name: &str) -> bool {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    name.match_indices("_MI").any(|(at, _)| {
        let mut rest = &name[at + 3..];
        for part in 0..3 {
            let n = digits(rest);
            if n == 0 {
                return false;
            }
            rest = &rest[n..];
            if part < 2 {
                match rest.strip_prefix('x') {
                    Some(r) => rest = r,
                    None => return false,
                }
            }
        }
        true
    })
}

/// `IsKernelUsingTensorCore`: the kernel name contains a Tensor Core pattern.
pub fn is_kernel_using_tensor_core(kernel_name: &str) -> bool {
    TENSOR_CORE_KERNEL_PATTERNS.iter().any(|p| kernel_name.contains(p)) || has_amd_matrix_instruction_shape(kernel_name)
}

/// `IsOpTensorCoreEligible`: framework ops that can run on Tensor Cores (convolutions,
/// matrix multiplications, cuDNN RNNs, XLA dots; and, as XProf 2.24.2 does, JAX ops whose
/// name contains `dot_general` or `conv_general_dilated`).
pub fn is_op_tensor_core_eligible(op_name: &str) -> bool {
    const ENDS_WITH: &[&str] = &[
        "Conv2D",
        "Conv2DBackpropFilter",
        "Conv2DBackpropInput",
        "Conv3D",
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropFilter",
        "DepthwiseConv2dNativeBackpropInput",
        "/MatMul",
        "FusedMatMul",
        "/CudnnRNN",
        "XlaDot",
        "XlaDotV2",
    ];
    const CONTAINS: &[&str] =
        &["BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop", "dot_general", "conv_general_dilated"];
    ENDS_WITH.iter().any(|s| op_name.ends_with(s)) || CONTAINS.iter().any(|s| op_name.contains(s))
}

/// `IsEinsumTensorCoreEligible`: an einsum equation with exactly two inputs.
pub fn is_einsum_tensor_core_eligible(equation: &str) -> bool {
    if equation.is_empty() {
        return false;
    }
    let parts: Vec<&str> = equation.split("->").collect();
    parts.len() == 2 && parts.first().is_some_and(|inputs| inputs.split(',').count() == 2)
}

/// `absl::SimpleAtoi` into u32.
fn atoi_u32(s: &str) -> Option<u32> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    t.strip_prefix('+').unwrap_or(t).parse().ok()
}

/// The launch parameters of a kernel (`ParseKernelLaunchParams`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LaunchParams {
    /// Registers per thread (`regs:`).
    pub registers_per_thread: u32,
    /// Static shared memory (`static_shared:`).
    pub static_shmem_bytes: u32,
    /// Dynamic shared memory (`dynamic_shared:`).
    pub dynamic_shmem_bytes: u32,
    /// Block dimensions (`block:x,y,z`; 1,1,1 by default).
    pub block_dim: [u32; 3],
    /// Grid dimensions (`grid:x,y,z`; 1,1,1 by default).
    pub grid_dim: [u32; 3],
    /// Occupancy (`occ_pct:`).
    pub occupancy_pct: f32,
}

/// `ParseKernelLaunchParams`: `key:value` tokens separated by spaces or newlines; unknown or
/// malformed tokens are ignored.
pub fn parse_kernel_launch_params(details: &str) -> LaunchParams {
    let mut p = LaunchParams { block_dim: [1; 3], grid_dim: [1; 3], ..Default::default() };
    let dims = |v: &str| -> Option<[u32; 3]> {
        let mut it = v.split(',');
        let d = [atoi_u32(it.next()?)?, atoi_u32(it.next()?)?, atoi_u32(it.next()?)?];
        it.next().is_none().then_some(d)
    };
    for token in details.split([' ', '\n']) {
        let mut kv = token.split(':');
        let (Some(key), Some(value), None) = (kv.next(), kv.next(), kv.next()) else { continue };
        match key {
            "regs" => p.registers_per_thread = atoi_u32(value).unwrap_or(p.registers_per_thread),
            "static_shared" => p.static_shmem_bytes = atoi_u32(value).unwrap_or(p.static_shmem_bytes),
            "dynamic_shared" => p.dynamic_shmem_bytes = atoi_u32(value).unwrap_or(p.dynamic_shmem_bytes),
            "block" => p.block_dim = dims(value).unwrap_or(p.block_dim),
            "grid" => p.grid_dim = dims(value).unwrap_or(p.grid_dim),
            "occ_pct" => {
                if let Ok(v) = value.trim_matches(|c: char| c.is_ascii_whitespace()).parse::<f64>() {
                    p.occupancy_pct = v as f32;
                }
            }
            _ => {}
        }
    }
    p
}

/// What makes two kernel launches the same report (`KernelReportEqualToComparator`):
/// everything but durations and occupancy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct KernelKey<'a> {
    name: &'a str,
    grid: [u32; 3],
    block: [u32; 3],
    registers_per_thread: u32,
    static_shmem_bytes: u32,
    dynamic_shmem_bytes: u32,
    uses_tensor_core: bool,
    op_tensor_core_eligible: bool,
    op_name: &'a str,
}

/// Durations of one kernel report (`KernelReportValue`).
#[derive(Debug, Clone, Copy)]
struct KernelTotals {
    /// Occupancy of the first launch (kept with the key, as XProf's map does).
    occupancy_pct: f32,
    total_ns: u64,
    min_ns: u64,
    max_ns: u64,
    occurrences: u32,
}

/// Kernel reports of all GPU planes, aggregated (`KernelReportMap`).
#[derive(Default)]
pub struct KernelStatsBuilder<'a> {
    /// Report slot by key, and the reports in first-seen order.
    index: HashMap<KernelKey<'a>, usize>,
    reports: Vec<(KernelKey<'a>, KernelTotals)>,
    /// Slot by the inputs a key is computed from (kernel metadata and the addresses of its
    /// interned stat strings), so repeated launches skip parsing and string hashing.
    by_inputs: HashMap<InputsKey, usize>,
}

/// `(plane address, metadata index, kernel_details, tf_op, equation, hlo_op addresses,
/// program id)`: equal inputs give equal kernel keys.
type InputsKey = (usize, usize, usize, usize, usize, usize, Option<u64>);

fn address(s: &str) -> usize {
    if s.is_empty() { 0 } else { s.as_ptr() as usize }
}

/// The kernel stats of an event (`GpuEventStats`, own stats only).
#[derive(Default)]
struct KernelEventStats<'a> {
    kernel_details: &'a str,
    tf_op_fullname: &'a str,
    equation: &'a str,
    hlo_op: Option<&'a str>,
    program_id: Option<u64>,
}

fn kernel_event_stats<'a>(event: &Event<'a>) -> KernelEventStats<'a> {
    let mut s = KernelEventStats::default();
    for stat in event.stats() {
        match stat.stat_type() {
            Some(StatType::KernelDetails) => s.kernel_details = str_value(&stat.value),
            Some(StatType::TfOp) => s.tf_op_fullname = str_value(&stat.value),
            Some(StatType::Equation) => s.equation = str_value(&stat.value),
            Some(StatType::HloOp) => s.hlo_op = Some(str_value(&stat.value).rsplit("::").next().unwrap_or("")),
            Some(StatType::ProgramId) => s.program_id = Some(int_or_uint(&stat.value)),
            _ => {}
        }
    }
    s
}

/// The report key of a kernel launch, and its occupancy.
fn kernel_key<'a>(
    event: &Event<'a>,
    stats: &KernelEventStats<'a>,
    hlo: Option<&'a dyn HloModuleLookup>,
) -> (KernelKey<'a>, f32) {
    let name = event.name();
    let params = parse_kernel_launch_params(stats.kernel_details);
    let uses_tensor_core = is_kernel_using_tensor_core(name);
    let (mut op_name, mut eligible) = ("", false);
    if !stats.tf_op_fullname.is_empty() {
        op_name = parse_tf_op_fullname(stats.tf_op_fullname).name;
        eligible =
            is_einsum_tensor_core_eligible(stats.equation) || is_op_tensor_core_eligible(op_name) || uses_tensor_core;
    }
    if let (Some(hlo_op), Some(lookup), Some(program_id)) = (stats.hlo_op, hlo, stats.program_id)
        && let Some(instruction) = lookup.instruction(program_id, hlo_op)
    {
        op_name = parse_tf_op_fullname(instruction.tf_op_name()).name;
        eligible = is_op_tensor_core_eligible(op_name) || eligible;
    }
    let key = KernelKey {
        name,
        grid: params.grid_dim,
        block: params.block_dim,
        registers_per_thread: params.registers_per_thread,
        static_shmem_bytes: params.static_shmem_bytes,
        dynamic_shmem_bytes: params.dynamic_shmem_bytes,
        uses_tensor_core,
        op_tensor_core_eligible: eligible,
        op_name,
    };
    (key, params.occupancy_pct)
}

impl<'a> KernelStatsBuilder<'a> {
    /// `ConvertDeviceTraceXPlaneToKernelReports` with XProf's HLO callback: every event of a
    /// non-derived line with `kernel_details` and a non-zero duration is a launch.
    ///
    /// * The op name is the framework op (`tf_op`) name; Tensor Core eligibility comes from
    ///   the einsum equation or the op name, and is forced when the kernel uses Tensor Cores.
    /// * For XLA kernels (`hlo_op`) found through `hlo`, the op name becomes the HLO
    ///   instruction's framework op name and eligibility is widened by it.
    pub fn add_plane(&mut self, plane: &'a XPlane, hlo: Option<&'a dyn HloModuleLookup>) {
        for line in plane.lines.iter().filter(|l| !is_derived_thread_id(l.id)) {
            for event in line.events(plane) {
                let duration_ns = event.duration_ps() as f64 / 1000.0;
                if duration_ns == 0.0 {
                    continue;
                }
                let stats = kernel_event_stats(&event);
                if stats.kernel_details.is_empty() {
                    continue;
                }
                let ns = duration_ns as u64;
                let inputs = (
                    plane as *const XPlane as usize,
                    event.metadata_id().index(),
                    address(stats.kernel_details),
                    address(stats.tf_op_fullname),
                    address(stats.equation),
                    stats.hlo_op.map_or(0, |h| h.as_ptr() as usize + 1),
                    stats.program_id,
                );
                let slot = match self.by_inputs.get(&inputs) {
                    Some(&slot) => slot,
                    None => {
                        let (key, occupancy_pct) = kernel_key(&event, &stats, hlo);
                        let slot = *self.index.entry(key.clone()).or_insert_with(|| {
                            let totals =
                                KernelTotals { occupancy_pct, total_ns: 0, min_ns: 0, max_ns: 0, occurrences: 0 };
                            self.reports.push((key, totals));
                            self.reports.len() - 1
                        });
                        self.by_inputs.insert(inputs, slot);
                        slot
                    }
                };
                if let Some((_, t)) = self.reports.get_mut(slot) {
                    if t.occurrences == 0 {
                        (t.total_ns, t.min_ns, t.max_ns) = (ns, ns, ns);
                    } else {
                        t.total_ns = t.total_ns.wrapping_add(ns);
                        t.min_ns = t.min_ns.min(ns);
                        t.max_ns = t.max_ns.max(ns);
                    }
                    t.occurrences = t.occurrences.wrapping_add(1);
                }
            }
        }
    }

    /// `CopyTopKDurationKernelReportsToDb`: reports by total duration (descending), ties by
    /// name, grid, block, registers, shared memory, Tensor Core flags and op name
    /// (ascending); at most [`MAX_KERNELS`].
    pub fn finish(self) -> KernelStatsDb {
        let mut entries = self.reports;
        let tuple = |k: &KernelKey<'a>| {
            (
                k.name,
                k.grid,
                k.block,
                k.registers_per_thread,
                k.static_shmem_bytes,
                k.dynamic_shmem_bytes,
                k.uses_tensor_core,
                k.op_tensor_core_eligible,
                k.op_name,
            )
        };
        entries.sort_by(|(ka, va), (kb, vb)| vb.total_ns.cmp(&va.total_ns).then_with(|| tuple(ka).cmp(&tuple(kb))));
        entries.truncate(MAX_KERNELS);
        let reports = entries
            .into_iter()
            .map(|(k, v)| KernelReport {
                name: k.name.to_string(),
                registers_per_thread: k.registers_per_thread,
                static_shmem_bytes: k.static_shmem_bytes,
                dynamic_shmem_bytes: k.dynamic_shmem_bytes,
                block_dim: k.block.to_vec(),
                grid_dim: k.grid.to_vec(),
                total_duration_ns: v.total_ns,
                min_duration_ns: v.min_ns,
                max_duration_ns: v.max_ns,
                is_kernel_using_tensor_core: k.uses_tensor_core,
                is_op_tensor_core_eligible: k.op_tensor_core_eligible,
                op_name: k.op_name.to_string(),
                occurrences: v.occurrences,
                occupancy_pct: v.occupancy_pct,
            })
            .collect();
        KernelStatsDb { reports }
    }
}

/// `kernel_stats_db` of one host: the kernels of its GPU device planes (none on TPU or
/// CPU-only hosts).
pub fn kernel_stats_db<'a>(
    device_planes: impl IntoIterator<Item = &'a XPlane>,
    hlo: Option<&'a dyn HloModuleLookup>,
) -> KernelStatsDb {
    let mut builder = KernelStatsBuilder::default();
    for plane in device_planes {
        builder.add_plane(plane, hlo);
    }
    builder.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::device_op_metrics::testutil::*;
    use crate::op_stats::environment::device_planes;
    use oxprof_testkit::XSpaceBuilder;
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};

    #[test]
    fn launch_params() {
        let p = parse_kernel_launch_params("regs:38 static_shared:16 dynamic_shared:8 grid:160,1,1 block:1024,1,1");
        assert_eq!((p.registers_per_thread, p.static_shmem_bytes, p.dynamic_shmem_bytes), (38, 16, 8));
        assert_eq!((p.grid_dim, p.block_dim), ([160, 1, 1], [1024, 1, 1]));
        let p = parse_kernel_launch_params(" grid:256,1,1 block:2,x,1 occ_pct:37.5\nregs:a:b shm:0");
        assert_eq!((p.grid_dim, p.block_dim, p.occupancy_pct), ([256, 1, 1], [1, 1, 1], 37.5));
        assert_eq!(p.registers_per_thread, 0);
    }

    #[test]
    fn tensor_core_rules() {
        assert!(is_kernel_using_tensor_core("volta_h884gemm_64x64"));
        assert!(!is_kernel_using_tensor_core("Eigen::Kernel"));
        // AMD: matrix instruction shapes and matrix-core fragments (XProf 2.24.2).
        assert!(is_kernel_using_tensor_core("Cijk_Ailk_Bljk_BBS_BH_MT256x128x32_MI16x16x16x1_SN"));
        assert!(is_kernel_using_tensor_core("foo_MI2x2x2bar") && is_kernel_using_tensor_core("gemm_fusion_dot.kd"));
        assert!(!is_kernel_using_tensor_core("_MI16x16x") && !is_kernel_using_tensor_core("MI16x16x16"));
        assert!(!is_kernel_using_tensor_core("_MI16X16X4") && !is_kernel_using_tensor_core("loop_reduce_fusion.kd"));
        assert!(is_op_tensor_core_eligible("jit(f)/jvp(dot_general)/mul"));
        assert!(is_op_tensor_core_eligible("jit(f)/conv_general_dilated"));
        assert!(!is_op_tensor_core_eligible("jit(f)/te_fused_attn_forward_ffi"));
        assert!(is_op_tensor_core_eligible("model/dense/MatMul"));
        assert!(!is_op_tensor_core_eligible("model/dense/MatMulX"));
        assert!(is_op_tensor_core_eligible("a/BatchMatMulV2"));
        assert!(is_einsum_tensor_core_eligible("ab,bc->ac"));
        assert!(!is_einsum_tensor_core_eligible("ab->ba"));
        assert!(!is_einsum_tensor_core_eligible("ab,bc,cd->ad"));
    }

    //  Stream #1  |h884 10ns| |h884 30ns| |relu 5ns| |relu 0ns (skipped)| |no details|
    #[test]
    fn aggregates_and_sorts_kernels() {
        let bytes = XSpaceBuilder::new()
            .plane("/device:GPU:0", |p| {
                p.line(1, "Stream #1", 0, |l| {
                    let d = "regs:32 grid:1,1,1 block:128,1,1";
                    l.event("volta_h884gemm", 0, 10_000).stat("kernel_details", d).stat("tf_op", "m/Relu:Relu");
                    l.event("volta_h884gemm", 20_000, 30_500).stat("kernel_details", d).stat("tf_op", "m/Relu:Relu");
                    l.event("relu", 60_000, 5_000).stat("kernel_details", d).stat("tf_op", "m/Relu:Relu");
                    l.event("relu", 70_000, 0).stat("kernel_details", d);
                    l.event("memcpy", 80_000, 1_000);
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let db = kernel_stats_db(space.planes.iter(), None);
        assert_eq!(db.reports.len(), 2);
        let gemm = &db.reports[0];
        assert_eq!((gemm.name.as_str(), gemm.occurrences), ("volta_h884gemm", 2));
        assert_eq!((gemm.total_duration_ns, gemm.min_duration_ns, gemm.max_duration_ns), (40, 10, 30));
        // Uses Tensor Cores, so its op counts as eligible.
        assert!(gemm.is_kernel_using_tensor_core && gemm.is_op_tensor_core_eligible);
        assert_eq!(gemm.op_name, "m/Relu");
        assert!(!db.reports[1].is_op_tensor_core_eligible);
    }

    /// `kernel_stats_db` against XProf's. Kernels of XLA ops get their op name from the
    /// HLO module (not decoded here), and XProf 2.24.2 marks AMD kernels as Tensor Core
    /// ones by rules oxprof does not know yet: those profiles only report.
    #[test]
    fn kernel_stats_db_matches_xprof() {
        let mut cases = refkit_cases();
        if let Some(root) = external_root() {
            cases.extend(external_cases(&root));
        }
        let mut mismatched = Vec::new();
        for case in &cases {
            let space = load(case);
            let (planes, is_tpu) = device_planes(&space);
            let db = if is_tpu { KernelStatsDb::default() } else { kernel_stats_db(planes, None) };
            let expected = reference(&case.op_stats)["kernel_stats_db"].clone();
            let report = compare(&expected, &serde_json::to_value(&db).unwrap(), CmpOptions::default());
            eprintln!("{}: kernel_stats_db {}", case.name, report.summary(4).replace('\n', "\n  "));
            let needs_hlo = space.planes.iter().any(|p| p.name == "/host:metadata") && !is_tpu;
            if !report.is_match() && !needs_hlo {
                mismatched.push(case.name.clone());
            }
        }
        assert!(mismatched.is_empty(), "kernel_stats_db differs: {mismatched:?}");
    }
}
