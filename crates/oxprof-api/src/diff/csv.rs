//! A comparison as one flat CSV table (`oxprof diff --format csv`), for spreadsheets and
//! scripts: one row per compared value, then one per gate.
//!
//! Columns: `section` (steps, input, ops, memory, gate), `kind` (framework_op, kernel,
//! hlo_op for ops), `presence` (both, only_a, only_b), `subject` (a step metric, an op's
//! normalised name, an allocator, a gate as written), `context` (host/device, framework
//! op, launching op; a gate's reason), `category` (op type or HLO category), `metric`
//! (mean, time, self_time, count, device_time and device_self_time of PyTorch operators,
//! peak…; a gate's status), `unit`, `a`, `b`, `delta`,
//! `relative` (empty: new in B), `beyond_noise` (true, false, empty: no verdict), `p_value`
//! and `hedges_g` (step metrics).

use oxprof_diff::ops::OpKind;
use oxprof_diff::stats::TwoSampleTest;
use oxprof_diff::{Change, DiffReport};

const HEADER: &str =
    "section,kind,presence,subject,context,category,metric,unit,a,b,delta,relative,beyond_noise,p_value,hedges_g";

/// One CSV field, quoted when it must be.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

fn number(v: f64) -> String {
    if v.is_finite() { v.to_string() } else { String::new() }
}

struct Row<'a> {
    section: &'a str,
    kind: &'a str,
    presence: &'a str,
    subject: &'a str,
    context: &'a str,
    category: &'a str,
    metric: &'a str,
    unit: &'a str,
}

fn push(out: &mut String, row: Row<'_>, change: Option<&Change>, test: Option<&TwoSampleTest>) {
    let texts = [row.section, row.kind, row.presence, row.subject, row.context, row.category, row.metric, row.unit];
    let mut fields: Vec<String> = texts.iter().map(|t| field(t)).collect();
    match change {
        Some(c) => {
            fields.extend([number(c.a), number(c.b), number(c.delta), c.relative.map(number).unwrap_or_default()]);
            fields.push(c.beyond_noise.map(|b| b.to_string()).unwrap_or_default());
        }
        None => fields.extend(std::iter::repeat_n(String::new(), 5)),
    }
    fields.push(test.map(|t| number(t.p_value)).unwrap_or_default());
    fields.push(test.and_then(|t| t.hedges_g).map(number).unwrap_or_default());
    out.push_str(&fields.join(","));
    out.push('\n');
}

fn kind_name(kind: OpKind) -> &'static str {
    match kind {
        OpKind::FrameworkOp => "framework_op",
        OpKind::Kernel => "kernel",
        OpKind::HloOp => "hlo_op",
    }
}

/// A row of one of both runs' values, without op facts.
fn plain<'a>(section: &'a str, subject: &'a str, metric: &'a str, unit: &'a str) -> Row<'a> {
    Row { section, kind: "", presence: "both", subject, context: "", category: "", metric, unit }
}

/// The CSV of a comparison and its gates.
pub fn render(report: &DiffReport) -> String {
    let diff = &report.diff;
    let mut out = format!("{HEADER}\n");
    for m in diff.steps.iter().flat_map(|s| &s.metrics) {
        push(&mut out, plain("steps", &m.name, "mean", &m.unit), Some(&m.change), m.test.as_ref());
    }
    if let Some(input) = &diff.input {
        let m = &input.share;
        push(&mut out, plain("input", &m.name, "share", &m.unit), Some(&m.change), m.test.as_ref());
    }
    for ops in &diff.ops {
        let groups = [("both", &ops.matched), ("only_a", &ops.only_in_a), ("only_b", &ops.only_in_b)];
        for (presence, list) in groups {
            for op in list.iter() {
                let values = [
                    ("time", "us", Some(&op.time_us)),
                    ("self_time", "us", Some(&op.self_time_us)),
                    ("count", "count", Some(&op.count)),
                    ("mean", "us", Some(&op.mean_us)),
                    // PyTorch operators only.
                    ("device_time", "us", op.device_time_us.as_ref()),
                    ("device_self_time", "us", op.device_self_time_us.as_ref()),
                ];
                for (metric, unit, change) in values {
                    let Some(change) = change else { continue };
                    let row = Row {
                        section: "ops",
                        kind: kind_name(ops.kind),
                        presence,
                        subject: &op.name,
                        context: &op.context,
                        category: &op.category,
                        metric,
                        unit,
                    };
                    push(&mut out, row, Some(change), None);
                }
            }
        }
    }
    for a in diff.memory.iter().flat_map(|m| &m.allocators) {
        let presence = match a.presence {
            oxprof_diff::memory::Presence::Both => "both",
            oxprof_diff::memory::Presence::OnlyA => "only_a",
            oxprof_diff::memory::Presence::OnlyB => "only_b",
        };
        for (metric, unit, change) in [
            ("peak", "bytes", &a.peak_bytes),
            ("lifetime_peak", "bytes", &a.lifetime_peak_bytes),
            ("fragmentation", "fraction", &a.fragmentation),
        ] {
            let row = Row { presence, ..plain("memory", &a.allocator, metric, unit) };
            push(&mut out, row, Some(change), None);
        }
    }
    for gate in &report.gates {
        let status = serde_json::to_value(gate.status).ok();
        let status = status.as_ref().and_then(|s| s.as_str()).unwrap_or("");
        let row = Row { context: &gate.reason, presence: "", ..plain("gate", &gate.gate, status, "") };
        push(&mut out, row, None, None);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("plain"), "plain");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(number(f64::NAN), "");
        assert_eq!(number(0.5), "0.5");
    }
}
