//! A bounded window of a report's table ([`TableWindow`]): some of its rows, as JSON values
//! and as the text people read, and what was left out with how to get more. [`fit`] cuts
//! the windows of one answer until its JSON and its Markdown both fit the byte budget.

use oxprof_report::Table;
use oxprof_wire::datatable::CellValue;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Longest text one cell keeps (in characters); a longer one is cut, and counted.
pub const MAX_CELL_CHARS: usize = 300;

/// One column of a window.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Column {
    /// Machine name (what `by` names, what SQL names).
    pub name: String,
    /// What people read.
    pub label: String,
}

/// Some rows of a table, and what was left out.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TableWindow {
    /// The table's name in its report.
    pub table: String,
    /// Its heading, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Facts about the whole table (key, text), in reading order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub facts: Vec<(String, String)>,
    /// Its columns.
    pub columns: Vec<Column>,
    /// The rows shown, one value per column (numbers as numbers; NaN and infinities as
    /// strings).
    pub rows: Vec<Vec<Value>>,
    /// Index in the whole table of the first row shown.
    pub offset: usize,
    /// Rows the whole table has.
    pub total_rows: usize,
    /// Cells whose text was cut at [`MAX_CELL_CHARS`] characters.
    pub cut_cells: usize,
    /// What was left out and how to get more (`None`: nothing was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
    /// Whether the byte budget (rather than the row limit) cut the rows.
    #[serde(skip)]
    pub(crate) cut_by_budget: bool,
    /// The cells as people read them (the table's number formats), for Markdown.
    #[serde(skip)]
    pub(crate) texts: Vec<Vec<String>>,
}

/// A cell as JSON: numbers as numbers, text cut at [`MAX_CELL_CHARS`] (`cut` counts it).
fn cell_json(cell: &CellValue, cut: &mut usize) -> Value {
    match cell {
        CellValue::Number(v) => {
            serde_json::Number::from_f64(*v).map_or_else(|| Value::String(v.to_string()), Value::Number)
        }
        CellValue::Int(n) => Value::from(*n),
        CellValue::Text(text) => Value::String(cut_text(text, cut)),
        CellValue::Bool(flag) => Value::Bool(*flag),
        CellValue::Null => Value::Null,
    }
}

fn cut_text(text: &str, cut: &mut usize) -> String {
    match text.char_indices().nth(MAX_CELL_CHARS) {
        Some((at, _)) => {
            *cut += 1;
            format!("{}…", &text[..at])
        }
        None => text.to_string(),
    }
}

impl TableWindow {
    /// Rows `offset..offset + limit` of `table` (in the order of `order`, indices into its
    /// rows; `None`: the table's own order).
    pub fn of(table: &Table, order: Option<&[usize]>, offset: usize, limit: usize) -> TableWindow {
        let all: Vec<usize>;
        let order = match order {
            Some(order) => order,
            None => {
                all = (0..table.rows.len()).collect();
                &all
            }
        };
        let picked: Vec<usize> = order.iter().copied().skip(offset).take(limit).collect();
        let mut cut = 0;
        let rows: Vec<Vec<Value>> =
            picked.iter().map(|&i| table.rows[i].iter().map(|c| cell_json(c, &mut cut)).collect()).collect();
        let mut ignored = 0;
        let texts = picked
            .iter()
            .map(|&i| {
                table.rows[i]
                    .iter()
                    .enumerate()
                    .map(|(c, cell)| match cell {
                        CellValue::Number(v) if !v.is_finite() => "n/a".to_string(),
                        _ => cut_text(&table.cell_text(c, cell), &mut ignored),
                    })
                    .collect()
            })
            .collect();
        let facts = table.facts.iter().map(|(k, v)| (k.clone(), cut_text(v, &mut cut))).collect();
        let mut window = TableWindow {
            table: table.name.clone(),
            title: table.title.clone(),
            facts,
            columns: table.columns.iter().map(|c| Column { name: c.name.clone(), label: c.label.clone() }).collect(),
            rows,
            offset: offset.min(order.len()),
            total_rows: order.len(),
            cut_cells: cut,
            left_out: None,
            cut_by_budget: false,
            texts,
        };
        window.say_left_out();
        window
    }

    /// Drops the last row shown (the budget's cut).
    fn drop_last(&mut self) {
        self.rows.pop();
        self.texts.pop();
        self.cut_by_budget = true;
        self.say_left_out();
    }

    /// Index after the last row shown.
    pub fn end(&self) -> usize {
        self.offset + self.rows.len()
    }

    /// `left_out` from what is shown: the rows after the window (with the `--offset` that
    /// shows them), the rows before it, and cut cells.
    fn say_left_out(&mut self) {
        let mut parts = Vec::new();
        let after = self.total_rows.saturating_sub(self.end());
        if after > 0 {
            let why = if self.cut_by_budget { " (the byte budget was reached: --budget raises it)" } else { "" };
            parts.push(format!("{after} more rows{why}: --offset {}", self.end()));
        }
        if self.offset > 0 {
            parts.push(format!("{} rows before these: --offset 0", self.offset));
        }
        if self.cut_cells > 0 {
            parts.push(format!("{} cells cut at {MAX_CELL_CHARS} characters", self.cut_cells));
        }
        self.left_out = (!parts.is_empty()).then(|| parts.join("; "));
    }

    /// The window as Markdown: heading, facts, rows, and the line saying what was left out
    /// (or that every row is shown).
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        out.push_str(&format!("### {}\n\n", self.title.as_deref().unwrap_or(&self.table)));
        for (key, text) in self.facts.iter().filter(|(_, t)| !t.is_empty()) {
            out.push_str(&format!("- **{key}**: {}\n", text.replace('\n', " ")));
        }
        if !self.facts.is_empty() {
            out.push('\n');
        }
        if !self.rows.is_empty() {
            let header: Vec<&str> = self.columns.iter().map(|c| c.label.as_str()).collect();
            out.push_str(&oxprof_api::table::markdown_table(&header, &self.texts));
            out.push('\n');
        }
        match &self.left_out {
            Some(left_out) => out.push_str(&format!(
                "Rows {}–{} of {} shown; … {left_out}\n",
                (self.offset + 1).min(self.end()),
                self.end(),
                self.total_rows
            )),
            None => out.push_str(&format!("All {} rows shown.\n", self.total_rows)),
        }
        out
    }
}

/// A result whose tables are cut to fit a budget.
pub trait Windowed: Serialize {
    /// Its windows, in reading order.
    fn windows_mut(&mut self) -> Vec<&mut TableWindow>;
    /// Its Markdown.
    fn markdown(&self) -> String;
}

/// The length of `result`'s JSON (compact, as the CLI prints it and MCP sends it).
pub fn json_len<T: Serialize>(result: &T) -> usize {
    serde_json::to_vec(result).map_or(0, |v| v.len())
}

/// Cuts `result`'s windows, the one showing most rows first (the last of those on a tie),
/// until its JSON and its Markdown are both within `budget` bytes or nothing is left to cut.
/// Each cut is said in the window's `left_out`. Row sizes are estimated first, so a large
/// window costs one pass, then checked exactly.
pub fn fit<T: Windowed>(result: &mut T, budget: usize) {
    let over = |r: &T| json_len(r) > budget || r.markdown().len() > budget;
    if !over(result) {
        return;
    }
    // Estimate: each row's JSON and Markdown sizes; drop rows until the estimate fits.
    let mut total_json = json_len(result);
    let mut total_md = result.markdown().len();
    let sizes: Vec<Vec<(usize, usize)>> = result
        .windows_mut()
        .iter()
        .map(|w| {
            w.rows
                .iter()
                .zip(&w.texts)
                .map(|(row, texts)| (json_len(row) + 1, texts.iter().map(|t| t.len() + 3).sum::<usize>() + 2))
                .collect()
        })
        .collect();
    let mut shown: Vec<usize> = sizes.iter().map(Vec::len).collect();
    while total_json > budget || total_md > budget {
        let Some(widest) = (0..shown.len()).filter(|&i| shown[i] > 0).max_by_key(|&i| (shown[i], i)) else { break };
        shown[widest] -= 1;
        let (json, md) = sizes[widest][shown[widest]];
        total_json = total_json.saturating_sub(json);
        total_md = total_md.saturating_sub(md);
    }
    for (window, keep) in result.windows_mut().into_iter().zip(&shown) {
        while window.rows.len() > *keep {
            window.drop_last();
        }
    }
    // Exactly: the estimate leaves out the `left_out` lines it changed.
    while over(result) {
        let mut windows = result.windows_mut();
        let widest =
            windows.iter().enumerate().filter(|(_, w)| !w.rows.is_empty()).max_by_key(|(i, w)| (w.rows.len(), *i));
        let Some((i, _)) = widest else { break };
        windows[i].drop_last();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxprof_report::{ColumnKind, NumberFormat};

    #[derive(Serialize)]
    struct One {
        window: TableWindow,
    }

    impl Windowed for One {
        fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
            vec![&mut self.window]
        }
        fn markdown(&self) -> String {
            self.window.markdown()
        }
    }

    fn table(rows: usize) -> Table {
        let mut t = Table::new("t").column("name", "Name", ColumnKind::Text, NumberFormat::Shortest).column(
            "us",
            "Time (µs)",
            ColumnKind::Number,
            NumberFormat::Fixed(1),
        );
        for i in 0..rows {
            t.push_row(vec![CellValue::Text(format!("op{i}")), CellValue::Number(i as f64)]);
        }
        t
    }

    #[test]
    fn a_window_says_what_it_left_out() {
        let w = TableWindow::of(&table(432), None, 20, 20);
        assert_eq!(w.rows.len(), 20);
        assert_eq!(w.left_out.as_deref(), Some("392 more rows: --offset 40; 20 rows before these: --offset 0"));
        assert!(
            w.markdown()
                .ends_with("Rows 21–40 of 432 shown; … 392 more rows: --offset 40; 20 rows before these: --offset 0\n")
        );
        let all = TableWindow::of(&table(3), None, 0, 20);
        assert_eq!(all.left_out, None);
        assert!(all.markdown().ends_with("All 3 rows shown.\n"));
    }

    #[test]
    fn fitting_cuts_rows_until_both_renderings_fit_and_says_so() {
        let mut one = One { window: TableWindow::of(&table(5000), None, 0, 5000) };
        fit(&mut one, 2048);
        assert!(json_len(&one) <= 2048 && one.markdown().len() <= 2048);
        let shown = one.window.rows.len();
        assert!(shown > 10, "{shown}");
        let left_out = one.window.left_out.clone().unwrap_or_default();
        assert!(left_out.contains("--budget") && left_out.contains(&format!("--offset {shown}")), "{left_out}");
    }

    #[test]
    fn long_cells_are_cut_and_counted() {
        let mut t = table(0);
        t.push_row(vec![CellValue::Text("x".repeat(1000)), CellValue::Number(1.0)]);
        let w = TableWindow::of(&t, None, 0, 20);
        assert_eq!(w.cut_cells, 1);
        assert_eq!(w.rows[0][0].as_str().map(|s| s.chars().count()), Some(MAX_CELL_CHARS + 1));
        assert!(w.left_out.unwrap_or_default().contains("1 cells cut"));
    }
}
