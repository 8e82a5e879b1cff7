//! `oxprof export --to parquet`: every table of the schema as a Parquet dataset, one
//! directory per table, Hive-partitioned by run and host:
//!
//! ```text
//! DIR/slice/run=<run>/host=<host>/part-0.parquet   (model and tool tables)
//! DIR/runs/part-0.parquet, DIR/hosts/part-0.parquet (catalog tables)
//! ```
//!
//! `run` and `host` live in the directory names only (Spark refuses a column that is both
//! in the files and in the paths); readers get them back from Hive partitioning (read
//! them as strings: Spark's `partitionColumnTypeInference` off, DuckDB's
//! `hive_types_autocast=0`). Each host is decoded once and written before the next is
//! read, so memory stays one host's model plus its tables.

use crate::model_tables::{self, HostKey, Projection};
use crate::output::{plain, writer_properties};
use crate::schema::{Source, TABLES, TableDef};
use crate::{SqlError, catalog_tables, tool_tables};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use oxprof_api::catalog::ServedRun;
use oxprof_api::session::Session;
use parquet::arrow::ArrowWriter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What an export wrote.
#[derive(Debug, Clone, Default)]
pub struct ExportSummary {
    /// Rows per table.
    pub rows: BTreeMap<&'static str, usize>,
    /// Files written.
    pub files: usize,
    /// Bytes written.
    pub bytes: u64,
}

/// A path component as Hive writes it: characters that would break the path or the
/// `key=value` form percent-encoded (Spark and DuckDB decode them).
pub fn hive_escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if c.is_control() || "\"#%'*/:=?\\{[]^".contains(c) {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes every table of `runs` under `dir` (which must not exist or be empty).
pub fn export_parquet(session: &Session, runs: &[ServedRun], dir: &Path) -> Result<ExportSummary, SqlError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |cause| SqlError::Io { path, cause }
    };
    if dir.exists() && std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
        return Err(SqlError::Sql(format!(
            "{}: not empty; export into a new or empty directory (files are never replaced)",
            dir.display()
        )));
    }
    let mut summary = ExportSummary::default();
    for def in TABLES.iter().filter(|t| t.source == Source::Catalog) {
        let batch = catalog_tables::build(def, session, runs)?;
        write_file(&dir.join(def.name), &[batch], &mut summary, def.name)?;
    }
    for run in runs {
        for file in &run.hosts {
            let key = HostKey { run: &run.name, host: &file.host };
            let part = |def: &TableDef| {
                dir.join(def.name)
                    .join(format!("run={}", hive_escape(&run.name)))
                    .join(format!("host={}", hive_escape(&file.host)))
            };
            {
                let space = session.load(file, &|_| true).map_err(|e| SqlError::Profile(e.to_string()))?;
                for def in TABLES.iter().filter(|t| t.source == Source::Model) {
                    let batches = model_tables::build(&Projection::all(def), &space, key)
                        .unwrap_or_else(|| Ok(Vec::new()))
                        .map_err(|e| SqlError::Internal(format!("{}: {e}", def.name)))?;
                    let batches = without_host_columns(&batches, &model_tables::arrow_schema(def))?;
                    write_file(&part(def), &batches, &mut summary, def.name)?;
                }
            }
            for def in TABLES.iter() {
                let Source::Tool { tool, table } = def.source else { continue };
                if let Some(batch) = tool_tables::build(session, run, key, tool, table)? {
                    let schema = batch.schema();
                    let batches = without_host_columns(&[batch], &schema)?;
                    write_file(&part(def), &batches, &mut summary, def.name)?;
                }
            }
        }
    }
    Ok(summary)
}

/// The batches without their `run` and `host` columns (they are in the path), and with
/// dictionary columns as plain text.
fn without_host_columns(batches: &[RecordBatch], schema: &Schema) -> Result<Vec<RecordBatch>, SqlError> {
    let keep: Vec<usize> =
        (0..schema.fields().len()).filter(|&i| !matches!(schema.field(i).name().as_str(), "run" | "host")).collect();
    let projected =
        if batches.is_empty() { vec![RecordBatch::new_empty(Arc::new(schema.clone()))] } else { batches.to_vec() };
    let projected = projected
        .iter()
        .map(|b| b.project(&keep))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    plain(&projected).map_err(|e| SqlError::Internal(e.to_string()))
}

/// Writes `batches` (at least one, for the schema) to `dir/part-0.parquet`.
fn write_file(
    dir: &Path,
    batches: &[RecordBatch],
    summary: &mut ExportSummary,
    table: &'static str,
) -> Result<(), SqlError> {
    let Some(first) = batches.first() else { return Ok(()) };
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |cause| SqlError::Io { path, cause }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let path: PathBuf = dir.join("part-0.parquet");
    let file = std::fs::File::create_new(&path).map_err(io(&path))?;
    let mut writer = ArrowWriter::try_new(std::io::BufWriter::new(file), first.schema(), Some(writer_properties()))
        .map_err(|e| SqlError::Internal(e.to_string()))?;
    let mut rows = 0;
    for b in batches {
        rows += b.num_rows();
        writer.write(b).map_err(|e| SqlError::Internal(format!("{}: {e}", path.display())))?;
    }
    writer.close().map_err(|e| SqlError::Internal(format!("{}: {e}", path.display())))?;
    summary.files += 1;
    summary.bytes += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    *summary.rows.entry(table).or_default() += rows;
    Ok(())
}
