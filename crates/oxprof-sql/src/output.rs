//! A query's rows written as people or programs read them: an aligned text table, CSV
//! (header first), JSON (an array of objects, numbers as numbers) or Parquet.

use crate::{QueryResult, SqlError};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::io::Write;
use std::sync::Arc;

/// Arrow's data types, for callers without their own Arrow dependency.
pub use datafusion::arrow::datatypes::DataType;
/// Arrow's JSON writer of an array of row objects, for callers without their own Arrow dependency.
pub type JsonArrayWriter<W> = datafusion::arrow::json::ArrayWriter<W>;

/// Output formats of a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// A JSON array of row objects.
    Json,
    /// One Parquet file (zstd).
    Parquet,
}

/// The Parquet settings of every file oxprof writes: zstd, row groups of up to
/// [`ROW_GROUP_ROWS`] rows (a few MB compressed: big enough for scans, small enough that
/// a filter on `ts` skips most of a host).
pub fn writer_properties() -> WriterProperties {
    let mut builder = WriterProperties::builder();
    // Ids and times grow along a track: stored as deltas they take a few bits each
    // (dictionaries of mostly distinct values would not help).
    for column in DELTA_COLUMNS {
        let path = ColumnPath::from(*column);
        builder = builder
            .set_column_dictionary_enabled(path.clone(), false)
            .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
    }
    builder
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("oxprof {} (schema {})", env!("CARGO_PKG_VERSION"), crate::SCHEMA_VERSION))
        .build()
}

/// Integer columns written delta-encoded.
const DELTA_COLUMNS: &[&str] = &["id", "ts", "ts_ps", "parent_id", "arg_set_id", "slice_out", "slice_in"];

/// Rows per Parquet row group.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Writes `result` to `out` as `format`.
pub fn write(result: &QueryResult, format: Format, out: &mut dyn Write) -> Result<(), SqlError> {
    let io = |cause| SqlError::Io { path: "output".into(), cause };
    let arrow = |e: datafusion::arrow::error::ArrowError| SqlError::Internal(e.to_string());
    let batches = plain(&result.batches).map_err(arrow)?;
    match format {
        Format::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(&batches).map_err(arrow)?;
            if batches.is_empty() {
                let names: Vec<&str> = result.schema.fields().iter().map(|f| f.name().as_str()).collect();
                writeln!(out, "(no rows; columns: {})", names.join(", ")).map_err(io)?;
            } else {
                writeln!(out, "{text}").map_err(io)?;
            }
        }
        Format::Csv => {
            if batches.is_empty() {
                let names: Vec<&str> = result.schema.fields().iter().map(|f| f.name().as_str()).collect();
                writeln!(out, "{}", names.join(",")).map_err(io)?;
            } else {
                let mut writer = datafusion::arrow::csv::WriterBuilder::new().with_header(true).build(&mut *out);
                for b in &batches {
                    writer.write(b).map_err(arrow)?;
                }
            }
        }
        Format::Json => {
            let mut writer = datafusion::arrow::json::ArrayWriter::new(Vec::new());
            let refs: Vec<&RecordBatch> = batches.iter().collect();
            writer.write_batches(&refs).map_err(arrow)?;
            writer.finish().map_err(arrow)?;
            let bytes = writer.into_inner();
            if bytes.is_empty() {
                out.write_all(b"[]").map_err(io)?;
            } else {
                out.write_all(&bytes).map_err(io)?;
            }
            writeln!(out).map_err(io)?;
        }
        Format::Parquet => {
            let schema = batches.first().map(|b| b.schema()).unwrap_or_else(|| plain_schema(&result.schema));
            // The writer needs a `Send` sink: the file is made in memory, then written out.
            let mut bytes = Vec::new();
            let mut writer = ArrowWriter::try_new(&mut bytes, schema, Some(writer_properties()))
                .map_err(|e| SqlError::Internal(e.to_string()))?;
            for b in &batches {
                writer.write(b).map_err(|e| SqlError::Internal(e.to_string()))?;
            }
            writer.close().map_err(|e| SqlError::Internal(e.to_string()))?;
            out.write_all(&bytes).map_err(io)?;
        }
    }
    if result.truncated {
        eprintln!("oxprof: only the first {} rows are shown (the row limit)", result.row_count());
    }
    Ok(())
}

/// Dictionary columns as plain text, which every writer and reader takes.
pub fn plain(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>, datafusion::arrow::error::ArrowError> {
    batches
        .iter()
        .map(|b| {
            let schema = plain_schema(&b.schema());
            let columns = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c.clone()) } else { cast(c, f.data_type()) })
                .collect::<Result<Vec<_>, _>>()?;
            RecordBatch::try_new(schema, columns)
        })
        .collect()
}

fn plain_schema(schema: &Schema) -> Arc<Schema> {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Dictionary(_, value) => f.as_ref().clone().with_data_type(value.as_ref().clone()),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}
