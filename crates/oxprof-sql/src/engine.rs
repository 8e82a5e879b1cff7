//! The query engine: SQL over the runs of a [`Session`], each query under the engine's
//! budgets.
//!
//! One engine serves a session (the server keeps one per session, whatever the run
//! asked): its own thread pool with large stacks, and one memory pool that every query's
//! operators and every string its functions build are charged to ([`crate::budget`],
//! [`crate::functions`]). Each query gets a context of its own, with the schema's tables
//! and views registered only when it names them (so concurrent first queries of a view
//! cannot collide), and runs in three steps, all on the engine's threads and all within
//! its time limit:
//!
//! ```text
//!  parse ─► shape check (bounds.rs: depth, set terms, plan size with WITH expanded) ─►
//!  plan (cancellation checked between optimizer rules) ─► execute (rows, memory, time)
//! ```
//!
//! The caller waits at most the time limit: past it the query is cancelled (its task
//! aborted, its builders and functions stop at their next check) and the answer is the
//! time-out, at once.
//!
//! Model tables are streamed: hosts decoded one after the other as the plan runs
//! ([`QueryLimits::hosts_at_once`], default 1, so one model is resident whatever the host
//! count), building only the columns the query reads (projection pushdown), in batches of
//! at most 64 Ki rows; `run`/`host` filters skip hosts and a `LIMIT` stops building early.
//! What was built is kept in the session's cache (under its one bound, `--cache-mb`) for
//! the next query with the same columns. Tool tables are small and built whole when named.
//! A host whose profile cannot be read is left out with a warning beside the other hosts'
//! rows (the query fails only when every host it read failed).
//! User SQL is read-only: no DDL, no DML (`COPY`, `INSERT`), no `SET`; there is no
//! function that reads or writes files.

use crate::bounds::{self, ShapeLimits};
use crate::budget::{PoolStats, QueryBudget, SqlPool};
use crate::model_tables::{self, HostKey, Projection, arrow_schema};
use crate::schema::{self, Source, TableDef};
use crate::views;
use crate::{SqlError, functions, tool_tables};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::MemTable;
use datafusion::catalog::{Session as PlannerSession, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::Transformed;
use datafusion::config::Dialect;
use datafusion::execution::TaskContext;
use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
use datafusion::execution::memory_pool::MemoryPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::{BinaryExpr, Expr, LogicalPlan, Operator, TableProviderFilterPushDown, TableType};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::streaming::StreamingTableExec;
use datafusion::prelude::{SQLOptions, SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement as SqlStatement;
use futures::StreamExt;
use oxprof_api::catalog::ServedRun;
use oxprof_api::registry::ToolId;
use oxprof_api::session::{MemoryAccount, MemoryAccountStats, Session};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Budgets of the engine and of each query.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    /// Rows returned at most (the rest are not computed once this many are out).
    pub max_rows: Option<usize>,
    /// Wall time after which a query is cancelled (planning included).
    pub timeout: Option<Duration>,
    /// Memory the queries running at once may hold together, in bytes: their operators'
    /// (sorts, joins, aggregations, buffers) and the strings their functions build.
    pub memory_bytes: usize,
    /// Host files whose model a scan holds at once (at least 1). One keeps a query's
    /// memory within about twice the largest host file whatever the host count (the plan's
    /// operators still use every core); more overlap decoding on multi-host runs.
    pub hosts_at_once: usize,
    /// Longest SQL accepted, in bytes.
    pub max_sql_bytes: usize,
    /// The statement's shape, checked before planning.
    pub shape: ShapeLimits,
    /// Largest string (or aggregated list) one value may hold.
    pub max_value_bytes: usize,
    /// Largest string a function may build from constants alone (it is copied into every
    /// row of a batch).
    pub max_constant_bytes: usize,
    /// Also charge query memory to the session's one bound (`--cache-mb`), which evicts
    /// cached values to make room and refuses past it (the server: one bound per process).
    pub within_session_bound: bool,
}

/// Longest SQL accepted by default (the server's URL limit is about the same).
pub const MAX_SQL_BYTES: usize = 64 << 10;

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits {
            max_rows: None,
            timeout: None,
            memory_bytes: 4 << 30,
            hosts_at_once: 1,
            max_sql_bytes: MAX_SQL_BYTES,
            shape: ShapeLimits::default(),
            max_value_bytes: 64 << 20,
            max_constant_bytes: 16 << 10,
            within_session_bound: false,
        }
    }
}

/// A query's answer.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// Its columns.
    pub schema: SchemaRef,
    /// Its rows.
    pub batches: Vec<RecordBatch>,
    /// Whether rows past [`QueryLimits::max_rows`] were left out.
    pub truncated: bool,
    /// Hosts left out, each with why (one line each): their profile could not be read, so
    /// the rows are the other hosts' only.
    pub warnings: Vec<String>,
}

impl QueryResult {
    /// How many rows it holds.
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Stack of the engine's threads. Statements are checked to be shallow before they are
/// planned, but the parser builds a left-deep `1+1+…+1` before anything can look at it,
/// and dropping it recurses as deep (about 32 Ki levels for 64 KiB of SQL); DataFusion's
/// own guard (`recursive_protection`) covers its planner and optimizer only. Only the
/// pages used are ever committed.
const STACK_BYTES: usize = 64 << 20;

/// SQL over the runs of a session.
pub struct Engine {
    session: Arc<Session>,
    runs: Vec<ServedRun>,
    /// `None` only while dropping (see `Drop`).
    runtime: Option<tokio::runtime::Runtime>,
    env: Arc<RuntimeEnv>,
    pool: Arc<SqlPool>,
    limits: QueryLimits,
    threads: usize,
    /// Queries running now, and the pool, for `/oxprof/api/info`.
    account: Arc<Account>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("runs", &self.runs.len()).field("limits", &self.limits).finish()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Dropping a runtime blocks until its threads stop, which tokio refuses (a panic)
        // on a thread that is driving another runtime: a server dropping its routes on
        // shutdown. Queries still running are abandoned with the process anyway.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// The engine's memory as the session reports it.
struct Account {
    pool: Arc<SqlPool>,
    running: AtomicUsize,
}

impl MemoryAccount for Account {
    fn stats(&self) -> MemoryAccountStats {
        let PoolStats { used_bytes, limit_bytes, peak_bytes, .. } = self.pool.stats();
        MemoryAccountStats {
            name: "sql",
            bytes: used_bytes,
            limit_bytes,
            peak_bytes,
            active: self.running.load(Ordering::Relaxed),
        }
    }
}

/// Counts a query running until dropped.
struct Running<'a>(&'a AtomicUsize);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The read-only statement rules user SQL runs under.
fn read_only() -> SQLOptions {
    SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

impl Engine {
    /// An engine over `runs` of `session` (the runs [`Engine::query`] reads; any runs of
    /// the session can be given to [`Engine::query_runs`]), within `limits`. Its query
    /// memory is reported in [`Session::memory_accounts`].
    pub fn new(session: Arc<Session>, runs: Vec<ServedRun>, limits: QueryLimits) -> Result<Engine, SqlError> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("oxprof-sql")
            .thread_stack_size(STACK_BYTES)
            .enable_time()
            .build()
            .map_err(|e| SqlError::Internal(format!("cannot start the query runtime: {e}")))?;
        let mut pool = SqlPool::new(limits.memory_bytes);
        if limits.within_session_bound {
            pool = pool.sharing(session.clone());
        }
        let pool = Arc::new(pool);
        // No spilling: a query past its memory fails with one line instead of writing the
        // rest to the temporary directory (a disk budget nobody set).
        let env = RuntimeEnvBuilder::new()
            .with_memory_pool(pool.clone() as Arc<dyn MemoryPool>)
            .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(DiskManagerMode::Disabled))
            .build_arc()
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        let account = Arc::new(Account { pool: pool.clone(), running: AtomicUsize::new(0) });
        let weak: std::sync::Weak<dyn MemoryAccount> = Arc::downgrade(&(account.clone() as Arc<dyn MemoryAccount>));
        session.add_memory_account(weak);
        Ok(Engine { session, runs, runtime: Some(runtime), env, pool, limits, threads, account })
    }

    /// The runs [`Engine::query`] reads.
    pub fn runs(&self) -> &[ServedRun] {
        &self.runs
    }

    /// The engine's memory pool: in use now, its limit and its peak.
    pub fn memory(&self) -> PoolStats {
        self.pool.stats()
    }

    /// Runs one read-only statement over the engine's runs.
    pub fn query(&self, sql: &str) -> Result<QueryResult, SqlError> {
        self.query_runs(sql, &self.runs)
    }

    /// Runs one read-only statement over `runs` (of the engine's session), on the engine's
    /// threads; returns by the time limit whatever the query is doing.
    pub fn query_runs(&self, sql: &str, runs: &[ServedRun]) -> Result<QueryResult, SqlError> {
        if sql.len() > self.limits.max_sql_bytes {
            return Err(SqlError::Sql(format!(
                "SQL too long: {} bytes, at most {}; shorten it (e.g. name fewer values, use a view)",
                sql.len(),
                self.limits.max_sql_bytes
            )));
        }
        let Some(runtime) = &self.runtime else { return Err(SqlError::Internal("the engine is stopping".into())) };
        let budget =
            Arc::new(QueryBudget::new(self.pool.clone(), self.limits.max_value_bytes, self.limits.max_constant_bytes));
        let scope = Arc::new(Scope {
            session: self.session.clone(),
            runs: runs.to_vec(),
            budget: budget.clone(),
            hosts_at_once: self.limits.hosts_at_once,
            hosts: Mutex::default(),
        });
        self.account.running.fetch_add(1, Ordering::Relaxed);
        let _running = Running(&self.account.running);
        let (sender, answer) = std::sync::mpsc::sync_channel(1);
        let query = Query { env: self.env.clone(), scope, limits: self.limits, threads: self.threads };
        let sql = sql.to_string();
        let task = runtime.spawn(async move {
            // A panic inside is caught by the task; the channel then closes unanswered.
            let _ = sender.send(query.run(&sql).await);
        });
        let outcome = match self.limits.timeout {
            Some(limit) => answer.recv_timeout(limit).map_err(|e| match e {
                std::sync::mpsc::RecvTimeoutError::Timeout => SqlError::TimedOut(limit),
                std::sync::mpsc::RecvTimeoutError::Disconnected => panicked(),
            }),
            None => answer.recv().map_err(|_| panicked()),
        };
        if outcome.is_err() {
            // Stops the work: the task at its next await, builders and functions at their
            // next check of the budget.
            budget.cancel();
            task.abort();
        }
        match outcome? {
            Err(SqlError::Cancelled) => Err(SqlError::TimedOut(self.limits.timeout.unwrap_or_default())),
            // DataFusion's own phrasing (e.g. an operator that could not spill after our
            // pool refused it) does not say which limit: name it.
            Err(SqlError::Memory(m)) if !m.contains("memory limit of") && !m.contains("--cache-mb") => {
                Err(SqlError::Memory(format!(
                    "{m}, past the SQL memory limit of {}",
                    crate::budget::human_bytes(self.limits.memory_bytes as u64)
                )))
            }
            other => other,
        }
    }
}

fn panicked() -> SqlError {
    SqlError::Internal("the query stopped unexpectedly (a panic)".into())
}

/// What the tables of one query read: the session, the runs, the query's budget, and
/// the hosts read so far with those that failed.
struct Scope {
    session: Arc<Session>,
    runs: Vec<ServedRun>,
    budget: Arc<QueryBudget>,
    hosts_at_once: usize,
    hosts: Mutex<HostsRead>,
}

/// The hosts a query read, and those whose profile could not be read.
#[derive(Default)]
struct HostsRead {
    read: HashSet<(usize, String)>,
    failed: Vec<((usize, String), SqlError)>,
}

impl Scope {
    fn run_name(&self, run: usize) -> &str {
        self.runs.get(run).map_or("", |r| r.name.as_str())
    }

    /// Records a host read (`Ok`) or left out (`Err`, a profile that cannot be read). Other
    /// errors are the query's.
    fn host_read(&self, run: usize, host: &str, result: Result<(), SqlError>) -> Result<(), SqlError> {
        let key = (run, host.to_string());
        match result {
            Ok(()) => {
                if let Ok(mut hosts) = self.hosts.lock() {
                    hosts.read.insert(key);
                }
                Ok(())
            }
            Err(error @ SqlError::Profile { .. }) => {
                if let Ok(mut hosts) = self.hosts.lock() {
                    hosts.read.insert(key.clone());
                    if !hosts.failed.iter().any(|(k, _)| *k == key) {
                        hosts.failed.push((key, error));
                    }
                }
                Ok(())
            }
            Err(other) => Err(other),
        }
    }

    /// The warnings of hosts left out, or the first one's error when every host read failed.
    fn outcome(&self) -> Result<Vec<String>, SqlError> {
        let Ok(mut hosts) = self.hosts.lock() else { return Ok(Vec::new()) };
        if !hosts.failed.is_empty() && hosts.failed.len() == hosts.read.len() {
            let ((_, _), error) = hosts.failed.remove(0);
            return Err(error);
        }
        Ok(hosts
            .failed
            .iter()
            .map(|((run, host), error)| format!("host {host} of run {} left out: {error}", self.run_name(*run)))
            .collect())
    }
}

/// One query on the engine's threads.
struct Query {
    env: Arc<RuntimeEnv>,
    scope: Arc<Scope>,
    limits: QueryLimits,
    threads: usize,
}

impl Query {
    /// A context of the query's own: the schema's tables not yet registered, the string
    /// functions bounded by its budget, cancellation checked between optimizer rules.
    fn context(&self) -> SessionContext {
        let config = SessionConfig::new()
            .with_target_partitions(self.threads)
            .with_information_schema(false)
            .with_default_catalog_and_schema("oxprof", "main");
        let mut builder = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(self.env.clone())
            .with_default_features()
            .with_optimizer_rule(Arc::new(CancelPoint(self.scope.budget.clone())));
        functions::install(&mut builder, &self.scope.budget);
        SessionContext::new_with_state(builder.build())
    }

    async fn run(&self, sql: &str) -> Result<QueryResult, SqlError> {
        let ctx = self.context();
        let state = ctx.state();
        let statement = state.sql_to_statement(sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
        refuse_writes(&statement)?;
        bounds::check(&statement, &self.limits.shape)?;
        let references = state.resolve_table_references(&statement).map_err(SqlError::from_datafusion)?;
        let mut registered = HashSet::new();
        for reference in references {
            self.ensure(&ctx, reference.table(), 0, &mut registered).await?;
        }
        let state = ctx.state();
        let plan = state.statement_to_plan(statement).await.map_err(SqlError::from_datafusion)?;
        read_only().verify_plan(&plan).map_err(SqlError::from_datafusion)?;
        let frame = ctx.execute_logical_plan(plan).await.map_err(SqlError::from_datafusion)?;
        let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
        let mut stream = frame.execute_stream().await.map_err(SqlError::from_datafusion)?;
        let mut batches = Vec::new();
        let mut rows = 0usize;
        let mut truncated = false;
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(SqlError::from_datafusion)?;
            if let Some(max) = self.limits.max_rows
                && rows + batch.num_rows() > max
            {
                batches.push(batch.slice(0, max - rows));
                truncated = true;
                break;
            }
            rows += batch.num_rows();
            batches.push(batch);
        }
        drop(stream);
        let warnings = self.scope.outcome()?;
        Ok(QueryResult { schema, batches, truncated, warnings })
    }

    /// Registers the schema table or library view `name` (and what the view reads) in the
    /// query's context unless it is already; other names are left for DataFusion to report.
    async fn ensure(
        &self,
        ctx: &SessionContext,
        name: &str,
        depth: usize,
        registered: &mut HashSet<String>,
    ) -> Result<(), SqlError> {
        let name = name.to_ascii_lowercase();
        if depth > 8 || !registered.insert(name.clone()) {
            return Ok(());
        }
        if let Some(view) = views::view(&name) {
            let statement =
                ctx.state().sql_to_statement(view.sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
            for reference in ctx.state().resolve_table_references(&statement).map_err(SqlError::from_datafusion)? {
                Box::pin(self.ensure(ctx, reference.table(), depth + 1, registered)).await?;
            }
            ctx.sql(&format!("CREATE VIEW {} AS {}", view.name, view.sql)).await.map_err(SqlError::from_datafusion)?;
        } else if let Some(def) = schema::table(&name) {
            let provider = self.provider(def)?;
            ctx.register_table(def.name, provider).map_err(SqlError::from_datafusion)?;
        }
        Ok(())
    }

    fn provider(&self, def: &'static TableDef) -> Result<Arc<dyn TableProvider>, SqlError> {
        let internal = |e: datafusion::error::DataFusionError| SqlError::Internal(e.to_string());
        let scope = &self.scope;
        match def.source {
            Source::Catalog => {
                let batch = crate::catalog_tables::build(def, &scope.session, &scope.runs)?;
                Ok(Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(internal)?))
            }
            Source::Tool { tool, table } => {
                let batches = tool_batches(scope, tool, table)?;
                let (schema, batches) = tool_tables::unify(batches)?;
                Ok(Arc::new(MemTable::try_new(schema, vec![batches]).map_err(internal)?))
            }
            Source::Model => Ok(Arc::new(ModelTable { scope: scope.clone(), def, schema: arrow_schema(def) })),
        }
    }
}

/// An optimizer rule that changes nothing and fails once the query is cancelled: planning
/// a large statement stops between rules instead of running on after the time-out.
#[derive(Debug)]
struct CancelPoint(Arc<QueryBudget>);

impl OptimizerRule for CancelPoint {
    fn name(&self) -> &str {
        "oxprof_cancel_point"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> datafusion::error::Result<Transformed<LogicalPlan>> {
        self.0.check()?;
        Ok(Transformed::no(plan))
    }
}

/// A model table over every host of the runs: scanned with only the columns, hosts and
/// rows the plan needs.
struct ModelTable {
    scope: Arc<Scope>,
    def: &'static TableDef,
    schema: SchemaRef,
}

impl std::fmt::Debug for ModelTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ModelTable({})", self.def.name)
    }
}

#[async_trait::async_trait]
impl TableProvider for ModelTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// Filters on `run`/`host` alone pick hosts; DataFusion still applies them (inexact).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if host_filter(f).is_some() {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn PlannerSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        // A limit is only the scan's to apply when no filter is left above it.
        let limit = if filters.is_empty() { limit } else { None };
        let projection = Projection::new(self.def, projection.map(Vec::as_slice), limit);
        let wanted: Vec<HostFilter> = filters.iter().filter_map(host_filter).collect();
        let hosts: Vec<(usize, String)> = host_keys(&self.scope.runs)
            .into_iter()
            .filter(|(run, host)| wanted.iter().all(|f| f.admits(self.scope.run_name(*run), host)))
            .collect();
        // `hosts_at_once` partitions, each going through its hosts one after the other: that
        // many models are resident at a time, whatever the host count (a partition per host
        // would let the plan open them all together).
        let streams = self.scope.hosts_at_once.clamp(1, hosts.len().max(1));
        let mut shares: Vec<Vec<(usize, String)>> = vec![Vec::new(); streams];
        for (i, host) in hosts.into_iter().enumerate() {
            shares[i % streams].push(host);
        }
        let partitions: Vec<Arc<dyn PartitionStream>> = shares
            .into_iter()
            .filter(|hosts| !hosts.is_empty())
            .map(|hosts| {
                Arc::new(HostPartition { scope: self.scope.clone(), projection: projection.clone(), hosts })
                    as Arc<dyn PartitionStream>
            })
            .collect();
        let schema = projection.schema().clone();
        if partitions.is_empty() {
            let empty = MemTable::try_new(schema.clone(), vec![vec![]])?;
            return empty.scan(state, None, &[], None).await;
        }
        Ok(Arc::new(StreamingTableExec::try_new(schema, partitions, None, Vec::new(), false, limit)?))
    }
}

/// A filter on `run` or `host` alone: the column and the values it accepts.
struct HostFilter {
    column: &'static str,
    values: Vec<String>,
}

impl HostFilter {
    fn admits(&self, run: &str, host: &str) -> bool {
        let value = if self.column == "run" { run } else { host };
        self.values.iter().any(|v| v == value)
    }
}

/// `run = 'x'`, `host = 'x'` (either side) or `host IN ('x', 'y')`, else `None`.
fn host_filter(expr: &Expr) -> Option<HostFilter> {
    fn column(e: &Expr) -> Option<&'static str> {
        match e {
            Expr::Column(c) if c.name == "run" => Some("run"),
            Expr::Column(c) if c.name == "host" => Some("host"),
            Expr::Cast(c) => column(&c.expr),
            _ => None,
        }
    }
    fn text(e: &Expr) -> Option<String> {
        match e {
            Expr::Literal(v, _) => match v {
                ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
                    Some(s.clone())
                }
                ScalarValue::Dictionary(_, inner) => text(&Expr::Literal((**inner).clone(), None)),
                _ => None,
            },
            Expr::Cast(c) => text(&c.expr),
            _ => None,
        }
    }
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op: Operator::Eq, right }) => {
            let (c, v) = match (column(left), column(right)) {
                (Some(c), None) => (c, text(right)?),
                (None, Some(c)) => (c, text(left)?),
                _ => return None,
            };
            Some(HostFilter { column: c, values: vec![v] })
        }
        Expr::InList(list) if !list.negated => {
            let c = column(&list.expr)?;
            let values = list.list.iter().map(text).collect::<Option<Vec<_>>>()?;
            Some(HostFilter { column: c, values })
        }
        _ => None,
    }
}

/// Refuses every statement but queries and EXPLAIN before anything is planned (so a
/// write is never half-planned against a table), with the one line people get.
fn refuse_writes(statement: &DfStatement) -> Result<(), SqlError> {
    let kind = match statement {
        DfStatement::Statement(s) if matches!(**s, SqlStatement::Query(_)) => return Ok(()),
        DfStatement::Explain(_) => return Ok(()),
        DfStatement::Statement(s) => {
            let text = s.to_string();
            text.split_whitespace().take(2).collect::<Vec<_>>().join(" ").to_ascii_uppercase()
        }
        DfStatement::CreateExternalTable(_) => "CREATE EXTERNAL TABLE".into(),
        DfStatement::CopyTo(_) => "COPY".into(),
        DfStatement::Reset(_) => "RESET".into(),
    };
    Err(SqlError::Sql(format!(
        "refused: {kind} (oxprof runs read-only queries: SELECT, WITH, EXPLAIN; no COPY, CREATE, INSERT or SET)"
    )))
}

/// Every (run index, host name) of the runs.
fn host_keys(runs: &[ServedRun]) -> Vec<(usize, String)> {
    runs.iter().enumerate().flat_map(|(i, r)| r.hosts.iter().map(move |h| (i, h.host.clone()))).collect()
}

/// A tool table's batch for every host of every run that has it; a host whose profile
/// cannot be read is left out (see [`Scope::host_read`]). Kept in the session's cache.
fn tool_batches(scope: &Scope, tool: ToolId, table: &str) -> Result<Vec<RecordBatch>, SqlError> {
    let mut out = Vec::new();
    for (i, run) in scope.runs.iter().enumerate() {
        for file in &run.hosts {
            scope.budget.check().map_err(SqlError::from_datafusion)?;
            let key = scope.session.file_key(file).map(|f| format!("sql-tool\0{tool}\0{table}\0{}\0{f}", run.name));
            if let Some(kept) = key.as_ref().and_then(|k| scope.session.kept::<Option<RecordBatch>>(k)) {
                out.extend(kept.as_ref().clone());
                continue;
            }
            let host = HostKey { run: &run.name, host: &file.host };
            let built = tool_tables::build(&scope.session, run, host, tool, table);
            let built = match built {
                Ok(batch) => {
                    scope.host_read(i, &file.host, Ok(()))?;
                    batch
                }
                Err(e) => {
                    scope.host_read(i, &file.host, Err(e))?;
                    continue;
                }
            };
            if let Some(key) = key {
                let bytes = built.as_ref().map_or(0, RecordBatch::get_array_memory_size);
                scope.session.keep(key, Arc::new(built.clone()), bytes);
            }
            out.extend(built);
        }
    }
    // Every host failed: the query fails with the first one's error (its status too).
    if out.is_empty() {
        scope.outcome()?;
    }
    Ok(out)
}

/// Some hosts' rows of a model table, with only the projected columns, host after host
/// (each decoded when its turn comes and dropped before the next).
struct HostPartition {
    scope: Arc<Scope>,
    projection: Projection,
    /// (run index, host name), in the order they are read.
    hosts: Vec<(usize, String)>,
}

impl std::fmt::Debug for HostPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hosts: Vec<&str> = self.hosts.iter().map(|(_, h)| h.as_str()).collect();
        write!(f, "HostPartition({:?}, {})", self.projection.indices(), hosts.join(", "))
    }
}

/// Built batches a host's partition waits for at most (then building pauses).
const BATCHES_IN_FLIGHT: usize = 2;

impl PartitionStream for HostPartition {
    fn schema(&self) -> &SchemaRef {
        self.projection.schema()
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (scope, projection, hosts) = (self.scope.clone(), self.projection.clone(), self.hosts.clone());
        let (sender, receiver) = futures::channel::mpsc::channel(BATCHES_IN_FLIGHT);
        let schema = projection.schema().clone();
        // Built on a blocking thread, each batch sent as it is made: the reader holds a
        // plane's batch at a time unless it keeps them (a sort, a join's build side). The
        // builder stops when the reader is gone (a LIMIT met, the query cancelled) or the
        // query's budget says it was cancelled.
        tokio::task::spawn_blocking(move || {
            let mut sender = sender;
            for (run, host) in &hosts {
                if scope.budget.is_cancelled() {
                    return;
                }
                let mut open = true;
                let result = host_batches(&scope, &projection, *run, host, &mut |batch| {
                    open = !scope.budget.is_cancelled()
                        && futures::executor::block_on(futures::SinkExt::send(&mut sender, Ok(batch))).is_ok();
                    open
                });
                if let Err(e) = scope.host_read(*run, host, result) {
                    let error = datafusion::error::DataFusionError::External(Box::new(e));
                    let _ = futures::executor::block_on(futures::SinkExt::send(&mut sender, Err(error)));
                    return;
                }
                if !open {
                    return;
                }
            }
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, receiver))
    }
}

/// Built batches of one host's table (with the columns built), as kept in the session.
type Built = Vec<RecordBatch>;

/// One host's batches of a model table, handed to `emit`: from the session's cache, else
/// decoded and built (and kept when every row was built).
fn host_batches(
    scope: &Scope,
    projection: &Projection,
    run: usize,
    host: &str,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<(), SqlError> {
    let Some(served) = scope.runs.get(run) else { return Ok(()) };
    let Some(file) = served.host(host) else { return Ok(()) };
    let session = &scope.session;
    let key = session
        .file_key(file)
        .map(|f| format!("sql-model\0{}\0{:?}\0{}\0{f}", projection.table(), projection.indices(), served.name));
    if let Some(hit) = key.as_ref().and_then(|k| session.kept::<Built>(k)) {
        for b in hit.iter() {
            if !emit(b.clone()) {
                break;
            }
        }
        return Ok(());
    }
    let space = {
        let _admission = session.admit();
        if scope.budget.is_cancelled() {
            return Ok(());
        }
        session.load(file, &|_| true).map_err(SqlError::profile)?
    };
    if scope.budget.is_cancelled() {
        return Ok(());
    }
    let host_key = HostKey { run: &served.name, host };
    let keep = projection.limit.is_none() && key.is_some();
    let mut kept = Vec::new();
    let mut complete = true;
    let table = projection.table();
    model_tables::build_each(projection, &space, host_key, &mut |batch| {
        if keep {
            kept.push(batch.clone());
        }
        let sent = emit(batch);
        complete &= sent;
        sent
    })
    .unwrap_or(Ok(()))
    .map_err(|e| SqlError::Internal(format!("{table}: {e}")))?;
    if keep
        && complete
        && let Some(key) = key
    {
        let bytes = kept.iter().map(RecordBatch::get_array_memory_size).sum();
        session.keep(key, Arc::new(kept), bytes);
    }
    Ok(())
}
