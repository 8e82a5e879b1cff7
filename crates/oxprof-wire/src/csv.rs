//! XProf's `/data_csv`, byte for byte: its Python server decodes the tool's JSON body and
//! writes the first DataTable with Python's `csv` module (`plugin/xprof/convert/csv_writer.py`,
//! `json_to_csv_string`): `QUOTE_ALL` and `\n` line ends, a header of column labels, and
//! each cell value as Python's `str()` of the JSON-decoded value. The input is the body as
//! XProf's client reads it (numbers as the body printed them), so CSV is made from the body.

use serde_json::Value;

/// The first DataTable in a tool's JSON body: the value itself, or the first element of an
/// array that has `cols`.
pub fn first_table(json: &Value) -> Option<&Value> {
    match json {
        Value::Object(m) if m.contains_key("cols") => Some(json),
        Value::Array(items) => items.iter().find(|t| t.get("cols").is_some()),
        _ => None,
    }
}

/// `/data_csv` of a tool's JSON body: its first DataTable as CSV, or `None` when the body
/// has no DataTable (XProf answers "CSV format not supported for this tool type").
pub fn data_csv(body: &Value) -> Option<String> {
    first_table(body).map(datatable_to_csv)
}

/// CSV of a DataTable JSON (`{"cols":…,"rows":…}`), or of the first table of a JSON array
/// of tables (as XProf does for tools returning several). Anything else gives "".
///
/// Header: each column's `label` (its `id` when it has no label). Rows: each cell's `v`
/// (`""` when null or missing); rows without cells are left out.
pub fn datatable_to_csv(table: &Value) -> String {
    let table = match table {
        Value::Array(tables) => match tables.first() {
            Some(first) => first,
            None => return String::new(),
        },
        other => other,
    };
    let Some(cols) = table.get("cols").and_then(Value::as_array) else { return String::new() };
    let mut out = String::new();
    let header = cols.iter().map(|col| match col.get("label").or_else(|| col.get("id")) {
        Some(label) => python_str(label),
        None => String::new(),
    });
    write_record(&mut out, header);
    for row in table.get("rows").and_then(Value::as_array).into_iter().flatten() {
        let Some(cells) = row.get("c").and_then(Value::as_array) else { continue };
        if cells.is_empty() {
            continue;
        }
        write_record(&mut out, cells.iter().map(|cell| cell.get("v").map(python_str).unwrap_or_default()));
    }
    out
}

/// One `QUOTE_ALL` record: every field quoted, quotes doubled, `\n` at the end.
fn write_record(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        out.push_str(&field.replace('"', "\"\""));
        out.push('"');
    }
    out.push('\n');
}

/// Python's `str()` of a JSON-decoded value (`None` prints as "" in XProf's writer).
fn python_str(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => (if *b { "True" } else { "False" }).to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => python_float_repr(f),
            _ => n.to_string(),
        },
        // Not produced by DataTables; JSON text is the closest stable rendering.
        Value::Array(_) | Value::Object(_) => v.to_string(),
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in positional notation
/// with at least one fractional digit when the decimal exponent is in [-4, 16), else in
/// scientific notation with a signed exponent of at least two digits (`1e-05`, `1.5e+16`).
pub fn python_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return (if v > 0.0 { "inf" } else { "-inf" }).to_string();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: "d.ddde[-]x".
    let sci = format!("{:e}", v.abs());
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let sign = if v.is_sign_negative() { "-" } else { "" };
    // Position of the decimal point relative to the digits: value = 0.DIGITS × 10^point.
    let point = exponent + 1;
    let body = if (-3..=16).contains(&point) {
        positional(&digits, point)
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!("{first}{fraction}e{exp_sign}{:02}", exponent.unsigned_abs())
    };
    format!("{sign}{body}")
}

/// `DIGITS` with the decimal point `point` places from their start, always with a fraction.
fn positional(digits: &str, point: i32) -> String {
    let len = digits.len() as i32;
    if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point < len {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    } else {
        format!("{digits}{}.0", "0".repeat((point - len) as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.5, "0.5"),
            (123.456, "123.456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (6.904715366063751e-05, "6.904715366063751e-05"),
            (1234567890123456.0, "1234567890123456.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (1e100, "1e+100"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, expected) in cases {
            assert_eq!(python_float_repr(v), expected, "{v}");
        }
    }

    #[test]
    fn writes_quote_all_csv() {
        let table = json!([{
            "cols": [{"id": "a", "label": "A \"x\""}, {"id": "b"}, {"id": "c", "label": "C"}],
            "rows": [{"c": [{"v": 1.0}, {"v": "s,\"t\""}, {"v": true}]}, {"c": []}, {"c": [{"v": 3}, {"v": null}, {}]}]
        }]);
        assert_eq!(
            datatable_to_csv(&table),
            "\"A \"\"x\"\"\",\"b\",\"C\"\n\"1.0\",\"s,\"\"t\"\"\",\"True\"\n\"3\",\"\",\"\"\n"
        );
        assert_eq!(datatable_to_csv(&json!([])), "");
    }

    #[test]
    fn finds_the_first_table() {
        let body = json!([{}, {"cols": [{"id": "a", "label": "A"}], "rows": [{"c": [{"v": 1.5}]}]}]);
        assert_eq!(data_csv(&body).as_deref(), Some("\"A\"\n\"1.5\"\n"));
        assert_eq!(data_csv(&json!({"podStatsSequence": {}})), None);
    }
}
