//! The verbs: their arguments (`Deserialize` + `JsonSchema`, so the MCP server takes them
//! as they are), their results (`Serialize` + `JsonSchema`) and Markdown renderings.
//!
//! * [`top`]: the top rows of a tool's main table by a measure (ops, kernels, HLO ops,
//!   PyTorch operators).
//! * [`steps`]: the step list with each step's breakdown.
//! * [`tool`]: any registry tool's tables, notes first.
//! * [`runs`]: the runs and hosts of a path.
//! * [`query`]: SQL, its rows bounded.
//! * [`diff`]: two runs compared (`oxprof diff`'s typed comparison).

use crate::window::{TableWindow, Windowed, fit};
use crate::{AgentError, DEFAULT_LIMIT, budget};
use oxprof_api::catalog::ServedRun;
use oxprof_api::data::{ALL_HOSTS, DataRequest};
use oxprof_api::registry;
use oxprof_api::session::Session;
use oxprof_report::{ColumnKind, NumberFormat, Report, Table, ToolId};
use oxprof_wire::datatable::CellValue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// Most rows one answer may ask for.
pub const MAX_LIMIT: usize = 10_000;

/// What `top` ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TopKind {
    /// Framework ops (framework_op_stats), by total self time.
    #[default]
    Ops,
    /// GPU kernels (kernel_stats; pytorch_kernel_stats on a PyTorch trace), by total time.
    Kernels,
    /// HLO ops (hlo_stats), by total self time.
    Hlo,
    /// PyTorch operators (pytorch_op_stats), by device self time (host self time when
    /// the trace has no device time).
    Operators,
}

impl TopKind {
    /// Its name, as arguments spell it.
    pub fn name(self) -> &'static str {
        match self {
            TopKind::Ops => "ops",
            TopKind::Kernels => "kernels",
            TopKind::Hlo => "hlo",
            TopKind::Operators => "operators",
        }
    }
}

/// The rows asked for and the budget.
pub(crate) fn window_args(limit: Option<usize>, budget_bytes: Option<usize>) -> Result<(usize, usize), AgentError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(AgentError::BadArgument { name: "limit", reason: format!("{limit} is outside 1..={MAX_LIMIT}") });
    }
    Ok((limit, budget(budget_bytes)?))
}

/// `top`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct TopArgs {
    /// What to rank: ops, kernels, hlo or operators.
    #[serde(default)]
    pub what: TopKind,
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    pub host: Option<String>,
    /// The column to sort by, most first (default: self time; the answer lists the columns).
    pub by: Option<String>,
    /// Rows to show (default 20).
    pub limit: Option<usize>,
    /// Rows to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `top`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TopResult {
    /// The run.
    pub run: String,
    /// The host selection (ALL_HOSTS: every host combined).
    pub host: String,
    /// The tool whose table this is.
    pub tool: String,
    /// The column sorted by, most first.
    pub by: String,
    /// oxprof's notes on the answer (e.g. why no steps were found).
    pub notes: Vec<String>,
    /// The rows.
    pub table: TableWindow,
}

impl Windowed for TopResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let title = format!("Top of {} in run {} ({}), by {}, most first", self.tool, self.run, self.host, self.by);
        heading(&title, &self.notes) + &self.table.markdown()
    }
}

/// A heading and the notes under it.
pub(crate) fn heading(title: &str, notes: &[String]) -> String {
    let mut out = format!("## {title}\n\n");
    for note in notes {
        out.push_str(&format!("> **Note:** {}\n\n", note.replace('\n', " ")));
    }
    out
}

/// The run `name` names (the newest when `None`) and its host selection's name.
pub(crate) fn select(
    session: &Session,
    run: Option<&str>,
    host: Option<&str>,
) -> Result<(ServedRun, String), AgentError> {
    let run = session.run(run)?;
    let host = host.filter(|h| !h.is_empty()).unwrap_or(ALL_HOSTS).to_string();
    Ok((run, host))
}

/// Whether the run is a PyTorch (Kineto) trace: the format seam's verdict on its first
/// host file's first bytes, so that a large trace is not imported once to ask and again to
/// answer.
pub(crate) fn is_pytorch(session: &Session, run: &ServedRun) -> Result<bool, AgentError> {
    let Some(first) = run.hosts.first() else { return Ok(false) };
    let detected = session.store().detect(&first.path).map_err(oxprof_api::ApiError::from)?;
    Ok(detected.format == oxprof_format::Format::Kineto)
}

/// The report of `tool` on the run and host selection.
pub(crate) fn report_of(
    session: &Session,
    run: &ServedRun,
    host: &str,
    tool: ToolId,
) -> Result<Box<dyn Report>, AgentError> {
    let request = DataRequest { run: Some(run.name.clone()), host: Some(host.to_string()), ..DataRequest::new(tool) };
    let answer = oxprof_api::answer::answer(session, run, &request, false)?;
    match answer {
        oxprof_api::answer::Answer::Report(report) => Ok(report),
        oxprof_api::answer::Answer::Body { body, .. } => Err(AgentError::NoTables {
            tool: tool.name().to_string(),
            why: if matches!(body, oxprof_report::Body::Bytes { .. }) { "a binary body" } else { "a trace's events" },
        }),
    }
}

/// `report`'s table `name`, or a one-line error listing the tables it has.
fn table_named(report: &dyn Report, tool: &str, name: &str) -> Result<Table, AgentError> {
    let tables = report.tables();
    let names: Vec<String> = tables.iter().map(|t| t.name.clone()).collect();
    tables.into_iter().find(|t| t.name == name).ok_or_else(|| AgentError::NoTables {
        tool: tool.to_string(),
        why: if names.is_empty() { "none at all" } else { "not the one expected" },
    })
}

/// The value of a cell as a sort key (numbers; anything else last).
fn sort_key(cell: &CellValue) -> f64 {
    match cell {
        CellValue::Number(v) if v.is_finite() => *v,
        CellValue::Int(n) => *n as f64,
        CellValue::Bool(b) => f64::from(u8::from(*b)),
        _ => f64::NEG_INFINITY,
    }
}

/// Row indices of `table` sorted by column `column`, most first (ties in table order).
fn order_by(table: &Table, column: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..table.rows.len()).collect();
    let key = |i: usize| table.rows[i].get(column).map_or(f64::NEG_INFINITY, sort_key);
    order.sort_by(|&a, &b| key(b).total_cmp(&key(a)));
    order
}

/// The top rows of a tool's main table by a measure.
pub fn top(session: &Session, args: &TopArgs) -> Result<TopResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let (run, host) = select(session, args.run.as_deref(), args.host.as_deref())?;
    let (tool, table, default_by) = match args.what {
        TopKind::Ops => (ToolId::FRAMEWORK_OP_STATS, "ops", "total_self_time"),
        TopKind::Hlo => (ToolId::HLO_STATS, "hlo_ops", "total_self_time"),
        TopKind::Operators => (ToolId::PYTORCH_OP_STATS, "operators", "device_self_us"),
        TopKind::Kernels if is_pytorch(session, &run)? => (ToolId::PYTORCH_KERNEL_STATS, "by_name", "total_us"),
        TopKind::Kernels => (ToolId::KERNEL_STATS, "kernels", "total_duration_us"),
    };
    let report = report_of(session, &run, &host, tool)?;
    let table = match args.what {
        // PyTorch operators: the first table (by name, or by name and shape when grouped).
        TopKind::Operators => report
            .tables()
            .into_iter()
            .next()
            .ok_or_else(|| AgentError::NoTables { tool: tool.name().to_string(), why: "none at all" })?,
        _ => table_named(&*report, tool.name(), table)?,
    };
    let column_of = |name: &str| table.columns.iter().position(|c| c.name == name);
    let by = match &args.by {
        Some(by) => by.clone(),
        // Host self time when the trace has no device time (a CPU-only PyTorch run).
        None if args.what == TopKind::Operators
            && column_of("device_self_us")
                .is_some_and(|c| table.rows.iter().all(|r| r.get(c).map_or(0.0, sort_key) <= 0.0)) =>
        {
            "host_self_us".to_string()
        }
        None => default_by.to_string(),
    };
    let column = column_of(&by).ok_or_else(|| {
        let numeric: Vec<&str> = table
            .columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Number | ColumnKind::Integer))
            .map(|c| c.name.as_str())
            .collect();
        AgentError::BadArgument {
            name: "by",
            reason: format!("{} has no column {by:?}; sort by one of {}", tool.name(), numeric.join(", ")),
        }
    })?;
    let order = order_by(&table, column);
    let mut result = TopResult {
        run: run.name.clone(),
        host,
        tool: tool.name().to_string(),
        by,
        notes: report.notes(),
        table: TableWindow::of(&table, Some(&order), args.offset.unwrap_or(0), limit),
    };
    fit(&mut result, budget);
    Ok(result)
}

/// `steps`' arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct StepsArgs {
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    pub host: Option<String>,
    /// Steps to show (default 20).
    pub limit: Option<usize>,
    /// Steps to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `steps`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepsResult {
    /// The run.
    pub run: String,
    /// The host selection.
    pub host: String,
    /// The tool the steps come from (input_pipeline_analyzer; pytorch_overview for a
    /// PyTorch trace).
    pub tool: String,
    /// oxprof's notes (e.g. why no steps were found).
    pub notes: Vec<String>,
    /// One row per step with its breakdown, in step order.
    pub table: TableWindow,
}

impl Windowed for StepsResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let title = format!("Steps of run {} ({}), from {}", self.run, self.host, self.tool);
        heading(&title, &self.notes) + &self.table.markdown()
    }
}

/// The step list with each step's time breakdown.
pub fn steps(session: &Session, args: &StepsArgs) -> Result<StepsResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let (run, host) = select(session, args.run.as_deref(), args.host.as_deref())?;
    let (tool, table) = if is_pytorch(session, &run)? {
        (ToolId::PYTORCH_OVERVIEW, "step_breakdown")
    } else {
        (ToolId::INPUT_PIPELINE_ANALYZER, "step_time")
    };
    let report = report_of(session, &run, &host, tool)?;
    let table = table_named(&*report, tool.name(), table)?;
    let mut result = StepsResult {
        run: run.name.clone(),
        host,
        tool: tool.name().to_string(),
        notes: report.notes(),
        table: TableWindow::of(&table, None, args.offset.unwrap_or(0), limit),
    };
    fit(&mut result, budget);
    Ok(result)
}

/// `tool`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ToolArgs {
    /// The tool (XProf's name, e.g. overview_page, framework_op_stats, memory_profile).
    pub tool: String,
    /// Run name (default: the newest run).
    pub run: Option<String>,
    /// Host name, or ALL_HOSTS (default: all hosts).
    pub host: Option<String>,
    /// Rows to show of each table (default 20).
    pub limit: Option<usize>,
    /// Rows to skip first in each table (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `tool`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolResult {
    /// The run.
    pub run: String,
    /// The host selection.
    pub host: String,
    /// The tool (its own name, aliases resolved).
    pub tool: String,
    /// oxprof's notes, first.
    pub notes: Vec<String>,
    /// Its tables, in reading order.
    pub tables: Vec<TableWindow>,
}

impl Windowed for ToolResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        self.tables.iter_mut().collect()
    }

    fn markdown(&self) -> String {
        let mut out = heading(&format!("{} of run {} ({})", self.tool, self.run, self.host), &self.notes);
        for table in &self.tables {
            out.push_str(&table.markdown());
            out.push('\n');
        }
        // The whole answer ends with what it left out, as every verb's does.
        let left_out: Vec<String> =
            self.tables.iter().filter_map(|t| Some(format!("{}: {}", t.table, t.left_out.as_ref()?))).collect();
        match (self.tables.len(), left_out.is_empty()) {
            (0, _) => out.push_str("No tables.\n"),
            (n, true) => out.push_str(&format!("All rows of the {n} tables shown.\n")),
            (_, false) => out.push_str(&format!("Left out: {}.\n", left_out.join("; "))),
        }
        out
    }
}

/// Any registry tool's tables, each bounded (rows, then bytes), notes first.
pub fn tool(session: &Session, args: &ToolArgs) -> Result<ToolResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let tool = registry::resolve(&args.tool)?;
    let (run, host) = select(session, args.run.as_deref(), args.host.as_deref())?;
    let report = report_of(session, &run, &host, tool.id)?;
    let offset = args.offset.unwrap_or(0);
    let tables = report.tables().iter().map(|t| TableWindow::of(t, None, offset, limit)).collect();
    let mut result =
        ToolResult { run: run.name.clone(), host, tool: tool.name().to_string(), notes: report.notes(), tables };
    fit(&mut result, budget);
    Ok(result)
}

/// `runs`' arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct RunsArgs {
    /// Runs to show (default 20).
    pub limit: Option<usize>,
    /// Runs to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `runs`' answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunsResult {
    /// One row per run, newest first: its name, its host count and its hosts.
    pub table: TableWindow,
    /// What discovery skipped and why.
    pub skipped: Vec<String>,
    /// Why nothing was found, when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_reason: Option<String>,
}

impl Windowed for RunsResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let mut notes = self.skipped.clone();
        notes.extend(self.empty_reason.clone());
        heading("Runs", &notes) + &self.table.markdown()
    }
}

/// Most host names a run's row lists (the count says how many there are).
const MAX_HOSTS_LISTED: usize = 8;

/// The runs of the session's path, newest first, with their hosts.
pub fn runs(session: &Session, args: &RunsArgs) -> Result<RunsResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let snapshot = session.catalog().current();
    let mut table = Table::new("runs")
        .title("Runs, newest first")
        .column("run", "Run", ColumnKind::Text, NumberFormat::Shortest)
        .column("hosts", "Hosts", ColumnKind::Integer, NumberFormat::Shortest)
        .column("host_names", "Host names", ColumnKind::Text, NumberFormat::Shortest);
    for run in &snapshot.runs {
        let mut names: Vec<&str> = run.hosts.iter().take(MAX_HOSTS_LISTED).map(|h| h.host.as_str()).collect();
        let more = run.hosts.len().saturating_sub(MAX_HOSTS_LISTED);
        let more = format!("… {more} more (tool's host argument takes any)");
        if run.hosts.len() > MAX_HOSTS_LISTED {
            names.push(&more);
        }
        table.push_row(vec![
            CellValue::Text(run.name.clone()),
            CellValue::Int(i64::try_from(run.hosts.len()).unwrap_or(i64::MAX)),
            CellValue::Text(names.join(", ")),
        ]);
    }
    let mut result = RunsResult {
        table: TableWindow::of(&table, None, args.offset.unwrap_or(0), limit),
        skipped: snapshot.skipped.clone(),
        empty_reason: snapshot.empty_reason.clone(),
    };
    fit(&mut result, budget);
    Ok(result)
}

/// What a [`query`] may spend: the same as `oxprof serve`'s SQL route (its `query.rs`).
pub fn query_limits() -> oxprof_sql::QueryLimits {
    oxprof_sql::QueryLimits {
        max_rows: Some(MAX_LIMIT),
        timeout: Some(std::time::Duration::from_secs(20)),
        memory_bytes: 1 << 30,
        ..oxprof_sql::QueryLimits::default()
    }
}

/// `query`'s arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct QueryArgs {
    /// One read-only statement (SELECT, WITH, EXPLAIN); `oxprof query --help` and the SQL
    /// docs list the tables (slice, track, op_stats, kernels, hlo_ops, steps, …).
    pub sql: String,
    /// Only this run (default: every run of the path).
    pub run: Option<String>,
    /// Rows to show (default 20; the statement stops at 10000 rows).
    pub limit: Option<usize>,
    /// Rows to skip first (default 0).
    pub offset: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// `query`'s answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct QueryResult {
    /// The rows (each row's values in column order, as `oxprof query --format json`'s
    /// objects hold them).
    pub table: TableWindow,
    /// Whether the statement stopped at its row limit (more rows exist: add a LIMIT, a
    /// WHERE or an aggregation).
    pub stopped_at_row_limit: bool,
    /// Hosts left out because their profile could not be read.
    pub warnings: Vec<String>,
}

impl Windowed for QueryResult {
    fn windows_mut(&mut self) -> Vec<&mut TableWindow> {
        vec![&mut self.table]
    }

    fn markdown(&self) -> String {
        let mut notes = self.warnings.clone();
        if self.stopped_at_row_limit {
            notes.push(format!("the statement stopped at {MAX_LIMIT} rows: narrow it (WHERE, LIMIT, GROUP BY)"));
        }
        heading("Query", &notes) + &self.table.markdown()
    }
}

/// Runs one read-only statement on `engine` (over `runs`, or every run of the engine).
pub fn query(
    engine: &oxprof_sql::Engine,
    args: &QueryArgs,
    runs: Option<&[ServedRun]>,
) -> Result<QueryResult, AgentError> {
    let (limit, budget) = window_args(args.limit, args.budget)?;
    let failed = |e: oxprof_sql::SqlError| AgentError::Sql(e.to_string());
    let result = match runs {
        Some(runs) => engine.query_runs(&args.sql, runs),
        None => engine.query(&args.sql),
    }
    .map_err(failed)?;
    let mut json = Vec::new();
    oxprof_sql::output::write(&result, oxprof_sql::output::Format::Json, &mut json).map_err(failed)?;
    let objects: Vec<serde_json::Map<String, Value>> =
        serde_json::from_slice(&json).map_err(|e| AgentError::Sql(format!("cannot read the rows back: {e}")))?;
    let names: Vec<String> = result.schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut table = Table::new("rows");
    for name in &names {
        table = table.column(name, name, ColumnKind::Text, NumberFormat::Shortest);
    }
    for object in &objects {
        table.push_row(names.iter().map(|n| cell_of(object.get(n))).collect());
    }
    let mut answer = QueryResult {
        table: TableWindow::of(&table, None, args.offset.unwrap_or(0), limit),
        stopped_at_row_limit: result.truncated,
        warnings: result.warnings.clone(),
    };
    fit(&mut answer, budget);
    Ok(answer)
}

/// A JSON value of a query's row as a cell (absent: SQL's NULL, which the JSON writer
/// leaves out).
fn cell_of(value: Option<&Value>) -> CellValue {
    match value {
        None | Some(Value::Null) => CellValue::Null,
        Some(Value::Bool(b)) => CellValue::Bool(*b),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => CellValue::Int(i),
            None => CellValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Some(Value::String(s)) => CellValue::Text(s.clone()),
        Some(other) => CellValue::Text(other.to_string()),
    }
}

/// `diff`'s arguments: two runs of the path.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct DiffArgs {
    /// The baseline run.
    pub run_a: String,
    /// The run compared with it.
    pub run_b: String,
    /// Host name, or ALL_HOSTS, for both runs (default: all hosts combined).
    pub host: Option<String>,
    /// Ops kept in each list of each kind, the largest changes (default 20; fewer when the
    /// budget needs it, said in `notes`).
    pub limit: Option<usize>,
    /// Byte budget of the answer (default 16384).
    pub budget: Option<usize>,
}

/// Compares two runs of `path` as `oxprof diff PATH PATH --run-a A --run-b B --limit N
/// --format json` does (no gates, the noise test on), with `N` the limit asked for, halved
/// until the answer fits the budget (said in its notes).
pub fn diff(
    path: &Path,
    args: &DiffArgs,
    read: &oxprof_api::diff::ReadOptions,
) -> Result<oxprof_diff::DiffReport, AgentError> {
    let (asked, budget) = window_args(args.limit, args.budget)?;
    let side_a = oxprof_api::diff::SideRequest { path, run: Some(&args.run_a), host: args.host.as_deref() };
    let side_b = oxprof_api::diff::SideRequest { path, run: Some(&args.run_b), host: args.host.as_deref() };
    let diff = oxprof_api::diff::diff_paths(&side_a, &side_b, &oxprof_diff::DiffOptions::default(), read)?;
    let full = oxprof_diff::DiffReport::new(diff, &[], true);
    let mut limit = asked;
    loop {
        let mut report = full.clone();
        report.diff.truncate_ops(limit);
        let fits = crate::window::json_len(&report) <= budget;
        if fits && limit == asked {
            return Ok(report);
        }
        if fits || limit == 0 {
            report.diff.notes.push(if fits {
                format!("the byte budget ({budget} bytes) kept {limit} ops per list, not {asked}: budget raises it")
            } else {
                format!("over the byte budget ({budget} bytes) even without ops lists: budget raises it")
            });
            return Ok(report);
        }
        limit /= 2;
    }
}
