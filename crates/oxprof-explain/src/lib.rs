//! `oxprof explain`: what bounds a run, in one screen. From a run's typed reports (the
//! OpStats tools' for XSpace runs, torch-tb-profiler's views for PyTorch traces) it builds
//! the run's [`Facts`] (step time and its breakdown by cause, top ops, memory peak, per-host
//! step times), runs every registered detector ([`detectors::DETECTORS`]) over them, and
//! ranks the findings by the time they cost per step.
//!
//! The JSON form ([`Explanation`]) is versioned ([`SCHEMA`]); the Markdown form
//! ([`render_markdown`]) stays within a byte budget and says what it left out.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod detectors;
mod facts;
mod hlo;
mod render;
mod torch;

pub use facts::{Category, Facts, MatrixUnits, OpFact, Share};
pub use hlo::{HloFamily, HloKind, HloOpFact};
pub use render::render_markdown;
pub use torch::{DataLoader, GpuIdle, TorchCompile};

use oxprof_api::ApiError;
use oxprof_api::catalog::ServedRun;
use oxprof_api::session::Session;
use serde::Serialize;

/// The version of [`Explanation`]'s JSON form (`schema` field): bumped when a field changes
/// meaning or goes away; new fields may appear within a version.
pub const SCHEMA: &str = "oxprof.explain/1";

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth knowing; costs little.
    Info,
    /// Costs a noticeable share of the step.
    Warning,
    /// Bounds the run.
    Critical,
}

/// One detector's finding.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    /// The detector's id (`input_bound`, `sync_points`, …).
    pub id: &'static str,
    /// What was found, in a few words.
    pub title: String,
    /// How serious it is.
    pub severity: Severity,
    /// Time it costs per step, in milliseconds (what fixing it could save at most).
    pub time_at_stake_ms: f64,
    /// That time as a percentage of the step.
    pub percent_of_step: f64,
    /// The numbers and names that show it.
    pub evidence: Vec<String>,
    /// What to do next.
    pub suggestion: String,
    /// The command that shows the details.
    pub see: String,
}

/// The explanation of one run (or one host of it).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Explanation {
    /// [`SCHEMA`].
    pub schema: &'static str,
    /// The run's name.
    pub run: String,
    /// The hosts explained.
    pub hosts: Vec<String>,
    /// What the run is: `xspace` (TensorFlow, JAX, PyTorch/XLA) or `pytorch` (a Kineto trace).
    pub kind: &'static str,
    /// What the facts are (step time, breakdown, top ops, memory).
    pub facts: Facts,
    /// The category that takes the largest share of the step (`None`: no steps).
    pub bound_by: Option<Category>,
    /// Every detector's finding, largest time at stake first.
    pub findings: Vec<Finding>,
    /// Detectors that ran and found nothing (so a reader knows what was checked).
    pub checked: Vec<&'static str>,
    /// oxprof's notes on what could not be read.
    pub notes: Vec<String>,
}

/// Explains `run` of `session` (`host`: one host; `None`: every host).
pub fn explain(session: &Session, run: &ServedRun, host: Option<&str>) -> Result<Explanation, ApiError> {
    let facts = facts::gather(session, run, host)?;
    let mut findings = Vec::new();
    let mut checked = Vec::new();
    for detector in detectors::DETECTORS {
        match (detector.check)(&facts) {
            Some(finding) => findings.push(finding),
            None => checked.push(detector.id),
        }
    }
    findings.sort_by(|a, b| {
        b.severity.cmp(&a.severity).then(b.time_at_stake_ms.total_cmp(&a.time_at_stake_ms)).then(a.id.cmp(b.id))
    });
    let bound_by =
        facts.breakdown.iter().filter(|s| s.ms > 0.0).max_by(|a, b| a.ms.total_cmp(&b.ms)).map(|s| s.category);
    Ok(Explanation {
        schema: SCHEMA,
        run: run.name.clone(),
        hosts: facts.hosts.clone(),
        kind: facts.kind,
        notes: facts.notes.clone(),
        facts,
        bound_by,
        findings,
        checked,
    })
}
