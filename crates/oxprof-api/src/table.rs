//! Tables for people: a report's typed [`Table`]s as GitHub-flavoured Markdown (CSV like
//! XProf's `/data_csv` is `oxprof_wire::csv`).

use oxprof_report::Table;
use oxprof_wire::datatable::CellValue;

/// XProf's HTML in text (links in advice, line breaks) as Markdown: `<a href="U" …>T</a>`
/// becomes `[T](U)`, `<br>` a space; other text is left as it is.
fn html_to_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let tail = &rest[start..];
        let link = tail.strip_prefix("<a ").and_then(|after| {
            let open_end = after.find('>')?;
            let href = after[..open_end].split("href=\"").nth(1)?.split('"').next()?;
            let body = &after[open_end + 1..];
            let close = body.find("</a>")?;
            Some((format!("[{}]({href})", &body[..close]), 3 + open_end + 1 + close + 4))
        });
        if let Some((markdown, consumed)) = link {
            out.push_str(&markdown);
            rest = &tail[consumed..];
        } else if let Some(after) = ["<br>", "<br/>", "<br />"].iter().find_map(|br| tail.strip_prefix(br)) {
            out.push(' ');
            rest = after;
        } else {
            out.push('<');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// A GitHub-flavoured Markdown table from a header and rows of cell texts (HTML links as
/// Markdown links, `|` escaped, line breaks as spaces).
pub fn markdown_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| html_to_markdown(s).replace('|', "\\|").replace('\n', " ");
    let mut out = format!("| {} |\n", header.iter().map(|l| esc(l)).collect::<Vec<_>>().join(" | "));
    out.push_str(&format!("|{}\n", "---|".repeat(header.len().max(1))));
    for row in rows {
        out.push_str(&format!("| {} |\n", row.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")));
    }
    out
}

/// What people read for a number that is not one: XProf prints NaN and infinities as
/// `-nan`, `nan`, `inf` (a standard deviation of no samples, a rate over no time); its JSON
/// keeps them, Markdown says "n/a".
const NOT_A_NUMBER: &str = "n/a";

/// `text` unless it is XProf's text of a NaN or an infinity.
fn readable_fact(text: &str) -> &str {
    match text.trim().parse::<f64>() {
        Ok(v) if !v.is_finite() => NOT_A_NUMBER,
        _ => text,
    }
}

/// Fact texts with at least this many words read as sentences.
const SENTENCE_WORDS: usize = 5;

/// One table as Markdown: its title as a heading; its facts as a list (empty ones left
/// out; sentences such as XProf's conclusions and advice first, then the figures in their
/// order; NaN and infinities as "n/a"); then its rows (at most [`Table::shown_rows`], under "N of M …:" when the table
/// says what its rows are). Empty when the table has neither facts nor rows.
pub fn table_to_markdown(table: &Table) -> String {
    let mut part = String::new();
    let mut facts: Vec<(&str, &str)> =
        table.facts.iter().map(|(k, v)| (k.as_str(), readable_fact(v))).filter(|(_, text)| !text.is_empty()).collect();
    // Stable: sentences keep their order among themselves, as do figures.
    facts.sort_by_key(|(_, text)| text.split_whitespace().count() < SENTENCE_WORDS);
    for (key, text) in facts {
        part.push_str(&format!("- **{key}**: {}\n", html_to_markdown(text).replace('\n', " ")));
    }
    if !table.rows.is_empty() {
        if !part.is_empty() {
            part.push('\n');
        }
        let shown = table.shown_rows.map_or(table.rows.len(), |n| n.min(table.rows.len()));
        if let Some(description) = &table.rows_description {
            part.push_str(&format!("{shown} of {} {description}:\n\n", table.rows.len()));
        }
        let header: Vec<&str> = table.columns.iter().map(|c| c.label.as_str()).collect();
        let rows: Vec<Vec<String>> = table.rows[..shown]
            .iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(i, cell)| match cell {
                        CellValue::Number(v) if !v.is_finite() => NOT_A_NUMBER.to_string(),
                        _ => table.cell_text(i, cell),
                    })
                    .collect()
            })
            .collect();
        part.push_str(&markdown_table(&header, &rows));
    }
    match (&table.title, part.is_empty()) {
        (_, true) => part,
        (Some(title), false) => format!("## {title}\n\n{part}"),
        (None, false) => part,
    }
}

/// Every table as Markdown (see [`table_to_markdown`]), one after another; tables with
/// nothing to show are skipped.
pub fn tables_to_markdown(tables: &[Table]) -> String {
    tables.iter().map(table_to_markdown).filter(|part| !part.is_empty()).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_report::{ColumnKind, NumberFormat};

    #[test]
    fn renders_facts_then_rows() {
        let mut table = Table::new("t")
            .fact("verdict", "input-bound")
            .fact("empty", "")
            .column("a", "A", ColumnKind::Text, NumberFormat::Shortest)
            .column("b", "B|x", ColumnKind::Number, NumberFormat::Shortest);
        table.push_row(vec![CellValue::Text("x\"y".into()), CellValue::Number(1.5)]);
        assert_eq!(
            table_to_markdown(&table),
            "- **verdict**: input-bound\n\n| A | B\\|x |\n|---|---|\n| x\"y | 1.5 |\n"
        );
        assert_eq!(tables_to_markdown(&[Table::new("nothing"), table.clone()]), table_to_markdown(&table));
    }

    #[test]
    fn sentences_come_first_and_links_become_markdown() {
        let table = Table::new("t")
            .fact("a_figure", "1.5")
            .fact("b_conclusion", "Your program is HIGHLY input-bound because of <b>this</b>.")
            .fact(
                "c_advice",
                "Try <a href=\"https://x.org/map\" target=\"_blank\">Dataset map()</a> or<br/>more <a bad",
            );
        assert_eq!(
            table_to_markdown(&table),
            "- **b_conclusion**: Your program is HIGHLY input-bound because of <b>this</b>.\n\
             - **c_advice**: Try [Dataset map()](https://x.org/map) or more <a bad\n\
             - **a_figure**: 1.5\n"
        );
    }

    #[test]
    fn nan_and_infinities_read_n_a() {
        // XProf's `-nan` standard deviations (GPU-multi-worker's input pipeline) and NaN cells.
        let mut table = Table::new("t")
            .fact("compile_time_ms_sdv", "-nan")
            .fact("rate", "inf")
            .fact("steptime_ms_standard_deviation", "0.0")
            .fact("note", "nan is a word in this sentence")
            .column("v", "V", ColumnKind::Number, NumberFormat::Fixed(2));
        table.push_row(vec![CellValue::Number(f64::NAN)]);
        table.push_row(vec![CellValue::Number(f64::NEG_INFINITY)]);
        table.push_row(vec![CellValue::Number(1.0)]);
        let md = table_to_markdown(&table);
        assert_eq!(
            md,
            "- **note**: nan is a word in this sentence\n\
             - **compile_time_ms_sdv**: n/a\n\
             - **rate**: n/a\n\
             - **steptime_ms_standard_deviation**: 0.0\n\n\
             | V |\n|---|\n| n/a |\n| n/a |\n| 1.00 |\n"
        );
        assert!(!md.to_lowercase().contains("-nan") && !md.contains("inf"), "{md}");
    }

    #[test]
    fn titles_and_row_counts() {
        let mut table = Table::new("t")
            .title("GPU_0_bfc")
            .rows_described("allocations, largest first", Some(1))
            .column("n", "N", ColumnKind::Integer, NumberFormat::Shortest);
        table.push_row(vec![CellValue::Int(2)]);
        table.push_row(vec![CellValue::Int(1)]);
        assert_eq!(
            table_to_markdown(&table),
            "## GPU_0_bfc\n\n1 of 2 allocations, largest first:\n\n| N |\n|---|\n| 2 |\n"
        );
    }
}
