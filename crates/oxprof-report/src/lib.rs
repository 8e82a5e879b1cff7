//! The seam between a tool's analysis and its readers. Each tool computes a typed report
//! (a `Serialize + Deserialize` struct of its family's crate: `oxprof-xprof`,
//! `oxprof-trace`, `oxprof-pytorch`) that implements [`Report`]: it renders XProf's body
//! (through `oxprof_wire`'s dialects), serializes itself for scripts, diffs and queries,
//! and lists named [`Table`]s of typed cells for people (Markdown) and SQL. Nothing above
//! this seam reads XProf's JSON to learn a number.
//!
//! This crate is small on purpose: what only reads reports (Arrow, diffs, Python, the
//! front-ends) depends on it rather than on the analyses. [`Body`] is the one shape of an
//! answer's bytes (text, bytes or a stream, with its content type).

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod tool_id;

use oxprof_wire::datatable::{CellValue, ColumnType, DataTable};
use serde::Serialize;
use serde_json::Value;
pub use tool_id::ToolId;

/// A body as XProf's server sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XprofBody {
    /// MIME type.
    pub content_type: &'static str,
    /// The bytes, as text.
    pub text: String,
}

impl XprofBody {
    /// An `application/json` body.
    pub fn json(text: String) -> XprofBody {
        XprofBody { content_type: "application/json", text }
    }
}

/// What an answer sends: its content type and its bytes, whole (text or binary) or written
/// by a stream into a sink (a large trace body, never held whole in memory).
///
/// Every tool's answer has this one shape, so a front-end (CLI, HTTP, Python) writes any
/// of them the same way instead of dispatching on the kind of body.
pub enum Body {
    /// Text (JSON, CSV, HTML, protobuf text).
    Text {
        /// MIME type.
        content_type: &'static str,
        /// The text.
        text: String,
    },
    /// Binary bytes (a serialized protobuf, a gzipped trace).
    Bytes {
        /// MIME type.
        content_type: &'static str,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Bytes written into a sink in pieces, once (an error is the sink's, or the client
    /// went away).
    Stream {
        /// MIME type.
        content_type: &'static str,
        /// Writes the body.
        write: BodyWriter,
    },
}

/// Writes a [`Body::Stream`] into a sink: a closure that owns what it reads (e.g. `Arc`s
/// of decoded profiles), for bodies too large to build in memory.
pub struct BodyWriter(Box<WriteBody>);

type WriteBody = dyn FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send;

impl BodyWriter {
    /// A body written by `write`.
    pub fn new(write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()> + Send + 'static) -> Self {
        BodyWriter(Box::new(write))
    }

    /// Writes the body to `sink` (an error: the sink failed, e.g. the client went away).
    pub fn write_to(self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        (self.0)(sink)
    }

    /// The whole body in memory (tests, reports of a streamed body).
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::new();
        // Writing into memory cannot fail.
        let _ = self.write_to(&mut out);
        out
    }
}

impl std::fmt::Debug for BodyWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyWriter")
    }
}

impl Body {
    /// Its MIME type.
    pub fn content_type(&self) -> &'static str {
        match self {
            Body::Text { content_type, .. } | Body::Bytes { content_type, .. } | Body::Stream { content_type, .. } => {
                content_type
            }
        }
    }

    /// The whole body in memory (a stream is written into it).
    pub fn into_bytes(self) -> Vec<u8> {
        match self {
            Body::Text { text, .. } => text.into_bytes(),
            Body::Bytes { bytes, .. } => bytes,
            Body::Stream { write, .. } => write.into_bytes(),
        }
    }

    /// Writes the body into `sink`, whatever its kind.
    pub fn write_to(self, sink: &mut dyn std::io::Write) -> std::io::Result<()> {
        match self {
            Body::Text { text, .. } => sink.write_all(text.as_bytes()),
            Body::Bytes { bytes, .. } => sink.write_all(&bytes),
            Body::Stream { write, .. } => write.write_to(sink),
        }
    }
}

impl From<XprofBody> for Body {
    fn from(body: XprofBody) -> Body {
        Body::Text { content_type: body.content_type, text: body.text }
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Text { content_type, text } => {
                f.debug_struct("Text").field("content_type", content_type).field("len", &text.len()).finish()
            }
            Body::Bytes { content_type, bytes } => {
                f.debug_struct("Bytes").field("content_type", content_type).field("len", &bytes.len()).finish()
            }
            Body::Stream { content_type, .. } => f.debug_struct("Stream").field("content_type", content_type).finish(),
        }
    }
}

/// A tool's computed output.
pub trait Report: Send + Sync + std::fmt::Debug {
    /// The body XProf's server returns for it, byte for byte.
    fn xprof_body(&self) -> XprofBody;

    /// The typed report itself as JSON (its serde form, reloadable), for scripts, diffs
    /// and `oxprof data --format report`.
    fn to_json(&self) -> Value;

    /// Named tables of typed cells, in reading order (Markdown, SQL). Empty when the
    /// output is not tabular at all.
    fn tables(&self) -> Vec<Table>;

    /// oxprof's notes for people on this output (not part of XProf's body).
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// XProf's body parsed as JSON as XProf's own clients read it (`None` when it is not
    /// JSON): what `/data_csv` and the golden tests read.
    fn xprof_body_json(&self) -> Option<Value> {
        let body = self.xprof_body();
        if !body.content_type.starts_with("application/json") {
            return None;
        }
        serde_json::from_str(&body.text).ok()
    }
}

/// The serde JSON of a report (serializing plain data cannot fail; `null` if it did).
pub fn json_of<T: Serialize>(report: &T) -> Value {
    serde_json::to_value(report).unwrap_or(Value::Null)
}

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnKind {
    /// Whole numbers.
    Integer,
    /// Real numbers.
    Number,
    /// Text.
    Text,
    /// True or false.
    Boolean,
}

/// How people read a column's numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NumberFormat {
    /// Every digit needed to read the number back (`0.5`, `29.0`, `1e-7`).
    #[default]
    Shortest,
    /// This many decimals (`%.Nf`).
    Fixed(u8),
    /// Times 100 with this many decimals and a `%` sign.
    Percent(u8),
}

/// One column of a [`Table`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableColumn {
    /// Machine name (a DataTable column id, or snake_case): what queries name.
    pub name: String,
    /// What people read.
    pub label: String,
    /// What it holds.
    pub kind: ColumnKind,
    /// How its numbers read.
    pub format: NumberFormat,
}

/// A named table of typed cells, with facts about it: what Markdown shows and SQL reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    /// Machine name, unique within a report (snake_case).
    pub name: String,
    /// A heading for people, if the table has one of its own.
    pub title: Option<String>,
    /// Named facts about the whole table, as text (XProf's DataTable properties, which
    /// XProf formats itself, or oxprof's own figures), in reading order.
    pub facts: Vec<(String, String)>,
    /// What the rows are (`"ops, most time first"`), said as "N of M …:" above them.
    pub rows_description: Option<String>,
    /// At most this many rows are shown to people; all are kept here.
    pub shown_rows: Option<usize>,
    /// Columns.
    pub columns: Vec<TableColumn>,
    /// Rows, one cell per column.
    pub rows: Vec<Vec<CellValue>>,
}

impl Table {
    /// An empty table named `name`.
    pub fn new(name: &str) -> Table {
        Table { name: name.to_string(), ..Table::default() }
    }

    /// Sets the heading.
    pub fn title(mut self, title: impl Into<String>) -> Table {
        self.title = Some(title.into());
        self
    }

    /// Adds a fact.
    pub fn fact(mut self, key: &str, text: impl Into<String>) -> Table {
        self.facts.push((key.to_string(), text.into()));
        self
    }

    /// Says what the rows are, showing at most `shown` of them to people.
    pub fn rows_described(mut self, description: &str, shown: Option<usize>) -> Table {
        self.rows_description = Some(description.to_string());
        self.shown_rows = shown;
        self
    }

    /// Adds a column.
    pub fn column(mut self, name: &str, label: &str, kind: ColumnKind, format: NumberFormat) -> Table {
        self.columns.push(TableColumn { name: name.to_string(), label: label.to_string(), kind, format });
        self
    }

    /// Adds a row.
    pub fn push_row(&mut self, cells: Vec<CellValue>) {
        self.rows.push(cells);
    }

    /// A DataTable as XProf fills it: its columns (by id and label), its cells' values
    /// (formatted values and custom properties left out) and its properties as facts, in
    /// key order.
    pub fn from_data_table(name: &str, table: &DataTable) -> Table {
        let columns = table
            .cols
            .iter()
            .map(|c| TableColumn {
                name: c.id.clone(),
                label: c.label.clone(),
                kind: match c.ty {
                    ColumnType::Number => ColumnKind::Number,
                    ColumnType::String => ColumnKind::Text,
                    ColumnType::Boolean => ColumnKind::Boolean,
                },
                format: NumberFormat::Shortest,
            })
            .collect();
        Table {
            name: name.to_string(),
            facts: table.props.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            columns,
            rows: table.rows.iter().map(|r| r.cells.iter().map(|c| c.value.clone()).collect()).collect(),
            ..Table::default()
        }
    }

    /// The text people read for a cell of column `column` (see [`NumberFormat`]).
    pub fn cell_text(&self, column: usize, cell: &CellValue) -> String {
        let format = self.columns.get(column).map_or(NumberFormat::Shortest, |c| c.format);
        match (cell, format) {
            (CellValue::Text(text), _) => text.clone(),
            (CellValue::Null, _) => String::new(),
            (CellValue::Bool(flag), _) => flag.to_string(),
            (CellValue::Int(n), NumberFormat::Shortest) => n.to_string(),
            (CellValue::Int(n), format) => format_number(*n as f64, format),
            (CellValue::Number(v), format) => format_number(*v, format),
        }
    }
}

fn format_number(v: f64, format: NumberFormat) -> String {
    match format {
        // serde_json's shortest round-trip text (`29.0`, `1e-7`); JSON has no NaN.
        NumberFormat::Shortest => serde_json::Number::from_f64(v).map(|n| n.to_string()).unwrap_or_default(),
        NumberFormat::Fixed(decimals) => format!("{v:.*}", usize::from(decimals)),
        NumberFormat::Percent(decimals) => format!("{:.*}%", usize::from(decimals), 100.0 * v),
    }
}

/// Serde for `f64` fields that may hold NaN or infinities (JSON numbers cannot): written
/// as the strings `"NaN"`, `"-NaN"` (sign kept: XProf prints `-nan`), `"Infinity"`,
/// `"-Infinity"`, read back from them or from numbers.
pub mod non_finite_f64 {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes `v`.
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        match *v {
            v if v.is_nan() && v.is_sign_negative() => s.serialize_str("-NaN"),
            v if v.is_nan() => s.serialize_str("NaN"),
            f64::INFINITY => s.serialize_str("Infinity"),
            f64::NEG_INFINITY => s.serialize_str("-Infinity"),
            v => s.serialize_f64(v),
        }
    }

    /// Deserializes what [`serialize`] wrote.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Number(v) => Ok(v),
            Repr::Text(text) => match text.as_str() {
                "NaN" => Ok(f64::NAN),
                "-NaN" => Ok(-f64::NAN),
                "Infinity" => Ok(f64::INFINITY),
                "-Infinity" => Ok(f64::NEG_INFINITY),
                other => Err(serde::de::Error::custom(format!("not a number: {other:?}"))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn cells_read_as_their_column_says() {
        let table = Table::new("t")
            .column("a", "A", ColumnKind::Number, NumberFormat::Shortest)
            .column("b", "B", ColumnKind::Number, NumberFormat::Fixed(2))
            .column("c", "C", ColumnKind::Number, NumberFormat::Percent(1));
        assert_eq!(table.cell_text(0, &CellValue::Number(29.0)), "29.0");
        assert_eq!(table.cell_text(0, &CellValue::Number(f64::NAN)), "");
        assert_eq!(table.cell_text(0, &CellValue::Int(3)), "3");
        assert_eq!(table.cell_text(1, &CellValue::Number(4.0)), "4.00");
        assert_eq!(table.cell_text(2, &CellValue::Number(0.25)), "25.0%");
        assert_eq!(table.cell_text(2, &CellValue::Bool(true)), "true");
    }

    #[test]
    fn data_tables_become_tables() {
        let mut data = DataTable::new();
        data.column("n", ColumnType::Number, "N").column("s", ColumnType::String, "").row(vec![1.5.into(), "x".into()]);
        data.prop("b", "2").prop("a", "1");
        let table = Table::from_data_table("t", &data);
        assert_eq!(table.facts, [("a".to_string(), "1".to_string()), ("b".to_string(), "2".to_string())]);
        assert_eq!((table.columns[1].name.as_str(), table.columns[1].label.as_str()), ("s", ""));
        assert_eq!(table.rows, [vec![CellValue::Number(1.5), CellValue::Text("x".into())]]);
    }

    #[test]
    fn every_body_writes_its_bytes() {
        let bodies = [
            Body::from(XprofBody::json("{}".into())),
            Body::Bytes { content_type: "application/octet-stream", bytes: b"{}".to_vec() },
            Body::Stream { content_type: "text/plain", write: BodyWriter::new(|sink| sink.write_all(b"{}")) },
        ];
        let types: Vec<&str> = bodies.iter().map(Body::content_type).collect();
        assert_eq!(types, ["application/json", "application/octet-stream", "text/plain"]);
        for body in bodies {
            let mut out = Vec::new();
            body.write_to(&mut out).unwrap();
            assert_eq!(out, b"{}");
        }
    }

    #[test]
    fn non_finite_numbers_round_trip() {
        #[derive(Serialize, Deserialize)]
        struct S(#[serde(with = "non_finite_f64")] f64);
        for v in [1.5, f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let text = serde_json::to_string(&S(v)).unwrap();
            let back: S = serde_json::from_str(&text).unwrap();
            assert_eq!(back.0.to_bits(), v.to_bits(), "{text}");
        }
    }
}
