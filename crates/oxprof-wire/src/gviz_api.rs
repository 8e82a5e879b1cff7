//! Python's `gviz_api.DataTable.ToJSon()`, as the old TensorBoard profiler's Python code
//! wrote its tables (e.g. tf.data bottleneck analysis): keys in insertion order (`cols`,
//! `rows`, then `p`; `id`, `label`, `type`; `v`, then `f`), compact separators, strings as
//! `json` with `ensure_ascii=False`, integers as integers, floats as Python's `repr`.

use crate::csv::python_float_repr;
use crate::datatable::{Cell, CellValue, DataTable};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The table's JSON text. Custom properties are written in key order; a [`CellValue::Null`]
/// cell is `null` (gviz's `None`).
pub fn to_json(table: &DataTable) -> String {
    let mut out = String::new();
    write_table(table, &mut out);
    out
}

/// Several tables as the JSON array `[t1,t2,…]`.
pub fn to_json_array(tables: &[DataTable]) -> String {
    let mut out = String::from("[");
    for (i, table) in tables.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_table(table, &mut out);
    }
    out.push(']');
    out
}

fn write_table(table: &DataTable, out: &mut String) {
    out.push_str("{\"cols\":[");
    for (i, column) in table.cols.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"id\":");
        write_string(out, &column.id);
        out.push_str(",\"label\":");
        write_string(out, &column.label);
        out.push_str(",\"type\":");
        write_string(out, column.ty.as_str());
        write_props(out, &column.props);
        out.push('}');
    }
    out.push_str("],\"rows\":[");
    for (i, row) in table.rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"c\":[");
        for (j, cell) in row.cells.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            write_cell(cell, out);
        }
        out.push(']');
        write_props(out, &row.props);
        out.push('}');
    }
    out.push(']');
    write_props(out, &table.props);
    out.push('}');
}

fn write_cell(cell: &Cell, out: &mut String) {
    if cell.value == CellValue::Null {
        out.push_str("null");
        return;
    }
    out.push_str("{\"v\":");
    match &cell.value {
        CellValue::Number(v) if v.is_nan() => out.push_str("NaN"),
        CellValue::Number(v) if v.is_infinite() => out.push_str(if *v > 0.0 { "Infinity" } else { "-Infinity" }),
        CellValue::Number(v) => out.push_str(&python_float_repr(*v)),
        CellValue::Int(v) => {
            let _ = write!(out, "{v}");
        }
        CellValue::Text(text) => write_string(out, text),
        CellValue::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        CellValue::Null => out.push_str("null"),
    }
    if let Some(formatted) = &cell.formatted {
        out.push_str(",\"f\":");
        write_string(out, formatted);
    }
    write_props(out, &cell.props);
    out.push('}');
}

/// `,"p":{…}` when there are properties.
fn write_props(out: &mut String, props: &BTreeMap<String, String>) {
    if props.is_empty() {
        return;
    }
    out.push_str(",\"p\":{");
    for (i, (key, value)) in props.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_string(out, value);
    }
    out.push('}');
}

/// A JSON string as Python's `json` (`ensure_ascii=False`) writes it.
fn write_string(out: &mut String, s: &str) {
    crate::json_string::write_escaped(out, s, crate::json_string::is_control);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatable::ColumnType;

    #[test]
    fn writes_like_gviz_api() {
        let mut table = DataTable::new();
        table
            .column("host", ColumnType::String, "Host")
            .column("n", ColumnType::Number, "N")
            .row(vec!["h\"é\u{1}".into(), 3i64.into()])
            .row(vec![Cell::formatted("7", "<b>card</b>"), 2.5.into()])
            .prop("summary_message", "ok")
            .prop("is_input_bound", "false");
        assert_eq!(
            to_json(&table),
            concat!(
                r#"{"cols":[{"id":"host","label":"Host","type":"string"},{"id":"n","label":"N","type":"number"}],"#,
                r#""rows":[{"c":[{"v":"h\"é\u0001"},{"v":3}]},{"c":[{"v":"7","f":"<b>card</b>"},{"v":2.5}]}],"#,
                r#""p":{"is_input_bound":"false","summary_message":"ok"}}"#
            )
        );
        assert_eq!(
            to_json_array(&[DataTable::new(), DataTable::new()]),
            r#"[{"cols":[],"rows":[]},{"cols":[],"rows":[]}]"#
        );
    }
}
