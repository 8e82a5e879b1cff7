//! Bounded drill-down verbs for coding agents and scripts: `top`, `steps`, `tool`, `runs`,
//! `query`, `diff`, `events`, `hlo` and `allocations`, each a function over a [`Session`](oxprof_api::session::Session)
//! that returns a typed result (`Serialize` + `JsonSchema`: what `--format json` prints and
//! what the MCP server sends) and renders it as Markdown. Every answer fits a byte budget
//! ([`DEFAULT_BUDGET`], `--budget`), in JSON and in Markdown alike, and always ends with
//! what was left out and how to get more (`… 412 more rows: --offset 20`).
//!
//! The verbs read through `oxprof-api`'s one answer path
//! ([`oxprof_api::answer::answer`]); this crate does no IO of its own.

// Library code must not panic on bad input: no unwrap/expect outside tests.
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod drill;
pub mod verbs;
pub mod window;

pub use drill::*;
/// `diff`'s answer: `oxprof diff --format json`'s comparison (with its JSON schema).
pub use oxprof_diff::DiffReport;
pub use verbs::*;
pub use window::{Column, TableWindow, Windowed};

/// The default byte budget of one answer (its JSON, and its Markdown).
pub const DEFAULT_BUDGET: usize = 16 << 10;
/// The smallest budget accepted: room for the headings and the line saying what was left out.
pub const MIN_BUDGET: usize = 1 << 10;
/// The largest budget accepted.
pub const MAX_BUDGET: usize = 16 << 20;
/// Rows shown by default.
pub const DEFAULT_LIMIT: usize = 20;

/// Why a verb could not answer: one line, naming what to change.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The answer path's own error (no such run, host or tool; an unreadable profile; a
    /// budget of the input).
    #[error(transparent)]
    Api(#[from] oxprof_api::ApiError),
    /// A tool name that is not a tool oxprof computes.
    #[error(transparent)]
    Tool(#[from] oxprof_api::registry::ToolNameError),
    /// SQL that failed (its message names the limit it hit).
    #[error("{0}")]
    Sql(String),
    /// An argument out of range or naming nothing.
    #[error("bad argument {name}: {reason}")]
    BadArgument {
        /// The argument.
        name: &'static str,
        /// What is wrong and what would do.
        reason: String,
    },
    /// The tool's answer is not tables (a trace, a binary body).
    #[error("{tool}'s answer has no tables ({why}); `oxprof data {tool} --format json` prints it whole")]
    NoTables {
        /// The tool.
        tool: String,
        /// What it is instead.
        why: &'static str,
    },
}

/// The budget asked for (`None`: [`DEFAULT_BUDGET`]), checked against its bounds.
pub fn budget(bytes: Option<usize>) -> Result<usize, AgentError> {
    let bytes = bytes.unwrap_or(DEFAULT_BUDGET);
    if !(MIN_BUDGET..=MAX_BUDGET).contains(&bytes) {
        return Err(AgentError::BadArgument {
            name: "budget",
            reason: format!("{bytes} bytes is outside {MIN_BUDGET}..={MAX_BUDGET}"),
        });
    }
    Ok(bytes)
}
