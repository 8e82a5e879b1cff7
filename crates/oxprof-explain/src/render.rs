//! The explanation as one screen of Markdown, within a byte budget: what bounds the run,
//! the step breakdown, the findings (ranked, with evidence and the next action), the top
//! ops and the memory peak. What does not fit is counted at the end, with how to see it.

use crate::{Explanation, Severity};
use std::fmt::Write;

fn ms(value: f64) -> String {
    if value >= 100.0 { format!("{value:.0} ms") } else { format!("{value:.2} ms") }
}

/// `explanation` as Markdown of at most about `budget` bytes (sections that would pass it
/// are left out and counted in the last line).
pub fn render_markdown(explanation: &Explanation, budget: usize) -> String {
    let facts = &explanation.facts;
    let mut sections: Vec<String> = Vec::new();
    let mut head = String::new();
    let _ = writeln!(head, "# {} ({}, {} host(s))", explanation.run, explanation.kind, explanation.hosts.len());
    match explanation.bound_by {
        Some(category) => {
            let share = facts.share(category);
            let _ = writeln!(head, "\n**Bound by {}**: {:.1}% of the step.", category.label(), share.percent);
        }
        None => {
            let _ = writeln!(head, "\nNo step time to break down.");
        }
    }
    if facts.steps > 0 {
        let _ = writeln!(
            head,
            "Step time {} on average over {} steps (slowest {}).",
            ms(facts.step_time_ms),
            facts.steps,
            ms(facts.step_time_max_ms)
        );
    }
    for note in &explanation.notes {
        let _ = writeln!(head, "\n> **Note:** {note}");
    }
    sections.push(head);
    if !facts.breakdown.is_empty() {
        let mut s = String::from("\n## Step breakdown\n\n| Category | ms per step | % |\n|---|---:|---:|\n");
        for share in &facts.breakdown {
            let _ = writeln!(s, "| {} | {:.2} | {:.1} |", share.category.label(), share.ms, share.percent);
        }
        sections.push(s);
    }
    if explanation.findings.is_empty() {
        sections.push(format!("\n## Findings\n\nNone: checked {}.\n", explanation.checked.join(", ")));
    } else {
        sections.push("\n## Findings (largest time at stake first)\n".to_string());
        for (i, f) in explanation.findings.iter().enumerate() {
            let mark = match f.severity {
                Severity::Critical => "critical",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            let mut s = format!(
                "\n{}. **{}** ({mark}, `{}`): {} per step ({:.1}%)\n",
                i + 1,
                f.title,
                f.id,
                ms(f.time_at_stake_ms),
                f.percent_of_step
            );
            for e in &f.evidence {
                let _ = writeln!(s, "   - {e}");
            }
            let _ = writeln!(s, "   - next: {}", f.suggestion);
            let _ = writeln!(s, "   - see: `{}`", f.see);
            sections.push(s);
        }
    }
    if !facts.top_ops.is_empty() {
        let mut s =
            String::from("\n## Top ops by self time\n\n| Op | Side | Calls | ms per step |\n|---|---|---:|---:|\n");
        for op in facts.top_ops.iter().take(5) {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {:.2} |",
                op.name.replace('|', "\\|"),
                op.side,
                op.calls,
                op.self_ms_per_step
            );
        }
        sections.push(s);
    }
    if !facts.memory.is_empty() {
        let mut s = String::from("\n## Memory peaks\n\n");
        for m in facts.memory.iter().take(4) {
            let _ = writeln!(
                s,
                "- {}: {:.1} MiB of {:.1} MiB",
                m.name,
                m.peak_bytes as f64 / 1048576.0,
                m.capacity_bytes as f64 / 1048576.0
            );
        }
        sections.push(s);
    }
    let mut out = String::new();
    let mut left_out = 0usize;
    for section in sections {
        if left_out == 0 && out.len() + section.len() <= budget.saturating_sub(120) {
            out.push_str(&section);
        } else {
            left_out += 1;
        }
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "\n… {left_out} more section(s) past the {budget}-byte budget: --format json (or --budget) shows all."
        );
    }
    out
}
