//! The bundled demo: three small real profiles committed in the repository (a TensorFlow
//! custom training loop and a JAX training loop, recorded with XProf's refkit, and a JAX
//! GEMM on an AMD MI300X GPU from AMD-AGI/TraceLens, MIT: `testdata/demo/mi300x_jax_gemm/`
//! holds its license and provenance), extracted at start into a private temporary log
//! directory.

use std::io;

/// (path inside the log directory, gzipped XSpace).
const FILES: [(&str, &[u8]); 3] = [
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
