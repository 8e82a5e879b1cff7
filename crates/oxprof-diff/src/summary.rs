//! The summary file (`oxprof summary RUN --out baseline.json`): one run's
//! [`RunReports`] saved as versioned JSON, so that CI keeps a baseline file instead of a
//! profile and `oxprof diff` reads it in place of a run.
//!
//! ```json
//! {
//!   "oxprof_summary": 1,
//!   "oxprof_version": "0.1.0",
//!   "source": {"path": "logs/", "run": "2026_11_25_…", "host": "ALL_HOSTS", "hosts": ["vm"]},
//!   "reports": {
//!     "overview_page": {…}, "framework_op_stats": {…}, "kernel_stats": {…},
//!     "hlo_stats": {…}, "memory_profile": {"vm": {…}}, "op_table_steps": 30
//!   }
//! }
//! ```
//!
//! `reports` holds the typed reports of the tools (their serde form, the one
//! `oxprof data TOOL --format report` prints), not XProf's JSON. A change to what those
//! reports mean or how they serialise bumps [`SUMMARY_VERSION`]; a file of a version this
//! oxprof does not read is refused with a message saying what to do (never read
//! half-right).
//!
//! **Versions.** 1: XProf's reports. 2: also torch-tb-profiler's `pytorch_overview` and
//! `pytorch_op_stats` of a PyTorch run. A summary is written as the oldest version that
//! holds it (an XSpace run's is still version 1, byte for byte as before), so an older
//! oxprof refuses a PyTorch summary ("newer: upgrade") rather than silently comparing it
//! without its steps and operators, and this oxprof reads both.
//!
//! **Budgets.** A summary is input like a profile, and may come from anywhere (a CI cache,
//! an artifact): [`SummaryLimits`] bound its size (64 MiB; real summaries are 30 KB–2 MB)
//! and its JSON objects and arrays (65,536 plus one per 32 bytes; real summaries hold one
//! per 300–500 bytes), counted in one pass over the text before anything is built, so a
//! file of `{},{},…` cannot make millions of report rows out of a few bytes each.

use crate::{RunReports, Source};
use serde::{Deserialize, Serialize};

/// The newest version this oxprof writes and reads.
pub const SUMMARY_VERSION: u32 = 2;

/// The oldest version this oxprof reads.
pub const OLDEST_SUMMARY_VERSION: u32 = 1;

/// Budgets of a summary file read ([`Summary::parse_within`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryLimits {
    /// Largest file, in bytes (`oxprof diff --max-summary-bytes`). Default 64 MiB.
    pub max_bytes: u64,
    /// JSON objects and arrays allowed: this many…
    pub containers_base: u64,
    /// …plus one per this many bytes of the file.
    pub bytes_per_container: u64,
}

impl Default for SummaryLimits {
    fn default() -> Self {
        SummaryLimits { max_bytes: 64 << 20, containers_base: 65_536, bytes_per_container: 32 }
    }
}

impl SummaryLimits {
    /// The objects and arrays allowed in a file of `bytes`.
    pub fn max_containers(&self, bytes: u64) -> u64 {
        self.containers_base.saturating_add(bytes / self.bytes_per_container.max(1))
    }
}

/// A saved summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The format's version ([`SUMMARY_VERSION`]).
    pub oxprof_summary: u32,
    /// The oxprof that wrote it (for people).
    pub oxprof_version: String,
    /// The profile it summarises.
    pub source: Source,
    /// The run's reports.
    pub reports: RunReports,
}

/// Why a file is not a summary this oxprof reads.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// Not JSON at all.
    #[error("not JSON ({0})")]
    NotJson(String),
    /// JSON without `"oxprof_summary"`.
    #[error(
        "JSON, but not an oxprof summary (no \"oxprof_summary\" version field); make one with `oxprof summary RUN --out FILE`"
    )]
    NotASummary,
    /// Written by a newer oxprof.
    #[error(
        "an oxprof summary of version {found}, newer than this oxprof reads ({SUMMARY_VERSION}): upgrade oxprof, or make \
         the summary again with this one (`oxprof summary RUN --out FILE`)"
    )]
    Newer {
        /// The file's version.
        found: u64,
    },
    /// Written by an older oxprof.
    #[error(
        "an oxprof summary of version {found}, older than this oxprof reads ({OLDEST_SUMMARY_VERSION} to \
         {SUMMARY_VERSION}): make it again from the \
         profile with `oxprof summary RUN --out FILE`"
    )]
    Older {
        /// The file's version.
        found: u64,
    },
    /// Over a budget of [`SummaryLimits`].
    #[error(
        "{found} {what}, over the budget of {limit}{hint}; a summary of a real run is far smaller: make it again with \
         `oxprof summary RUN --out FILE`"
    )]
    OverBudget {
        /// What was counted (`"bytes"`, `"JSON objects and arrays"`).
        what: &'static str,
        /// The count.
        found: u64,
        /// The budget.
        limit: u64,
        /// How to raise it, when it can be raised.
        hint: &'static str,
    },
    /// The right version, but its contents do not read.
    #[error("an oxprof summary whose reports do not read ({0}); make it again with `oxprof summary RUN --out FILE`")]
    Invalid(String),
}

impl Summary {
    /// A summary of `reports`, written by oxprof `oxprof_version`.
    pub fn new(source: Source, reports: RunReports, oxprof_version: &str) -> Summary {
        let pytorch = reports.pytorch_overview.is_some() || reports.pytorch_op_stats.is_some();
        let version = if pytorch { SUMMARY_VERSION } else { OLDEST_SUMMARY_VERSION };
        Summary { oxprof_summary: version, oxprof_version: oxprof_version.to_string(), source, reports }
    }

    /// The file's text (pretty JSON: a baseline kept in git diffs readably). Serializing
    /// plain data into a string cannot fail (non-finite numbers become `null`).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Reads a summary file's text within the default [`SummaryLimits`].
    pub fn parse(text: &str) -> Result<Summary, SummaryError> {
        Summary::parse_within(text, &SummaryLimits::default())
    }

    /// Reads a summary file's text: its budgets first, then its version, then the rest.
    pub fn parse_within(text: &str, limits: &SummaryLimits) -> Result<Summary, SummaryError> {
        let bytes = text.len() as u64;
        if bytes > limits.max_bytes {
            return Err(SummaryError::OverBudget {
                what: "bytes",
                found: bytes,
                limit: limits.max_bytes,
                hint: " (--max-summary-bytes)",
            });
        }
        let containers = count_containers(text);
        let allowed = limits.max_containers(bytes);
        if containers > allowed {
            return Err(SummaryError::OverBudget {
                what: "JSON objects and arrays",
                found: containers,
                limit: allowed,
                hint: "",
            });
        }
        // The version alone first (the other fields are skipped unread).
        #[derive(Deserialize)]
        struct Probe {
            oxprof_summary: Option<serde_json::Value>,
        }
        let probe: Probe = serde_json::from_str(text).map_err(|e| SummaryError::NotJson(e.to_string()))?;
        let version = probe.oxprof_summary.ok_or(SummaryError::NotASummary)?;
        let found = version.as_u64().ok_or(SummaryError::NotASummary)?;
        if found > u64::from(SUMMARY_VERSION) {
            return Err(SummaryError::Newer { found });
        }
        if found < u64::from(OLDEST_SUMMARY_VERSION) {
            return Err(SummaryError::Older { found });
        }
        serde_json::from_str(text).map_err(|e| SummaryError::Invalid(e.to_string()))
    }

    /// The number of JSON objects and arrays in the summary's text (what [`SummaryLimits`]
    /// bounds).
    pub fn containers(text: &str) -> u64 {
        count_containers(text)
    }

    /// Whether `text` looks like a summary rather than a profile (JSON starts with `{`;
    /// an XSpace is protobuf or gzip).
    pub fn looks_like_one(start: &[u8]) -> bool {
        start.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
    }
}

/// `{` and `[` outside strings: one pass, no allocation (bad JSON is left to the parser).
fn count_containers(text: &str) -> u64 {
    let (mut count, mut in_string, mut escaped) = (0u64, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' => count += 1,
                _ => {}
            }
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_xprof::tools::kernel_stats::{KernelStats, KernelStatsRow};

    fn summary() -> Summary {
        let reports = RunReports {
            kernel_stats: Some(KernelStats {
                kernels: vec![KernelStatsRow { kernel_name: "k".into(), total_duration_us: 1.5, ..Default::default() }],
            }),
            op_table_steps: Some(3),
            ..RunReports::default()
        };
        let source = Source { path: "logs".into(), run: "r".into(), host: "ALL_HOSTS".into(), ..Source::default() };
        Summary::new(source, reports, "0.1.0")
    }

    #[test]
    fn round_trips() {
        let text = summary().to_json();
        assert!(text.starts_with("{\n  \"oxprof_summary\": 1,"), "{text}");
        assert_eq!(Summary::parse(&text).unwrap(), summary());
        assert!(Summary::looks_like_one(b"  \n{"));
        assert!(!Summary::looks_like_one(b"\x1f\x8b"));
    }

    #[test]
    fn other_versions_are_refused_clearly() {
        let newer = summary().to_json().replacen("\"oxprof_summary\": 1", "\"oxprof_summary\": 3", 1);
        assert!(matches!(Summary::parse(&newer), Err(SummaryError::Newer { found: 3 })));
        assert!(Summary::parse(&newer).unwrap_err().to_string().contains("upgrade oxprof"));
        let older = summary().to_json().replacen("\"oxprof_summary\": 1", "\"oxprof_summary\": 0", 1);
        assert!(matches!(Summary::parse(&older), Err(SummaryError::Older { found: 0 })));
        assert!(matches!(Summary::parse("{\"traceEvents\": []}"), Err(SummaryError::NotASummary)));
        assert!(matches!(Summary::parse("not json"), Err(SummaryError::NotJson(_))));
        let broken = summary().to_json().replace("\"op_table_steps\": 3", "\"op_table_steps\": \"three\"");
        assert!(matches!(Summary::parse(&broken), Err(SummaryError::Invalid(_))));
    }

    #[test]
    fn a_pytorch_summary_is_version_2_and_both_versions_read() {
        let reports = crate::testing::pytorch_run(&[1.0; 6], &[("aten::mm", 6, 6.0, 60.0)]);
        let pytorch = Summary::new(Source::default(), reports.for_summary(), "0.1.0");
        let text = pytorch.to_json();
        assert!(text.starts_with("{\n  \"oxprof_summary\": 2,"), "{}", &text[..40]);
        assert_eq!(Summary::parse(&text).unwrap(), pytorch);
        // Version 1 (any XSpace summary, and PyTorch ones made before): read as before.
        let old = summary().to_json();
        assert!(!old.contains("pytorch"), "an XSpace summary is unchanged");
        assert_eq!(Summary::parse(&old).unwrap().reports.pytorch_overview, None);
    }

    #[test]
    fn budgets_come_before_parsing() {
        let text = summary().to_json();
        assert_eq!(Summary::containers(&text), count_containers(&text));
        let tight = SummaryLimits { max_bytes: text.len() as u64 - 1, ..SummaryLimits::default() };
        let error = Summary::parse_within(&text, &tight).unwrap_err();
        assert!(matches!(error, SummaryError::OverBudget { found, .. } if found == text.len() as u64), "{error}");
        assert!(error.to_string().contains("--max-summary-bytes"), "{error}");
        assert!(Summary::parse_within(&text, &SummaryLimits { max_bytes: text.len() as u64, ..tight }).is_ok());
        // Millions of rows from a few bytes each: refused before a row is built.
        let rows = "{},".repeat(200_000);
        let bomb = text.replacen("\"kernels\": [", &format!("\"kernels\": [{rows}"), 1);
        let error = Summary::parse(&bomb).unwrap_err();
        assert!(matches!(error, SummaryError::OverBudget { what: "JSON objects and arrays", .. }), "{error}");
    }

    #[test]
    fn containers_are_counted_outside_strings() {
        assert_eq!(count_containers(r#"{"a": [1, {"b": "[{\"}"}], "c": "\\"}"#), 3);
        assert_eq!(count_containers(""), 0);
    }
}
