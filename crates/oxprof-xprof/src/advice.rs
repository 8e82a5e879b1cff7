//! oxprof's own advice about a profile, beyond XProf's outputs: e.g. why no steps were
//! found and what to change in the training script. Shown by the CLI (`--format md`) and the
//! UI next to the XProf-compatible data, never inside it.

use oxprof_model::{XSpace, schema::HOST_THREADS_PLANE_NAME, schema::StatType};
use std::collections::BTreeMap;

/// Explains a profile in which no steps were found (`steps_found` false). Empty when steps
/// exist.
pub fn missing_steps_advice(space: &XSpace, steps_found: bool) -> Vec<String> {
    if steps_found {
        return Vec::new();
    }
    // XLA programs without a gradient op: an inference run, where training steps are not
    // what to look for.
    if crate::op_stats::environment::has_hlo(space) && !crate::op_stats::environment::is_training(space) {
        return vec![
            "No steps found: this profile looks like inference (its XLA programs have no gradient ops), so \
             there are no training steps to analyse; per-step tools describe training loops. To analyse \
             serving, annotate each request with a TraceMe carrying `_r=1` and each batch with `_r=2` \
             (e.g. `tf.profiler.experimental.Trace(\"request\", _r=1)`)."
                .to_string(),
        ];
    }
    let Some(host) = space.plane(HOST_THREADS_PLANE_NAME) else {
        return vec![
            "No steps found: the profile has no host trace (/host:CPU), so steps cannot be detected.".to_string(),
        ];
    };
    // A PyTorch trace's `ProfilerStep#N` are step roots to oxprof's importer, but XProf's
    // step database takes host step markers from TensorFlow/JAX names only: its user is
    // better sent to the PyTorch views than told to change the training script.
    let profiler_steps = host.events().filter(|e| is_profiler_step(e.name())).count();
    if profiler_steps > 0 {
        return vec![format!(
            "No steps found by XProf's step analysis: this is a PyTorch profiler trace, and its \
             {profiler_steps} `ProfilerStep#N` steps are not step markers to XProf, which recognises \
             TensorFlow and JAX steps only. For per-step analysis of this trace use `pytorch_overview` \
             (torch-tb-profiler's step view) or the HTA tools (`hta_distributed`, `hta_gpu_idle`)."
        )];
    }
    // Events that carry a step number but are not step roots (no `_r`): Keras 3's
    // `Trace("Profiled batch", step_num=…)` is the common case.
    let mut unmarked: BTreeMap<&str, usize> = BTreeMap::new();
    // Framework-internal events (executor, function runs) carry step numbers too; only
    // user-level annotations are candidates.
    for event in host.events().filter(|e| e.metadata().host_event_type.is_none()) {
        let stats = event.stats();
        let has_step = stats.get(StatType::StepNum).is_some() || stats.get(StatType::IterNum).is_some();
        if has_step && stats.get(StatType::IsRoot).is_none() {
            *unmarked.entry(event.name()).or_default() += 1;
        }
    }
    if let Some((name, count)) = unmarked.iter().max_by_key(|&(_, &n)| n) {
        return vec![format!(
            "No steps found: {count} \"{name}\" events carry a step number but no `_r=1` root marker, so \
             XProf (and oxprof's XProf-compatible output) cannot tell steps apart. Keras 3's model.fit marks \
             batches this way. To get per-step analysis, wrap each training step in \
             `tf.profiler.experimental.Trace(\"train\", step_num=step, _r=1)` (TensorFlow) or \
             `jax.profiler.StepTraceAnnotation(\"train\", step_num=step)` (JAX)."
        )];
    }
    vec![
        "No steps found: the profile has no step markers. Wrap each training step in \
         `tf.profiler.experimental.Trace(\"train\", step_num=step, _r=1)` (TensorFlow) or \
         `jax.profiler.StepTraceAnnotation(\"train\", step_num=step)` (JAX) to get per-step analysis."
            .to_string(),
    ]
}

/// Whether `name` is PyTorch's `ProfilerStep#N` (N a number).
fn is_profiler_step(name: &str) -> bool {
    name.strip_prefix("ProfilerStep#").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_testkit::XSpaceBuilder;

    #[test]
    fn an_inference_run_is_not_told_to_mark_training_steps() {
        let Some(ext) = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                Some(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/testdata/external"))
            })
            .filter(|d| d.is_dir())
        else {
            eprintln!("SKIP: external test data not found");
            return;
        };
        let file = ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb");
        let space = oxprof_xspace::decode_xspace(&std::fs::read(file).unwrap()).unwrap();
        let advice = missing_steps_advice(&space, false);
        assert_eq!(advice.len(), 1);
        assert!(advice[0].contains("inference") && !advice[0].contains("Wrap each training step"), "{}", advice[0]);
    }

    #[test]
    fn sends_pytorch_traces_to_the_pytorch_views() {
        // python |- ProfilerStep#7 (_r=1) -|- ProfilerStep#8 (_r=1) -|- ProfilerStep#x -|
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "python", 0, |l| {
                    l.event("ProfilerStep#7", 0, 100).stat("step_num", 7i64).stat("_r", 1i64);
                    l.event("ProfilerStep#8", 100, 100).stat("step_num", 8i64).stat("_r", 1i64);
                    l.event("ProfilerStep#x", 200, 100);
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let advice = missing_steps_advice(&space, false);
        assert_eq!(advice.len(), 1);
        assert!(advice[0].contains("2 `ProfilerStep#N` steps"), "{}", advice[0]);
        assert!(advice[0].contains("pytorch_overview") && !advice[0].contains("Wrap each training step"));
        assert!(missing_steps_advice(&space, true).is_empty());
    }

    #[test]
    fn explains_keras_batches_without_root_marker() {
        // python |- Profiled batch (step_num=3) -|- Profiled batch (step_num=4) -|
        let bytes = XSpaceBuilder::new()
            .plane("/host:CPU", |p| {
                p.line(1, "python", 0, |l| {
                    l.event("Profiled batch", 0, 100).stat("step_num", 3i64);
                    l.event("Profiled batch", 100, 100).stat("step_num", 4i64);
                });
            })
            .to_bytes();
        let space = oxprof_xspace::decode_xspace(&bytes).unwrap();
        let advice = missing_steps_advice(&space, false);
        assert!(missing_steps_advice(&space, true).is_empty());
        assert_eq!(advice.len(), 1);
        assert!(advice[0].contains("2 \"Profiled batch\" events"), "{}", advice[0]);
        assert!(advice[0].contains("_r=1"));
    }
}
