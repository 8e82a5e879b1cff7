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
                        host: Some(file.host.clone()),
                        ..DataRequest::new(tool)
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
    let profile = oxprof_xprof::tools::memory_profile::memory_profile(&space).unwrap();
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

/// The rows of a result as sorted text (partitions interleave hosts in any order).
fn sorted_cells(result: &QueryResult) -> Vec<Vec<String>> {
    let mut rows = cells(result);
    rows.sort();
    rows
}

/// Scans that build only some columns, only some hosts or only some rows answer as the
/// full scan does: every model table, every column alone and in pairs out of order (on an
/// XSpace, a PyTorch and a GPU fixture: each query decodes afresh), and
/// `run`/`host` filters and `LIMIT` on every fixture.
#[test]
fn projected_filtered_and_limited_scans_equal_the_full_scan() {
    for path in fixtures() {
        let (_, engine) = engine(&path);
        let every_column = ["jax_train", "train", "mi300x_jax_gemm"].iter().any(|n| path.ends_with(n));
        for def in TABLES.iter().filter(|t| t.source == Source::Model && every_column) {
            let full = cells(&engine.query(&format!("SELECT * FROM {}", def.name)).unwrap());
            let names: Vec<&str> = def.columns.iter().map(|c| c.name).collect();
            let mut subsets: Vec<Vec<usize>> = (0..names.len()).map(|i| vec![i]).collect();
            subsets.extend((1..names.len()).map(|i| vec![i, i - 1]));
            for subset in subsets {
                let list: Vec<String> = subset.iter().map(|&i| format!("\"{}\"", names[i])).collect();
                let sql = format!("SELECT {} FROM {}", list.join(", "), def.name);
                let mut expected: Vec<Vec<String>> =
                    full.iter().map(|row| subset.iter().map(|&i| row[i].clone()).collect()).collect();
                expected.sort();
                assert_eq!(sorted_cells(&engine.query(&sql).unwrap()), expected, "{}: {sql}", path.display());
            }
            let count = engine.query(&format!("SELECT count(*) FROM {}", def.name)).unwrap();
            assert_eq!(cells(&count), [[full.len().to_string()]], "{}: {}", path.display(), def.name);
        }
        // Per host: a `host =` filter (hosts skipped) equals the full scan's rows of that host.
        let by_host = cells(&engine.query("SELECT host, count(*) FROM slice GROUP BY host ORDER BY host").unwrap());
        for row in &by_host {
            let sql = format!("SELECT count(*) FROM slice WHERE host = '{}'", row[0].replace('\'', "''"));
            assert_eq!(cells(&engine.query(&sql).unwrap()), [[row[1].clone()]], "{}: {sql}", path.display());
            let sql =
                format!("SELECT count(*) FROM slice WHERE host IN ('{}', 'no such host')", row[0].replace('\'', "''"));
            assert_eq!(cells(&engine.query(&sql).unwrap()), [[row[1].clone()]], "{}: {sql}", path.display());
        }
        let none = engine.query("SELECT count(*) FROM slice WHERE host = 'no such host'").unwrap();
        assert_eq!(cells(&none), [["0"]]);
        // A limit: that many rows, each one of the full scan's.
        let full = sorted_cells(&engine.query("SELECT * FROM slice").unwrap());
        let limited = cells(&engine.query("SELECT * FROM slice LIMIT 3").unwrap());
        assert_eq!(limited.len(), full.len().min(3), "{}", path.display());
        assert!(limited.iter().all(|row| full.binary_search(row).is_ok()), "{}", path.display());
    }
}

/// Hosts read one at a time (the default: one model resident) or several side by side give
/// the same answers, on every fixture (the multi-host ones interleave hosts differently).
#[test]
fn hosts_read_one_at_a_time_or_side_by_side_answer_alike() {
    let queries = [
        "SELECT name, count(*), sum(dur) FROM slice GROUP BY name",
        "SELECT host, track_id, count(*), max(depth) FROM slice GROUP BY host, track_id",
        "SELECT host, count(*) FROM args GROUP BY host",
    ];
    for path in fixtures() {
        let options = SessionOptions { confine_to_root: false, ..SessionOptions::default() };
        let session = Arc::new(oxprof_api::data::local_session(&path, options).unwrap());
        let runs = session.catalog().current().runs.clone();
        let one = Engine::new(session.clone(), runs.clone(), QueryLimits::default()).unwrap();
        let side_by_side =
            Engine::new(session, runs, QueryLimits { hosts_at_once: 3, ..QueryLimits::default() }).unwrap();
        for sql in queries {
            let (a, b) = (one.query(sql).unwrap(), side_by_side.query(sql).unwrap());
            assert_eq!(sorted_cells(&a), sorted_cells(&b), "{}: {sql}", path.display());
        }
    }
}

/// `testdata/sql/perfetto-recipes.sql` as (name, SQL).
fn recipes() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("testdata/sql/perfetto-recipes.sql")).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("-- name: ") {
            out.push((name.trim().to_string(), String::new()));
        } else if !line.starts_with("--")
            && let Some((_, sql)) = out.last_mut()
        {
            sql.push_str(line);
            sql.push('\n');
        }
    }
    out.into_iter().map(|(n, s)| (n, s.trim().trim_end_matches(';').to_string())).collect()
}

/// PerfettoSQL-style recipes run unchanged on a single-host fixture (ids are per host, so
/// Perfetto's joins on ids alone hold there) and answer what they must.
#[test]
fn perfetto_recipes_run_unchanged() {
    let recipes = recipes();
    assert!(recipes.len() >= 10, "{recipes:?}");
    for fixture in ["testdata/profiles/jax_train", "testdata/kineto/train"] {
        let path = repo().join(fixture);
        if !path.exists() {
            continue;
        }
        let (_, engine) = engine(&path);
        for (name, sql) in &recipes {
            let result = engine.query(sql).unwrap_or_else(|e| panic!("{fixture}: {name}: {e}"));
            let rows = cells(&result);
            match name.as_str() {
                "slices_with_thread" | "top_slices" | "busy_per_thread" => {
                    assert!(!rows.is_empty(), "{fixture}: {name}")
                }
                // The chain ends at a root and climbs one level a row.
                "ancestors" => {
                    let depths: Vec<i64> = rows.iter().map(|r| r[2].parse().unwrap()).collect();
                    assert_eq!(depths, (0..depths.len() as i64).collect::<Vec<_>>(), "{fixture}: {name}");
                }
                _ => {}
            }
        }
        // Self time summed over every name is the top-level slices' time (children nest).
        let total_self = engine
            .query(
                "SELECT SUM(p.dur - COALESCE(c.child_dur, 0)) FROM slice p LEFT JOIN \
                    (SELECT parent_id, SUM(dur) AS child_dur FROM slice GROUP BY parent_id) c ON c.parent_id = p.id",
            )
            .unwrap();
        let top = engine.query("SELECT SUM(dur) FROM slice WHERE depth = 0").unwrap();
        assert_eq!(cells(&total_self), cells(&top), "{fixture}");
    }
}

/// Every Parquet file under `dir`.
fn parquet_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if e.path().extension().is_some_and(|x| x == "parquet") {
                out.push(e.path());
            }
        }
    }
    out
}

/// The export read back holds every table's rows (as `SELECT` over the profile gives
/// them, `run` and `host` aside: they are the path), in plain Parquet types.
#[test]
fn the_export_reads_back_as_the_tables() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    for path in fixtures() {
        let (session, engine) = engine(&path);
        let dir = tempfile::tempdir().unwrap();
        let summary = oxprof_sql::export::export_parquet(&session, engine.runs(), dir.path()).unwrap();
        for def in TABLES.iter().filter(|t| t.source != Source::Catalog) {
            let mut read = Vec::new();
            for file in parquet_files(&dir.path().join(def.name)) {
                let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file).unwrap()).unwrap();
                for field in reader.schema().fields() {
                    assert!(!matches!(field.data_type(), DataType::Dictionary(..)), "{}: {field}", file.display());
                    assert!(!["run", "host"].contains(&field.name().as_str()), "{}", file.display());
                }
                for batch in reader.build().unwrap() {
                    let batch = batch.unwrap();
                    let columns: Vec<_> = batch.columns().iter().map(|c| cast(c, &DataType::Utf8).unwrap()).collect();
                    for r in 0..batch.num_rows() {
                        read.push(
                            columns
                                .iter()
                                .map(|c| {
                                    if c.is_null(r) { String::new() } else { c.as_string::<i32>().value(r).to_string() }
                                })
                                .collect::<Vec<_>>(),
                        );
                    }
                }
            }
            let everything = engine.query(&format!("SELECT * FROM {}", def.name)).unwrap();
            let keep: Vec<String> = everything
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .filter(|n| n != "run" && n != "host")
                .map(|n| format!("\"{n}\""))
                .collect();
            if keep.is_empty() {
                continue;
            }
            let expected = engine.query(&format!("SELECT {} FROM {}", keep.join(", "), def.name)).unwrap();
            let mut expected = cells(&expected);
            expected.sort();
            read.sort();
            assert_eq!(read.len(), summary.rows.get(def.name).copied().unwrap_or(0), "{} {}", path.display(), def.name);
            assert_eq!(read, expected, "{} {}", path.display(), def.name);
        }
    }
}
