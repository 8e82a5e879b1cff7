//! GPU hardware facts: device capabilities read from a device plane's stats, peak FLOP/s
//! and shared-memory bandwidth per core from the NVIDIA (by compute capability) and AMD
//! (by gfx architecture) tables, GPU model names, and `ParseHardwareType`. A port of
//! XProf's `device_caps_utils.cc`, `hardware_type_utils.cc`, `cuda_type_utils.cc` and
//! `rocm_type_utils.cc`.

use super::types::HardwareType;
use oxprof_model::{StatValue, XPlane};

/// `device_vendor` of NVIDIA GPUs.
pub const DEVICE_VENDOR_NVIDIA: &str = "Nvidia";
/// `device_vendor` of AMD GPUs.
pub const DEVICE_VENDOR_AMD: &str = "AMD";

/// `DeviceCapabilities`: what a GPU plane says about its device.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceCapabilities {
    /// Clock rate (GHz).
    pub clock_rate_in_ghz: f64,
    /// Streaming multiprocessors (NVIDIA) or compute units (AMD).
    pub num_cores: u32,
    /// Memory size.
    pub memory_size_in_bytes: u64,
    /// Memory bandwidth (bytes/s).
    pub memory_bandwidth: u64,
    /// Compute capability `(major, minor)`, when the plane has either stat.
    pub compute_capability: Option<(u32, u32)>,
    /// `Nvidia`, `AMD`, or empty.
    pub device_vendor: String,
    /// Device name (AMD: the gfx architecture, e.g. `gfx942`).
    pub device_name: String,
}

impl DeviceCapabilities {
    /// Compute capability major (0 when absent, as a proto default).
    pub fn major(&self) -> u32 {
        self.compute_capability.map_or(0, |c| c.0)
    }

    /// Compute capability minor (0 when absent).
    pub fn minor(&self) -> u32 {
        self.compute_capability.map_or(0, |c| c.1)
    }
}

/// XProf's `XStatVisitor::IntOrUintValue`: the uint value, or the int value reinterpreted;
/// 0 for other kinds (a proto's unset oneof).
pub(crate) fn int_or_uint(value: &StatValue<'_>) -> u64 {
    match *value {
        StatValue::Uint64(v) => v,
        StatValue::Int64(v) => v as u64,
        _ => 0,
    }
}

/// XProf's `XStatVisitor::IntValue`: `int64_value`, 0 unless the stat holds an int64.
pub(crate) fn int_value(value: &StatValue<'_>) -> i64 {
    match *value {
        StatValue::Int64(v) => v,
        _ => 0,
    }
}

/// XProf's `XStatVisitor::UintValue`: `uint64_value`, 0 unless the stat holds a uint64.
pub(crate) fn uint_value(value: &StatValue<'_>) -> u64 {
    match *value {
        StatValue::Uint64(v) => v,
        _ => 0,
    }
}

/// XProf's `XStatVisitor::DoubleValue`: `double_value`, 0 unless the stat holds a double.
pub(crate) fn double_value(value: &StatValue<'_>) -> f64 {
    match *value {
        StatValue::Double(v) => v,
        _ => 0.0,
    }
}

/// XProf's `StrOrRefValue` (empty for other kinds).
pub(crate) fn str_value<'a>(value: &StatValue<'a>) -> &'a str {
    match *value {
        StatValue::Str(s) | StatValue::Ref(s) => s,
        _ => "",
    }
}

/// `GetDeviceCaps`: reads the capability stats of a (GPU) device plane. Later stats of the
/// same kind win, as in XProf's loop over the plane's stats.
pub fn device_caps(plane: &XPlane) -> DeviceCapabilities {
    let mut caps = DeviceCapabilities::default();
    for stat in plane.stats() {
        let v = &stat.value;
        match stat.name() {
            "clock_rate" => caps.clock_rate_in_ghz = int_or_uint(v) as f64 / 1_000_000.0,
            "core_count" => caps.num_cores = int_or_uint(v) as u32,
            "memory_bandwidth" => caps.memory_bandwidth = int_or_uint(v),
            "memory_size" => caps.memory_size_in_bytes = int_or_uint(v),
            "compute_cap_major" => {
                let minor = caps.minor();
                caps.compute_capability = Some((int_or_uint(v) as u32, minor));
            }
            "compute_cap_minor" => {
                let major = caps.major();
                caps.compute_capability = Some((major, int_or_uint(v) as u32));
            }
            "device_vendor" => caps.device_vendor = str_value(v).to_string(),
            "gpu_device_name" => caps.device_name = str_value(v).to_string(),
            _ => {}
        }
    }
    caps
}

/// Peak throughput per core and cycle of one precision set, in FLOPs (scaled by the clock
/// in GHz it becomes GFLOP/s per core).
#[derive(Debug, Clone, Copy, Default)]
struct PrecisionPeaks {
    fp32: f64,
    fp16: f64,
}

/// Per-SM (NVIDIA) or per-CU (AMD) peaks of the general and the matrix units. Only the
/// FP32 and FP16 columns matter: XProf's peak is the max of those four numbers.
#[derive(Debug, Clone, Copy)]
struct FlopCaps {
    vector: PrecisionPeaks,
    matrix: PrecisionPeaks,
}

const fn caps(vector_fp32: f64, vector_fp16: f64, matrix_fp32: f64, matrix_fp16: f64) -> FlopCaps {
    FlopCaps {
        vector: PrecisionPeaks { fp32: vector_fp32, fp16: vector_fp16 },
        matrix: PrecisionPeaks { fp32: matrix_fp32, fp16: matrix_fp16 },
    }
}

/// NVIDIA per-SM per-cycle peaks by normalized compute capability (`major*1000 + minor*10`),
/// ascending (`cuda_type_utils.cc`; CUDA cores then tensor cores).
const NVIDIA_FLOP_CAPS: &[(u32, FlopCaps)] = &[
    (2000, caps(64.0, 0.0, 0.0, 0.0)),
    (3000, caps(384.0, 0.0, 0.0, 0.0)),
    (5000, caps(256.0, 0.0, 0.0, 0.0)),
    (6000, caps(128.0, 256.0, 0.0, 0.0)),
    (6010, caps(256.0, 4.0, 0.0, 0.0)),
    (7000, caps(128.0, 256.0, 0.0, 1024.0)),
    (7050, caps(128.0, 256.0, 0.0, 1024.0)),
    (8000, caps(128.0, 512.0, 1024.0, 2048.0)),
    (8060, caps(256.0, 256.0, 256.0, 1024.0)),
    (8090, caps(256.0, 256.0, 512.0, 1024.0)),
    (9000, caps(256.0, 512.0, 2048.0, 4096.0)),
    (10000, caps(296.0, 592.0, 4096.0, 8192.0)),
];

/// The NVIDIA table row for a compute capability: the exact one, else the highest below it,
/// else the oldest (XProf's `lower_bound` then step back).
fn nvidia_flop_caps(major: u32, minor: u32) -> FlopCaps {
    let normalized = major.wrapping_mul(1000).wrapping_add(minor.wrapping_mul(10));
    let at_or_below = NVIDIA_FLOP_CAPS.iter().rev().find(|(cc, _)| *cc <= normalized);
    at_or_below.or(NVIDIA_FLOP_CAPS.first()).map_or(caps(0.0, 0.0, 0.0, 0.0), |(_, c)| *c)
}

/// AMD per-CU per-cycle peaks by gfx architecture (`rocm_type_utils.cc`; vector then matrix).
fn amd_flop_caps(gfx: &str) -> Option<FlopCaps> {
    match gfx {
        "gfx908" => Some(caps(128.0, 0.0, 256.0, 1024.0)),
        "gfx90a" => Some(caps(128.0, 0.0, 256.0, 1024.0)),
        "gfx942" => Some(caps(256.0, 256.0, 256.0, 2048.0)),
        "gfx950" => Some(caps(256.0, 256.0, 256.0, 4096.0)),
        _ => None,
    }
}

/// AMD LDS bytes per CU per cycle by gfx architecture (0 when unknown).
fn amd_lds_bytes_per_cu_per_cycle(gfx: &str) -> f64 {
    match gfx {
        "gfx908" | "gfx90a" | "gfx942" => 128.0,
        "gfx950" => 256.0,
        _ => 0.0,
    }
}

/// The AMD gfx architecture: the device name when it is `gfx` + at least 3 hex digits, else
/// derived from a compute capability that identifies one architecture, else empty.
fn amd_gfx_version(caps: &DeviceCapabilities) -> &str {
    let name = caps.device_name.as_str();
    if let Some(suffix) = name.strip_prefix("gfx")
        && suffix.len() >= 3
        && suffix.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return name;
    }
    match (caps.major(), caps.minor()) {
        (9, 4) => "gfx942",
        (9, 5) => "gfx950",
        _ => "",
    }
}

fn max_of(c: &FlopCaps, scale: f64) -> f64 {
    [c.vector.fp32 * scale, c.vector.fp16 * scale, c.matrix.fp32 * scale, c.matrix.fp16 * scale]
        .into_iter()
        .fold(f64::NEG_INFINITY, f64::max)
}

/// `GetFlopMaxThroughputPerCore`: peak GFLOP/s of one SM/CU (max over FP32/FP16 of the
/// general and matrix units, times the clock in GHz); 0 for unknown vendors.
pub fn flop_max_throughput_per_core(caps: &DeviceCapabilities) -> f64 {
    match caps.device_vendor.as_str() {
        DEVICE_VENDOR_NVIDIA => max_of(&nvidia_flop_caps(caps.major(), caps.minor()), caps.clock_rate_in_ghz),
        DEVICE_VENDOR_AMD => amd_flop_caps(amd_gfx_version(caps)).map_or(0.0, |c| max_of(&c, caps.clock_rate_in_ghz)),
        _ => 0.0,
    }
}

/// `GetSharedMemoryBandwidthPerCore`: shared memory (NVIDIA) / LDS (AMD) bytes/s of one
/// SM/CU; 0 for unknown vendors.
pub fn shared_memory_bandwidth_per_core(caps: &DeviceCapabilities) -> f64 {
    match caps.device_vendor.as_str() {
        DEVICE_VENDOR_NVIDIA => {
            // 32 banks; 4 bytes per 2 cycles up to compute capability 2, else 8 bytes/cycle.
            let bytes_per_cycle = if caps.major() <= 2 { 32.0 * 4.0 / 2.0 } else { 32.0 * 8.0 };
            bytes_per_cycle * caps.clock_rate_in_ghz * 1e9
        }
        DEVICE_VENDOR_AMD => {
            let bytes_per_cycle = amd_lds_bytes_per_cu_per_cycle(amd_gfx_version(caps));
            if bytes_per_cycle <= 0.0 { 0.0 } else { bytes_per_cycle * caps.clock_rate_in_ghz * 1e9 }
        }
        _ => 0.0,
    }
}

/// `GpuModelName`: e.g. `Nvidia GPU (Volta)`, `AMD GPU - gfx942`; empty for unknown vendors
/// (callers then say `GPU`).
pub fn gpu_model_name(caps: &DeviceCapabilities) -> String {
    match caps.device_vendor.as_str() {
        DEVICE_VENDOR_NVIDIA => {
            let name = match (caps.major(), caps.minor()) {
                (2, _) => "Nvidia GPU (Fermi)",
                (3, _) => "Nvidia GPU (Kepler)",
                (5, _) => "Nvidia GPU (Maxwell)",
                (6, _) => "Nvidia GPU (Pascal)",
                (7, minor) if minor < 5 => "Nvidia GPU (Volta)",
                (7, _) => "Nvidia GPU (Turing)",
                (8, minor) if minor < 9 => "Nvidia GPU (Ampere)",
                (8, _) => "Nvidia GPU (Ada Lovelace)",
                (9, _) => "Nvidia GPU (Hopper)",
                (10, _) => "Nvidia GPU (Blackwell)",
                _ => "Nvidia GPU",
            };
            name.to_string()
        }
        DEVICE_VENDOR_AMD => {
            let gfx = amd_gfx_version(caps);
            if !gfx.is_empty() {
                return format!("AMD GPU - {gfx}");
            }
            match caps.major() {
                9 => "AMD GPU - gfx-9XX series",
                10 => "AMD GPU - gfx-10XX series",
                11 => "AMD GPU - gfx-11XX series",
                _ => "AMD GPU",
            }
            .to_string()
        }
        _ => String::new(),
    }
}

/// `ParseHardwareType`: `GPU` anywhere → GPU, exactly `CPU` → CPU only, `TPU` anywhere → TPU.
pub fn parse_hardware_type(device_type: &str) -> HardwareType {
    if device_type.contains("GPU") {
        HardwareType::Gpu
    } else if device_type == "CPU" {
        HardwareType::CpuOnly
    } else if device_type.contains("TPU") {
        HardwareType::Tpu
    } else {
        HardwareType::Unknown
    }
}

/// `HasDevice`: GPU or TPU.
pub fn has_device(hardware: HardwareType) -> bool {
    matches!(hardware, HardwareType::Gpu | HardwareType::Tpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nvidia(major: u32, minor: u32, ghz: f64) -> DeviceCapabilities {
        DeviceCapabilities {
            clock_rate_in_ghz: ghz,
            num_cores: 80,
            compute_capability: Some((major, minor)),
            device_vendor: DEVICE_VENDOR_NVIDIA.into(),
            ..Default::default()
        }
    }

    #[test]
    fn nvidia_peaks_and_names() {
        // V100: 1024 tensor-core FP16 FLOPs per SM per cycle.
        let v100 = nvidia(7, 0, 1.53);
        assert_eq!(flop_max_throughput_per_core(&v100), 1024.0 * 1.53);
        assert_eq!(gpu_model_name(&v100), "Nvidia GPU (Volta)");
        assert_eq!(shared_memory_bandwidth_per_core(&v100), 256.0 * 1.53 * 1e9);
        // 8.7 is not in the table: the highest below (8.6) is used.
        assert_eq!(flop_max_throughput_per_core(&nvidia(8, 7, 1.0)), 1024.0);
        // Older than the table: the oldest row.
        assert_eq!(flop_max_throughput_per_core(&nvidia(1, 0, 1.0)), 64.0);
        // Newer than the table: the newest row.
        assert_eq!(flop_max_throughput_per_core(&nvidia(12, 0, 1.0)), 8192.0);
        assert_eq!(gpu_model_name(&nvidia(8, 9, 1.0)), "Nvidia GPU (Ada Lovelace)");
        assert_eq!(gpu_model_name(&nvidia(4, 0, 1.0)), "Nvidia GPU");
    }

    #[test]
    fn amd_peaks_and_names() {
        let mi300 = DeviceCapabilities {
            clock_rate_in_ghz: 2.1,
            num_cores: 304,
            compute_capability: Some((9, 4)),
            device_vendor: DEVICE_VENDOR_AMD.into(),
            ..Default::default()
        };
        assert_eq!(gpu_model_name(&mi300), "AMD GPU - gfx942");
        assert_eq!(flop_max_throughput_per_core(&mi300), 2048.0 * 2.1);
        let named = DeviceCapabilities { device_name: "gfx90a".into(), ..mi300.clone() };
        assert_eq!(gpu_model_name(&named), "AMD GPU - gfx90a");
        let bad_name = DeviceCapabilities { device_name: "gfx9z".into(), compute_capability: Some((9, 0)), ..mi300 };
        assert_eq!(gpu_model_name(&bad_name), "AMD GPU - gfx-9XX series");
        assert_eq!(flop_max_throughput_per_core(&bad_name), 0.0);
        assert_eq!(shared_memory_bandwidth_per_core(&bad_name), 0.0);
    }

    #[test]
    fn unknown_vendor_and_hardware_types() {
        let caps = DeviceCapabilities::default();
        assert_eq!(gpu_model_name(&caps), "");
        assert_eq!(flop_max_throughput_per_core(&caps), 0.0);
        assert_eq!(parse_hardware_type("Nvidia GPU (Volta)"), HardwareType::Gpu);
        assert_eq!(parse_hardware_type("CPU"), HardwareType::CpuOnly);
        assert_eq!(parse_hardware_type("TPU v6 Lite"), HardwareType::Tpu);
        assert_eq!(parse_hardware_type("cpu"), HardwareType::Unknown);
        assert!(has_device(HardwareType::Tpu) && !has_device(HardwareType::CpuOnly));
    }
}
