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

pub mod bounds;
pub mod budget;
mod catalog_tables;
mod engine;
pub mod export;
mod functions;
mod model_tables;
pub mod output;
pub mod schema;
mod tool_tables;
pub mod views;

pub use bounds::ShapeLimits;
pub use budget::PoolStats;
pub use engine::{Engine, MAX_SQL_BYTES, QueryLimits, QueryResult};
pub use schema::SCHEMA_VERSION;
pub use tool_tables::sql_identifier;

use datafusion::error::DataFusionError;
use std::time::Duration;

/// Why a query or an export failed: one line naming the cause and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The SQL is not valid, names something unknown, is not a read-only query, or is
    /// larger or deeper than the engine plans.
    #[error("{0}")]
    Sql(String),
    /// A value the query would build is larger than one value may be.
    #[error("{0}")]
    TooLarge(String),
    /// A profile could not be read.
    #[error("{message}")]
    Profile {
        /// The HTTP status `/data` answers for the same error (413 past an input budget,
        /// 422 for a damaged file, …).
        status: u16,
        /// The error.
        message: String,
    },
    /// The query ran past its time limit and was cancelled.
    #[error("query cancelled: it ran longer than the {} s limit; narrow it (WHERE, LIMIT) or raise the limit", .0.as_secs_f64())]
    TimedOut(Duration),
    /// The query was cancelled (its time ran out while it was stopping).
    #[error("query cancelled")]
    Cancelled,
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
    /// A profile's load or analysis error, with the status `/data` gives it.
    pub fn profile(error: oxprof_api::ApiError) -> SqlError {
        SqlError::Profile { status: error.http_status(), message: error.to_string() }
    }

    /// DataFusion's error as one of ours, with its message made to say what to do.
    pub fn from_datafusion(error: DataFusionError) -> SqlError {
        match error.find_root() {
            DataFusionError::ResourcesExhausted(m) => return SqlError::Memory(first_line(m)),
            DataFusionError::External(e) => {
                if let Some(ours) = e.downcast_ref::<SqlError>() {
                    return ours.again();
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

    /// The same error again (one carried inside DataFusion's is only borrowed).
    fn again(&self) -> SqlError {
        match self {
            SqlError::Sql(m) => SqlError::Sql(m.clone()),
            SqlError::TooLarge(m) => SqlError::TooLarge(m.clone()),
            SqlError::Profile { status, message } => SqlError::Profile { status: *status, message: message.clone() },
            SqlError::TimedOut(d) => SqlError::TimedOut(*d),
            SqlError::Cancelled => SqlError::Cancelled,
            SqlError::Memory(m) => SqlError::Memory(m.clone()),
            SqlError::Io { path, cause } => {
                SqlError::Io { path: path.clone(), cause: std::io::Error::new(cause.kind(), cause.to_string()) }
            }
            SqlError::Internal(m) => SqlError::Internal(m.clone()),
        }
    }

    /// Whether the caller's input is at fault (exit 2, HTTP 400) rather than oxprof.
    pub fn is_bad_request(&self) -> bool {
        matches!(
            self,
            SqlError::Sql(_)
                | SqlError::TooLarge(_)
                | SqlError::TimedOut(_)
                | SqlError::Cancelled
                | SqlError::Memory(_)
        )
    }

    /// The HTTP status of this error: 400 for the query's own faults and limits, the
    /// status `/data` answers for a profile's (413, 422, …), 500 for oxprof's.
    pub fn http_status(&self) -> u16 {
        match self {
            SqlError::Profile { status, .. } => *status,
            e if e.is_bad_request() => 400,
            _ => 500,
        }
    }
}
fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}
