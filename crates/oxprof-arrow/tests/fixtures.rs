//! Every table of every tool's report on the committed profiles converts to Arrow without
//! widening a column (each cell fits its column's declared kind), with one field per
//! column and one row per row.

use oxprof_api::data::{DataRequest, compute, one_shot_session};
use oxprof_api::registry::{Family, tools};
use std::path::PathBuf;

const PROFILES: &[&str] = &["tf_keras_fit", "tf_custom_loop", "jax_train", "tf_memory", "tf_memory_nobfc"];

#[test]
fn every_fixture_table_converts_without_widening() {
    let mut tables = 0;
    let mut problems = Vec::new();
    for name in PROFILES {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/profiles").join(name);
        let session = one_shot_session(&path).unwrap();
        let run = session.run(None).unwrap();
        // The trace viewer's output is events, not tables.
        for tool in tools().iter().filter(|t| t.available() && t.family != Family::Trace) {
            let request = DataRequest::new(tool.id);
            // Tools this profile cannot answer (no HLO, no device) are other tests' business.
            let Ok(report) = compute(&session, &run, &request, false) else { continue };
            for table in report.tables() {
                let converted = oxprof_arrow::record_batch(&table).unwrap();
                tables += 1;
                problems.extend(converted.notes.iter().map(|n| format!("{name} {}: {n}", tool.name())));
                let batch = converted.batch;
                if (batch.num_rows(), batch.num_columns()) != (table.rows.len(), table.columns.len()) {
                    problems.push(format!("{name} {} {}: shape differs", tool.name(), table.name));
                }
            }
        }
    }
    assert!(tables > 40, "only {tables} tables were converted");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
