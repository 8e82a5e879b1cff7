//! The OpStats facts about the machine and the run rather than its events: `PerfEnv`
//! (hardware peaks), `RunEnvironment`, `core_id_to_details`, `performance_counter_result`,
//! `program_id_to_name_map`, `run_environment.is_training` and the diagnostics copied from
//! the XSpace. Ports of the matching parts of XProf's `xplane_to_op_stats.cc`,
//! `hlo_proto_map.cc` and `model_tracker.cc`.

use super::hardware::{
    device_caps, double_value, flop_max_throughput_per_core, gpu_model_name, int_or_uint, int_value,
    shared_memory_bandwidth_per_core, str_value,
};
use super::types::{CoreDetails, HardwareType, OpStatsDiagnostics, PerfEnv, PerformanceCounterResult, RunEnvironment};
use oxprof_grouping::tf_op::{is_jax_op_type, is_tf_op_name, is_tf_op_type};
use oxprof_model::schema::{
    GPU_PLANE_PREFIX, HOST_THREADS_PLANE_NAME, METADATA_PLANE_NAME, StatType, TPU_PLANE_PREFIX,
};
use oxprof_model::{StatValue, XPlane, XSpace};
use std::collections::{BTreeMap, HashSet};

/// The core id XProf files a GPU (or CPU-only) host's core details under
/// (`kDefaultGpuLocalCoreId`).
pub const DEFAULT_GPU_LOCAL_CORE_ID: u32 = 1;

/// `Hostname`: the XSpace's first host name, or `localhost`.
pub fn hostname(space: &XSpace) -> &str {
    space.hostnames.first().map_or("localhost", String::as_str)
}

/// `FindTensorCorePlanes`: planes named `/device:TPU:<digits>` (SparseCore planes excluded).
pub fn tensor_core_planes(space: &XSpace) -> impl Iterator<Item = &XPlane> {
    space
        .planes
        .iter()
        .filter(|p| p.name.strip_prefix(TPU_PLANE_PREFIX).is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit())))
}

/// The device planes OpStats is computed from, in file order: every `/device:TPU:` plane
/// (TensorCores and SparseCores) if there is one, else every `/device:GPU:` plane. The
/// flag says whether they are TPU planes.
pub fn device_planes(space: &XSpace) -> (Vec<&XPlane>, bool) {
    let tpu: Vec<&XPlane> = space.planes_with_prefix(TPU_PLANE_PREFIX).collect();
    if tpu.is_empty() { (space.planes_with_prefix(GPU_PLANE_PREFIX).collect(), false) } else { (tpu, true) }
}

/// `GetSparseCoreId`: the SparseCore number of a plane named
/// `/device:TPU:<n> SparseCore[ <word>] <id>`.
pub fn sparse_core_id(plane_name: &str) -> Option<u32> {
    let rest = plane_name.strip_prefix(TPU_PLANE_PREFIX)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = rest[digits..].strip_prefix(" SparseCore ")?;
    let id_text = match rest.split_once(' ') {
        Some((word, id)) if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphabetic()) => id,
        Some(_) => return None,
        None => rest,
    };
    if id_text.is_empty() || !id_text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    id_text.parse().ok()
}

/// A plane stat by name (the first one), as `XPlaneVisitor::GetStat` finds it.
fn plane_stat<'a>(plane: &'a XPlane, name: &str) -> Option<StatValue<'a>> {
    plane.stats().find(|s| s.name() == name).map(|s| s.value)
}

fn double_stat_or_zero(plane: &XPlane, name: &str) -> f64 {
    plane_stat(plane, name).map_or(0.0, |v| double_value(&v))
}

/// `MakePerfEnv`: peak FLOP/s, bandwidths by `MemBwType`, and the ridge point
/// (peak GFLOP/s over peak HBM GB/s).
fn make_perf_env(peak_tera_flops_per_second: f64, peak_bws: Vec<f64>) -> PerfEnv {
    let hbm = peak_bws.first().copied().unwrap_or(0.0);
    PerfEnv {
        peak_tera_flops_per_second,
        ridge_point: peak_tera_flops_per_second * 1000.0 / hbm,
        peak_bws_giga_bytes_per_second: peak_bws,
        ..Default::default()
    }
}

/// `GetPerfEnvFromXPlane`: hardware peaks of a device plane.
///
/// * GPU: peak TFLOP/s from the plane's `peak_teraflops_per_second` stat if positive, else
///   cores × the per-core peak of the vendor tables; bandwidths `[HBM, SRAM_RD, SRAM_WR]`
///   with SRAM from the plane's stats if positive, else cores × shared-memory bandwidth.
/// * TPU: everything from the plane's stats; XProf 2.24.2 writes nine bandwidths
///   `[HBM, SRAM_RD, SRAM_WR, CMEM_RD, CMEM_WR, VMEM_RD, VMEM_WR, SPMEM_RD, SPMEM_WR]`. The
///   SPMEM stat names are not in the sources oxprof follows, so those two are 0 here (as
///   on every profile seen so far).
pub fn perf_env_from_plane(plane: &XPlane) -> PerfEnv {
    if !plane.name.starts_with(TPU_PLANE_PREFIX) {
        let caps = device_caps(plane);
        let cores = f64::from(caps.num_cores);
        let mut peak = double_stat_or_zero(plane, "peak_teraflops_per_second");
        if peak <= 0.0 {
            peak = cores * (flop_max_throughput_per_core(&caps) / 1000.0);
        }
        let hbm = caps.memory_bandwidth as f64 / 1e9;
        let derived_shm = cores * (shared_memory_bandwidth_per_core(&caps) / 1e9);
        let mut sram_rd = double_stat_or_zero(plane, "peak_sram_rd_bw_gigabytes_per_second");
        let mut sram_wr = double_stat_or_zero(plane, "peak_sram_wr_bw_gigabytes_per_second");
        if sram_rd <= 0.0 {
            sram_rd = derived_shm;
        }
        if sram_wr <= 0.0 {
            sram_wr = derived_shm;
        }
        return make_perf_env(peak, vec![hbm, sram_rd, sram_wr]);
    }
    let bws = vec![
        double_stat_or_zero(plane, "peak_hbm_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_sram_rd_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_sram_wr_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_cmem_rd_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_cmem_wr_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_vmem_rd_bw_gigabytes_per_second"),
        double_stat_or_zero(plane, "peak_vmem_wr_bw_gigabytes_per_second"),
        0.0,
        0.0,
    ];
    let has_cmem = bws[3] > 0.0 || bws[4] > 0.0;
    let flag = |name: &str| plane_stat(plane, name).is_some_and(|v| int_value(&v) != 0);
    let (has_merged_vmem, has_megacore) = (flag("has_merged_vmem"), flag("has_megacore"));
    PerfEnv {
        has_cmem,
        has_merged_vmem,
        has_megacore,
        ..make_perf_env(double_stat_or_zero(plane, "peak_teraflops_per_second"), bws)
    }
}

/// `SetRunEnvironment`: one host and task, its host name, and the device kind: the GPU
/// model (or `GPU`) and number of GPU planes; else the TPU `device_type_string` and number
/// of TensorCore planes; else `CPU`. `is_training` is left false (see [`is_training`]).
pub fn run_environment(space: &XSpace) -> RunEnvironment {
    let mut env = RunEnvironment { host_count: 1, task_count: 1, ..Default::default() };
    env.hostnames.insert(hostname(space).to_string(), true);
    let gpu_planes: Vec<&XPlane> = space.planes_with_prefix(GPU_PLANE_PREFIX).collect();
    let tpu_planes: Vec<&XPlane> = tensor_core_planes(space).collect();
    if let Some(first) = gpu_planes.first() {
        let model = gpu_model_name(&device_caps(first));
        env.device_type = if model.is_empty() { "GPU".to_string() } else { model };
        env.device_core_count = gpu_planes.len() as i32;
        env.hardware_type = HardwareType::Gpu;
    } else if let Some(first) = tpu_planes.first() {
        if let Some(v) = plane_stat(first, StatType::DeviceTypeString.as_str()) {
            env.device_type = str_value(&v).to_string();
        }
        env.device_core_count = tpu_planes.len() as i32;
        env.hardware_type = HardwareType::Tpu;
    } else {
        env.device_type = "CPU".to_string();
        env.device_core_count = 0;
        env.hardware_type = HardwareType::CpuOnly;
    }
    env
}

/// A minimal protobuf wire reader: enough to read a few scalar and string fields of small
/// messages (`CoreDetails`, `MemoryAccessBreakdown`, the head of an `HloProto`) without a
/// generated decoder.
pub(crate) mod wire {
    /// One field: its number and value.
    pub(crate) enum Field<'a> {
        Varint(u64),
        Fixed64,
        Bytes(&'a [u8]),
        Fixed32,
    }

    fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *buf.get(*pos)?;
            *pos += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The fields of a message, in order; `None` if the bytes are not a well-formed message
    /// (groups, bad lengths or truncation: what makes `ParseFromString` fail).
    pub(crate) fn fields(buf: &[u8]) -> Option<Vec<(u32, Field<'_>)>> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            let key = varint(buf, &mut pos)?;
            let number = u32::try_from(key >> 3).ok().filter(|&n| n > 0)?;
            let field = match key & 7 {
                0 => Field::Varint(varint(buf, &mut pos)?),
                1 => {
                    pos = pos.checked_add(8).filter(|&p| p <= buf.len())?;
                    Field::Fixed64
                }
                2 => {
                    let len = usize::try_from(varint(buf, &mut pos)?).ok()?;
                    let end = pos.checked_add(len).filter(|&e| e <= buf.len())?;
                    let bytes = &buf[pos..end];
                    pos = end;
                    Field::Bytes(bytes)
                }
                5 => {
                    pos = pos.checked_add(4).filter(|&p| p <= buf.len())?;
                    Field::Fixed32
                }
                _ => return None,
            };
            out.push((number, field));
        }
        Some(out)
    }
}

/// Parses a serialized `CoreDetails` (the `core_details` plane stat); `None` when the bytes
/// are not a valid message. Later occurrences of a field win, as in protobuf.
pub fn parse_core_details(bytes: &[u8]) -> Option<CoreDetails> {
    let mut details = CoreDetails::default();
    for (number, field) in wire::fields(bytes)? {
        match (number, field) {
            (1, wire::Field::Bytes(b)) => details.hostname = std::str::from_utf8(b).ok()?.to_string(),
            (2, wire::Field::Varint(v)) => details.device_ordinal = v as u32,
            (3, wire::Field::Varint(v)) => details.core_num = v as u32,
            (4, wire::Field::Varint(v)) => details.local_chip_id = v as u32,
            (5, wire::Field::Varint(v)) => details.global_chip_id = v as u32,
            (6, wire::Field::Varint(v)) => details.global_core_id = v as u32,
            (7, wire::Field::Varint(v)) => details.is_sparse_core = v != 0,
            // A known field with the wrong wire type fails the parse.
            (1..=7, _) => return None,
            _ => {}
        }
    }
    Some(details)
}

/// The core details of one TPU device plane (its `core_details` stat), with the host name
/// and SparseCore flag XProf fills in; `None` when the plane has none or it does not parse.
pub fn plane_core_details(plane: &XPlane, hostname: &str) -> Option<CoreDetails> {
    let value = plane_stat(plane, StatType::CoreDetails.as_str())?;
    let bytes = match value {
        StatValue::Bytes(b) => b,
        _ => &[],
    };
    let mut details = parse_core_details(bytes)?;
    details.hostname = hostname.to_string();
    details.is_sparse_core = sparse_core_id(&plane.name).is_some();
    Some(details)
}

/// `core_id_to_details`: for TPU hosts, each device plane's details keyed by plane id; for
/// GPU and CPU-only hosts one entry (core 1) holding the host name.
pub fn core_id_to_details(space: &XSpace) -> BTreeMap<u32, CoreDetails> {
    let host = hostname(space);
    let (planes, is_tpu) = device_planes(space);
    let mut out = BTreeMap::new();
    if !is_tpu {
        out.insert(DEFAULT_GPU_LOCAL_CORE_ID, CoreDetails { hostname: host.to_string(), ..Default::default() });
        return out;
    }
    for plane in planes {
        if let Some(details) = plane_core_details(plane, host) {
            out.insert(plane.id as u32, details);
        }
    }
    out
}

/// `performance_counter_result`: MXU and HBM utilisation from the host plane's stats;
/// `None` unless the host plane has at least one of them.
pub fn performance_counter_result(space: &XSpace) -> Option<PerformanceCounterResult> {
    let host = space.plane(HOST_THREADS_PLANE_NAME)?;
    let mxu = plane_stat(host, StatType::MatrixUnitUtilizationPercent.as_str());
    let hbm = plane_stat(host, StatType::HbmUtilizationPercent.as_str());
    if mxu.is_none() && hbm.is_none() {
        return None;
    }
    Some(PerformanceCounterResult {
        matrix_unit_utilization_percent: mxu.map_or(0.0, |v| double_value(&v)),
        hbm_utilization_percent: hbm.map_or(0.0, |v| double_value(&v)),
    })
}

/// The name of the HLO module in a serialized `HloProto` (`hlo_module.name`), or `None` when
/// the bytes do not parse as a message.
fn hlo_proto_module_name(bytes: &[u8]) -> Option<&str> {
    let mut name = "";
    for (number, field) in wire::fields(bytes)? {
        if let (1, wire::Field::Bytes(module)) = (number, field) {
            for (n, f) in wire::fields(module)? {
                if let (1, wire::Field::Bytes(b)) = (n, f) {
                    name = std::str::from_utf8(b).ok()?;
                }
            }
        }
    }
    Some(name)
}

/// `(program id, serialized HloProto)` of every HLO module in the `/host:metadata` plane,
/// as `ParseHloProtosFromXSpace` reads them: event metadata with a bytes `Hlo Proto` stat;
/// the program id is the metadata's `program_id` stat if present, else its id. The first
/// module of a program id wins.
pub fn hlo_protos(space: &XSpace) -> Vec<(u64, &[u8])> {
    let mut out: Vec<(u64, &[u8])> = Vec::new();
    let mut seen = HashSet::new();
    for plane in space.planes.iter().filter(|p| p.name == METADATA_PLANE_NAME) {
        if plane.stat_metadata_of_type(StatType::HloProto).is_none() {
            continue;
        }
        for metadata in plane.event_metadata().iter().take(plane.event_metadata_count()) {
            let Some(id) = plane.event_metadata_by_file_id(metadata.id) else { continue };
            let stats = plane.metadata_stats(id);
            let Some(StatValue::Bytes(bytes)) = stats.get(StatType::HloProto).map(|s| s.value) else { continue };
            if wire::fields(bytes).is_none() {
                continue;
            }
            let program_id = stats.get(StatType::ProgramId).map_or(metadata.id as u64, |s| int_or_uint(&s.value));
            if seen.insert(program_id) {
                out.push((program_id, bytes));
            }
        }
    }
    out
}

/// `program_id_to_name_map`: program id → HLO module name, from the HLO protos in the
/// `/host:metadata` plane (empty when the XSpace holds none).
pub fn program_id_to_name_map(space: &XSpace) -> BTreeMap<u64, String> {
    hlo_protos(space)
        .into_iter()
        .filter_map(|(id, bytes)| Some((id, hlo_proto_module_name(bytes)?.to_string())))
        .collect()
}

/// The length-delimited values of field `want` in a message (none if it does not parse).
fn submessages(b: &[u8], want: u32) -> Vec<&[u8]> {
    wire::fields(b)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(n, f)| match f {
            wire::Field::Bytes(x) if n == want => Some(x),
            _ => None,
        })
        .collect()
}

/// `op_name` and `op_type` of every instruction of a serialized `HloProto` (the
/// instruction metadata `ModelTracker` reads). Malformed parts are skipped.
pub fn hlo_instruction_metadata(bytes: &[u8]) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for module in submessages(bytes, 1) {
        for computation in submessages(module, 3) {
            for instruction in submessages(computation, 2) {
                let (mut op_type, mut op_name) = ("", "");
                for metadata in submessages(instruction, 7) {
                    for (n, f) in wire::fields(metadata).unwrap_or_default() {
                        match (n, f) {
                            (1, wire::Field::Bytes(b)) => op_type = std::str::from_utf8(b).unwrap_or(""),
                            (2, wire::Field::Bytes(b)) => op_name = std::str::from_utf8(b).unwrap_or(""),
                            _ => {}
                        }
                    }
                }
                out.push((op_name, op_type));
            }
        }
    }
    out
}

/// `IsJaxOpNameAndType`: a JAX op type that occurs in the op name's last `/` component.
fn is_jax_op_name_and_type(op_name: &str, op_type: &str) -> bool {
    !op_name.is_empty() && is_jax_op_type(op_type) && op_name.rsplit('/').next().unwrap_or("").contains(op_type)
}

/// Whether one HLO instruction's framework op shows gradients (`ModelTracker::ProcessOp`):
/// a TensorFlow op under a `gradient_tape` or `gradients*` scope, or a JAX op (or an op
/// without type) with a `transpose(` name scope (the transpose of a JVP).
pub fn is_gradient_op(op_name: &str, op_type: &str) -> bool {
    if is_tf_op_type(op_type) && is_tf_op_name(op_name) {
        let mut scopes: Vec<&str> = op_name.split('/').collect();
        scopes.pop();
        scopes
            .into_iter()
            .any(|scope| scope.strip_prefix("gradient").is_some_and(|rest| rest == "_tape" || rest.starts_with('s')))
    } else if is_jax_op_name_and_type(op_name, op_type) || op_type.is_empty() {
        op_name.split('/').any(|scope| scope.starts_with("transpose("))
    } else {
        false
    }
}

/// Whether the XSpace carries any HLO module.
pub fn has_hlo(space: &XSpace) -> bool {
    !hlo_protos(space).is_empty()
}

/// `run_environment.is_training`: whether any instruction of any HLO module in the XSpace
/// comes from a gradient op. XProf only looks when it builds its HLO module map, which
/// `ConvertXSpaceToOpStats` does for every XSpace with the default options.
pub fn is_training(space: &XSpace) -> bool {
    hlo_protos(space)
        .into_iter()
        .any(|(_, bytes)| hlo_instruction_metadata(bytes).into_iter().any(|(name, ty)| is_gradient_op(name, ty)))
}

/// `PropagateXSpaceDiagnosticsToOpStats`: the XSpace's errors and warnings, each
/// deduplicated. XProf copies them out of a hash set (an unspecified order); oxprof keeps
/// first-occurrence order. `None` when there are neither.
pub fn diagnostics(space: &XSpace) -> Option<OpStatsDiagnostics> {
    fn dedup(items: &[String]) -> Vec<String> {
        let mut seen = HashSet::new();
        items.iter().filter(|s| seen.insert(s.as_str())).cloned().collect()
    }
    if space.errors.is_empty() && space.warnings.is_empty() {
        return None;
    }
    Some(OpStatsDiagnostics { info: Vec::new(), warnings: dedup(&space.warnings), errors: dedup(&space.errors) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::{Value, XSpaceBuilder};

    fn space(builder: XSpaceBuilder) -> XSpace {
        oxprof_xspace::decode_xspace(&builder.to_bytes()).unwrap()
    }

    #[test]
    fn sparse_core_and_tensor_core_planes() {
        assert_eq!(sparse_core_id("/device:TPU:0 SparseCore 3"), Some(3));
        assert_eq!(sparse_core_id("/device:TPU:12 SparseCore Foo 1"), Some(1));
        assert_eq!(sparse_core_id("/device:TPU:0"), None);
        assert_eq!(sparse_core_id("/device:TPU: SparseCore 1"), None);
        assert_eq!(sparse_core_id("/device:TPU:0 SparseCore F2 1"), None);
        let s = space(
            XSpaceBuilder::new()
                .plane("/device:TPU:0", |_| {})
                .plane("/device:TPU:0 SparseCore 0", |_| {})
                .plane("/device:TPU:1", |_| {}),
        );
        assert_eq!(tensor_core_planes(&s).count(), 2);
        let (planes, is_tpu) = device_planes(&s);
        assert!(is_tpu);
        assert_eq!(planes.len(), 3);
    }

    #[test]
    fn gpu_perf_env_and_run_environment() {
        let s = space(
            XSpaceBuilder::new()
                .hostname("worker-0")
                .plane("/device:GPU:0", |p| {
                    p.stat("clock_rate", 1_530_000i64)
                        .stat("core_count", 80i64)
                        .stat("memory_bandwidth", 898_048_000_000u64)
                        .stat("compute_cap_major", 7i64)
                        .stat("compute_cap_minor", 0i64)
                        .stat("device_vendor", "Nvidia");
                })
                .plane("/device:GPU:1", |_| {}),
        );
        let env = run_environment(&s);
        assert_eq!(env.device_type, "Nvidia GPU (Volta)");
        assert_eq!(env.device_core_count, 2);
        assert_eq!(env.hardware_type, HardwareType::Gpu);
        assert_eq!(env.hostnames.keys().collect::<Vec<_>>(), ["worker-0"]);
        let perf = perf_env_from_plane(&s.planes[0]);
        assert!((perf.peak_tera_flops_per_second - 80.0 * 1024.0 * 1.53 / 1000.0).abs() < 1e-9);
        assert_eq!(perf.peak_bws_giga_bytes_per_second.len(), 3);
        assert!((perf.peak_bws_giga_bytes_per_second[0] - 898.048).abs() < 1e-9);
        assert!((perf.peak_bws_giga_bytes_per_second[1] - 80.0 * 256.0 * 1.53).abs() < 1e-6);
        assert!((perf.ridge_point - perf.peak_tera_flops_per_second * 1000.0 / 898.048).abs() < 1e-9);
        // A GPU host files its one core under id 1.
        let cores = core_id_to_details(&s);
        assert_eq!(cores.len(), 1);
        assert_eq!(cores[&1].hostname, "worker-0");
    }

    #[test]
    fn cpu_only_run_environment() {
        let s = space(XSpaceBuilder::new().plane("/host:CPU", |_| {}));
        let env = run_environment(&s);
        assert_eq!((env.device_type.as_str(), env.device_core_count), ("CPU", 0));
        assert_eq!(env.hardware_type, HardwareType::CpuOnly);
        assert_eq!(env.hostnames.keys().collect::<Vec<_>>(), ["localhost"]);
        assert_eq!(core_id_to_details(&s)[&1].hostname, "localhost");
        assert!(performance_counter_result(&s).is_none());
        assert!(diagnostics(&s).is_none());
    }

    #[test]
    fn tpu_core_details_perf_env_and_counters() {
        // CoreDetails{local_chip_id: 1, global_chip_id: 5, global_core_id: 5}
        let details = vec![0x20, 1, 0x28, 5, 0x30, 5];
        let s = space(
            XSpaceBuilder::new()
                .plane("/device:TPU:0", |p| {
                    p.id(10)
                        .stat("core_details", Value::Bytes(details.clone()))
                        .stat("device_type_string", "TPU v6 Lite")
                        .stat("peak_teraflops_per_second", 918.0)
                        .stat("peak_hbm_bw_gigabytes_per_second", 1600.0)
                        .stat("peak_cmem_wr_bw_gigabytes_per_second", 1.0)
                        .stat("has_megacore", 1i64);
                })
                .plane("/device:TPU:0 SparseCore 0", |p| {
                    p.id(11).stat("core_details", Value::Bytes(details.clone()));
                })
                .plane("/device:TPU:1", |p| {
                    p.id(12).stat("core_details", Value::Bytes(vec![0xff]));
                })
                .plane("/host:CPU", |p| {
                    p.stat("hbm_utilization_percent", 12.5);
                }),
        );
        let cores = core_id_to_details(&s);
        assert_eq!(cores.keys().copied().collect::<Vec<_>>(), [10, 11]);
        assert_eq!(cores[&10].local_chip_id, 1);
        assert_eq!(cores[&10].global_core_id, 5);
        assert!(!cores[&10].is_sparse_core && cores[&11].is_sparse_core);
        assert_eq!(cores[&10].hostname, "localhost");
        let env = run_environment(&s);
        assert_eq!((env.device_type.as_str(), env.device_core_count), ("TPU v6 Lite", 2));
        let perf = perf_env_from_plane(&s.planes[0]);
        assert_eq!(perf.peak_bws_giga_bytes_per_second.len(), 9);
        assert!(perf.has_cmem && perf.has_megacore && !perf.has_merged_vmem);
        assert_eq!(perf.ridge_point, 918.0 * 1000.0 / 1600.0);
        let counters = performance_counter_result(&s).unwrap();
        assert_eq!(counters.hbm_utilization_percent, 12.5);
        assert_eq!(counters.matrix_unit_utilization_percent, 0.0);
    }

    /// An `HloProto` with one module holding one computation of the given instructions
    /// `(op_name, op_type)`.
    fn hlo_proto(module: &str, instructions: &[(&str, &str)]) -> Vec<u8> {
        fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
            out.push(number << 3 | 2);
            out.push(bytes.len() as u8);
            out.extend_from_slice(bytes);
        }
        let mut computation = Vec::new();
        for (name, ty) in instructions {
            let mut metadata = Vec::new();
            field(&mut metadata, 1, ty.as_bytes());
            field(&mut metadata, 2, name.as_bytes());
            let mut instruction = Vec::new();
            field(&mut instruction, 1, b"x");
            field(&mut instruction, 7, &metadata);
            field(&mut computation, 2, &instruction);
        }
        let mut hlo_module = Vec::new();
        field(&mut hlo_module, 1, module.as_bytes());
        field(&mut hlo_module, 3, &computation);
        let mut proto = Vec::new();
        field(&mut proto, 1, &hlo_module);
        proto
    }

    #[test]
    fn program_names_and_training_from_hlo_protos() {
        let inference = hlo_proto("jit_f", &[("jit(f)/jit(main)/dot_general", "dot_general")]);
        let training = hlo_proto("jit_step", &[("jit(step)/transpose(jvp(f))/dot_general", "dot_general")]);
        let s = space(XSpaceBuilder::new().plane("/host:metadata", |p| {
            p.event_metadata_stat("jit_f(7)", "Hlo Proto", Value::Bytes(inference.clone()));
            p.event_metadata_stat("jit_step(9)", "Hlo Proto", Value::Bytes(training.clone()));
            p.event_metadata_stat("jit_step(9)", "program_id", 9u64);
            p.event_metadata_stat("broken", "Hlo Proto", Value::Bytes(vec![0x0a, 0x05]));
        }));
        // Builder metadata ids are 1, 2, 3: `jit_f` has no program_id stat, so its id is 1.
        let names = program_id_to_name_map(&s);
        assert_eq!(names.into_iter().collect::<Vec<_>>(), [(1, "jit_f".to_string()), (9, "jit_step".to_string())]);
        assert!(is_training(&s));
        let s = space(XSpaceBuilder::new().plane("/host:metadata", |p| {
            p.event_metadata_stat("jit_f(7)", "Hlo Proto", Value::Bytes(inference.clone()));
        }));
        assert!(!is_training(&s));
    }

    #[test]
    fn gradient_ops() {
        assert!(is_gradient_op("model/gradient_tape/dense/MatMul", "MatMul"));
        assert!(is_gradient_op("gradients_2/dense/MatMul", "MatMul"));
        assert!(!is_gradient_op("model/gradient/MatMul", "MatMul"));
        assert!(is_gradient_op("jit(f)/transpose(jvp(g))/mul", ""));
        assert!(!is_gradient_op("jit(f)/transpose[permutation=(1, 0)]/transpose", "transpose"));
        assert!(!is_gradient_op("jit(f)/transpose(jvp(g))/mul", "Mul"));
    }

    #[test]
    fn diagnostics_are_deduplicated() {
        let s = space(XSpaceBuilder::new().error("e1").error("e2").error("e1").warning("w"));
        let d = diagnostics(&s).unwrap();
        assert_eq!(d.errors, ["e1", "e2"]);
        assert_eq!(d.warnings, ["w"]);
    }

    /// Every environment field against XProf's OpStats for every reference profile.
    #[test]
    fn environment_matches_xprof() {
        use crate::op_stats::device_op_metrics::testutil::*;
        use oxprof_testkit::jsoncmp::{CmpOptions, compare};
        use serde_json::{Value, json};
        let mut cases = refkit_cases();
        if let Some(root) = external_root() {
            cases.extend(external_cases(&root));
        }
        let mut mismatched = Vec::new();
        for case in &cases {
            let space = load(case);
            let reference = reference(&case.op_stats);
            let (planes, _) = device_planes(&space);
            let mut env = run_environment(&space);
            env.is_training = is_training(&space);
            let ours: Vec<(&str, Value)> = vec![
                ("perf_env", planes.first().map_or(Value::Null, |p| json!(perf_env_from_plane(p)))),
                ("run_environment", json!(env)),
                ("core_id_to_details", json!(core_id_to_details(&space))),
                ("performance_counter_result", json!(performance_counter_result(&space))),
                ("program_id_to_name_map", json!(program_id_to_name_map(&space))),
                ("diagnostics", json!(diagnostics(&space))),
            ];
            for (field, actual) in ours {
                let expected = reference.get(field).cloned().unwrap_or(Value::Null);
                let report = compare(&expected, &actual, CmpOptions::default());
                eprintln!("{}: {field} {}", case.name, report.summary(3).replace('\n', "\n  "));
                if !report.is_match() {
                    mismatched.push(format!("{}.{field}", case.name));
                }
            }
        }
        assert!(mismatched.is_empty(), "differences: {mismatched:?}");
    }
}
