//! The query engine: one DataFusion context over the runs of a [`Session`], with the
//! schema's tables registered only when a query names them (directly or through a view).
//!
//! Model tables are streamed: hosts decoded one after the other as the plan runs
//! ([`QueryLimits::hosts_at_once`], default 1, so one model is resident whatever the host
//! count), building only the columns the query reads (projection pushdown), in batches of
//! at most 64 Ki rows; `run`/`host` filters skip hosts and a `LIMIT` stops building early. What was built is kept in a bounded cache
//! for the next query with the same columns. Tool tables are small and built whole when named.
//! User SQL is read-only: no DDL, no DML (`COPY`, `INSERT`), no `SET`; there is no
//! function that reads or writes files.

use crate::model_tables::{self, HostKey, Projection, arrow_schema};
use crate::schema::{self, Source, TableDef};
use crate::views;
use crate::{SqlError, tool_tables};
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::MemTable;
use datafusion::catalog::{Session as PlannerSession, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::config::Dialect;
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::TableType;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
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
use oxprof_api::session::Session;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Budgets of one query.
#[derive(Debug, Clone, Copy)]
pub struct QueryLimits {
    /// Rows returned at most (the rest are not computed once this many are out).
    pub max_rows: Option<usize>,
    /// Wall time after which the query is cancelled.
    pub timeout: Option<Duration>,
    /// Memory DataFusion's operators may hold (sorts, joins, aggregations), in bytes.
    pub memory_bytes: usize,
    /// Built model-table batches kept for later queries, in bytes (0: none).
    pub cache_bytes: usize,
    /// Host files whose model a scan holds at once (at least 1). One keeps a query's
    /// memory within about twice the largest host file whatever the host count (the plan's
    /// operators still use every core); more overlap decoding on multi-host runs.
    pub hosts_at_once: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        QueryLimits { max_rows: None, timeout: None, memory_bytes: 4 << 30, cache_bytes: 0, hosts_at_once: 1 }
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
}

impl QueryResult {
    /// How many rows it holds.
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// What the partitions of every table share: the session, the runs and the cache.
struct Shared {
    session: Arc<Session>,
    runs: Vec<ServedRun>,
    cache: Mutex<BatchCache>,
    /// See [`QueryLimits::hosts_at_once`].
    hosts_at_once: usize,
}

/// (table, run, host, built columns).
type CacheKey = (String, String, String, Vec<usize>);

/// Built batches by (table, run, host) with their size, oldest dropped first past the budget.
#[derive(Default)]
struct BatchCache {
    budget: usize,
    used: usize,
    order: VecDeque<CacheKey>,
    entries: HashMap<CacheKey, (Arc<Vec<RecordBatch>>, usize)>,
}

impl BatchCache {
    fn get(&self, key: &CacheKey) -> Option<Arc<Vec<RecordBatch>>> {
        self.entries.get(key).map(|(b, _)| b.clone())
    }

    fn put(&mut self, key: CacheKey, batches: Arc<Vec<RecordBatch>>) {
        let size: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
        if size > self.budget || self.entries.contains_key(&key) {
            return;
        }
        while self.used + size > self.budget {
            let Some(old) = self.order.pop_front() else { break };
            if let Some((_, s)) = self.entries.remove(&old) {
                self.used -= s;
            }
        }
        self.used += size;
        self.order.push_back(key.clone());
        self.entries.insert(key, (batches, size));
    }
}

/// SQL over the runs of a session.
pub struct Engine {
    shared: Arc<Shared>,
    ctx: SessionContext,
    runtime: tokio::runtime::Runtime,
    registered: Mutex<HashSet<String>>,
    limits: QueryLimits,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("runs", &self.shared.runs.len()).finish()
    }
}

/// The read-only statement rules user SQL runs under.
fn read_only() -> SQLOptions {
    SQLOptions::new().with_allow_ddl(false).with_allow_dml(false).with_allow_statements(false)
}

impl Engine {
    /// An engine over `runs` of `session`, within `limits`.
    pub fn new(session: Arc<Session>, runs: Vec<ServedRun>, limits: QueryLimits) -> Result<Engine, SqlError> {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("oxprof-sql")
            .enable_time()
            .build()
            .map_err(|e| SqlError::Internal(format!("cannot start the query runtime: {e}")))?;
        let memory = RuntimeEnvBuilder::new()
            .with_memory_limit(limits.memory_bytes, 1.0)
            .build_arc()
            .map_err(|e| SqlError::Internal(e.to_string()))?;
        let config = SessionConfig::new()
            .with_target_partitions(threads)
            .with_information_schema(false)
            .with_default_catalog_and_schema("oxprof", "main");
        let ctx = SessionContext::new_with_config_rt(config, memory);
        let cache = Mutex::new(BatchCache { budget: limits.cache_bytes, ..Default::default() });
        Ok(Engine {
            shared: Arc::new(Shared { session, runs, cache, hosts_at_once: limits.hosts_at_once }),
            ctx,
            runtime,
            registered: Mutex::default(),
            limits,
        })
    }

    /// The runs it queries.
    pub fn runs(&self) -> &[ServedRun] {
        &self.shared.runs
    }

    /// Runs one read-only statement.
    pub fn query(&self, sql: &str) -> Result<QueryResult, SqlError> {
        self.runtime.block_on(self.query_async(sql))
    }

    async fn query_async(&self, sql: &str) -> Result<QueryResult, SqlError> {
        let statement = self.ctx.state().sql_to_statement(sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
        refuse_writes(&statement)?;
        let references = self.ctx.state().resolve_table_references(&statement).map_err(SqlError::from_datafusion)?;
        for reference in references {
            self.ensure(reference.table(), 0).await?;
        }
        let collect = async {
            let frame = self.ctx.sql_with_options(sql, read_only()).await.map_err(SqlError::from_datafusion)?;
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
            Ok(QueryResult { schema, batches, truncated })
        };
        match self.limits.timeout {
            None => collect.await,
            Some(limit) => tokio::time::timeout(limit, collect).await.map_err(|_| SqlError::TimedOut(limit))?,
        }
    }

    /// Registers the schema table or library view `name` (and what the view reads) unless
    /// it is already; other names are left for DataFusion to report.
    async fn ensure(&self, name: &str, depth: usize) -> Result<(), SqlError> {
        let name = name.to_ascii_lowercase();
        let known = match self.registered.lock() {
            Ok(registered) => registered.contains(&name),
            Err(_) => true,
        };
        if known || depth > 8 {
            return Ok(());
        }
        if let Some(view) = views::view(&name) {
            let statement =
                self.ctx.state().sql_to_statement(view.sql, &Dialect::Generic).map_err(SqlError::from_datafusion)?;
            for reference in self.ctx.state().resolve_table_references(&statement).map_err(SqlError::from_datafusion)? {
                Box::pin(self.ensure(reference.table(), depth + 1)).await?;
            }
            self.ctx
                .sql(&format!("CREATE VIEW {} AS {}", view.name, view.sql))
                .await
                .map_err(SqlError::from_datafusion)?;
        } else if let Some(def) = schema::table(&name) {
            let provider = self.provider(def)?;
            self.ctx.register_table(def.name, provider).map_err(SqlError::from_datafusion)?;
        } else {
            return Ok(());
        }
        if let Ok(mut registered) = self.registered.lock() {
            registered.insert(name);
        }
        Ok(())
    }

    fn provider(&self, def: &'static TableDef) -> Result<Arc<dyn datafusion::catalog::TableProvider>, SqlError> {
        let internal = |e: datafusion::error::DataFusionError| SqlError::Internal(e.to_string());
        match def.source {
            Source::Catalog => {
                let batch = crate::catalog_tables::build(def, &self.shared.session, &self.shared.runs)?;
                Ok(Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).map_err(internal)?))
            }
            Source::Tool { tool, table } => {
                let batches = tool_batches(&self.shared, tool, table)?;
                let (schema, batches) = tool_tables::unify(batches)?;
                Ok(Arc::new(MemTable::try_new(schema, vec![batches]).map_err(internal)?))
            }
            Source::Model => Ok(Arc::new(ModelTable { shared: self.shared.clone(), def, schema: arrow_schema(def) })),
        }
    }
}

/// A model table over every host of the runs: scanned with only the columns, hosts and
/// rows the plan needs.
struct ModelTable {
    shared: Arc<Shared>,
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
        let hosts: Vec<(usize, String)> = host_keys(&self.shared.runs)
            .into_iter()
            .filter(|(run, host)| {
                let run_name = self.shared.runs.get(*run).map_or("", |r| r.name.as_str());
                wanted.iter().all(|f| f.admits(run_name, host))
            })
            .collect();
        // `hosts_at_once` partitions, each going through its hosts one after the other: that
        // many models are resident at a time, whatever the host count (a partition per host
        // would let the plan open them all together).
        let streams = self.shared.hosts_at_once.clamp(1, hosts.len().max(1));
        let mut shares: Vec<Vec<(usize, String)>> = vec![Vec::new(); streams];
        for (i, host) in hosts.into_iter().enumerate() {
            shares[i % streams].push(host);
        }
        let partitions: Vec<Arc<dyn PartitionStream>> = shares
            .into_iter()
            .filter(|hosts| !hosts.is_empty())
            .map(|hosts| {
                Arc::new(HostPartition { shared: self.shared.clone(), projection: projection.clone(), hosts })
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

/// A tool table's batch for every host of every run that has it.
fn tool_batches(shared: &Shared, tool: &str, table: &str) -> Result<Vec<RecordBatch>, SqlError> {
    let mut out = Vec::new();
    for run in &shared.runs {
        for file in &run.hosts {
            let key = HostKey { run: &run.name, host: &file.host };
            if let Some(batch) = tool_tables::build(&shared.session, run, key, tool, table)? {
                out.push(batch);
            }
        }
    }
    Ok(out)
}

/// Some hosts' rows of a model table, with only the projected columns, host after host
/// (each decoded when its turn comes and dropped before the next).
struct HostPartition {
    shared: Arc<Shared>,
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
        let (shared, projection, hosts) = (self.shared.clone(), self.projection.clone(), self.hosts.clone());
        let (sender, receiver) = futures::channel::mpsc::channel(BATCHES_IN_FLIGHT);
        let schema = projection.schema().clone();
        // Built on a blocking thread, each batch sent as it is made: the reader holds a
        // plane's batch at a time unless it keeps them (a sort, a join's build side).
        tokio::task::spawn_blocking(move || {
            let mut sender = sender;
            for (run, host) in &hosts {
                let mut open = true;
                let result = host_batches(&shared, &projection, *run, host, &mut |batch| {
                    open = futures::executor::block_on(futures::SinkExt::send(&mut sender, Ok(batch))).is_ok();
                    open
                });
                if let Err(e) = result {
                    let error = datafusion::error::DataFusionError::External(Box::new(e));
                    let _ = futures::executor::block_on(futures::SinkExt::send(&mut sender, Err(error)));
                    return;
                }
                if !open {
                    // The reader is gone (a LIMIT was met): no more hosts.
                    return;
                }
            }
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, receiver))
    }
}

/// One host's batches of a model table, handed to `emit`: from the cache, else decoded and
/// built (and cached when the cache has room and every row was built).
fn host_batches(
    shared: &Shared,
    projection: &Projection,
    run: usize,
    host: &str,
    emit: &mut dyn FnMut(RecordBatch) -> bool,
) -> Result<(), SqlError> {
    let Some(served) = shared.runs.get(run) else { return Ok(()) };
    let key = (projection.table().to_string(), served.name.clone(), host.to_string(), projection.indices().to_vec());
    if let Some(hit) = shared.cache.lock().ok().and_then(|c| c.get(&key)) {
        for b in hit.iter() {
            if !emit(b.clone()) {
                break;
            }
        }
        return Ok(());
    }
    let Some(file) = served.host(host) else { return Ok(()) };
    let space = {
        let _admission = shared.session.admit();
        shared.session.load(file, &|_| true).map_err(|e| SqlError::Profile(e.to_string()))?
    };
    let host_key = HostKey { run: &served.name, host };
    let keep = projection.limit.is_none() && shared.cache.lock().is_ok_and(|c| c.budget > 0);
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
        && let Ok(mut cache) = shared.cache.lock()
    {
        cache.put(key, Arc::new(kept));
    }
    Ok(())
}
