//! Per-op derived metrics shared by XProf's op tables (framework op stats, HLO stats,
//! roofline model): execution times, FLOP and bandwidth rates, the roofline bottleneck, and
//! the ranking order of an `OpMetricsDb` (port of `xprof/convert/op_metrics_to_record.{h,cc}`
//! and the unit helpers of `tsl/profiler/utils/math_utils.h` they use).

use crate::op_stats::{HardwareType, MemoryOperationType, OpMetrics, OpMetricsDb, PerfEnv, RunEnvironment};
use serde::{Deserialize, Serialize};

/// `MemorySpace::MEMORY_SPACE_HBM` (also `PerformanceInfo::MemoryAccessed::HBM`).
pub const MEMORY_SPACE_HBM: u64 = 1;
/// `PerformanceInfo::MemoryAccessed::CMEM`.
pub const MEMORY_SPACE_CMEM: u64 = 2;
/// `PerformanceInfo::MemoryAccessed::VMEM`.
pub const MEMORY_SPACE_VMEM: u64 = 3;
/// `MemorySpace::MEMORY_SPACE_ON_CHIP`: every space but HBM.
pub const MEMORY_SPACE_ON_CHIP: u64 = 0x7FFF_FFFE;
/// `MemorySpace::MEMORY_SPACE_ALL`: the op's total `bytes_accessed`.
pub const MEMORY_SPACE_ALL: u64 = 0x7FFF_FFFF;

/// Index of each peak in `PerfEnv::peak_bws_giga_bytes_per_second` (`MemBwType`).
mod peak_bw_index {
    pub const HBM_RW: usize = 0;
    /// XProf reads index 2 (`MEM_BW_TYPE_SRAM_WR`) as the GPU's Shm/L1 peak.
    pub const SRAM_WR: usize = 2;
    pub const CMEM_RD: usize = 3;
    pub const CMEM_WR: usize = 4;
    pub const VMEM_RD: usize = 5;
    pub const VMEM_WR: usize = 6;
}

/// `SafeDivide`: `dividend / divisor`, or 0 when `|divisor| < 1e-10`.
pub fn safe_divide(dividend: f64, divisor: f64) -> f64 {
    const EPSILON: f64 = 1.0e-10;
    if -EPSILON < divisor && divisor < EPSILON { 0.0 } else { dividend / divisor }
}

/// Picoseconds to nanoseconds.
pub fn pico_to_nano(ps: u64) -> f64 {
    ps as f64 / 1e3
}

/// Picoseconds to microseconds.
pub fn pico_to_micro(ps: u64) -> f64 {
    ps as f64 / 1e6
}

/// Tera to giga.
pub fn tera_to_giga(tera: f64) -> f64 {
    tera * 1e3
}

/// Giga (10^9) to gibi (2^30).
pub fn giga_to_gibi(giga: f64) -> f64 {
    giga / ((1u64 << 30) as f64 / 1.0e9)
}

/// GiB/s from bytes and nanoseconds.
pub fn gibibytes_per_second(bytes: f64, ns: f64) -> f64 {
    giga_to_gibi(safe_divide(bytes, ns))
}

/// The ops of `db` in XProf's display order: self time descending, then name ascending;
/// with `max_records`, only the first that many (XProf's `partial_sort`).
///
/// XProf's comparator leaves ops equal in both keys (same name in different HLO modules)
/// in an unspecified order; here they keep their database order. With a limit, the top
/// records are selected first (linear time) and only those are sorted.
pub fn sorted_op_metrics_db(db: &OpMetricsDb, max_records: Option<usize>) -> Vec<&OpMetrics> {
    let mut sorted: Vec<(usize, &OpMetrics)> = db.metrics_db.iter().enumerate().collect();
    let order = |a: &(usize, &OpMetrics), b: &(usize, &OpMetrics)| {
        b.1.self_time_ps.cmp(&a.1.self_time_ps).then_with(|| a.1.name.cmp(&b.1.name)).then(a.0.cmp(&b.0))
    };
    if let Some(max) = max_records.filter(|&max| max < sorted.len()) {
        if max == 0 {
            return Vec::new();
        }
        sorted.select_nth_unstable_by(max - 1, order);
        sorted.truncate(max);
    }
    // The index makes the order total, so an unstable sort is deterministic.
    sorted.sort_unstable_by(order);
    sorted.into_iter().map(|(_, metrics)| metrics).collect()
}

/// GFLOP/s over all occurrences on all cores (uses the inclusive `time_ps`, since an op's
/// FLOPs include its nested children's).
pub fn giga_flops_per_second_per_core(metrics: &OpMetrics) -> f64 {
    safe_divide(metrics.flops_v2, pico_to_nano(metrics.time_ps))
}

/// GFLOP/s normalised to the default DVFS p-state (`time_ps / normalized_time_ps` scale);
/// the plain rate when no normalised time was recorded.
pub fn giga_flops_per_second_per_core_normalized_on_dvfs(metrics: &OpMetrics) -> f64 {
    if metrics.normalized_time_ps == 0 {
        return giga_flops_per_second_per_core(metrics);
    }
    giga_flops_per_second_per_core(metrics) * safe_divide(metrics.time_ps as f64, metrics.normalized_time_ps as f64)
}

/// Model GFLOP/s over all occurrences on all cores.
pub fn giga_model_flops_per_second_per_core(metrics: &OpMetrics) -> f64 {
    safe_divide(metrics.model_flops_v2, pico_to_nano(metrics.time_ps))
}

/// Bytes accessed in `memory_space` (`MEMORY_SPACE_HBM`, `MEMORY_SPACE_ON_CHIP` or
/// `MEMORY_SPACE_ALL`) by `operation` (`Unknown` counts reads and writes).
pub fn bytes_accessed_per_core(metrics: &OpMetrics, memory_space: u64, operation: MemoryOperationType) -> f64 {
    if memory_space == MEMORY_SPACE_ALL {
        return metrics.bytes_accessed as f64;
    }
    let mut bytes: u64 = 0;
    for access in &metrics.memory_accessed_breakdown {
        if access.operation_type != operation && operation != MemoryOperationType::Unknown {
            continue;
        }
        let counted = match memory_space {
            MEMORY_SPACE_HBM => access.memory_space == MEMORY_SPACE_HBM,
            MEMORY_SPACE_ON_CHIP => access.memory_space != MEMORY_SPACE_HBM,
            _ => false,
        };
        if counted {
            bytes = bytes.wrapping_add(access.bytes_accessed);
        }
    }
    bytes as f64
}

/// GB/s of `bytes_accessed_per_core` over the inclusive time.
pub fn giga_bytes_per_second_per_core(metrics: &OpMetrics, memory_space: u64, operation: MemoryOperationType) -> f64 {
    safe_divide(bytes_accessed_per_core(metrics, memory_space, operation), pico_to_nano(metrics.time_ps))
}

/// GiB/s of `bytes_accessed_per_core` over the inclusive time.
pub fn gibi_bytes_per_second_per_core(metrics: &OpMetrics, memory_space: u64, operation: MemoryOperationType) -> f64 {
    giga_to_gibi(giga_bytes_per_second_per_core(metrics, memory_space, operation))
}

/// `SetExecutionTimes`: counts and times of an op in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ExecutionTimes {
    /// Times the op ran.
    pub occurrences: u32,
    /// Inclusive time.
    pub total_time_in_us: f64,
    /// Inclusive time per occurrence.
    pub avg_time_in_us: f64,
    /// Exclusive time.
    pub total_self_time_in_us: f64,
    /// Exclusive time per occurrence.
    pub avg_self_time_in_us: f64,
}

/// The execution times of `metrics` (averages are 0 for ops that never ran, like IDLE).
pub fn execution_times(metrics: &OpMetrics) -> ExecutionTimes {
    let total_time_in_us = pico_to_micro(metrics.time_ps);
    let total_self_time_in_us = pico_to_micro(metrics.self_time_ps);
    let occurrences = f64::from(metrics.occurrences);
    ExecutionTimes {
        occurrences: metrics.occurrences,
        total_time_in_us,
        avg_time_in_us: safe_divide(total_time_in_us, occurrences),
        total_self_time_in_us,
        avg_self_time_in_us: safe_divide(total_self_time_in_us, occurrences),
    }
}

/// `SetTpuUnitFractions`: fraction of the op's time stalled on DMA.
pub fn dma_stall_fraction(metrics: &OpMetrics) -> f64 {
    safe_divide(metrics.dma_stall_ps as f64, metrics.time_ps as f64)
}

/// A row's rank and its share of the total self time, accumulated down the table
/// (`SetRankAndTimeFractions` and its device/host variants).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RankAndFraction {
    /// 1-based rank.
    pub rank: u64,
    /// Self time / total time.
    pub fraction: f64,
    /// Sum of `fraction` over this row and all rows above it.
    pub cumulative_fraction: f64,
}

impl RankAndFraction {
    /// The row after `self` (the sentinel `RankAndFraction::default()` precedes the first)
    /// with `total_self_time_in_us` out of `total_time_us`.
    pub fn next(&self, total_time_us: f64, total_self_time_in_us: f64) -> RankAndFraction {
        let fraction = safe_divide(total_self_time_in_us, total_time_us);
        RankAndFraction {
            rank: self.rank.saturating_add(1),
            fraction,
            cumulative_fraction: self.cumulative_fraction + fraction,
        }
    }
}

/// The resource that bounds an op in the roofline model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundBy {
    /// No resource used (no FLOPs, no bytes, or no peaks known).
    #[default]
    Unknown,
    /// Compute.
    Compute,
    /// HBM bandwidth.
    Hbm,
    /// CMEM read bandwidth (TPU).
    CmemRead,
    /// CMEM write bandwidth (TPU).
    CmemWrite,
    /// VMEM read bandwidth (TPU).
    VmemRead,
    /// VMEM write bandwidth (TPU).
    VmemWrite,
    /// Shared memory / L1 bandwidth (GPU).
    ShmL1,
}

impl BoundBy {
    /// XProf's label.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundBy::Unknown => "Unknown",
            BoundBy::Compute => "Compute",
            BoundBy::Hbm => "HBM",
            BoundBy::CmemRead => "CMEM Read",
            BoundBy::CmemWrite => "CMEM Write",
            BoundBy::VmemRead => "VMEM Read",
            BoundBy::VmemWrite => "VMEM Write",
            BoundBy::ShmL1 => "Shm/L1",
        }
    }
}

/// `SetRooflineMetrics`: rates, operational intensities and the bottleneck of one op.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct RooflineMetrics {
    /// GFLOP/s.
    pub measured_flop_rate: f64,
    /// Model GFLOP/s.
    pub model_flop_rate: f64,
    /// GiB/s over all memory.
    pub measured_memory_bw: f64,
    /// Deprecated integer FLOPs.
    pub flops: u64,
    /// FLOPs.
    pub flops_v2: f64,
    /// Bytes accessed.
    pub bytes_accessed: u64,
    /// FLOPs / byte over all memory.
    pub operational_intensity: f64,
    /// HBM GiB/s.
    pub hbm_bw: f64,
    /// CMEM read GiB/s.
    pub cmem_read_bw: f64,
    /// CMEM write GiB/s.
    pub cmem_write_bw: f64,
    /// VMEM read GiB/s.
    pub vmem_read_bw: f64,
    /// VMEM write GiB/s.
    pub vmem_write_bw: f64,
    /// FLOPs / HBM byte.
    pub hbm_operational_intensity: f64,
    /// FLOPs / CMEM byte read.
    pub cmem_read_operational_intensity: f64,
    /// FLOPs / CMEM byte written.
    pub cmem_write_operational_intensity: f64,
    /// FLOPs / VMEM byte read.
    pub vmem_read_operational_intensity: f64,
    /// FLOPs / VMEM byte written.
    pub vmem_write_operational_intensity: f64,
    /// The bounding resource.
    pub bound_by: BoundBy,
    /// Operational intensity against the bounding resource.
    pub bottleneck_operational_intensity: f64,
}

/// Peak bandwidth `index` of `perf_env` (GB/s), or the HBM peak when that entry is absent.
fn memory_peak_bandwidth(perf_env: &PerfEnv, index: usize) -> f64 {
    perf_env.peak_bws_giga_bytes_per_second.get(index).copied().unwrap_or(perf_env.peak_hbm_bw_giga_bytes_per_second)
}

/// Bytes moved per memory kind, from an op's breakdown.
#[derive(Default)]
struct BytesByMemory {
    hbm: u64,
    cmem_read: u64,
    cmem_write: u64,
    vmem_read: u64,
    vmem_write: u64,
}

impl BytesByMemory {
    /// Sums the breakdown; an op without one (legacy profiles) counts all its bytes as HBM.
    fn of(metrics: &OpMetrics) -> BytesByMemory {
        let mut bytes = BytesByMemory::default();
        for access in &metrics.memory_accessed_breakdown {
            let n = access.bytes_accessed;
            let slot = match (access.memory_space, access.operation_type) {
                (MEMORY_SPACE_HBM, _) => &mut bytes.hbm,
                (MEMORY_SPACE_CMEM, MemoryOperationType::Read) => &mut bytes.cmem_read,
                (MEMORY_SPACE_CMEM, MemoryOperationType::Write) => &mut bytes.cmem_write,
                (MEMORY_SPACE_VMEM, MemoryOperationType::Read) => &mut bytes.vmem_read,
                (MEMORY_SPACE_VMEM, MemoryOperationType::Write) => &mut bytes.vmem_write,
                _ => continue,
            };
            *slot = slot.wrapping_add(n);
        }
        if metrics.memory_accessed_breakdown.is_empty() {
            bytes.hbm = metrics.bytes_accessed;
        }
        bytes
    }
}

/// The roofline metrics of one op.
///
/// The bottleneck is the resource with the highest utilisation (achieved rate / peak),
/// tried in XProf's order — compute, HBM, then on TPU CMEM read/write and VMEM read/write
/// (only when the op moved such bytes and the peak is known), on GPU Shm/L1 (compared with
/// the HBM rate) — a later resource winning only when strictly higher. With
/// `apply_time_scale_factor` the CMEM/VMEM rates use the DVFS-normalised time (HBM keeps
/// the raw time, as in XProf).
pub fn roofline_metrics(
    metrics: &OpMetrics,
    perf_env: &PerfEnv,
    run_env: &RunEnvironment,
    apply_time_scale_factor: bool,
) -> RooflineMetrics {
    let flops = metrics.flops_v2;
    let bytes = BytesByMemory::of(metrics);
    let device_time_ns =
        pico_to_nano(if apply_time_scale_factor { metrics.normalized_time_ps } else { metrics.time_ps });
    let mut r = RooflineMetrics {
        measured_flop_rate: giga_flops_per_second_per_core(metrics),
        model_flop_rate: giga_model_flops_per_second_per_core(metrics),
        measured_memory_bw: gibi_bytes_per_second_per_core(metrics, MEMORY_SPACE_ALL, MemoryOperationType::Unknown),
        flops: metrics.flops,
        flops_v2: flops,
        bytes_accessed: metrics.bytes_accessed,
        operational_intensity: safe_divide(flops, metrics.bytes_accessed as f64),
        hbm_bw: gibibytes_per_second(bytes.hbm as f64, pico_to_nano(metrics.time_ps)),
        cmem_read_bw: gibibytes_per_second(bytes.cmem_read as f64, device_time_ns),
        cmem_write_bw: gibibytes_per_second(bytes.cmem_write as f64, device_time_ns),
        vmem_read_bw: gibibytes_per_second(bytes.vmem_read as f64, device_time_ns),
        vmem_write_bw: gibibytes_per_second(bytes.vmem_write as f64, device_time_ns),
        hbm_operational_intensity: safe_divide(flops, bytes.hbm as f64),
        cmem_read_operational_intensity: safe_divide(flops, bytes.cmem_read as f64),
        cmem_write_operational_intensity: safe_divide(flops, bytes.cmem_write as f64),
        vmem_read_operational_intensity: safe_divide(flops, bytes.vmem_read as f64),
        vmem_write_operational_intensity: safe_divide(flops, bytes.vmem_write as f64),
        bound_by: BoundBy::Unknown,
        bottleneck_operational_intensity: 0.0,
    };

    let mut utilization = 0.0;
    let mut consider = |r: &mut RooflineMetrics, resource: BoundBy, resource_utilization: f64, intensity: f64| {
        if utilization < resource_utilization {
            utilization = resource_utilization;
            r.bound_by = resource;
            r.bottleneck_operational_intensity = intensity;
        }
    };

    let peak_gflops = tera_to_giga(perf_env.peak_tera_flops_per_second);
    let (rate, intensity) = (r.measured_flop_rate, r.operational_intensity);
    consider(&mut r, BoundBy::Compute, safe_divide(rate, peak_gflops), intensity);
    let peak_hbm = memory_peak_bandwidth(perf_env, peak_bw_index::HBM_RW);
    let (rate, intensity) = (r.hbm_bw, r.hbm_operational_intensity);
    consider(&mut r, BoundBy::Hbm, safe_divide(rate, giga_to_gibi(peak_hbm)), intensity);

    match run_env.hardware_type {
        HardwareType::Tpu => {
            let on_chip = [
                (
                    bytes.cmem_read,
                    peak_bw_index::CMEM_RD,
                    BoundBy::CmemRead,
                    r.cmem_read_bw,
                    r.cmem_read_operational_intensity,
                ),
                (
                    bytes.cmem_write,
                    peak_bw_index::CMEM_WR,
                    BoundBy::CmemWrite,
                    r.cmem_write_bw,
                    r.cmem_write_operational_intensity,
                ),
                (
                    bytes.vmem_read,
                    peak_bw_index::VMEM_RD,
                    BoundBy::VmemRead,
                    r.vmem_read_bw,
                    r.vmem_read_operational_intensity,
                ),
                (
                    bytes.vmem_write,
                    peak_bw_index::VMEM_WR,
                    BoundBy::VmemWrite,
                    r.vmem_write_bw,
                    r.vmem_write_operational_intensity,
                ),
            ];
            for (moved, index, resource, rate, intensity) in on_chip {
                let peak = memory_peak_bandwidth(perf_env, index);
                if moved != 0 && peak != 0.0 {
                    consider(&mut r, resource, safe_divide(rate, giga_to_gibi(peak)), intensity);
                }
            }
        }
        HardwareType::Gpu => {
            let peak_shm_l1 = memory_peak_bandwidth(perf_env, peak_bw_index::SRAM_WR);
            if peak_shm_l1 != 0.0 {
                let (rate, intensity) = (r.hbm_bw, r.hbm_operational_intensity);
                consider(&mut r, BoundBy::ShmL1, safe_divide(rate, giga_to_gibi(peak_shm_l1)), intensity);
            }
        }
        HardwareType::Unknown | HardwareType::CpuOnly => {}
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::MemoryAccessed;

    fn op(name: &str, self_time_ps: u64) -> OpMetrics {
        OpMetrics { name: name.into(), self_time_ps, time_ps: self_time_ps, ..Default::default() }
    }

    #[test]
    fn sorts_by_self_time_then_name() {
        let db = OpMetricsDb { metrics_db: vec![op("b", 5), op("a", 5), op("c", 9), op("d", 1)], ..Default::default() };
        let names: Vec<&str> = sorted_op_metrics_db(&db, None).iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["c", "a", "b", "d"]);
        let top: Vec<&str> = sorted_op_metrics_db(&db, Some(2)).iter().map(|m| m.name.as_str()).collect();
        assert_eq!(top, ["c", "a"]);
        assert!(sorted_op_metrics_db(&db, Some(0)).is_empty());
        // Same name and time (two HLO modules): database order, also across the cut.
        let twins = OpMetricsDb {
            metrics_db: vec![op("x", 1), OpMetrics { hlo_module_id: 2, ..op("x", 1) }, op("y", 1), op("w", 7)],
            ..Default::default()
        };
        let modules: Vec<(u64, &str)> =
            sorted_op_metrics_db(&twins, Some(3)).iter().map(|m| (m.hlo_module_id, m.name.as_str())).collect();
        assert_eq!(modules, [(0, "w"), (0, "x"), (2, "x")]);
    }

    #[test]
    fn execution_times_and_ranks() {
        let m = OpMetrics { occurrences: 4, time_ps: 8_000_000, self_time_ps: 2_000_000, ..Default::default() };
        let t = execution_times(&m);
        assert_eq!(
            (t.total_time_in_us, t.avg_time_in_us, t.total_self_time_in_us, t.avg_self_time_in_us),
            (8.0, 2.0, 2.0, 0.5)
        );
        let idle = execution_times(&OpMetrics { time_ps: 5, self_time_ps: 5, ..Default::default() });
        assert_eq!(idle.avg_time_in_us, 0.0);
        let first = RankAndFraction::default().next(10.0, 4.0);
        let second = first.next(10.0, 1.0);
        assert_eq!((second.rank, second.fraction, second.cumulative_fraction), (2, 0.1, 0.5));
    }

    #[test]
    fn roofline_picks_the_most_utilised_resource() {
        let perf_env = PerfEnv {
            peak_tera_flops_per_second: 1.0,
            peak_hbm_bw_giga_bytes_per_second: 1.0,
            peak_bws_giga_bytes_per_second: vec![1.0, 0.0, 0.0, 1000.0, 1000.0, 0.05, 0.05],
            ..Default::default()
        };
        let tpu = RunEnvironment { hardware_type: HardwareType::Tpu, ..Default::default() };
        // 1 µs, 100 FLOPs (0.1 GFLOP/s, 1e-4 of peak), 10 HBM bytes (0.01 GB/s, 1% of peak).
        let mut m = OpMetrics { time_ps: 1_000_000, flops_v2: 100.0, bytes_accessed: 10, ..Default::default() };
        let r = roofline_metrics(&m, &perf_env, &tpu, false);
        assert_eq!(r.bound_by, BoundBy::Hbm);
        assert_eq!(r.operational_intensity, 10.0);
        assert!((r.hbm_bw - giga_to_gibi(0.01)).abs() < 1e-15);
        // 40 VMEM bytes read: 0.04 GB/s of a 0.05 GB/s peak beats HBM.
        m.memory_accessed_breakdown = vec![
            MemoryAccessed {
                operation_type: MemoryOperationType::Read,
                memory_space: MEMORY_SPACE_HBM,
                bytes_accessed: 10,
            },
            MemoryAccessed {
                operation_type: MemoryOperationType::Read,
                memory_space: MEMORY_SPACE_VMEM,
                bytes_accessed: 40,
            },
        ];
        let r = roofline_metrics(&m, &perf_env, &tpu, false);
        assert_eq!(r.bound_by, BoundBy::VmemRead);
        assert_eq!(r.bottleneck_operational_intensity, 2.5);
        // Not a TPU: on-chip memories are ignored.
        let cpu = RunEnvironment::default();
        assert_eq!(roofline_metrics(&m, &perf_env, &cpu, false).bound_by, BoundBy::Hbm);
        assert_eq!(bytes_accessed_per_core(&m, MEMORY_SPACE_ON_CHIP, MemoryOperationType::Unknown), 40.0);
        assert_eq!(bytes_accessed_per_core(&m, MEMORY_SPACE_HBM, MemoryOperationType::Write), 0.0);
        // Nothing measured: Unknown.
        let none = roofline_metrics(&OpMetrics::default(), &perf_env, &tpu, false);
        assert_eq!(none.bound_by.as_str(), "Unknown");
    }
}
