//! CI gates over a [`RunDiff`]: `--fail-if 'step_time>+5%'` and the like. A gate trips when
//! a change passes its threshold *and* is beyond noise (unless the noise check is off).
//!
//! ```text
//!   gate      = subject comparison threshold
//!   subject   = "step_time"                  mean step time (ms)
//!             | "step:" CATEGORY              a step-time category: step:input, step:device_compute, …
//!             | "input.share"                 input-bound share of step time (percent)
//!             | KIND ":" GLOB "." OP_METRIC   KIND: op (framework ops), kernel, hlo
//!             | "memory" [":" GLOB] "." MEM_METRIC
//!   OP_METRIC = time | self_time | count | mean | device_time | device_self_time
//!                                                        MEM_METRIC = peak | lifetime_peak | fragmentation
//!   comparison = ">" | ">=" | "<" | "<="
//!   threshold = [+|-] number [unit]     % : relative to A; otherwise an absolute change in
//!               ns, us (µs), ms, s (times); B, KiB, MiB, GiB, KB, MB, GB (bytes); pp (points of
//!               a percentage); a bare number in the metric's own unit (bytes, count, fraction, points)
//! ```
//!
//! A glob (`*` any text, `?` one character) matches an op's normalised name, the last
//! `/`-separated part of it, its type or category, or one of the original names it stands
//! for; every op (or allocator) it matches is checked, ops only in one run against 0. The
//! gate trips when any of them passes. Which changes are beyond noise is decided by the
//! comparison ([`crate::stats`] for steps, thresholds for ops and memory); with too few
//! steps there is no verdict and a step gate does not trip unless the noise check is off.

use crate::ops::{OpChange, OpKind};
use crate::{Change, RunDiff};
use serde::{Deserialize, Serialize};

/// A gate as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    /// The text as written.
    pub text: String,
    /// What it checks.
    pub subject: Subject,
    /// How the change is compared with the threshold.
    pub comparison: Comparison,
    /// The threshold.
    pub threshold: Threshold,
}

/// What a gate checks.
#[derive(Debug, Clone, PartialEq)]
pub enum Subject {
    /// A step metric by name (`step_time`, `input`, `device_compute`…), in ms.
    Step(String),
    /// The input share of step time, in percent.
    InputShare,
    /// Ops of a kind whose names match a glob.
    Op {
        /// Framework ops, kernels or HLO ops.
        kind: OpKind,
        /// The glob.
        pattern: String,
        /// Which value.
        metric: OpMetric,
    },
    /// Allocators whose names match a glob.
    Memory {
        /// The glob (`*` for `memory.peak`).
        pattern: String,
        /// Which value.
        metric: MemoryMetric,
    },
}

/// An op's value a gate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpMetric {
    /// Inclusive time (µs).
    Time,
    /// Exclusive time (µs).
    SelfTime,
    /// Occurrences.
    Count,
    /// Time per occurrence (µs).
    Mean,
    /// Device time of all it launched (µs; PyTorch operators only).
    DeviceTime,
    /// Device time it launched itself (µs; PyTorch operators only).
    DeviceSelfTime,
}

/// An allocator's value a gate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryMetric {
    /// Peak bytes within the profile.
    Peak,
    /// The allocator's lifetime peak.
    LifetimePeak,
    /// Fragmentation at the peak (0–1).
    Fragmentation,
}

/// `>`, `>=`, `<`, `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// The change is above the threshold.
    Above,
    /// At or above.
    AtLeast,
    /// Below.
    Below,
    /// At or below.
    AtMost,
}

/// A threshold, in the subject's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// A relative change (0.05 for `+5%`).
    Relative(f64),
    /// An absolute change in the subject's unit (ms, percent points, µs, count, bytes, fraction).
    Absolute(f64),
}

/// A gate that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad gate {gate:?}: {reason} (examples: 'step_time>+5%', 'op:MatMul.self_time>+10%', 'kernel:*.time>+20%', \
     'memory.peak>+256MiB')"
)]
pub struct GateError {
    /// The gate as written.
    pub gate: String,
    /// What is wrong.
    pub reason: String,
}

/// The unit a subject's values are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Ms,
    Us,
    Percent,
    Count,
    Bytes,
    Fraction,
}

impl Subject {
    fn unit(&self) -> Unit {
        match self {
            Subject::Step(_) => Unit::Ms,
            Subject::InputShare => Unit::Percent,
            Subject::Op { metric: OpMetric::Count, .. } => Unit::Count,
            Subject::Op { .. } => Unit::Us,
            Subject::Memory { metric: MemoryMetric::Fragmentation, .. } => Unit::Fraction,
            Subject::Memory { .. } => Unit::Bytes,
        }
    }
}

impl std::str::FromStr for Gate {
    type Err = GateError;

    fn from_str(text: &str) -> Result<Gate, GateError> {
        Gate::parse(text)
    }
}

impl Gate {
    /// Parses a gate (see the module docs).
    pub fn parse(text: &str) -> Result<Gate, GateError> {
        let error = |reason: String| GateError { gate: text.to_string(), reason };
        let trimmed = text.trim();
        // The comparison is the last `>`/`<` whose rest is a threshold (names may hold `<`).
        let (at, comparison, threshold_text) = trimmed
            .char_indices()
            .rev()
            .filter(|(_, c)| *c == '>' || *c == '<')
            .find_map(|(at, c)| {
                let rest = &trimmed[at + 1..];
                let (or_equal, rest) = match rest.strip_prefix('=') {
                    Some(rest) => (true, rest),
                    None => (false, rest),
                };
                let comparison = match (c, or_equal) {
                    ('>', false) => Comparison::Above,
                    ('>', true) => Comparison::AtLeast,
                    ('<', false) => Comparison::Below,
                    _ => Comparison::AtMost,
                };
                starts_like_a_number(rest.trim()).then_some((at, comparison, rest.trim()))
            })
            .ok_or_else(|| error("no comparison with a threshold (> or < and a number)".into()))?;
        let subject = parse_subject(trimmed[..at].trim()).map_err(error)?;
        let threshold = parse_threshold(threshold_text, subject.unit()).map_err(error)?;
        Ok(Gate { text: text.to_string(), subject, comparison, threshold })
    }
}

fn starts_like_a_number(text: &str) -> bool {
    let text = text.trim_start_matches(['+', '-']);
    text.starts_with(|c: char| c.is_ascii_digit() || c == '.')
}

fn parse_subject(text: &str) -> Result<Subject, String> {
    match text {
        "" => return Err("no subject before the comparison".into()),
        "step_time" => return Ok(Subject::Step("step_time".into())),
        "input.share" | "input_share" => return Ok(Subject::InputShare),
        _ => {}
    }
    if let Some(name) = text.strip_prefix("step:") {
        return if crate::steps::STEP_METRICS.contains(&name) {
            Ok(Subject::Step(name.to_string()))
        } else {
            Err(format!("no step category {name:?}; the categories are {}", crate::steps::STEP_METRICS.join(", ")))
        };
    }
    if let Some(rest) = text.strip_prefix("memory") {
        let (pattern, metric) = if let Some(metric) = rest.strip_prefix('.') {
            ("*", metric)
        } else if let Some(rest) = rest.strip_prefix(':') {
            rest.rsplit_once('.').ok_or("memory:ALLOCATOR needs a metric: .peak, .lifetime_peak or .fragmentation")?
        } else {
            return Err("memory needs a metric: memory.peak, memory.lifetime_peak or memory.fragmentation".into());
        };
        let metric = match metric {
            "peak" => MemoryMetric::Peak,
            "lifetime_peak" => MemoryMetric::LifetimePeak,
            "fragmentation" => MemoryMetric::Fragmentation,
            other => return Err(format!("no memory metric {other:?} (peak, lifetime_peak, fragmentation)")),
        };
        return Ok(Subject::Memory { pattern: pattern.to_string(), metric });
    }
    let Some((prefix, rest)) = text.split_once(':') else {
        return Err(format!(
            "unknown subject {text:?} (step_time, step:CATEGORY, input.share, op:NAME.METRIC, kernel:NAME.METRIC, \
             hlo:NAME.METRIC, memory.METRIC)"
        ));
    };
    let kind = OpKind::ALL
        .into_iter()
        .find(|k| k.gate_prefix() == prefix)
        .ok_or_else(|| format!("unknown subject {prefix:?}: (op, kernel, hlo, step, memory)"))?;
    let (pattern, metric) = rest
        .rsplit_once('.')
        .ok_or_else(|| format!("{prefix}:{rest} needs a metric: .time, .self_time, .count or .mean"))?;
    let metric = match metric {
        "time" => OpMetric::Time,
        "self_time" => OpMetric::SelfTime,
        "count" => OpMetric::Count,
        "mean" => OpMetric::Mean,
        "device_time" => OpMetric::DeviceTime,
        "device_self_time" => OpMetric::DeviceSelfTime,
        other => {
            return Err(format!(
                "no op metric {other:?} (time, self_time, count, mean; device_time, device_self_time of PyTorch \
                 operators)"
            ));
        }
    };
    if pattern.is_empty() {
        return Err(format!("{prefix}: needs a name or a glob (e.g. {prefix}:*.time)"));
    }
    Ok(Subject::Op { kind, pattern: pattern.to_string(), metric })
}

fn parse_threshold(text: &str, unit: Unit) -> Result<Threshold, String> {
    let split = text.find(|c: char| !(c.is_ascii_digit() || "+-.eE".contains(c))).unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{number:?} is not a number"))?;
    if !value.is_finite() {
        return Err(format!("{number:?} is not a finite number"));
    }
    let suffix = suffix.trim();
    if suffix == "%" {
        return Ok(Threshold::Relative(value / 100.0));
    }
    let time_ms = match suffix {
        "ns" => Some(1e-6),
        "us" | "µs" => Some(1e-3),
        "ms" => Some(1.0),
        "s" => Some(1e3),
        _ => None,
    };
    let bytes = match suffix {
        "B" => Some(1.0),
        "KiB" => Some(1024.0),
        "MiB" => Some(1024.0 * 1024.0),
        "GiB" => Some(1024.0 * 1024.0 * 1024.0),
        "KB" | "kB" => Some(1e3),
        "MB" => Some(1e6),
        "GB" => Some(1e9),
        _ => None,
    };
    let absolute = match (unit, suffix) {
        (Unit::Ms, _) if time_ms.is_some() => time_ms.map(|f| value * f),
        (Unit::Us, _) if time_ms.is_some() => time_ms.map(|f| value * f * 1e3),
        (Unit::Ms | Unit::Us, "") => return Err("a time needs a unit: ns, us, ms or s (or % for relative)".into()),
        (Unit::Bytes, _) if bytes.is_some() => bytes.map(|f| value * f),
        (Unit::Bytes, "") => Some(value),
        (Unit::Percent, "" | "pp") => Some(value),
        (Unit::Count | Unit::Fraction, "") => Some(value),
        _ => None,
    };
    absolute.map(Threshold::Absolute).ok_or_else(|| {
        let expected = match unit {
            Unit::Ms | Unit::Us => "%, ns, us, ms or s",
            Unit::Bytes => "%, B, KiB, MiB, GiB, KB, MB or GB",
            Unit::Percent => "% (relative) or pp / a bare number (percentage points)",
            Unit::Count | Unit::Fraction => "% or a bare number",
        };
        format!("unit {suffix:?} does not fit this subject (use {expected})")
    })
}

/// What a gate concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GateStatus {
    /// A change passed the threshold and is beyond noise: CI fails.
    Tripped,
    /// A change passed the threshold but is within noise.
    WithinNoise,
    /// A change passed the threshold, but too few steps for a verdict.
    NoVerdict,
    /// No change passed the threshold.
    Passed,
    /// Nothing to check: neither run has what the gate names.
    NoData,
}

/// One subject that passed a gate's threshold.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateHit {
    /// What changed (`step_time`, `op:MatMul (host, _MklMatMul)`, `memory:gpu_bfc`…).
    pub subject: String,
    /// The change.
    pub change: Change,
    /// The unit of the values (`ms`, `us`, `percent`, `count`, `bytes`, `fraction`).
    pub unit: String,
    /// Whether this change trips the gate.
    pub tripped: bool,
    /// The change for people.
    pub text: String,
}

/// A gate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GateOutcome {
    /// The gate as written.
    pub gate: String,
    /// The conclusion.
    pub status: GateStatus,
    /// Why, for people (which change tripped it, and its noise verdict).
    pub reason: String,
    /// How many subjects were checked.
    pub checked: usize,
    /// The subjects that passed the threshold (those that trip first, largest change
    /// first; at most 20).
    pub hits: Vec<GateHit>,
}

impl GateOutcome {
    /// Whether CI fails on this gate.
    pub fn tripped(&self) -> bool {
        self.status == GateStatus::Tripped
    }
}

impl Gate {
    /// The gate's outcome on `diff`; with `noise_check` false a change trips whether or
    /// not it is beyond noise.
    pub fn evaluate(&self, diff: &RunDiff, noise_check: bool) -> GateOutcome {
        let subjects = self.subjects(diff);
        let unit = self.subject.unit();
        let mut hits: Vec<GateHit> = subjects
            .iter()
            .filter(|(_, change, _)| self.passes(change))
            .map(|(subject, change, detail)| {
                let tripped = !noise_check || change.beyond_noise == Some(true);
                GateHit {
                    subject: subject.clone(),
                    change: *change,
                    unit: unit_name(unit).to_string(),
                    tripped,
                    text: describe(change, unit, detail),
                }
            })
            .collect();
        hits.sort_by(|x, y| {
            y.tripped.cmp(&x.tripped).then_with(|| y.change.delta.abs().total_cmp(&x.change.delta.abs()))
        });
        hits.truncate(20);
        let status = if subjects.is_empty() {
            GateStatus::NoData
        } else if hits.iter().any(|h| h.tripped) {
            GateStatus::Tripped
        } else if hits.iter().any(|h| h.change.beyond_noise == Some(false)) {
            GateStatus::WithinNoise
        } else if !hits.is_empty() {
            GateStatus::NoVerdict
        } else {
            GateStatus::Passed
        };
        let reason = match (status, hits.first()) {
            (GateStatus::NoData, _) => format!("nothing to check: {}", self.missing(diff)),
            (GateStatus::Passed, _) => match subjects.as_slice() {
                [(subject, change, detail)] => format!("{subject}: {}", describe(change, unit, detail)),
                many => format!("{} checked, none past the threshold", many.len()),
            },
            (_, Some(hit)) => {
                let more = hits.iter().filter(|h| h.tripped == hit.tripped).count().saturating_sub(1);
                let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
                let why = match status {
                    GateStatus::WithinNoise => " — within noise, so it does not trip",
                    GateStatus::NoVerdict => " — too few steps for a noise verdict, so it does not trip",
                    _ if !noise_check && hit.change.beyond_noise != Some(true) => " (noise check off)",
                    _ => "",
                };
                format!("{}: {}{why}{more}", hit.subject, hit.text)
            }
            (_, None) => String::new(),
        };
        GateOutcome { gate: self.text.clone(), status, reason, checked: subjects.len(), hits }
    }

    fn passes(&self, change: &Change) -> bool {
        let value = match self.threshold {
            Threshold::Relative(_) => match change.relative {
                Some(r) => r,
                None if change.b > 0.0 => f64::INFINITY,
                None => f64::NEG_INFINITY,
            },
            Threshold::Absolute(_) => change.delta,
        };
        let limit = match self.threshold {
            Threshold::Relative(v) | Threshold::Absolute(v) => v,
        };
        match self.comparison {
            Comparison::Above => value > limit,
            Comparison::AtLeast => value >= limit,
            Comparison::Below => value < limit,
            Comparison::AtMost => value <= limit,
        }
    }

    /// Every (subject, change, detail) the gate names.
    fn subjects(&self, diff: &RunDiff) -> Vec<(String, Change, String)> {
        match &self.subject {
            Subject::Step(name) => diff
                .steps
                .iter()
                .flat_map(|s| &s.metrics)
                .filter(|m| &m.name == name)
                .map(|m| (m.name.clone(), m.change, test_detail(m.test.as_ref(), diff)))
                .collect(),
            Subject::InputShare => diff
                .input
                .iter()
                .map(|i| ("input.share".to_string(), i.share.change, test_detail(i.share.test.as_ref(), diff)))
                .collect(),
            Subject::Op { kind, pattern, metric } => diff
                .ops
                .iter()
                .filter(|o| o.kind == *kind)
                .flat_map(|o| o.matched.iter().chain(&o.only_in_a).chain(&o.only_in_b))
                .filter(|op| op_matches(op, pattern))
                .filter_map(|op| {
                    let change = match metric {
                        OpMetric::Time => op.time_us,
                        OpMetric::SelfTime => op.self_time_us,
                        OpMetric::Count => op.count,
                        OpMetric::Mean => op.mean_us,
                        // Only PyTorch operators have device times.
                        OpMetric::DeviceTime => op.device_time_us?,
                        OpMetric::DeviceSelfTime => op.device_self_time_us?,
                    };
                    Some((op_subject(*kind, op), change, String::new()))
                })
                .collect(),
            Subject::Memory { pattern, metric } => diff
                .memory
                .iter()
                .flat_map(|m| &m.allocators)
                .filter(|a| glob(pattern, &a.allocator))
                .map(|a| {
                    let change = match metric {
                        MemoryMetric::Peak => a.peak_bytes,
                        MemoryMetric::LifetimePeak => a.lifetime_peak_bytes,
                        MemoryMetric::Fragmentation => a.fragmentation,
                    };
                    (format!("memory:{}", a.allocator), change, String::new())
                })
                .collect(),
        }
    }

    /// Why a gate found nothing to check.
    fn missing(&self, diff: &RunDiff) -> String {
        match &self.subject {
            Subject::Step(_) | Subject::InputShare => {
                format!("no step comparison ({} steps in A, {} in B)", diff.a.steps, diff.b.steps)
            }
            Subject::Op { kind, pattern, .. } => match diff.ops.iter().find(|o| o.kind == *kind) {
                Some(_) => format!("no {} match {pattern:?}", kind.plural()),
                None => format!("no {} in both runs", kind.plural()),
            },
            Subject::Memory { pattern, .. } => match &diff.memory {
                Some(_) => format!("no allocator matches {pattern:?}"),
                None => "no allocator events in either run".into(),
            },
        }
    }
}

/// How people name an op in a gate's outcome.
fn op_subject(kind: OpKind, op: &OpChange) -> String {
    let mut facts: Vec<&str> = Vec::new();
    if !op.context.is_empty() {
        facts.push(&op.context);
    }
    if !op.category.is_empty() {
        facts.push(&op.category);
    }
    let facts = if facts.is_empty() { String::new() } else { format!(" ({})", facts.join(", ")) };
    format!("{}:{}{facts}", kind.gate_prefix(), op.name)
}

fn op_matches(op: &OpChange, pattern: &str) -> bool {
    let last = op.name.rsplit('/').next().unwrap_or(&op.name);
    glob(pattern, &op.name)
        || glob(pattern, last)
        || (!op.category.is_empty() && glob(pattern, &op.category))
        || op.names.iter().any(|n| glob(pattern, n))
}

/// `*` matches any text, `?` one character, everything else itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            backtrack = Some((pi, ti));
            pi += 1;
        } else if let Some((star, matched)) = backtrack {
            pi = star + 1;
            ti = matched + 1;
            backtrack = Some((star, matched + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Ms => "ms",
        Unit::Us => "us",
        Unit::Percent => "percent",
        Unit::Count => "count",
        Unit::Bytes => "bytes",
        Unit::Fraction => "fraction",
    }
}

/// A value in its unit, for people.
fn value_text(v: f64, unit: Unit) -> String {
    match unit {
        Unit::Ms => format!("{v:.3} ms"),
        Unit::Us => format!("{v:.1} µs"),
        Unit::Percent => format!("{v:.1}%"),
        Unit::Count => format!("{v:.1}"),
        Unit::Bytes => format!("{:.2} MiB", v / (1024.0 * 1024.0)),
        Unit::Fraction => format!("{v:.3}"),
    }
}

fn signed(v: f64, unit: Unit) -> String {
    let text = value_text(v.abs(), unit);
    if v < 0.0 { format!("-{text}") } else { format!("+{text}") }
}

/// `+12.3% (2.774 ms → 3.115 ms), beyond noise (…)`.
fn describe(change: &Change, unit: Unit, detail: &str) -> String {
    let relative = match change.relative {
        Some(r) => format!("{:+.1}%", 100.0 * r),
        None => "new".to_string(),
    };
    let absolute =
        if unit == Unit::Percent { format!("{:+.1} points", change.delta) } else { signed(change.delta, unit) };
    let verdict = match change.beyond_noise {
        Some(true) => "beyond noise",
        Some(false) => "within noise",
        None => "no noise verdict",
    };
    let detail = if detail.is_empty() { String::new() } else { format!(": {detail}") };
    format!(
        "{relative}, {absolute} ({} → {}), {verdict}{detail}",
        value_text(change.a, unit),
        value_text(change.b, unit)
    )
}

fn test_detail(test: Option<&crate::stats::TwoSampleTest>, diff: &RunDiff) -> String {
    match test {
        Some(t) => {
            let g = t.hedges_g.map_or("∞".to_string(), |g| format!("{g:.2}"));
            format!("Welch's t-test p {}, Hedges' g {g}, {} vs {} steps", p_text(t.p_value), t.n_a, t.n_b)
        }
        None => format!("{} vs {} steps, too few to test", diff.a.steps, diff.b.steps),
    }
}

/// A p-value for people: `< 0.001` or three decimals.
pub fn p_text(p: f64) -> String {
    if p < 0.001 { "< 0.001".to_string() } else { format!("= {p:.3}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_of_the_issue_parse() {
        let g = Gate::parse("step_time>+5%").unwrap();
        assert_eq!(
            (g.subject, g.comparison, g.threshold),
            (Subject::Step("step_time".into()), Comparison::Above, Threshold::Relative(0.05))
        );
        let g = Gate::parse("op:MatMul.self_time>+10%").unwrap();
        assert_eq!(
            g.subject,
            Subject::Op { kind: OpKind::FrameworkOp, pattern: "MatMul".into(), metric: OpMetric::SelfTime }
        );
        let g = Gate::parse("kernel:*.time>+20%").unwrap();
        assert_eq!(g.subject, Subject::Op { kind: OpKind::Kernel, pattern: "*".into(), metric: OpMetric::Time });
        let g = Gate::parse("memory.peak>+256MiB").unwrap();
        assert_eq!(g.subject, Subject::Memory { pattern: "*".into(), metric: MemoryMetric::Peak });
        assert_eq!(g.threshold, Threshold::Absolute(256.0 * 1024.0 * 1024.0));
    }

    #[test]
    fn more_gates_parse() {
        let g = Gate::parse("hlo:fusion.N.mean>=2us").unwrap();
        assert_eq!(g.subject, Subject::Op { kind: OpKind::HloOp, pattern: "fusion.N".into(), metric: OpMetric::Mean });
        assert_eq!((g.comparison, g.threshold), (Comparison::AtLeast, Threshold::Absolute(2.0)));
        let g = Gate::parse("kernel:void gemm<float>.time > 1ms").unwrap();
        assert_eq!(
            g.subject,
            Subject::Op { kind: OpKind::Kernel, pattern: "void gemm<float>".into(), metric: OpMetric::Time }
        );
        assert_eq!(g.threshold, Threshold::Absolute(1000.0));
        assert_eq!(Gate::parse("step:input>0.5ms").unwrap().threshold, Threshold::Absolute(0.5));
        assert_eq!(Gate::parse("input.share>+5").unwrap().threshold, Threshold::Absolute(5.0));
        assert_eq!(Gate::parse("step_time<-10%").unwrap().comparison, Comparison::Below);
        let g = Gate::parse("memory:gpu_*.fragmentation>0.1").unwrap();
        assert_eq!(g.subject, Subject::Memory { pattern: "gpu_*".into(), metric: MemoryMetric::Fragmentation });
        assert_eq!(Gate::parse("memory.peak>1000000").unwrap().threshold, Threshold::Absolute(1e6));
    }

    #[test]
    fn bad_gates_say_why() {
        for (gate, says) in [
            ("step_time", "no comparison"),
            ("step_time>+5", "a time needs a unit"),
            ("step_time>+5MiB", "does not fit"),
            ("step:nap>+5%", "no step category"),
            ("op:MatMul>+5%", "needs a metric"),
            ("op:MatMul.speed>+5%", "no op metric"),
            ("flops>+5%", "unknown subject"),
            ("gpu:x.time>5%", "unknown subject"),
            ("memory>1GiB", "memory needs a metric"),
            (">5%", "no subject"),
            ("step_time>+5..%", "not a number"),
        ] {
            let error = Gate::parse(gate).unwrap_err();
            assert!(error.reason.contains(says), "{gate}: {error}");
            assert!(error.to_string().contains("examples"), "{error}");
        }
    }

    use crate::testing::{run, source};
    use crate::{DiffOptions, DiffReport, RunReports, diff};

    const MIB: i64 = 1 << 20;

    /// B: steps 20 % slower, MatMul 50 % slower, a new kernel, +300 MiB at the peak.
    fn slower_pair(steps: usize) -> (RunReports, RunReports) {
        let a_steps = [10.0, 10.5, 9.8, 10.2, 10.1, 9.9, 10.3, 9.7];
        let b_steps = [12.0, 12.4, 11.9, 12.2, 12.1, 12.3, 11.8, 12.5];
        let a = run(
            &a_steps[..steps],
            &[("dense/MatMul", "MatMul", 8, 800.0), ("dense/BiasAdd", "BiasAdd", 8, 80.0)],
            &[("gemm_1", "dense/MatMul", 8, 700.0)],
            100 * MIB,
        );
        let b = run(
            &b_steps[..steps],
            &[("dense/MatMul", "MatMul", 8, 1200.0), ("dense/BiasAdd", "BiasAdd", 8, 80.5)],
            &[("gemm_2", "dense/MatMul", 8, 700.0), ("transpose_3", "dense/MatMul", 8, 300.0)],
            400 * MIB,
        );
        (a, b)
    }

    fn outcome(gate: &str, steps: usize, noise_check: bool) -> GateOutcome {
        let (a, b) = slower_pair(steps);
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        Gate::parse(gate).unwrap().evaluate(&diff, noise_check)
    }

    #[test]
    fn a_change_beyond_noise_past_the_threshold_trips() {
        let step = outcome("step_time>+5%", 8, true);
        assert_eq!(step.status, GateStatus::Tripped, "{step:?}");
        assert!(step.reason.starts_with("step_time: +20."), "{}", step.reason);
        assert!(step.reason.contains("beyond noise: Welch's t-test p < 0.001"), "{}", step.reason);
        assert_eq!(outcome("step_time>+25%", 8, true).status, GateStatus::Passed);
        assert_eq!(outcome("step_time>+1ms", 8, true).status, GateStatus::Tripped);
        assert_eq!(outcome("step_time<-5%", 8, true).status, GateStatus::Passed);
        assert_eq!(outcome("step:input>0.5ms", 8, true).status, GateStatus::Passed, "input is 1 ms in both");

        let op = outcome("op:MatMul.self_time>+10%", 8, true);
        assert_eq!(op.status, GateStatus::Tripped, "{op:?}");
        assert_eq!(op.hits[0].subject, "op:dense/MatMul (host, MatMul)");
        assert_eq!(outcome("op:dense/*.mean>+60%", 8, true).status, GateStatus::Passed);

        let kernel = outcome("kernel:*.time>+20%", 8, true);
        assert_eq!(kernel.status, GateStatus::Tripped);
        assert!(kernel.reason.starts_with("kernel:transpose_N (dense/MatMul): new, +37.5 µs"), "{}", kernel.reason);
        assert_eq!(kernel.checked, 2, "gemm_N and transpose_N");

        let memory = outcome("memory.peak>+256MiB", 8, true);
        assert_eq!(memory.status, GateStatus::Tripped);
        assert!(memory.reason.starts_with("memory:gpu_bfc: +300.0%, +300.00 MiB"), "{}", memory.reason);
        assert_eq!(outcome("memory:gpu_bfc.peak>+512MiB", 8, true).status, GateStatus::Passed);
    }

    #[test]
    fn a_change_within_noise_does_not_trip() {
        // BiasAdd: +0.6 % of 10 µs per step, under the 5 % an op needs to be beyond noise.
        let bias = outcome("op:BiasAdd.time>+0.1%", 8, true);
        assert_eq!(bias.status, GateStatus::WithinNoise, "{bias:?}");
        assert!(bias.reason.ends_with("— within noise, so it does not trip"), "{}", bias.reason);
        let forced = outcome("op:BiasAdd.time>+0.1%", 8, false);
        assert_eq!(forced.status, GateStatus::Tripped);
        assert!(forced.reason.ends_with("(noise check off)"), "{}", forced.reason);
    }

    #[test]
    fn too_few_steps_give_no_verdict_and_do_not_trip() {
        let few = outcome("step_time>+5%", 4, true);
        assert_eq!(few.status, GateStatus::NoVerdict, "{few:?}");
        assert!(few.reason.contains("too few steps for a noise verdict"), "{}", few.reason);
        assert_eq!(outcome("step_time>+5%", 5, true).status, GateStatus::Tripped, "5 steps per side suffice");
        assert_eq!(outcome("step_time>+5%", 4, false).status, GateStatus::Tripped);
    }

    #[test]
    fn a_gate_without_data_says_what_is_missing() {
        let hlo = outcome("hlo:*.time>+1%", 8, true);
        assert_eq!(
            (hlo.status, hlo.reason.as_str()),
            (GateStatus::NoData, "nothing to check: no HLO ops in both runs")
        );
        let op = outcome("op:Conv2D.time>+1%", 8, true);
        assert_eq!(op.reason, "nothing to check: no framework ops match \"Conv2D\"");
        assert!(!op.tripped());
    }

    #[test]
    fn the_report_trips_when_any_gate_does() {
        let (a, b) = slower_pair(8);
        let diff = diff((&source("a"), &a), (&source("b"), &b), &DiffOptions::default());
        let gates = [Gate::parse("step_time>+50%").unwrap(), Gate::parse("memory.peak>+256MiB").unwrap()];
        let report = DiffReport::new(diff.clone(), &gates, true);
        assert!(report.tripped);
        assert_eq!(
            report.gates.iter().map(|g| g.status).collect::<Vec<_>>(),
            [GateStatus::Passed, GateStatus::Tripped]
        );
        assert!(!DiffReport::new(diff, &gates[..1], true).tripped);
    }

    #[test]
    fn globs_match() {
        assert!(glob("*", "anything"));
        assert!(glob("Mat*", "MatMul_3"));
        assert!(glob("*fusion*", "loop_add_fusion_N"));
        assert!(glob("f?sion", "fusion"));
        assert!(!glob("MatMul", "MatMul_3"));
        assert!(glob("a*b*c", "a_x_b_y_c"));
        assert!(!glob("a*b*c", "a_x_b_y"));
    }
}
