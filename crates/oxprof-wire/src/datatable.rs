//! The Google DataTable most XProf tools answer with (`xprof/convert/data_table_utils.cc`,
//! and Python's `gviz_api` for the old tools): columns, rows of cells, and custom
//! properties as preformatted strings. [`DataTable::to_json`] gives its JSON value
//! (`{"cols":[…],"p":{…},"rows":[{"c":[{"v":…}]}]}`, `p` only when non-empty); the
//! dialect modules ([`crate::nlohmann`], [`crate::gviz_api`]) print it as each library does.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A column's data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `number`
    Number,
    /// `string`
    String,
    /// `boolean`
    Boolean,
}

impl ColumnType {
    /// The type's name in the JSON (`number`, `string`, `boolean`).
    pub fn as_str(self) -> &'static str {
        match self {
            ColumnType::Number => "number",
            ColumnType::String => "string",
            ColumnType::Boolean => "boolean",
        }
    }
}

/// One cell value.
#[derive(Debug, Clone, PartialEq)]
pub enum CellValue {
    /// A number (a C++ `double` in XProf's tables).
    Number(f64),
    /// An integer (Python's `int` in `gviz_api` tables; nlohmann prints it as a double).
    Int(i64),
    /// A string.
    Text(String),
    /// A boolean.
    Bool(bool),
    /// No value (serialized as `""`, as XProf does for null cells).
    Null,
}

impl From<f64> for CellValue {
    fn from(v: f64) -> Self {
        CellValue::Number(v)
    }
}
impl From<i64> for CellValue {
    fn from(v: i64) -> Self {
        CellValue::Int(v)
    }
}
impl From<bool> for CellValue {
    fn from(v: bool) -> Self {
        CellValue::Bool(v)
    }
}
impl From<&str> for CellValue {
    fn from(v: &str) -> Self {
        CellValue::Text(v.to_string())
    }
}
impl From<String> for CellValue {
    fn from(v: String) -> Self {
        CellValue::Text(v)
    }
}

/// One cell: a value, optionally a formatted string and custom properties.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Value.
    pub value: CellValue,
    /// Formatted value (`f`).
    pub formatted: Option<String>,
    /// Custom properties (`p`).
    pub props: BTreeMap<String, String>,
}

impl<T: Into<CellValue>> From<T> for Cell {
    fn from(v: T) -> Self {
        Cell { value: v.into(), formatted: None, props: BTreeMap::new() }
    }
}

impl Cell {
    /// A cell with a formatted value.
    pub fn formatted(value: impl Into<CellValue>, formatted: impl Into<String>) -> Cell {
        Cell { value: value.into(), formatted: Some(formatted.into()), props: BTreeMap::new() }
    }
}

/// A column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Id.
    pub id: String,
    /// Label.
    pub label: String,
    /// Type.
    pub ty: ColumnType,
    /// Custom properties.
    pub props: BTreeMap<String, String>,
}

/// A row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    /// Cells.
    pub cells: Vec<Cell>,
    /// Custom properties.
    pub props: BTreeMap<String, String>,
}

/// A table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataTable {
    /// Columns.
    pub cols: Vec<Column>,
    /// Rows.
    pub rows: Vec<Row>,
    /// Table custom properties.
    pub props: BTreeMap<String, String>,
}

impl DataTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a column.
    pub fn column(&mut self, id: &str, ty: ColumnType, label: &str) -> &mut Self {
        self.cols.push(Column { id: id.into(), label: label.into(), ty, props: BTreeMap::new() });
        self
    }

    /// Adds a column with custom properties (e.g. `role: tooltip`).
    pub fn column_with_props(&mut self, id: &str, ty: ColumnType, label: &str, props: &[(&str, &str)]) -> &mut Self {
        let props = props.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect();
        self.cols.push(Column { id: id.into(), label: label.into(), ty, props });
        self
    }

    /// Adds a row of cells.
    pub fn row(&mut self, cells: Vec<Cell>) -> &mut Self {
        self.rows.push(Row { cells, props: BTreeMap::new() });
        self
    }

    /// Sets a table custom property.
    pub fn prop(&mut self, key: &str, value: impl Into<String>) -> &mut Self {
        self.props.insert(key.to_string(), value.into());
        self
    }

    /// The JSON value (keys sorted, as XProf emits them).
    pub fn to_json(&self) -> Value {
        let mut table = Map::new();
        table.insert("cols".into(), Value::Array(self.cols.iter().map(column_json).collect()));
        if !self.props.is_empty() {
            table.insert("p".into(), props_json(&self.props));
        }
        table.insert("rows".into(), Value::Array(self.rows.iter().map(row_json).collect()));
        Value::Object(table)
    }
}

fn props_json(props: &BTreeMap<String, String>) -> Value {
    Value::Object(props.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
}

fn column_json(c: &Column) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), Value::String(c.id.clone()));
    m.insert("label".into(), Value::String(c.label.clone()));
    if !c.props.is_empty() {
        m.insert("p".into(), props_json(&c.props));
    }
    m.insert("type".into(), Value::String(c.ty.as_str().into()));
    Value::Object(m)
}

fn row_json(r: &Row) -> Value {
    let mut m = Map::new();
    m.insert("c".into(), Value::Array(r.cells.iter().map(cell_json).collect()));
    if !r.props.is_empty() {
        m.insert("p".into(), props_json(&r.props));
    }
    Value::Object(m)
}

fn cell_json(c: &Cell) -> Value {
    let mut m = Map::new();
    if let Some(f) = &c.formatted {
        m.insert("f".into(), Value::String(f.clone()));
    }
    if !c.props.is_empty() {
        m.insert("p".into(), props_json(&c.props));
    }
    m.insert("v".into(), cell_value_json(&c.value));
    Value::Object(m)
}

/// A number as XProf's JSON has it (non-finite numbers become `null`, as in nlohmann).
pub fn number_json(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

fn cell_value_json(v: &CellValue) -> Value {
    match v {
        CellValue::Number(n) => number_json(*n),
        CellValue::Int(n) => Value::from(*n),
        CellValue::Text(s) => Value::String(s.clone()),
        CellValue::Bool(b) => Value::Bool(*b),
        CellValue::Null => Value::String(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_like_xprof() {
        let mut t = DataTable::new();
        t.column("rank", ColumnType::Number, "Rank")
            .column_with_props("tooltip", ColumnType::String, "tooltip", &[("role", "tooltip")])
            .row(vec![1.0.into(), "a".into()])
            .row(vec![Cell::formatted(2.5, "2.5%"), CellValue::Null.into()]);
        assert_eq!(
            t.to_json().to_string(),
            r#"{"cols":[{"id":"rank","label":"Rank","type":"number"},{"id":"tooltip","label":"tooltip","p":{"role":"tooltip"},"type":"string"}],"rows":[{"c":[{"v":1.0},{"v":"a"}]},{"c":[{"f":"2.5%","v":2.5},{"v":""}]}]}"#
        );
        t.prop("k", "v");
        assert!(t.to_json().to_string().contains(r#""p":{"k":"v"}"#));
    }
}
