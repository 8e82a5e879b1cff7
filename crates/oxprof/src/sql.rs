//! `oxprof query` and `oxprof export`: argument handling and printing around `oxprof-sql`.

use anyhow::{Context, Result};
use oxprof_sql::output::Format;
use oxprof_sql::{Engine, QueryLimits, SqlError};
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Arc;

use crate::stdout::{err, errln};

/// Output formats of `oxprof query`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryFormat {
    /// An aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// A JSON array of row objects.
    Json,
    /// One Parquet file (zstd) on stdout.
    Parquet,
}

impl From<QueryFormat> for Format {
    fn from(f: QueryFormat) -> Format {
        match f {
            QueryFormat::Table => Format::Table,
            QueryFormat::Csv => Format::Csv,
            QueryFormat::Json => Format::Json,
            QueryFormat::Parquet => Format::Parquet,
        }
    }
}

/// A session over `path` that keeps per-host analyses while the command runs (tool
/// tables of one host share them), and the runs selected.
fn open(
    path: &Path,
    run: Option<&str>,
    limits: oxprof_api::LoadLimits,
) -> Result<(Arc<oxprof_api::session::Session>, Vec<oxprof_api::catalog::ServedRun>)> {
    let options = oxprof_api::session::SessionOptions {
        confine_to_root: false,
        limits,
        ..oxprof_api::session::SessionOptions::default()
    };
    let session = Arc::new(oxprof_api::data::local_session(path, options)?);
    let runs = match run {
        Some(name) => vec![session.run(Some(name))?],
        None => {
            let snapshot = session.catalog().current();
            if snapshot.runs.is_empty() {
                // The catalog's own error says why nothing was found.
                vec![session.run(None)?]
            } else {
                snapshot.runs.clone()
            }
        }
    };
    Ok((session, runs))
}

/// Why a query failed, as the CLI's one line (exit 2 either way), naming the flag that
/// raises the limit it hit.
fn failed(error: SqlError) -> anyhow::Error {
    match error {
        SqlError::Memory(_) => anyhow::anyhow!("{error} (--sql-memory)"),
        SqlError::TimedOut(_) => anyhow::anyhow!("{error} (--timeout)"),
        error => anyhow::anyhow!(error),
    }
}

/// What `oxprof query` may spend.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Host files a scan decodes at once (`--hosts-at-once`).
    pub hosts_at_once: usize,
    /// Wall time after which a query is cancelled (`--timeout`; none by default).
    pub timeout: Option<std::time::Duration>,
    /// Memory queries may hold for their operators and the strings they build (`--sql-memory`).
    pub memory_bytes: usize,
}

impl Budget {
    fn limits(&self) -> QueryLimits {
        QueryLimits {
            hosts_at_once: self.hosts_at_once,
            timeout: self.timeout,
            memory_bytes: self.memory_bytes,
            ..QueryLimits::default()
        }
    }
}

/// Hosts a query left out (their profile could not be read), one line each on stderr.
fn warn(warnings: &[String]) {
    for w in warnings {
        errln!("oxprof: warning: {w}");
    }
}

/// `oxprof query SQL PATH`.
pub fn query(
    sql: &str,
    path: &Path,
    run: Option<&str>,
    format: QueryFormat,
    budget: Budget,
    limits: oxprof_api::LoadLimits,
) -> Result<()> {
    let (session, runs) = open(path, run, limits)?;
    let engine = Engine::new(session, runs, budget.limits()).map_err(failed)?;
    let result = engine.query(sql).map_err(failed)?;
    warn(&result.warnings);
    let mut out = crate::stdout::stdout();
    oxprof_sql::output::write(&result, format.into(), &mut out).map_err(failed)?;
    out.flush().context("cannot write to stdout")
}

/// `oxprof query --repl PATH`: statements ended by `;`, answered as tables, until EOF.
pub fn repl(path: &Path, run: Option<&str>, budget: Budget, limits: oxprof_api::LoadLimits) -> Result<()> {
    let (session, runs) = open(path, run, limits)?;
    let hosts: usize = runs.iter().map(|r| r.hosts.len()).sum();
    let engine = Engine::new(session, runs, budget.limits()).map_err(failed)?;
    let tables: Vec<&str> = oxprof_sql::schema::TABLES.iter().map(|t| t.name).collect();
    errln!(
        "oxprof SQL (schema {}) over {} run(s), {hosts} host(s). Tables: {}. End statements with ';', Ctrl-D quits.",
        oxprof_sql::SCHEMA_VERSION,
        engine.runs().len(),
        tables.join(", ")
    );
    let stdin = std::io::stdin();
    let mut statement = String::new();
    prompt(&statement);
    for line in stdin.lock().lines() {
        let line = line.context("cannot read stdin")?;
        statement.push_str(&line);
        statement.push('\n');
        if line.trim_end().ends_with(';') {
            let sql = statement.trim().trim_end_matches(';').to_string();
            statement.clear();
            if !sql.is_empty() {
                let started = std::time::Instant::now();
                match engine.query(&sql) {
                    Ok(result) => {
                        warn(&result.warnings);
                        let mut out = crate::stdout::stdout();
                        oxprof_sql::output::write(&result, Format::Table, &mut out).map_err(failed)?;
                        errln!("{} rows in {:.3} s", result.row_count(), started.elapsed().as_secs_f64());
                    }
                    Err(e) => errln!("error: {e}"),
                }
            }
        }
        prompt(&statement);
    }
    Ok(())
}

fn prompt(pending: &str) {
    err!("{}", if pending.is_empty() { "oxprof> " } else { "   ...> " });
    let _ = std::io::stderr().flush();
}

/// `oxprof export PATH --to parquet DIR`.
pub fn export(path: &Path, run: Option<&str>, dir: &Path, limits: oxprof_api::LoadLimits) -> Result<()> {
    let (session, runs) = open(path, run, limits)?;
    let started = std::time::Instant::now();
    let summary = oxprof_sql::export::export_parquet(&session, &runs, dir).map_err(failed)?;
    let rows: Vec<String> = summary.rows.iter().map(|(t, n)| format!("{t} {n}")).collect();
    errln!(
        "oxprof: wrote {} ({} files, {:.1} MB, {:.2} s; rows: {})",
        dir.display(),
        summary.files,
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        rows.join(", ")
    );
    Ok(())
}
