//! XSpace → OpStats for one host (`ConvertXSpaceToOpStats` in XProf), after step grouping,
//! and the multi-host combine.
//!
//! Each part (op metrics, steps, environment, kernels, tf.functions) lives in its own
//! module; this file only runs them in XProf's order and assembles the result.
//!
//! XProf 2.24.2 builds two step databases: the overview page and the input-pipeline
//! analyzer see steps with the first and last dropped when there are more than five
//! (`maybe_drop_incomplete_steps`), the pod viewer sees all of them. [`HostAnalysis`]
//! keeps both so each tool gets what XProf gives it.

use super::types::{HardwareType, OpMetricsDb, OpStats, StepDatabaseResult};
use super::{combine, device_op_metrics, environment, host_op_metrics, kernel_stats, steps_db, tf_functions};
use crate::model_tracker::ModelTracker;
use oxprof_grouping::{EventGroups, group_events_beside};
use oxprof_hlo::{decode_hlo_proto, hlo_proto_bytes};
use oxprof_model::XSpace;
use std::sync::atomic::{AtomicUsize, Ordering};

/// With more steps than this, the first and last are dropped as possibly incomplete.
const DROP_INCOMPLETE_STEP_THRESHOLD: usize = 5;

/// Which step database a tool reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSelection {
    /// Every step found (pod viewer, and the default of `ConvertXSpaceToOpStats`).
    All,
    /// First and last step dropped when there are more than five (overview page, input
    /// pipeline analyzer), except on TPU: XProf never drops TPU steps (its `Steps` line
    /// already holds complete steps only).
    DropIncomplete,
}

/// Everything computed for one host.
#[derive(Debug, Clone, Default)]
pub struct HostAnalysis {
    /// The host's OpStats with every step.
    pub op_stats: OpStats,
    /// oxprof's advice for this host (e.g. why no steps were found).
    pub advice: Vec<String>,
    /// Number of events that took part in grouping (for diagnostics).
    pub grouped: bool,
    /// The host's inference requests and batches (XProf computes them from the same
    /// grouping for the overview page and `inference_profile`).
    pub inference: crate::inference::HostInferenceStats,
    /// Counts this analysis among those alive ([`analyses_alive`]).
    pub alive: Alive,
}

static ALIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK_ALIVE: AtomicUsize = AtomicUsize::new(0);

/// A token counted among the [`HostAnalysis`]es alive in the process while it lives: how
/// many hosts' analyses an answer holds at once, for monitoring and tests (a many-host
/// answer should hold a batch of them, not one per host).
#[derive(Debug)]
pub struct Alive(());

impl Default for Alive {
    fn default() -> Self {
        let now = ALIVE.fetch_add(1, Ordering::Relaxed) + 1;
        PEAK_ALIVE.fetch_max(now, Ordering::Relaxed);
        Alive(())
    }
}

impl Clone for Alive {
    fn clone(&self) -> Self {
        Alive::default()
    }
}

impl Drop for Alive {
    fn drop(&mut self) {
        ALIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Host analyses alive now, and the most alive at once since the last call (which starts
/// the next count from now).
pub fn analyses_alive() -> (usize, usize) {
    let now = ALIVE.load(Ordering::Relaxed);
    (now, PEAK_ALIVE.swap(now, Ordering::Relaxed).max(now))
}

impl HostAnalysis {
    /// The OpStats a tool reading `steps` sees.
    pub fn op_stats_for(&self, steps: StepSelection) -> OpStats {
        let mut op_stats = self.op_stats.clone();
        if steps == StepSelection::DropIncomplete && op_stats.run_environment.hardware_type != HardwareType::Tpu {
            drop_incomplete_steps(&mut op_stats.step_db);
        }
        op_stats
    }
}

/// Drops the first and last step when there are more than five.
pub fn drop_incomplete_steps(step_db: &mut StepDatabaseResult) {
    if step_db.step_sequence.len() > DROP_INCOMPLETE_STEP_THRESHOLD {
        step_db.step_sequence.remove(0);
        step_db.step_sequence.pop();
    }
}

/// Converts one host's XSpace into OpStats, as XProf's OpStats tools see it.
pub fn xspace_to_op_stats(space: &XSpace) -> HostAnalysis {
    // Without eager events the host op database reads nothing from the grouping: it is
    // built beside it, on the core the grouping's one-thread stretches leave free.
    let host = host_op_metrics::find_host_plane(space).filter(|_| !oxprof_grouping::may_have_eager_events(space));
    let (groups, host_ops) = group_events_beside(space, || {
        host.map(|h| host_op_metrics::host_op_metrics_db(space, h, &EventGroups::default()))
    });
    host_analysis(space, &groups, host_ops)
}

/// [`xspace_to_op_stats`] given the host's step grouping (`group_events(space)`, e.g. kept
/// from the trace viewer's work on the same model).
pub fn xspace_to_op_stats_grouped(space: &XSpace, groups: &EventGroups) -> HostAnalysis {
    host_analysis(space, groups, None)
}

/// [`xspace_to_op_stats_grouped`], with the host op database when it is already built.
fn host_analysis(space: &XSpace, groups: &EventGroups, host_ops: Option<OpMetricsDb>) -> HostAnalysis {
    // The inference pass reads every grouped host event on one thread: beside OpStats.
    let (op_stats, inference) = rayon::join(
        || op_stats_with(space, groups, host_ops),
        || crate::inference::host_inference_stats(space, groups, 0),
    );
    let advice = crate::advice::missing_steps_advice(space, !op_stats.step_db.step_sequence.is_empty());
    HostAnalysis { op_stats, advice, grouped: groups.computed(), inference, alive: Alive::default() }
}

/// `ConvertXSpaceToOpStats` with every option on, given the host's step grouping.
///
/// The parts are independent of each other, so they run side by side: device op metrics
/// and kernel stats, host op metrics with the tf.function database, the step database,
/// and the HLO module names.
pub fn op_stats_from_groups(space: &XSpace, groups: &EventGroups) -> OpStats {
    op_stats_with(space, groups, None)
}

/// [`op_stats_from_groups`], with the host op database when it is already built.
fn op_stats_with(space: &XSpace, groups: &EventGroups, host_ops: Option<OpMetricsDb>) -> OpStats {
    let mut op_stats = OpStats {
        diagnostics: environment::diagnostics(space),
        run_environment: environment::run_environment(space),
        core_id_to_details: environment::core_id_to_details(space),
        ..Default::default()
    };
    let (device_planes, is_tpu) = environment::device_planes(space);
    if let Some(first) = device_planes.first() {
        op_stats.perf_env = Some(environment::perf_env_from_plane(first));
    }
    let device_part = || {
        // XLA ops on device planes are described and costed through XProf's HLO module map.
        let hlo_map = (!device_planes.is_empty()).then(|| oxprof_hlo::HloModuleMap::from_space(space));
        let hlo = hlo_map.as_ref().map(|m| m as &dyn device_op_metrics::HloModuleLookup);
        let device_op_metrics_db = device_op_metrics::device_op_metrics_db(space, Some(groups), hlo);
        let kernel_stats_db =
            if is_tpu { Default::default() } else { kernel_stats::kernel_stats_db(device_planes.iter().copied(), hlo) };
        (device_op_metrics_db, kernel_stats_db)
    };
    let host_part = || {
        host_op_metrics::find_host_plane(space).map(|host| {
            (
                host_ops.unwrap_or_else(|| host_op_metrics::host_op_metrics_db(space, host, groups)),
                environment::performance_counter_result(space),
                tf_functions::tf_function_db(space, host),
            )
        })
    };
    let steps_part = || steps_db::xspace_to_step_db(space, groups, &super::device_op_metrics::TpuStepOpMetrics, false);
    let modules_part = || {
        // One module decoded at a time: only its name and whether it trains are kept.
        let mut is_training = false;
        let mut program_names = std::collections::BTreeMap::new();
        for (program_id, bytes) in hlo_proto_bytes(space) {
            let Ok(module) = decode_hlo_proto(bytes) else { continue };
            if !is_training {
                let mut tracker = ModelTracker::default();
                tracker.process_module(&module);
                is_training = tracker.is_training();
            }
            program_names.insert(program_id, module.name);
        }
        (program_names, is_training)
    };
    let (((device_op_metrics_db, kernel_stats_db), host), (steps, (program_names, trains))) =
        rayon::join(|| rayon::join(device_part, host_part), || rayon::join(steps_part, modules_part));

    op_stats.device_op_metrics_db = device_op_metrics_db;
    op_stats.kernel_stats_db = kernel_stats_db;
    op_stats.run_environment.is_training |= trains;
    if let Some((host_op_metrics_db, performance_counter_result, tf_function_db)) = host {
        op_stats.host_op_metrics_db = host_op_metrics_db;
        op_stats.performance_counter_result = performance_counter_result;
        op_stats.tf_function_db = tf_function_db;
    }
    op_stats.step_db = steps.step_db;
    if is_tpu {
        crate::tools::input_pipeline::may_fix_tpu_step_analysis(
            &steps.host_step_events,
            &op_stats.device_op_metrics_db,
            &mut op_stats.step_db,
            &op_stats.core_id_to_details,
        );
    }
    op_stats.device_op_metrics_db.precision_stats = Some(steps.precision_stats);
    op_stats.hlo_metrics_db_complete_steps_only = steps.hlo_metrics_db_complete_steps_only;
    op_stats.program_id_to_name_map = program_names;
    op_stats
}

/// Combines the hosts of a run (`CombineAllOpStats` with step intersection); a single host
/// is returned unchanged.
pub fn combine_hosts<H: std::borrow::Borrow<HostAnalysis>>(hosts: &[H], steps: StepSelection) -> OpStats {
    let mut combiner = HostsCombiner::new(steps);
    for host in hosts {
        combiner.add(host.borrow());
    }
    combiner.finish()
}

/// [`combine_hosts`] one host at a time, in host order: a host's analysis may be dropped
/// once added, as the combiner keeps only its step database (see
/// [`OpStatsCombiner`](super::combine::OpStatsCombiner)).
#[derive(Debug)]
pub struct HostsCombiner {
    steps: StepSelection,
    combiner: combine::OpStatsCombiner,
}

impl HostsCombiner {
    /// No host yet; each host's steps as a tool reading `steps` sees them.
    pub fn new(steps: StepSelection) -> Self {
        HostsCombiner { steps, combiner: combine::OpStatsCombiner::new() }
    }

    /// Adds the next host.
    pub fn add(&mut self, host: &HostAnalysis) {
        let mut step_db = host.op_stats.step_db.clone();
        if self.steps == StepSelection::DropIncomplete
            && host.op_stats.run_environment.hardware_type != HardwareType::Tpu
        {
            drop_incomplete_steps(&mut step_db);
        }
        self.combiner.add(&host.op_stats, step_db);
    }

    /// The combined OpStats.
    pub fn finish(self) -> OpStats {
        self.combiner.finish()
    }
}

/// oxprof's combined OpStats of the synthetic TPU training runs (`testdata/tpu-synthetic/`)
/// against XProf 2.24.2's own (`xprof_out/op_stats.json.gz`): the TPU step database (per
/// core, per step: time per HLO category with IDLE, after `MayFixTpuStepAnalysis`), the
/// complete-steps HLO database, duty cycle and the environment.
#[cfg(test)]
mod tpu_reference_tests {
    use super::*;
    use crate::op_stats::load_op_stats;
    use oxprof_testkit::files::{load_xspace, repo_root};
    use oxprof_testkit::jsoncmp::{CmpOptions, compare};

    fn check(run: &str, hosts: &[&str]) {
        let dir = repo_root().join("testdata/tpu-synthetic").join(run);
        let analyses: Vec<HostAnalysis> = hosts
            .iter()
            .map(|h| {
                let path = dir.join(format!("plugins/profile/2026_11_26_00_00_00/{h}.xplane.pb.gz"));
                xspace_to_op_stats(&load_xspace(&path).unwrap())
            })
            .collect();
        let ours = combine_hosts(&analyses, StepSelection::All);
        let expected = load_op_stats(&dir.join("xprof_out/op_stats.json.gz"));
        fn as_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
            serde_json::to_value(v).unwrap()
        }
        for (what, e, a) in [
            ("step_db", as_json(&expected.step_db), as_json(&ours.step_db)),
            (
                "hlo_metrics_db_complete_steps_only",
                as_json(&expected.hlo_metrics_db_complete_steps_only),
                as_json(&ours.hlo_metrics_db_complete_steps_only),
            ),
            ("run_environment", as_json(&expected.run_environment), as_json(&ours.run_environment)),
            ("core_id_to_details", as_json(&expected.core_id_to_details), as_json(&ours.core_id_to_details)),
            (
                "device idle/busy",
                as_json(&(expected.device_op_metrics_db.idle_time_ps, expected.device_op_metrics_db.busy_time_ps)),
                as_json(&(ours.device_op_metrics_db.idle_time_ps, ours.device_op_metrics_db.busy_time_ps)),
            ),
        ] {
            // XProf's per-step databases come from hash maps: their op order is arbitrary.
            let report = compare(&e, &a, CmpOptions { unordered: true, ..Default::default() });
            assert!(report.is_match(), "{run} {what}: {}", report.summary(20));
        }
        assert_eq!(ours.step_db.step_sequence.len(), 6, "{run}: six steps");
    }

    /// Fed one host at a time, the combine gives what combining every host at once gives,
    /// for both step selections and whichever host comes first.
    #[test]
    fn one_host_at_a_time_combines_like_all_at_once() {
        let dir = repo_root().join("testdata/tpu-synthetic/training/plugins/profile/2026_11_26_00_00_00");
        let host = |h: &str| xspace_to_op_stats(&load_xspace(&dir.join(format!("{h}.xplane.pb.gz"))).unwrap());
        let (a, b) = (host("tpu-host-0"), host("tpu-host-1"));
        for steps in [StepSelection::All, StepSelection::DropIncomplete] {
            for hosts in [vec![&a, &b], vec![&b, &a], vec![&a, &b, &a], vec![&b]] {
                let all: Vec<OpStats> = hosts.iter().map(|h| h.op_stats_for(steps)).collect();
                let at_once = if all.len() == 1 { all[0].clone() } else { combine::combine_hosts_op_stats(&all) };
                let mut combiner = HostsCombiner::new(steps);
                hosts.iter().for_each(|h| combiner.add(h));
                assert_eq!(combiner.finish(), at_once, "{steps:?}, {} hosts", hosts.len());
            }
        }
    }

    #[test]
    fn two_host_tpu_training_matches_xprof() {
        check("training", &["tpu-host-0", "tpu-host-1"]);
    }

    #[test]
    fn host_input_tpu_training_matches_xprof() {
        check("training_host_input", &["tpu-host-0"]);
    }
}

#[cfg(test)]
mod early_host_ops_tests {
    use super::*;
    use oxprof_testkit::files::{load_xspace, repo_root};

    /// The host op database built beside the grouping (no eager events possible) is the one
    /// built after it; profiles with `EagerExecute` events keep waiting for the grouping.
    #[test]
    fn host_ops_built_beside_grouping_equal_those_built_after() {
        let fixtures = [
            ("jax_train/plugins/profile/2026_11_22_03_01_45", false),
            ("tf_custom_loop/plugins/profile/2026_11_22_03_01_43", true),
            ("tf_keras_fit/train/plugins/profile/2026_11_22_03_01_39", true),
            ("tf_memory/plugins/profile/2026_11_22_03_01_48", true),
        ];
        for (dir, eager) in fixtures {
            let space = load_xspace(&repo_root().join("testdata/profiles").join(dir).join("vm.xplane.pb.gz")).unwrap();
            assert_eq!(oxprof_grouping::may_have_eager_events(&space), eager, "{dir}");
            let side_by_side = xspace_to_op_stats(&space);
            let after = xspace_to_op_stats_grouped(&space, &oxprof_grouping::group_events(&space));
            assert_eq!(format!("{side_by_side:?}"), format!("{after:?}"), "{dir}");
            assert!(!side_by_side.op_stats.host_op_metrics_db.metrics_db.is_empty(), "{dir}: host ops");
        }
    }
}
