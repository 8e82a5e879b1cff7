//! A comparison for people (`oxprof diff --format md`, the default): the two runs, the
//! gates (which tripped and why) first, then steps, input pipeline, ops and memory, and
//! what was left out. GitHub renders it as is (a CI job can post it as a comment or a step
//! summary).

use oxprof_diff::gate::{GateStatus, p_text};
use oxprof_diff::memory::{MemoryDiff, Presence};
use oxprof_diff::ops::{Basis, OpChange, OpKind, OpsDiff};
use oxprof_diff::steps::{InputDiff, StepMetric, StepSource, StepsDiff};
use oxprof_diff::{Change, DiffReport, RunDiff};
use oxprof_report::ToolId;
use std::fmt::Write;

/// The Markdown of a comparison; at most `top` rows per op table.
pub fn render(report: &DiffReport, top: usize) -> String {
    let diff = &report.diff;
    let mut out = String::from("# oxprof diff\n\n");
    runs(&mut out, diff);
    headline(&mut out, diff);
    gates(&mut out, report);
    if let Some(steps) = &diff.steps {
        steps_section(&mut out, steps, diff);
    }
    if let Some(input) = &diff.input {
        input_section(&mut out, input, pytorch_steps(diff));
    }
    for ops in &diff.ops {
        ops_section(&mut out, ops, diff, top);
    }
    if let Some(memory) = &diff.memory {
        memory_section(&mut out, memory, diff);
    }
    if !diff.notes.is_empty() {
        out.push_str("## Not compared\n\n");
        for note in &diff.notes {
            let _ = writeln!(out, "- {note}");
        }
        out.push('\n');
    }
    out
}

/// A table cell: text with `|` escaped and no line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// A name in a code span (so that `<…>` is shown, not taken for HTML); names longer than
/// [`LONG_NAME`] characters (C++ kernel names) keep their start and end.
fn code(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let shown: String = if chars.len() > LONG_NAME {
        let (head, tail) = (&chars[..LONG_NAME - 30], &chars[chars.len() - 25..]);
        format!("{}…{}", head.iter().collect::<String>(), tail.iter().collect::<String>())
    } else {
        text.to_string()
    };
    if shown.is_empty() { "—".into() } else { format!("`{}`", cell(&shown.replace('`', "'"))) }
}

/// Names longer than this are shortened in Markdown (JSON and CSV keep them whole).
const LONG_NAME: usize = 100;

/// `1 step`, `28 steps`.
fn count_of(n: impl Into<u64>, what: &str) -> String {
    let n = n.into();
    if n == 1 { format!("1 {what}") } else { format!("{n} {what}s") }
}

/// The step time's change in one sentence, before everything else.
fn headline(out: &mut String, diff: &RunDiff) {
    let Some(step) = diff.steps.as_ref().and_then(|s| s.metrics.first()) else { return };
    let c = &step.change;
    let verdict = match c.beyond_noise {
        Some(true) => "beyond noise",
        Some(false) => "within noise",
        None => "no noise verdict (fewer than the steps a test needs)",
    };
    let test = step.test.as_ref().map_or(String::new(), |t| format!(", p {}", p_text(t.p_value)));
    let _ = writeln!(out, "**Step time {:.3} → {:.3} ms ({}), {verdict}{test}.**\n", c.a, c.b, relative(c));
}

fn runs(out: &mut String, diff: &RunDiff) {
    out.push_str("| | run | device | steps |\n|---|---|---|---:|\n");
    for (side, info) in [("A (baseline)", &diff.a), ("B", &diff.b)] {
        let device = if info.device_type.is_empty() { "—" } else { &info.device_type };
        let _ = writeln!(out, "| {side} | {} | {} | {} |", cell(&info.label), cell(device), info.steps);
    }
    out.push('\n');
}

fn gates(out: &mut String, report: &DiffReport) {
    if report.gates.is_empty() {
        return;
    }
    let tripped = report.gates.iter().filter(|g| g.tripped()).count();
    let headline = if tripped > 0 {
        format!("**FAILED: {tripped} of {} gates tripped**", report.gates.len())
    } else {
        format!("**Passed: no gate of {} tripped**", report.gates.len())
    };
    let _ = writeln!(out, "## Gates\n\n{headline}\n\n| gate | result | why |\n|---|---|---|");
    for gate in &report.gates {
        let status = match gate.status {
            GateStatus::Tripped => "**tripped**",
            GateStatus::WithinNoise => "within noise",
            GateStatus::NoVerdict => "no verdict",
            GateStatus::Passed => "passed",
            GateStatus::NoData => "no data",
        };
        let _ = writeln!(out, "| {} | {status} | {} |", code(&gate.gate), cell(&gate.reason));
    }
    out.push('\n');
}

fn relative(change: &Change) -> String {
    match change.relative {
        Some(r) => format!("{:+.1}%", 100.0 * r),
        None => "new".into(),
    }
}

fn verdict(change: &Change) -> &'static str {
    match change.beyond_noise {
        Some(true) => "**yes**",
        Some(false) => "no",
        None => "—",
    }
}

fn test_cells(metric: &StepMetric) -> (String, String) {
    match &metric.test {
        Some(t) => (
            p_text(t.p_value).trim_start_matches("= ").to_string(),
            t.hedges_g.map_or("∞".into(), |g| format!("{g:.2}")),
        ),
        None => ("—".into(), "—".into()),
    }
}

/// Whether the steps are torch-tb-profiler's (PyTorch runs).
fn pytorch_steps(diff: &RunDiff) -> bool {
    diff.steps.as_ref().is_some_and(|s| s.source == StepSource::Pytorch)
}

fn steps_section(out: &mut String, steps: &StepsDiff, diff: &RunDiff) {
    let options = &diff.options;
    let whose = match steps.source {
        StepSource::Xprof => "",
        StepSource::Pytorch => {
            " (every `ProfilerStep#N`, torch-tb-profiler's categories: each instant goes to the first of Kernel, \
             Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec active then, Other to none)"
        }
    };
    let _ = writeln!(
        out,
        "## Steps\n\n{} in A, {} in B{whose} (mean per step). Beyond noise: Welch's t-test on the per-step times, \
         p < {}, with at least {} on each side.\n",
        count_of(steps.steps_a as u64, "step"),
        count_of(steps.steps_b as u64, "step"),
        options.alpha,
        count_of(options.min_steps as u64, "step")
    );
    out.push_str(
        "| | A (ms) | B (ms) | change (ms) | change | p | Hedges' g | beyond noise |\n\
         |---|---:|---:|---:|---:|---:|---:|:---:|\n",
    );
    let mut zero = Vec::new();
    for (i, metric) in steps.metrics.iter().enumerate() {
        let c = &metric.change;
        if i > 0 && c.a == 0.0 && c.b == 0.0 {
            zero.push(metric.label.to_lowercase());
            continue;
        }
        let (p, g) = test_cells(metric);
        let label = if i == 0 { format!("**{}**", metric.label) } else { metric.label.clone() };
        let _ = writeln!(
            out,
            "| {label} | {:.3} | {:.3} | {:+.3} | {} | {p} | {g} | {} |",
            c.a,
            c.b,
            c.delta,
            relative(c),
            verdict(c)
        );
    }
    if !zero.is_empty() {
        let _ = write!(out, "\nZero in both runs: {}.\n", zero.join(", "));
    }
    out.push('\n');
}

fn input_section(out: &mut String, input: &InputDiff, pytorch: bool) {
    let c = &input.share.change;
    let (p, g) = test_cells(&input.share);
    let label = if pytorch { "DataLoader share of step time" } else { "Input-bound share of step time" };
    let _ = writeln!(
        out,
        "## Input pipeline\n\n| | A | B | change | p | Hedges' g | beyond noise |\n|---|---:|---:|---:|---:|---:|:---:|\n\
         | {label} | {:.1}% | {:.1}% | {:+.1} points | {p} | {g} | {} |\n",
        c.a,
        c.b,
        c.delta,
        verdict(c)
    );
    for (side, classification, statement) in
        [("A", &input.classification_a, &input.statement_a), ("B", &input.classification_b, &input.statement_b)]
    {
        if !statement.is_empty() {
            let _ = writeln!(out, "- {side} ({classification}): {}", cell(statement));
        }
    }
    out.push('\n');
}

fn basis_text(basis: &Basis, pytorch: bool) -> String {
    match basis {
        Basis::PerStep { steps_a, steps_b } => {
            format!(
                "Times and counts per step (the whole profile's totals over {} in A, {} in B)",
                count_of(*steps_a, "step"),
                count_of(*steps_b, "step")
            )
        }
        // PyTorch runs have steps, but their op tables total the whole trace.
        Basis::WholeProfile if pytorch => "Times and counts over each whole trace".into(),
        Basis::WholeProfile => "Times and counts over each whole profile (a run has no steps)".into(),
    }
}

fn ops_section(out: &mut String, ops: &OpsDiff, diff: &RunDiff, top: usize) {
    if ops.total_device_self_time_us.is_some() {
        return pytorch_ops_section(out, ops, diff, top);
    }
    let t = &ops.total_self_time_us;
    let _ = writeln!(
        out,
        "## {} (`{}`)\n\n{}. Total self time {:.1} → {:.1} µs ({}). {} in both runs, {} only in A, {} only in B. Beyond \
         noise: a change of at least {}% in an op taking at least {}% of the total.\n",
        ops.kind.title(),
        ops.kind.tool(),
        basis_text(&ops.basis, pytorch_steps(diff)),
        t.a,
        t.b,
        relative(t),
        ops.counts.matched,
        ops.counts.only_in_a,
        ops.counts.only_in_b,
        100.0 * diff.options.op_min_relative,
        100.0 * diff.options.op_min_share,
    );
    let (regressions, improvements) = split(ops);
    matched_table(out, "Largest regressions (self time)", ops.kind, &regressions, top);
    matched_table(out, "Largest improvements (self time)", ops.kind, &improvements, top);
    let unchanged = ops.matched.len() - regressions.len() - improvements.len();
    if unchanged > 0 {
        let _ = writeln!(out, "{} in both runs with the same self time.\n", count_of(unchanged as u64, "op"));
    }
    single_table(out, "Only in A", ops.kind, &ops.only_in_a, ops.counts.only_in_a, top, |c| c.a);
    single_table(out, "Only in B", ops.kind, &ops.only_in_b, ops.counts.only_in_b, top, |c| c.b);
}

/// Matched ops whose own time grew (largest first) and shrank (largest first).
fn split(ops: &OpsDiff) -> (Vec<&OpChange>, Vec<&OpChange>) {
    let regressions: Vec<&OpChange> = ops.matched.iter().filter(|o| o.own_time_delta() > 0.0).collect();
    let mut improvements: Vec<&OpChange> = ops.matched.iter().filter(|o| o.own_time_delta() < 0.0).collect();
    improvements.sort_by(|x, y| x.own_time_delta().total_cmp(&y.own_time_delta()));
    (regressions, improvements)
}

/// PyTorch operators (torch-tb-profiler's operator view): host and device times.
fn pytorch_ops_section(out: &mut String, ops: &OpsDiff, diff: &RunDiff, top: usize) {
    let (h, d) = (&ops.total_self_time_us, ops.total_device_self_time_us.unwrap_or(Change::new(0.0, 0.0)));
    let _ = writeln!(
        out,
        "## PyTorch operators (`{}`)\n\n{}. Total host self time {:.1} → {:.1} µs ({}), device self time {:.1} → \
         {:.1} µs ({}). {} in both runs, {} only in A, {} only in B. Ordered by the change of host plus device self \
         time. Beyond noise: a change of at least {}% in an operator taking at least {}% of the total (host or \
         device).\n",
        ops.tool.unwrap_or(ToolId::PYTORCH_OP_STATS),
        basis_text(&ops.basis, pytorch_steps(diff)),
        h.a,
        h.b,
        relative(h),
        d.a,
        d.b,
        relative(&d),
        ops.counts.matched,
        ops.counts.only_in_a,
        ops.counts.only_in_b,
        100.0 * diff.options.op_min_relative,
        100.0 * diff.options.op_min_share,
    );
    let (regressions, improvements) = split(ops);
    #[rustfmt::skip]
    let lists = [("Largest regressions (host + device self time)", regressions), ("Largest improvements (host + device self time)", improvements)];
    for (title, rows) in lists {
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "### {title}\n\n| operator | host self A (µs) | B | change | device self A (µs) | B | change | host total A \
             (µs) | B | device total A (µs) | B | calls A | B | beyond noise |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|"
        );
        for op in rows.iter().take(top) {
            let (s, ds) = (&op.self_time_us, op.device_self_time_us.unwrap_or(Change::new(0.0, 0.0)));
            let dt = op.device_time_us.unwrap_or(Change::new(0.0, 0.0));
            let beyond = match (s.beyond_noise, ds.beyond_noise) {
                (Some(true), _) | (_, Some(true)) => "**yes**",
                (None, None) => "—",
                _ => "no",
            };
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {:+.1} ({}) | {:.1} | {:.1} | {:+.1} ({}) | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {beyond} |",
                op_name_cell(op),
                s.a,
                s.b,
                s.delta,
                relative(s),
                ds.a,
                ds.b,
                ds.delta,
                relative(&ds),
                op.time_us.a,
                op.time_us.b,
                dt.a,
                dt.b,
                op.count.a,
                op.count.b,
            );
        }
        more(out, top.min(rows.len()), rows.len());
    }
    let (grew, shrank) = split(ops);
    let unchanged = ops.matched.len() - grew.len() - shrank.len();
    if unchanged > 0 {
        let _ = writeln!(
            out,
            "{} in both runs with the same host and device self time.\n",
            count_of(unchanged as u64, "operator")
        );
    }
    for (title, list, total, side) in [
        ("Only in A", &ops.only_in_a, ops.counts.only_in_a, (|c: &Change| c.a) as fn(&Change) -> f64),
        ("Only in B", &ops.only_in_b, ops.counts.only_in_b, |c: &Change| c.b),
    ] {
        if list.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "### {title}\n\n| operator | host self (µs) | device self (µs) | host total (µs) | device total (µs) | calls |\n\
             |---|---:|---:|---:|---:|---:|"
        );
        let zero = Change::new(0.0, 0.0);
        for op in list.iter().take(top) {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                op_name_cell(op),
                side(&op.self_time_us),
                side(&op.device_self_time_us.unwrap_or(zero)),
                side(&op.time_us),
                side(&op.device_time_us.unwrap_or(zero)),
                side(&op.count)
            );
        }
        more(out, top.min(list.len()), total.max(list.len()));
    }
}

/// An operator's normalised name and the names behind it.
fn op_name_cell(op: &OpChange) -> String {
    let mut name = code(&op.name);
    if !op.names.is_empty() {
        let shown: Vec<String> = op.names.iter().take(3).map(|n| code(n)).collect();
        let _ = write!(name, " ({})", shown.join(", "));
    }
    name
}

/// The header cells naming an op: name, then where/what it is.
fn name_headers(kind: OpKind) -> (&'static str, &'static str) {
    match kind {
        OpKind::FrameworkOp => ("op", "| where | type "),
        OpKind::Kernel => ("kernel", "| launched by "),
        OpKind::HloOp => ("HLO op", "| category | framework op "),
    }
}

fn name_cells(kind: OpKind, op: &OpChange) -> String {
    let mut name = code(&op.name);
    // The original names behind a normalised one (`copy.N` is `copy.1` in A, `copy.3` in B);
    // long names (kernels) are only counted, their shortened forms would look alike.
    if op.names.iter().all(|n| n.chars().count() <= LONG_NAME) && !op.names.is_empty() {
        let shown: Vec<String> = op.names.iter().take(3).map(|n| code(n)).collect();
        let _ = write!(name, " ({})", shown.join(", "));
    } else if op.names.len() > 1 {
        let _ = write!(name, " ({} names)", op.names.len());
    }
    match kind {
        OpKind::FrameworkOp => format!("{name} | {} | {}", op.context, cell(&op.category)),
        OpKind::Kernel => format!("{name} | {}", code(&op.context)),
        OpKind::HloOp => format!("{name} | {} | {}", cell(&op.category), code(&op.context)),
    }
}

fn more(out: &mut String, shown: usize, total: usize) {
    if total > shown {
        let _ =
            writeln!(out, "\n… and {} more (`--format json` or `csv` lists all, `--top N` shows more).", total - shown);
    }
    out.push('\n');
}

fn matched_table(out: &mut String, title: &str, kind: OpKind, ops: &[&OpChange], top: usize) {
    if ops.is_empty() {
        return;
    }
    let (name, extra) = name_headers(kind);
    let columns = extra.matches('|').count();
    let _ = writeln!(
        out,
        "### {title}\n\n| {name} {extra}| self time A (µs) | B | change | time A (µs) | B | count A | B | mean A (µs) | B | beyond \
         noise |\n|---{}|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
        "|---".repeat(columns)
    );
    for op in ops.iter().take(top) {
        let s = &op.self_time_us;
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:+.1} ({}) | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {} |",
            name_cells(kind, op),
            s.a,
            s.b,
            s.delta,
            relative(s),
            op.time_us.a,
            op.time_us.b,
            op.count.a,
            op.count.b,
            op.mean_us.a,
            op.mean_us.b,
            verdict(s)
        );
    }
    more(out, top.min(ops.len()), ops.len());
}

fn single_table(
    out: &mut String,
    title: &str,
    kind: OpKind,
    ops: &[OpChange],
    total: usize,
    top: usize,
    side: fn(&Change) -> f64,
) {
    if ops.is_empty() {
        return;
    }
    let (name, extra) = name_headers(kind);
    let columns = extra.matches('|').count();
    let _ = writeln!(
        out,
        "### {title}\n\n| {name} {extra}| self time (µs) | time (µs) | count | mean (µs) |\n|---{}|---:|---:|---:|---:|",
        "|---".repeat(columns)
    );
    for op in ops.iter().take(top) {
        let _ = writeln!(
            out,
            "| {} | {:.1} | {:.1} | {:.1} | {:.2} |",
            name_cells(kind, op),
            side(&op.self_time_us),
            side(&op.time_us),
            side(&op.count),
            side(&op.mean_us)
        );
    }
    more(out, top.min(ops.len()), total.max(ops.len()));
}

fn mib(bytes: f64) -> String {
    format!("{:.2}", bytes / (1024.0 * 1024.0))
}

fn memory_section(out: &mut String, memory: &MemoryDiff, diff: &RunDiff) {
    let _ = write!(
        out,
        "## Memory\n\nPer allocator: the peak in use within the profile (stack + heap), the allocator's lifetime peak, \
         and fragmentation at the peak. Beyond noise: at least {} MiB and {}% of A's peak.\n\n",
        diff.options.memory_min_bytes / (1024.0 * 1024.0),
        100.0 * diff.options.memory_min_relative
    );
    out.push_str(
        "| allocator | peak A (MiB) | B | change | beyond noise | lifetime peak A (MiB) | B | fragmentation A | B |\n\
         |---|---:|---:|---:|:---:|---:|---:|---:|---:|\n",
    );
    for a in &memory.allocators {
        let presence = match a.presence {
            Presence::Both => "",
            Presence::OnlyA => " (only A)",
            Presence::OnlyB => " (only B)",
        };
        let p = &a.peak_bytes;
        let _ = writeln!(
            out,
            "| {}{presence} | {} | {} | {} MiB ({}) | {} | {} | {} | {:.3} | {:.3} |",
            code(&a.allocator),
            mib(p.a),
            mib(p.b),
            if p.delta < 0.0 { mib(p.delta) } else { format!("+{}", mib(p.delta)) },
            relative(p),
            verdict(p),
            mib(a.lifetime_peak_bytes.a),
            mib(a.lifetime_peak_bytes.b),
            a.fragmentation.a,
            a.fragmentation.b
        );
    }
    out.push('\n');
}
