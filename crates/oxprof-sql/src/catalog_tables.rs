//! The catalog tables (`runs`, `hosts`): what discovery found, without decoding a file.

use crate::SqlError;
use crate::model_tables::arrow_schema;
use crate::schema::TableDef;
use datafusion::arrow::array::{ArrayRef, Int64Builder, RecordBatch, StringBuilder};
use oxprof_api::catalog::ServedRun;
use oxprof_api::session::Session;
use std::sync::Arc;

/// `runs` or `hosts` as one batch.
pub fn build(def: &TableDef, session: &Session, runs: &[ServedRun]) -> Result<RecordBatch, SqlError> {
    let schema = arrow_schema(def);
    let columns: Vec<ArrayRef> = if def.name == "runs" {
        let mut names = StringBuilder::new();
        let mut counts = Int64Builder::new();
        for r in runs {
            names.append_value(&r.name);
            counts.append_value(r.hosts.len() as i64);
        }
        vec![Arc::new(names.finish()), Arc::new(counts.finish())]
    } else {
        let (mut run, mut host, mut file) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
        let mut bytes = Int64Builder::new();
        for r in runs {
            for h in &r.hosts {
                run.append_value(&r.name);
                host.append_value(&h.host);
                file.append_value(h.path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default());
                bytes.append_option(session.store().stat(&h.path).ok().map(|s| s.size as i64));
            }
        }
        vec![Arc::new(run.finish()), Arc::new(host.finish()), Arc::new(file.finish()), Arc::new(bytes.finish())]
    };
    RecordBatch::try_new(schema, columns).map_err(|e| SqlError::Internal(e.to_string()))
}
