//! Shared by the golden tests: where the profiles and XProf's reference outputs are, and
//! the cases (profile, host selection, XProf's output folder) every tool family is checked
//! on. Third-party profiles are read in place from `../shared/testdata/external/` and
//! skipped when absent.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The host selector meaning every host.
pub const ALL_HOSTS: &str = "ALL_HOSTS";

/// The refkit profiles committed under `testdata/profiles/` (host `vm`).
pub const REFKIT_PROFILES: [&str; 5] = ["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"];

pub use crate::files::repo_root;

/// Third-party profiles (`OXPROF_EXTERNAL_TESTDATA` or `../shared/testdata/external`).
pub fn external_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_TESTDATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external"));
    dir.is_dir().then_some(dir)
}

/// XProf's outputs for them (`OXPROF_EXTERNAL_XPROF_OUT` or `../shared/testdata/external-xprof-out`).
pub fn external_outputs_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("OXPROF_EXTERNAL_XPROF_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("../shared/testdata/external-xprof-out"));
    dir.is_dir().then_some(dir)
}

/// One profile (file or run directory), a host selection, and XProf's outputs for it.
pub struct Case {
    /// `profile/host`.
    pub name: String,
    /// The profile file or run directory.
    pub input: PathBuf,
    /// The host selection.
    pub host: &'static str,
    /// XProf's outputs for it.
    pub expected: PathBuf,
    /// A committed refkit profile (XProf's outputs recorded by oxprof's own refkit run).
    pub refkit: bool,
}

/// Every case: the refkit profiles and the single-host third-party files for their host
/// and `ALL_HOSTS`, the two-host GPU run for each host and `ALL_HOSTS`.
pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for name in REFKIT_PROFILES {
        let dir = repo_root().join("testdata/profiles").join(name);
        for host in ["vm", ALL_HOSTS] {
            cases.push(Case {
                name: format!("{name}/{host}"),
                input: dir.clone(),
                host,
                expected: dir.join("xprof_out"),
                refkit: true,
            });
        }
    }
    let (Some(ext), Some(out)) = (external_dir(), external_outputs_dir()) else {
        eprintln!("SKIP: ../shared/testdata/external(-xprof-out) absent; third-party profiles not checked");
        return cases;
    };
    let amd = ext.join("AMD-AGI-TraceLens/tests");
    let singles: Vec<(&str, PathBuf, &'static str)> = vec![
        (
            "AMD-AGI-TraceLens/934987a2fc2f",
            amd.join("test_data_jax_te_fused_attn_categorization/934987a2fc2f.xplane.pb"),
            "934987a2fc2f",
        ),
        ("AMD-AGI-TraceLens/jax08_attention__tw003", amd.join("traces/mi300/jax08_attention/tw003.xplane.pb"), "tw003"),
        ("AMD-AGI-TraceLens/jax08_conv__tw003", amd.join("traces/mi300/jax08_conv/tw003.xplane.pb"), "tw003"),
        (
            "AMD-AGI-TraceLens/jax08_elementwise__tw003",
            amd.join("traces/mi300/jax08_elementwise/tw003.xplane.pb"),
            "tw003",
        ),
        ("AMD-AGI-TraceLens/jax08_gemm__tw003", amd.join("traces/mi300/jax08_gemm/tw003.xplane.pb"), "tw003"),
        (
            "AMD-AGI-TraceLens/chi-mi300x-013.ord.vultr.cpe.ice.amd.com",
            amd.join("traces/mi300/jax_conv_minimal"),
            "chi-mi300x-013.ord.vultr.cpe.ice.amd.com",
        ),
        (
            "openxla-xprof/34.83.195.179_6003",
            ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb"),
            "34.83.195.179_6003",
        ),
        (
            "openxla-xprof/tpu_inference_2",
            ext.join("openxla-xprof/xprof/convert/test_xplanes/tpu_inference_2.xplane.pb"),
            "tpu_inference_2",
        ),
    ];
    for (name, input, host) in singles {
        for h in [host, ALL_HOSTS] {
            cases.push(Case {
                name: format!("{name}/{h}"),
                input: input.clone(),
                host: h,
                expected: out.join(name).join("xprof_out"),
                refkit: false,
            });
        }
    }
    let two = ext.join("openxla-xprof/demo/plugins/profile/GPU-multi-worker");
    let two_out = out.join("openxla-xprof/GPU-multi-worker_two_hosts/xprof_out");
    for host in ["34.83.195.179_6003", "34.83.195.180_6003", ALL_HOSTS] {
        cases.push(Case {
            name: format!("GPU-multi-worker_two_hosts/{host}"),
            input: two.clone(),
            host,
            expected: two_out.join(host),
            refkit: false,
        });
    }
    cases
}

/// The text of `path`, or of `path.gz` gunzipped.
pub fn read_text(path: &Path) -> Option<String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        return Some(text);
    }
    let mut gz_path = path.as_os_str().to_owned();
    gz_path.push(".gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(gz_path).ok()?).read_to_string(&mut text).ok()?;
    Some(text)
}

/// XProf's `<stem>.json` (or `.json.gz`) in `dir`, parsed.
pub fn load_expected_json(dir: &Path, stem: &str) -> Option<Value> {
    serde_json::from_str(&read_text(&dir.join(format!("{stem}.json")))?).ok()
}

/// The tally of one golden test: cases equal to XProf, known gaps (still differing, listed
/// in the test's KNOWN_GAPS), and failures with what differs (`OXPROF_GOLDEN_SHOW=N`
/// differences shown per case, default 5).
pub struct Tally {
    passed: usize,
    gaps: usize,
    failures: Vec<String>,
    show: usize,
}

impl Default for Tally {
    fn default() -> Tally {
        Tally::new()
    }
}

impl Tally {
    /// No case yet.
    pub fn new() -> Tally {
        let show = std::env::var("OXPROF_GOLDEN_SHOW").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
        Tally { passed: 0, gaps: 0, failures: Vec::new(), show }
    }

    /// A case that failed before it could be compared.
    pub fn fail(&mut self, message: String) {
        self.failures.push(message);
    }

    /// One comparison with XProf; a known gap that matches now is a failure too (so the
    /// list of gaps stays true).
    pub fn record(&mut self, label: &str, report: &crate::jsoncmp::CmpReport, known_gap: bool) {
        match (report.is_match(), known_gap) {
            (true, false) => self.passed += 1,
            (true, true) => self.failures.push(format!("{label}: matches XProf now; remove it from KNOWN_GAPS")),
            (false, true) => {
                eprintln!("KNOWN GAP {label}: {}", report.summary(0));
                self.gaps += 1;
            }
            (false, false) => self.failures.push(format!("{label}:\n{}", report.summary(self.show))),
        }
    }

    /// Prints the counts and fails the test if any case failed.
    pub fn finish(self, test: &str, what: &str) {
        let Tally { passed, gaps, failures, .. } = self;
        eprintln!("{test}: {passed} passed, {} failed, {gaps} known gaps", failures.len());
        assert!(failures.is_empty(), "{} {what} differ from XProf:\n{}", failures.len(), failures.join("\n"));
    }
}
