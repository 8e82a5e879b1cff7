//! Golden tests over every committed fixture: `slice` holds exactly the model's events,
//! the tool tables hold exactly the tool reports' cells, and bad or writing SQL is one
//! clear error.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use oxprof_api::data::{DataRequest, compute};
use oxprof_api::session::{Session, SessionOptions};
use oxprof_sql::schema::{Source, TABLES};
use oxprof_sql::{Engine, QueryLimits, QueryResult, SqlError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every committed fixture directory: the refkit profiles, the PyTorch traces, the demo.
fn fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["testdata/profiles", "testdata/kineto", "testdata/demo"] {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(repo().join(dir)).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        entries.sort();
        out.extend(entries);
    }
    assert!(out.len() >= 7, "expected the committed fixtures, found {out:?}");
    out
}

fn engine(path: &Path) -> (Arc<Session>, Engine) {
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
    let session = Arc::new(oxprof_api::data::local_session(path, options).unwrap());
    let runs = session.catalog().current().runs.clone();
    assert!(!runs.is_empty(), "{}: no runs", path.display());
    let engine = Engine::new(session.clone(), runs, QueryLimits::default()).unwrap();
    (session, engine)
}

/// Every cell of a result as text, row by row.
fn cells(result: &QueryResult) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for batch in &result.batches {
        let columns: Vec<_> = batch.columns().iter().map(|c| cast(c, &DataType::Utf8).unwrap()).collect();
        for r in 0..batch.num_rows() {
            rows.push(
                columns
                    .iter()
                    .map(|c| if c.is_null(r) { String::new() } else { c.as_string::<i32>().value(r).to_string() })
                    .collect(),
            );
        }
    }
    rows
}

#[test]
fn slice_rows_are_the_models_events() {
    for path in fixtures() {
        let (session, engine) = engine(&path);
        let result =
            engine.query("SELECT run, host, count(*) AS n FROM slice GROUP BY run, host ORDER BY run, host").unwrap();
        let counted: Vec<(String, String, i64)> =
            cells(&result).into_iter().map(|row| (row[0].clone(), row[1].clone(), row[2].parse().unwrap())).collect();
        let mut expected = Vec::new();
        for run in engine.runs() {
            for file in &run.hosts {
                let n = session.load(file, &|_| true).unwrap().event_count() as i64;
                if n > 0 {
                    expected.push((run.name.clone(), file.host.clone(), n));
                }
            }
        }
        expected.sort();
        assert_eq!(counted, expected, "{}", path.display());
        // Every slice's track exists, and parents are on the same track.
        let orphans = engine
            .query(
                "SELECT count(*) FROM slice s LEFT JOIN thread_track t ON s.track_id = t.id AND s.run = t.run \
                 AND s.host = t.host WHERE t.id IS NULL",
            )
            .unwrap();
        assert_eq!(cells(&orphans), [["0"]], "{}", path.display());
        let strays = engine
            .query(
                "SELECT count(*) FROM slice c JOIN slice p ON c.parent_id = p.id AND c.run = p.run AND c.host = p.host \
                 WHERE c.track_id <> p.track_id OR p.ts_ps > c.ts_ps OR c.depth <> p.depth + 1",
            )
            .unwrap();
        assert_eq!(cells(&strays), [["0"]], "{}", path.display());
    }
}

#[test]
fn tool_tables_are_the_tool_reports() {
    for path in fixtures() {
        let (session, engine) = engine(&path);
        for def in TABLES {
            let Source::Tool { tool, table } = def.source else { continue };
            for run in engine.runs() {
                for file in &run.hosts {
                    let request = DataRequest {
                        run: Some(run.name.clone()),
                        tool: tool.to_string(),
                        host: Some(file.host.clone()),
                        params: Default::default(),
                    };
                    let report = compute(&session, run, &request, false).unwrap();
                    let Some(expected) = report.tables().into_iter().find(|t| t.name == table) else { continue };
                    let sql = format!(
                        "SELECT * FROM {} WHERE run = '{}' AND host = '{}'",
                        def.name,
                        run.name.replace('\'', "''"),
                        file.host.replace('\'', "''")
                    );
                    let got = engine.query(&sql).unwrap();
                    let got = cells(&got);
                    assert_eq!(got.len(), expected.rows.len(), "{} {} {}", path.display(), def.name, file.host);
                    for (row, want) in got.iter().zip(&expected.rows) {
                        assert_eq!(&row[..2], [run.name.clone(), file.host.clone()]);
                        for (index, (cell, value)) in row[2..].iter().zip(want).enumerate() {
                            let want_text = expected.cell_text(index, value);
                            let same = match (cell.parse::<f64>(), value) {
                                (Ok(a), oxprof_wire::datatable::CellValue::Number(b)) => {
                                    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
                                }
                                _ => cell == &want_text || (cell.is_empty() && want_text.is_empty()),
                            };
                            assert!(same, "{} {} col {index}: {cell:?} vs {want_text:?}", path.display(), def.name);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn memory_events_are_memory_profile_snapshots() {
    let path = repo().join("testdata/profiles/tf_memory");
    let (session, engine) = engine(&path);
    let run = &engine.runs()[0];
    let space = session.load(&run.hosts[0], &|_| true).unwrap();
    let profile = oxprof_analysis::tools::memory_profile::memory_profile(&space).unwrap();
    let expected: usize = profile.allocators.values().map(|a| a.snapshots.len()).sum();
    assert!(expected > 0);
    let got = engine.query("SELECT count(*) FROM memory_events").unwrap();
    assert_eq!(cells(&got), [[expected.to_string()]]);
}

#[test]
fn views_answer() {
    let path = repo().join("testdata/profiles/jax_train");
    let (_, engine) = engine(&path);
    for view in oxprof_sql::views::VIEWS {
        let result = engine.query(view.example);
        assert!(result.is_ok(), "{}: {:?}", view.name, result.err());
    }
    let steps = engine.query("SELECT count(*) FROM step_time_all_hosts").unwrap();
    assert_ne!(cells(&steps), [["0"]]);
}

#[test]
fn refused_and_bad_sql_is_one_clear_error() {
    let path = repo().join("testdata/profiles/jax_train");
    let (_, engine) = engine(&path);
    for (sql, says) in [
        ("SELEC 1", "syntax"),
        ("SELECT * FROM nope", "the tables are slice"),
        ("COPY (SELECT 1) TO '/tmp/x.csv'", "refused"),
        ("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'", "refused"),
        ("CREATE TABLE t AS SELECT 1", "refused"),
        ("INSERT INTO slice VALUES (1)", "refused"),
        ("SET datafusion.execution.batch_size = 1", "refused"),
        ("SELECT 1; SELECT 2", "statement"),
        ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
    ] {
        let error = engine.query(sql).unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, SqlError::Sql(_)), "{sql}: {error:?}");
        assert!(text.to_lowercase().contains(&says.to_lowercase()), "{sql}: {text}");
        assert!(!text.contains('\n'), "{sql}: {text}");
    }
}

#[test]
fn row_and_time_limits() {
    let path = repo().join("testdata/profiles/jax_train");
    let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
    let session = Arc::new(oxprof_api::data::local_session(&path, options).unwrap());
    let runs = session.catalog().current().runs.clone();
    let limits = QueryLimits { max_rows: Some(7), ..QueryLimits::default() };
    let engine = Engine::new(session.clone(), runs.clone(), limits).unwrap();
    let result = engine.query("SELECT id FROM slice").unwrap();
    assert_eq!((result.row_count(), result.truncated), (7, true));
    let limits = QueryLimits { timeout: Some(std::time::Duration::from_millis(1)), ..QueryLimits::default() };
    let engine = Engine::new(session, runs, limits).unwrap();
    let error =
        engine.query("SELECT count(*) FROM slice a, slice b, slice c WHERE a.dur + b.dur + c.dur = 12345").unwrap_err();
    assert!(matches!(error, SqlError::TimedOut(_)), "{error:?}");
    assert!(error.to_string().contains("cancelled"), "{error}");
}

#[test]
fn slice_counts_by_type_are_int64() {
    let path = repo().join("testdata/profiles/jax_train");
    let (_, engine) = engine(&path);
    let result = engine.query("SELECT count(*) AS n, sum(dur) AS d FROM slice").unwrap();
    let batch = &result.batches[0];
    assert!(batch.column(0).as_primitive_opt::<Int64Type>().is_some());
}
