//! SQL over profiles: a Perfetto-shaped relational schema ([`schema`]) over oxprof's
//! model and typed reports, queried with embedded Apache DataFusion ([`Engine`]),
//! written out as text, CSV, JSON or Parquet ([`output`]), and exported as a
//! Hive-partitioned Parquet dataset ([`export`]) that Spark, DuckDB and DataFusion read.
//!
//! Profiles are reached only through an `oxprof-api` [`Session`](oxprof_api::session::Session)
//! (so any store the session is opened with works); tool tables come from the registry's
//! computations, so they equal `oxprof data`. No file is read or written by SQL itself.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

mod catalog_tables;
mod engine;
pub mod export;
mod model_tables;
pub mod output;
pub mod schema;
mod tool_tables;
pub mod views;

pub use engine::{Engine, QueryLimits, QueryResult};
pub use schema::SCHEMA_VERSION;
pub use tool_tables::sql_identifier;

use datafusion::error::DataFusionError;
use std::time::Duration;

/// Why a query or an export failed: one line naming the cause and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The SQL is not valid, names something unknown, or is not a read-only query.
    #[error("{0}")]
    Sql(String),
    /// A profile could not be read.
    #[error("{0}")]
    Profile(String),
    /// The query ran past its time limit and was cancelled.
    #[error("query cancelled: it ran longer than the {} s limit; narrow it (WHERE, LIMIT) or raise the limit", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The query needed more memory than its budget.
    #[error("query cancelled: {0}; narrow it (WHERE, LIMIT, fewer columns) or raise the memory limit")]
    Memory(String),
    /// Writing output failed.
    #[error("{path}: cannot write: {cause}")]
    Io {
        /// The file or directory.
        path: String,
        /// The reason.
        cause: std::io::Error,
    },
    /// A bug: building a table failed.
    #[error("internal error (please report): {0}")]
    Internal(String),
}

impl SqlError {
    /// DataFusion's error as one of ours, with its message made to say what to do.
    pub fn from_datafusion(error: DataFusionError) -> SqlError {
        match error.find_root() {
            DataFusionError::ResourcesExhausted(m) => return SqlError::Memory(first_line(m)),
            DataFusionError::External(e) => {
                if let Some(ours) = e.downcast_ref::<SqlError>() {
                    return SqlError::Profile(ours.to_string());
                }
            }
            _ => {}
        }
        if let DataFusionError::SQL(parse, _) = error.find_root() {
            let text = parse.to_string();
            let text = text.strip_prefix("sql parser error: ").unwrap_or(&text);
            return SqlError::Sql(format!("SQL syntax error: {}", first_line(text)));
        }
        let message = first_line(&error.strip_backtrace());
        let refused = ["DDL not supported", "DML not supported", "Statement not supported"];
        if refused.iter().any(|r| message.contains(r)) {
            return SqlError::Sql(format!(
                "refused: {message} (oxprof runs read-only queries: SELECT, WITH, EXPLAIN; no COPY, \
                 CREATE, INSERT or SET)"
            ));
        }
        if message.contains("not found") && message.contains("table") {
            let tables: Vec<&str> = schema::TABLES.iter().map(|t| t.name).collect();
            let views: Vec<&str> = views::VIEWS.iter().map(|v| v.name).collect();
            return SqlError::Sql(format!(
                "{message}; the tables are {} and the views {}",
                tables.join(", "),
                views.join(", ")
            ));
        }
        SqlError::Sql(message)
    }

    /// Whether the caller's input is at fault (exit 2, HTTP 400) rather than oxprof.
    pub fn is_bad_request(&self) -> bool {
        matches!(self, SqlError::Sql(_) | SqlError::TimedOut(_) | SqlError::Memory(_))
    }
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}
