//! A report's named tables (`oxprof_report::Table`) as Apache Arrow record
//! batches: the one place that decides how oxprof's typed cells become columnar data, for
//! Python's DataFrames now and SQL later.
//!
//! | column kind | Arrow type | what becomes null |
//! | --- | --- | --- |
//! | `integer` | `Int64` | empty cells |
//! | `number` | `Float64` (integers widened) | empty cells |
//! | `text` | `Utf8` (numbers and booleans as people read them) | empty cells |
//! | `boolean` | `Boolean` | empty cells |
//!
//! A column holding cells its kind cannot hold (text in a number column, a fraction in an
//! integer column) is widened, never truncated: integer → number → text, boolean → text,
//! and the conversion says so in a note. Tests keep every fixture's tables free of such
//! columns.
//!
//! What a table says besides its cells travels as metadata, so that readers need no
//! second channel: each field's label, declared kind and number format (`oxprof:label`,
//! `oxprof:kind`, `oxprof:format`, and `oxprof:name`, the column's own name when the
//! field's had to differ: empty or repeated), and the table's name, title, row description,
//! shown rows and facts (`oxprof:table`, `oxprof:title`, `oxprof:rows_description`,
//! `oxprof:shown_rows`, `oxprof:facts`: a JSON array of `[key, value]` pairs in order).

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{ArrowError, DataType, Field, Schema};
use oxprof_report::{ColumnKind, NumberFormat, Table};
use oxprof_wire::datatable::CellValue;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Field metadata: the label people read.
pub const LABEL_KEY: &str = "oxprof:label";
/// Field metadata: the column's declared kind (`integer`, `number`, `text`, `boolean`).
pub const KIND_KEY: &str = "oxprof:kind";
/// Field metadata: how people read its numbers (`shortest`, `fixed:N`, `percent:N`).
pub const FORMAT_KEY: &str = "oxprof:format";
/// Field metadata: the column's own name, when the field's differs from it.
pub const NAME_KEY: &str = "oxprof:name";
/// Schema metadata: the table's name.
pub const TABLE_KEY: &str = "oxprof:table";
/// Schema metadata: the table's heading.
pub const TITLE_KEY: &str = "oxprof:title";
/// Schema metadata: what the rows are.
pub const ROWS_DESCRIPTION_KEY: &str = "oxprof:rows_description";
/// Schema metadata: how many rows people are shown.
pub const SHOWN_ROWS_KEY: &str = "oxprof:shown_rows";
/// Schema metadata: the table's facts, a JSON array of `[key, value]` pairs.
pub const FACTS_KEY: &str = "oxprof:facts";

/// Why a table could not become a record batch (a bug: the columns are built to fit).
#[derive(Debug, thiserror::Error)]
#[error("table {table:?} cannot be converted to Arrow: {cause}")]
pub struct ConvertError {
    /// The table.
    pub table: String,
    /// Arrow's reason.
    pub cause: ArrowError,
}

/// A table as Arrow, with what the conversion had to change.
#[derive(Debug, Clone)]
pub struct Converted {
    /// The columns, with the table's metadata.
    pub batch: RecordBatch,
    /// Columns widened to hold their cells, rows of the wrong length: one line each.
    pub notes: Vec<String>,
}

/// `table` as one record batch.
pub fn record_batch(table: &Table) -> Result<Converted, ConvertError> {
    let mut notes = Vec::new();
    let width = table.columns.len();
    let (short, long) = table
        .rows
        .iter()
        .fold((0usize, 0usize), |(s, l), row| (s + usize::from(row.len() < width), l + usize::from(row.len() > width)));
    if short > 0 {
        notes.push(format!("table {}: {short} rows have fewer than {width} cells; the rest read as empty", table.name));
    }
    if long > 0 {
        notes.push(format!(
            "table {}: {long} rows have more than {width} cells; the extra cells are left out",
            table.name
        ));
    }
    let names = field_names(table);
    let mut fields = Vec::with_capacity(width);
    let mut arrays: Vec<ArrayRef> = Vec::with_capacity(width);
    for (index, column) in table.columns.iter().enumerate() {
        let cells = table.rows.iter().map(|row| row.get(index).unwrap_or(&CellValue::Null));
        let kind = fitted_kind(column.kind, cells.clone());
        if kind != column.kind {
            notes.push(format!(
                "table {}: column {} is declared {} but holds other values; read as {}",
                table.name,
                names[index],
                kind_name(column.kind),
                kind_name(kind)
            ));
        }
        let (data_type, array) = build_array(table, index, kind, cells);
        let mut metadata = HashMap::from([
            (LABEL_KEY.to_string(), column.label.clone()),
            (KIND_KEY.to_string(), kind_name(column.kind).to_string()),
            (FORMAT_KEY.to_string(), format_name(column.format)),
        ]);
        if names[index] != column.name {
            metadata.insert(NAME_KEY.to_string(), column.name.clone());
        }
        fields.push(Field::new(names[index].clone(), data_type, true).with_metadata(metadata));
        arrays.push(array);
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, table_metadata(table)));
    let options = RecordBatchOptions::new().with_row_count(Some(table.rows.len()));
    let batch = RecordBatch::try_new_with_options(schema, arrays, &options)
        .map_err(|cause| ConvertError { table: table.name.clone(), cause })?;
    Ok(Converted { batch, notes })
}

/// Field names: each column's name, made non-empty (its label, else `column_N`) and
/// unique (`name_2`, `name_3`, ...), so that every field can be selected by name.
fn field_names(table: &Table) -> Vec<String> {
    let mut taken = HashSet::new();
    let mut names = Vec::with_capacity(table.columns.len());
    for (index, column) in table.columns.iter().enumerate() {
        let base = [column.name.as_str(), column.label.as_str()]
            .into_iter()
            .find(|n| !n.is_empty())
            .map_or_else(|| format!("column_{}", index + 1), str::to_string);
        let mut name = base.clone();
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{base}_{n}");
        }
        names.push(name);
    }
    names
}

/// The narrowest kind, starting from the declared one, that holds every cell.
fn fitted_kind<'a>(declared: ColumnKind, cells: impl Iterator<Item = &'a CellValue>) -> ColumnKind {
    let mut kind = declared;
    for cell in cells {
        kind = match (kind, cell) {
            (_, CellValue::Null) | (ColumnKind::Text, _) => kind,
            (ColumnKind::Integer, CellValue::Int(_)) => kind,
            (ColumnKind::Integer, CellValue::Number(v)) if as_integer(*v).is_some() => kind,
            (ColumnKind::Integer | ColumnKind::Number, CellValue::Int(_) | CellValue::Number(_)) => ColumnKind::Number,
            (ColumnKind::Boolean, CellValue::Bool(_)) => kind,
            _ => ColumnKind::Text,
        };
    }
    kind
}

/// `v` as an integer, when it is one.
fn as_integer(v: f64) -> Option<i64> {
    // 2^63 is exactly representable; every f64 below it in magnitude with no fraction fits.
    let fits = v.fract() == 0.0 && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v);
    fits.then_some(v as i64)
}

fn build_array<'a>(
    table: &Table,
    index: usize,
    kind: ColumnKind,
    cells: impl Iterator<Item = &'a CellValue>,
) -> (DataType, ArrayRef) {
    let rows = table.rows.len();
    match kind {
        ColumnKind::Integer => {
            let mut b = Int64Builder::with_capacity(rows);
            for cell in cells {
                b.append_option(match cell {
                    CellValue::Int(n) => Some(*n),
                    CellValue::Number(v) => as_integer(*v),
                    _ => None,
                });
            }
            (DataType::Int64, Arc::new(b.finish()))
        }
        ColumnKind::Number => {
            let mut b = Float64Builder::with_capacity(rows);
            for cell in cells {
                b.append_option(match cell {
                    CellValue::Number(v) => Some(*v),
                    CellValue::Int(n) => Some(*n as f64),
                    _ => None,
                });
            }
            (DataType::Float64, Arc::new(b.finish()))
        }
        ColumnKind::Boolean => {
            let mut b = BooleanBuilder::with_capacity(rows);
            for cell in cells {
                b.append_option(match cell {
                    CellValue::Bool(flag) => Some(*flag),
                    _ => None,
                });
            }
            (DataType::Boolean, Arc::new(b.finish()))
        }
        ColumnKind::Text => {
            let mut b = StringBuilder::with_capacity(rows, rows * 16);
            for cell in cells {
                match cell {
                    CellValue::Null => b.append_null(),
                    CellValue::Text(text) => b.append_value(text),
                    other => b.append_value(table.cell_text(index, other)),
                }
            }
            (DataType::Utf8, Arc::new(b.finish()))
        }
    }
}

fn table_metadata(table: &Table) -> HashMap<String, String> {
    let mut metadata = HashMap::from([(TABLE_KEY.to_string(), table.name.clone())]);
    if let Some(title) = &table.title {
        metadata.insert(TITLE_KEY.to_string(), title.clone());
    }
    if let Some(description) = &table.rows_description {
        metadata.insert(ROWS_DESCRIPTION_KEY.to_string(), description.clone());
    }
    if let Some(shown) = table.shown_rows {
        metadata.insert(SHOWN_ROWS_KEY.to_string(), shown.to_string());
    }
    let facts: Vec<[&str; 2]> = table.facts.iter().map(|(k, v)| [k.as_str(), v.as_str()]).collect();
    // Plain strings always serialize.
    metadata.insert(FACTS_KEY.to_string(), serde_json::to_string(&facts).unwrap_or_default());
    metadata
}

/// A kind's name in metadata and notes.
pub fn kind_name(kind: ColumnKind) -> &'static str {
    match kind {
        ColumnKind::Integer => "integer",
        ColumnKind::Number => "number",
        ColumnKind::Text => "text",
        ColumnKind::Boolean => "boolean",
    }
}

fn format_name(format: NumberFormat) -> String {
    match format {
        NumberFormat::Shortest => "shortest".to_string(),
        NumberFormat::Fixed(decimals) => format!("fixed:{decimals}"),
        NumberFormat::Percent(decimals) => format!("percent:{decimals}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, StringArray};

    fn table() -> Table {
        let mut t = Table::new("t")
            .title("T")
            .fact("b", "2")
            .fact("a", "1")
            .rows_described("things", Some(1))
            .column("n", "N", ColumnKind::Integer, NumberFormat::Shortest)
            .column("x", "X", ColumnKind::Number, NumberFormat::Percent(1))
            .column("s", "S", ColumnKind::Text, NumberFormat::Shortest)
            .column("f", "F", ColumnKind::Boolean, NumberFormat::Shortest);
        t.push_row(vec![CellValue::Int(3), CellValue::Number(0.25), "a".into(), CellValue::Bool(true)]);
        t.push_row(vec![CellValue::Number(4.0), CellValue::Int(2), CellValue::Null, CellValue::Null]);
        t.push_row(vec![CellValue::Null, CellValue::Null, CellValue::Number(1.5), CellValue::Bool(false)]);
        t
    }

    fn column<T: Clone + 'static>(batch: &RecordBatch, name: &str) -> T {
        batch.column_by_name(name).unwrap().as_any().downcast_ref::<T>().unwrap().clone()
    }

    #[test]
    fn kinds_map_to_arrow_types_and_empty_cells_to_nulls() {
        let converted = record_batch(&table()).unwrap();
        assert!(converted.notes.is_empty(), "{:?}", converted.notes);
        let batch = converted.batch;
        assert_eq!(batch.num_rows(), 3);
        let n: Int64Array = column(&batch, "n");
        assert_eq!(n.iter().collect::<Vec<_>>(), [Some(3), Some(4), None]);
        let x: Float64Array = column(&batch, "x");
        assert_eq!(x.iter().collect::<Vec<_>>(), [Some(0.25), Some(2.0), None]);
        let s: StringArray = column(&batch, "s");
        assert_eq!(s.iter().collect::<Vec<_>>(), [Some("a"), None, Some("1.5")]);
        let f: BooleanArray = column(&batch, "f");
        assert_eq!(f.iter().collect::<Vec<_>>(), [Some(true), None, Some(false)]);
    }

    #[test]
    fn metadata_carries_labels_kinds_formats_and_facts() {
        let batch = record_batch(&table()).unwrap().batch;
        let schema = batch.schema();
        let x = schema.field_with_name("x").unwrap().metadata();
        assert_eq!(x[LABEL_KEY], "X");
        assert_eq!(x[KIND_KEY], "number");
        assert_eq!(x[FORMAT_KEY], "percent:1");
        assert!(!x.contains_key(NAME_KEY));
        let meta = schema.metadata();
        assert_eq!(meta[TABLE_KEY], "t");
        assert_eq!(meta[TITLE_KEY], "T");
        assert_eq!(meta[ROWS_DESCRIPTION_KEY], "things");
        assert_eq!(meta[SHOWN_ROWS_KEY], "1");
        assert_eq!(meta[FACTS_KEY], r#"[["b","2"],["a","1"]]"#);
    }

    #[test]
    fn cells_that_do_not_fit_widen_the_column_and_say_so() {
        let mut t = Table::new("w")
            .column("i", "", ColumnKind::Integer, NumberFormat::Shortest)
            .column("v", "", ColumnKind::Number, NumberFormat::Shortest)
            .column("b", "", ColumnKind::Boolean, NumberFormat::Shortest);
        t.push_row(vec![CellValue::Number(1.5), "n/a".into(), CellValue::Int(1)]);
        let converted = record_batch(&t).unwrap();
        assert_eq!(converted.notes.len(), 3, "{:?}", converted.notes);
        assert!(converted.notes[0].contains("column i is declared integer"), "{}", converted.notes[0]);
        let schema = converted.batch.schema();
        let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
        assert_eq!(types, [&DataType::Float64, &DataType::Utf8, &DataType::Utf8]);
        // The declared kind is still what the metadata says.
        assert_eq!(schema.field(0).metadata()[KIND_KEY], "integer");
        let v: StringArray = column(&converted.batch, "v");
        assert_eq!(v.value(0), "n/a");
        let b: StringArray = column(&converted.batch, "b");
        assert_eq!(b.value(0), "1");
    }

    #[test]
    fn names_are_made_non_empty_and_unique() {
        let t = Table::new("u")
            .column("a", "", ColumnKind::Text, NumberFormat::Shortest)
            .column("a", "", ColumnKind::Text, NumberFormat::Shortest)
            .column("", "Label", ColumnKind::Text, NumberFormat::Shortest)
            .column("", "", ColumnKind::Text, NumberFormat::Shortest);
        let batch = record_batch(&t).unwrap().batch;
        let schema = batch.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["a", "a_2", "Label", "column_4"]);
        assert_eq!(schema.field(1).metadata()[NAME_KEY], "a");
        assert_eq!(schema.field(3).metadata()[NAME_KEY], "");
    }

    #[test]
    fn ragged_rows_and_empty_tables_convert() {
        let mut t = Table::new("r").column("a", "", ColumnKind::Integer, NumberFormat::Shortest).column(
            "b",
            "",
            ColumnKind::Integer,
            NumberFormat::Shortest,
        );
        t.push_row(vec![CellValue::Int(1)]);
        t.push_row(vec![CellValue::Int(1), CellValue::Int(2), CellValue::Int(3)]);
        let converted = record_batch(&t).unwrap();
        assert_eq!(converted.notes.len(), 2, "{:?}", converted.notes);
        let b: Int64Array = column(&converted.batch, "b");
        assert_eq!(b.iter().collect::<Vec<_>>(), [None, Some(2)]);

        let empty = record_batch(&Table::new("e")).unwrap().batch;
        assert_eq!((empty.num_rows(), empty.num_columns()), (0, 0));
        let mut rows_only = Table::new("e");
        rows_only.push_row(Vec::new());
        assert_eq!(record_batch(&rows_only).unwrap().batch.num_rows(), 1);
    }

    #[test]
    fn integers_are_recognised_exactly() {
        assert_eq!(as_integer(4.0), Some(4));
        assert_eq!(as_integer(-0.0), Some(0));
        assert_eq!(as_integer(4.5), None);
        assert_eq!(as_integer(f64::NAN), None);
        assert_eq!(as_integer(f64::INFINITY), None);
        assert_eq!(as_integer(9_223_372_036_854_775_808.0), None);
        assert_eq!(as_integer(-9_223_372_036_854_775_808.0), Some(i64::MIN));
    }
}
