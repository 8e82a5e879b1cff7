//! `explain` on third-party accelerator profiles read in place from
//! `../shared/testdata/external/` (skipped when absent): the facts that come from the
//! device (XProf's device op metrics for the HLO detectors, kernel stats for Tensor Cores)
//! on real GPU and TPU captures.

use oxprof_api::data::one_shot_session;
use oxprof_explain::{Explanation, HloKind, explain};
use oxprof_testkit::golden::external_dir;
use std::path::Path;

fn explained(path: &Path) -> Explanation {
    let session = one_shot_session(path).unwrap();
    let run = session.run(None).unwrap();
    explain(&session, &run, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn gpu_and_tpu_captures_are_explained_from_their_device_data() {
    let Some(external) = external_dir() else {
        eprintln!("SKIP: ../shared/testdata/external is absent; GPU and TPU captures not explained");
        return;
    };
    // A JAX GEMM on an MI300X: the HLO families come from the GPU's op metrics (XLA:GPU
    // keeps the copy of a convert program's output at the top level), and its kernels used
    // the matrix cores wherever their ops could.
    let gemm = explained(&external.join("AMD-AGI-TraceLens/tests/traces/mi300/jax08_gemm/tw003.xplane.pb"));
    assert_eq!(gemm.facts.device.as_deref(), Some("GPU"));
    let layout = gemm.facts.hlo.iter().find(|f| f.kind == HloKind::Layout).expect("a layout family");
    let top = &layout.top[0];
    assert_eq!(
        (top.module.as_str(), top.name.as_str(), top.opcode.as_str()),
        ("jit_convert_element_type", "copy.1", "copy")
    );
    assert_eq!(top.calls, 12);
    assert!(top.ms_per_step > 0.0, "{top:?}");
    let tc = gemm.facts.tensor_cores.clone().expect("kernel stats give Tensor Core use");
    assert!(tc.eligible_ratio > 0.9 && (tc.used_ratio - tc.eligible_ratio).abs() < 1e-9, "{tc:?}");
    assert!(gemm.findings.iter().all(|f| f.id != "tensor_cores_unused"), "{:?}", gemm.findings);
    // TensorFlow on two GPU workers (XProf's demo): both hosts' steps.
    let workers = explained(&external.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker"));
    assert_eq!(workers.facts.device.as_deref(), Some("GPU"));
    assert_eq!(workers.facts.per_host.len(), 2, "{:?}", workers.facts.per_host);
    assert!(workers.facts.step_time_ms > 0.0);
    // A TPU inference capture without step markers: totals, and a note that says so.
    let tpu = explained(&external.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"));
    assert_eq!(tpu.facts.device.as_deref(), Some("TPU"));
    assert!(tpu.notes.iter().any(|n| n.contains("no steps found")), "{:?}", tpu.notes);
}
