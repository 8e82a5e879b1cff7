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
//! `hive_types_autocast=0`).
//!
//! Hosts are exported one after the other, each decoded once: its model tables and its
//! tool tables (whose analysis is computed from that same decode) are written side by
//! side on every core, each model table streamed batch by batch into its file, and the
//! model is dropped before the next host is read. So memory stays one host's model plus
//! the row groups being encoded, whatever the host count.

use crate::model_tables::{self, HostKey, Projection};
use crate::output::{plain, writer_properties};
use crate::schema::{Source, TABLES, TableDef};
use crate::{SqlError, catalog_tables, tool_tables};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use oxprof_api::catalog::ServedRun;
use oxprof_api::session::Session;
use oxprof_format::HostFile;
use oxprof_model::XSpace;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

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

impl ExportSummary {
    fn add(&mut self, other: ExportSummary) {
        for (table, rows) in other.rows {
            *self.rows.entry(table).or_default() += rows;
        }
        self.files += other.files;
        self.bytes += other.bytes;
    }
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

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SqlError {
    let path = path.display().to_string();
    move |cause| SqlError::Io { path, cause }
}

/// Writes every table of `runs` under `dir` (which must not exist or be empty).
pub fn export_parquet(session: &Session, runs: &[ServedRun], dir: &Path) -> Result<ExportSummary, SqlError> {
    if dir.exists() && std::fs::read_dir(dir).map_err(io_error(dir))?.next().is_some() {
        return Err(SqlError::Sql(format!(
            "{}: not empty; export into a new or empty directory (files are never replaced)",
            dir.display()
        )));
    }
    let mut summary = ExportSummary::default();
    for def in TABLES.iter().filter(|t| t.source == Source::Catalog) {
        let batch = catalog_tables::build(def, session, runs)?;
        let plain = plain(&[batch]).map_err(|e| SqlError::Internal(e.to_string()))?;
        summary.add(write_batches(&dir.join(def.name), def.name, &plain, false)?);
    }
    for run in runs {
        for file in &run.hosts {
            summary.add(export_host(session, run, file, dir)?);
        }
    }
    Ok(summary)
}

/// One piece of a host's export, run on whichever worker is free.
#[derive(Debug, Clone, Copy)]
enum Job {
    /// A model table, streamed into its file.
    Model(&'static TableDef),
    /// The host's analysis (from the decoded model), then every tool table.
    Tools,
}

/// Every table of one host: decoded once, the jobs spread over the cores (largest first).
fn export_host(session: &Session, run: &ServedRun, file: &HostFile, dir: &Path) -> Result<ExportSummary, SqlError> {
    let started = std::time::Instant::now();
    let space = {
        let _admission = session.admit();
        session.load(file, &|_| true).map_err(SqlError::profile)?
    };
    if std::env::var_os("OXPROF_EXPORT_TIMES").is_some() {
        eprintln!("export decode: {:.3} s", started.elapsed().as_secs_f64());
    }
    let key = HostKey { run: &run.name, host: &file.host };
    let partition = |def: &TableDef| {
        dir.join(def.name)
            .join(format!("run={}", hive_escape(&run.name)))
            .join(format!("host={}", hive_escape(&file.host)))
    };
    // `slice` and `args` are most of the work: they start first, on their own workers.
    let by_size = |def: &&TableDef| match def.name {
        "slice" => 0,
        "args" => 1,
        _ => 2,
    };
    let mut models: Vec<&'static TableDef> = TABLES.iter().filter(|t| t.source == Source::Model).collect();
    models.sort_by_key(by_size);
    let mut jobs: Vec<Job> = models.iter().map(|&def| Job::Model(def)).collect();
    // After the two large tables: the analysis takes about as long as `args`.
    jobs.insert(jobs.len().min(2), Job::Tools);
    let run_job = |job: Job| -> Result<ExportSummary, SqlError> {
        let started = std::time::Instant::now();
        let done = match job {
            Job::Model(def) => write_model_table(def, &space, key, &partition(def)),
            Job::Tools => write_tool_tables(session, run, file, &space, key, &partition),
        };
        if std::env::var_os("OXPROF_EXPORT_TIMES").is_some() {
            let name = match job {
                Job::Model(def) => def.name,
                Job::Tools => "tool tables",
            };
            eprintln!("export {name}: {:.3} s", started.elapsed().as_secs_f64());
        }
        done
    };
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).min(jobs.len());
    let worker = || -> Result<ExportSummary, SqlError> {
        let mut summary = ExportSummary::default();
        while let Some(&job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
            summary.add(run_job(job)?);
        }
        Ok(summary)
    };
    let results: Vec<Result<ExportSummary, SqlError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (1..workers).map(|_| scope.spawn(worker)).collect();
        let mut results = vec![worker()];
        for handle in handles {
            results.push(handle.join().unwrap_or_else(|_| Err(SqlError::Internal("an export worker panicked".into()))));
        }
        results
    });
    let mut summary = ExportSummary::default();
    for result in results {
        summary.add(result?);
    }
    // Dropped before the next host is decoded: one model resident at a time.
    drop(space);
    Ok(summary)
}

/// A model table of one host, each batch written as soon as it is built (`run` and
/// `host` are in the path, not built).
fn write_model_table(
    def: &'static TableDef,
    space: &XSpace,
    key: HostKey<'_>,
    dir: &Path,
) -> Result<ExportSummary, SqlError> {
    let columns: Vec<usize> = (0..def.columns.len()).filter(|&i| !is_host_column(def.columns[i].name)).collect();
    let projection = Projection::new(def, Some(&columns), None);
    // Label columns are written from their dictionaries as Parquet strings; without the
    // Arrow schema in the file every reader sees plain strings, as the schema says.
    let mut file = TableFile::create(dir, def.name, projection.schema().clone(), true)?;
    let mut failed = None;
    let built = model_tables::build_each(&projection, space, key, &mut |batch| match file.write(&batch) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if let Some(Err(e)) = built {
        return Err(SqlError::Internal(format!("{}: {e}", def.name)));
    }
    file.close()
}

/// The tool tables of one host, from the analysis of its decoded model.
fn write_tool_tables(
    session: &Session,
    run: &ServedRun,
    file: &HostFile,
    space: &XSpace,
    key: HostKey<'_>,
    partition: &dyn Fn(&TableDef) -> PathBuf,
) -> Result<ExportSummary, SqlError> {
    oxprof_api::op_stats::host_analysis_of_decoded(session, file, space).map_err(SqlError::profile)?;
    let mut summary = ExportSummary::default();
    for def in TABLES.iter() {
        let Source::Tool { tool, table } = def.source else { continue };
        if let Some(batch) = tool_tables::build(session, run, key, tool, table)? {
            let batches = without_host_columns(&batch)?;
            summary.add(write_batches(&partition(def), def.name, &batches, false)?);
        }
    }
    Ok(summary)
}

fn is_host_column(name: &str) -> bool {
    matches!(name, "run" | "host")
}

/// The batch without its `run` and `host` columns (they are in the path), and with
/// dictionary columns as plain text.
fn without_host_columns(batch: &RecordBatch) -> Result<Vec<RecordBatch>, SqlError> {
    let schema = batch.schema();
    let keep: Vec<usize> = (0..schema.fields().len()).filter(|&i| !is_host_column(schema.field(i).name())).collect();
    let projected = batch.project(&keep).map_err(|e| SqlError::Internal(e.to_string()))?;
    plain(&[projected]).map_err(|e| SqlError::Internal(e.to_string()))
}

/// Writes `batches` (at least one, for the schema) to `dir/part-0.parquet`.
fn write_batches(
    dir: &Path,
    table: &'static str,
    batches: &[RecordBatch],
    skip_arrow_schema: bool,
) -> Result<ExportSummary, SqlError> {
    let Some(first) = batches.first() else { return Ok(ExportSummary::default()) };
    let mut file = TableFile::create(dir, table, first.schema(), skip_arrow_schema)?;
    for b in batches {
        file.write(b)?;
    }
    file.close()
}

/// One Parquet file of a table being written.
struct TableFile {
    path: PathBuf,
    table: &'static str,
    writer: ArrowWriter<std::io::BufWriter<std::fs::File>>,
    rows: usize,
}

impl TableFile {
    /// `dir/part-0.parquet`, new (an existing file is never replaced).
    fn create(dir: &Path, table: &'static str, schema: SchemaRef, skip_arrow_schema: bool) -> Result<Self, SqlError> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let path = dir.join("part-0.parquet");
        let file = std::fs::File::create_new(&path).map_err(io_error(&path))?;
        let options =
            ArrowWriterOptions::new().with_properties(writer_properties()).with_skip_arrow_metadata(skip_arrow_schema);
        let writer = ArrowWriter::try_new_with_options(std::io::BufWriter::new(file), schema, options)
            .map_err(|e| SqlError::Internal(format!("{}: {e}", path.display())))?;
        Ok(TableFile { path, table, writer, rows: 0 })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<(), SqlError> {
        self.rows += batch.num_rows();
        self.writer.write(batch).map_err(|e| self.failed(e))
    }

    fn close(self) -> Result<ExportSummary, SqlError> {
        let TableFile { path, table, writer, rows } = self;
        let mut sink = writer.into_inner().map_err(|e| SqlError::Internal(format!("{}: {e}", path.display())))?;
        std::io::Write::flush(&mut sink).map_err(io_error(&path))?;
        let bytes = sink.get_ref().metadata().map(|m| m.len()).unwrap_or(0);
        Ok(ExportSummary { rows: BTreeMap::from([(table, rows)]), files: 1, bytes })
    }

    fn failed(&self, e: parquet::errors::ParquetError) -> SqlError {
        match e {
            parquet::errors::ParquetError::External(cause) => match cause.downcast::<std::io::Error>() {
                Ok(io) => SqlError::Io { path: self.path.display().to_string(), cause: *io },
                Err(other) => SqlError::Internal(format!("{}: {other}", self.path.display())),
            },
            other => SqlError::Internal(format!("{}: {other}", self.path.display())),
        }
    }
}
