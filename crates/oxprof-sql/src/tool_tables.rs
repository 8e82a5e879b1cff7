//! The tool tables (`op_stats`, `kernels`, `hlo_ops`, `steps`, `input_pipeline`): a typed
//! report's named table for one host, computed through the registry exactly as
//! `oxprof data TOOL PATH --host H` computes it, converted by `oxprof-arrow`.
//!
//! `oxprof-arrow` is on DataFusion's Arrow version, so the batch is used as it is: its
//! columns are renamed to SQL identifiers (snake case) and `run`/`host` put first.

use crate::SqlError;
use crate::model_tables::{HostKey, constant_label, label_type};
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use oxprof_api::catalog::ServedRun;
use oxprof_api::data::{DataRequest, compute};
use oxprof_api::registry::ToolId;
use oxprof_api::session::Session;
use std::sync::Arc;

/// The report table `table` of `tool` for host `key.host` of `run`, as a batch with
/// `run` and `host` first; `None` when the report has no such table.
pub fn build(
    session: &Session,
    run: &ServedRun,
    key: HostKey<'_>,
    tool: ToolId,
    table: &str,
) -> Result<Option<RecordBatch>, SqlError> {
    let request =
        DataRequest { run: Some(run.name.clone()), host: Some(key.host.to_string()), ..DataRequest::new(tool) };
    let report = compute(session, run, &request, false).map_err(SqlError::profile)?;
    let Some(found) = report.tables().into_iter().find(|t| t.name == table) else { return Ok(None) };
    let converted = oxprof_arrow::record_batch(&found).map_err(|e| SqlError::Internal(e.to_string()))?;
    Ok(Some(with_host_columns(&converted.batch, key)?))
}

/// A report column's name as an SQL identifier: lower snake case, never empty
/// (`Total time (us)` → `total_time_us`, `stepTimeMs` → `step_time_ms`).
pub fn sql_identifier(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            // camelCase ids (`stepTimeMs`) become snake case (`step_time_ms`).
            if c.is_ascii_uppercase() && previous_lower {
                out.push('_');
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_lowercase());
        } else {
            previous_lower = false;
            if !out.ends_with('_') {
                out.push('_');
            }
        }
    }
    let trimmed = out.trim_matches('_');
    if trimmed.is_empty() {
        "column".to_string()
    } else if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        format!("c_{trimmed}")
    } else {
        trimmed.to_string()
    }
}

/// Report column ids whose snake case cannot be guessed from their spelling.
const RENAMED: &[(&str, &str)] = &[("stepnum", "step_num")];

fn with_host_columns(batch: &RecordBatch, key: HostKey<'_>) -> Result<RecordBatch, SqlError> {
    let rows = batch.num_rows();
    let mut fields = vec![Field::new("run", label_type(), false), Field::new("host", label_type(), false)];
    let mut columns: Vec<ArrayRef> = vec![constant_label(key.run, rows), constant_label(key.host, rows)];
    let mut seen: Vec<String> = vec!["run".into(), "host".into()];
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let mut name = sql_identifier(field.name());
        if let Some((_, better)) = RENAMED.iter().find(|(id, _)| *id == name) {
            name = better.to_string();
        }
        while seen.contains(&name) {
            name.push('_');
        }
        seen.push(name.clone());
        fields.push(Field::new(name, field.data_type().clone(), true).with_metadata(field.metadata().clone()));
        columns.push(column.clone());
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| SqlError::Internal(e.to_string()))
}

/// One schema for the batches of every host: a column whose type differs between hosts
/// (a report widened one host's column) is read as text everywhere.
pub fn unify(batches: Vec<RecordBatch>) -> Result<(SchemaRef, Vec<RecordBatch>), SqlError> {
    let Some(first) = batches.first() else { return Ok((Arc::new(Schema::empty()), batches)) };
    let mut fields: Vec<Field> = first.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    for b in &batches[1..] {
        let schema = b.schema();
        for f in &mut fields {
            if let Ok(other) = schema.field_with_name(f.name())
                && other.data_type() != f.data_type()
            {
                *f = f.clone().with_data_type(DataType::Utf8);
            }
        }
    }
    let schema = Arc::new(Schema::new(fields));
    let mut out = Vec::with_capacity(batches.len());
    for b in batches {
        let columns = schema
            .fields()
            .iter()
            .map(|f| match b.column_by_name(f.name()) {
                Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
                Some(c) => datafusion::arrow::compute::cast(c, f.data_type()),
                None => Ok(datafusion::arrow::array::new_null_array(f.data_type(), b.num_rows())),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        out.push(RecordBatch::try_new(schema.clone(), columns).map_err(|e| SqlError::Internal(e.to_string()))?);
    }
    Ok((schema, out))
}
