//! The bundled demo: four small real profiles committed in the repository (a TensorFlow
//! custom training loop and a JAX training loop, recorded with XProf's refkit; a JAX GEMM
//! on an AMD MI300X GPU from AMD-AGI/TraceLens, MIT: `testdata/demo/mi300x_jax_gemm/`; and
//! a PyTorch DDP training trace on an NVIDIA A100 from facebookresearch/HolisticTraceAnalysis,
//! MIT: `testdata/demo/pytorch_a100_ddp/`; each third-party folder holds its license and
//! provenance), extracted at start into a private temporary log directory.

use std::io;

/// (path inside the log directory, gzipped XSpace or PyTorch trace).
const FILES: [(&str, &[u8]); 4] = [
    (
        "tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz",
        include_bytes!("../../../testdata/profiles/tf_custom_loop/plugins/profile/2026_11_22_03_01_43/vm.xplane.pb.gz"),
    ),
    (
        "jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz",
        include_bytes!("../../../testdata/profiles/jax_train/plugins/profile/2026_11_22_03_01_45/vm.xplane.pb.gz"),
    ),
    (
        "mi300x_jax_gemm/plugins/profile/jax08_gemm/tw003.xplane.pb.gz",
        include_bytes!("../../../testdata/demo/mi300x_jax_gemm/plugins/profile/jax08_gemm/tw003.xplane.pb.gz"),
    ),
    // A PyTorch run in torch-tb-profiler's layout: <run>/<worker>.pt.trace.json.gz.
    (
        "pytorch_a100_ddp/nccl_data.pt.trace.json.gz",
        include_bytes!("../../../testdata/demo/pytorch_a100_ddp/nccl_data.pt.trace.json.gz"),
    ),
];

/// Writes the demo log directory into a new private temporary directory (removed when
/// the returned value is dropped).
pub fn extract() -> io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("oxprof-demo-").tempdir()?;
    for (relative, bytes) in FILES {
        let path = dir.path().join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(dir)
}
