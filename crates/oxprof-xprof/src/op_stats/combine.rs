//! Combining the OpStats of several hosts into one (port of
//! `xprof/convert/op_stats_combiner.{h,cc}`): steps are restricted to the steps all
//! worker hosts share ([`StepIntersection`]) and renumbered from 0, core ids become global
//! (`host * 1000 + core`), op databases and environments are merged.
//!
//! Op databases are merged with [`OpMetricsDbCombiner`], tf.functions with
//! [`combine_tf_function_db`].

use super::hardware::{has_device, parse_hardware_type};
use super::op_metrics_db::OpMetricsDbCombiner;
use super::step_intersection::StepIntersection;
use super::tf_functions::combine_tf_function_db;
use super::types::{
    HardwareType, KernelReport, KernelStatsDb, OpMetricsDb, OpStats, OpStatsDiagnostics, PerCoreStepInfo, PerfEnv,
    PerformanceCounterResult, RunEnvironment, StepDatabaseResult,
};
use std::collections::BTreeMap;

/// `kMaxNumOfKernels`: kernel reports kept after combining.
const MAX_NUM_OF_KERNELS: usize = 1000;
/// `kMaxDevicesPerHost` of `GlobalCoreId`.
const MAX_DEVICES_PER_HOST: u32 = 1000;

// ---------------------------------------------------------------------------------------
// Hosts.
// ---------------------------------------------------------------------------------------

/// One host's OpStats with what the combiner needs to know about it.
#[derive(Debug, Clone, Copy)]
pub struct OpStatsInfo<'a> {
    /// The host's OpStats.
    pub op_stats: &'a OpStats,
    /// Its hardware (`ParseHardwareType` of its device type).
    pub hardware_type: HardwareType,
    /// Its index among the hosts (makes core ids global).
    pub src_host_id: i32,
}

/// A host is a coordinator when it has no accelerator but others do; its steps are ignored.
pub fn is_coordinator(no_accelerator_in_system: bool, hardware_type: HardwareType) -> bool {
    !has_device(hardware_type) && !no_accelerator_in_system
}

/// No host has an accelerator.
pub fn no_accelerator_in_system(infos: &[OpStatsInfo<'_>]) -> bool {
    !infos.iter().any(|i| has_device(i.hardware_type))
}

/// `GlobalCoreId`: `host_id * 1000 + device_ordinal` (32-bit, wrapping).
pub fn global_core_id(host_id: i32, device_ordinal: u32) -> u32 {
    (host_id as u32).wrapping_mul(MAX_DEVICES_PER_HOST).wrapping_add(device_ordinal)
}

/// `CombineCoreIdMap`: adds `src` (local core ids) to `dst` under global core ids; cores
/// already present keep their value.
pub fn combine_core_id_map<V: Clone>(src_host_id: i32, src: &BTreeMap<u32, V>, dst: &mut BTreeMap<u32, V>) {
    for (core, value) in src {
        dst.entry(global_core_id(src_host_id, *core)).or_insert_with(|| value.clone());
    }
}

/// `ComputeStepIntersectionToMergeOpStats`: intersects the steps of the worker hosts.
pub fn compute_step_intersection_to_merge_op_stats(
    infos: &[OpStatsInfo<'_>],
    max_step_per_host: u32,
) -> StepIntersection {
    let no_accelerator = no_accelerator_in_system(infos);
    let mut per_host: BTreeMap<u32, &StepDatabaseResult> = BTreeMap::new();
    for info in infos {
        if !is_coordinator(no_accelerator, info.hardware_type) {
            per_host.insert(info.src_host_id as u32, &info.op_stats.step_db);
        }
    }
    StepIntersection::new(max_step_per_host, &per_host)
}

// ---------------------------------------------------------------------------------------
// Parts of OpStats.
// ---------------------------------------------------------------------------------------

/// `CombineRunEnvironment` (power metrics, system topology and host-independent job info
/// are not in oxprof's `RunEnvironment`).
pub fn combine_run_environment(src: &RunEnvironment, dst: &mut RunEnvironment) {
    for (name, value) in &src.hostnames {
        dst.hostnames.entry(name.clone()).or_insert(*value);
    }
    dst.host_count = dst.hostnames.len() as i32;
    if src.device_type != "CPU" && src.device_type != "Device" {
        dst.device_type.clone_from(&src.device_type);
        dst.device_core_count = src.device_core_count.wrapping_add(dst.device_core_count);
        dst.replica_count = src.replica_count.max(dst.replica_count);
        dst.num_cores_per_replica = src.num_cores_per_replica.max(dst.num_cores_per_replica);
    } else if dst.device_type.is_empty() {
        dst.device_type.clone_from(&src.device_type);
    }
    if src.hardware_type != dst.hardware_type {
        dst.hardware_type = src.hardware_type.max(dst.hardware_type);
    }
    dst.task_count = src.task_count.wrapping_add(dst.task_count);
    dst.host_dependent_job_info.extend(src.host_dependent_job_info.iter().cloned());
    dst.host_trace_level = src.host_trace_level;
    dst.is_training = src.is_training;
}

/// `CombinePerfEnv`: peaks of the last host that has them; bandwidths of the first.
pub fn combine_perf_env(src: &PerfEnv, dst: &mut PerfEnv) {
    if src.peak_tera_flops_per_second > 0.0 {
        dst.peak_tera_flops_per_second = src.peak_tera_flops_per_second;
    }
    if !src.peak_bws_giga_bytes_per_second.is_empty() && dst.peak_bws_giga_bytes_per_second.is_empty() {
        dst.peak_bws_giga_bytes_per_second.clone_from(&src.peak_bws_giga_bytes_per_second);
    }
    if src.ridge_point > 0.0 {
        dst.ridge_point = src.ridge_point;
    }
}

/// `KernelReportLessThanComparator`: by name, grid and block dims, registers, shared
/// memory, tensor-core use and op name.
fn kernel_report_key(r: &KernelReport) -> impl Ord + '_ {
    let dim = |v: &[u32], i: usize| v.get(i).copied().unwrap_or(0);
    (
        (r.name.as_str(), dim(&r.grid_dim, 0), dim(&r.grid_dim, 1), dim(&r.grid_dim, 2)),
        (dim(&r.block_dim, 0), dim(&r.block_dim, 1), dim(&r.block_dim, 2)),
        (r.registers_per_thread, r.static_shmem_bytes, r.dynamic_shmem_bytes),
        (r.is_kernel_using_tensor_core, r.is_op_tensor_core_eligible, r.op_name.as_str()),
    )
}

/// `SortAndKeepTopKDurationKernelReportsInDb`: longest total duration first, at most 1000.
fn sort_and_keep_top_kernel_reports(db: &mut KernelStatsDb) {
    db.reports.sort_by(|a, b| {
        b.total_duration_ns.cmp(&a.total_duration_ns).then_with(|| kernel_report_key(a).cmp(&kernel_report_key(b)))
    });
    db.reports.truncate(MAX_NUM_OF_KERNELS);
}

/// `CombinePerCoreStepInfo`: one host's step into the combined step `dst` (its per-core
/// maps moved, not copied: a many-host combine's all-reduce lists are most of its memory).
fn combine_per_core_step_info(
    src_host_id: i32,
    src: PerCoreStepInfo,
    use_incomplete_step: bool,
    dst: &mut PerCoreStepInfo,
    complete_steps_only: &mut OpMetricsDbCombiner,
    per_step: &mut OpMetricsDbCombiner,
) {
    move_core_id_map(src_host_id, src.step_info_per_core, &mut dst.step_info_per_core);
    let step_num = dst.step_num;
    for info in dst.step_info_per_core.values_mut() {
        info.step_num = step_num;
    }
    let empty = OpMetricsDb::default();
    let src_hlo = src.hlo_metrics_db.as_ref().unwrap_or(&empty);
    if !use_incomplete_step {
        complete_steps_only.combine(src_hlo, true);
    }
    per_step.combine(src_hlo, true);
    move_core_id_map(src_host_id, src.all_reduce_db_per_core, &mut dst.all_reduce_db_per_core);
    if let Some(summary) = src.all_reduce_summary {
        // A pod partial's all-reduces, summarised where it was computed.
        let dst_summary = dst.all_reduce_summary.get_or_insert_with(Default::default);
        dst_summary.merge(summary, |core| global_core_id(src_host_id, core));
    }
    move_core_id_map(src_host_id, src.core_id_to_replica_id_map, &mut dst.core_id_to_replica_id_map);
}

/// [`combine_core_id_map`], moving `src`'s values.
fn move_core_id_map<V>(src_host_id: i32, src: BTreeMap<u32, V>, dst: &mut BTreeMap<u32, V>) {
    for (core, value) in src {
        dst.entry(global_core_id(src_host_id, core)).or_insert(value);
    }
}

/// `CombineOpStats`, the step part: one host's steps (`src_steps`, its step sequence, taken
/// from as far as the intersection needs) into the combined steps (`per_step`: one
/// accumulator per combined step).
#[allow(clippy::too_many_arguments)]
fn combine_op_stats_steps(
    coordinator: bool,
    src_host_id: i32,
    use_incomplete_step: bool,
    src_steps: impl Iterator<Item = PerCoreStepInfo>,
    intersection: &StepIntersection,
    dst: &mut OpStats,
    complete_steps_only: &mut OpMetricsDbCombiner,
    per_step: &mut [OpMetricsDbCombiner],
) {
    if coordinator {
        return;
    }
    if use_incomplete_step {
        dst.step_db.use_incomplete_step = true;
    }
    let first = intersection.first_step_index(src_host_id as u32) as usize;
    let mut src_steps = src_steps.skip(first);
    for (dst_step, per_step) in dst.step_db.step_sequence.iter_mut().zip(per_step.iter_mut()) {
        // XProf indexes without a bounds check; a missing step is skipped here.
        let Some(src_step) = src_steps.next() else { continue };
        combine_per_core_step_info(src_host_id, src_step, use_incomplete_step, dst_step, complete_steps_only, per_step);
    }
}

/// `CombineOpStats`, all but the steps (which touch nothing this does, so the two parts
/// may run at different times).
fn combine_op_stats_but_steps(
    src_host_id: i32,
    src: &OpStats,
    dst: &mut OpStats,
    host_ops: &mut OpMetricsDbCombiner,
    device_ops: &mut OpMetricsDbCombiner,
) {
    host_ops.combine(&src.host_op_metrics_db, false);
    device_ops.combine(&src.device_op_metrics_db, true);
    combine_run_environment(&src.run_environment, &mut dst.run_environment);
    combine_perf_env(&src.perf_env.clone().unwrap_or_default(), dst.perf_env.get_or_insert_with(PerfEnv::default));
    let diagnostics = dst.diagnostics.get_or_insert_with(OpStatsDiagnostics::default);
    if let Some(d) = &src.diagnostics {
        diagnostics.info.extend(d.info.iter().cloned());
        diagnostics.warnings.extend(d.warnings.iter().cloned());
        diagnostics.errors.extend(d.errors.iter().cloned());
    }
    dst.kernel_stats_db.reports.extend(src.kernel_stats_db.reports.iter().cloned());
    for (id, name) in &src.program_id_to_name_map {
        dst.program_id_to_name_map.entry(*id).or_insert_with(|| name.clone());
    }
    combine_tf_function_db(&src.tf_function_db, &mut dst.tf_function_db);
    combine_core_id_map(src_host_id, &src.core_id_to_details, &mut dst.core_id_to_details);
    let src_counters = src.performance_counter_result.clone().unwrap_or_default();
    let counters = dst.performance_counter_result.get_or_insert_with(PerformanceCounterResult::default);
    counters.matrix_unit_utilization_percent += src_counters.matrix_unit_utilization_percent;
    counters.hbm_utilization_percent += src_counters.hbm_utilization_percent;
}

/// `CombineAllOpStats`' start: the combined steps of `intersection`, empty.
fn combined_steps(intersection: &StepIntersection, dst: &mut OpStats) -> Vec<OpMetricsDbCombiner> {
    dst.step_db.step_sequence = intersection
        .dst_step_numbers()
        .into_iter()
        .map(|step_num| PerCoreStepInfo { step_num, ..Default::default() })
        .collect();
    dst.step_db.num_steps_dropped = intersection.steps_dropped();
    dst.step_db.empty_intersect = intersection.empty_intersect();
    dst.step_db.step_sequence.iter().map(|_| OpMetricsDbCombiner::new()).collect()
}

/// `CombineAllOpStats`' end: the accumulators into `dst`, kernels sorted and cut,
/// counters averaged over `hosts`.
fn finish_combined(
    dst: &mut OpStats,
    hosts: usize,
    host_ops: OpMetricsDbCombiner,
    device_ops: OpMetricsDbCombiner,
    complete_steps_only: OpMetricsDbCombiner,
    per_step: Vec<OpMetricsDbCombiner>,
) {
    dst.host_op_metrics_db = host_ops.into_db();
    dst.device_op_metrics_db = device_ops.into_db();
    dst.hlo_metrics_db_complete_steps_only = Some(complete_steps_only.into_db());
    for (step, per_step) in dst.step_db.step_sequence.iter_mut().zip(per_step) {
        step.hlo_metrics_db = Some(per_step.into_db());
    }
    sort_and_keep_top_kernel_reports(&mut dst.kernel_stats_db);
    let hosts = hosts as f64;
    let counters = dst.performance_counter_result.get_or_insert_with(PerformanceCounterResult::default);
    counters.matrix_unit_utilization_percent /= hosts;
    counters.hbm_utilization_percent /= hosts;
}

/// `CombineAllOpStats`: combines the hosts' OpStats over the steps of `intersection`. A
/// single host is returned unchanged.
pub fn combine_all_op_stats(infos: &[OpStatsInfo<'_>], intersection: &StepIntersection) -> OpStats {
    if let [only] = infos {
        return only.op_stats.clone();
    }
    let mut combined = OpStats::default();
    let mut per_step = combined_steps(intersection, &mut combined);
    let (mut host_ops, mut device_ops, mut complete_steps_only) =
        (OpMetricsDbCombiner::new(), OpMetricsDbCombiner::new(), OpMetricsDbCombiner::new());
    let no_accelerator = no_accelerator_in_system(infos);
    for info in infos {
        combine_op_stats_steps(
            is_coordinator(no_accelerator, info.hardware_type),
            info.src_host_id,
            info.op_stats.step_db.use_incomplete_step,
            info.op_stats.step_db.step_sequence.iter().cloned(),
            intersection,
            &mut combined,
            &mut complete_steps_only,
            &mut per_step,
        );
        combine_op_stats_but_steps(info.src_host_id, info.op_stats, &mut combined, &mut host_ops, &mut device_ops);
    }
    finish_combined(&mut combined, infos.len(), host_ops, device_ops, complete_steps_only, per_step);
    combined
}

/// The combined OpStats of all hosts of a session, as `ConvertMultiXSpacesToCombinedOpStats`
/// combines them: host `i` is `all[i]`, hardware from its device type, no step limit.
pub fn combine_hosts_op_stats(all: &[OpStats]) -> OpStats {
    let infos: Vec<OpStatsInfo<'_>> = all
        .iter()
        .enumerate()
        .map(|(i, op_stats)| OpStatsInfo {
            op_stats,
            hardware_type: parse_hardware_type(&op_stats.run_environment.device_type),
            src_host_id: i as i32,
        })
        .collect();
    let intersection = compute_step_intersection_to_merge_op_stats(&infos, u32::MAX);
    combine_all_op_stats(&infos, &intersection)
}

/// [`combine_hosts_op_stats`] fed one host at a time, in host order, so that a many-host
/// combine holds each host's step database rather than its whole OpStats: all but the
/// steps is folded in as a host comes ([`OpStatsCombiner::add`]); the steps, which need
/// the step intersection of every host, when the last has come
/// ([`OpStatsCombiner::finish`]). The result is `combine_hosts_op_stats`' over the same
/// hosts, field for field.
#[derive(Debug, Default)]
pub struct OpStatsCombiner {
    /// The first host whole, until a second comes (a single host is returned unchanged).
    first: Option<OpStats>,
    /// Hosts added.
    hosts: usize,
    combined: OpStats,
    host_ops: OpMetricsDbCombiner,
    device_ops: OpMetricsDbCombiner,
    /// Each host's hardware and step database, in host order.
    steps: Vec<(HardwareType, StepDatabaseResult)>,
}

impl OpStatsCombiner {
    /// No host yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next host: its OpStats but for the steps, which are `step_db` (the host's
    /// own, or a selection of it).
    pub fn add(&mut self, op_stats: &OpStats, step_db: StepDatabaseResult) {
        self.hosts += 1;
        if self.hosts == 1 {
            self.first = Some(OpStats { step_db, ..op_stats.clone() });
            return;
        }
        if let Some(mut first) = self.first.take() {
            let first_steps = std::mem::take(&mut first.step_db);
            self.fold(&first, first_steps);
        }
        self.fold(op_stats, step_db);
    }

    fn fold(&mut self, op_stats: &OpStats, step_db: StepDatabaseResult) {
        let src_host_id = self.steps.len() as i32;
        combine_op_stats_but_steps(src_host_id, op_stats, &mut self.combined, &mut self.host_ops, &mut self.device_ops);
        self.steps.push((parse_hardware_type(&op_stats.run_environment.device_type), step_db));
    }

    /// Hosts added so far.
    pub fn hosts(&self) -> usize {
        self.hosts
    }

    /// The combined OpStats (a single host's unchanged; none: the default).
    pub fn finish(self) -> OpStats {
        let OpStatsCombiner { first, hosts, mut combined, host_ops, device_ops, steps } = self;
        if let Some(first) = first {
            return first;
        }
        let no_accelerator = !steps.iter().any(|(hardware_type, _)| has_device(*hardware_type));
        let mut per_host: BTreeMap<u32, &StepDatabaseResult> = BTreeMap::new();
        for (host, (hardware_type, step_db)) in steps.iter().enumerate() {
            if !is_coordinator(no_accelerator, *hardware_type) {
                per_host.insert(host as u32, step_db);
            }
        }
        let intersection = StepIntersection::new(u32::MAX, &per_host);
        let mut per_step = combined_steps(&intersection, &mut combined);
        let mut complete_steps_only = OpMetricsDbCombiner::new();
        // Each host's steps are moved into the combined ones, so the memory they hold
        // changes hands instead of doubling.
        for (host, (hardware_type, step_db)) in steps.into_iter().enumerate() {
            combine_op_stats_steps(
                is_coordinator(no_accelerator, hardware_type),
                host as i32,
                step_db.use_incomplete_step,
                step_db.step_sequence.into_iter(),
                &intersection,
                &mut combined,
                &mut complete_steps_only,
                &mut per_step,
            );
        }
        finish_combined(&mut combined, hosts, host_ops, device_ops, complete_steps_only, per_step);
        combined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op_stats::tf_functions::combine_compilers;
    use crate::op_stats::types::{OpMetrics, StepInfoResult};

    fn host(name: &str, device_type: &str, steps: &[(u64, u64)]) -> OpStats {
        let step_sequence = steps
            .iter()
            .enumerate()
            .map(|(i, &(begin_ps, duration_ps))| PerCoreStepInfo {
                step_num: 10 + i as u32,
                step_info_per_core: [(
                    1,
                    StepInfoResult { step_num: 10 + i as u32, begin_ps, duration_ps, ..Default::default() },
                )]
                .into(),
                ..Default::default()
            })
            .collect();
        let op = |time_ps| OpMetrics {
            name: "matmul".into(),
            occurrences: 1,
            time_ps,
            self_time_ps: time_ps,
            num_cores: 1,
            min_time_ps: time_ps,
            ..Default::default()
        };
        OpStats {
            step_db: StepDatabaseResult { step_sequence, ..Default::default() },
            run_environment: RunEnvironment {
                host_count: 1,
                task_count: 1,
                hostnames: [(name.to_string(), true)].into(),
                device_type: device_type.to_string(),
                device_core_count: 8,
                hardware_type: parse_hardware_type(device_type),
                ..Default::default()
            },
            device_op_metrics_db: OpMetricsDb { metrics_db: vec![op(5)], total_time_ps: 100, ..Default::default() },
            core_id_to_details: [(1, Default::default())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn combines_two_gpu_hosts() {
        let a = host("a", "GPU", &[(0, 10), (10, 10)]);
        let b = host("b", "GPU", &[(11, 10)]);
        let combined = combine_hosts_op_stats(&[a, b]);
        assert_eq!(combined.step_db.step_sequence.len(), 1);
        let step = &combined.step_db.step_sequence[0];
        assert_eq!(step.step_num, 0);
        assert_eq!(step.step_info_per_core.keys().copied().collect::<Vec<_>>(), [1, 1001]);
        assert_eq!(step.step_info_per_core[&1].begin_ps, 10, "host a is aligned on its second step");
        assert!(step.step_info_per_core.values().all(|s| s.step_num == 0));
        let env = &combined.run_environment;
        assert_eq!((env.host_count, env.task_count, env.device_core_count), (2, 2, 16));
        let db = &combined.device_op_metrics_db;
        assert_eq!(
            (db.metrics_db.len(), db.metrics_db[0].time_ps, db.metrics_db[0].num_cores, db.total_time_ps),
            (1, 10, 2, 200)
        );
        assert_eq!(combined.core_id_to_details.keys().copied().collect::<Vec<_>>(), [1, 1001]);
    }

    #[test]
    fn coordinator_steps_are_ignored_and_single_host_is_copied() {
        let a = host("a", "GPU", &[(0, 10)]);
        let coordinator = host("c", "CPU", &[(500, 10), (600, 10)]);
        let combined = combine_hosts_op_stats(&[a.clone(), coordinator]);
        assert_eq!(combined.step_db.step_sequence.len(), 1);
        assert_eq!(combined.step_db.step_sequence[0].step_info_per_core.len(), 1);
        assert_eq!(combined.run_environment.device_type, "GPU");
        assert_eq!(combine_hosts_op_stats(std::slice::from_ref(&a)), a);
    }

    #[test]
    fn small_parts() {
        assert_eq!(global_core_id(2, 5), 2005);
        assert_eq!(combine_compilers("", "XLA_COMPILER"), "XLA_COMPILER");
        assert_eq!(combine_compilers("XLA_COMPILER", "OTHER_COMPILER"), "MIXED_COMPILER");
        let mut db = KernelStatsDb {
            reports: vec![
                KernelReport { name: "b".into(), total_duration_ns: 5, ..Default::default() },
                KernelReport { name: "a".into(), total_duration_ns: 5, ..Default::default() },
                KernelReport { name: "c".into(), total_duration_ns: 9, ..Default::default() },
            ],
        };
        sort_and_keep_top_kernel_reports(&mut db);
        assert_eq!(db.reports.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["c", "a", "b"]);
    }
}

/// Tests against XProf's combined OpStats of the two-host V100 session.
#[cfg(test)]
mod reference_tests {
    use super::*;
    use crate::op_stats::environment;
    use crate::op_stats::step_events::NoTpuOpMetrics;
    use crate::op_stats::steps_db::reference_tests::{compare_json, external_root, repo_root, xprof_op_stats};
    use crate::op_stats::steps_db::xspace_to_step_db;

    /// The parts of one host's OpStats the step and environment combine depends on.
    fn host_op_stats(space: &oxprof_model::XSpace) -> OpStats {
        let groups = oxprof_grouping::group_events(space);
        let steps = xspace_to_step_db(space, &groups, &NoTpuOpMetrics, false);
        OpStats {
            step_db: steps.step_db,
            run_environment: environment::run_environment(space),
            core_id_to_details: environment::core_id_to_details(space),
            ..Default::default()
        }
    }

    #[test]
    fn two_v100_hosts_combine_like_xprof() {
        let Some(root) = external_root() else { return };
        let folder = root.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker");
        // XProf's host order: the session's files sorted by name.
        let hosts: Vec<OpStats> = ["34.83.195.179_6003.xplane.pb", "34.83.195.180_6003.xplane.pb"]
            .iter()
            .map(|f| host_op_stats(&oxprof_testkit::files::load_xspace(&folder.join(f)).unwrap()))
            .collect();
        let combined = combine_hosts_op_stats(&hosts);
        let expected =
            xprof_op_stats(&repo_root().join("testdata/external-opstats/GPU-multi-worker_two_hosts.op_stats.json.gz"));
        for (what, report) in [
            ("step_db", compare_json(&expected.step_db, &combined.step_db)),
            ("run_environment", compare_json(&expected.run_environment, &combined.run_environment)),
            ("core_id_to_details", compare_json(&expected.core_id_to_details, &combined.core_id_to_details)),
            (
                "hlo_metrics_db_complete_steps_only",
                compare_json(
                    &expected.hlo_metrics_db_complete_steps_only,
                    &combined.hlo_metrics_db_complete_steps_only,
                ),
            ),
        ] {
            assert!(report.is_match(), "{what}: {}", report.summary(20));
        }
    }

    /// Both files of the session are the same capture, so XProf's own single-host OpStats
    /// of one file is each host's input: the whole combine is checked against XProf,
    /// independently of the other converters.
    #[test]
    fn combining_xprof_host_op_stats_gives_xprof_combined_op_stats() {
        let opstats = repo_root().join("testdata/external-opstats");
        let single = xprof_op_stats(&opstats.join("GPU-multi-worker__34.83.195.179_6003.op_stats.json.gz"));
        let expected = xprof_op_stats(&opstats.join("GPU-multi-worker_two_hosts.op_stats.json.gz"));
        let combined = combine_hosts_op_stats(&[single.clone(), single]);
        let report = compare_json(&expected, &combined);
        assert!(report.is_match(), "{}", report.summary(40));
        assert!(report.total > 10_000, "only {} leaves compared", report.total);
    }
}
